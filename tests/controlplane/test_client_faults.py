"""Faults aimed at one API client (issue #18 §6): `apiFault {client}` and `watchFault {client}`
take a User-Agent prefix, go through the one action validation path, and are deterministic."""

from __future__ import annotations

from controlplane.scenario import parse_scenario
from controlplane.simulation import Simulation

KOPF = "kopf/1.45.2"
KUBECTL = "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07"


def sim() -> Simulation:
    s = Simulation.from_file("demo")
    s.run_until(5.0)
    return s


def label(s: Simulation, client: str, value: str) -> int:
    body = {"metadata": {"labels": {"seen-by": value}}}
    request = {"client": client, "verb": "patch", "resource": "replicasets", "namespace": "default"}
    result = s.act({"request": {**request, "name": "web", "patchType": "merge", "body": body}}, source=client)
    return int(result["response"][0])


def test_an_api_fault_with_a_client_prefix_fails_only_that_clients_requests():
    s = sim()
    s.act({"apiFault": {"verb": "patch", "resource": "replicasets", "code": 500, "count": 2, "client": "kopf"}})
    assert label(s, KUBECTL, "kubectl") == 200
    assert [label(s, KOPF, "kopf") for _ in range(3)] == [500, 500, 200]
    rule = s.snapshot()["apiFaults"][0]
    assert (rule["matched"], rule["failed"], rule["exhausted"]) == (2, 2, True)


def test_an_api_fault_with_a_client_leaves_the_controllers_alone():
    s = sim()
    s.act({"apiFault": {"verb": "*", "resource": "*", "code": 500, "rate": 1, "client": "kopf"}})
    s.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}})
    s.run_until(30.0)
    assert all(r["code"] < 500 for r in s.server.requests)
    web = [p for p in s.server.objects("pods") if p["metadata"]["labels"].get("app") == "web"]
    assert len([p for p in web if not p["metadata"].get("deletionTimestamp")]) == 5


def test_a_watch_fault_with_a_client_is_logged_for_the_host_and_touches_no_informer():
    s = sim()
    result = s.act({"watchFault": {"resource": "pods", "fault": "drop", "client": "kopf"}})
    assert result["ok"] and result["clientWatchFault"] == 1
    assert s.client_watch_faults() == [{"client": "kopf", "resource": "pods", "fault": "drop"}]
    assert all(not c.pod_informer.reflector.paused for c in s.controllers.values())
    assert s.client_watch_faults(1) == []


def test_a_client_watch_pause_with_delay_resumes_by_itself_unless_taken_over():
    s = sim()
    s.act({"watchFault": {"resource": "*", "fault": "pause", "delay": 2, "client": "kopf"}})
    s.act({"watchFault": {"resource": "pods", "fault": "pause", "delay": 1, "client": "kubectl"}})
    s.act({"watchFault": {"resource": "pods", "fault": "resume", "client": "kubectl"}})
    s.run_until(10.0)
    faults = [(e["client"], e["resource"], e["fault"]) for e in s.client_watch_faults()]
    assert faults == [
        ("kopf", "*", "pause"),
        ("kubectl", "pods", "pause"),
        ("kubectl", "pods", "resume"),
        ("kopf", "*", "resume"),
    ]


def test_client_faults_are_validated_naming_the_field():
    s = sim()
    bad = {
        "watchFault": {"resource": "pods", "fault": "drop", "client": "kopf", "controller": "replicaset"},
    }
    assert "client and controller exclude each other" in str(s.check_action(bad))
    unserved = {"watchFault": {"resource": "x", "fault": "drop", "client": "k"}}
    assert "watchFault.resource" in str(s.check_action(unserved))
    empty = {"watchFault": {"resource": "pods", "fault": "drop", "client": ""}}
    assert "watchFault.client" in str(s.check_action(empty))
    too_long = {"apiFault": {"verb": "*", "resource": "*", "code": 500, "client": "k" * 513}}
    assert "apiFault.client" in str(s.check_action(too_long))
    assert s.check_action({"watchFault": {"resource": "events", "fault": "pause", "client": "kopf"}}) is None


def test_client_faults_replay_to_the_same_report():
    scenario = {
        "name": "client faults",
        "seed": 4,
        "objects": [],
        "actions": [
            {"at": 1, "apiFault": {"verb": "patch", "resource": "replicasets", "code": 503, "client": "kopf"}},
            {"at": 2, "watchFault": {"resource": "pods", "fault": "pause", "delay": 3, "client": "kopf"}},
        ],
        "until": 10,
    }
    reports, logs = [], []
    for _ in range(2):
        s = Simulation(parse_scenario(scenario))
        s.run_until(10.0)
        reports.append(s.report_json())
        logs.append(s.client_watch_faults())
    assert reports[0] == reports[1]
    assert logs[0] == logs[1] == [
        {"client": "kopf", "resource": "pods", "fault": "pause"},
        {"client": "kopf", "resource": "pods", "fault": "resume"},
    ]

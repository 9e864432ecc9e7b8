"""The simulation facade: stepping, actions, snapshot, and determinism of the trace."""

import json
import re

from controlplane.scenario import load_scenario
from controlplane.simulation import Simulation

SCENARIO = """
name: t
seed: 3
objects:
  - apiVersion: apps/v1
    kind: ReplicaSet
    metadata: {name: web, namespace: default}
    spec:
      replicas: 3
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: app, image: nginx}]}
until: 30
"""


def sim(seed=None):
    return Simulation(load_scenario(SCENARIO), seed=seed)


def trace_of(s, until):
    records = []
    s.subscribe(records.append)
    s.run_until(until)
    return records


def test_same_seed_gives_an_identical_trace():
    a = json.dumps(trace_of(sim(), 20), sort_keys=True, default=str)
    b = json.dumps(trace_of(sim(), 20), sort_keys=True, default=str)
    assert a == b


def test_the_trace_shows_every_step_the_debugger_needs():
    kinds = {r["kind"] for r in trace_of(sim(), 20)}
    assert {
        "queue.add",
        "queue.get",
        "queue.done",
        "queue.forget",
        "queue.add_rate_limited",
        "informer.deliver",
        "informer.event",
        "api.request",
        "api.response",
        "expectations",
        "sync.start",
        "sync.stage",
        "sync.end",
        "pod.transition",
        "event",
    } <= kinds


def test_sync_stages_come_in_upstream_order():
    s = sim()
    records = []
    s.subscribe(records.append)
    s.run_until(20)
    first_full = []
    for r in records:
        if r["kind"] == "sync.stage" and r["key"] == "default/web":
            first_full.append(r["stage"])
            if r["stage"] == "requeue":
                break
    assert first_full[:5] == ["get", "expectations", "list", "claim", "manage"]
    assert first_full[-2:] == ["status", "requeue"]
    assert "batch" in first_full


def test_step_runs_one_event_and_step_stage_stops_at_the_next_stage():
    s = sim()
    assert s.step()
    record = s.step_stage()
    assert record["kind"] in {"sync.start", "sync.stage"}
    end = s.step_sync()
    assert end["kind"] == "sync.end"
    assert end["key"] == "default/web"


def test_run_until_predicate_stops_as_soon_as_it_holds():
    s = sim()

    def three_pods(x):
        return x.server.count("pods") == 3

    assert s.run_until_predicate(three_pods, until=30)
    assert s.server.count("pods") == 3
    assert s.now < 1


def test_actions_report_errors_without_changing_the_world():
    s = sim()
    s.run_until(5)
    result = s.apply({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": -1}})
    assert result["ok"] is False
    assert "replicas" in result["error"]
    result = s.apply({"scale": {"kind": "ReplicaSet", "name": "nope", "replicas": 1}})
    assert result == {"ok": False, "error": 'replicasets.apps "nope" not found', "code": 404, "reason": "NotFound"}
    assert s.server.get("replicasets", "default", "web")["spec"]["replicas"] == 3


def test_config_action_changes_knobs_at_run_time():
    s = sim()
    s.run_until(5)
    assert s.apply({"config": {"workers": 2, "whatIf": {"expectations": False}}})["ok"]
    controller = s.controllers["replicaset"]
    assert controller.expectations.enabled is False
    assert s.config["workers"] == 2
    assert s.apply({"config": {"workers": 0}})["ok"] is False


def test_snapshot_has_what_the_ui_shows():
    s = sim()
    s.run_until(10)
    snap = s.snapshot()
    rs = snap["controllers"]["replicaset"]
    assert {"queue", "expectations", "workers", "informers", "lastSync"} <= set(rs)
    assert {"queue", "dirty", "processing", "waiting", "requeues"} <= set(rs["queue"])
    assert len(rs["workers"]) == 5
    informer = rs["informers"][0]
    assert {"lag", "pendingDeliveries", "paused", "resourceVersion", "serverRevision"} <= set(informer)
    assert rs["expectationsEnabled"] is True
    assert rs["expectations"]["default/web"]["add"] == 0
    assert snap["recent"]
    assert snap["nodes"]["nodes"]


def test_watch_fault_pause_makes_the_informer_lag():
    s = sim()
    s.run_until(5)
    s.apply({"watchFault": {"resource": "pods", "fault": "pause"}})
    s.apply({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}})
    s.run_until(10)
    informer = s.controllers["replicaset"].pod_informer.snapshot(s.server.revision)
    assert informer["paused"] is True
    assert informer["pendingDeliveries"] > 0
    s.apply({"watchFault": {"resource": "pods", "fault": "resume"}})
    s.run_until(15)
    assert s.controllers["replicaset"].pod_informer.snapshot(s.server.revision)["pendingDeliveries"] == 0


def test_pod_fault_crash_restarts_the_container():
    s = sim()
    s.run_until(5)
    result = s.apply({"podFault": {"selector": "app=web", "count": 1, "fault": "crash"}})
    assert result["ok"] and len(result["pods"]) == 1
    s.run_until(30)
    pod = s.server.get("pods", "default", result["pods"][0])
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 1


def test_api_fault_fails_matching_requests_then_lets_them_through():
    s = sim()
    s.apply({"apiFault": {"verb": "create", "resource": "pods", "after": 1, "count": 2, "code": 500}})
    s.run_until(20)
    codes = [r["code"] for r in s.server.requests if r["verb"] == "create" and r["resource"] == "pods"]
    assert codes[:3] == [201, 500, 500]
    assert codes.count(201) == 3


def test_pod_transitions_name_the_owner_and_syncs_number_their_pod_writes():
    records = trace_of(sim(), 10)
    owners = {r["owner"] for r in records if r["kind"] == "pod.transition"}
    assert owners == {"ReplicaSet/web"}
    requests = [(r["verb"], r["n"]) for r in records if r["kind"] == "sync.request"]
    assert requests == [("create", 1), ("create", 2), ("create", 3)]


def test_upcoming_names_the_next_timers_in_words():
    s = sim()
    s.run_until(1.0)
    upcoming = s.upcoming(3)
    assert [t["time"] for t in upcoming] == sorted(t["time"] for t in upcoming)
    assert all(t["time"] > 1.0 for t in upcoming)
    assert "containers start of pod default/web-" in upcoming[0]["what"]


def test_a_pending_api_request_is_named_with_its_client_verb_and_object():
    s = sim()
    for _ in range(10_000):
        nxt = s.next_event()
        if nxt is not None and nxt["what"].startswith("API request"):
            break
        s.step()
    else:
        raise AssertionError("no API request was ever pending")
    assert re.fullmatch(r"API request of [\w/.-]+ reaches the server: \w+ [\w/]+( [\w./-]+)?", nxt["what"]), nxt


def test_every_pending_callback_is_described_in_words_not_a_repr():
    s = sim()
    s.step()  # started
    seen = set()
    for _ in range(3000):
        nxt = s.next_event()
        if nxt is None:
            break
        assert not nxt["what"].startswith("<") and " object at 0x" not in nxt["what"], nxt
        seen.add(nxt["what"].split(" ")[-1])
        s.step()
    assert "resumes" in seen  # a task woken by its future was among them


def test_the_kernel_counts_the_events_it_ran():
    s = sim()
    s.run_until(1.0)
    n = s.kernel.events
    assert n > 0
    s.step()
    assert s.kernel.events == n + 1

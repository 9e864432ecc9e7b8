"""A simulation survives what goes wrong inside it, and every run has ceilings: errors contained
and reported, pods/nodes/events bounded, and the run-time fixes of issue 9 section 2."""

from __future__ import annotations

import copy

import pytest

from controlplane.limits import RunLimits
from controlplane.scenario import ScenarioError, parse_scenario
from controlplane.simulation import LimitError, Simulation
from tests.controlplane.factories import bare_pod, rs_manifest


def world(*, limits: RunLimits | None = None, replicas: int = 3, **config: object) -> Simulation:
    scenario = parse_scenario({"config": {"nodes": 3, **config}, "objects": [rs_manifest(replicas=replicas)]})
    sim = Simulation(scenario, limits=limits)
    sim.start()
    sim.run_until(10)
    return sim


def pods(sim: Simulation) -> list[dict]:
    return [p for p in sim.server.objects("pods") if not p["metadata"].get("deletionTimestamp")]


# -- errors are contained -------------------------------------------------------------------------


def test_a_sync_that_raises_is_reported_requeued_rate_limited_and_the_worker_lives_on():
    sim = world()
    controller = sim.controllers["replicaset"]
    real = controller.manage_replicas
    calls = []

    async def broken(*args, **kwargs):
        calls.append(sim.now)
        if len(calls) <= 2:
            raise KeyError("spec")
        return await real(*args, **kwargs)

    controller.manage_replicas = broken  # an injected bug inside syncReplicaSet
    sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}})
    sim.advance(30)
    errors = [e for e in sim.errors if e["where"] == "sync"]
    assert [e["key"] for e in errors] == ["default/web", "default/web"]
    assert errors[0]["error"] == "KeyError: 'spec'"
    # Requeued with the rate limiter's back-off (5 ms, then 10 ms), not dropped.
    assert calls[1] - calls[0] == pytest.approx(0.005, abs=0.002)
    assert controller.sync_crashes == 2
    failed = [s for s in sim.syncs if s["error"] and "sync crashed" in s["error"]]
    assert len(failed) == 2
    assert len(pods(sim)) == 5  # the third sync worked
    assert sim.report()["errors"][0]["where"] == "sync"


def test_a_replaced_sync_handler_that_raises_does_not_kill_its_worker():
    sim = world()
    controller = sim.controllers["replicaset"]
    seen = []

    async def handler(key, worker):
        seen.append(key)
        raise RuntimeError("boom")

    controller.sync_handler = handler
    controller.queue.add("default/web")
    sim.advance(2)
    assert len(seen) > 2  # retried with back-off by a live worker
    assert all(e["error"] == "RuntimeError: boom" for e in sim.errors)
    assert controller.queue.num_requeues("default/web") >= 2


def test_an_action_that_raises_is_logged_as_failed_and_the_session_goes_on():
    sim = world()

    def broken(name):
        raise ZeroDivisionError("division by zero")

    sim.nodes.node_down = broken
    result = sim.act({"nodeFault": {"name": "node-1", "fault": "down"}})
    assert result == {"ok": False, "error": "internal error: ZeroDivisionError: division by zero"}
    assert sim.actions[-1]["ok"] is False
    assert sim.errors[-1]["where"] == "action"
    assert sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 4}})["ok"] is True
    sim.advance(10)
    assert len(pods(sim)) == 4


def test_a_callback_that_raises_is_reported_and_the_rest_runs():
    sim = world()
    ran = []
    sim.kernel.call_later(1.0, lambda: 1 / 0)
    sim.kernel.call_later(2.0, lambda: ran.append(sim.now))
    sim.advance(5)
    assert sim.now == 15.0
    assert ran == [12.0]
    assert sim.errors[-1]["where"] == "kernel" and sim.errors[-1]["error"].startswith("ZeroDivisionError")


def test_a_clean_run_has_no_errors_in_its_report():
    sim = world()
    assert "errors" not in sim.report()


# -- ceilings --------------------------------------------------------------------------------------


def test_a_scenario_asking_for_more_pods_than_the_ceiling_is_refused_before_it_starts():
    scenario = parse_scenario({"objects": [rs_manifest(replicas=8), bare_pod("solo")]})
    sim = Simulation(scenario, limits=RunLimits(pods=8))
    with pytest.raises(LimitError, match=r"^objects\[1\]: the scenario asks for up to 9 pods at once"):
        sim.start()
    assert not sim.started and sim.server.count("pods") == 0


def test_pods_beyond_the_ceiling_at_run_time_are_refused_as_an_exceeded_quota():
    sim = world(limits=RunLimits(pods=5), replicas=3)
    # Through the Kubernetes API (a `request`), which takes any int32, as upstream; the page's
    # `scale` action past the ceiling is refused up front (test_replayable.py).
    scale = {"verb": "patch", "resource": "replicasets", "subresource": "scale", "namespace": "default", "name": "web",
             "patchType": "merge", "body": {"spec": {"replicas": 1_000_000_000}}}
    assert sim.act({"request": scale})["response"][0] == 200
    sim.advance(30)
    assert len(pods(sim)) == 5
    failed = [e for e in sim.server.objects("events") if e["reason"] == "FailedCreate"]
    assert failed
    assert (
        "exceeded quota: ctrlscope-pod-ceiling, requested: pods=1, used: pods=5, limited: pods=5"
        in (failed[0]["message"])
    )
    assert not sim.errors


def test_the_event_ceiling_halts_the_simulation_with_a_message():
    scenario = parse_scenario({"config": {"nodes": 3}, "objects": [rs_manifest(replicas=10)]})
    sim = Simulation(scenario, limits=RunLimits(events=40))
    sim.start()
    sim.run_until(100)
    assert sim.kernel.events == 40
    assert sim.now < 100
    assert sim.halted is not None and "the ceiling of 40 for one run (--max-events)" in sim.halted
    assert sim.errors[-1]["where"] == "limit"
    assert sim.step() is False
    assert sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 1}}) == {
        "ok": False,
        "error": sim.halted,
    }


def test_the_runner_refuses_a_run_that_reaches_the_event_ceiling(tmp_path):
    from controlplane.simulation import run_scenario

    path = tmp_path / "busy.yaml"
    path.write_text("config: {nodes: 2}\nobjects: []\nuntil: 100\n")
    with pytest.raises(LimitError, match="kernel events ran"):
        run_scenario(str(path), limits=RunLimits(events=3))


def test_a_config_action_beyond_the_node_ceiling_is_rejected_and_changes_nothing():
    sim = world(limits=RunLimits(nodes=4))
    before = sim.server.digest()
    result = sim.act({"config": {"nodes": 5, "workers": 2}})
    assert result["ok"] is False and "ceiling of 4" in result["error"]
    assert sim.server.digest() == before
    assert sim.config["workers"] == 5  # nothing of a refused config action applies


# -- run-time fixes ---------------------------------------------------------------------------------


def test_a_config_action_that_shrinks_nodes_is_a_rejected_action_not_a_crash():
    sim = world()
    result = sim.act({"config": {"nodes": 1}})
    assert result == {"ok": False, "error": "config.nodes: cannot shrink from 3 to 1 at run time (only add nodes)"}
    assert sim.actions[-1]["ok"] is False
    assert len(sim.nodes.kubelets) == 3 and sim.config["nodes"] == 3


def test_a_config_action_can_grow_nodes():
    sim = world()
    assert sim.act({"config": {"nodes": 4}})["ok"] is True
    assert sim.server.count("nodes") == 4


def test_resync_period_set_at_run_time_makes_the_informers_resync():
    def web_adds(sim, since):
        return [r for r in sim.recent if r["kind"] == "queue.add" and r["key"] == "default/web" and r["time"] > since]

    quiet = world()
    quiet.advance(30)
    assert web_adds(quiet, 10.0) == []
    sim = world()
    assert sim.act({"config": {"resyncPeriod": 5}})["ok"] is True
    sim.advance(30)
    times = sorted({r["time"] for r in web_adds(sim, 10.0)})
    assert times[:3] == [15.0, 20.0, 25.0]
    assert sim.controllers["replicaset"].config.resync_period == 5.0  # kept for a restart


def test_a_pause_with_a_delay_does_not_end_a_later_pause_without_one():
    sim = world()
    sim.act({"watchFault": {"resource": "pods", "fault": "pause", "delay": 10}})
    reflector = sim.controllers["replicaset"].pod_informer.reflector
    sim.advance(5)
    sim.act({"watchFault": {"resource": "pods", "fault": "resume"}})
    sim.act({"watchFault": {"resource": "pods", "fault": "pause"}})
    sim.advance(10)  # past the first pause's delay
    assert reflector.paused is True
    sim.act({"watchFault": {"resource": "pods", "fault": "pause", "delay": 3}})
    sim.advance(4)
    assert reflector.paused is False  # a pause's own delay still ends it


def test_a_node_fault_on_a_node_that_never_was_is_refused_unlogged():
    sim = world()
    assert sim.act({"nodeFault": {"name": "node-9", "fault": "down"}}) == {
        "ok": False,
        "error": 'nodeFault.name: no node "node-9" (the nodes are node-1 to node-3 by then)',
    }
    assert sim.actions == []  # a file with it is refused: the session's replay would be


def test_a_watch_fault_on_a_controller_that_does_not_run_is_refused_unlogged():
    scenario = parse_scenario({"config": {"controllers": ["replicaset"]}})
    sim = Simulation(scenario)
    result = sim.act({"watchFault": {"resource": "pods", "fault": "pause", "controller": "replicationcontroller"}})
    assert result == {
        "ok": False,
        "error": "watchFault.controller: the replicationcontroller controller does not run in this scenario "
        "(config.controllers)",
    }
    assert sim.actions == []


def test_owner_references_in_starting_objects_get_the_owners_uid():
    manifest = bare_pod("adopted")
    manifest["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web", "controller": True}]
    manifest["metadata"]["labels"] = {"app": "web"}
    scenario = parse_scenario({"config": {"nodes": 3}, "objects": [rs_manifest(replicas=3), manifest]})
    sim = Simulation(scenario)
    sim.start()
    sim.run_until(10)
    web = sim.server.peek("replicasets", "default", "web")
    pod = sim.server.peek("pods", "default", "adopted")
    assert pod["metadata"]["ownerReferences"][0]["uid"] == web["metadata"]["uid"]
    assert pod["metadata"]["ownerReferences"][0]["apiVersion"] == "apps/v1"
    assert len(pods(sim)) == 3  # the listed pod counts: the controller created only two


def test_digest_changes_only_with_a_write():
    sim = world()
    before = sim.server.digest()
    sim.server.list("pods")
    assert sim.server.digest() == before
    sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 4}})
    assert sim.server.digest() != before


def test_an_empty_scenario_text_is_refused():
    from controlplane.scenario import load_scenario

    with pytest.raises(ScenarioError, match="the file is empty"):
        load_scenario("# nothing\n")


def test_scenario_objects_are_not_mutated_by_a_run():
    data = {"objects": [rs_manifest(replicas=2)], "actions": [{"at": 1, "apply": bare_pod("p")}]}
    scenario = parse_scenario(copy.deepcopy(data))
    sim = Simulation(scenario)
    sim.start()
    sim.run_until(5)
    assert scenario.objects == data["objects"] and scenario.actions == data["actions"]


def test_error_records_validate_against_the_trace_schema():
    import json

    import jsonschema

    from controlplane.trace_export import SCHEMA_FILE

    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    sim = world()
    sim.kernel.event_limit = sim.kernel.events + 60  # a ceiling reached soon
    controller = sim.controllers["replicaset"]

    async def handler(key, worker):
        raise RuntimeError("boom")

    controller.sync_handler = handler
    controller.queue.add("default/web")
    sim.nodes.node_down = lambda name: 1 / 0
    sim.act({"nodeFault": {"name": "node-1", "fault": "down"}})
    sim.kernel.call_later(0.5, lambda: [][1])
    sim.advance(600)
    kinds = {record["where"] for record in sim.errors}
    assert kinds == {"sync", "action", "kernel", "limit"}
    for record in sim.errors:
        assert list(validator.iter_errors(json.loads(json.dumps(record)))) == [], record

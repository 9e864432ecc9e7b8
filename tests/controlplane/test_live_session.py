"""A live session: actions applied at the current instant, manual workers, lifting faults, and
the product's promise — an exported session replays headless to the identical report."""

from __future__ import annotations

import json

import yaml

from controlplane.scenario import load_scenario
from controlplane.simulation import Simulation, run_scenario

from .factories import rs_manifest


def demo(**config):
    sim = Simulation.from_file("demo")
    sim.config.update(config)
    return sim


def manual_sim(replicas=3):
    scenario = load_scenario(
        yaml.safe_dump(
            {"seed": 2, "config": {"manualWorkers": ["replicaset"]}, "objects": [rs_manifest("web", replicas)]}
        )
    )
    sim = Simulation(scenario)
    sim.subscribe(lambda r: None)
    sim.run_until(1.0)  # caches synced, web queued
    return sim


def queue_of(sim, controller="replicaset"):
    return sim.controllers[controller].queue.snapshot()


def test_manual_workers_dequeue_nothing_until_told():
    sim = manual_sim()
    assert queue_of(sim)["queue"] == ["default/web"]
    assert {w["stage"] for w in sim.snapshot()["controllers"]["replicaset"]["workers"]} == {"manual"}
    assert sim.syncs == []


def test_sync_next_takes_the_head_and_runs_one_sync():
    sim = manual_sim()
    result = sim.act({"sync": {"controller": "replicaset"}})
    assert result == {"ok": True, "key": "default/web", "worker": 0}
    sim.step_sync()
    assert [s["key"] for s in sim.syncs] == ["default/web"]
    sim.advance(5.0)
    # The sync's creates are observed and requeue the key, but nobody takes it.
    assert len(sim.syncs) == 1
    assert queue_of(sim)["queue"] == ["default/web"]


def test_sync_of_a_named_key_takes_it_out_of_order():
    sim = manual_sim()
    sim.act({"apply": rs_manifest("api", 1)})
    sim.advance(1.0)
    assert queue_of(sim)["queue"] == ["default/web", "default/api"]
    assert sim.act({"sync": {"controller": "replicaset", "key": "default/api"}})["key"] == "default/api"
    assert queue_of(sim)["queue"] == ["default/web"]


def test_sync_is_refused_with_a_reason_and_changes_nothing():
    sim = manual_sim()
    refused = sim.act({"sync": {"controller": "replicaset", "key": "default/nope"}})
    assert refused["ok"] is False and "default/nope is not queued" in refused["error"]
    auto = sim.act({"sync": {"controller": "replicationcontroller"}})
    assert "automatic" in auto["error"]
    assert queue_of(sim)["queue"] == ["default/web"]


def test_sync_is_refused_when_every_worker_is_busy():
    sim = manual_sim()
    sim.act({"config": {"workers": 1}})
    sim.act({"apply": rs_manifest("api", 1)})
    sim.advance(1.0)
    sim.act({"sync": {"controller": "replicaset"}})
    busy = sim.act({"sync": {"controller": "replicaset"}})
    assert "all 1 replicaset workers are busy" in busy["error"]


def test_back_to_automatic_resumes_the_workers():
    sim = manual_sim()
    sim.act({"config": {"manualWorkers": []}})
    sim.advance(10.0)
    rs = sim.server.get("replicasets", "default", "web")
    assert rs["status"]["replicas"] == 3
    assert {w["stage"] for w in sim.snapshot()["controllers"]["replicaset"]["workers"]} == {"idle"}


def test_lift_fault_stops_an_api_fault_rule():
    sim = demo()
    rule = sim.act({"apiFault": {"verb": "create", "resource": "pods", "count": 1000, "code": 500}})
    assert rule["id"] == 1
    sim.advance(5.0)
    failed = sum(1 for r in sim.server.requests if r["verb"] == "create" and r["code"] == 500)
    assert failed > 0
    assert sim.act({"liftFault": {"apiFault": 1}}) == {"ok": True, "lifted": [1]}
    assert sim.snapshot()["apiFaults"][0]["inForce"] is False
    sim.advance(30.0)
    assert sum(1 for r in sim.server.requests if r["verb"] == "create" and r["code"] == 500) == failed
    replicas = {rs["metadata"]["name"]: rs["status"]["replicas"] for rs in sim.server.objects("replicasets")}
    assert replicas == {"api": 3, "web": 6}
    again = sim.act({"liftFault": {"apiFault": 1}})
    assert again["ok"] is False and "already lifted" in again["error"]
    assert "no apiFault rule 7" in sim.act({"liftFault": {"apiFault": 7}})["error"]


def test_a_malformed_action_is_refused_without_moving_time_or_entering_the_log():
    sim = demo()
    sim.run_until(3.0)
    sim.step()
    before = (sim.now, sim.kernel.pending(), len(sim.actions))
    result = sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": -1}})
    assert result == {"ok": False, "error": "scale.replicas: must be >= 0"}
    assert (sim.now, sim.kernel.pending(), len(sim.actions)) == before


def test_an_action_applies_once_every_event_of_its_instant_has_run():
    sim = demo()
    sim.run_until(2.0)
    order = []
    sim.subscribe(lambda r: order.append("action") if r["kind"] == "action" else None)
    sim.kernel.call_soon(lambda: (order.append("event"), sim.kernel.call_soon(order.append, "its follow-up")))
    t = sim.now
    sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}})
    assert order == ["event", "its follow-up", "action"]
    assert sim.now == t and sim.actions[-1]["time"] == t


def session_with_a_dozen_ui_actions(read_after_every_event=True):
    """The demo driven like a user would: runs, steps, manual syncs, faults, edits."""
    sim = Simulation.from_file("demo")
    sim.subscribe(lambda r: None)  # the host listens to the trace
    snapshots = []

    def run(seconds):
        end = sim.now + seconds
        while (nxt := sim.kernel.peek()) is not None and nxt <= end:
            sim.step()
            if read_after_every_event:
                snapshots.append(sim.snapshot())  # frames read the world after each event
        sim.run_until(end)

    run(3.0)
    sim.step()
    sim.step()  # paused in the middle of an instant
    sim.act({"config": {"manualWorkers": ["replicaset"]}})
    sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 7}})
    run(0.5)
    sim.act({"sync": {"controller": "replicaset"}})
    sim.step_stage()
    sim.step_stage()
    sim.act(
        {
            "apiFault": {
                "verb": "create",
                "resource": "pods",
                "after": 1,
                "count": 2,
                "code": 403,
                "reason": "Forbidden",
                "message": "exceeded quota",
            }
        }
    )
    sim.step_sync()
    run(1.0)
    sim.act({"sync": {"controller": "replicaset", "key": "default/api"}})
    run(2.0)
    sim.act({"config": {"manualWorkers": []}})
    sim.act({"podFault": {"selector": "app=web", "count": 2, "fault": "crash"}})
    sim.act({"watchFault": {"resource": "pods", "fault": "pause"}})
    run(4.0)
    sim.act({"podFault": {"selector": "app=legacy", "count": 1, "fault": "delete"}})
    sim.act({"watchFault": {"resource": "pods", "fault": "resume"}})
    sim.act({"liftFault": {"apiFault": 1}})
    sim.act({"nodeFault": {"name": "node-2", "fault": "down"}})
    run(15.0)
    sim.act({"delete": {"kind": "ReplicaSet", "name": "api", "propagationPolicy": "Orphan"}})
    sim.act({"scale": {"kind": "ReplicaSet", "name": "nope", "replicas": 1}})  # rejected: 404
    run(20.0)
    sim.step()
    sim.finish_instant()
    return sim


def test_an_exported_session_replays_to_the_identical_report(tmp_path):
    live = session_with_a_dozen_ui_actions()
    exported = live.export_scenario()
    assert len([a for a in exported["actions"] if "sync" in a]) == 2
    path = tmp_path / "session.yaml"
    path.write_text(yaml.safe_dump(exported, sort_keys=False))
    replayed = run_scenario(str(path))
    assert json.dumps(replayed) == json.dumps(live.report())
    # The rejected scale is in the file (it replays as the same 404), and the demo's own
    # timeline actions after the session's end are kept for later.
    assert any(a.get("scale", {}).get("name") == "nope" for a in exported["actions"])


def test_reading_the_world_after_every_event_changes_nothing():
    watched = session_with_a_dozen_ui_actions(read_after_every_event=True)
    unwatched = session_with_a_dozen_ui_actions(read_after_every_event=False)
    assert json.dumps(watched.report()) == json.dumps(unwatched.report())


def test_a_session_exported_before_its_clock_moved_replays_too(tmp_path):
    sim = Simulation.from_file("demo")
    sim.start()
    sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 2}})
    path = tmp_path / "t0.yaml"
    path.write_text(yaml.safe_dump(sim.export_scenario(), sort_keys=False))
    assert json.dumps(run_scenario(str(path))) == json.dumps(sim.report())

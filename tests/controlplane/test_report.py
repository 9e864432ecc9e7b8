"""The report's additions beyond the first seven sections (docs/scenarios.md, "The
report"): per-sync details, status history, metrics, node names and the action log."""

import json

import pytest

from controlplane.scenario import load_file
from controlplane.simulation import Simulation, run_scenario

from .factories import PROPERTY_MAX_PODS, shipped


@pytest.fixture(scope="module")
def quota():
    return run_scenario("quota-slow-start")


def test_a_sync_reports_its_slow_start_batches_and_expectations_before_and_after(quota):
    first = quota["syncs"][0]
    assert first["manage"] == {"action": "create", "count": 10}
    assert first["batches"] == [
        {"size": 1, "succeeded": 1, "failed": 0},
        {"size": 2, "succeeded": 2, "failed": 0},
        {"size": 4, "succeeded": 0, "failed": 4},
    ]
    assert first["expectationsBefore"] is None  # no record before the first sync
    # 10 expected, 3 observed... not yet: 7 lowered (4 failed, 3 never attempted), 3 pending.
    assert first["expectationsAfter"] == {"add": 3, "del": 0}


def test_a_failed_sync_reports_the_rate_limited_requeue_with_its_delay(quota):
    failed = [s for s in quota["syncs"] if s["error"]]
    assert failed[0]["requeue"] == {"decision": "rateLimited", "delay": 0.005}
    delays = [s["requeue"]["delay"] for s in failed[:4]]
    assert delays == [0.005, 0.01, 0.02, 0.04]  # the per-item exponential back-off


def test_a_sync_refused_by_the_consistency_store_says_so_in_a_field(quota):
    verdicts = {s["consistency"] for s in quota["syncs"]}
    assert verdicts == {"ready", "stale"}
    stale = next(s for s in quota["syncs"] if s["consistency"] == "stale")
    assert stale["manage"] is None and stale["batches"] == []
    assert "is not as new as written version" in stale["error"]


def test_the_consistency_verdict_is_off_without_the_gate():
    report = run_scenario("stale-cache-expectations")
    assert {s["consistency"] for s in report["syncs"]} == {"off"}


def test_a_minready_requeue_reports_after_with_its_delay():
    report = run_scenario("demo", until=12)
    afters = [
        s["requeue"] for s in report["syncs"] if s["key"] == "default/api" and s["requeue"]["decision"] == "after"
    ]
    assert afters and all(0 < r["delay"] <= 5 for r in afters)
    plain = [s for s in report["syncs"] if s["key"] == "default/web" and s["error"] is None]
    assert {s["requeue"]["decision"] for s in plain} == {"none"}


def test_status_history_shows_replica_failure_set_then_removed(quota):
    writes = quota["statusHistory"]["replicaset"]["default/web"]
    set_at = [w["time"] for w in writes if w["changed"].get("conditions")]
    removed_at = [w["time"] for w in writes if "conditions" in w["changed"] and w["changed"]["conditions"] is None]
    assert len(set_at) == 1 and len(removed_at) == 1
    assert set_at[0] < 1 < 30 <= removed_at[0]
    assert writes[1]["changed"] == {"replicas": 3, "fullyLabeledReplicas": 3}


def test_the_stale_sync_skip_metric_is_reported(quota):
    skips = quota["metrics"]["replicaset"]["replicaset_controller_stale_sync_skips_total"]
    counted = sum(s["consistency"] == "stale" for s in quota["syncs"] if s["controller"] == "replicaset")
    assert sum(m["value"] for m in skips) == counted > 0


def test_the_report_is_strict_json(quota):
    json.loads(json.dumps(quota, allow_nan=False))


def test_node_names_are_listed(quota):
    assert quota["nodes"] == ["node-1", "node-2", "node-3"]


def test_every_applied_action_is_listed_with_its_result_and_a_rejected_one_with_its_code():
    sim = Simulation.from_file("demo")
    sim.run_until(1)
    sim.act({"scale": {"kind": "ReplicaSet", "name": "nope", "replicas": 2}})
    sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}})
    actions = sim.report()["actions"]
    assert [a["time"] for a in actions] == [1.0, 1.0]
    rejected, accepted = actions
    assert rejected["ok"] is False and rejected["code"] == 404 and "not found" in rejected["error"]
    assert accepted == {
        "time": 1.0,
        "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}},
        "ok": True,
    }


def test_report_times_are_exact_virtual_times():
    # No float noise (0.10500000000000001): every time is a whole number of nanoseconds.
    noisy = []

    def walk(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}")
        elif isinstance(value, list):
            for item in value:
                walk(item, f"{path}[]")
        elif isinstance(value, float) and len(repr(value).partition(".")[2]) > 9:
            noisy.append((path, value))

    walk(run_scenario("demo"), "report")
    assert noisy == []


@pytest.mark.parametrize("scenario", shipped(PROPERTY_MAX_PODS))
def test_report_json_is_the_report_dumped_compactly_byte_for_byte(scenario):
    sim = Simulation(load_file(scenario), seed=7)
    sim.start()
    for t in (0.0, 7.5, 60.0):
        sim.run_until(t)
        assert sim.report_json() == json.dumps(sim.report(), separators=(",", ":"))

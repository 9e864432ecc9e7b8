"""The oracles in a world that runs the Deployment controller (issue 28 §4): the shipped Deployment
scenarios pass every oracle (the liveness oracle once took a Deployment for a ReplicaSet and
counted the pods it owns directly: none), and each rollout oracle fires on a crafted bad state."""

import copy
from pathlib import Path

import pytest
import yaml

from controlplane.controllers.registry import DEPLOYMENT
from controlplane.oracles import ORACLES, ROLLOUT_LIVENESS, ROLLOUT_SAFETY, OracleReport, SafetyMonitor, check_liveness
from controlplane.scenario import parse_scenario
from controlplane.simulation import Simulation
from controlplane.swarm import lift_time_of, run_scenario_checked
from tests.controlplane.factories import rs_manifest

SCENARIOS = Path(__file__).resolve().parents[2] / "controlplane" / "scenarios"
# Every shipped scenario with a Deployment in it but the 10,000-pod one (minutes, not seconds).
SHIPPED = (
    "deployment-rolling-update",
    "deployment-recreate",
    "deployment-progress-deadline",
    "lesson-rollback",
    "lesson-recreate-vs-rolling",
    "lesson-proportional-scaling",
    "lesson-rollout-stuck-image-pull",
)
RS = DEPLOYMENT.owns[0].resource


def shipped(name):
    data = yaml.safe_load((SCENARIOS / f"{name}.scenario.yaml").read_text())
    data.pop("expect", None)
    return data


def test_the_rollout_oracles_are_named_beside_the_others():
    assert set(ROLLOUT_SAFETY) | set(ROLLOUT_LIVENESS) <= set(ORACLES)


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_deployment_scenario_passes_every_oracle(name):
    data = shipped(name)
    lift = lift_time_of(data)
    result = run_scenario_checked(data, lift_time=lift, quiet=float(data["until"]) - lift)
    assert [str(v) for v in result.violations] == []
    # The ReplicaSets' liveness is still judged, and the Deployments' by their own oracles.
    assert {"esr-replicas", "esr-status", "esr-quiescent", "rollout-complete", "rollout-hash-unique"} <= set(
        result.checked
    )


def test_the_rolling_update_is_judged_by_every_rollout_oracle():
    data = shipped("deployment-rolling-update")
    result = run_scenario_checked(data, lift_time=30, quiet=60)
    assert result.violations == []
    assert set(ROLLOUT_SAFETY) | set(ROLLOUT_LIVENESS) <= set(result.checked)
    assert result.voided == {}


def test_the_liveness_of_a_world_without_deployments_checks_no_rollout_oracle():
    data = {"name": "rs only", "config": {"nodes": 2}, "objects": [rs_manifest("web", 2)], "until": 30}
    result = run_scenario_checked(data, lift_time=0, quiet=30)
    assert result.violations == []
    assert not (set(ROLLOUT_SAFETY) | set(ROLLOUT_LIVENESS)) & set(result.checked)


# -- crafted bad states -----------------------------------------------------------------------------


def watched(data):
    sim = Simulation(parse_scenario(data))
    report = OracleReport()
    return sim, report, SafetyMonitor(sim, report)


def rolled(until=90, **spec):
    """The shipped rolling update, run to `until` under a safety monitor (the rollout is complete
    by t=90)."""
    data = shipped("deployment-rolling-update")
    data["objects"][0]["spec"].update(spec)
    data["until"] = until
    sim, report, monitor = watched(data)
    sim.start()
    sim.run_until(until)
    monitor.flush()
    assert report.violations == []
    return sim, report, monitor


def replica_sets(sim):
    rss = sorted(sim.server.objects(RS), key=lambda rs: rs["metadata"]["creationTimestamp"])
    return [copy.deepcopy(rs) for rs in rss]


def violated(report):
    return {v.oracle for v in report.violations}


def test_surge_fires_when_the_replica_sets_want_more_than_replicas_plus_max_surge():
    sim, report, monitor = rolled()
    new = replica_sets(sim)[-1]
    # 10 + maxSurge 25% (3) = 13: a controller that scaled its new ReplicaSet to 14 broke the budget.
    sim.server.patch(RS, "default", new["metadata"]["name"], {"spec": {"replicas": 14}})
    monitor.flush()
    assert "rollout-surge" in violated(report)
    assert "13" in next(v.message for v in report.violations if v.oracle == "rollout-surge")


def test_surge_does_not_fire_at_the_bound():
    sim, report, monitor = rolled()
    new = replica_sets(sim)[-1]
    sim.server.patch(RS, "default", new["metadata"]["name"], {"spec": {"replicas": 13}})
    monitor.flush()
    assert report.violations == []


def test_unavailable_fires_when_availability_drops_below_the_floor_once_available():
    sim, report, monitor = rolled()
    new = replica_sets(sim)[-1]
    # 10 - maxUnavailable 25% (2) = 8 must stay available; 7 is one too few.
    sim.server.patch(RS, "default", new["metadata"]["name"], {"status": {"availableReplicas": 7}}, subresource="status")
    monitor.flush()
    assert "rollout-unavailable" in violated(report)


def test_unavailable_holds_at_the_floor():
    sim, report, monitor = rolled()
    new = replica_sets(sim)[-1]
    sim.server.patch(RS, "default", new["metadata"]["name"], {"status": {"availableReplicas": 8}}, subresource="status")
    monitor.flush()
    assert report.violations == []


def test_unavailable_stands_down_after_a_pod_fault():
    data = shipped("deployment-rolling-update")
    data["actions"].append({"at": 60, "podFault": {"selector": "app=web", "fault": "crash", "count": 5}})
    data["until"] = 90
    lift = 60
    result = run_scenario_checked(data, lift_time=lift, quiet=30)
    assert "rollout-unavailable" in result.voided
    assert "podFault" in result.voided["rollout-unavailable"]
    assert not {v.oracle for v in result.violations} & {"rollout-unavailable"}


def test_a_scale_of_the_deployment_disarms_the_budgets_until_they_hold_again():
    sim, report, monitor = rolled()
    # Scaled down to 2 by a user: the old bound (13) and the new one (2 + 1) disagree until the
    # controller's next sync; no violation for that.
    sim.apply({"scale": {"kind": DEPLOYMENT.kind, "name": "web", "replicas": 2}})
    monitor.flush()
    sim.run_until(sim.now + 30)
    monitor.flush()
    assert report.violations == []
    assert "rollout-unavailable" not in report.voided


def test_hash_unique_fires_on_two_replica_sets_with_one_pod_template_hash():
    sim, report, monitor = rolled()
    old, new = replica_sets(sim)
    value = new["metadata"]["labels"]["pod-template-hash"]
    sim.server.patch(RS, "default", old["metadata"]["name"], {"metadata": {"labels": {"pod-template-hash": value}}})
    monitor.flush()
    assert "rollout-hash-unique" in violated(report)


def test_complete_fires_on_a_status_that_is_not_its_replica_sets():
    sim, report, _ = rolled()
    sim.server.patch(DEPLOYMENT.resource, "default", "web", {"status": {"updatedReplicas": 9}}, subresource="status")
    check_liveness(sim, report)
    assert "rollout-complete" in violated(report)


def test_complete_fires_on_a_rollout_left_half_way():
    sim, report, _ = rolled()
    old, _new = replica_sets(sim)
    sim.server.patch(RS, "default", old["metadata"]["name"], {"spec": {"replicas": 1}})
    check_liveness(sim, report)
    assert "rollout-complete" in violated(report)
    assert "old ReplicaSets not at 0" in next(v.message for v in report.violations if v.oracle == "rollout-complete")


def test_history_fires_when_more_old_replica_sets_are_kept_than_the_limit():
    sim, report, _ = rolled(revisionHistoryLimit=1)
    check_liveness(sim, report)
    assert report.violations == []
    assert "rollout-history" in report.checked
    old = replica_sets(sim)[0]
    extra = {
        "apiVersion": "apps/v1",
        "kind": old["kind"],
        "metadata": {
            "name": "web-extra",
            "namespace": "default",
            "labels": {**old["metadata"]["labels"], "pod-template-hash": "extra"},
            "ownerReferences": old["metadata"]["ownerReferences"],
        },
        "spec": {**old["spec"], "replicas": 0},
    }
    extra["spec"]["selector"] = {
        "matchLabels": {**old["spec"]["selector"]["matchLabels"], "pod-template-hash": "extra"}
    }
    extra["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] = "extra"
    sim.server.create(RS, "default", extra)
    check_liveness(sim, report)
    assert "rollout-history" in violated(report)


def test_a_deployment_key_dropped_after_max_retries_is_no_crash():
    # Found by the swarm with Deployments (seed 16): the `sync.requeue` record of a dropped key had
    # no `delay`, and the world's sync history raised on it inside the controller's worker.
    data = shipped("deployment-rolling-update")
    data["actions"] = [
        {"at": 30, "apiFault": {"verb": "create", "resource": RS, "code": 500, "count": 1000}},
        data["actions"][0] | {"at": 31},
        {"at": 400, "liftFault": {"apiFault": "all"}},
    ]
    data["config"]["resyncPeriod"] = 60
    data["until"] = 400
    sim = Simulation(parse_scenario(data))
    dropped = []
    sim.trace.subscribe(
        lambda r: dropped.append(r) if r["kind"] == "sync.requeue" and r["decision"] == "dropped" else None
    )
    sim.start()
    sim.run_until(300)
    assert dropped, "the key was never dropped: the test does not reach handleErr's maxRetries"
    assert sim.errors == []
    result = run_scenario_checked(data, lift_time=400, quiet=200)
    assert [str(v) for v in result.violations] == []

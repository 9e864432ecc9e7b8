"""The Deployment controller's less travelled paths in a simulated cluster, each against what
upstream v1.36 does (spec sections in the test names' comments): the legacy rollback of
syncDeployment (§13), ReplicaFailure carried from a ReplicaSet to its Deployment (D12.6), the
workqueue's drop after `maxRetries` (D3.3), a minReadySeconds-only change (D6.6, D12.10),
`status.terminatingReplicas` behind its feature gate (D12.3), and a scale to 0 and back (D7, D10)."""

from __future__ import annotations

import pytest

from controlplane.deployment import util

from .test_deployment_controller import (
    deployment_of,
    events,
    image_patch,
    manifest,
    pods,
    replica_sets,
    run_watching,
    world,
)

ROLLBACK_TO = util.DEPRECATED_ROLLBACK_TO


def annotate(at, value):
    patch = {"metadata": {"annotations": {ROLLBACK_TO: value}}}
    return {"at": at, "patch": {"kind": "Deployment", "name": "web", "patch": patch}}


def condition(d, kind):
    return next((c for c in (d.get("status") or {}).get("conditions") or () if c["type"] == kind), None)


def image_of(obj):
    return obj["spec"]["template"]["spec"]["containers"][0]["image"]


def warnings(sim):
    return [(e["reason"], e["message"]) for e in sim.server.objects("events") if e["type"] == "Warning"]


def two_revisions(*actions, until=120):
    """nginx:1.27 (revision 1), nginx:1.28 at t=20 (revision 2), complete by t=50."""
    patch = {"at": 20, "patch": {"kind": "Deployment", "name": "web", "patch": image_patch("nginx:1.28")}}
    return world([manifest(3)], [patch, *actions], until=until)


# -- §13 the legacy rollback (`deprecated.deployment.rollback.to`) --------------------------------


@pytest.mark.parametrize("to", ["1", "0"])
def test_a_rollback_to_a_revision_or_the_last_brings_back_its_template_and_replica_set(to):
    # "0" is LastRevision: the second-highest revision, 1 here.
    sim = two_revisions(annotate(50, to))
    sim.run_until(49)
    first, second = replica_sets(sim)
    assert util.annotations_of(deployment_of(sim))[util.REVISION_ANNOTATION] == "2"
    generation = deployment_of(sim)["metadata"]["generation"]
    sim.run_until(100)
    d = deployment_of(sim)
    # rollbackToTemplate: the old RS's template (without its pod-template-hash label), the
    # annotation cleared in the same PUT (one generation for the annotation, one for the PUT).
    assert image_of(d) == "nginx:1.27"
    assert util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY not in d["spec"]["template"]["metadata"]["labels"]
    assert ROLLBACK_TO not in util.annotations_of(d)
    assert d["metadata"]["generation"] == generation + 2
    rollbacks = [e["message"] for e in sim.server.objects("events") if e["reason"] == "DeploymentRollback"]
    assert rollbacks == ['Rolled back deployment "web" to revision 1']
    # No third ReplicaSet: the first one is the new one again, with the next revision, and its
    # old revision number in its history.
    again, now_old = replica_sets(sim)
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert now_old["metadata"]["name"] == second["metadata"]["name"]
    assert (again["spec"]["replicas"], now_old["spec"]["replicas"]) == (3, 0)
    assert util.annotations_of(again)[util.REVISION_ANNOTATION] == "3"
    assert util.annotations_of(again)[util.REVISION_HISTORY_ANNOTATION] == "1"
    assert util.annotations_of(d)[util.REVISION_ANNOTATION] == "3"
    assert (condition(d, "Progressing")["reason"], d["status"]["availableReplicas"]) == ("NewReplicaSetAvailable", 3)
    assert warnings(sim) == []


def test_a_rollback_to_an_unknown_revision_gives_up_with_a_warning_and_clears_the_annotation():
    sim = two_revisions(annotate(50, "7"))
    sim.run_until(49)
    before = deployment_of(sim)
    sim.run_until(60)
    d = deployment_of(sim)
    assert warnings(sim) == [("DeploymentRollbackRevisionNotFound", "Unable to find the revision to rollback to.")]
    assert ROLLBACK_TO not in util.annotations_of(d)
    assert image_of(d) == "nginx:1.28"
    assert len(replica_sets(sim)) == 2
    # No condition of its own: the rollout's conditions are as they were.
    assert d["status"]["conditions"] == before["status"]["conditions"]
    assert util.annotations_of(d)[util.REVISION_ANNOTATION] == "2"


def test_a_rollback_to_the_last_revision_without_one_gives_up_with_a_warning():
    sim = world([manifest(3)], [annotate(20, "0")])
    sim.run_until(30)
    assert warnings(sim) == [("DeploymentRollbackRevisionNotFound", "Unable to find last revision.")]
    d = deployment_of(sim)
    assert ROLLBACK_TO not in util.annotations_of(d)
    assert len(replica_sets(sim)) == 1 and d["status"]["availableReplicas"] == 3


def test_a_rollback_to_the_current_revision_leaves_the_template_unchanged():
    sim = two_revisions(annotate(50, "2"))
    sim.run_until(60)
    assert warnings(sim) == [
        (
            "DeploymentRollbackTemplateUnchanged",
            'The rollback revision contains the same template as current deployment "web"',
        )
    ]
    d = deployment_of(sim)
    assert ROLLBACK_TO not in util.annotations_of(d) and image_of(d) == "nginx:1.28"
    assert not [e for e in sim.server.objects("events") if e["reason"] == "DeploymentRollback"]


@pytest.mark.parametrize("value", ["abc", " 1", "1 ", "+ 1", "1_0", "\u0661", "99999999999999999999"])
def test_an_annotation_strconv_parseint_refuses_is_ignored(value):
    # getRollbackTo: strconv.ParseInt(revision, 10, 64); an error means no rollback, and the
    # annotation stays (only a rollback clears it).
    sim = two_revisions(annotate(50, value))
    sim.run_until(70)
    d = deployment_of(sim)
    assert util.annotations_of(d)[ROLLBACK_TO] == value
    assert image_of(d) == "nginx:1.28"
    assert warnings(sim) == []


def test_a_rollback_while_paused_waits_for_the_resume():
    # syncDeployment: paused → sync, before the rollback is looked at.
    pause = {"at": 45, "patch": {"kind": "Deployment", "name": "web", "patch": {"spec": {"paused": True}}}}
    resume = {"at": 70, "patch": {"kind": "Deployment", "name": "web", "patch": {"spec": {"paused": False}}}}
    sim = two_revisions(pause, annotate(50, "1"), resume)
    sim.run_until(69)
    d = deployment_of(sim)
    assert util.annotations_of(d)[ROLLBACK_TO] == "1" and image_of(d) == "nginx:1.28"
    sim.run_until(110)
    d = deployment_of(sim)
    assert ROLLBACK_TO not in util.annotations_of(d) and image_of(d) == "nginx:1.27"
    assert replica_sets(sim)[0]["spec"]["replicas"] == 3


# -- D12.6 ReplicaFailure: a ReplicaSet's failure on its Deployment, and gone with it -------------

QUOTA = 'pods "web" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=3, limited: pods=3'


def test_a_replica_sets_replica_failure_is_copied_to_the_deployment_and_cleared_with_it():
    # A quota lets 3 pods through (quota-slow-start's fault); the Deployment asks for 5. At 30 s
    # it is scaled to 3: the ReplicaSet needs no create, drops ReplicaFailure, and so does the
    # Deployment (syncRolloutStatus: RemoveDeploymentCondition when no RS has one).
    fault = {
        "at": 0,
        "apiFault": {
            "verb": "create",
            "resource": "pods",
            "after": 3,
            "count": 100,
            "code": 403,
            "reason": "Forbidden",
            "message": QUOTA,
        },
    }
    scale = {"at": 30, "scale": {"kind": "Deployment", "name": "web", "replicas": 3}}
    sim = world([manifest(5)], [fault, scale], until=60)
    sim.run_until(29)
    (rs,) = replica_sets(sim)
    rs_failure = condition(rs, "ReplicaFailure")
    d = deployment_of(sim)
    failure = condition(d, "ReplicaFailure")
    # ReplicaSetToDeploymentCondition: type, status, reason, message; both times from the RS's
    # lastTransitionTime.
    assert (failure["status"], failure["reason"], failure["message"]) == ("True", "FailedCreate", rs_failure["message"])
    assert QUOTA in failure["message"]
    assert failure["lastUpdateTime"] == failure["lastTransitionTime"] == rs_failure["lastTransitionTime"]
    assert (d["status"]["availableReplicas"], condition(d, "Available")["status"]) == (3, "False")
    assert condition(d, "Progressing")["reason"] == "ReplicaSetUpdated"  # not failed: only the deadline fails it
    sim.run_until(40)
    (rs,) = replica_sets(sim)
    d = deployment_of(sim)
    assert condition(rs, "ReplicaFailure") is None and condition(d, "ReplicaFailure") is None
    assert (condition(d, "Available")["status"], condition(d, "Progressing")["reason"]) == (
        "True",
        "NewReplicaSetAvailable",
    )


# -- D3.3 handleErr: dropped after maxRetries ---------------------------------------------------


def test_a_key_that_keeps_failing_is_requeued_15_times_then_dropped_until_the_next_event():
    from controlplane.causes import describe

    # Every ReplicaSet update of the deployment controller fails 500 from 19 s: the scale at 20 s
    # fails in scaleReplicaSet each time it is tried.
    fault = {
        "at": 19,
        "apiFault": {
            "verb": "update",
            "resource": "replicasets",
            "client": "deployment-controller",
            "count": 1000,
            "code": 500,
        },
    }
    scale = {"at": 20, "scale": {"kind": "Deployment", "name": "web", "replicas": 5}}
    lift = {"at": 250, "liftFault": {"apiFault": "all"}}
    touch = {"at": 260, "patch": {"kind": "Deployment", "name": "web", "patch": {"metadata": {"labels": {"x": "y"}}}}}
    sim = world([manifest(3)], [fault, scale, lift, touch], until=300)
    records = []
    sim.trace.subscribe(
        lambda r: (
            records.append(r)
            if r["kind"] in ("sync.end", "sync.requeue") and r.get("controller") == "deployment" and r["time"] >= 20
            else None
        )
    )
    sim.run_until(255)
    ends = [r for r in records if r["kind"] == "sync.end"]
    requeues = [r for r in records if r["kind"] == "sync.requeue"]
    assert len(ends) == 16 and all("injected fault: 500" in (r.get("error") or "") for r in ends)
    # 15 AddRateLimited (DefaultTypedControllerRateLimiter: 5 ms * 2^n), then "Dropping deployment
    # out of the queue" and Forget.
    assert [r["decision"] for r in requeues] == ["rateLimited"] * 15 + ["dropped"]
    assert [r["delay"] for r in requeues[:15]] == pytest.approx([0.005 * 2**n for n in range(15)])
    assert [r["requeues"] for r in requeues] == [*range(1, 16), 15]
    assert describe(requeues[-1]) == "default/web dropped from the queue after 15 requeues"
    dropped_at = requeues[-1]["time"]
    assert 183 < dropped_at < 185  # 20 s + the sum of the 15 delays (163.8 s) + the syncs
    controller = sim.controllers["deployment"]
    assert controller.queue.num_requeues("default/web") == 0 and len(controller.queue) == 0
    assert replica_sets(sim)[0]["spec"]["replicas"] == 3  # nothing retries it now
    last = [s for s in sim.report()["syncs"] if s["controller"] == "deployment"][-1]
    assert last["requeue"] == {"decision": "dropped", "delay": None}
    # The next event (a label change at 260 s, the fault lifted at 250 s) syncs it again.
    sim.run_until(270)
    assert replica_sets(sim)[0]["spec"]["replicas"] == 5
    # Forgotten when dropped: the next failure (a 409 of a status write from the stale cache,
    # as the pods come) backs off from 5 ms again.
    later = [r for r in records if r["kind"] == "sync.requeue" and r["time"] > dropped_at]
    assert later and (later[0]["delay"], later[0]["requeues"]) == (0.005, 1)


# -- D6.6 / D12.10 a minReadySeconds-only change -------------------------------------------------


def test_a_min_ready_seconds_change_updates_the_replica_set_in_place_and_availability_follows():
    patch = {"at": 20, "patch": {"kind": "Deployment", "name": "web", "patch": {"spec": {"minReadySeconds": 60}}}}
    sim = world([manifest(3)], [patch], until=120)
    sim.run_until(19)
    (rs,) = replica_sets(sim)
    ready_since = max(
        c["lastTransitionTime"] for p in pods(sim) for c in p["status"]["conditions"] if c["type"] == "Ready"
    )
    sim.run_until(21)
    (after,) = replica_sets(sim)
    d = deployment_of(sim)
    # getNewReplicaSet: the existing new RS takes the Deployment's minReadySeconds (one PUT); no
    # new RS, no new revision, no scaling.
    assert after["metadata"]["name"] == rs["metadata"]["name"]
    assert after["spec"]["minReadySeconds"] == 60
    assert util.annotations_of(after)[util.REVISION_ANNOTATION] == "1"
    assert util.annotations_of(d)[util.REVISION_ANNOTATION] == "1"
    assert d["status"]["observedGeneration"] == d["metadata"]["generation"] == 2
    # The pods, Ready since ~1 s, are not available for 60 s: the RS controller counts 0
    # available, and the Deployment loses its minimum availability; Progressing stays complete
    # (syncRolloutStatus: replicas == updatedReplicas and the reason is NewReplicaSetAvailable).
    assert after["status"].get("availableReplicas", 0) == 0
    assert d["status"].get("availableReplicas", 0) == 0 and d["status"]["unavailableReplicas"] == 3
    assert (condition(d, "Available")["status"], condition(d, "Available")["reason"]) == (
        "False",
        "MinimumReplicasUnavailable",
    )
    assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"
    from controlplane.kernel import parse_rfc3339

    available_at = parse_rfc3339(ready_since) + 60
    sim.run_until(available_at - 0.5)
    assert deployment_of(sim)["status"].get("availableReplicas", 0) == 0
    sim.run_until(available_at + 2)
    d = deployment_of(sim)
    assert d["status"]["availableReplicas"] == 3 and condition(d, "Available")["status"] == "True"
    assert len(replica_sets(sim)) == 1
    assert events(sim) == [f"Scaled up replica set {rs['metadata']['name']} from 0 to 3"]


# -- D12.3 status.terminatingReplicas (DeploymentReplicaSetTerminatingReplicas) ------------------


@pytest.mark.parametrize("gate", [True, False])
def test_terminating_replicas_are_summed_from_the_replica_sets_behind_the_feature_gate(gate):
    actions = [
        {"at": 30, "patch": {"kind": "Deployment", "name": "web", "patch": image_patch("nginx:1.28")}},
        {"at": 100, "scale": {"kind": "Deployment", "name": "web", "replicas": 4}},
    ]
    sim = world([manifest(10)], actions, until=140, featureGates={"DeploymentReplicaSetTerminatingReplicas": gate})
    sim.run_until(29)
    seen = []

    def watch(s):
        d = deployment_of(s)
        sets = replica_sets(s)
        value = d["status"].get("terminatingReplicas", "absent")
        per_set = [rs["status"].get("terminatingReplicas", "absent") for rs in sets]
        seen.append((s.kernel.now, value, per_set, d["status"].get("observedGeneration")))

    run_watching(sim, 140, step=0.05, watch=watch)
    values = [v for _, v, _, _ in seen]
    if not gate:
        assert set(values) == {"absent"}
        assert {x for _, _, per_set, _ in seen for x in per_set} == {"absent"}
        return
    # On: a pointer, so 0 is written as 0 (omitempty leaves out only nil).
    assert "absent" not in values
    assert values[0] == 0 and values[-1] == 0
    rolling = [v for t, v, _, _ in seen if 30 <= t < 100]
    scaling = [v for t, v, _, _ in seen if t >= 100]
    assert max(rolling) > 0  # old pods terminate as the old RS is scaled down
    assert max(scaling) == 6  # 10 -> 4: six pods terminating at once
    # Each value the Deployment shows is the sum its ReplicaSets showed when it was written:
    # some moment at or before it where the sets' own counts add up to it.
    sums = [sum(x for x in per_set if x != "absent") for _, _, per_set, _ in seen]
    for i, value in enumerate(values):
        assert value in sums[: i + 1]
    d = deployment_of(sim)
    assert d["status"]["terminatingReplicas"] == 0 and d["status"]["replicas"] == 4


# -- D7 / D10 scale to 0 and back -----------------------------------------------------------------


def test_a_scale_to_zero_and_back_keeps_one_replica_set_with_its_annotations():
    actions = [
        {"at": 20, "scale": {"kind": "Deployment", "name": "web", "replicas": 0}},
        {"at": 60, "scale": {"kind": "Deployment", "name": "web", "replicas": 3}},
    ]
    sim = world([manifest(3)], actions, until=90)
    sim.run_until(59)
    (rs,) = replica_sets(sim)
    name = rs["metadata"]["name"]
    annotations = util.annotations_of(rs)
    # max-replicas = 0 + MaxSurge, and ResolveFenceposts gives 0 surge at 0 replicas (25% of 0
    # rounds to 0 both ways, so maxUnavailable becomes 1 and maxSurge stays 0).
    assert (rs["spec"]["replicas"], annotations[util.DESIRED_REPLICAS_ANNOTATION]) == (0, "0")
    assert annotations[util.MAX_REPLICAS_ANNOTATION] == "0"
    assert [p for p in sim.server.objects("pods")] == []
    d = deployment_of(sim)
    # Every count is 0 and left out (omitempty); terminatingReplicas is a pointer and stays.
    assert {k: v for k, v in d["status"].items() if k != "conditions"} == {
        "observedGeneration": 2,
        "terminatingReplicas": 0,
    }
    # MaxUnavailable is 0 for 0 replicas, and 0 available >= 0: still Available.
    assert (condition(d, "Available")["status"], condition(d, "Available")["reason"]) == (
        "True",
        "MinimumReplicasAvailable",
    )
    assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"
    assert util.annotations_of(d)[util.REVISION_ANNOTATION] == "1"
    sim.run_until(90)
    (back,) = replica_sets(sim)
    annotations = util.annotations_of(back)
    assert back["metadata"]["name"] == name and back["spec"]["replicas"] == 3
    assert (annotations[util.DESIRED_REPLICAS_ANNOTATION], annotations[util.MAX_REPLICAS_ANNOTATION]) == ("3", "4")
    assert annotations[util.REVISION_ANNOTATION] == "1"
    # The second "from 0 to 3" is the first Event again, its count 2 (the correlator).
    scaling = [(e["message"], e["count"]) for e in sim.server.objects("events") if e["reason"] == "ScalingReplicaSet"]
    assert scaling == [
        (f"Scaled up replica set {name} from 0 to 3", 2),
        (f"Scaled down replica set {name} from 3 to 0", 1),
    ]
    d = deployment_of(sim)
    assert (d["status"]["availableReplicas"], d["status"]["observedGeneration"]) == (3, 3)

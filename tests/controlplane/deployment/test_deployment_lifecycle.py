"""The Deployment controller's less travelled paths in a simulated cluster, each against what
upstream v1.36 does (spec sections in the test names' comments): the legacy rollback of
syncDeployment (§13), ReplicaFailure carried from a ReplicaSet to its Deployment (D12.6), the
workqueue's drop after `maxRetries` (D3.3), a minReadySeconds-only change (D6.6, D12.10),
`status.terminatingReplicas` behind its feature gate (D12.3), and a scale to 0 and back (D7, D10)."""

from __future__ import annotations

import pytest

from controlplane.deployment import util

from .test_deployment_controller import deployment_of, image_patch, manifest, replica_sets, world

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

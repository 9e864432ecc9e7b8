"""Ports of pkg/controller/deployment/util/deployment_util_test.go (the table-driven logic tests)
to controlplane.deployment.util. Each test names the upstream test it ports; where a case's
numbers were not recalled verbatim from upstream they are the rule's (spec D-rule named)."""

from __future__ import annotations

import pytest

from controlplane.deployment import util
from controlplane.kernel import rfc3339


def deployment(replicas=10, max_surge="25%", max_unavailable="25%", kind="RollingUpdate", **spec):
    strategy = {"type": kind}
    if kind == "RollingUpdate":
        strategy["rollingUpdate"] = {"maxSurge": max_surge, "maxUnavailable": max_unavailable}
    return {
        "metadata": {"name": "foo", "namespace": "default", "uid": "d-uid", "generation": 1},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "foo"}},
            "template": {"metadata": {"labels": {"app": "foo"}}, "spec": {"containers": [{"name": "c", "image": "a"}]}},
            "strategy": strategy,
            **spec,
        },
        "status": {},
    }


def replica_set(name, replicas, available=0, created=0, annotations=None, template=None, uid=None):
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": uid or f"{name}-uid",
            "creationTimestamp": rfc3339(created),
            "annotations": dict(annotations or {}),
        },
        "spec": {"replicas": replicas, "template": template or {"metadata": {"labels": {"app": "foo"}}}},
        "status": {"replicas": replicas, "availableReplicas": available},
    }


# TestResolveFenceposts
@pytest.mark.parametrize(
    ("max_surge", "max_unavailable", "desired", "surge", "unavailable", "error"),
    [
        ("0", "0", 0, 0, 1, True),
        ("39%", "39%", 10, 4, 3, False),
        ("oops", "39%", 10, 0, 0, True),
        ("55%", "urg", 10, 0, 0, True),
        (None, "39%", 10, 0, 3, False),
        ("39%", None, 10, 4, 0, False),
        (None, None, 10, 0, 1, False),
        # D7.2's examples at the apps/v1 defaults.
        ("25%", "25%", 10, 3, 2, False),
        ("25%", "25%", 1, 1, 0, False),
        ("25%", "25%", 3, 1, 0, False),
        ("25%", "25%", 4, 1, 1, False),
        (0, "1%", 10, 0, 1, False),
    ],
)
def test_resolve_fenceposts(max_surge, max_unavailable, desired, surge, unavailable, error):
    if error:
        with pytest.raises(ValueError):
            util.resolve_fenceposts(max_surge, max_unavailable, desired)
    else:
        assert util.resolve_fenceposts(max_surge, max_unavailable, desired) == (surge, unavailable)


# TestMaxUnavailable
@pytest.mark.parametrize(
    ("replicas", "max_unavailable", "kind", "expected"),
    [
        (10, 0, "RollingUpdate", 0),  # maxSurge 1 below
        (10, 5, "RollingUpdate", 5),
        (10, "50%", "RollingUpdate", 5),
        (5, 10, "RollingUpdate", 5),  # capped at replicas
        (0, 10, "RollingUpdate", 0),
        (10, 0, "Recreate", 0),
    ],
)
def test_max_unavailable(replicas, max_unavailable, kind, expected):
    d = deployment(replicas, max_surge=1, max_unavailable=max_unavailable, kind=kind)
    assert util.max_unavailable(d) == expected


# TestNewRSNewReplicas
@pytest.mark.parametrize(
    ("kind", "dep_replicas", "new_replicas", "max_surge", "old_replicas", "expected"),
    [
        ("RollingUpdate", 1, 5, 1, 0, 5),  # can not scale up: already past replicas + surge
        ("RollingUpdate", 6, 2, 1, 0, 6),  # scale up to depReplicas
        ("RollingUpdate", 10, 0, 3, 10, 3),  # D18.2: the surge
        ("RollingUpdate", 10, 0, 3, 8, 5),
        ("Recreate", 3, 1, None, 0, 3),  # recreate: to depReplicas
    ],
)
def test_new_rs_new_replicas(kind, dep_replicas, new_replicas, max_surge, old_replicas, expected):
    d = deployment(dep_replicas, max_surge=max_surge, max_unavailable=0, kind=kind)
    new_rs = replica_set("new", new_replicas)
    old = replica_set("old", old_replicas)
    assert util.new_rs_new_replicas(d, [old, new_rs], new_rs) == expected


# TestGetReplicaSetProportion / TestGetReplicaSetFraction
@pytest.mark.parametrize(
    ("rs_replicas", "max_annotation", "dep_replicas", "surge", "to_add", "added", "expected"),
    [
        (0, "13", 20, 5, 12, 0, 0),  # an RS at 0 gets nothing
        (8, "13", 10, 3, 0, 0, 0),  # nothing to add
        (8, "13", 20, 5, 12, 12, 0),  # everything already added
        (8, "13", 20, 5, 12, 0, 7),  # D18.8: round(8 * 25 / 13) - 8 = 7
        (5, "13", 20, 5, 12, 7, 5),  # round(5 * 25 / 13) - 5 = 5, capped by the remaining 5
        (10, "13", 5, 2, -6, 0, -5),  # round(10 * 7 / 13) - 10 = -5
        (10, "13", 5, 2, -6, -4, -2),  # max(fraction, allowed): allowed is -2
        (4, "13", 0, 0, -4, 0, -4),  # scaling to 0: the RS's whole size
    ],
)
def test_get_replica_set_proportion(rs_replicas, max_annotation, dep_replicas, surge, to_add, added, expected):
    d = deployment(dep_replicas, max_surge=surge, max_unavailable=1)
    rs = replica_set("rs", rs_replicas, annotations={util.MAX_REPLICAS_ANNOTATION: max_annotation})
    assert util.get_replica_set_proportion(rs, d, to_add, added) == expected


def test_get_replica_set_fraction_falls_back_to_the_deployments_status_replicas():
    d = deployment(20, max_surge=5, max_unavailable=1)
    rs = replica_set("rs", 8)
    assert util.get_replica_set_fraction(rs, d) == 0  # no annotation, status.replicas 0
    d["status"]["replicas"] = 13
    assert util.get_replica_set_fraction(rs, d) == 7


def test_go_round_rounds_halves_away_from_zero():
    assert [util.go_round(x) for x in (0.5, 1.5, 2.5, 2.4999)] == [1, 2, 3, 2]


# TestFindNewReplicaSet / TestFindOldReplicaSets
def test_find_new_replica_set_is_the_oldest_with_the_template_ignoring_the_hash():
    d = deployment()
    template = d["spec"]["template"]
    hashed = {**template, "metadata": {"labels": {"app": "foo", util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: "x"}}}
    newer = replica_set("newer", 1, created=10, template=hashed)
    older = replica_set("older", 1, created=5, template=hashed)
    other = replica_set("other", 1, created=1, template={"metadata": {"labels": {"app": "bar"}}})
    assert util.find_new_replica_set(d, [newer, other, older])["metadata"]["name"] == "older"
    required, all_old = util.find_old_replica_sets(d, [newer, other, older])
    assert [rs["metadata"]["name"] for rs in all_old] == ["other", "newer"]
    assert [rs["metadata"]["name"] for rs in required] == ["other", "newer"]
    other["spec"]["replicas"] = 0
    required, _ = util.find_old_replica_sets(d, [newer, other, older])
    assert [rs["metadata"]["name"] for rs in required] == ["newer"]
    assert util.find_new_replica_set(d, [other]) is None


def test_equal_ignore_hash():
    a = {"metadata": {"labels": {"app": "x", "pod-template-hash": "1"}}, "spec": {"containers": []}}
    b = {"metadata": {"labels": {"app": "x", "pod-template-hash": "2"}}, "spec": {"containers": []}}
    c = {"metadata": {"labels": {"app": "y"}}, "spec": {"containers": []}}
    assert util.equal_ignore_hash(a, b) and not util.equal_ignore_hash(a, c)


def test_equal_ignore_hash_takes_a_null_for_an_absent_field():
    # `kubectl rollout undo` sends the ReplicaSet's template with `creationTimestamp: null`: Go
    # decodes both into the zero Time, so the old ReplicaSet is still the template's.
    stored = {"metadata": {"labels": {"app": "x", "pod-template-hash": "1"}}, "spec": {"containers": [{"name": "c"}]}}
    undone = {"metadata": {"creationTimestamp": None, "labels": {"app": "x"}}, "spec": {"containers": [{"name": "c"}]}}
    assert util.equal_ignore_hash(stored, undone)
    assert not util.equal_ignore_hash(stored, {**undone, "spec": {"containers": [{"name": "d"}]}})


# TestMaxRevision / LastRevision
def test_max_and_last_revision_skip_unparsable_ones():
    rss = [
        replica_set(str(i), 1, annotations={util.REVISION_ANNOTATION: r}) for i, r in enumerate(["3", "x", "7", "5"])
    ]
    assert util.max_revision(rss) == 7
    assert util.last_revision(rss) == 5


# TestAnnotationUtils (SetNewReplicaSetAnnotations)
def test_set_new_replica_set_annotations_bumps_the_revision_and_keeps_its_history():
    d = deployment(replicas=10)
    d["metadata"]["annotations"] = {"team": "a", util.LAST_APPLIED_CONFIG_ANNOTATION: "{}"}
    rs = replica_set("rs", 1, annotations={util.REVISION_ANNOTATION: "1"})
    assert util.set_new_replica_set_annotations(d, rs, "3", True, 2000)
    annotations = rs["metadata"]["annotations"]
    assert annotations[util.REVISION_ANNOTATION] == "3"
    assert annotations[util.REVISION_HISTORY_ANNOTATION] == "1"
    assert annotations["team"] == "a" and util.LAST_APPLIED_CONFIG_ANNOTATION not in annotations
    assert util.DESIRED_REPLICAS_ANNOTATION not in annotations  # only a brand-new RS gets them
    assert util.set_new_replica_set_annotations(d, rs, "5", True, 2000)
    assert rs["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "1,3"
    assert not util.set_new_replica_set_annotations(d, rs, "4", True, 2000)  # never decreases
    fresh = replica_set("fresh", 0)
    util.set_new_replica_set_annotations(d, fresh, "1", False, 2000)
    assert fresh["metadata"]["annotations"][util.DESIRED_REPLICAS_ANNOTATION] == "10"
    assert fresh["metadata"]["annotations"][util.MAX_REPLICAS_ANNOTATION] == "13"


def test_revision_history_drops_the_oldest_entries_beyond_the_limit():
    d = deployment()
    rs = replica_set("rs", 1, annotations={util.REVISION_ANNOTATION: "9", util.REVISION_HISTORY_ANNOTATION: "1,2,3"})
    util.set_new_replica_set_annotations(d, rs, "10", True, 6)
    # 1,2,3 + ",9" is 7 characters > 6: the oldest entry goes ("2,3,9" is 5).
    assert rs["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "2,3,9"


# TestIsSaturated
@pytest.mark.parametrize(
    ("rs_replicas", "desired", "available", "expected"),
    [(10, "10", 10, True), (10, "10", 9, False), (10, "9", 10, False), (9, "10", 10, False), (10, None, 10, False)],
)
def test_is_saturated(rs_replicas, desired, available, expected):
    d = deployment(10)
    annotations = {} if desired is None else {util.DESIRED_REPLICAS_ANNOTATION: desired}
    rs = replica_set("rs", rs_replicas, available=available, annotations=annotations)
    assert util.is_saturated(d, rs) is expected


# TestDeploymentComplete
@pytest.mark.parametrize(
    ("updated", "replicas", "available", "observed", "expected"),
    [(5, 5, 5, 1, True), (5, 6, 5, 1, False), (5, 5, 4, 1, False), (4, 5, 5, 1, False), (5, 5, 5, 0, False)],
)
def test_deployment_complete(updated, replicas, available, observed, expected):
    d = deployment(5)
    status = {"updatedReplicas": updated, "replicas": replicas, "availableReplicas": available}
    status["observedGeneration"] = observed
    assert util.deployment_complete(d, status) is expected


# TestDeploymentProgressing
@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({"updatedReplicas": 1}, {"updatedReplicas": 2}, True),
        ({"replicas": 10, "updatedReplicas": 2}, {"replicas": 9, "updatedReplicas": 2}, True),
        ({"readyReplicas": 1}, {"readyReplicas": 2}, True),
        ({"availableReplicas": 1}, {"availableReplicas": 2}, True),
        (
            {"replicas": 5, "updatedReplicas": 2, "availableReplicas": 3},
            {"replicas": 5, "updatedReplicas": 2, "availableReplicas": 3},
            False,
        ),
    ],
)
def test_deployment_progressing(old, new, expected):
    d = deployment()
    d["status"] = old
    assert util.deployment_progressing(d, new) is expected


# TestDeploymentTimedOut
@pytest.mark.parametrize(
    ("deadline", "reason", "updated_at", "now", "expected"),
    [
        (None, util.REPLICA_SET_UPDATED_REASON, 0, 100, False),
        (10, util.REPLICA_SET_UPDATED_REASON, 0, 10, False),  # strictly after
        (10, util.REPLICA_SET_UPDATED_REASON, 0, 11, True),
        (10, util.NEW_RS_AVAILABLE_REASON, 0, 100, False),  # #49637
        (10, util.TIMED_OUT_REASON, 0, 1, True),
    ],
)
def test_deployment_timed_out(deadline, reason, updated_at, now, expected):
    d = deployment(progressDeadlineSeconds=deadline)
    if deadline is None:
        del d["spec"]["progressDeadlineSeconds"]
    status = {
        "conditions": [util.new_deployment_condition(util.DEPLOYMENT_PROGRESSING, "True", reason, "", updated_at)]
    }
    assert util.deployment_timed_out(d, status, now) is expected


# TestSetCondition / TestRemoveCondition
def test_set_deployment_condition_keeps_times_for_the_same_status_and_reason():
    status: dict = {}
    first = util.new_deployment_condition("Progressing", "True", "A", "one", 1)
    util.set_deployment_condition(status, first)
    util.set_deployment_condition(status, util.new_deployment_condition("Progressing", "True", "A", "two", 5))
    assert status["conditions"] == [first]  # same status and reason: nothing changes
    util.set_deployment_condition(status, util.new_deployment_condition("Progressing", "True", "B", "three", 9))
    (cond,) = status["conditions"]
    assert (cond["reason"], cond["lastTransitionTime"], cond["lastUpdateTime"]) == ("B", rfc3339(1), rfc3339(9))
    util.set_deployment_condition(status, util.new_deployment_condition("Available", "True", "M", "", 9))
    assert [c["type"] for c in status["conditions"]] == ["Progressing", "Available"]
    util.remove_deployment_condition(status, "Progressing")
    assert [c["type"] for c in status["conditions"]] == ["Available"]


# TestGetTerminatingReplicaCountForReplicaSets (D12.3)
def test_terminating_count_skips_unsynced_sets_and_is_unknown_if_one_synced_set_lacks_it():
    a = {"status": {"terminatingReplicas": 2, "observedGeneration": 1}}
    b = {"status": {"terminatingReplicas": 1, "observedGeneration": 2}}
    never_synced = {"status": {}}
    lacking = {"status": {"observedGeneration": 3}}
    assert util.get_terminating_replica_count_for_replica_sets([a, b, never_synced, None]) == 3
    assert util.get_terminating_replica_count_for_replica_sets([a, lacking]) is None


def test_compute_hash_is_stable_template_sensitive_and_changes_with_the_collision_count():
    d = deployment()
    template = d["spec"]["template"]
    h = util.compute_hash(template, None)
    assert h == util.compute_hash(template, None)
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(h) <= 10
    assert util.compute_hash(template, 1) != h
    other = {**template, "spec": {"containers": [{"name": "c", "image": "b"}]}}
    assert util.compute_hash(other, None) != h

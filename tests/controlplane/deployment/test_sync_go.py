"""Ports of upstream's `pkg/controller/deployment/sync_test.go` (spec D10.3-D10.5, D11): `TestScale`
(every row, by its name), `TestDeploymentController_cleanupDeployment` (every row, by its index)
and `TestDeploymentController_cleanupDeploymentOrder` (every row, by its comment). Each drives our
controller's own `scale` and `cleanup_deployment` on objects built as upstream's `rs`,
`newRSWithStatus` and `newDeployment` fixtures build them, against the recording fake client of
`test_rolling_go.py` (upstream's `fake.Clientset{}`, deletes recorded as actions too)."""

from __future__ import annotations

import pytest

from controlplane.deployment import util
from tests.controlplane.deployment.test_rolling_go import Controller

NEW_TS = "2016-05-20T02:00:00Z"  # newTimestamp
OLD_TS = "2016-05-20T01:00:00Z"  # oldTimestamp
OLDER_TS = "2016-05-20T00:00:00Z"  # olderTimestamp
INT32_MAX = 2**31 - 1


def rs(name, replicas, selector=None, timestamp=None):
    """`rs(name, replicas, selector, timestamp)` (deployment_controller_test.go)."""
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "1"}
    if timestamp is not None:
        meta["creationTimestamp"] = timestamp
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {"replicas": replicas, "selector": {"matchLabels": dict(selector or {})}, "template": {}},
        "status": {},
    }


def new_deployment(name, replicas, revision_history_limit=None, max_surge=None, max_unavailable=None, selector=None):
    """`newDeployment(name, replicas, revisionHistoryLimit, maxSurge, maxUnavailable, selector)`:
    RollingUpdate with maxSurge and maxUnavailable 0 unless given."""
    spec = {
        "replicas": replicas,
        "selector": {"matchLabels": dict(selector or {})},
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {
                "maxSurge": 0 if max_surge is None else max_surge,
                "maxUnavailable": 0 if max_unavailable is None else max_unavailable,
            },
        },
        "template": {
            "metadata": {"labels": dict(selector or {})},
            "spec": {"containers": [{"name": "c", "image": "foo/bar"}]},
        },
    }
    if revision_history_limit is not None:
        spec["revisionHistoryLimit"] = revision_history_limit
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "annotations": {}},
        "spec": spec,
        "status": {},
    }


def updated_template(replicas):
    d = new_deployment("foo", replicas, selector={"foo": "bar"})
    d["spec"]["template"]["metadata"]["labels"]["another"] = "label"
    return d


def broken_new_rs():
    new = rs("foo-v2", 2, None, NEW_TS)
    new["status"]["availableReplicas"] = 0
    return new


# (name, deployment, oldDeployment, newRS, oldRSs, expectedNew, expectedOld, wasntUpdated,
#  desiredReplicasAnnotations); expected sizes as numbers (upstream compares only Spec.Replicas).
SCALE_ROWS = [
    ("normal scaling event: 10 -> 12", new_deployment("foo", 12), new_deployment("foo", 10),
     rs("foo-v1", 10, None, NEW_TS), [], 12, [], set(), {}),
    ("normal scaling event: 10 -> 5", new_deployment("foo", 5), new_deployment("foo", 10),
     rs("foo-v1", 10, None, NEW_TS), [], 5, [], set(), {}),
    ("proportional scaling: 5 -> 10", new_deployment("foo", 10), new_deployment("foo", 5),
     rs("foo-v2", 2, None, NEW_TS), [rs("foo-v1", 3, None, OLD_TS)], 4, [6], set(), {}),
    ("proportional scaling: 5 -> 3", new_deployment("foo", 3), new_deployment("foo", 5),
     rs("foo-v2", 2, None, NEW_TS), [rs("foo-v1", 3, None, OLD_TS)], 1, [2], set(), {}),
    ("proportional scaling: 9 -> 4", new_deployment("foo", 4), new_deployment("foo", 9),
     rs("foo-v2", 8, None, NEW_TS), [rs("foo-v1", 1, None, OLD_TS)], 4, [0], set(), {}),
    ("proportional scaling: 7 -> 10", new_deployment("foo", 10), new_deployment("foo", 7),
     rs("foo-v3", 2, None, NEW_TS), [rs("foo-v2", 3, None, OLD_TS), rs("foo-v1", 2, None, OLDER_TS)],
     3, [4, 3], set(), {}),
    ("proportional scaling: 13 -> 8", new_deployment("foo", 8), new_deployment("foo", 13),
     rs("foo-v3", 2, None, NEW_TS), [rs("foo-v2", 8, None, OLD_TS), rs("foo-v1", 3, None, OLDER_TS)],
     1, [5, 2], set(), {}),
    # Scales up the new replica set.
    ("leftover distribution: 3 -> 4", new_deployment("foo", 4), new_deployment("foo", 3),
     rs("foo-v3", 1, None, NEW_TS), [rs("foo-v2", 1, None, OLD_TS), rs("foo-v1", 1, None, OLDER_TS)],
     2, [1, 1], set(), {}),
    # Scales down the older replica set.
    ("leftover distribution: 3 -> 2", new_deployment("foo", 2), new_deployment("foo", 3),
     rs("foo-v3", 1, None, NEW_TS), [rs("foo-v2", 1, None, OLD_TS), rs("foo-v1", 1, None, OLDER_TS)],
     1, [1, 0], set(), {}),
    # Scales up the latest replica set first.
    ("proportional scaling (no new rs): 4 -> 5", new_deployment("foo", 5), new_deployment("foo", 4),
     None, [rs("foo-v2", 2, None, OLD_TS), rs("foo-v1", 2, None, OLDER_TS)], None, [3, 2], set(), {}),
    # Scales down to zero
    ("proportional scaling: 6 -> 0", new_deployment("foo", 0), new_deployment("foo", 6),
     rs("foo-v3", 3, None, NEW_TS), [rs("foo-v2", 2, None, OLD_TS), rs("foo-v1", 1, None, OLDER_TS)],
     0, [0, 0], set(), {}),
    # Scales up from zero
    ("proportional scaling: 0 -> 6", new_deployment("foo", 6), new_deployment("foo", 6),
     rs("foo-v3", 0, None, NEW_TS), [rs("foo-v2", 0, None, OLD_TS), rs("foo-v1", 0, None, OLDER_TS)],
     6, [0, 0], {"foo-v2", "foo-v1"}, {}),
    # deployment.spec.replicas == 3 (each RS at 1), scaled to 5; foo-v3 and foo-v2 should grow by
    # 1 but foo-v2 fails to update.
    ("failed rs update", new_deployment("foo", 5), new_deployment("foo", 5),
     rs("foo-v3", 2, None, NEW_TS), [rs("foo-v2", 1, None, OLD_TS), rs("foo-v1", 1, None, OLDER_TS)],
     2, [2, 1], {"foo-v3", "foo-v1"}, {"foo-v2": 3}),
    ("deployment with surge pods", new_deployment("foo", 20, max_surge=2), new_deployment("foo", 10, max_surge=2),
     rs("foo-v2", 6, None, NEW_TS), [rs("foo-v1", 6, None, OLD_TS)], 11, [11], set(), {}),
    ("change both surge and size", new_deployment("foo", 50, max_surge=6), new_deployment("foo", 10, max_surge=3),
     rs("foo-v2", 5, None, NEW_TS), [rs("foo-v1", 8, None, OLD_TS)], 22, [34], set(), {}),
    ("change both size and template", updated_template(14), new_deployment("foo", 10, selector={"foo": "bar"}),
     None, [rs("foo-v2", 7, None, NEW_TS), rs("foo-v1", 3, None, OLD_TS)], None, [10, 4], set(), {}),
    ("saturated but broken new replica set does not affect old pods",
     new_deployment("foo", 2, max_surge=1, max_unavailable=1),
     new_deployment("foo", 2, max_surge=1, max_unavailable=1),
     broken_new_rs(), [rs("foo-v1", 1, None, OLD_TS)], 2, [1], set(), {}),
]  # fmt: skip


@pytest.mark.parametrize(
    (
        "deployment",
        "old_deployment",
        "new_rs",
        "old_rss",
        "expected_new",
        "expected_old",
        "wasnt_updated",
        "desired_replicas_annotations",
    ),
    [pytest.param(*row[1:], id=row[0]) for row in SCALE_ROWS],
)
def test_scale(
    deployment, old_deployment, new_rs, old_rss, expected_new, expected_old, wasnt_updated, desired_replicas_annotations
):
    """`TestScale`: every RS carries the replica annotations of the old Deployment (or the row's
    own desired-replicas); after `scale`, the size each RS ends with (its last update unless
    the row says it was not updated) is the expected one."""
    for each in [new_rs, *old_rss]:
        if each is None:
            continue
        desired = desired_replicas_annotations.get(each["metadata"]["name"], util.replicas(old_deployment))
        util.set_replicas_annotations(each, desired, desired + util.max_surge(old_deployment))
    c = Controller()
    err = c.call("scale", deployment, new_rs, old_rss)
    assert err is None
    name_to_size = {each["metadata"]["name"]: util.replicas(each) for each in [new_rs, *old_rss] if each is not None}
    assert all(verb == "update" and res == "replicasets" for verb, res, _ in c.fake.actions())
    for updated in c.fake.updates():
        if updated["metadata"]["name"] not in wasnt_updated:
            name_to_size[updated["metadata"]["name"]] = updated["spec"]["replicas"]
    if expected_new is not None and new_rs is not None:
        assert name_to_size[new_rs["metadata"]["name"]] == expected_new
    assert len(expected_old) == len(old_rss)
    assert [name_to_size[each["metadata"]["name"]] for each in old_rss] == expected_old


def new_rs_with_status(name, spec_replicas, status_replicas, selector):
    """`newRSWithStatus(name, specReplicas, statusReplicas, selector)`."""
    each = rs(name, spec_replicas, selector)
    each["metadata"]["labels"] = dict(selector)
    each["status"] = {"replicas": status_replicas}
    return each


def already_deleted():
    each = new_rs_with_status("foo-1", 0, 0, {"foo": "bar"})
    each["metadata"]["deletionTimestamp"] = "2016-05-20T03:00:00Z"
    return each


SEL = {"foo": "bar"}


@pytest.mark.parametrize(
    ("old_rss", "revision_history_limit", "expected_deletions"),
    [
        pytest.param([new_rs_with_status(f"foo-{i}", 0, 0, SEL) for i in (1, 2, 3)], 1, 2, id="0"),
        # Only delete the replica set with Spec.Replicas = Status.Replicas = 0.
        pytest.param(
            [
                new_rs_with_status("foo-1", 0, 0, SEL),
                new_rs_with_status("foo-2", 0, 1, SEL),
                new_rs_with_status("foo-3", 1, 0, SEL),
                new_rs_with_status("foo-4", 1, 1, SEL),
            ],
            0,
            1,
            id="1",
        ),
        pytest.param([new_rs_with_status(f"foo-{i}", 0, 0, SEL) for i in (1, 2)], 0, 2, id="2"),
        pytest.param([new_rs_with_status(f"foo-{i}", 1, 1, SEL) for i in (1, 2)], 0, 0, id="3"),
        pytest.param([already_deleted()], 0, 0, id="4"),
        # with unlimited revisionHistoryLimit
        pytest.param([new_rs_with_status(f"foo-{i}", 0, 0, SEL) for i in (1, 2, 3)], INT32_MAX, 0, id="5"),
    ],
)
def test_deployment_controller_cleanup_deployment(old_rss, revision_history_limit, expected_deletions):
    """`TestDeploymentController_cleanupDeployment`: how many old RSs `cleanupDeployment` deletes."""
    c = Controller()
    d = new_deployment("foo", 1, revision_history_limit, selector=SEL)
    assert c.call("cleanup_deployment", old_rss, d) is None
    assert len(c.fake.deleted()) == expected_deletions
    assert all(verb == "delete" for verb, _, _ in c.fake.actions())


NOW = "2016-05-20T01:00:00Z"  # now; duration is a minute
BEFORE, AFTER, AFTER2 = "2016-05-20T00:59:00Z", "2016-05-20T01:01:00Z", "2016-05-20T01:02:00Z"


def rs_rev(name, replicas, timestamp, revision):
    """`newRSWithRevisionAndCreationTimestamp(name, replicas, selector, timestamp, revision)`."""
    each = rs(name, replicas, SEL, timestamp)
    if revision:
        each["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": revision}
    each["status"] = {"replicas": replicas}
    return each


@pytest.mark.parametrize(
    ("old_rss", "revision_history_limit", "expected_deleted"),
    [
        pytest.param(
            [rs_rev("foo-1", 0, BEFORE, "1"), rs_rev("foo-2", 0, NOW, "2")],
            1,
            {"foo-1"},
            id="revision order: rs1 < rs2, delete rs1",
        ),
        pytest.param(
            [rs_rev("foo-1", 0, BEFORE, "2"), rs_rev("foo-2", 0, NOW, "1")],
            1,
            {"foo-2"},
            id="revision order: rs2 < rs1, delete rs2",
        ),
        pytest.param(
            [rs_rev("foo-1", 0, BEFORE, "1"), rs_rev("foo-2", 0, NOW, "")],
            1,
            {"foo-2"},
            id="rs1 has revision but rs2 doesn't have revision, delete rs2",
        ),
        pytest.param(
            [rs_rev("foo-1", 0, BEFORE, ""), rs_rev("foo-2", 0, NOW, "2")],
            1,
            {"foo-1"},
            id="rs1 doesn't have revision while rs2 has revision, delete rs1",
        ),
        pytest.param(
            [rs_rev("foo-1", 1, BEFORE, "1"), rs_rev("foo-2", 0, NOW, "2"), rs_rev("foo-3", 0, AFTER, "3")],
            1,
            {"foo-2"},
            id="revision order: rs1 < rs2 < r3, but rs1 has replicas, delete rs2",
        ),
        pytest.param(
            [rs_rev("foo-1", 1, BEFORE, "1"), rs_rev("foo-2", 1, NOW, "2"), rs_rev("foo-3", 0, AFTER, "3")],
            1,
            set(),
            id="revision order: rs1 < rs2 < r3, both rs1 && rs2 have replicas, don't delete",
        ),
        pytest.param(
            [
                rs_rev("foo-1", 0, BEFORE, "3"),
                rs_rev("foo-2", 0, NOW, "1"),
                rs_rev("foo-3", 0, AFTER, "4"),
                rs_rev("foo-4", 0, AFTER2, "2"),
            ],
            2,
            {"foo-2", "foo-4"},
            id="revision order: rs2 < rs4 < rs1 < rs3, delete rs2 && rs4",
        ),
    ],
)
def test_deployment_controller_cleanup_deployment_order(old_rss, revision_history_limit, expected_deleted):
    """`TestDeploymentController_cleanupDeploymentOrder`: which old RSs are deleted (by revision,
    creation time when a revision is missing)."""
    c = Controller()
    d = new_deployment("foo", 1, revision_history_limit, selector=SEL)
    assert c.call("cleanup_deployment", old_rss, d) is None
    assert set(c.fake.deleted()) == expected_deleted

"""Ports of upstream's `pkg/controller/deployment/recreate_test.go` (spec D9.1):
`TestScaleDownOldReplicaSets` (its one row) and `TestOldPodsRunning` (every row by its name), on
our `scale_down_old_replica_sets_for_recreate` and `old_pods_running`, with upstream's
`newReplicaSet`, `rsWithUID`, `newRSWithStatus` and `podMapWithUIDs` fixtures."""

from __future__ import annotations

import pytest

from controlplane.deployment.recreate import old_pods_running
from tests.controlplane.deployment.test_rolling_go import Controller
from tests.controlplane.deployment.test_sync_go import new_deployment, new_rs_with_status


def new_replica_set(d, name, replicas):
    """`newReplicaSet(d, name, replicas)`: labels, selector and template of `d`, controlled by it."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": dict(d["spec"]["selector"]["matchLabels"]),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": d["metadata"]["name"],
                    "uid": d["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"replicas": replicas, "selector": d["spec"]["selector"], "template": d["spec"]["template"]},
        "status": {},
    }


@pytest.mark.parametrize(
    ("old_rs_sizes", "d"),
    [pytest.param([3], new_deployment("foo", 3, selector={"foo": "bar"}), id="0")],
)
def test_scale_down_old_replica_sets(old_rs_sizes, d):
    """`TestScaleDownOldReplicaSets`: after the call every old RS in the list has 0 replicas (and,
    here, one update of each to 0 was sent)."""
    old_rss = [new_replica_set(d, f"{d['metadata']['name']}-{n}", size) for n, size in enumerate(old_rs_sizes)]
    assert all(size != 0 for size in old_rs_sizes)  # "broken test - original and expected RS have the same size"
    c = Controller()
    scaled, err = c.call("scale_down_old_replica_sets_for_recreate", old_rss, d)
    assert err is None and scaled
    for each in old_rss:
        assert each["spec"]["replicas"] == 0, f"rs {each['metadata']['name']!r} has non-zero replicas"
    assert [u["spec"]["replicas"] for u in c.fake.updates()] == [0] * len(old_rs_sizes)


def rs_with_uid(uid):
    """`rsWithUID(uid)`."""
    d = new_deployment("foo", 1, selector={"foo": "bar"})
    each = new_replica_set(d, f"foo-{uid}", 0)
    each["metadata"]["uid"] = uid
    return each


def pod_map_with_uids(uids):
    """`podMapWithUIDs(uids)`: two (phase-less) pods per UID."""
    return {uid: [{}, {}] for uid in uids}


def pod(phase):
    return {"status": {"phase": phase}}


@pytest.mark.parametrize(
    ("new_rs", "old_rss", "pod_map", "has_old_pods_running"),
    [
        pytest.param(None, [], {}, False, id="no old RSs"),
        pytest.param(None, [rs_with_uid("some-uid"), rs_with_uid("other-uid")],
                     pod_map_with_uids(["some-uid", "other-uid"]), True, id="old RSs with running pods"),
        pytest.param(None, [new_rs_with_status("rs-1", 0, 1, {})], {}, True,
                     id="old RSs without pods but with non-zero status replicas"),
        pytest.param(None, [new_rs_with_status("rs-1", 0, 0, {})], {}, False,
                     id="old RSs without pods or non-zero status replicas"),
        pytest.param(None, [new_rs_with_status("rs-1", 0, 0, {})], {"uid-1": [pod("Failed"), pod("Succeeded")]},
                     False, id="old RSs with zero status replicas but pods in terminal state are present"),
        pytest.param(None, [new_rs_with_status("rs-1", 0, 0, {})], {"uid-1": [pod("Unknown")]}, True,
                     id="old RSs with zero status replicas but pod in unknown phase present"),
        pytest.param(None, [new_rs_with_status("rs-1", 0, 0, {})], {"uid-1": [pod("Pending")]}, True,
                     id="old RSs with zero status replicas with pending pod present"),
        pytest.param(None, [new_rs_with_status("rs-1", 0, 0, {})], {"uid-1": [pod("Running")]}, True,
                     id="old RSs with zero status replicas with running pod present"),
        pytest.param(None, [new_rs_with_status("rs-1", 0, 0, {})],
                     {"uid-1": [pod("Failed"), pod("Succeeded")], "uid-2": [], "uid-3": [pod("Pending")]}, True,
                     id="old RSs with zero status replicas but pods in terminal state and pending are present"),
    ],
)  # fmt: skip
def test_old_pods_running(new_rs, old_rss, pod_map, has_old_pods_running):
    """`TestOldPodsRunning`."""
    assert old_pods_running(new_rs, old_rss, pod_map) is has_old_pods_running

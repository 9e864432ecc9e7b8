"""Ports of upstream's `pkg/controller/deployment/deployment_controller_test.go` (spec D2, D4, D5):
the table-free tests that map onto our controller, each by its name. Upstream's `fixture` is our
controller with its informers' caches filled directly (`dLister`, `rsLister`, `podLister`; the
informers never started) and the recording fake client of `test_rolling_go.py` preloaded with
`objects` for its GETs; `syncDeployment` runs to its end and the client's actions are compared,
verb, resource and subresource, with the expected ones."""

from __future__ import annotations

import copy

from tests.controlplane.deployment.test_recreate_go import new_replica_set
from tests.controlplane.deployment.test_rolling_go import Controller
from tests.controlplane.deployment.test_sync_go import new_deployment

SEL = {"foo": "bar"}


class Fixture:
    """`newFixture` + `newController`: the listers' objects go into the informers' caches, the
    `objects` into the fake client."""

    def __init__(self, d_lister=(), rs_lister=(), pod_lister=(), objects=()) -> None:
        self.c = Controller()
        self.dc = self.c.dc
        for informer, items in (
            (self.dc.d_informer, d_lister),
            (self.dc.rs_informer, rs_lister),
            (self.dc.pod_informer, pod_lister),
        ):
            for item in items:
                informer.indexer.add(copy.deepcopy(item))
        for obj in objects:
            resource = {"Deployment": "deployments", "ReplicaSet": "replicasets"}[obj["kind"]]
            meta = obj["metadata"]
            self.c.fake.objects[(resource, meta["namespace"], meta["name"])] = copy.deepcopy(obj)

    def run(self, d):
        """`f.run(getKey(d))`: the sync's error and the client's actions as (verb, resource,
        subresource)."""
        task = self.c.kernel.spawn(self.dc.sync_deployment(f"{d['metadata']['namespace']}/{d['metadata']['name']}"))
        self.c.kernel.run()
        err = task.result()
        return err, [(verb, res) for verb, res, _ in self.c.fake.actions()]

    def queued(self) -> list[str]:
        keys = []
        while len(self.dc.queue):
            key, _ = self.dc.queue.get()
            keys.append(key)
            self.dc.queue.done(key)
        return keys


class StatusRecordingFixture(Fixture):
    """Records whether an update is of the status subresource (upstream's action.GetSubresource)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        fake, subresources = self.c.fake, []
        update = fake.update

        async def recording_update(resource, namespace, name, body, subresource=None):
            subresources.append(subresource)
            return await update(resource, namespace, name, body, subresource)

        fake.update = recording_update
        self.subresources = subresources


def test_sync_deployment_creates_replica_set():
    """`TestSyncDeploymentCreatesReplicaSet`: create RS, update status, update status."""
    d = new_deployment("foo", 1, selector=SEL)
    f = StatusRecordingFixture(d_lister=[d], objects=[d])
    err, actions = f.run(d)
    assert err is None
    assert actions == [("create", "replicasets"), ("update", "deployments"), ("update", "deployments")]
    assert f.subresources == ["status", "status"]


def test_sync_deployment_dont_do_anything_during_deletion():
    """`TestSyncDeploymentDontDoAnythingDuringDeletion`: only the status update."""
    d = new_deployment("foo", 1, selector=SEL)
    d["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    f = StatusRecordingFixture(d_lister=[d], objects=[d])
    err, actions = f.run(d)
    assert err is None
    assert actions == [("update", "deployments")]
    assert f.subresources == ["status"]


def test_sync_deployment_deletion_race():
    """`TestSyncDeploymentDeletionRace`: the cache says not deleted, the server says deleted; an
    orphan that matches triggers the recheck (one GET of the Deployment) and the sync fails."""
    d = new_deployment("foo", 1, selector=SEL)
    d2 = copy.deepcopy(d)
    d2["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    orphan = new_replica_set(d, "rs1", 1)
    del orphan["metadata"]["ownerReferences"]
    f = Fixture(d_lister=[d], rs_lister=[orphan], objects=[d2, orphan])
    err, actions = f.run(d)
    assert err is not None
    assert actions == [("get", "deployments")]


def test_dont_sync_deployments_with_empty_pod_selector():
    """`TestDontSyncDeploymentsWithEmptyPodSelector` (#23218): no generation, so no action."""
    d = new_deployment("foo", 1, selector=SEL)
    d["spec"]["selector"] = {}
    f = Fixture(d_lister=[d], objects=[d])
    err, actions = f.run(d)
    assert err is None
    assert actions == []


def generate_pod_from_rs(rs):
    """`generatePodFromRS(rs)`."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": rs["metadata"]["name"] + "-pod",
            "namespace": rs["metadata"]["namespace"],
            "uid": "uid-" + rs["metadata"]["name"] + "-pod",
            "labels": dict(rs["spec"]["selector"]["matchLabels"]),
            "ownerReferences": [
                {
                    "uid": rs["metadata"]["uid"],
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": rs["metadata"]["name"],
                    "controller": True,
                }
            ],
        },
        "spec": copy.deepcopy((rs["spec"]["template"] or {}).get("spec") or {}),
        "status": {},
    }


def recreate_deployment():
    foo = new_deployment("foo", 1, selector=SEL)
    foo["spec"]["strategy"] = {"type": "Recreate"}
    return foo


def test_pod_deletion_enqueues_recreate_deployment():
    """`TestPodDeletionEnqueuesRecreateDeployment`."""
    foo = recreate_deployment()
    rs = new_replica_set(foo, "foo-1", 1)
    f = Fixture(d_lister=[foo], rs_lister=[rs], objects=[foo, rs])
    f.dc.delete_pod(generate_pod_from_rs(rs))
    assert f.queued() == ["default/foo"]


def test_pod_deletion_partial_replica_set_ownership_enqueue_recreate_deployment():
    """`TestPodDeletionPartialReplicaSetOwnershipEnqueueRecreateDeployment`."""
    foo = recreate_deployment()
    rs1 = new_replica_set(foo, "foo-1", 1)
    rs2 = new_replica_set(foo, "foo-2", 2)
    del rs2["metadata"]["ownerReferences"]
    f = Fixture(d_lister=[foo], rs_lister=[rs1, rs2], objects=[foo, rs1, rs2])
    f.dc.delete_pod(generate_pod_from_rs(rs1))
    assert f.queued() == ["default/foo"]


def test_get_replica_sets_for_deployment():
    """`TestGetReplicaSetsForDeployment`: two Deployments with the same labels, each RS owned by
    one of them; each gets its own."""
    d1 = new_deployment("foo", 1, selector=SEL)
    d2 = new_deployment("bar", 1, selector=SEL)
    rs1, rs2 = new_replica_set(d1, "rs1", 1), new_replica_set(d2, "rs2", 1)
    f = Fixture(d_lister=[d1, d2], rs_lister=[rs1, rs2], objects=[d1, d2, rs1, rs2])
    for d, want in ((d1, ["rs1"]), (d2, ["rs2"])):
        rs_list, err = f.c.call("get_replica_sets_for_deployment", d)
        assert err is None
        assert [rs["metadata"]["name"] for rs in rs_list] == want


def test_get_replica_sets_for_deployment_adopt_release():
    """`TestGetReplicaSetsForDeploymentAdoptRelease`: the orphan with matching labels is adopted
    and returned; the owned RS with other labels is released."""
    d = new_deployment("foo", 1, selector=SEL)
    rs_adopt = new_replica_set(d, "rsAdopt", 1)
    del rs_adopt["metadata"]["ownerReferences"]
    rs_release = new_replica_set(d, "rsRelease", 1)
    rs_release["metadata"]["labels"] = {"foo": "notbar"}
    f = Fixture(d_lister=[d], rs_lister=[rs_adopt, rs_release], objects=[d, rs_adopt, rs_release])
    rs_list, err = f.c.call("get_replica_sets_for_deployment", d)
    assert err is None
    assert [rs["metadata"]["name"] for rs in rs_list] == ["rsAdopt"]


def test_get_pod_map_for_replica_sets():
    """`TestGetPodMapForReplicaSets`: pods by their RS's UID; the orphan pod left out, the
    inactive (Failed) pod kept."""
    d = new_deployment("foo", 1, selector=SEL)
    rs1, rs2 = new_replica_set(d, "rs1", 1), new_replica_set(d, "rs2", 1)
    pod1, pod2 = generate_pod_from_rs(rs1), generate_pod_from_rs(rs2)
    pod3 = generate_pod_from_rs(rs1)
    pod3["metadata"].update(name="pod3", uid="uid-pod3")
    del pod3["metadata"]["ownerReferences"]
    pod4 = generate_pod_from_rs(rs1)
    pod4["metadata"].update(name="pod4", uid="uid-pod4")
    pod4["status"]["phase"] = "Failed"
    f = Fixture(d_lister=[d], rs_lister=[rs1, rs2], pod_lister=[pod1, pod2, pod3, pod4])
    pod_map = f.dc.get_pod_map_for_deployment(d, [rs1, rs2])
    assert sum(len(pods) for pods in pod_map.values()) == 3
    assert len(pod_map) == 2
    assert sorted(p["metadata"]["name"] for p in pod_map[rs1["metadata"]["uid"]]) == ["pod4", "rs1-pod"]
    assert [p["metadata"]["name"] for p in pod_map[rs2["metadata"]["uid"]]] == ["rs2-pod"]


def two_deployments():
    return new_deployment("d1", 1, selector=SEL), new_deployment("d2", 1, selector=SEL)


def test_add_replica_set():
    """`TestAddReplicaSet`: an owned RS enqueues its owner only."""
    d1, d2 = two_deployments()
    rs1, rs2 = new_replica_set(d1, "rs1", 1), new_replica_set(d2, "rs2", 1)
    f = Fixture(d_lister=[d1, d2], objects=[d1, d2, rs1, rs2])
    f.dc.add_replica_set(rs1)
    assert f.queued() == ["default/d1"]
    f.dc.add_replica_set(rs2)
    assert f.queued() == ["default/d2"]


def test_add_replica_set_orphan():
    """`TestAddReplicaSetOrphan`: an orphan enqueues the two Deployments that select it."""
    d1, d2 = two_deployments()
    d3 = new_deployment("d3", 1, selector={"foo": "notbar"})
    rs = new_replica_set(d1, "rs1", 1)
    del rs["metadata"]["ownerReferences"]
    f = Fixture(d_lister=[d1, d2, d3], objects=[d1, d2, d3])
    f.dc.add_replica_set(rs)
    assert sorted(f.queued()) == ["default/d1", "default/d2"]


def bumped(rs):
    """`bumpResourceVersion`."""
    nxt = copy.deepcopy(rs)
    nxt["metadata"]["resourceVersion"] = str(int(rs["metadata"]["resourceVersion"]) + 1)
    return nxt


def test_update_replica_set():
    """`TestUpdateReplicaSet`: an owned RS's update enqueues its owner only."""
    d1, d2 = two_deployments()
    rs1, rs2 = new_replica_set(d1, "rs1", 1), new_replica_set(d2, "rs2", 1)
    f = Fixture(d_lister=[d1, d2], rs_lister=[rs1, rs2], objects=[d1, d2, rs1, rs2])
    f.dc.update_replica_set(copy.deepcopy(rs1), bumped(rs1))
    assert f.queued() == ["default/d1"]
    f.dc.update_replica_set(copy.deepcopy(rs2), bumped(rs2))
    assert f.queued() == ["default/d2"]


def test_update_replica_set_orphan_with_new_labels():
    """`TestUpdateReplicaSetOrphanWithNewLabels`: an orphan whose labels changed enqueues every
    Deployment that selects it."""
    d1, d2 = two_deployments()
    rs = new_replica_set(d1, "rs1", 1)
    del rs["metadata"]["ownerReferences"]
    f = Fixture(d_lister=[d1, d2], rs_lister=[rs], objects=[d1, d2, rs])
    prev = copy.deepcopy(rs)
    prev["metadata"]["labels"] = {"foo": "notbar"}
    f.dc.update_replica_set(prev, bumped(rs))
    assert sorted(f.queued()) == ["default/d1", "default/d2"]


def test_update_replica_set_change_controller_ref():
    """`TestUpdateReplicaSetChangeControllerRef`: the old and the new owner are both enqueued."""
    d1, d2 = two_deployments()
    rs = new_replica_set(d1, "rs1", 1)
    f = Fixture(d_lister=[d1, d2], rs_lister=[rs], objects=[d1, d2, rs])
    prev = copy.deepcopy(rs)
    prev["metadata"]["ownerReferences"] = new_replica_set(d2, "x", 1)["metadata"]["ownerReferences"]
    f.dc.update_replica_set(prev, bumped(rs))
    assert sorted(f.queued()) == ["default/d1", "default/d2"]


def test_update_replica_set_release():
    """`TestUpdateReplicaSetRelease`: a released RS enqueues every Deployment that selects it."""
    d1, d2 = two_deployments()
    rs = new_replica_set(d1, "rs1", 1)
    f = Fixture(d_lister=[d1, d2], rs_lister=[rs], objects=[d1, d2, rs])
    nxt = bumped(rs)
    del nxt["metadata"]["ownerReferences"]
    f.dc.update_replica_set(copy.deepcopy(rs), nxt)
    assert sorted(f.queued()) == ["default/d1", "default/d2"]


def test_delete_replica_set():
    """`TestDeleteReplicaSet`: a deleted owned RS enqueues its owner only."""
    d1, d2 = two_deployments()
    rs1, rs2 = new_replica_set(d1, "rs1", 1), new_replica_set(d2, "rs2", 1)
    f = Fixture(d_lister=[d1, d2], rs_lister=[rs1, rs2], objects=[d1, d2, rs1, rs2])
    f.dc.delete_replica_set(rs1)
    assert f.queued() == ["default/d1"]
    f.dc.delete_replica_set(rs2)
    assert f.queued() == ["default/d2"]


def test_delete_replica_set_orphan():
    """`TestDeleteReplicaSetOrphan`: a deleted orphan enqueues nothing."""
    d1, d2 = two_deployments()
    rs = new_replica_set(d1, "rs1", 1)
    del rs["metadata"]["ownerReferences"]
    f = Fixture(d_lister=[d1, d2], rs_lister=[rs], objects=[d1, d2, rs])
    f.dc.delete_replica_set(rs)
    assert f.queued() == []


def test_reentrant_rollback():
    """`TestReentrantRollback` (the rollback request as apps/v1 carries it, the
    `deprecated.deployment.rollback.to` annotation, revision 0 = the last): the Deployment is
    updated once (rolled back to rs1's template), the ReplicaSets are not touched. Upstream's
    fixtures share one label map between the Deployment's selector and template and both
    ReplicaSets, so the `pod-template-hash` it sets on the RSs' selectors is on all of them."""
    d = new_deployment("foo", 1, selector={**SEL, "pod-template-hash": "hash"})
    d["metadata"]["annotations"] = {
        "deployment.kubernetes.io/revision": "2",
        "deprecated.deployment.rollback.to": "0",
    }
    rs1 = new_replica_set(d, "deploymentrs-old", 0)
    rs1["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    rs1["spec"]["template"] = copy.deepcopy(rs1["spec"]["template"])
    rs1["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    rs2 = new_replica_set(d, "deploymentrs-new", 1)
    rs2["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "2"}
    f = StatusRecordingFixture(d_lister=[d], rs_lister=[rs1, rs2], objects=[d, rs1, rs2])
    err, actions = f.run(d)
    assert err is None
    assert actions == [("update", "deployments")]
    assert f.subresources == [None]  # the Deployment itself, not its status
    (updated,) = [body for verb, _, body in f.c.fake.actions()]
    assert updated["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 1
    assert "deprecated.deployment.rollback.to" not in updated["metadata"]["annotations"]

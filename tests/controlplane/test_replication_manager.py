"""The v1.5 ReplicationManager (controlplane.replication) against the v1.5 spec, rule by rule.

The first part ports upstream's `pkg/controller/replication/replication_controller_test.go` at
K15 (spec §15.4), same names in snake_case and the same numbers: the manager is driven as
upstream's tests drive it, with its stores filled by hand, a fake pod control and a fake client
for status writes. The rest checks the rules the port does not cover, on a live API server.
"""

from __future__ import annotations

import random

import pytest

from controlplane.apiserver import ApiError, APIServer, Client
from controlplane.controllers import registry
from controlplane.controllers.config import ControllerConfig
from controlplane.kernel import Kernel, rfc3339
from controlplane.pod_control import PodControlError
from controlplane.replicaset.replica_set_utils import (
    REPLICA_FAILURE,
    get_condition,
    remove_condition,
    set_condition,
)
from controlplane.replication import FULL_CONTROLLER_RESYNC_PERIOD, ReplicationManager
from controlplane.replication.controller_utils import (
    CREATED_BY_ANNOTATION,
    get_pod_from_template,
    sort_active_pods,
)
from controlplane.replication.lookup_cache import MatchingCache, cache_key
from controlplane.trace import Trace

RC_UID = "123-456-789"


# -- upstream's test fixtures ------------------------------------------------------------------


def new_replication_controller(replicas, name="foobar", uid=RC_UID, created=0):
    """`newReplicationController`: selector and template labels foo=bar, namespace default."""
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": uid,
            "resourceVersion": "18",
            "generation": 1,
            "creationTimestamp": rfc3339(created),
        },
        "spec": {
            "replicas": replicas,
            "selector": {"foo": "bar"},
            "template": {
                "metadata": {"labels": {"name": "foo", "type": "production", "foo": "bar"}},
                "spec": {"containers": [{"name": "app", "image": "foo/bar"}]},
            },
        },
        "status": {},
    }


def controller_ref_to(rc, controller=True):
    ref = {"apiVersion": "v1", "kind": "ReplicationController", "name": rc["metadata"]["name"]}
    ref["uid"] = rc["metadata"]["uid"]
    if controller is not None:
        ref["controller"] = controller
    return ref


def new_pod(name, rc, phase="Running", ready_at=None, owner=None, labels=None, rv="1", created=0):
    """`newPod`: the RC's selector labels; Running pods are Ready (since `ready_at`)."""
    status = {"phase": phase}
    if phase == "Running":
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(ready_at or 0)}]
    meta = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "resourceVersion": rv,
        "labels": dict(rc["spec"]["selector"] if labels is None else labels),
        "creationTimestamp": rfc3339(created),
    }
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"nodeName": "node-1"}, "status": status}


def new_pod_list(rm, count, phase, rc, prefix="pod", controlled=True):
    """`newPodList`: `count` pods, added to the pod store (controlled by `rc` when asked)."""
    pods = []
    for i in range(count):
        owner = controller_ref_to(rc) if controlled else None
        pod = new_pod(f"{prefix}{i}", rc, phase, owner=owner)
        pod["metadata"]["uid"] = f"uid-{prefix}{phase}{i}"
        pod["metadata"]["name"] = f"{prefix}{phase.lower()}{i}"
        if rm is not None:
            rm.pod_informer.indexer.add(pod)
        pods.append(pod)
    return pods


class FakePodControl:
    """`controller.FakePodControl`: records every call; `err` fails creates, deletes and patches
    (each call is recorded before it fails, as upstream)."""

    def __init__(self):
        self.templates, self.controller_refs, self.delete_pod_names, self.patches = [], [], [], []
        self.err = None

    async def create_pods(self, namespace, template, controller_obj, controller_ref=None):
        self.templates.append(template)
        self.controller_refs.append(controller_ref)
        if self.err is not None:
            raise PodControlError(self.err)
        return {}

    async def delete_pod(self, namespace, name, controller_obj):
        self.delete_pod_names.append(name)
        if self.err is not None:
            raise PodControlError(self.err)

    async def patch_pod(self, namespace, name, patch):
        self.patches.append(patch)
        if self.err is not None:
            raise ApiError(500, "InternalError", self.err)
        return {}

    def clear(self):
        self.__init__()


class FakeClient:
    """The fake HTTP handler of upstream's tests: answers status writes (echoing the body with
    a new resourceVersion) and GETs, or fails each with `code`; counts requests."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.requests = []
        self.code = None
        self.server = APIServer(kernel)  # for snapshot() only

    def _answer(self, verb, body):
        self.requests.append(verb)
        if self.code is not None:
            raise ApiError(self.code, "InternalError", "fake error")
        return {**body, "metadata": {**body["metadata"], "resourceVersion": str(100 + len(self.requests))}}

    async def update(self, resource, namespace, name, body, subresource=None):
        return self._answer(f"update {resource}/{subresource}", body)

    async def get(self, resource, namespace, name):
        return self._answer(f"get {resource}", {"metadata": {"name": name}, "spec": {}, "status": {}})


class Manager:
    """`NewReplicationManagerFromClient` + `podStoreSynced = alwaysReady` + a fake pod control:
    nothing runs by itself; a test fills the stores and calls the sync."""

    def __init__(self, gc=True, burst=500):
        self.kernel = Kernel(seed=1)
        self.client = FakeClient(self.kernel)
        self.rm = ReplicationManager(
            self.kernel, self.client, ControllerConfig(burst_replicas=burst), garbage_collector_enabled=gc
        )
        self.rm.pod_store_synced = lambda: True
        self.pod_control = FakePodControl()
        self.rm.pod_control = self.pod_control

    def add_rc(self, rc):
        self.rm.rs_informer.indexer.add(rc)
        return rc

    def sync(self, key="default/foobar"):
        task = self.kernel.spawn(self.rm.sync_replication_controller(key))
        self.kernel.run()
        return task.result()

    def validate(self, creates, deletes, patches=0):
        """`validateSyncReplication`."""
        assert len(self.pod_control.templates) == creates
        assert len(self.pod_control.delete_pod_names) == deletes
        assert len(self.pod_control.patches) == patches


# -- ported from replication_controller_test.go (spec §15.4) ------------------------------------


def test_sync_replication_controller_dormancy():
    m = Manager(gc=False)
    rc = m.add_rc(new_replication_controller(2))
    new_pod_list(m.rm, 1, "Running", rc)
    rc["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}
    # Expectations prevents replicas but not an update on status.
    rc["status"] = {"replicas": 0}
    m.rm.expectations.expect_creations("default/foobar", 1)
    m.sync()
    m.validate(0, 0)
    # Lowering expectations should lead to a sync that creates a replica, however the
    # fakePodControl error will prevent this, leaving expectations at 0, 0.
    m.rm.expectations.creation_observed("default/foobar")
    rc["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}
    m.pod_control.clear()
    m.pod_control.err = "Fake Error"
    m.sync()
    m.validate(1, 0)
    # This replica should not need a Lowering of expectations, since the previous create failed.
    m.pod_control.clear()
    m.sync()
    m.validate(1, 0)
    # 1 PUT for the rc status during the dormancy window (the rest compare equal or fail only in pods).
    assert m.client.requests.count("update replicationcontrollers/status") >= 1
    assert m.client.requests[0] == "update replicationcontrollers/status"


def test_rc_sync_expectations():
    m = Manager(gc=False)
    rc = m.add_rc(new_replication_controller(2))
    pods = new_pod_list(None, 2, "Pending", rc)
    m.rm.pod_informer.indexer.add(pods[0])
    post_expectations_pod = pods[1]
    real = m.rm.expectations.satisfied_expectations

    def satisfied_then_pod_arrives(key):
        # The watch delivers a pod right after the check: the list already sees it.
        m.rm.pod_informer.indexer.add(post_expectations_pod)
        return real(key)

    m.rm.expectations.satisfied_expectations = satisfied_then_pod_arrives
    m.sync()
    m.validate(0, 0)


def test_delete_controller_and_expectations():
    m = Manager(gc=False)
    rc = m.add_rc(new_replication_controller(1))
    # This should set expectations for the rc.
    m.sync()
    m.validate(1, 0)
    m.pod_control.clear()
    record, exists = m.rm.expectations.get_expectations("default/foobar")
    assert exists
    # R5.1: the RC delete handler only enqueues; the expectations stay until a sync.
    m.rm.rs_informer.indexer.delete(rc)
    m.rm.enqueue_controller(rc)
    assert m.rm.expectations.get_expectations("default/foobar")[1]
    m.sync()
    assert not m.rm.expectations.get_expectations("default/foobar")[1]
    # This should have no effect, since we've deleted the rc.
    record.add -= 1
    m.sync()
    m.validate(0, 0)


@pytest.mark.parametrize("run", range(5))
def test_overlapping_rcs(run):
    m = Manager()
    # 9 RCs created on days 1..9, inserted into the store shuffled; names random.
    rng = random.Random(run)
    controllers = []
    for j in range(1, 10):
        rc = new_replication_controller(1, name=f"rc-{rng.getrandbits(32):08x}", uid=f"uid-{j}", created=86400 * j)
        controllers.append(rc)
    for rc in rng.sample(controllers, len(controllers)):
        m.add_rc(rc)
    # Add a pod and make sure only the oldest rc is synced.
    pod = new_pod_list(None, 1, "Pending", controllers[0])[0]
    m.rm.add_pod(pod)
    key, _ = m.rm.queue.get()
    assert key == f"default/{controllers[0]['metadata']['name']}"
    assert len(m.rm.queue) == 0


@pytest.mark.parametrize(("burst_replicas", "num_replicas"), [(5, 30), (5, 12), (3, 2)])
def test_controller_burst_replicas(burst_replicas, num_replicas):
    m = Manager(gc=False, burst=burst_replicas)
    rc = m.add_rc(new_replication_controller(num_replicas))
    key = "default/foobar"
    pods = new_pod_list(None, num_replicas, "Pending", rc)
    store = m.rm.pod_informer.indexer
    # Size up the controller, then size it down, and confirm the expected create/delete pattern.
    for replicas in (num_replicas, 0):
        rc = {**rc, "spec": {**rc["spec"], "replicas": replicas}}
        m.add_rc(rc)
        for _ in range(0, num_replicas, burst_replicas):
            m.pod_control.clear()
            m.sync()
            active = len(store.list())
            if replicas != 0:
                # The pods in flight: the manager sleeps until all of them are observed.
                expected = min(replicas - active, burst_replicas)
                m.validate(expected, 0)
                for pod in pods[: expected - 1]:
                    store.add(pod)
                    m.rm.add_pod(pod)
            else:
                expected = min(active - replicas, burst_replicas)
                m.validate(0, expected)
                # To accurately simulate a watch we must delete the exact pods the rc is waiting for,
                # all but one.
                expected_dels = sorted(m.rm.expectations.get_uids(key))
                for pod_key_ in expected_dels[1:]:
                    doomed = store.get_by_key(pod_key_)
                    store.delete(doomed)
                    m.rm.delete_pod(doomed)
            record, _ = m.rm.expectations.get_expectations(key)
            assert not record.fulfilled() or expected == 1
            # The rc takes no action for all the above pods.
            m.pod_control.clear()
            m.sync()
            m.validate(0, 0)
            # The last add (or delete) lowers the expectations to 0: the next sync acts again.
            if replicas != 0:
                store.add(pods[expected - 1])
                m.rm.add_pod(pods[expected - 1])
                pods = pods[expected:]
            else:
                (last,) = m.rm.expectations.get_uids(key)
                doomed = store.get_by_key(last)
                store.delete(doomed)
                m.rm.delete_pod(doomed)
        assert len(store.list()) == replicas
        # Replenish the pod list, since we cut it down sizing up.
        pods = new_pod_list(None, replicas, "Running", rc, prefix="again")


def test_controller_update_requeue():
    m = Manager(gc=False)
    # The status write fails: the sync must return an error (the worker then requeues).
    m.client.code = 500
    rc = m.add_rc(new_replication_controller(1))
    rc["status"] = {"replicas": 2}
    new_pod_list(m.rm, 1, "Running", rc)
    assert m.sync() is not None
    # 1 Update and 1 GET, both of which fail.
    assert m.client.requests == ["update replicationcontrollers/status", "get replicationcontrollers"]


def test_patch_pod_fails():
    m = Manager()
    rc = m.add_rc(new_replication_controller(2))
    # Two orphans in the pod store; the fake pod control fails patches (and creates).
    m.rm.pod_informer.indexer.add(new_pod("pod1", rc))
    m.rm.pod_informer.indexer.add(new_pod("pod2", rc))
    m.pod_control.err = "Fake Error"
    err = m.sync()
    # The rc manager assumes it failed to take control of the pods and creates new ones.
    assert str(err) == "Fake Error"
    m.validate(2, 0, 2)


def test_patch_extra_pods_then_delete():
    m = Manager()
    rc = m.add_rc(new_replication_controller(2))
    for name in ("pod1", "pod2", "pod3"):
        m.rm.pod_informer.indexer.add(new_pod(name, rc))
    assert m.sync() is None
    # 3 patches to take control of the pods, and 1 deletion because there is an extra pod.
    m.validate(0, 1, 3)


def test_do_not_patch_pod_with_other_control_ref():
    m = Manager()
    rc = m.add_rc(new_replication_controller(2))
    other = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "name": "AnotherRC",
        "uid": "another-uid",
        "controller": True,
    }
    m.rm.pod_informer.indexer.add(new_pod("pod", rc, owner=other))
    assert m.sync() is None
    # The matching pod already has a controller: 2 pods are created, no patch.
    m.validate(2, 0, 0)


def test_patch_pod_with_correct_owner_ref():
    m = Manager()
    rc = m.add_rc(new_replication_controller(2))
    # An owner reference to this RC, but not as controller: an orphan, adopted (R8.1).
    m.rm.pod_informer.indexer.add(new_pod("pod", rc, owner=controller_ref_to(rc, controller=None)))
    assert m.sync() is None
    # 1 patch to take control of the pod, and 1 create of a new pod.
    m.validate(1, 0, 1)


def test_update_labels_remove_controller_ref():
    m = Manager()
    rc = m.add_rc(new_replication_controller(2))
    pod = new_pod("pod", rc, owner=controller_ref_to(rc), rv="1")
    updated = {**pod, "metadata": {**pod["metadata"], "labels": {}, "resourceVersion": "2"}}
    # The informer updates the store before it calls the handler.
    m.rm.pod_informer.indexer.add(updated)
    m.rm.update_pod(pod, updated)
    key, _ = m.rm.queue.get()
    assert key == "default/foobar"
    m.rm.queue.done(key)
    assert m.sync() is None
    # 1 patch to remove the controllerRef, 2 creates: no pod matches any more.
    m.validate(2, 0, 1)


def test_update_selector_controller_ref():
    m = Manager()
    rc = m.add_rc(new_replication_controller(2))
    new_pod_list(m.rm, 2, "Running", rc)
    updated = {**rc, "spec": {**rc["spec"], "selector": {"foo": "baz"}}}
    m.add_rc(updated)
    m.rm.lookup_cache.add(cache_key("default", {"foo": "bar"}), rc)
    m.rm.update_rc(rc, updated)
    assert len(m.rm.lookup_cache) == 0  # a selector change invalidates the lookup cache (R5.2)
    key, _ = m.rm.queue.get()
    assert key == "default/foobar"
    m.rm.queue.done(key)
    assert m.sync() is None
    # 2 patches to remove the controllerRef of the pods, 2 creates.
    m.validate(2, 0, 2)


def test_do_not_adopt_or_create_if_being_deleted():
    m = Manager()
    rc = new_replication_controller(2)
    rc["metadata"]["deletionTimestamp"] = rfc3339(0)
    m.add_rc(rc)
    m.rm.pod_informer.indexer.add(new_pod("pod1", rc))
    assert m.sync() is None
    # No patch, no create.
    m.validate(0, 0, 0)


def test_ready_replicas():
    m = Manager(gc=False)
    rc = m.add_rc(new_replication_controller(2))
    rc["status"] = {"replicas": 2, "readyReplicas": 0, "availableReplicas": 0, "observedGeneration": 1}
    new_pod_list(m.rm, 2, "Pending", rc)
    new_pod_list(m.rm, 2, "Running", rc)
    written = []
    update = m.client.update

    async def capture(resource, namespace, name, body, subresource=None):
        written.append(body["status"])
        return await update(resource, namespace, name, body, subresource)

    m.client.update = capture
    m.sync()
    status = written[-1]
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (4, 2, 2)
    assert status["observedGeneration"] == 1


def test_available_replicas():
    m = Manager(gc=False)
    m.kernel.run_until(100.0)
    rc = new_replication_controller(2)
    rc["spec"]["minReadySeconds"] = 15
    rc["status"] = {"replicas": 2, "readyReplicas": 0, "observedGeneration": 1}
    m.add_rc(rc)
    # The first pod became ready 20 s ago, the second one now.
    m.rm.pod_informer.indexer.add(new_pod("pod", rc, ready_at=80.0))
    m.rm.pod_informer.indexer.add(new_pod("otherPod", rc, ready_at=100.0))
    written = []
    update = m.client.update

    async def capture(resource, namespace, name, body, subresource=None):
        written.append(body["status"])
        return await update(resource, namespace, name, body, subresource)

    m.client.update = capture
    m.sync()
    # One pod (ready for 20 s) is available, the other is not.
    status = written[-1]
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (2, 2, 1)


def _condition(status="True", reason="reason"):
    return {"type": REPLICA_FAILURE, "status": status, "reason": reason, "message": "message"}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"conditions": [_condition()]}, True),
        ({}, False),
        ({"conditions": [{**_condition(), "type": "Unknown"}]}, False),
    ],
    ids=["condition exists", "condition does not exist", "condition of another type"],
)
def test_get_condition(status, expected):
    assert (get_condition(status, REPLICA_FAILURE) is not None) is expected


@pytest.mark.parametrize(
    ("status", "condition", "expected"),
    [
        ({}, _condition(), [_condition()]),
        (
            {"conditions": [{**_condition(), "type": "Other"}]},
            _condition(),
            [{**_condition(), "type": "Other"}, _condition()],
        ),
        ({"conditions": [_condition(status="False")]}, _condition(), [_condition()]),
    ],
    ids=["set for the first time", "simple set", "overwrite"],
)
def test_set_condition(status, condition, expected):
    set_condition(status, condition)
    assert status["conditions"] == expected


@pytest.mark.parametrize(
    ("status", "expected"),
    [({}, 0), ({"conditions": [_condition()]}, 0), ({"conditions": [{**_condition(), "type": "Other"}]}, 1)],
    ids=["remove from empty status", "simple remove", "doesn't remove anything"],
)
def test_remove_condition(status, expected):
    remove_condition(status, REPLICA_FAILURE)
    assert len(status.get("conditions") or []) == expected


# -- R4: the lookup cache ------------------------------------------------------------------------


def test_lookup_cache_is_a_bounded_lru():
    cache = MatchingCache(2)
    a, b, c = ({"metadata": {"name": n}} for n in "abc")
    cache.add(cache_key("ns", {"x": "1"}), a)
    cache.add(cache_key("ns", {"x": "2"}), b)
    assert cache.get(cache_key("ns", {"x": "1"})) is a  # refreshed: b is now the oldest
    cache.add(cache_key("ns", {"x": "3"}), c)
    assert cache.get(cache_key("ns", {"x": "2"})) is None
    assert len(cache) == 2
    assert [e["rc"] for e in cache.snapshot()["entries"]] == ["c", "a"]
    cache.invalidate_all()
    assert len(cache) == 0 and cache.invalidations == 1
    with pytest.raises(ValueError):
        MatchingCache(0)


def test_lookup_cache_keys_are_exact_namespace_and_labels():
    assert cache_key("a", {"x": "1", "y": "2"}) == cache_key("a", {"y": "2", "x": "1"})
    assert cache_key("a", {"x": "1"}) != cache_key("b", {"x": "1"})
    assert cache_key("a", {"x": "1"}) != cache_key("a", {"x": "1", "y": "2"})


def test_get_pod_controller_counts_a_miss_then_hits():
    m = Manager()
    rc = m.add_rc(new_replication_controller(1))
    pod = new_pod("p", rc)
    assert m.rm.get_pod_controller(pod) is rc
    assert m.rm.get_pod_controller(pod) is rc
    snap = m.rm.lookup_cache.snapshot()
    assert (snap["hits"], snap["misses"], snap["size"]) == (1, 1, 1)
    assert snap["entries"] == [{"namespace": "default", "labels": {"foo": "bar"}, "rc": "foobar"}]


def test_get_pod_controller_ignores_pods_without_labels_and_empty_selectors():
    m = Manager()
    rc = new_replication_controller(1)
    rc["spec"]["selector"] = {}
    m.add_rc(rc)
    assert m.rm.get_pod_controller(new_pod("p", rc, labels={})) is None
    assert m.rm.get_pod_controller(new_pod("q", rc, labels={"foo": "bar"})) is None


def test_oldest_rc_wins_then_the_name_breaks_ties():
    m = Manager()
    young = m.add_rc(new_replication_controller(1, name="a-young", uid="u1", created=20))
    old_b = m.add_rc(new_replication_controller(1, name="b-old", uid="u2", created=10))
    old_c = m.add_rc(new_replication_controller(1, name="c-old", uid="u3", created=10))
    assert m.rm.get_pod_controller(new_pod("p", young)) is old_b
    assert old_c is not None


def test_the_mapping_is_sticky_until_a_selector_changes():
    m = Manager()
    first = m.add_rc(new_replication_controller(1, name="zeta", uid="u1", created=10))
    pod = new_pod("p", first)
    assert m.rm.get_pod_controller(pod) is first
    # A later RC that sorts first (same second, smaller name) is not consulted while the
    # cached one still exists by name and matches (R4.4).
    alpha = m.add_rc(new_replication_controller(1, name="alpha", uid="u2", created=10))
    assert m.rm.get_pod_controller(pod) is first
    # RC add/delete never invalidate; an update of the selector does.
    m.rm.update_rc(alpha, {**alpha, "spec": {**alpha["spec"], "selector": {"foo": "bar"}}})
    assert m.rm.lookup_cache.invalidations == 0  # equal maps: no invalidation
    m.rm.update_rc(first, {**first, "spec": {**first["spec"], "selector": {"foo": "bar", "x": "y"}}})
    assert m.rm.lookup_cache.invalidations == 1
    assert m.rm.get_pod_controller(pod) is alpha


def test_a_cached_rc_gone_by_name_is_looked_up_again():
    m = Manager()
    old = m.add_rc(new_replication_controller(1, name="old", uid="u1", created=10))
    new = m.add_rc(new_replication_controller(1, name="new", uid="u2", created=20))
    pod = new_pod("p", old)
    assert m.rm.get_pod_controller(pod) is old
    m.rm.rs_informer.indexer.delete(old)
    assert m.rm.get_pod_controller(pod) is new
    assert m.rm.lookup_cache.misses == 2


# -- R5: handlers route to the oldest RC by selector ---------------------------------------------


def test_add_pod_decrements_the_oldest_rcs_expectations_whoever_created_it():
    m = Manager()
    a = m.add_rc(new_replication_controller(1, name="a", uid="ua", created=0))
    b = m.add_rc(new_replication_controller(1, name="b", uid="ub", created=10))
    m.rm.expectations.expect_creations("default/a", 1)
    m.rm.expectations.expect_creations("default/b", 1)
    m.rm.add_pod(new_pod("of-b", b, owner=controller_ref_to(b)))
    assert m.rm.expectations.get_expectations("default/a")[0].get_expectations() == (0, 0)
    assert m.rm.expectations.get_expectations("default/b")[0].get_expectations() == (1, 0)
    assert m.rm.queue.snapshot()["queue"] == ["default/a"]
    assert a is not None


def test_add_pod_being_deleted_is_a_deletion():
    m = Manager()
    rc = m.add_rc(new_replication_controller(1))
    pod = new_pod("p", rc)
    pod["metadata"]["deletionTimestamp"] = rfc3339(0)
    m.rm.expectations.expect_deletions("default/foobar", ["default/p"])
    m.rm.add_pod(pod)
    assert m.rm.expectations.get_expectations("default/foobar")[0].get_expectations() == (0, 0)


def test_update_pod_with_the_same_resource_version_is_ignored():
    m = Manager()
    rc = m.add_rc(new_replication_controller(1))
    pod = new_pod("p", rc)
    m.rm.update_pod(pod, pod)
    assert len(m.rm.queue) == 0


def test_update_pod_label_change_enqueues_old_rc_first_then_new():
    m = Manager()
    m.add_rc(new_replication_controller(1, name="old", uid="u1"))
    new = new_replication_controller(1, name="new", uid="u2")
    new["spec"]["selector"] = {"foo": "baz"}
    m.add_rc(new)
    old_pod = new_pod("p", new, labels={"foo": "bar"}, rv="1")
    cur_pod = new_pod("p", new, labels={"foo": "baz"}, rv="2")
    m.rm.update_pod(old_pod, cur_pod)
    assert m.rm.queue.snapshot()["queue"] == ["default/old", "default/new"]


def test_delete_pod_of_an_orphan_still_enqueues_and_observes():
    m = Manager()
    rc = m.add_rc(new_replication_controller(1))
    m.rm.expectations.expect_deletions("default/foobar", ["default/p"])
    m.rm.delete_pod(new_pod("p", rc))  # no ownerReferences: v1.36 would ignore it
    assert m.rm.expectations.get_expectations("default/foobar")[0].get_expectations() == (0, 0)
    assert m.rm.queue.snapshot()["queue"] == ["default/foobar"]


def test_update_rc_always_enqueues():
    m = Manager()
    rc = m.add_rc(new_replication_controller(1))
    m.rm.update_rc(rc, rc)  # a resync: same object
    assert m.rm.queue.snapshot()["queue"] == ["default/foobar"]


# -- R7.f and §8: counting with and without the garbage collector -------------------------------


def test_gc_off_counts_every_matching_pod_whatever_its_owner():
    m = Manager(gc=False)
    rc = m.add_rc(new_replication_controller(2))
    other = {"apiVersion": "v1", "kind": "ReplicationController", "name": "x", "uid": "x", "controller": True}
    m.rm.pod_informer.indexer.add(new_pod("owned-by-other", rc, owner=other))
    m.rm.pod_informer.indexer.add(new_pod("orphan", rc))
    m.rm.pod_informer.indexer.add(new_pod("elsewhere", rc, labels={"foo": "other"}))
    assert m.sync() is None
    m.validate(0, 0, 0)  # two match: nothing to do, nothing adopted


def test_gc_off_creates_pods_without_owner_references():
    m = Manager(gc=False)
    m.add_rc(new_replication_controller(1))
    m.sync()
    assert m.pod_control.controller_refs == [None]


def test_gc_on_creates_with_a_controller_ref_without_block_owner_deletion():
    m = Manager()
    m.add_rc(new_replication_controller(1))
    m.sync()
    assert m.pod_control.controller_refs == [
        {"apiVersion": "v1", "kind": "ReplicationController", "name": "foobar", "uid": RC_UID, "controller": True}
    ]


def test_adoption_patch_has_no_block_owner_deletion():
    m = Manager()
    rc = m.add_rc(new_replication_controller(1))
    m.rm.pod_informer.indexer.add(new_pod("pod1", rc))
    m.sync()
    assert m.pod_control.patches == [{"metadata": {"ownerReferences": [controller_ref_to(rc)], "uid": "uid-pod1"}}]


def test_release_error_requeues_at_once_without_status_write():
    m = Manager()
    rc = m.add_rc(new_replication_controller(1))
    m.rm.pod_informer.indexer.add(new_pod("p", rc, owner=controller_ref_to(rc), labels={"foo": "gone"}))
    m.pod_control.err = "patch refused"
    err = m.sync()
    assert str(err) == "patch refused"
    m.validate(0, 0, 1)
    assert m.client.requests == []  # no manageReplicas, no status update
    assert m.rm.queue.snapshot()["queue"] == ["default/foobar"]


# -- §9 and §10: what manageReplicas deletes ----------------------------------------------------


def _pod(name, node="n", phase="Running", ready=None, restarts=0, created=0):
    status = {"phase": phase, "containerStatuses": [{"name": "c", "restartCount": restarts}]}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(ready)}]
    return {
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": rfc3339(created)},
        "spec": {"nodeName": node},
        "status": status,
    }


def test_active_pods_order_has_six_keys():
    pods = [
        _pod("ready-old", ready=10, created=1),
        _pod("ready-new", ready=20, created=1),
        _pod("restarted", ready=10, restarts=3, created=1),
        _pod("not-ready"),
        _pod("pending", phase="Pending"),
        _pod("unknown", phase="Unknown"),
        _pod("unassigned", node="", phase="Pending"),
        _pod("newer", ready=10, created=5),
    ]
    order = [p["metadata"]["name"] for p in sort_active_pods(pods)]
    assert order == ["unassigned", "pending", "unknown", "not-ready", "ready-new", "restarted", "newer", "ready-old"]


def test_active_pods_ties_keep_lister_order():
    pods = [_pod(f"p{i}", ready=10, created=1) for i in range(5)]
    assert sort_active_pods(pods) == pods
    assert sort_active_pods(pods[::-1]) == pods[::-1]


def test_scale_down_ignores_deletion_cost_and_deletes_the_newest_ready():
    m = Manager(gc=False)
    rc = m.add_rc(new_replication_controller(2))
    for name, ready, cost in (("p1", 10, "-100"), ("p2", 20, "100"), ("p3", 30, "100")):
        pod = new_pod(name, rc, ready_at=ready)
        pod["metadata"]["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
        m.rm.pod_informer.indexer.add(pod)
    m.sync()
    assert m.pod_control.delete_pod_names == ["p3"]  # S3a: v1.36 would delete p1


def test_scale_to_zero_deletes_in_lister_order_unsorted():
    m = Manager(gc=False, burst=2)
    rc = m.add_rc(new_replication_controller(0))
    for name, ready in (("p1", 30), ("p2", 10), ("p3", 20)):
        m.rm.pod_informer.indexer.add(new_pod(name, rc, ready_at=ready))
    m.sync()
    assert m.pod_control.delete_pod_names == ["p1", "p2"]  # R9.6: the first two listed


def test_creates_go_out_all_at_once_and_each_failure_lowers_expectations():
    m = Manager(gc=False)
    m.add_rc(new_replication_controller(10))
    m.pod_control.err = "quota"
    err = m.sync()
    assert str(err) == "quota"
    m.validate(10, 0)
    assert m.rm.expectations.get_expectations("default/foobar")[0].get_expectations() == (0, 0)


# -- §12: the pod built from the template -------------------------------------------------------


def test_pod_from_template_carries_the_created_by_annotation():
    rc = new_replication_controller(1)
    rc["spec"]["template"]["metadata"]["annotations"] = {"a": "b"}
    pod = get_pod_from_template(rc["spec"]["template"], rc, None)
    meta = pod["metadata"]
    assert list(meta) == ["generateName", "namespace", "labels", "annotations"]
    assert meta["annotations"]["a"] == "b"
    assert meta["annotations"][CREATED_BY_ANNOTATION] == (
        '{"kind":"SerializedReference","apiVersion":"v1","reference":{"kind":"ReplicationController",'
        '"namespace":"default","name":"foobar","uid":"123-456-789","apiVersion":"v1","resourceVersion":"18"}}\n'
    )
    assert "ownerReferences" not in meta


# -- on a live API server: wiring, resync, R7.1, R9.4 -------------------------------------------


class World:
    """Kernel + API server + a started ReplicationManager; no nodes (pods stay Pending)."""

    def __init__(self, gc=True, **config):
        self.kernel = Kernel(seed=1)
        self.trace = Trace(self.kernel)
        self.records = []
        self.trace.subscribe(self.records.append)
        self.server = APIServer(self.kernel, self.trace)
        self.client = Client(self.server, self.kernel, "replication-controller", qps=None, latency=0.005)
        cfg = ControllerConfig(**{"watch_latency": 0.01, **config})
        self.rm = ReplicationManager(self.kernel, self.client, cfg, trace=self.trace, garbage_collector_enabled=gc)
        self.rm.start()
        self.kernel.advance(0.5)

    def rc(self, replicas=2, name="web"):
        manifest = {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "replicas": replicas,
                "selector": {"app": name},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                },
            },
        }
        return self.server.create("replicationcontrollers", "default", manifest)

    def calls(self, verb, resource="pods"):
        return [r for r in self.server.requests if r["verb"] == verb and r["resource"] == resource]


def test_every_rc_is_resynced_every_ten_minutes():
    w = World()
    w.rc(1)
    w.kernel.advance(5)
    syncs = []
    w.rm.sync_handler = _counting(w.rm, syncs)
    w.kernel.advance(3 * FULL_CONTROLLER_RESYNC_PERIOD)
    assert len(syncs) == 3


def _counting(rm, seen):
    real = rm.sync_replication_controller

    async def handler(key, worker=None):
        seen.append((rm.kernel.now, key))
        return await real(key, worker)

    return handler


def test_pods_created_on_a_live_server_carry_annotation_and_ref():
    w = World()
    rc = w.rc(1)
    w.kernel.advance(2)
    (pod,) = w.server.objects("pods")
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "name": "web",
            "uid": rc["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert CREATED_BY_ANNOTATION in pod["metadata"]["annotations"]


def test_delete_not_found_is_a_failed_delete_with_event_and_condition():
    w = World()
    w.rc(3)
    w.kernel.advance(2)
    victim_names = []
    real_delete = w.client.delete

    async def delete_someone_else_got_first(resource, namespace, name, *args, **kwargs):
        victim_names.append(name)
        w.server.delete("pods", namespace, name)  # someone else deletes it first
        return await real_delete(resource, namespace, name, *args, **kwargs)

    w.client.delete = delete_someone_else_got_first
    w.server.patch("replicationcontrollers", "default", "web", {"spec": {"replicas": 2}}, subresource="scale")
    w.kernel.advance(0.2)
    events = [e for e in w.server.objects("events") if e["reason"] == "FailedDelete"]
    assert len(events) == 1
    assert events[0]["message"].startswith("Error deleting: ")
    errors = [r["error"] for r in w.records if r["kind"] == "sync.end" and r["error"]]
    assert errors[0].startswith("unable to delete pods: ")
    written = [r["changed"] for r in w.records if r["kind"] == "sync.stage" and r["stage"] == "status" and r["written"]]
    conditions = [c for changed in written for c in changed.get("conditions") or ()]
    assert [c["reason"] for c in conditions] == ["FailedDelete"]
    assert conditions[0]["message"] == errors[0]
    # The next sync without an error removes the condition again.
    rc = w.server.get("replicationcontrollers", "default", "web")
    assert get_condition(rc["status"], REPLICA_FAILURE) is None
    assert len(victim_names) == 1


def test_sync_stages_are_the_documented_ones_and_sync_start_names_the_version():
    w = World()
    w.rc(2)
    w.kernel.advance(2)
    starts = [r for r in w.records if r["kind"] == "sync.start"]
    assert starts and all(r["version"] == "v1.5" for r in starts)
    stages = [r["stage"] for r in w.records if r["kind"] == "sync.stage"]
    assert set(stages) <= set(registry.REPLICATION_CONTROLLER.version("v1.5").stage_names)
    first_sync = stages[: stages.index("status") + 1]
    assert first_sync == [
        *("podStoreSynced", "get", "expectations", "list", "classify", "adopt", "release"),
        *("manage", "create", "status"),
    ]


def test_rc_manager_not_ready():
    w = World(manual_workers=True)
    w.rm.pod_store_synced = lambda: False
    pod_control = FakePodControl()
    w.rm.pod_control = pod_control
    w.rc(2)
    w.kernel.advance(0.1)
    assert w.rm.queue.snapshot()["queue"] == ["default/web"]
    w.rm.sync_next()
    w.kernel.advance(0.05)
    assert w.rm.workers[0].key == "default/web"  # this worker sleeps 100 ms (R7.1)
    w.kernel.advance(0.1)
    assert pod_control.templates == []
    assert w.rm.queue.snapshot()["queue"] == ["default/web"]
    assert w.rm.queue.num_requeues("default/web") == 0  # re-added at once, not rate-limited
    w.rm.pod_store_synced = lambda: True
    w.rm.sync_next()
    w.kernel.advance(0.1)
    assert len(pod_control.templates) == 2


def test_availability_boundary_is_strict():
    m = Manager(gc=False)
    m.kernel.run_until(100.0)
    rc = new_replication_controller(1)
    rc["spec"]["minReadySeconds"] = 15
    m.add_rc(rc)
    # Ready exactly 15 s ago: v1.36 (<=) counts it available, v1.5 (strict <) does not yet (D14).
    m.rm.pod_informer.indexer.add(new_pod("pod", rc, ready_at=85.0))
    written = []
    update = m.client.update

    async def capture(resource, namespace, name, body, subresource=None):
        written.append(body["status"])
        return await update(resource, namespace, name, body, subresource)

    m.client.update = capture
    m.sync()
    assert (written[-1]["readyReplicas"], written[-1]["availableReplicas"]) == (1, 0)

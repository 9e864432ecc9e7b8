"""The ReplicaSet controller (and the RC adapter) against upstream's rules and numbers (spec §4-§16)."""

import pytest

from controlplane.apiserver import ApiError, APIServer, Client
from controlplane.controllers.config import ControllerConfig
from controlplane.informers import DeletedFinalStateUnknown
from controlplane.kernel import Kernel, rfc3339
from controlplane.labels import selector_from_set
from controlplane.replicaset import REPLICATION_CONTROLLER, ReplicaSetController
from controlplane.replicaset.replica_set import SyncContext
from controlplane.replicaset.replica_set_utils import calculate_status, update_replica_set_status
from tests.controlplane.factories import rc_manifest, rs_manifest


class World:
    """Kernel + API server + one controller, no nodes: pods stay Pending unless a test moves them."""

    def __init__(self, kind=None, **config):
        self.kernel = Kernel(seed=1)
        self.server = APIServer(self.kernel)
        agent = "replication-controller" if kind is REPLICATION_CONTROLLER else "replicaset-controller"
        self.client = Client(self.server, self.kernel, agent, qps=None, latency=0.005)
        cfg = ControllerConfig(**{"watch_latency": 0.01, **config})
        kwargs = {"kind": kind} if kind is not None else {}
        self.controller = ReplicaSetController(self.kernel, self.client, config=cfg, **kwargs)

    def start(self):
        self.controller.start()
        self.kernel.advance(0.5)
        return self

    def run(self, seconds=5.0):
        self.kernel.advance(seconds)

    def creates(self):
        return [
            r
            for r in self.server.requests
            if r["verb"] == "create" and r["resource"] == "pods" and r["client"] != "user"
        ]

    def pods(self):
        return list(self.server.objects("pods"))


# -- slow start (spec §8.1) --------------------------------------------------------------------


def batches_for(count, initial=1, fail_from=None):
    w = World()
    sizes, calls = [], []

    async def fn():
        calls.append(1)
        if fail_from is not None and len(calls) > fail_from:
            return RuntimeError("quota")
        return None

    ctx = SyncContext("default/x", None, 0.0)
    original = w.controller._gather

    async def spying_gather(coros, what):
        sizes.append(len(coros))
        return await original(coros, what)

    w.controller._gather = spying_gather
    task = w.kernel.spawn(w.controller.slow_start_batch(count, initial, fn, ctx))
    w.kernel.run()
    return sizes, task.result()


def test_slow_start_batches_for_10_are_1_2_4_3():
    sizes, (successes, err) = batches_for(10)
    assert sizes == [1, 2, 4, 3]
    assert (successes, err) == (10, None)


def test_slow_start_for_500_takes_9_batches():
    sizes, _ = batches_for(500)
    assert sizes == [1, 2, 4, 8, 16, 32, 64, 128, 245]


def test_slow_start_stops_after_the_first_batch_with_errors():
    sizes, (successes, err) = batches_for(10, fail_from=3)
    assert sizes == [1, 2, 4]
    assert successes == 3
    assert str(err) == "quota"


# -- manage_replicas and expectations (spec §8, §10) -------------------------------------------


def test_creates_set_expectations_before_the_pods_are_observed():
    w = World().start()
    w.server.create("replicasets", "default", rs_manifest(replicas=3))
    w.kernel.advance(0.02)  # delivered, synced, creates in flight
    record, exists = w.controller.expectations.get_expectations("default/web")
    assert exists
    assert record.get_expectations()[0] > 0
    w.run()
    assert len(w.creates()) == 3
    record, _ = w.controller.expectations.get_expectations("default/web")
    assert record.get_expectations() == (0, 0)


def test_burst_replicas_caps_the_creates_of_one_sync():
    w = World(burst_replicas=4).start()
    w.server.create("replicasets", "default", rs_manifest(replicas=10))
    w.kernel.advance(0.012)
    record, _ = w.controller.expectations.get_expectations("default/web")
    assert record.get_expectations() == (4, 0)
    w.run()
    assert len(w.creates()) == 10


def test_created_pods_carry_the_controller_ref_and_template():
    w = World().start()
    rs = w.server.create("replicasets", "default", rs_manifest(replicas=1))
    w.run()
    (pod,) = w.pods()
    assert pod["metadata"]["generateName"] == "web-"
    assert pod["metadata"]["labels"] == {"app": "web"}
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web",
            "uid": rs["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_scale_down_deletes_the_surplus_and_tracks_them_by_key():
    w = World().start()
    w.server.create("replicasets", "default", rs_manifest(replicas=5))
    w.run()
    w.server.patch("replicasets", "default", "web", {"spec": {"replicas": 2}}, subresource="scale")
    w.kernel.advance(0.012)
    uids = w.controller.expectations.get_uids("default/web")
    assert len(uids) == 3
    w.run()
    live = [p for p in w.pods() if not p["metadata"].get("deletionTimestamp")]
    assert len(live) == 2
    assert w.controller.expectations.get_uids("default/web") == set()


def test_without_slow_start_all_creates_go_out_in_one_batch():
    w = World(slow_start=False).start()
    w.server.create("replicasets", "default", rs_manifest(replicas=8))
    w.run()
    times = {r["time"] for r in w.creates()}
    assert len(w.creates()) == 8
    assert len(times) == 1


def test_unsatisfied_expectations_skip_manage_replicas():
    w = World().start()
    w.server.create("replicasets", "default", rs_manifest(replicas=3))
    w.run()
    w.controller.expectations.expect_creations("default/web", 2)
    w.server.delete("pods", "default", w.pods()[0]["metadata"]["name"])
    w.run(1)
    assert len(w.creates()) == 3  # the missing pod is not replaced while 2 creations are expected


def test_expectations_expire_after_five_minutes():
    w = World().start()
    w.server.create("replicasets", "default", rs_manifest(replicas=3))
    w.run()
    w.controller.expectations.expect_creations("default/web", 2)
    w.server.delete("pods", "default", w.pods()[0]["metadata"]["name"])
    w.run(299)
    assert len(w.creates()) == 3
    w.run(2)  # past the 300 s TTL; expiry alone triggers nothing, the next sync acts
    assert len(w.creates()) == 3
    w.server.patch("replicasets", "default", "web", {"metadata": {"labels": {"poke": "1"}}})
    w.run(5)
    assert len(w.creates()) == 4


def test_expectations_off_makes_every_sync_act():
    w = World(expectations=False).start()
    assert w.controller.expectations.enabled is False
    w.controller.expectations.expect_creations("default/web", 5)
    assert w.controller.expectations.satisfied_expectations("default/web")


# -- handlers (spec §4) ------------------------------------------------------------------------


def test_pod_added_with_deletion_timestamp_is_a_deletion_not_a_creation():
    w = World().start()
    rs = w.server.create("replicasets", "default", rs_manifest(replicas=0))
    w.run(1)
    ctrl = w.controller
    ctrl.expectations.expect_deletions("default/web", ["default/p"])
    ctrl.expectations.raise_expectations("default/web", 1, 0)
    assert ctrl.expectations.get_expectations("default/web")[0].get_expectations() == (1, 1)
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "default",
            "deletionTimestamp": rfc3339(1),
            "labels": {"app": "web"},
            "ownerReferences": [
                {"kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"], "controller": True}
            ],
        },
        "status": {},
    }
    ctrl.add_pod(pod)
    record, _ = ctrl.expectations.get_expectations("default/web")
    assert record.get_expectations() == (1, 0)


def test_update_with_same_resource_version_is_ignored():
    w = World().start()
    ctrl = w.controller
    before = ctrl.queue.metrics.adds
    pod = {"metadata": {"name": "p", "namespace": "default", "resourceVersion": "7", "labels": {"app": "web"}}}
    ctrl.update_pod(pod, pod)
    assert ctrl.queue.metrics.adds == before


def test_orphan_pod_enqueues_every_matching_replica_set_in_its_namespace():
    w = World().start()
    w.server.create("replicasets", "default", rs_manifest("a", replicas=0, labels={"app": "x"}))
    w.server.create("replicasets", "default", rs_manifest("b", replicas=0, labels={"app": "x"}))
    w.run(1)
    ctrl = w.controller
    pod = {"metadata": {"name": "o", "namespace": "default", "labels": {"app": "x"}}}
    found = [rs["metadata"]["name"] for rs in ctrl.get_pod_replica_sets(pod)]
    assert found == ["a", "b"]
    assert ctrl.get_pod_replica_sets({"metadata": {"name": "o", "namespace": "other", "labels": {"app": "x"}}}) == []
    assert ctrl.get_pod_replica_sets({"metadata": {"name": "o", "namespace": "default"}}) == []


def test_controller_ref_change_enqueues_old_and_new_owner():
    w = World().start()
    a = w.server.create("replicasets", "default", rs_manifest("a", replicas=0))
    b = w.server.create("replicasets", "default", rs_manifest("b", replicas=0))
    w.run(1)
    ctrl = w.controller

    def ref(rs):
        return [
            {"kind": "ReplicaSet", "name": rs["metadata"]["name"], "uid": rs["metadata"]["uid"], "controller": True}
        ]

    old = {
        "metadata": {"name": "p", "namespace": "default", "resourceVersion": "1", "ownerReferences": ref(a)},
        "status": {},
    }
    new = {
        "metadata": {"name": "p", "namespace": "default", "resourceVersion": "2", "ownerReferences": ref(b)},
        "status": {},
    }
    ctrl.update_pod(old, new)
    assert ctrl.queue.snapshot()["queue"] == ["default/a", "default/b"]


def test_pod_becoming_ready_requeues_after_min_ready_seconds():
    w = World().start()
    rs = w.server.create("replicasets", "default", rs_manifest(replicas=0, minReadySeconds=7))
    w.run(1)
    ctrl = w.controller
    meta = {
        "name": "p",
        "namespace": "default",
        "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"], "controller": True}],
    }
    old = {
        "metadata": {**meta, "resourceVersion": "1"},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    new = {
        "metadata": {**meta, "resourceVersion": "2"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    ctrl.update_pod(old, new)
    waiting = ctrl.queue.snapshot()["waiting"]
    assert waiting == [{"key": "default/web", "readyAt": pytest.approx(w.kernel.now + 7)}]


def test_deleted_replica_set_tombstone_drops_its_expectations():
    w = World().start()
    rs = w.server.create("replicasets", "default", rs_manifest(replicas=0))
    w.run(1)
    ctrl = w.controller
    ctrl.expectations.expect_creations("default/web", 3)
    ctrl.delete_rs(DeletedFinalStateUnknown("default/web", rs))
    assert ctrl.expectations.get_expectations("default/web")[1] is False
    assert "default/web" in ctrl.queue.snapshot()["queue"]


def test_recreated_replica_set_with_new_uid_starts_clean():
    w = World().start()
    old = w.server.create("replicasets", "default", rs_manifest(replicas=0))
    w.run(1)
    ctrl = w.controller
    ctrl.expectations.expect_creations("default/web", 3)
    new = {**old, "metadata": {**old["metadata"], "uid": "other", "resourceVersion": "999"}}
    ctrl.update_rs(old, new)
    assert ctrl.expectations.get_expectations("default/web")[1] is False


# -- status (spec §11) -------------------------------------------------------------------------


def ready_pod(name, ready=True, labels=None):
    return {
        "metadata": {"name": name, "namespace": "default", "labels": labels or {"app": "web"}},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": rfc3339(0)}],
        },
    }


def test_calculate_status_sets_replica_failure_once_and_keeps_it_untouched():
    rs = rs_manifest(replicas=3)
    rs["metadata"]["generation"] = 1
    rs["status"] = {}
    sel = selector_from_set({"app": "web"})
    status = calculate_status(rs, [ready_pod("a")], None, RuntimeError("quota"), True, 10.0, sel)
    (cond,) = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "ReplicaFailure",
        "True",
        "FailedCreate",
        "quota",
    )
    rs2 = {**rs, "status": status}
    again = calculate_status(rs2, [ready_pod("a")], None, RuntimeError("other"), True, 20.0, sel)
    assert again["conditions"] == [cond]
    cleared = calculate_status(rs2, [ready_pod("a")], None, None, True, 30.0, sel)
    assert "conditions" not in cleared


def test_calculate_status_counts_fully_labeled_ready_and_terminating():
    rs = rs_manifest(replicas=3)
    rs["spec"]["template"]["metadata"]["labels"] = {"app": "web", "tier": "a"}
    sel = selector_from_set({"app": "web", "tier": "a"})
    pods = [ready_pod("a", labels={"app": "web", "tier": "a"}), ready_pod("b", ready=False), ready_pod("c")]
    status = calculate_status(rs, pods, [ready_pod("t")], None, True, 10.0, sel)
    assert (
        status["replicas"],
        status["fullyLabeledReplicas"],
        status["readyReplicas"],
        status["availableReplicas"],
    ) == (3, 1, 2, 2)
    assert status["terminatingReplicas"] == 1
    assert "terminatingReplicas" not in calculate_status(rs, pods, [ready_pod("t")], None, False, 10.0, sel)


def test_status_update_makes_no_call_when_nothing_changed():
    w = World()
    rs = w.server.create("replicasets", "default", rs_manifest(replicas=0))
    rs = w.server.update(
        "replicasets",
        "default",
        "web",
        {**rs, "status": {"replicas": 0, "observedGeneration": 1}},
        subresource="status",
    )
    before = len(w.server.requests)
    task = w.kernel.spawn(update_replica_set_status(w.client, "replicasets", rs, {"replicas": 0}))
    w.kernel.run()
    assert task.result() is rs
    assert len(w.server.requests) == before


def test_status_update_retries_once_after_a_conflict_with_a_fresh_get():
    w = World()
    stale = w.server.create("replicasets", "default", rs_manifest(replicas=0))
    w.server.patch("replicasets", "default", "web", {"metadata": {"labels": {"x": "y"}}})
    task = w.kernel.spawn(update_replica_set_status(w.client, "replicasets", stale, {"replicas": 0}))
    w.kernel.run()
    verbs = [(r["verb"], r["resource"], r["code"]) for r in w.server.requests if r["client"] == "replicaset-controller"]
    assert verbs == [
        ("update", "replicasets/status", 409),
        ("get", "replicasets", 200),
        ("update", "replicasets/status", 200),
    ]
    assert task.result()["status"]["observedGeneration"] == 1


def test_status_update_gives_up_after_the_second_failure():
    w = World()
    stale = w.server.create("replicasets", "default", rs_manifest(replicas=0))
    w.server.interceptors.append(
        lambda req: ApiError(500, "InternalError", "etcd is down") if req.subresource == "status" else None
    )
    task = w.kernel.spawn(update_replica_set_status(w.client, "replicasets", stale, {"replicas": 0}))
    w.kernel.raise_task_failures = False
    w.kernel.run()
    assert isinstance(task._exception, ApiError)
    assert [r["verb"] for r in w.server.requests if r["client"] == "replicaset-controller"] == [
        "update",
        "get",
        "update",
    ]


# -- consistency store (spec §14) --------------------------------------------------------------


def test_sync_is_refused_until_the_cache_has_seen_the_controllers_own_writes():
    w = World(watch_latency=1.0).start()
    w.server.create("replicasets", "default", rs_manifest(replicas=2))
    w.run(1.2)  # delivered at 1.0 + sync + creates
    w.controller.queue.add("default/web")
    w.run(0.3)
    skips = w.controller.metrics.stale_sync_skips_total
    assert skips.get(("", "pods"), 0) + skips.get(("apps", "replicasets"), 0) >= 1
    w.run(5)
    assert len(w.creates()) == 2


def test_rc_controller_has_no_consistency_store():
    w = World(kind=REPLICATION_CONTROLLER)
    assert w.controller.consistency.ensure_ready("default/legacy") is None
    assert w.controller.queue.snapshot()["name"] == "replicationmanager"


# -- ReplicationController adapter (spec §16) --------------------------------------------------


def test_rc_adapter_creates_pods_owned_by_the_rc_with_v1_refs_and_rc_events():
    w = World(kind=REPLICATION_CONTROLLER).start()
    rc = w.server.create("replicationcontrollers", "default", rc_manifest(replicas=2))
    w.run()
    pods = w.pods()
    assert len(pods) == 2
    ref = pods[0]["metadata"]["ownerReferences"][0]
    assert (ref["apiVersion"], ref["kind"], ref["uid"]) == ("v1", "ReplicationController", rc["metadata"]["uid"])
    rc = w.server.get("replicationcontrollers", "default", "legacy")
    assert rc["status"]["replicas"] == 2
    assert "terminatingReplicas" not in rc["status"]
    events = list(w.server.objects("events"))
    assert {e["source"]["component"] for e in events} == {"replication-controller"}
    assert {e["involvedObject"]["kind"] for e in events} == {"ReplicationController"}


def test_rc_controller_ignores_pods_owned_by_a_replica_set_of_the_same_name():
    w = World(kind=REPLICATION_CONTROLLER).start()
    rc = w.server.create("replicationcontrollers", "default", rc_manifest(replicas=0))
    w.run(1)
    ref = {"kind": "ReplicaSet", "name": "legacy", "uid": rc["metadata"]["uid"], "controller": True}
    assert w.controller.resolve_controller_ref("default", ref) is None


# -- restart -----------------------------------------------------------------------------------


def test_restart_loses_queue_and_expectations_and_relists():
    w = World().start()
    w.server.create("replicasets", "default", rs_manifest(replicas=2))
    w.run()
    w.controller.expectations.expect_creations("default/web", 9)
    w.controller.restart()
    assert w.controller.expectations.keys() == []
    assert not w.controller.pod_informer.has_synced()
    w.run()
    assert w.controller.pod_informer.has_synced()
    assert w.controller.restarts == 1
    lists = [r for r in w.server.requests if r["verb"] == "list" and r["client"] == "replicaset-controller"]
    assert len(lists) == 4


def test_workers_can_shrink_and_grow_at_run_time():
    w = World().start()
    ctrl = w.controller
    ctrl.set_workers(2)
    w.run(0.1)
    assert [s.stage for s in ctrl.workers] == ["idle", "idle", "stopped", "stopped", "stopped"]
    ctrl.set_workers(4)
    w.run(0.1)
    assert [s.stage for s in ctrl.workers] == ["idle", "idle", "idle", "idle", "stopped"]
    w.server.create("replicasets", "default", rs_manifest(replicas=2))
    w.run()
    assert len(w.creates()) == 2


def test_restart_mid_slow_start_abandons_in_flight_creates():
    w = World().start()
    w.server.create("replicasets", "default", rs_manifest(replicas=20))
    w.kernel.advance(0.022)  # a few slow-start batches are out
    sent_before = len(w.creates())
    assert 0 < sent_before < 20
    w.controller.restart()
    w.run(10)
    assert len([p for p in w.pods()]) == 20  # the new incarnation counts what exists and creates the rest


def test_scale_down_reports_the_sorting_deletion_age_ratio_of_ready_victims():
    w = World().start()
    w.server.create("replicasets", "default", rs_manifest(replicas=4))
    w.run()
    for pod in w.pods():  # make them ready: created at t=0 (whole seconds), now ~5.5 s
        status = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(1)}],
        }
        w.server.update("pods", "default", pod["metadata"]["name"], {**pod, "status": status}, subresource="status")
    w.run(1)
    w.server.patch("replicasets", "default", "web", {"spec": {"replicas": 1}}, subresource="scale")
    w.run()
    histogram = w.controller.metrics.sorting_deletion_age_ratio
    assert histogram.count == 3
    assert histogram.sum == 3.0  # every pod is the same age: ratio 1 (integer division)


def test_claim_errors_collapse_identical_messages():
    from controlplane.controller_ref_manager import ClaimError

    assert str(ClaimError([RuntimeError("boom"), RuntimeError("boom")])) == "boom"
    assert str(ClaimError([RuntimeError("a"), RuntimeError("b"), RuntimeError("a")])) == "[a, b]"


def test_adoption_is_refused_with_upstreams_message_when_the_controller_is_gone():
    from controlplane.controller_ref_manager import recheck_deletion_timestamp

    w = World()
    original = {"kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default", "uid": "old"}}

    async def gone():
        return await w.client.get("replicasets", "default", "web")

    task = w.kernel.spawn(recheck_deletion_timestamp(gone, original)())
    w.kernel.run()
    assert str(task.result()) == 'can\'t recheck DeletionTimestamp: replicasets.apps "web" not found'
    deleted = {"metadata": {"name": "web", "namespace": "default", "uid": "old", "deletionTimestamp": rfc3339(10)}}

    async def deleting():
        return deleted

    task = w.kernel.spawn(recheck_deletion_timestamp(deleting, original)())
    w.kernel.run()
    assert str(task.result()) == "default/web has just been deleted at 2026-01-01 00:00:10 +0000 UTC"

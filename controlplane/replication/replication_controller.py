"""The v1.5 ReplicationManager (`pkg/controller/replication/replication_controller.go` at K15 =
kubernetes/kubernetes@a0dadf16f9578b7e926945a85ea34b1621cde796; spec
`shared/spec/v1.5-replication-manager.md`, cited as R<n> and §<n> below).

Guarantees
----------
* Handlers only enqueue keys and touch expectations (§5); pod events are routed to *one* RC by
  label selector, the oldest matching one, through the lookup cache (`get_pod_controller`, §4).
  Expectations are dropped only by a sync that finds its RC gone (R5.1, R7.2).
* `sync_replication_controller(key)` follows R7.0-R7.8 step by step: the 100 ms sleep and
  immediate re-add while the pod store is not synced (R7.1, no WaitForCacheSync); expectations
  read before listing (R7.b); with the garbage collector enabled Classify / AdoptPod / ReleasePod
  on every pod of the namespace, adoption errors swallowed (R7.e), otherwise every active pod the
  selector matches counts (R7.f); `manage_replicas` (§9: all creates at once, the 6-key delete
  order, NotFound on delete an error); status by `calculate_status` with the strict availability
  boundary and written as v1.36 does (§11); no `AddAfter` anywhere (§11.3).
* Each stage of a sync is one `sync.stage` record named as in
  `controlplane.controllers.stages.REPLICATION_MANAGER_STAGES` (upstream function per stage),
  framed by `sync.start` (with `version`) and `sync.end`, like the v1.36 controller's.
* The private RC informer resyncs every 10 minutes and `update_rc` always enqueues (R2.1, R5.2);
  the pod informer is the shared one, with the simulation's resync period.
* Nothing here reads the wall clock: "now" and every delay are the kernel's.

How it is built (for whoever adds the next version: a Deployment controller, a v1.7 RC)
---------------------------------------------------------------------------------------
`ReplicationManager` is its own controller on the shared runtime
(controlplane.controllers.runtime), not a ReplicaSet controller: the runtime gives it the
rate-limited workqueue named `replicationmanager` (its registry entry,
controlplane.controllers.registry), the worker loop (Forget on success, AddRateLimited on error,
a raising sync contained), manual workers and `sync_next`, `stop`/`restart`, trace staging
(`_stage`, `_request`, `_yield`, `_framed_sync`), concurrent pod writes (`_gather`) and
`snapshot`. Its own: what `_build` constructs (the informers, the UID-tracking expectations, the
v1.5 pod control, the lookup cache), `start` (workers at once, no cache wait), the informer
handlers (`enqueue_controller`, `update_rc`, `add_pod`, `update_pod`, `delete_pod`),
`sync_handler` (= `sync_replication_controller`) and `manage_replicas`, and `version`.
Where upstream v1.5 shares code with today's ReplicaSet controller it reuses that code:
`kinds.REPLICATION_CONTROLLER` (selectors), `calculate_status` and `update_replica_set_status`
(§11), the status counts the trace shows, the `ReplicaSetMetrics` and no-op consistency store
every controller's snapshot shows. Version-specific helpers live beside it: `controller_utils`
(ActivePods, pod template, RealPodControl), `controller_ref_manager` (Classify/Adopt/Release),
`lookup_cache`. Its stages, with their upstream lines, are
`controlplane.controllers.stages.REPLICATION_MANAGER_STAGES`.

Decisions where upstream is nondeterministic (spec §15.3)
---------------------------------------------------------
* The `n` creates (or deletes) of a sync are issued in index order (creates 0..n-1, deletes in
  victim order), each a concurrent task; a failing call lowers the expectations right when it
  fails; "the first error" is the first failing call in that order.
* Lister order is the informer cache's. With the garbage collector enabled: the pods whose
  ControllerRef names this RC's UID, in the order the cache indexed them so, then the
  namespace's orphans, likewise (upstream lists the whole namespace and Classify skips every pod
  another controller owns; an index by ControllerRef UID leaves those out before Classify, which
  decides the same and keeps a sync's cost proportional to its own pods). With it disabled: the
  namespace's pods in the order the cache first stored them, filtered by the selector. It is the
  order of Classify and adoption, the unsorted scale-to-zero victims (R9.6) and the input to the
  sort.
* The `ActivePods` sort is stable (`controller_utils.sort_active_pods`): ties keep lister order.
* Lookup-cache keys are the exact `(namespace, frozenset(labels))`, not an adler32 hash (R4.4).
* The RC informer's 10-minute resync timer starts when the manager is built (at start, and anew
  at each restart); resyncs fall at that phase.
* A relist (after a dropped watch) does not re-announce unchanged objects (the simulator's
  informer contract); v1.5's informer delivered them as updates, which `update_rc` would have
  enqueued. Only visible after a `watchFault drop` of the RC watch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.apiserver import ApiError
from controlplane.apiserver.errors import is_not_found
from controlplane.consistency import NoopConsistencyStore
from controlplane.controller_ref_manager import AdoptError, ClaimError
from controlplane.controllers.config import ControllerConfig
from controlplane.controllers.runtime import ControllerRuntime, SyncContext
from controlplane.events import EventRecorder
from controlplane.expectations import UIDTrackingControllerExpectations
from controlplane.informers import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    ResourceEventHandler,
    SharedInformer,
    deletion_handling_meta_namespace_key,
    meta_namespace_key,
    split_meta_namespace_key,
)
from controlplane.kernel import Kernel, parse_rfc3339
from controlplane.labels import selector_from_set
from controlplane.pod_control import PodControlError
from controlplane.podutil import controller_ref, filter_active_pods, is_pod_ready, pod_key
from controlplane.replicaset.kinds import REPLICATION_CONTROLLER
from controlplane.replicaset.metrics import ReplicaSetMetrics
from controlplane.replicaset.replica_set import _status_counts
from controlplane.replicaset.replica_set_utils import calculate_status, status_changes, update_replica_set_status
from controlplane.replication.controller_ref_manager import PodControllerRefManager
from controlplane.replication.controller_utils import (
    RealPodControl,
    is_ready_condition_available,
    new_controller_ref,
    sort_active_pods,
)
from controlplane.replication.lookup_cache import DEFAULT_LOOKUP_CACHE_SIZE, MatchingCache, cache_key
from controlplane.trace import NULL_TRACE, Trace

Obj = dict[str, Any]

FULL_CONTROLLER_RESYNC_PERIOD = 600.0  # the private RC informer's resync (10 min)
POD_STORE_SYNCED_POLL_PERIOD = 0.1  # a sync sleeps this long, then re-adds its key (R7.1)


POD_CONTROLLER_UID_INDEX = "controllerUID"


class _PodControllerUIDIndex:
    """Pods by the UID their ControllerRef names (`<namespace>/<uid>`), orphans under
    `<namespace>`: what Classify can use, found without reading the namespace's other pods.
    The hint `unchanged(old, new)` as the v1.36 pod index's: the values depend only on the
    namespace and the ownerReferences list."""

    __slots__ = ()

    def __call__(self, pod: Obj) -> tuple[str, ...]:
        meta = pod["metadata"]
        namespace = meta.get("namespace", "")
        ref = controller_ref(pod)
        return (namespace if ref is None else f"{namespace}/{ref.get('uid')}",)

    @staticmethod
    def unchanged(old: Obj, new: Obj) -> bool:
        old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
        return old_meta.get("ownerReferences") is new_meta.get("ownerReferences") and old_meta.get(
            "namespace", ""
        ) == new_meta.get("namespace", "")


def _selector_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """`labels.Set(selector).AsSelector().Matches(labels)`: every pair present."""
    return all(labels.get(key) == value for key, value in selector.items())


def _overlapping_order(rc: Obj) -> tuple[float, str]:
    """`OverlappingControllers.Less`: older first, then by name."""
    meta = rc["metadata"]
    created = meta.get("creationTimestamp")
    return (parse_rfc3339(created) if created else float("-inf"), meta["name"])


class ReplicationManager(ControllerRuntime):
    """The v1.5 ReplicationManager, on the shared controller runtime. `garbage_collector_enabled`
    is kube-controller-manager's `--enable-garbage-collector` (ControllerRef handling on or off,
    R7.f); `lookup_cache_size` is `--replication-controller-lookup-cache-size`."""

    version = "v1.5"
    pod_control: RealPodControl

    def __init__(
        self,
        kernel: Kernel,
        client: Any,
        config: ControllerConfig | None = None,
        *,
        trace: Trace | None = None,
        garbage_collector_enabled: bool = True,
        lookup_cache_size: int = DEFAULT_LOOKUP_CACHE_SIZE,
    ) -> None:
        self.garbage_collector_enabled = garbage_collector_enabled
        self.lookup_cache_size = lookup_cache_size
        super().__init__(
            kernel, client, REPLICATION_CONTROLLER.spec, config or ControllerConfig(), trace=trace or NULL_TRACE
        )
        self.kind = REPLICATION_CONTROLLER  # the RC's selectors, as the v1.36 adapter reads them
        self.sync_handler = self.sync_replication_controller
        self._build()

    # -- construction: newReplicationManager (R2.1) -----------------------------------------
    def _build(self) -> None:
        kernel, cfg, trace = self.kernel, self.config, self.trace
        self.lookup_cache = MatchingCache(self.lookup_cache_size)
        self._build_informers()
        self.queue = self._new_queue()
        self.expectations = UIDTrackingControllerExpectations(kernel, trace=trace, controller=self.spec.name)
        self.expectations.enabled = cfg.expectations
        # v1.5 has no consistency store (the gate is v1.36's, for ReplicaSets) and exports no
        # metrics: every controller's snapshot shows both, here the no-op store and zeros.
        self.consistency = NoopConsistencyStore()
        self.metrics = ReplicaSetMetrics()
        self.recorder = EventRecorder(kernel, self.client, self.spec.component, trace=trace)
        self.pod_control = RealPodControl(self.client, self.recorder)
        self._reset_workers()
        # A field, as upstream, so a test can say the pod store has not synced (TestRCManagerNotReady).
        self.pod_store_synced = self.pod_informer.has_synced

    @property
    def informers(self) -> tuple[SharedInformer, ...]:
        return (self.pod_informer, self.rs_informer)

    def _build_informers(self) -> None:
        kernel, kind, cfg, trace = self.kernel, self.kind, self.config, self.trace
        # The shared pod informer: the factory's resync period.
        self.pod_informer = SharedInformer(
            kernel,
            self.client,
            "pods",
            name=f"{kind.name}/pods",
            indexers={POD_CONTROLLER_UID_INDEX: _PodControllerUIDIndex()},
            resync_period=cfg.resync_period,
            watch_latency=cfg.watch_latency,
            trace=trace,
        )
        # The private RC informer (`cache.NewIndexerInformer`): 10-minute resync.
        self.rs_informer = SharedInformer(
            kernel,
            self.client,
            kind.resource,
            name=f"{kind.name}/{kind.resource}",
            resync_period=FULL_CONTROLLER_RESYNC_PERIOD,
            watch_latency=cfg.watch_latency,
            trace=trace,
        )
        self.rs_informer.add_event_handler(
            ResourceEventHandler(self.enqueue_controller, self.update_rc, self.enqueue_controller)
        )
        self.pod_informer.add_event_handler(ResourceEventHandler(self.add_pod, self.update_pod, self.delete_pod))

    @property
    def rc_informer(self) -> SharedInformer:
        """The private RC informer (also `rs_informer`, the name every controller has)."""
        return self.rs_informer

    def set_consistency_gate(self, enabled: bool) -> None:
        """Feature gate StaleControllerConsistencyReplicaSet: kept in the config; v1.5 has no
        consistency store either way."""
        self.config.stale_controller_consistency = enabled

    def set_resync_period(self, period: float) -> None:
        """The shared (pod) informer's resync period; the private RC informer keeps 10 minutes."""
        self.config.resync_period = period
        self.pod_informer.set_resync_period(period)

    # -- Run (R2.3) -------------------------------------------------------------------------
    def start(self) -> None:
        """`Run(workers)`: the RC informer, the pod informer, then the workers at once: no
        WaitForCacheSync (each sync checks the pod store instead, R7.1)."""
        self._running = True
        self.rs_informer.start()
        self.pod_informer.start()
        self._caches_synced = True  # workers may run: nothing to wait for
        self.set_workers(self.config.workers)

    # -- the lookup (§4) --------------------------------------------------------------------
    def get_pod_controllers(self, pod: Obj) -> list[Obj]:
        """Lister `GetPodControllers`: RCs of the pod's namespace, in lister order, whose
        non-empty selector matches the pod's labels; none for a pod without labels (R4.1)."""
        labels = pod["metadata"].get("labels")
        if not labels:
            return []
        namespace = pod["metadata"].get("namespace", "")
        return [
            rc
            for rc in self.rs_informer.indexer.by_index(NAMESPACE_INDEX, namespace)
            if (selector := rc["spec"].get("selector")) and _selector_matches(selector, labels)
        ]

    def is_cache_valid(self, pod: Obj, cached: Obj) -> bool:
        """`isCacheValid` (R4.3): the cached RC still exists *by name* and the cached copy's
        selector still matches the pod."""
        meta = cached["metadata"]
        if self.rs_informer.indexer.get(meta["namespace"], meta["name"]) is None:
            return False
        selector = cached["spec"].get("selector")
        pod_meta = pod["metadata"]
        return (
            pod_meta.get("namespace", "") == meta["namespace"]
            and bool(selector)
            and _selector_matches(selector, pod_meta.get("labels") or {})
        )

    def get_pod_controller(self, pod: Obj) -> Obj | None:
        """`getPodController` (R4.2): the cached RC if still valid, else the oldest matching RC
        (creation time, then name), which is then cached."""
        meta = pod["metadata"]
        key = cache_key(meta.get("namespace", ""), meta.get("labels"))
        cache = self.lookup_cache
        cached = cache.get(key)
        if cached is not None and self.is_cache_valid(pod, cached):
            cache.hits += 1
            return cached
        cache.misses += 1
        rcs = self.get_pod_controllers(pod)
        if not rcs:
            return None
        if len(rcs) > 1:
            rcs = sorted(rcs, key=_overlapping_order)
            if self.trace.enabled:
                labels = ",".join(f"{k}={v}" for k, v in sorted((meta.get("labels") or {}).items()))
                self.trace.emit(
                    "controller.log",
                    controller=self.kind.name,
                    level="error",
                    message=(
                        "user error! more than one replication controller is selecting pods with labels: "
                        f"{labels} ({', '.join(rc['metadata']['name'] for rc in rcs)}; "
                        f"{rcs[0]['metadata']['name']} is used)"
                    ),
                )
        cache.add(key, rcs[0])
        return rcs[0]

    # -- RC handlers (R5.1, R5.2) -----------------------------------------------------------
    def enqueue_controller(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """RC add and RC delete: only enqueue (no expectations, no cache change)."""
        self.queue.add(deletion_handling_meta_namespace_key(obj))

    def update_rc(self, old: Obj, cur: Obj) -> None:
        """Every update, a resync and our own status writes included, enqueues; a selector
        change (deep-equal on the map) also empties the lookup cache. No UID comparison."""
        if old["spec"].get("selector") != cur["spec"].get("selector"):
            self.lookup_cache.invalidate_all()
        self.enqueue_controller(cur)

    # -- pod handlers (R5.3-R5.5) -----------------------------------------------------------
    def add_pod(self, pod: Obj) -> None:
        rc = self.get_pod_controller(pod)  # looked up first, the deletion check second (R5.3)
        if rc is None:
            return
        if pod["metadata"].get("deletionTimestamp"):
            self.delete_pod(pod)
            return
        key = meta_namespace_key(rc)
        # Whoever created the pod: the oldest matching RC's `add` goes down (D2).
        self.expectations.creation_observed(key)
        self.queue.add(key)

    def update_pod(self, old: Obj, cur: Obj) -> None:
        cur_meta, old_meta = cur["metadata"], old["metadata"]
        if cur_meta.get("resourceVersion") == old_meta.get("resourceVersion"):
            return  # a periodic resync of the pod informer
        label_changed = cur_meta.get("labels") != old_meta.get("labels")
        if cur_meta.get("deletionTimestamp"):
            self.delete_pod(cur)
            if label_changed:
                self.delete_pod(old)  # the old labels may map to another RC
            return
        if label_changed:
            old_rc = self.get_pod_controller(old)
            if old_rc is not None:
                self.enqueue_controller(old_rc)
        cur_rc = self.get_pod_controller(cur)
        if cur_rc is not None:
            self.enqueue_controller(cur_rc)
            self._pod_update_routed(old, cur, cur_rc)

    def _pod_update_routed(self, old: Obj, cur: Obj, rc: Obj) -> None:
        """After `update_pod` enqueued the pod's RC: nothing in v1.5.0 (no AddAfter, §11.3)."""

    def delete_pod(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(pod, dict):
            return
        rc = self.get_pod_controller(pod)  # with the deleted pod's (possibly stale) labels
        if rc is None:
            return
        key = meta_namespace_key(rc)
        self.expectations.deletion_observed(key, pod_key(pod))
        self.queue.add(key)

    # -- syncReplicationController (§7) -----------------------------------------------------
    async def sync_replication_controller(self, key: str, worker: int | None = None) -> Exception | None:
        return await self._framed_sync(key, worker, self._sync_replication_controller)

    def _sync_start_fields(self) -> dict[str, Any]:
        return {"version": self.version}

    async def _sync_replication_controller(self, ctx: SyncContext) -> Exception | None:
        key = ctx.key
        # R7.1: no WaitForCacheSync; this worker blocks 100 ms and the key goes round again.
        if not self.pod_store_synced():
            self._stage(ctx, "podStoreSynced", synced=False, sleep=POD_STORE_SYNCED_POLL_PERIOD)
            await self.kernel.sleep(POD_STORE_SYNCED_POLL_PERIOD)
            self.queue.add(key)  # the key is processing: it goes back at Done, failures forgotten
            ctx.requeue = {"decision": "immediate"}
            return None
        self._stage(ctx, "podStoreSynced", synced=True)
        await self._yield()
        try:
            namespace, name = split_meta_namespace_key(key)
        except ValueError as exc:
            return exc
        # R7.2: "not exists" is checked first; the expectations go only here (R5.1).
        rc = self.rs_informer.indexer.get(namespace, name)
        if rc is None:
            self._stage(ctx, "get", found=False)
            self.expectations.delete_expectations(key)
            ctx.requeue = {"decision": "none"}
            return None
        self._stage(ctx, "get", found=True, resourceVersion=rc["metadata"].get("resourceVersion"))
        await self._yield()
        # R7.3: before listing, so a pod arriving in between cannot cause an extra create (R7.b).
        why = self.expectations.satisfied_reason(key)  # the same instant: the case that answers
        rc_needs_sync = self.expectations.satisfied_expectations(key)
        record, _ = self.expectations.get_expectations(key)
        add, dele = record.get_expectations() if record is not None else (0, 0)
        self._stage(ctx, "expectations", satisfied=rc_needs_sync, why=why, add=add, delete=dele)
        await self._yield()
        selector = rc["spec"].get("selector") or {}
        indexer = self.pod_informer.indexer
        if self.garbage_collector_enabled:
            # Upstream lists the whole namespace and Classify skips the pods other controllers
            # own; the index leaves those out up front (same result, see the docstring).
            uid = rc["metadata"]["uid"]
            candidates = indexer.by_index(POD_CONTROLLER_UID_INDEX, f"{namespace}/{uid}") + indexer.by_index(
                POD_CONTROLLER_UID_INDEX, namespace
            )
            claimed = await self._classify_adopt_release(ctx, rc, candidates)
            if isinstance(claimed, Exception):
                return claimed
            filtered_pods = claimed
        else:
            # R7.f: every pod the selector matches, whatever its ownerReferences say.
            in_namespace = indexer.by_index(NAMESPACE_INDEX, namespace)
            matching = [p for p in in_namespace if _selector_matches(selector, p["metadata"].get("labels") or {})]
            filtered_pods = filter_active_pods(matching)
            self._stage(ctx, "list", scope="selector", pods=len(matching), active=len(filtered_pods))
            await self._yield()
        if self.trace.enabled:
            ctx.counted = [p["metadata"]["name"] for p in filtered_pods]
        # R7.5
        manage_err: Exception | None = None
        if rc_needs_sync and not rc["metadata"].get("deletionTimestamp"):
            manage_err = await self.manage_replicas(filtered_pods, rc, ctx)
        else:
            reason = "expectations not satisfied" if not rc_needs_sync else "being deleted"
            self._stage(ctx, "manage", action="skipped", reason=reason)
        # R7.6-R7.8: the status is written even when manageReplicas was skipped (R7.c).
        template_labels = ((rc["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
        new_status = calculate_status(
            rc,
            filtered_pods,
            None,
            manage_err,
            False,
            self.kernel.now,
            selector_from_set(template_labels),
            is_available=is_ready_condition_available,
        )
        try:
            updated = await update_replica_set_status(self.client, self.kind.resource, rc, new_status)
        except ApiError as exc:
            self._stage(ctx, "status", written=False, error=exc.message)
            return exc  # takes precedence over manage_err
        written = updated is not rc
        self._stage(
            ctx,
            "status",
            written=written,
            status=_status_counts(updated),
            changed=status_changes(rc, updated) if written and self.trace.enabled else {},
        )
        ctx.requeue = {"decision": "none"}  # §11.3: never AddAfter
        return manage_err

    async def _classify_adopt_release(self, ctx: SyncContext, rc: Obj, pods: list[Obj]) -> list[Obj] | Exception:
        """R7.4's GC branch: the pods this RC controls after adopting what it can, or the
        aggregate release error (the key is then re-added at once, and rate-limited too)."""
        self._stage(ctx, "list", scope="namespace", pods=len(pods))
        await self._yield()
        manager = PodControllerRefManager(self.pod_control, rc, selector_from_set(rc["spec"].get("selector") or {}))
        controlled, orphans, not_matching = manager.classify(pods)
        self._stage(
            ctx,
            "classify",
            controlled=len(controlled),
            orphans=len(orphans),
            controlledNotMatching=len(not_matching),
        )
        await self._yield()
        failed: list[Obj] = []
        for pod in orphans:
            try:
                await manager.adopt_pod(pod)
            except (ApiError, AdoptError) as exc:
                # R7.e: logged (not NotFound), never returned; the pod is simply not counted.
                if not (isinstance(exc, ApiError) and is_not_found(exc)):
                    message = exc.message if isinstance(exc, ApiError) else str(exc)
                    failed.append({"pod": pod["metadata"]["name"], "error": message})
                continue
            controlled.append(pod)
        self._stage(ctx, "adopt", adopted=list(manager.adopted), failed=failed)
        await self._yield()
        errors: list[Exception] = []
        for pod in not_matching:
            try:
                await manager.release_pod(pod)
            except ApiError as exc:
                errors.append(exc)
        error = ClaimError(errors) if errors else None
        self._stage(
            ctx,
            "release",
            released=list(manager.released),
            failed=len(errors),
            error=None if error is None else str(error),
        )
        await self._yield()
        if error is not None:
            self.queue.add(ctx.key)  # R3.2: at once, and rate-limited by the worker too
            return error
        return controlled

    # -- manageReplicas (§9) ----------------------------------------------------------------
    async def manage_replicas(self, filtered_pods: list[Obj], rs: Obj, ctx: SyncContext) -> Exception | None:
        rc = rs
        key = meta_namespace_key(rc)
        replicas = rc["spec"].get("replicas", 1)
        diff = len(filtered_pods) - replicas
        have = len(filtered_pods)
        if diff == 0:
            self._stage(ctx, "manage", action="none", have=have, want=replicas)
            await self._yield()
            return None
        burst = self.config.burst_replicas
        namespace = rc["metadata"]["namespace"]
        if diff < 0:
            n = min(-diff, burst)
            self.expectations.expect_creations(key, n)  # before any create goes out
            self._stage(ctx, "manage", action="create", count=n, have=have, want=replicas, allAtOnce=True)
            await self._yield()
            ref = new_controller_ref(rc) if self.garbage_collector_enabled else None
            template = rc["spec"]["template"]

            async def create_one() -> Exception | None:
                self._request(ctx, "create")
                await self._yield()
                try:
                    await self.pod_control.create_pods(namespace, template, rc, ref)
                except PodControlError as exc:
                    # "Failed creation, decrementing expectations": this pod will never be observed.
                    self.expectations.creation_observed(key)
                    return exc
                return None

            # R9.1: the whole burst at once, no slow start.
            results = await self._gather([create_one() for _ in range(n)], "create")
            errors = [e for e in results if e is not None]
            self._stage(
                ctx,
                "create",
                issued=n,
                succeeded=n - len(errors),
                failed=len(errors),
                error=str(errors[0]) if errors else None,
            )
            return errors[0] if errors else None
        n = min(diff, burst)
        # R9.6: "No need to sort pods if we are about to delete all of them".
        ordered = sort_active_pods(filtered_pods) if replicas != 0 else filtered_pods
        victims = ordered[:n]
        self.expectations.expect_deletions(key, [pod_key(p) for p in victims])
        self._stage(
            ctx,
            "manage",
            action="delete",
            count=n,
            have=have,
            want=replicas,
            pods=[p["metadata"]["name"] for p in victims],
        )

        async def delete_one(victim: Obj) -> Exception | None:
            self._request(ctx, "delete", victim["metadata"]["name"])
            await self._yield()
            try:
                await self.pod_control.delete_pod(namespace, victim["metadata"]["name"], rc)
            except (ApiError, PodControlError) as exc:
                # Any error, NotFound too (R9.4): the deletion will not be observed.
                self.expectations.deletion_observed(key, pod_key(victim))
                return exc
            return None

        results = await self._gather([delete_one(v) for v in victims], "delete")
        errors = [e for e in results if e is not None]
        self._stage(
            ctx,
            "delete",
            deleted=len(victims) - len(errors),
            failed=len(errors),
            error=str(errors[0]) if errors else None,
        )
        return errors[0] if errors else None

    # -- inspection -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        snap = ControllerRuntime.snapshot(self)
        snap["garbageCollectorEnabled"] = self.garbage_collector_enabled
        snap["lookupCache"] = self.lookup_cache.snapshot()
        return snap


class LateReplicationManager(ReplicationManager):
    """ "late-1.5 master" (K15m, spec §13): v1.5.0 plus one behavioural change, upstream
    267dae6435e1 (#38076): a pod that turns ready requeues its RC after `minReadySeconds`
    (no +1 s), so availability is recomputed then instead of at the next event."""

    version = "v1.5-late"

    def _pod_update_routed(self, old: Obj, cur: Obj, rc: Obj) -> None:
        min_ready = rc["spec"].get("minReadySeconds") or 0
        if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
            self.queue.add_after(meta_namespace_key(rc), float(min_ready))


def new_replication_manager(
    kernel: Kernel, client: Any, config: ControllerConfig, *, trace: Trace, flags: Mapping[str, Any]
) -> ReplicationManager:
    """The registry's factory of v1.5, with kube-controller-manager v1.5's flags from the
    scenario's config (`enableGarbageCollector`, `lookupCacheSize`)."""
    return ReplicationManager(
        kernel,
        client,
        config,
        trace=trace,
        garbage_collector_enabled=flags["enableGarbageCollector"],
        lookup_cache_size=flags["lookupCacheSize"],
    )


def new_late_replication_manager(
    kernel: Kernel, client: Any, config: ControllerConfig, *, trace: Trace, flags: Mapping[str, Any]
) -> LateReplicationManager:
    """The registry's factory of v1.5-late (flags as v1.5's)."""
    return LateReplicationManager(
        kernel,
        client,
        config,
        trace=trace,
        garbage_collector_enabled=flags["enableGarbageCollector"],
        lookup_cache_size=flags["lookupCacheSize"],
    )

"""The ReplicaSet controller (pkg/controller/replicaset/replica_set.go), also serving
ReplicationControllers through `kinds.REPLICATION_CONTROLLER` (spec §16).

Guarantees
----------
* Handlers only enqueue keys and adjust expectations (spec §4); every decision is made in
  `sync_replica_set(key)` (spec §6), which is the `sync_handler` field so tests can swap it.
* The workqueue, the workers (Forget / AddRateLimited, spec §5), a raising sync's containment,
  manual workers, the `sync.*` records and the parking of idle workers are the shared runtime's
  (controlplane.controllers.runtime), with the guarantees stated there.
* Each stage of a sync is one `sync.stage` trace record, in upstream's order: consistency,
  get, expectations, list, claim, manage (with one `batch` record per slow-start batch and one
  `delete` record per scale-down), status, requeue (the table with the upstream line of each:
  controlplane.controllers.stages.REPLICA_SET_STAGES). `sync.start` / `sync.end` frame it.
* Nothing here reads the wall clock: "now" is the kernel's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.apiserver import ApiError
from controlplane.apiserver.errors import has_status_cause, is_not_found
from controlplane.consistency import NoopConsistencyStore, RealConsistencyStore
from controlplane.controller_ref_manager import PodControllerRefManager, recheck_deletion_timestamp
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
from controlplane.kernel import Kernel
from controlplane.labels import Selector, selector_from_set
from controlplane.pod_control import PodControlError, RealPodControl
from controlplane.podutil import (
    controller_ref,
    filter_active_pods,
    filter_terminating_pods,
    find_min_next_pod_availability_check,
    get_pods_to_delete,
    is_pod_active,
    is_pod_ready,
    new_controller_ref,
    pod_key,
)
from controlplane.replicaset.kinds import REPLICA_SET, REPLICATION_CONTROLLER, ControllerKind
from controlplane.replicaset.metrics import ReplicaSetMetrics
from controlplane.replicaset.replica_set_utils import calculate_status, status_changes, update_replica_set_status
from controlplane.trace import NULL_TRACE, Trace

Obj = dict[str, Any]

SLOW_START_INITIAL_BATCH_SIZE = 1
CONTROLLER_UID_INDEX = "controllerUID"
POD_CONTROLLER_INDEX = "podController"


def pod_controller_index_key(namespace: str, ref: Obj | None) -> str:
    """[M] `PodControllerIndexKey`: owned pods under ns/Kind/name/uid, orphans under ns."""
    if ref is None:
        return namespace
    return f"{namespace}/{ref.get('kind')}/{ref.get('name')}/{ref.get('uid')}"


class _PodControllerIndex:
    """The pod index function by controller (`pod_controller_index(pod)`), with the Indexer's
    hint `unchanged(old, new)`: the values depend only on the namespace and the owner reference
    list, so two versions with the same namespace and the very same list (every write that
    leaves the owners alone keeps the list object) have the same values — computed from the same
    data, so the hint holds even for a list someone mutated."""

    __slots__ = ()

    def __call__(self, pod: Obj) -> tuple[str, ...]:
        return (pod_controller_index_key(pod["metadata"].get("namespace", ""), controller_ref(pod)),)

    @staticmethod
    def unchanged(old: Obj, new: Obj) -> bool:
        old_meta = old.get("metadata") or {}
        new_meta = new.get("metadata") or {}
        return old_meta.get("ownerReferences") is new_meta.get("ownerReferences") and old_meta.get(
            "namespace", ""
        ) == new_meta.get("namespace", "")


pod_controller_index = _PodControllerIndex()


def controller_uid_index(rs: Obj) -> tuple[str, ...]:
    ref = controller_ref(rs)
    return (ref["uid"],) if ref is not None and ref.get("uid") else ()


class ReplicaSetController(ControllerRuntime):
    """The ReplicaSet controller of `kind` (the ReplicaSet, or ReplicationControllers through
    their adapter), built on the shared runtime (controlplane.controllers.runtime): its queue,
    workers, tracing and parking are the runtime's, its handlers and sync its own."""

    # The controller version this class implements (config.controllerVersion, docs/scenarios.md).
    version = "v1.36"

    def __init__(
        self,
        kernel: Kernel,
        client: Any,
        kind: ControllerKind = REPLICA_SET,
        config: ControllerConfig | None = None,
        *,
        trace: Trace | None = None,
    ) -> None:
        super().__init__(kernel, client, kind.spec, config or ControllerConfig(), trace=trace or NULL_TRACE)
        self.kind = kind
        self.sync_handler = self.sync_replica_set
        self._build()

    # -- construction (also what a restart redoes) ------------------------------------------
    def _build(self) -> None:
        kernel, kind, cfg, trace = self.kernel, self.kind, self.config, self.trace
        self._build_informers()
        self.queue = self._new_queue()
        self.expectations = UIDTrackingControllerExpectations(kernel, trace=trace, controller=kind.name)
        self.expectations.enabled = cfg.expectations
        self.consistency = NoopConsistencyStore()
        self.set_consistency_gate(cfg.stale_controller_consistency)
        self.metrics = ReplicaSetMetrics()  # process metrics: a restart starts them from zero
        self.recorder = EventRecorder(kernel, self.client, kind.component, trace=trace)
        self.pod_control = self._new_pod_control()
        self._reset_workers()
        self._selectors: dict[str, tuple[str, Selector | None]] = {}

    @property
    def informers(self) -> tuple[SharedInformer, ...]:
        return (self.pod_informer, self.rs_informer)

    def _new_pod_control(self) -> RealPodControl:
        """The pod control (a test overrides it to count or fail pod writes)."""
        return RealPodControl(self.client, self.recorder, on_write=self._on_pod_write)

    def _build_informers(self) -> None:
        """The pod and controller informers with their handlers (`pod_informer`, `rs_informer`:
        the names the facade, the faults and the dashboard read on every controller)."""
        kernel, kind, cfg, trace = self.kernel, self.kind, self.config, self.trace
        self.pod_informer = SharedInformer(
            kernel,
            self.client,
            "pods",
            name=f"{kind.name}/pods",
            indexers={POD_CONTROLLER_INDEX: pod_controller_index},
            resync_period=cfg.resync_period,
            watch_latency=cfg.watch_latency,
            trace=trace,
        )
        self.rs_informer = SharedInformer(
            kernel,
            self.client,
            kind.resource,
            name=f"{kind.name}/{kind.resource}",
            indexers={CONTROLLER_UID_INDEX: controller_uid_index},
            resync_period=cfg.resync_period,
            watch_latency=cfg.watch_latency,
            trace=trace,
        )
        self.rs_informer.add_event_handler(ResourceEventHandler(self.add_rs, self.update_rs, self.delete_rs))
        self.pod_informer.add_event_handler(ResourceEventHandler(self.add_pod, self.update_pod, self.delete_pod))

    def set_resync_period(self, period: float) -> None:
        """The informers' resync period from now on (also kept for the next restart)."""
        self.config.resync_period = period
        self.pod_informer.set_resync_period(period)
        self.rs_informer.set_resync_period(period)

    def set_consistency_gate(self, enabled: bool) -> None:
        """Feature gate StaleControllerConsistencyReplicaSet: a real store, or the no-op one."""
        self.config.stale_controller_consistency = enabled
        if enabled and self.kind is REPLICA_SET:
            pods_rv = self.pod_informer.indexer.last_store_sync_resource_version
            rs_rv = self.rs_informer.indexer.last_store_sync_resource_version
            if not isinstance(self.consistency, RealConsistencyStore):
                self.consistency = RealConsistencyStore({"pods": pods_rv, self.kind.group_resource: rs_rv})
        else:
            self.consistency = NoopConsistencyStore()

    def _on_pod_write(self, ref: Obj, pod: Obj) -> None:
        namespace = pod["metadata"]["namespace"]
        self.consistency.wrote_at(f"{namespace}/{ref['name']}", ref["uid"], "pods", pod["metadata"]["resourceVersion"])

    # -- enqueueing -------------------------------------------------------------------------
    def enqueue_rs(self, rs: Obj) -> None:
        self.queue.add(meta_namespace_key(rs))

    def enqueue_rs_after(self, rs: Obj, delay: float) -> None:
        self.queue.add_after(meta_namespace_key(rs), delay)

    def resolve_controller_ref(self, namespace: str, ref: Obj) -> Obj | None:
        """The controller named by `ref`, if it is of our kind and still has that UID (spec §4)."""
        if ref.get("kind") != self.kind.kind:
            return None
        rs = self.rs_informer.indexer.get(namespace, ref.get("name", ""))
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return None
        return rs

    def _lister_selector(self, rs: Obj) -> Selector | None:
        key = meta_namespace_key(rs)
        rv = rs["metadata"].get("resourceVersion", "")
        cached = self._selectors.get(key)
        if cached is not None and cached[0] == rv:
            return cached[1]
        selector = self.kind.lister_selector(rs)
        self._selectors[key] = (rv, selector)
        return selector

    def get_pod_replica_sets(self, pod: Obj) -> list[Obj]:
        """Lister `GetPodReplicaSets` / `GetPodControllers`: same namespace, non-empty matching selector."""
        pod_labels = pod["metadata"].get("labels")
        if not pod_labels:
            return []
        namespace = pod["metadata"].get("namespace", "")
        found = []
        for rs in self.rs_informer.indexer.by_index(NAMESPACE_INDEX, namespace):
            selector = self._lister_selector(rs)
            if selector is not None and selector.matches(pod_labels):
                found.append(rs)
        return found

    # -- RS handlers (spec §4.1-4.3) --------------------------------------------------------
    def add_rs(self, rs: Obj) -> None:
        self.enqueue_rs(rs)

    def update_rs(self, old: Obj, cur: Obj) -> None:
        if cur["metadata"].get("uid") != old["metadata"].get("uid"):
            self.delete_rs(DeletedFinalStateUnknown(meta_namespace_key(old), old))
        self.enqueue_rs(cur)

    def delete_rs(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        rs = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(rs, dict):
            return
        key = deletion_handling_meta_namespace_key(obj)
        self.consistency.clear(key, rs["metadata"].get("uid", ""))
        # "so if we create a new one with the same name it starts clean"
        self.expectations.delete_expectations(key)
        self.queue.add(key)

    # -- pod handlers (spec §4.4-4.6) -------------------------------------------------------
    def add_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            # A pod that shows up already terminating is a deletion, never a creation observation.
            self.delete_pod(pod)
            return
        ref = controller_ref(pod)
        if ref is not None:
            rs = self.resolve_controller_ref(meta["namespace"], ref)
            if rs is None:
                return
            key = meta_namespace_key(rs)
            self.expectations.creation_observed(key)
            self.queue.add(key)
            return
        for rs in self.get_pod_replica_sets(pod):
            self.enqueue_rs(rs)

    def update_pod(self, old: Obj, cur: Obj) -> None:
        cur_meta, old_meta = cur["metadata"], old["metadata"]
        if cur_meta.get("resourceVersion") == old_meta.get("resourceVersion"):
            return  # periodic resync: nothing changed
        label_changed = cur_meta.get("labels") != old_meta.get("labels")
        if cur_meta.get("deletionTimestamp"):
            self.delete_pod(cur)
            if label_changed:
                self.delete_pod(old)
            return
        cur_ref, old_ref = controller_ref(cur), controller_ref(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            rs = self.resolve_controller_ref(old_meta["namespace"], old_ref)
            if rs is not None:
                self.enqueue_rs(rs)
        if cur_ref is not None:
            rs = self.resolve_controller_ref(cur_meta["namespace"], cur_ref)
            if rs is None:
                return
            self.enqueue_rs(rs)
            min_ready = rs["spec"].get("minReadySeconds", 0) or 0
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                # [M]: requeue exactly when the pod becomes available ([31] added 1 s).
                self.enqueue_rs_after(rs, float(min_ready))
            return
        if label_changed or ref_changed:
            for rs in self.get_pod_replica_sets(cur):
                self.enqueue_rs(rs)

    def delete_pod(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(pod, dict):
            return
        ref = controller_ref(pod)
        if ref is None:
            return  # an orphan's deletion is nobody's concern
        rs = self.resolve_controller_ref(pod["metadata"]["namespace"], ref)
        if rs is None:
            return
        key = meta_namespace_key(rs)
        self.expectations.deletion_observed(key, pod_key(pod))
        self.queue.add(key)

    # -- syncReplicaSet (spec §6) -----------------------------------------------------------
    async def sync_replica_set(self, key: str, worker: int | None = None) -> Exception | None:
        return await self._framed_sync(key, worker, self._sync)

    async def _sync(self, ctx: SyncContext) -> Exception | None:
        key = ctx.key
        try:
            namespace, name = split_meta_namespace_key(key)
        except ValueError as exc:
            return exc
        stale = self.consistency.ensure_ready(key)
        if stale is not None:
            ctx.consistency = "stale"
            self.metrics.observe_stale_sync_skip(stale.group_resource)
            self._stage(
                ctx,
                "consistency",
                ready=False,
                error=str(stale),
                verdict="stale",
                groupResource=stale.group_resource,
                readVersion=stale.read_rv,
                wroteVersion=stale.wrote_rv,
            )
            return stale
        ctx.consistency = "ready" if isinstance(self.consistency, RealConsistencyStore) else "off"
        rs = self.rs_informer.indexer.get(namespace, name)
        if rs is None:
            self._stage(ctx, "get", found=False)
            self.consistency.clear(key, "")
            self.expectations.delete_expectations(key)
            return None
        self._stage(ctx, "get", found=True, resourceVersion=rs["metadata"].get("resourceVersion"))
        await self._yield()
        # Evaluated before listing pods, so a pod appearing in between cannot cause an extra create.
        why = self.expectations.satisfied_reason(key)  # the same instant: the case that answers
        rs_needs_sync = self.expectations.satisfied_expectations(key)
        record, _ = self.expectations.get_expectations(key)
        add, dele = record.get_expectations() if record is not None else (0, 0)
        self._stage(ctx, "expectations", satisfied=rs_needs_sync, why=why, add=add, delete=dele)
        await self._yield()
        try:
            selector = self.kind.selector(rs)
        except ValueError as exc:
            self._stage(ctx, "selector", error=str(exc))
            return None  # upstream logs and gives up: no requeue, no status update
        all_rs_pods = self._filter_pods_by_owner(rs, namespace)
        all_active = filter_active_pods(all_rs_pods)
        self._stage(ctx, "list", pods=len(all_rs_pods), active=len(all_active))
        await self._yield()
        active_pods, claim_err = await self.claim_pods(rs, selector, all_active, ctx)
        if self.trace.enabled:
            ctx.counted = [p["metadata"]["name"] for p in active_pods]
        if claim_err is not None:
            return claim_err
        terminating: list[Obj] | None = None
        if self.config.terminating_replicas and self.kind.enable_status_terminating_replicas:
            uid = rs["metadata"]["uid"]
            terminating = [
                p
                for p in filter_terminating_pods(all_rs_pods)
                if (ref := controller_ref(p)) is not None
                and ref.get("uid") == uid
                and selector.matches(p["metadata"].get("labels"))
            ]
        manage_err: Exception | None = None
        if rs_needs_sync and not rs["metadata"].get("deletionTimestamp"):
            manage_err = await self.manage_replicas(active_pods, rs, ctx)
        else:
            self._stage(
                ctx,
                "manage",
                action="skipped",
                reason="expectations not satisfied" if not rs_needs_sync else "being deleted",
            )
        now = self.kernel.now
        template_labels = ((rs["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
        new_status = calculate_status(
            rs,
            active_pods,
            terminating,
            manage_err,
            self.kind.enable_status_terminating_replicas and self.config.terminating_replicas,
            now,
            selector_from_set(template_labels),
        )
        try:
            updated = await update_replica_set_status(self.client, self.kind.resource, rs, new_status)
        except ApiError as exc:
            self._stage(ctx, "status", written=False, error=exc.message)
            return exc
        written = updated is not rs
        self._stage(
            ctx,
            "status",
            written=written,
            status=_status_counts(updated),
            changed=status_changes(rs, updated) if written and self.trace.enabled else {},
        )
        self.consistency.wrote_at(
            key, rs["metadata"]["uid"], self.kind.group_resource, updated["metadata"]["resourceVersion"]
        )
        await self._yield()
        if manage_err is not None:
            self._stage(ctx, "requeue", decision="rate-limited", error=str(manage_err))
            return manage_err
        # The server's spec as UpdateStatus returned it, not the (possibly older) cached one.
        min_ready = (updated.get("spec") or {}).get("minReadySeconds", 0) or 0
        ustatus = updated.get("status") or {}
        if min_ready > 0 and (ustatus.get("readyReplicas") or 0) != (ustatus.get("availableReplicas") or 0):
            delay = float(min_ready)
            nxt = find_min_next_pod_availability_check(active_pods, min_ready, now, self.kernel.now)
            if nxt is not None:
                delay = nxt
            self.queue.add_after(key, delay)
            ctx.requeue = {"decision": "after", "delay": delay}
            self._stage(ctx, "requeue", decision="availability", after=delay)
        else:
            ctx.requeue = {"decision": "none"}
            self._stage(ctx, "requeue", decision="none")
        return None

    def _filter_pods_by_owner(self, rs: Obj, namespace: str) -> list[Obj]:
        """[M] `FilterPodsByOwner(..., includeOrphans=true)`: our pods plus the namespace's orphans."""
        indexer = self.pod_informer.indexer
        meta = rs["metadata"]
        own_key = pod_controller_index_key(
            namespace, {"kind": self.kind.kind, "name": meta["name"], "uid": meta["uid"]}
        )
        return indexer.by_index(POD_CONTROLLER_INDEX, own_key) + indexer.by_index(POD_CONTROLLER_INDEX, namespace)

    # -- claimPods (spec §7) ----------------------------------------------------------------
    async def claim_pods(
        self, rs: Obj, selector: Selector, pods: list[Obj], ctx: SyncContext | None = None
    ) -> tuple[list[Obj], Exception | None]:
        meta = rs["metadata"]

        async def get_fresh() -> Obj:
            fresh: Obj = await self.client.get(self.kind.resource, meta["namespace"], meta["name"])
            return fresh

        manager = PodControllerRefManager(
            self.pod_control,
            rs,
            selector,
            self.kind.api_version,
            self.kind.kind,
            recheck_deletion_timestamp(get_fresh, rs),
        )
        claimed, err = await manager.claim_pods(pods)
        if ctx is not None:
            self._stage(
                ctx,
                "claim",
                claimed=len(claimed),
                adopted=manager.adopted,
                released=manager.released,
                error=None if err is None else str(err),
            )
            await self._yield()
        return claimed, err

    # -- manageReplicas (spec §8) -----------------------------------------------------------
    async def manage_replicas(self, filtered_pods: list[Obj], rs: Obj, ctx: SyncContext) -> Exception | None:
        key = meta_namespace_key(rs)
        replicas = rs["spec"].get("replicas", 1)
        diff = len(filtered_pods) - replicas
        burst = self.config.burst_replicas
        if diff < 0:
            n = min(-diff, burst)
            # Replaces any record: expectations must be set BEFORE the creates go out.
            self.expectations.expect_creations(key, n)
            self._stage(ctx, "manage", action="create", count=n, have=len(filtered_pods), want=replicas)
            await self._yield()
            ref = new_controller_ref(rs, self.kind.api_version, self.kind.kind)
            template = rs["spec"]["template"]
            namespace = rs["metadata"]["namespace"]

            async def create_one() -> Exception | None:
                self._request(ctx, "create")
                await self._yield()
                try:
                    await self.pod_control.create_pods(namespace, template, rs, ref)
                except ApiError as exc:
                    if has_status_cause(exc, "NamespaceTerminating"):
                        return None  # counted as a success: the namespace is going away anyway
                    return exc
                except PodControlError as exc:
                    return exc
                return None

            initial = SLOW_START_INITIAL_BATCH_SIZE if self.config.slow_start else n
            successes, err = await self.slow_start_batch(n, initial, create_one, ctx)
            skipped = n - successes
            for _ in range(skipped):
                # Failed and never-attempted creates will not be observed: stop expecting them.
                self.expectations.creation_observed(key)
            return err
        if diff > 0:
            n = min(diff, burst)
            related = self.get_indirectly_related_pods(rs)
            victims = get_pods_to_delete(
                filtered_pods, related, n, self.kernel.now, deletion_cost_enabled=self.config.pod_deletion_cost
            )
            if n < len(filtered_pods):
                self.metrics.report_sorting_deletion_age_ratio(filtered_pods, victims, self.kernel.now)
            victim_keys = [pod_key(p) for p in victims]
            self.expectations.expect_deletions(key, victim_keys)
            self._stage(
                ctx,
                "manage",
                action="delete",
                count=n,
                have=len(filtered_pods),
                want=replicas,
                pods=[p["metadata"]["name"] for p in victims],
            )
            namespace = rs["metadata"]["namespace"]

            async def delete_one(victim: Obj) -> Exception | None:
                self._request(ctx, "delete", victim["metadata"]["name"])
                await self._yield()
                try:
                    await self.pod_control.delete_pod(namespace, victim["metadata"]["name"], rs)
                except (ApiError, PodControlError) as exc:
                    # The deletion will not be observed: stop expecting it.
                    self.expectations.deletion_observed(key, pod_key(victim))
                    if isinstance(exc, ApiError) and is_not_found(exc):
                        return None
                    return exc
                return None

            results = await self._gather([delete_one(v) for v in victims], "delete")
            errors = [e for e in results if e is not None]
            self._stage(ctx, "delete", deleted=len(victims) - len(errors), failed=len(errors))
            return errors[0] if errors else None
        self._stage(ctx, "manage", action="none", have=len(filtered_pods), want=replicas)
        await self._yield()
        return None

    async def slow_start_batch(
        self, count: int, initial: int, fn: Any, ctx: SyncContext | None = None
    ) -> tuple[int, Exception | None]:
        """Batches of 1, 2, 4, ... calls run concurrently; stop after the first batch with errors."""
        remaining = count
        successes = 0
        batch = min(remaining, initial)
        while batch > 0:
            results = await self._gather([fn() for _ in range(batch)], "create")
            errors = [e for e in results if e is not None]
            successes += batch - len(errors)
            if ctx is not None:
                self._stage(
                    ctx,
                    "batch",
                    size=batch,
                    succeeded=batch - len(errors),
                    failed=len(errors),
                    error=str(errors[0]) if errors else None,
                )
            if errors:
                return successes, errors[0]
            remaining -= batch
            batch = min(2 * batch, remaining)
        return successes, None

    def get_indirectly_related_pods(self, rs: Obj) -> list[Obj]:
        """Pods of every RS with the same controller as `rs` (e.g. one Deployment's RSs), by selector."""
        ref = controller_ref(rs)
        if ref is None:
            return []  # "ReplicaSet has no controller": every rank is 0
        related: dict[str, Obj] = {}
        indexer = self.pod_informer.indexer
        for other in self.rs_informer.indexer.by_index(CONTROLLER_UID_INDEX, ref["uid"]):
            try:
                selector = self.kind.selector(other)
            except ValueError:
                continue
            for pod in indexer.by_index(NAMESPACE_INDEX, other["metadata"]["namespace"]):
                if selector.matches(pod["metadata"].get("labels")):
                    related.setdefault(pod["metadata"]["uid"], pod)
        return list(related.values())


def _status_counts(rs: Obj) -> dict[str, Any]:
    status = rs.get("status") or {}
    return {k: status.get(k, 0) for k in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")}


def new_replica_set_controller(
    kernel: Kernel, client: Any, config: ControllerConfig, *, trace: Trace, flags: Mapping[str, Any]
) -> ReplicaSetController:
    """The registry's factory of the ReplicaSet controller (v1.36)."""
    return ReplicaSetController(kernel, client, REPLICA_SET, config, trace=trace)


def new_replication_controller_adapter(
    kernel: Kernel, client: Any, config: ControllerConfig, *, trace: Trace, flags: Mapping[str, Any]
) -> ReplicaSetController:
    """The registry's factory of the ReplicationController controller at v1.36: the ReplicaSet
    controller through its RC adapter (spec §16)."""
    return ReplicaSetController(kernel, client, REPLICATION_CONTROLLER, config, trace=trace)


__all__ = ["ReplicaSetController", "is_pod_active"]

"""The ReplicaSet controller (pkg/controller/replicaset/replica_set.go), also serving
ReplicationControllers through `kinds.REPLICATION_CONTROLLER` (spec §16).

Guarantees
----------
* Handlers only enqueue keys and adjust expectations (spec §4); every decision is made in
  `sync_replica_set(key)` (spec §6), which is the `sync_handler` field so tests can swap it.
* A key is synced by at most one worker at a time (the workqueue is stingy); a failed sync is
  requeued with the default controller rate limiter, a successful one forgets its failures (§5).
* A sync that raises (a bug, or input no check foresaw) fails like a sync that returns an error:
  one `error` trace record, `sync.end` with the error, the key requeued rate-limited (as
  upstream's `utilruntime.HandleError` path does for errors), and the worker lives on. Upstream
  a panic would restart the process; a debugger must not lose the user's session to one.
* Each stage of a sync is one `sync.stage` trace record, in upstream's order: consistency,
  get, expectations, list, claim, manage (with one `batch` record per slow-start batch and one
  `delete` record per scale-down), status, requeue. `sync.start` / `sync.end` frame it.
* Nothing here reads the wall clock: "now" is the kernel's.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from controlplane.apiserver import ApiError
from controlplane.apiserver.errors import has_status_cause, is_not_found
from controlplane.consistency import NoopConsistencyStore, RealConsistencyStore
from controlplane.controller_ref_manager import PodControllerRefManager, recheck_deletion_timestamp
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
from controlplane.kernel import Cancelled, Future, Kernel, NotQuiescent, Task, resumable
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
from controlplane.replicaset.kinds import REPLICA_SET, ControllerKind
from controlplane.replicaset.metrics import ReplicaSetMetrics
from controlplane.replicaset.replica_set_utils import calculate_status, status_changes, update_replica_set_status
from controlplane.trace import NULL_TRACE, Trace
from controlplane.workqueue import RateLimitingQueue, default_controller_rate_limiter
from controlplane.workqueue.queue import Queue

Obj = dict[str, Any]

BURST_REPLICAS = 500
SLOW_START_INITIAL_BATCH_SIZE = 1
CONTROLLER_UID_INDEX = "controllerUID"
POD_CONTROLLER_INDEX = "podController"
CACHE_SYNC_POLL = 0.1  # WaitForCacheSync polls every 100 ms


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


@dataclass
class ControllerConfig:
    """Knobs of one controller; defaults mirror kube-controller-manager v1.36."""

    workers: int = 5
    burst_replicas: int = BURST_REPLICAS
    watch_latency: float = 0.05
    resync_period: float = 0.0  # KCM draws 12-24 h; 0 = no periodic resync within a simulation
    slow_start: bool = True  # what-if: False issues all creates of a sync in one batch
    expectations: bool = True  # what-if: False makes satisfied_expectations always true
    stale_controller_consistency: bool = True  # gate StaleControllerConsistencyReplicaSet
    terminating_replicas: bool = True  # gate DeploymentReplicaSetTerminatingReplicas
    pod_deletion_cost: bool = True  # gate PodDeletionCost (ranking key 4)
    manual_workers: bool = False  # what-if: workers dequeue only when `sync_next` says so


@dataclass
class WorkerState:
    id: int
    key: str | None = None
    stage: str = "idle"
    since: float = 0.0
    syncs: int = 0


@dataclass
class SyncContext:
    """What one sync saw and did, for the sync inspector."""

    key: str
    worker: int | None
    start: float
    stages: list[dict[str, Any]] = field(default_factory=list)
    # Names of the active pods this sync counted (after claiming); None until it listed them.
    counted: list[str] | None = None
    requests: int = 0  # pod creates and deletes issued so far (numbers `sync.request` records)
    # The consistency store's verdict: "ready", "stale" (the sync was refused) or "off" (gate off).
    consistency: str | None = None
    # How the sync itself requeues its key when it succeeds: {"decision": "after", "delay": s}
    # (minReadySeconds) or {"decision": "none"}. A failed sync is the worker's to requeue.
    requeue: dict[str, Any] | None = None
    # Trace seqs (controlplane.trace): the sync.start record, which causes every stage, and the
    # latest stage, which causes the sync.requests issued under it.
    start_seq: int | None = None
    stage_seq: int | None = None


class ReplicaSetController:
    # The controller version this class implements (config.controllerVersion, DESIGN §2.3).
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
        self.kernel = kernel
        self.client = client
        self.kind = kind
        self.config = config or ControllerConfig()
        self.trace = trace or NULL_TRACE
        self.sync_handler = self.sync_replica_set
        self.restarts = 0
        self.sync_crashes = 0  # syncs that raised instead of returning (see the docstring)
        self._running = False
        self._build()

    # -- construction (also what a restart redoes) ------------------------------------------
    def _build(self) -> None:
        kernel, kind, cfg, trace = self.kernel, self.kind, self.config, self.trace
        self._build_informers()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            kernel, default_controller_rate_limiter(kernel), name=kind.queue_name, trace=trace
        )
        self.expectations = UIDTrackingControllerExpectations(kernel, trace=trace, controller=kind.name)
        self.expectations.enabled = cfg.expectations
        self.consistency: RealConsistencyStore | NoopConsistencyStore = NoopConsistencyStore()
        self.set_consistency_gate(cfg.stale_controller_consistency)
        self.metrics = ReplicaSetMetrics()  # process metrics: a restart starts them from zero
        self.recorder = EventRecorder(kernel, self.client, kind.component, trace=trace)
        self.pod_control = self._new_pod_control()
        self.workers: list[WorkerState] = []
        self._worker_tasks: list[Task | None] = []
        self._inflight: list[Task] = []  # concurrent creates/deletes of slow start and scale-down
        self._run_task: Task | None = None
        self._caches_synced = False
        self._selectors: dict[str, tuple[str, Selector | None]] = {}
        self.last_sync: SyncContext | None = None
        # The latest sync of each key (kept while the trace is on): the cache-vs-truth view.
        self.last_syncs: dict[str, SyncContext] = {}

    def _new_pod_control(self) -> RealPodControl:
        """The pod control of this controller version (an extension point, see `_build`)."""
        return RealPodControl(self.client, self.recorder, on_write=self._on_pod_write)

    def _build_informers(self) -> None:
        """The pod and controller informers with their handlers (an extension point: another
        controller version wires its own, under the same attribute names, which the facade,
        the faults and the dashboard read)."""
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

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """`Run(ctx, workers)`: start informers, wait for both caches, then start the workers."""
        self._running = True
        self.pod_informer.start()
        self.rs_informer.start()
        self._run_task = self.kernel.spawn(self._run(), name=f"{self.kind.name}/run")

    async def _run(self) -> None:
        try:
            while not (self.pod_informer.has_synced() and self.rs_informer.has_synced()):
                await self.kernel.sleep(CACHE_SYNC_POLL)
            self._caches_synced = True
            self.set_workers(self.config.workers)
        except Cancelled:
            pass

    @property
    def caches_synced(self) -> bool:
        """Both informers have synced and the workers are (or may be) running."""
        return self._caches_synced

    def set_workers(self, n: int) -> None:
        """Grow or shrink the worker pool; a removed worker finishes its current sync first.
        With manual workers the slots exist but no loop runs (see `sync_next`)."""
        self.config.workers = n
        if not self._running or not self._caches_synced:
            return
        manual = self.config.manual_workers
        for wid in range(n):
            if wid == len(self.workers):
                self.workers.append(WorkerState(wid))
                self._worker_tasks.append(None)
            task = self._worker_tasks[wid]
            if task is None or task.done():
                self.workers[wid].key = None
                if manual:
                    self.workers[wid].stage = "manual"
                else:
                    self.workers[wid].stage = "idle"
                    self._worker_tasks[wid] = self.kernel.spawn(
                        self._worker(wid), name=f"{self.kind.name}/worker-{wid}"
                    )
        for wid in range(len(self.workers)):
            task = self._worker_tasks[wid]
            # An idle surplus (or now manual) worker stops now; a busy one after its current
            # sync (loop condition).
            if (wid >= n or manual) and task is not None and not task.done() and self.workers[wid].key is None:
                task.cancel()
            elif wid >= n and (task is None or task.done()):
                self.workers[wid].stage = "stopped"

    def stop(self) -> None:
        """Shut down: the queue stops handing out keys, informers stop, workers are cancelled."""
        self._running = False
        self.queue.shut_down()
        self.pod_informer.stop()
        self.rs_informer.stop()
        # A stopped controller-manager's goroutines are gone: requests already sent are still
        # answered by the server, but nobody here hears the answers.
        for task in [self._run_task, *self._worker_tasks, *self._inflight]:
            if task is not None and not task.done():
                task.cancel()
        self._inflight = []
        self.recorder.stop()

    def restart(self) -> None:
        """A controller-manager restart: caches, queue and expectations are lost; relist."""
        self.stop()
        self.restarts += 1
        if self.trace.enabled:
            self.trace.emit("controller.restart", controller=self.kind.name)
        self._build()
        self.start()

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

    # -- the worker loop (spec §5) ----------------------------------------------------------
    async def _worker(self, wid: int, first: str | None = None, parked: Future | None = None) -> None:
        """`processNextWorkItem` in a loop while automatic; `first` is a key a manual `sync`
        already took from the queue (the loop then continues only if workers went automatic);
        `parked`: the worker is restored from a snapshot, waiting in `get_async` for this
        wake-up (see the `resumable` declaration below the class)."""
        queue = self.queue
        state = self.workers[wid]
        try:
            if first is not None:
                await self._process(wid, first)
            while parked is not None or (wid < self.config.workers and not self.config.manual_workers):
                key, quit_ = await queue.get_async(worker=str(wid), parked=parked)
                parked = None
                if quit_ or key is None:
                    return
                await self._process(wid, key)
            state.stage = self._parked_stage(wid)
        except Cancelled:
            state.key, state.stage = None, self._parked_stage(wid)

    async def _process(self, wid: int, key: str) -> None:
        queue = self.queue
        state = self.workers[wid]
        state.key, state.stage, state.since = key, "dequeued", self.kernel.now
        await self._yield()
        state.stage = "sync"
        try:
            err = await self.sync_handler(key, wid)
        except Cancelled:
            raise
        except Exception as exc:  # a replaced sync_handler (the real one contains its own)
            err = self._sync_crashed(key, wid, exc)
        if err is None:
            queue.forget(key)
        else:
            delay = queue.add_rate_limited(key)
            if self.trace.enabled and delay is not None:
                self.trace.emit(
                    "sync.requeue",
                    controller=self.kind.name,
                    key=key,
                    worker=wid,
                    decision="rateLimited",
                    delay=delay,
                    requeues=queue.rate_limiter.num_requeues(key),
                )
        queue.done(key, worker=str(wid))
        state.key, state.since = None, self.kernel.now
        state.stage = "idle" if not self.config.manual_workers else self._parked_stage(wid)
        state.syncs += 1

    def _sync_crashed(self, key: str, worker: int | None, exc: Exception) -> Exception:
        """Report a sync that raised; the caller treats it as the sync's error."""
        error = f"{type(exc).__name__}: {exc}"
        self.sync_crashes += 1
        if self.trace.enabled:
            self.trace.emit("error", where="sync", controller=self.kind.name, key=key, worker=worker, error=error)
        return RuntimeError(f"sync crashed: {error}")

    def _parked_stage(self, wid: int) -> str:
        """What a worker with no running loop shows: waiting for a click, or stopped."""
        return "manual" if self.config.manual_workers and wid < self.config.workers else "stopped"

    # -- manual workers (a ctrlscope what-if: a debugger's "step") ---------------------------
    def set_manual_workers(self, manual: bool) -> None:
        """Manual: no worker dequeues until `sync_next` tells one to; automatic again: the
        configured number of workers resume their loops."""
        self.config.manual_workers = manual
        self.set_workers(self.config.workers)

    def sync_next(self, key: str | None = None) -> dict[str, Any]:
        """Manual workers only: the lowest-numbered idle worker takes the head of the queue (as
        `Get()` would) or, as a what-if, the queued `key` out of order, and syncs it. Returns
        `{key, worker}`; raises ValueError (nothing changed) when that cannot be done."""
        if not self.config.manual_workers:
            raise ValueError(f"the {self.kind.name} workers are automatic: switch them to manual first")
        if not self._caches_synced:
            raise ValueError(f"the {self.kind.name} controller is still waiting for its caches to sync")
        idle = [w.id for w in self.workers[: self.config.workers] if w.key is None]
        if not idle:
            raise ValueError(f"all {self.config.workers} {self.kind.name} workers are busy")
        wid = idle[0]
        if key is None:
            if len(self.queue) == 0:
                raise ValueError(f"the {self.kind.name} queue is empty")
            taken, _ = self.queue.get(worker=str(wid))
            assert taken is not None
            key = taken
        elif not self.queue.take(key, worker=str(wid)):
            raise ValueError(f"{key} is not queued in the {self.kind.name} queue")
        state = self.workers[wid]
        state.key, state.stage, state.since = key, "sync", self.kernel.now
        self._worker_tasks[wid] = self.kernel.spawn(self._worker(wid, key), name=f"{self.kind.name}/worker-{wid}")
        return {"key": key, "worker": wid}

    def _stage(self, ctx: SyncContext, stage: str, **fields: Any) -> None:
        if ctx.worker is not None and ctx.worker < len(self.workers):
            self.workers[ctx.worker].stage = stage
        if self.trace.enabled:
            record = {"stage": stage, **fields}
            ctx.stages.append({"time": self.kernel.now, **record})
            ctx.stage_seq = self.trace.emit(
                "sync.stage", ctx.start_seq, controller=self.kind.name, key=ctx.key, worker=ctx.worker, **record
            )

    def _yield(self) -> Any:
        """A point where other goroutines may run (a zero-delay kernel sleep): after the dequeue,
        after each synchronous stage of a sync, and before each pod write. Upstream's goroutines
        can be preempted anywhere; these are the points where the simulator lets others run, so a
        debugger can stop between two stages and see the world as it is there."""
        return self.kernel.sleep(0)

    def _request(self, ctx: SyncContext, verb: str, pod: str | None = None) -> None:
        """One `sync.request` record as manage_replicas issues a pod create or delete: the
        n-th of this sync, before the API server has it (breakpoints stop here)."""
        ctx.requests += 1
        if self.trace.enabled:
            # The write that follows (in this goroutine) is caused by this request record.
            self.trace.begin(
                "sync.request",
                ctx.stage_seq,
                controller=self.kind.name,
                key=ctx.key,
                worker=ctx.worker,
                verb=verb,
                n=ctx.requests,
                pod=pod,
            )

    # -- syncReplicaSet (spec §6) -----------------------------------------------------------
    async def sync_replica_set(self, key: str, worker: int | None = None) -> Exception | None:
        return await self._framed_sync(key, worker, self._sync)

    async def _framed_sync(
        self, key: str, worker: int | None, body: Callable[[SyncContext], Awaitable[Exception | None]]
    ) -> Exception | None:
        """One sync of `key` by `body`, framed for the debugger: `sync.start` (with
        `_sync_start_fields`), a raise contained as the sync's error, `sync.end`. Every
        controller version's sync handler runs through here."""
        ctx = SyncContext(key, worker, self.kernel.now)
        self.last_sync = ctx
        if self.trace.enabled:
            self.last_syncs[key] = ctx
        if self.trace.enabled:
            # Caused by the queue.get that handed the key to this worker (the current cause).
            ctx.start_seq = ctx.stage_seq = self.trace.emit(
                "sync.start",
                controller=self.kind.name,
                key=key,
                worker=worker,
                expectations=self._expected(key),
                **self._sync_start_fields(),
            )
        err: Exception | None
        try:
            err = await body(ctx)
        except Cancelled:
            raise
        except Exception as exc:
            err = self._sync_crashed(key, worker, exc)
        if self.trace.enabled:
            # What the worker does after the sync (forget, requeue, done) is caused by its end.
            self.trace.begin(
                "sync.end",
                ctx.start_seq,
                controller=self.kind.name,
                key=key,
                worker=worker,
                start=ctx.start,
                error=None if err is None else str(err),
                expectations=self._expected(key),
                consistency=ctx.consistency,
                requeue={"decision": "rateLimited"} if err is not None else ctx.requeue,
            )
        return err

    def _sync_start_fields(self) -> dict[str, Any]:
        """Extra fields of this version's `sync.start` records (none for v1.36, whose records
        are as they always were)."""
        return {}

    def _expected(self, key: str) -> dict[str, int] | None:
        """The expectations record of `key` as `{add, del}` (None without one), for the trace."""
        record, _ = self.expectations.get_expectations(key)
        if record is None:
            return None
        add, dele = record.get_expectations()
        return {"add": add, "del": dele}

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

    async def _gather(self, coros: list[Any], what: str) -> list[Exception | None]:
        """Run coroutines concurrently on the kernel and wait for all (a WaitGroup)."""
        if len(coros) == 1:
            return [await coros[0]]
        tasks = [self.kernel.spawn(c, name=f"{self.kind.name}/{what}") for c in coros]
        self._inflight = [t for t in self._inflight if not t.done()] + tasks
        return [await t for t in tasks]

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

    # -- inspection -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        server_rev = self.client.server.revision
        expectations = {}
        for key in self.expectations.keys():  # noqa: SIM118 - not a dict
            expectations[key] = self.expectations.snapshot(key)
        return {
            "controller": self.kind.name,
            "version": self.version,
            "queue": self.queue.snapshot(),
            "expectations": expectations,
            "expectationsEnabled": self.expectations.enabled,
            "workers": [
                {"id": w.id, "key": w.key, "stage": w.stage, "since": w.since, "syncs": w.syncs} for w in self.workers
            ],
            "informers": [
                self.pod_informer.snapshot(server_rev),
                self.rs_informer.snapshot(server_rev),
            ],
            "consistency": self.consistency.snapshot(),
            "metrics": self.metrics.snapshot(),
            "restarts": self.restarts,
            "lastSync": None
            if self.last_sync is None
            else {
                "key": self.last_sync.key,
                "worker": self.last_sync.worker,
                "start": self.last_sync.start,
                "stages": list(self.last_sync.stages),
            },
        }


def _resume_worker(frames: list[dict[str, Any]], fut: Future | None) -> Callable[[], Any]:
    worker, get = frames
    if fut is not get["fut"]:
        raise NotQuiescent("a worker awaits something other than its queue's wake-up")
    return functools.partial(worker["self"]._worker, worker["wid"], parked=fut)


# A worker waiting for a key is parked (a snapshot can hold it): see kernel.resumable.
resumable(ReplicaSetController._worker, Queue.get_async, resume=_resume_worker)


def _status_counts(rs: Obj) -> dict[str, Any]:
    status = rs.get("status") or {}
    return {k: status.get(k, 0) for k in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")}


__all__ = ["ControllerConfig", "ReplicaSetController", "is_pod_active"]

"""What every controller shares: the rate-limited workqueue, the workers, `processNextWorkItem`
(Forget on success, AddRateLimited on error), manual workers and `sync_next`, the trace of each
sync (`sync.start`, one `sync.stage` per stage, `sync.request`, `sync.end`), and the parking of
idle workers that lets a snapshot (controlplane.session.timetravel.snapshot) hold a running world.

A controller *uses* this machinery by building on `ControllerRuntime`; its decisions (handlers,
the sync, what it owns) are its own. The ReplicaSet controller (controlplane.replicaset), the v1.5
ReplicationManager (controlplane.replication) and any controller after them are built so; none
gets the machinery by subclassing another controller.

Guarantees
----------
* A key is synced by at most one worker at a time (the workqueue is stingy); a sync that returns
  an error is requeued with the default controller rate limiter (AddRateLimited), a successful
  one forgets its failures (Forget); `Done` follows either (spec §5).
* A sync that raises (a bug, or input no check foresaw) fails like a sync that returns an error:
  one `error` trace record, `sync.end` with the error, the key requeued rate-limited (as
  upstream's `utilruntime.HandleError` path does for errors), and the worker lives on. Upstream
  a panic would restart the process; a debugger must not lose the user's session to one.
* Every sync is framed by `sync.start` / `sync.end`, each stage is one `sync.stage` record (and
  the worker's `stage`), each pod write one `sync.request` record issued before the write: the
  sync inspector, breakpoints and "step one stage" read these, never private fields.
* With manual workers no worker dequeues until `sync_next` tells one to; an idle worker is parked
  in a `resumable` place, so a snapshot can be taken between any two kernel events at which no
  sync is half-done.
* Nothing here reads the wall clock: "now" is the kernel's.

What a controller built on it provides
--------------------------------------
* `__init__` calls `ControllerRuntime.__init__` with its registry entry
  (`controlplane.controllers.ControllerSpec`) and knobs (`controlplane.controllers.config.ControllerConfig`:
  `workers`, `manual_workers`, ...), sets `sync_handler` (`async (key, worker) -> Exception |
  None`, a field so tests can swap it; its sync framed by `_framed_sync`), then calls `_build()`.
* `_build()`: everything a (re)start constructs: its informers, `queue = self._new_queue()`, its
  `expectations`, `consistency` and `metrics` (the snapshot shows them), its `recorder`, then
  `self._reset_workers()`, in the order it wants them built (informers and recorders may
  schedule kernel events: the order is part of the behaviour).
* `informers`: its informers, in the order `start` starts and `stop` stops them and `snapshot`
  shows them.
* `version` (its `config.controllerVersion` value) as a class attribute.
* `start()` may be overridden (the v1.5 manager starts its workers without waiting for caches).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controlplane.kernel import Cancelled, Future, Kernel, NotQuiescent, Task, resumable
from controlplane.trace import Trace
from controlplane.workqueue import RateLimitingQueue, default_controller_rate_limiter
from controlplane.workqueue.queue import Queue

if TYPE_CHECKING:
    from controlplane.consistency import NoopConsistencyStore, RealConsistencyStore
    from controlplane.controllers.config import ControllerConfig
    from controlplane.controllers.registry import ControllerSpec
    from controlplane.events import EventRecorder
    from controlplane.expectations import UIDTrackingControllerExpectations
    from controlplane.informers import SharedInformer
    from controlplane.replicaset.metrics import ReplicaSetMetrics

CACHE_SYNC_POLL = 0.1  # WaitForCacheSync polls every 100 ms


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


class ControllerRuntime:
    """The shared machinery of one controller (see the module docstring for what a controller
    built on it provides)."""

    version: str  # config.controllerVersion (docs/scenarios.md)
    sync_handler: Callable[[str, int | None], Awaitable[Exception | None]]
    queue: RateLimitingQueue[str]
    expectations: UIDTrackingControllerExpectations
    consistency: RealConsistencyStore | NoopConsistencyStore
    metrics: ReplicaSetMetrics
    recorder: EventRecorder

    def __init__(
        self, kernel: Kernel, client: Any, spec: ControllerSpec, config: ControllerConfig, *, trace: Trace
    ) -> None:
        self.kernel = kernel
        self.client = client
        self.spec = spec
        self.config = config
        self.trace = trace
        self.restarts = 0
        self.sync_crashes = 0  # syncs that raised instead of returning (see the module docstring)
        self._running = False

    def _build(self) -> None:
        """Construct what a (re)start constructs (see the module docstring)."""
        raise NotImplementedError

    @property
    def informers(self) -> tuple[SharedInformer, ...]:
        raise NotImplementedError

    def _new_queue(self) -> RateLimitingQueue[str]:
        """The controller's workqueue: rate-limited by the default controller rate limiter."""
        kernel = self.kernel
        return RateLimitingQueue(
            kernel, default_controller_rate_limiter(kernel), name=self.spec.queue_name, trace=self.trace
        )

    def _reset_workers(self) -> None:
        """No workers, no syncs seen: the state a (re)start begins from."""
        self.workers: list[WorkerState] = []
        self._worker_tasks: list[Task | None] = []
        self._inflight: list[Task] = []  # concurrent pod writes of a sync (`_gather`)
        self._run_task: Task | None = None
        self._caches_synced = False
        self.last_sync: SyncContext | None = None
        # The latest sync of each key (kept while the trace is on): the cache-vs-truth view.
        self.last_syncs: dict[str, SyncContext] = {}

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """`Run(ctx, workers)`: start the informers, wait for their caches, then start the workers."""
        self._running = True
        for informer in self.informers:
            informer.start()
        self._run_task = self.kernel.spawn(self._run(), name=f"{self.spec.name}/run")

    async def _run(self) -> None:
        try:
            while not all(informer.has_synced() for informer in self.informers):
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
                        self._worker(wid), name=f"{self.spec.name}/worker-{wid}"
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
        for informer in self.informers:
            informer.stop()
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
            self.trace.emit("controller.restart", controller=self.spec.name)
        self._build()
        self.start()

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
                    controller=self.spec.name,
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
            self.trace.emit("error", where="sync", controller=self.spec.name, key=key, worker=worker, error=error)
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
            raise ValueError(f"the {self.spec.name} workers are automatic: switch them to manual first")
        if not self._caches_synced:
            raise ValueError(f"the {self.spec.name} controller is still waiting for its caches to sync")
        idle = [w.id for w in self.workers[: self.config.workers] if w.key is None]
        if not idle:
            raise ValueError(f"all {self.config.workers} {self.spec.name} workers are busy")
        wid = idle[0]
        if key is None:
            if len(self.queue) == 0:
                raise ValueError(f"the {self.spec.name} queue is empty")
            taken, _ = self.queue.get(worker=str(wid))
            assert taken is not None
            key = taken
        elif not self.queue.take(key, worker=str(wid)):
            raise ValueError(f"{key} is not queued in the {self.spec.name} queue")
        state = self.workers[wid]
        state.key, state.stage, state.since = key, "sync", self.kernel.now
        self._worker_tasks[wid] = self.kernel.spawn(self._worker(wid, key), name=f"{self.spec.name}/worker-{wid}")
        return {"key": key, "worker": wid}

    def _stage(self, ctx: SyncContext, stage: str, **fields: Any) -> None:
        if ctx.worker is not None and ctx.worker < len(self.workers):
            self.workers[ctx.worker].stage = stage
        if self.trace.enabled:
            record = {"stage": stage, **fields}
            ctx.stages.append({"time": self.kernel.now, **record})
            ctx.stage_seq = self.trace.emit(
                "sync.stage", ctx.start_seq, controller=self.spec.name, key=ctx.key, worker=ctx.worker, **record
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
                controller=self.spec.name,
                key=ctx.key,
                worker=ctx.worker,
                verb=verb,
                n=ctx.requests,
                pod=pod,
            )

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
                controller=self.spec.name,
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
                controller=self.spec.name,
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

    async def _gather(self, coros: list[Any], what: str) -> list[Exception | None]:
        """Run coroutines concurrently on the kernel and wait for all (a WaitGroup)."""
        if len(coros) == 1:
            return [await coros[0]]
        tasks = [self.kernel.spawn(c, name=f"{self.spec.name}/{what}") for c in coros]
        self._inflight = [t for t in self._inflight if not t.done()] + tasks
        return [await t for t in tasks]

    # -- inspection -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        server_rev = self.client.server.revision
        expectations = {}
        for key in self.expectations.keys():  # noqa: SIM118 - not a dict
            expectations[key] = self.expectations.snapshot(key)
        return {
            "controller": self.spec.name,
            "version": self.version,
            "queue": self.queue.snapshot(),
            "expectations": expectations,
            "expectationsEnabled": self.expectations.enabled,
            "workers": [
                {"id": w.id, "key": w.key, "stage": w.stage, "since": w.since, "syncs": w.syncs} for w in self.workers
            ],
            "informers": [
                *(informer.snapshot(server_rev) for informer in self.informers),
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
resumable(ControllerRuntime._worker, Queue.get_async, resume=_resume_worker)

"""The basic work queue (client-go `util/workqueue/queue.go`, spec §2.1).

Guarantees
----------
* Fair: items are handed out in the order they were added (FIFO).
* Stingy: an item added many times before it is handed out is handed out once (dedup), and an
  item is never handed to two workers at once. Adding an item while it is processing only marks
  it dirty; `done` then puts it at the BACK of the queue.
* Multiple consumers and producers: any number of workers may `get` concurrently; with a Kernel
  clock they `await q.get_async()`, and each added item wakes exactly one waiting worker, in the
  order they started waiting (upstream's `cond.Signal`).
* Shutdown: after `shut_down()` new adds are dropped, `get` keeps handing out what is already
  queued and then reports `shutdown=True`; `done` still re-queues a dirty item.
* Deterministic: no wall clock, no set-order dependence (the FIFO is a deque; `processing`
  is an insertion-ordered dict, so "start order" is well defined).
* Causes (controlplane.trace): while traced, a dirty item remembers the queue.add record that
  made it dirty; the queue.get that hands it out is caused by that add, and becomes the current
  cause of the worker that took it.

Invariant (upstream's, kept verbatim): every element of the FIFO is in `dirty` and not in
`processing`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from types import EllipsisType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from controlplane.trace import NULL_TRACE, Clock, Trace
from controlplane.workqueue.metrics import MetricsProvider, QueueMetrics

if TYPE_CHECKING:
    from controlplane.kernel import Future

T = TypeVar("T", bound=Hashable)


class _ZeroClock:
    """Clock of a queue built without one: every duration is 0."""

    __slots__ = ()
    now = 0.0


_ZERO_CLOCK = _ZeroClock()


def _sort_key(item: Any) -> str:
    # Keys are "<namespace>/<name>" strings; str() keeps sorting total for any hashable item.
    return str(item)


class Queue(Generic[T]):
    """A work queue of hashable items (in ctrlscope, `"<namespace>/<name>"` keys).

    The caller's duties: call `get` only when `len(q) > 0` or after `shut_down()` (it never
    blocks; workers that want to wait use `get_async`), and call `done(item)` when finished with
    every item `get` returned, or the item is never handed out again.

    `clock` is anything with `.now`; when it is a Kernel (has `create_future`), `get_async` and
    `shut_down_with_drain`'s future are available. `metrics_provider` receives upstream's
    metrics for a named queue; `q.metrics` is kept regardless.
    """

    __slots__ = (
        "_add_causes",
        "_clock",
        "_dirty",
        "_drain",
        "_drain_future",
        "_kernel",
        "_processing",
        "_queue",
        "_shutting_down",
        "_trace",
        "_waiters",
        "metrics",
        "name",
    )

    def __init__(
        self,
        clock: Clock | None = None,
        name: str | None = None,
        *,
        trace: Trace | None = None,
        metrics_provider: MetricsProvider | None = None,
    ) -> None:
        self._clock: Clock = clock if clock is not None else _ZERO_CLOCK
        # Duck-typed so that a test's fake clock (only `.now`) works; a Kernel also schedules.
        self._kernel: Any = clock if hasattr(clock, "create_future") else None
        self.name = name
        self._trace = trace if trace is not None else NULL_TRACE
        # The order in which items are handed out. Every element is in `_dirty`, none is in
        # `_processing`.
        self._queue: deque[T] = deque()
        # Items that need processing: queued ones, plus processing ones added again meanwhile.
        self._dirty: set[T] = set()
        # Items handed out and not yet done -> the virtual time they were handed out. Insertion
        # order is start order (the snapshot shows it; metrics read the start times).
        self._processing: dict[T, float] = {}
        self._shutting_down = False
        self._drain = False
        self._drain_future: Any = None
        # Futures of workers parked in `get_async`, oldest first.
        self._waiters: deque[Any] = deque()
        # Dirty item -> seq of the queue.add that made it dirty (kept only while traced).
        self._add_causes: dict[T, int] = {}
        self.metrics = QueueMetrics(self._clock, self._processing, name, metrics_provider)

    # -- the upstream interface ------------------------------------------------------------
    def add(self, item: T, *, cause: int | EllipsisType | None = ...) -> None:
        """Mark `item` as needing processing. Dropped silently after shut down. `cause`: the
        trace record that caused the add when it is not the current cause (a delayed add)."""
        if self._shutting_down:
            return
        dirty = self._dirty
        if item in dirty:
            # Already pending: no second entry and no reorder (upstream's Touch is a no-op for
            # the default FIFO).
            return
        self.metrics.add(item)
        dirty.add(item)
        if self._trace.enabled:
            # `depth`: queued items once this add has taken effect (a deferred add queues nothing).
            depth = len(self._queue) + (item not in self._processing)
            seq = self._trace.emit("queue.add", cause, queue=self.name, key=item, depth=depth)
            if seq is not None:
                self._add_causes[item] = seq
        if item in self._processing:
            # Deferred: `done` queues it, so one worker never races another on the same key.
            return
        self._queue.append(item)
        if self._waiters:
            self._signal()

    def get(self, *, worker: str | None = None) -> tuple[T | None, bool]:
        """Hand out the oldest queued item: `(item, False)`, or `(None, True)` once the queue is
        shut down and empty. You must call `done(item)` when you have finished with it.

        Raises RuntimeError when called on an empty queue that is not shut down: upstream would
        block there, which a simulation cannot do (await `get_async` instead).
        """
        queue = self._queue
        if not queue:
            if self._shutting_down:
                return None, True
            raise RuntimeError(
                f"get() on the empty, live workqueue {self.name!r}: call it only when len(q) > 0 "
                "or after shut_down(), or await get_async()"
            )
        item = queue.popleft()
        now = self._clock.now
        self._processing[item] = now
        self._dirty.discard(item)
        self.metrics.get(item, now)
        if self._trace.enabled:
            self._emit_taken(item, worker, len(queue))
        return item, False

    def take(self, item: T, *, worker: str | None = None) -> bool:
        """What-if, not in client-go: hand out the queued `item` now, out of FIFO order, as `get`
        would hand it out (dirty -> processing). False, changing nothing, when `item` is not
        queued (absent, or processing). You must call `done(item)` as after `get`."""
        if item not in self._dirty or item in self._processing:
            return False
        self._queue.remove(item)
        now = self._clock.now
        self._processing[item] = now
        self._dirty.discard(item)
        self.metrics.get(item, now)
        if self._trace.enabled:
            self._emit_taken(item, worker, len(self._queue))
        return True

    def done(self, item: T, *, worker: str | None = None) -> None:
        """Mark `item` as finished. If it was added again while processing, it is queued now, at
        the back. Calling it for an item that is not processing does nothing (upstream would
        append a dirty item a second time, breaking its own invariant)."""
        started = self._processing.pop(item, None)
        if started is None:
            return
        self.metrics.done(started, self._clock.now)
        if self._trace.enabled:
            self._emit_with_worker("queue.done", item, worker, len(self._queue) + (item in self._dirty))
        if item in self._dirty:
            self._queue.append(item)
            if self._waiters:
                self._signal()
        elif not self._processing and self._drain_future is not None:
            # Upstream signals here to release ShutDownWithDrain.
            self._release_drain()

    def __len__(self) -> int:
        """Number of queued items (excludes processing and, for subclasses, delayed ones)."""
        return len(self._queue)

    def shut_down(self) -> None:
        """Drop every later add and tell workers to exit once the queue is empty. Returns at once;
        cancels a pending `shut_down_with_drain` wait (its future resolves)."""
        self._drain = False
        self._shut_down()
        if self._drain_future is not None:
            self._release_drain()

    def shut_down_with_drain(self) -> Any:
        """Like `shut_down`, but the caller wants to wait until every processing item is done.

        Upstream blocks; here, with a Kernel clock, this returns a kernel Future resolved when no
        item is processing (at once if none is) or when `shut_down()` cancels the wait. Without
        a Kernel it returns None. Your workers must keep calling `done`, or it never resolves.
        """
        self._drain = True
        self._shut_down()
        kernel = self._kernel
        if kernel is None:
            return None
        fut = self._drain_future
        if fut is None:
            fut = self._drain_future = kernel.create_future()
            if not self._processing:
                self._release_drain()
        return fut

    def shutting_down(self) -> bool:
        return self._shutting_down

    # -- waiting workers (Kernel clock only) -----------------------------------------------
    async def get_async(self, *, worker: str | None = None, parked: Future | None = None) -> tuple[T | None, bool]:
        """`get`, waiting through the kernel while the queue is empty and live (upstream's
        blocking Get). Each added item wakes one waiter, oldest first; shut down wakes all.
        `parked`: the wake-up a worker restored from a snapshot was waiting for (it is in
        `_waiters` already; see `kernel.resumable`)."""
        kernel = self._kernel
        if kernel is None:
            raise RuntimeError("get_async() needs a Kernel as the queue's clock")
        fut = parked
        while fut is not None or (len(self) == 0 and not self._shutting_down):
            if fut is None:
                fut = kernel.create_future()
                self._waiters.append(fut)
            try:
                await fut
            except BaseException:
                # Cancelled while parked: hand an already-consumed wake-up to the next waiter,
                # or leave the line, so no added item is left without a worker.
                if fut.done():
                    self._signal()
                else:
                    self._waiters.remove(fut)
                raise
            fut = None
        return self.get(worker=worker)

    def _signal(self) -> None:
        waiters = self._waiters
        if waiters:
            waiters.popleft().set_result(None)

    def _broadcast(self) -> None:
        waiters, self._waiters = self._waiters, deque()
        for fut in waiters:
            fut.set_result(None)

    def _shut_down(self) -> None:
        self._shutting_down = True
        self._broadcast()

    def _release_drain(self) -> None:
        fut, self._drain_future = self._drain_future, None
        if not fut.done():
            fut.set_result(None)

    # -- observation -----------------------------------------------------------------------
    def _emit_taken(self, item: T, worker: str | None, depth: int) -> None:
        """queue.get, caused by the add that made `item` dirty; the taker's step starts here."""
        cause = self._add_causes.pop(item, None)
        trace = self._trace
        if worker is None:
            trace.begin("queue.get", cause, queue=self.name, key=item, depth=depth)
        else:
            trace.begin("queue.get", cause, queue=self.name, key=item, worker=worker, depth=depth)

    def _emit_with_worker(self, kind: str, item: T, worker: str | None, depth: int) -> None:
        """`depth`: queued items once the step has taken effect (the queue depth gauge)."""
        if worker is None:
            self._trace.emit(kind, queue=self.name, key=item, depth=depth)
        else:
            self._trace.emit(kind, queue=self.name, key=item, worker=worker, depth=depth)

    def snapshot(self) -> dict[str, Any]:
        """The queue's state for the UI: plain, JSON-ready data, deterministic order. A pure
        read: taking a snapshot never changes what the queue does next."""
        return {
            "name": self.name,
            "queue": list(self._queue),
            "dirty": sorted(self._dirty, key=_sort_key),
            "processing": [{"key": k, "startedAt": t} for k, t in self._processing.items()],
            "waiting": self._waiting_snapshot(),
            "requeues": self._requeues_snapshot(),
            "depth": self.metrics.depth,
            "adds": self.metrics.adds,
            "retries": self.metrics.retries,
        }

    def _waiting_snapshot(self) -> list[dict[str, Any]]:
        return []

    def _requeues_snapshot(self) -> dict[Any, int]:
        return {}

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.name!r} queued={len(self._queue)} "
            f"processing={len(self._processing)}>"
        )

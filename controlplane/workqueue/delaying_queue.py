"""The delaying queue (client-go `util/workqueue/delaying_queue.go`, spec §2.2): a `Queue` that
can also add an item later.

Guarantees
----------
* `add_after(item, d)` adds `item` once the clock reaches `now + d` (normal dedup applies then);
  with `d <= 0` it adds at once. Every call counts one retry, whatever `d` (upstream's
  `metrics.retry()` runs before the `d <= 0` shortcut).
* Earlier wins: an item already waiting keeps the earlier of its two ready times; a later
  `add_after` never pushes it back. An item can be queued or processing and waiting at the same
  time; the waiting entry adds it again when it fires.
* Items become ready in `(readyAt, insertion sequence)` order, so equal ready times keep the
  order in which they were scheduled.
* Due items are promoted lazily at the start of every public method, so a fake clock with only
  `.now` works (advance it, call `len()`/`get()`, the item is there). With a Kernel clock exactly
  one kernel timer is armed, for the heap head, so a worker parked in `get_async` wakes on time.
  Upstream's 10 s heartbeat is not emulated: it only guards against missed timer wake-ups, which
  cannot happen here.
* Shut down discards every waiting entry.
"""

from __future__ import annotations

import heapq
from types import EllipsisType
from typing import Any

from controlplane.kernel import vtime
from controlplane.trace import Clock, Trace
from controlplane.workqueue.metrics import MetricsProvider
from controlplane.workqueue.queue import Queue, T


# Marks a heap entry replaced by an earlier one for the same item (lazy deletion: cheaper than
# re-heapifying, and the stale entry is dropped when it reaches the head).
class _Superseded:
    """The type of `_SUPERSEDED`: a snapshot keeps it the one object (pickled by name)."""

    __slots__ = ()

    def __reduce__(self) -> str:
        return "_SUPERSEDED"


_SUPERSEDED: Any = _Superseded()


class DelayingQueue(Queue[T]):
    """A `Queue` with `add_after`. `clock` is required (ready times are measured on it)."""

    __slots__ = ("_call_at", "_seq", "_timer", "_waiting", "_waiting_entries")

    def __init__(
        self,
        clock: Clock,
        name: str | None = None,
        *,
        trace: Trace | None = None,
        metrics_provider: MetricsProvider | None = None,
    ) -> None:
        if clock is None:
            raise TypeError("DelayingQueue needs a clock (anything with .now)")
        super().__init__(clock, name, trace=trace, metrics_provider=metrics_provider)
        # Min-heap of [readyAt, seq, item, cause (the add_after record's seq)]; `item` is
        # _SUPERSEDED when an earlier entry replaced it. `_waiting_entries` maps each waiting
        # item to its live entry.
        self._waiting: list[list[Any]] = []
        self._waiting_entries: dict[T, list[Any]] = {}
        self._seq = 0
        self._call_at: Any = getattr(clock, "call_at", None)
        # The one kernel timer, armed for the live head of `_waiting` (None when it is empty).
        self._timer: Any = None

    # -- public methods: each first promotes what is due ------------------------------------
    def add(self, item: T, *, cause: int | EllipsisType | None = ...) -> None:
        self._promote()
        Queue.add(self, item, cause=cause)

    def get(self, *, worker: str | None = None) -> tuple[T | None, bool]:
        self._promote()
        return Queue.get(self, worker=worker)

    def done(self, item: T, *, worker: str | None = None) -> None:
        self._promote()
        Queue.done(self, item, worker=worker)

    def __len__(self) -> int:
        self._promote()
        return len(self._queue)

    def shutting_down(self) -> bool:
        self._promote()
        return self._shutting_down

    def shut_down(self) -> None:
        self._promote()
        Queue.shut_down(self)

    def shut_down_with_drain(self) -> Any:
        self._promote()
        return Queue.shut_down_with_drain(self)

    def take(self, item: T, *, worker: str | None = None) -> bool:
        self._promote()
        return Queue.take(self, item, worker=worker)

    def snapshot(self) -> dict[str, Any]:
        # No promotion here: a snapshot is a pure read (a promotion would add the item at another
        # point of the instant than its timer does, and the run would diverge from a replay). An
        # entry that is due but not yet promoted is listed as waiting with `readyAt <= now`.
        return Queue.snapshot(self)

    def add_after(self, item: T, seconds: float) -> None:
        """Add `item` after `seconds` of virtual time (at once if `seconds <= 0`)."""
        self._promote()
        if self._shutting_down:
            return
        seconds = vtime(seconds)  # an exact virtual duration
        cause = None
        if self._trace.enabled:
            cause = self._trace.emit("queue.add_after", queue=self.name, key=item, delay=seconds)
        self._add_after(item, seconds, cause)

    # -- the waiting heap -------------------------------------------------------------------
    def _add_after(self, item: T, seconds: float, cause: int | None = None) -> None:
        """`cause`: the add_after / add_rate_limited record; the add it leads to is caused by it."""
        self.metrics.retry()
        if seconds <= 0:
            Queue.add(self, item, cause=cause if cause is not None else ...)
            return
        ready_at = vtime(self._clock.now + seconds)
        if ready_at <= self._clock.now:
            # A delay too small to move a float clock is already due (upstream: an entry whose
            # readyAt is not after now when received is added immediately).
            Queue.add(self, item, cause=cause if cause is not None else ...)
            return
        entry = self._waiting_entries.get(item)
        if entry is not None:
            if ready_at >= entry[0]:
                return  # earlier wins: never push a waiting item back
            entry[2] = _SUPERSEDED
        self._seq += 1
        entry = [ready_at, self._seq, item, cause]
        heapq.heappush(self._waiting, entry)
        self._waiting_entries[item] = entry
        if self._waiting[0] is entry:
            self._arm()

    def _promote(self) -> None:
        """Add every waiting item whose ready time has come, earliest first."""
        heap = self._waiting
        if not heap or heap[0][0] > self._clock.now:
            return
        now = self._clock.now
        entries = self._waiting_entries
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            item = entry[2]
            if item is _SUPERSEDED:
                continue
            del entries[item]
            # Caused by the add_after that put it here, not by whoever promotes it now.
            Queue.add(self, item, cause=entry[3] if entry[3] is not None else ...)
        self._arm()

    def _arm(self) -> None:
        """Keep exactly one kernel timer, at the live head's ready time."""
        heap = self._waiting
        while heap and heap[0][2] is _SUPERSEDED:
            heapq.heappop(heap)
        if self._call_at is None:
            return
        timer = self._timer
        if not heap:
            if timer is not None:
                timer.cancel()
                self._timer = None
            return
        head = heap[0][0]
        if timer is not None:
            if timer.when == head:
                return
            timer.cancel()
        self._timer = self._call_at(head, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._promote()
        # `_promote` returns early if the head is not due (it may already have been promoted
        # lazily at this instant); the head still needs its timer.
        if self._timer is None:
            self._arm()

    def _shut_down(self) -> None:
        Queue._shut_down(self)
        # Upstream's waiting loop exits on shut down; its entries are never added.
        self._waiting.clear()
        self._waiting_entries.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _waiting_snapshot(self) -> list[dict[str, Any]]:
        live = sorted(self._waiting_entries.values())
        return [{"key": entry[2], "readyAt": entry[0]} for entry in live]

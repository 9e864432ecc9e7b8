"""A watch stream: committed events on their way from the server to one consumer.

The server hands every committed event that the watch selects to `Watch` at commit time; the
watch delivers it to its consumer *through the kernel*, `latency` seconds later. This is the
"watch delay" that makes informer caches lag behind the store.

Guarantees
----------
* Order: events reach the consumer in commit order (a watch is one ordered stream; a later event
  never overtakes an earlier one, even if `latency` is lowered meanwhile).
* Batching: one kernel callback per delivery instant hands the consumer *every* event due at that
  instant, as `on_events(events)` with `events` a list of `(type, object)`; `type` is `ADDED`,
  `MODIFIED` or `DELETED` (a DELETED carries the object's last state).
* Cost per committed event: one append, and at most one kernel timer per distinct delivery instant.
* States: a watch is *open* (delivering), *paused* (events accumulate, the consumer's view goes
  stale; `resume()` hands over everything accumulated at once), or *closed*. It closes by
  `stop()` (the consumer ends it: no callback) or `drop()` (the server ends it: pending events are
  discarded and `on_close("dropped")` is called through the kernel).
* Nothing is delivered before `start()` registers the consumer; events committed meanwhile wait.

Objects handed to the consumer are the server's own (shared) dicts: never mutate them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from controlplane.kernel import vtime

if TYPE_CHECKING:
    from controlplane.kernel import Kernel

Obj = dict[str, Any]
Event = tuple[str, Obj]
EventsConsumer = Callable[[list[Event]], None]
CloseConsumer = Callable[[str], None]
Predicate = Callable[[Obj], bool]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

_NEVER = float("-inf")
_ALWAYS = float("inf")


class Watch:
    """One open watch on one resource (optionally one namespace, label and field selector).

    Built by `APIServer.watch`; the consumer must call `start(on_events, on_close)`.
    """

    __slots__ = (
        "_armed_until",
        "_closed",
        "_kernel",
        "_on_close",
        "_on_events",
        "_paused",
        "_queue",
        "_unregister",
        "client",
        "id",
        "last_delivered_rv",
        "latency",
        "namespace",
        "predicate",
        "resource",
    )

    def __init__(
        self,
        kernel: Kernel,
        resource: str,
        namespace: str | None,
        predicate: Predicate | None,
        latency: float,
        client: str,
        unregister: Callable[[Watch], None],
        watch_id: int,
    ) -> None:
        self._kernel = kernel
        self.resource = resource
        self.namespace = namespace
        # None when the watch has no label/field selector: the commit path then skips filtering.
        self.predicate = predicate
        self.latency = latency
        self.client = client
        self.id = watch_id
        self._unregister = unregister
        # Events committed and not yet delivered, in commit order.
        self._queue = _EventQueue()
        # The latest instant a delivery timer is scheduled for (-inf: none outstanding).
        self._armed_until = _NEVER
        self._on_events: EventsConsumer | None = None
        self._on_close: CloseConsumer | None = None
        self._paused = False
        self._closed = False
        self.last_delivered_rv = 0

    # -- consumer side ----------------------------------------------------------------------
    def start(self, on_events: EventsConsumer, on_close: CloseConsumer | None = None) -> None:
        """Register the consumer; events already waiting are delivered when due."""
        if self._on_events is not None:
            raise RuntimeError("watch already started")
        self._on_events = on_events
        self._on_close = on_close
        if self._queue.due and not self._paused and not self._closed:
            self._arm(self._queue.due[0])

    def stop(self) -> None:
        """The consumer ends the watch. Pending events are discarded; no close callback."""
        if self._closed:
            return
        self._closed = True
        self._queue.clear()
        self._unregister(self)

    def pause(self) -> None:
        """Stop delivering: events accumulate until `resume()` (the consumer's view goes stale)."""
        self._paused = True

    def resume(self) -> None:
        """Deliver everything accumulated in one batch now, then continue live."""
        if not self._paused:
            return
        self._paused = False
        if self._queue.due and not self._closed and self._on_events is not None:
            self._kernel.call_soon(self._flush)

    def drop(self) -> None:
        """The server ends the watch (connection lost): pending events are lost and the consumer's
        `on_close("dropped")` runs through the kernel."""
        if self._closed:
            return
        self._closed = True
        self._queue.clear()
        self._unregister(self)
        if self._on_close is not None:
            self._kernel.call_soon(self._on_close, "dropped")

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def closed(self) -> bool:
        return self._closed

    def pending(self) -> int:
        """Events committed and selected but not yet handed to the consumer."""
        return len(self._queue.due)

    # -- server side (the commit path) -------------------------------------------------------
    def push(self, rv: int, event_type: str, obj: Obj) -> None:
        """Queue one committed event for delivery `latency` seconds from now."""
        due = vtime(self._kernel.now + self.latency)
        self._queue.append(due, rv, event_type, obj)
        if due > self._armed_until and not self._paused and self._on_events is not None:
            self._arm(due)

    def offer(self, rv: int, event_type: str, obj: Obj, old: Obj | None) -> None:
        """Queue a committed event through the selectors (upstream cacheWatcher semantics):
        an object that starts matching arrives as ADDED, one that stops matching as DELETED
        (its previous state with the new resourceVersion)."""
        predicate = self.predicate
        if predicate is None:
            self.push(rv, event_type, obj)
            return
        if event_type == MODIFIED:
            cur = predicate(obj)
            was = old is not None and predicate(old)
            if cur and was:
                self.push(rv, MODIFIED, obj)
            elif cur:
                self.push(rv, ADDED, obj)
            elif was and old is not None:
                self.push(rv, DELETED, _with_resource_version(old, obj["metadata"]["resourceVersion"]))
        elif predicate(obj):
            self.push(rv, event_type, obj)

    # -- delivery ---------------------------------------------------------------------------
    def _arm(self, when: float) -> None:
        self._armed_until = when
        self._kernel.call_at(when, self._fire)

    def _fire(self) -> None:
        now = self._kernel.now
        if now >= self._armed_until:
            self._armed_until = _NEVER
        if self._closed or self._paused or self._on_events is None:
            return
        due = self._queue.due
        if not due or due[0] > now:
            self._rearm()
            return
        batch, self.last_delivered_rv = self._queue.take(now)
        self._rearm()
        self._on_events(batch)

    def _rearm(self) -> None:
        # Needed only after a start/resume/latency change left events without a timer.
        due = self._queue.due
        if due and due[0] > self._armed_until:
            self._arm(due[0])

    def _flush(self) -> None:
        if self._closed or self._paused or self._on_events is None or not self._queue.due:
            return
        batch, self.last_delivered_rv = self._queue.take(_ALWAYS)
        self._on_events(batch)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "paused" if self._paused else "open"
        return f"<Watch {self.id} {self.resource} ns={self.namespace} {state} pending={len(self._queue.due)}>"


class _EventQueue:
    """A watch's undelivered events as columns: due time, resourceVersion, type, object.

    A tuple per event would live through the watch latency, long enough for Python's GC to
    promote it to its oldest generation (~6 per pod at 100k pods), where only the full
    collections that it brings forward reclaim it; the (type, object) pairs handed to the
    consumer are built at delivery and die young.
    """

    __slots__ = ("due", "objects", "rvs", "types")

    def __init__(self) -> None:
        self.due: deque[float] = deque()
        self.rvs: deque[int] = deque()
        self.types: deque[str] = deque()
        self.objects: deque[Obj] = deque()

    def append(self, due: float, rv: int, event_type: str, obj: Obj) -> None:
        self.due.append(due)
        self.rvs.append(rv)
        self.types.append(event_type)
        self.objects.append(obj)

    def take(self, until: float) -> tuple[list[Event], int]:
        """Remove the events due by `until` (there must be one) and return them as (type,
        object) pairs, oldest first, with the last one's resourceVersion."""
        due, rvs, types, objects = self.due, self.rvs, self.types, self.objects
        batch: list[Event] = []
        rv = 0
        while due and due[0] <= until:
            due.popleft()
            rv = rvs.popleft()
            batch.append((types.popleft(), objects.popleft()))
        return batch, rv

    def clear(self) -> None:
        self.due.clear()
        self.rvs.clear()
        self.types.clear()
        self.objects.clear()


def _with_resource_version(obj: Obj, rv: str) -> Obj:
    """A shallow copy of `obj` whose metadata carries `rv` (the object itself is shared)."""
    copy = dict(obj)
    copy["metadata"] = {**obj["metadata"], "resourceVersion": rv}
    return copy

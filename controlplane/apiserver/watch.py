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
        # (due time, resourceVersion, type, object), in commit order.
        self._queue: deque[tuple[float, int, str, Obj]] = deque()
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
        if self._queue and not self._paused and not self._closed:
            self._arm(self._queue[0][0])

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
        if self._queue and not self._closed and self._on_events is not None:
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
        return len(self._queue)

    # -- server side (the commit path) -------------------------------------------------------
    def push(self, rv: int, event_type: str, obj: Obj) -> None:
        """Queue one committed event for delivery `latency` seconds from now."""
        due = self._kernel.now + self.latency
        self._queue.append((due, rv, event_type, obj))
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
        queue = self._queue
        if not queue or queue[0][0] > now:
            self._rearm()
            return
        batch: list[Event] = []
        popleft = queue.popleft
        rv = self.last_delivered_rv
        while queue and queue[0][0] <= now:
            _, rv, event_type, obj = popleft()
            batch.append((event_type, obj))
        self.last_delivered_rv = rv
        self._rearm()
        self._on_events(batch)

    def _rearm(self) -> None:
        # Needed only after a start/resume/latency change left events without a timer.
        queue = self._queue
        if queue and queue[0][0] > self._armed_until:
            self._arm(queue[0][0])

    def _flush(self) -> None:
        if self._closed or self._paused or self._on_events is None or not self._queue:
            return
        batch = [(event_type, obj) for _, _, event_type, obj in self._queue]
        self.last_delivered_rv = self._queue[-1][1]
        self._queue.clear()
        self._on_events(batch)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "paused" if self._paused else "open"
        return f"<Watch {self.id} {self.resource} ns={self.namespace} {state} pending={len(self._queue)}>"


def _with_resource_version(obj: Obj, rv: str) -> Obj:
    """A shallow copy of `obj` whose metadata carries `rv` (the object itself is shared)."""
    copy = dict(obj)
    copy["metadata"] = {**obj["metadata"], "resourceVersion": rv}
    return copy

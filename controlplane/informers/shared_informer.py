"""SharedInformer: reflector + FIFO + indexer + handler fan-out (client-go `shared_informer.go`,
spec §3.4).

Guarantees
----------
* The indexer is updated before any handler hears of a change.
* Every handler gets every add, update and delete, in order. An update whose old and new
  resourceVersions are equal is a *sync* (periodic resync, or an unchanged object in a relist) and
  goes only to handlers whose resync period is due — as upstream, a relist does not re-announce
  unchanged objects.
* `has_synced()` turns true once the first list has been processed, and stays true.
* Handlers run synchronously inside the FIFO's processing callback, one after another in
  registration order (upstream runs one goroutine per listener; relative order between listeners
  is undefined there, spec §18, and fixed here).
* Causes (controlplane.trace): an informer.event is caused by the request that wrote the object
  at that resourceVersion, and the handlers run with the informer.event as the current cause, so
  the keys they enqueue say which notification enqueued them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.informers.fifo import RealFIFO
from controlplane.informers.reflector import Reflector
from controlplane.informers.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    IndexFunc,
    meta_namespace_index_func,
    meta_namespace_key,
)
from controlplane.kernel import Kernel, Timer, vtime
from controlplane.trace import NULL_TRACE, Trace

MINIMUM_RESYNC_PERIOD = 1.0  # client-go's minimumResyncPeriod (seconds)

Obj = dict[str, Any]


class ResourceEventHandler:
    """Handler with optional callbacks, like client-go's `ResourceEventHandlerFuncs`."""

    __slots__ = ("_next_resync", "add_func", "delete_func", "resync_period", "update_func")

    def __init__(
        self,
        add_func: Callable[[Obj], None] | None = None,
        update_func: Callable[[Obj, Obj], None] | None = None,
        delete_func: Callable[[Obj | DeletedFinalStateUnknown], None] | None = None,
        resync_period: float = 0.0,
    ) -> None:
        self.add_func = add_func
        self.update_func = update_func
        self.delete_func = delete_func
        self.resync_period = resync_period
        self._next_resync = 0.0


class SharedInformer:
    """One resource's informer. `start()` begins list+watch; `stop()` tears it down (the cache is
    then stale for good: a restarted controller builds new informers)."""

    def __init__(
        self,
        kernel: Kernel,
        client: Any,
        resource: str,
        *,
        name: str,
        namespace: str | None = None,
        indexers: dict[str, IndexFunc] | None = None,
        resync_period: float = 0.0,
        watch_latency: float = 0.0,
        trace: Trace | None = None,
    ) -> None:
        self.kernel = kernel
        self.resource = resource
        self.name = name
        self.trace = trace or NULL_TRACE
        self.resync_period = resync_period
        self.indexer = Indexer({NAMESPACE_INDEX: meta_namespace_index_func, **(indexers or {})})
        self.fifo = RealFIFO(kernel, self.indexer, self)
        self.reflector = Reflector(
            kernel,
            client,
            resource,
            self.fifo,
            name=name,
            namespace=namespace,
            watch_latency=watch_latency,
            trace=self.trace,
        )
        self._handlers: list[ResourceEventHandler] = []
        self._synced = False
        self._resync_timer: Timer | None = None
        self._started = False
        self._syncing: list[ResourceEventHandler] | None = None
        self.notifications = 0

    # -- setup ------------------------------------------------------------------------------
    def add_event_handler(self, handler: ResourceEventHandler) -> ResourceEventHandler:
        if handler.resync_period == 0.0:
            handler.resync_period = self.resync_period
        if 0 < handler.resync_period < MINIMUM_RESYNC_PERIOD:
            handler.resync_period = MINIMUM_RESYNC_PERIOD
        handler._next_resync = vtime(self.kernel.now + handler.resync_period)
        self._handlers.append(handler)
        return handler

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        self.indexer.add_indexers(indexers)

    def start(self) -> None:
        self._started = True
        self.reflector.start()
        self._arm_resync()

    def stop(self) -> None:
        self.reflector.stop()
        self.fifo.close()
        if self._resync_timer is not None:
            self._resync_timer.cancel()

    def has_synced(self) -> bool:
        return self._synced

    # -- resync -----------------------------------------------------------------------------
    def set_resync_period(self, period: float) -> None:
        """A new default resync period, for this informer and every handler (a ctrlscope
        what-if: upstream fixes it at start). The next resync is one new period from now."""
        self.resync_period = period
        for handler in self._handlers:
            handler.resync_period = max(period, MINIMUM_RESYNC_PERIOD) if period > 0 else 0.0
            handler._next_resync = vtime(self.kernel.now + handler.resync_period)
        if self._resync_timer is not None:
            self._resync_timer.cancel()
            self._resync_timer = None
        if self._started and self.reflector.state != "stopped":
            self._arm_resync()

    def next_resync(self) -> float | None:
        """When the next periodic resync re-delivers every object to the handlers (None: no
        handler resyncs, or the informer is not running). A pure read, for "will anything happen"."""
        if self._resync_timer is None or not self._started or self.reflector.state == "stopped":
            return None
        periods = [h._next_resync for h in self._handlers if h.resync_period > 0]
        return min(periods) if periods else None

    def _arm_resync(self) -> None:
        periods = [h._next_resync for h in self._handlers if h.resync_period > 0]
        if periods:
            self._resync_timer = self.kernel.call_at(min(periods), self._resync)

    def _resync(self) -> None:
        now = self.kernel.now
        due = [h for h in self._handlers if h.resync_period > 0 and h._next_resync <= now]
        for h in due:
            h._next_resync = vtime(now + h.resync_period)
        if due:
            self._syncing = due
            self.fifo.resync()
        self._arm_resync()

    # -- DeltaHandler (called by the FIFO while processing) ----------------------------------
    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self.notifications += 1
        trace = self.trace
        if trace.enabled:
            outer = trace.cause
            trace.begin(
                "informer.event",
                trace.revision_cause(obj["metadata"].get("resourceVersion")),
                informer=self.name,
                type="add",
                key=meta_namespace_key(obj),
            )
            self._notify_add(obj)
            trace.cause = outer
            return
        self._notify_add(obj)

    def _notify_add(self, obj: Obj) -> None:
        for h in self._handlers:
            if h.add_func is not None:
                h.add_func(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        is_sync = old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion")
        if is_sync:
            # An unchanged object re-listed is a sync notification, and no handler's resync is
            # due at that moment (periodic resyncs arrive through on_resync).
            return
        self.notifications += 1
        trace = self.trace
        if trace.enabled:
            outer = trace.cause
            trace.begin(
                "informer.event",
                trace.revision_cause(new["metadata"].get("resourceVersion")),
                informer=self.name,
                type="update",
                key=meta_namespace_key(new),
            )
            self._notify_update(old, new)
            trace.cause = outer
            return
        self._notify_update(old, new)

    def _notify_update(self, old: Obj, new: Obj) -> None:
        for h in self._handlers:
            if h.update_func is not None:
                h.update_func(old, new)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        self.notifications += 1
        trace = self.trace
        outer = trace.cause if trace.enabled else None
        if trace.enabled:
            tombstone = isinstance(obj, DeletedFinalStateUnknown)
            key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else meta_namespace_key(obj)
            # A tombstone's last state is unknown: the relist that found it gone is the cause.
            cause = outer if isinstance(obj, DeletedFinalStateUnknown) else trace.revision_cause(
                obj["metadata"].get("resourceVersion")
            )
            trace.begin("informer.event", cause, informer=self.name, type="delete", key=key, tombstone=tombstone)
        for h in self._handlers:
            if h.delete_func is not None:
                h.delete_func(obj)
        if trace.enabled:
            trace.cause = outer

    def on_resync(self, objs: list[Obj]) -> None:
        targets, self._syncing = self._syncing or [], None
        for obj in objs:
            for h in targets:
                if h.update_func is not None:
                    h.update_func(obj, obj)

    def on_replaced(self) -> None:
        if not self._synced:
            self._synced = True
            if self.trace.enabled:
                self.trace.emit("informer.synced", informer=self.name, items=len(self.indexer))

    # -- inspection -------------------------------------------------------------------------
    def lag(self) -> int:
        """Changes to this informer's resource committed by the server but not yet in its cache:
        events waiting in the watch (latency, or a paused watch) plus entries waiting in the FIFO.
        (Not the distance to the server's global revision, which other resources also advance.)"""
        return self.reflector.pending() + len(self.fifo)

    def snapshot(self, server_revision: int) -> dict[str, Any]:
        return {
            "name": self.name,
            "resource": self.resource,
            "synced": self._synced,
            "items": len(self.indexer),
            "resourceVersion": self.indexer.last_store_sync_resource_version(),
            "serverRevision": server_revision,
            "lag": self.lag(),
            "pendingDeliveries": self.reflector.pending(),
            "fifo": len(self.fifo),
            "paused": self.reflector.paused,
            "watchLatency": self.reflector.watch_latency,
            "state": self.reflector.state,
            "relists": self.reflector.relists,
        }

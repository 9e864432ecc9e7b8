"""RealFIFO: the in-order informer queue (client-go `the_real_fifo.go`, default since v1.33 and the
only option in 1.36; spec §3.3), with `AtomicFIFO` semantics (on by default in 1.36).

Guarantees
----------
* Every notification is a separate entry, processed in arrival order; nothing is coalesced per key
  ("delivers multiple notifications per item instead of simply the most recent value").
* `replace(objects, rv)` enqueues ONE `ReplacedAll` entry and `resync()` one `SyncAll` entry: when
  processed, the whole store is swapped first, then deletions (as `DeletedFinalStateUnknown`
  tombstones) are announced, then updates/adds in list order.
* Processing updates the indexer BEFORE calling the handler (`processDeltas`), so a handler that
  reads the cache sees at least the object it is told about.

In the simulation the FIFO's consumer is not a goroutine blocked in `Pop`: the first entry added
schedules one kernel callback at the current instant that drains the queue. So a watch delivery and
the processing of what it delivered are two distinct kernel events, and a debugger can see entries
waiting in the FIFO between them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from controlplane.informers.store import (
    DeletedFinalStateUnknown,
    Indexer,
    meta_namespace_key,
)

Obj = dict[str, Any]

ADDED = "Added"
UPDATED = "Updated"
DELETED = "Deleted"
REPLACED_ALL = "ReplacedAll"
SYNC_ALL = "SyncAll"
# A watch batch is queued as it arrives (`extend_from_watch`): its ("ADDED" | "MODIFIED" |
# "DELETED", object) pairs are entries as they are, no new tuple per notification.
WATCH_ADDED = "ADDED"
WATCH_MODIFIED = "MODIFIED"
WATCH_DELETED = "DELETED"
_UPSERTS = frozenset({ADDED, UPDATED, WATCH_ADDED, WATCH_MODIFIED})
_DELETES = frozenset({DELETED, WATCH_DELETED})


class Scheduler(Protocol):
    def call_soon(self, fn: Callable[..., Any], *args: Any) -> Any: ...


class DeltaHandler(Protocol):
    """What the FIFO calls while processing; the shared informer implements it."""

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None: ...
    def on_update(self, old: Obj, new: Obj) -> None: ...
    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None: ...
    def on_replaced(self) -> None: ...
    def on_resync(self, objs: list[Obj]) -> None: ...


class RealFIFO:
    """In-order queue between the reflector and the indexer + handlers."""

    __slots__ = ("_closed", "_entries", "_handler", "_indexer", "_kernel", "_scheduled")

    def __init__(self, kernel: Scheduler, indexer: Indexer, handler: DeltaHandler) -> None:
        self._kernel = kernel
        self._indexer = indexer
        self._handler = handler
        # Invariant: _scheduled is True iff a drain callback is pending in the kernel.
        self._entries: deque[tuple[str, Any]] = deque()
        self._scheduled = False
        self._closed = False

    def __len__(self) -> int:
        return len(self._entries)

    def close(self) -> None:
        """Stop processing: queued entries are dropped (the informer is being torn down)."""
        self._closed = True
        self._entries.clear()

    # -- producers (the reflector) --------------------------------------------------------
    def add(self, obj: Obj) -> None:
        self._push(ADDED, obj)

    def update(self, obj: Obj) -> None:
        self._push(UPDATED, obj)

    def delete(self, obj: Obj) -> None:
        self._push(DELETED, obj)

    def replace(self, objs: list[Obj], resource_version: str) -> None:
        self._push(REPLACED_ALL, (objs, resource_version))

    def resync(self) -> None:
        self._push(SYNC_ALL, None)

    def extend_from_watch(self, events: list[tuple[str, Obj]]) -> None:
        """`add` / `update` / `delete` for each (watch event type, object) of one delivery, in
        order (the same entries, one call per batch)."""
        if self._closed or not events:
            return
        self._entries.extend(events)
        if not self._scheduled:
            self._scheduled = True
            self._kernel.call_soon(self._drain)

    def _push(self, kind: str, payload: Any) -> None:
        if self._closed:
            return
        self._entries.append((kind, payload))
        if not self._scheduled:
            self._scheduled = True
            self._kernel.call_soon(self._drain)

    # -- consumer -------------------------------------------------------------------------
    def _drain(self) -> None:
        self._scheduled = False
        entries = self._entries
        while entries and not self._closed:
            kind, payload = entries.popleft()
            self._process(kind, payload)

    def _process(self, kind: str, payload: Any) -> None:
        indexer = self._indexer
        handler = self._handler
        if kind in _UPSERTS:
            key = meta_namespace_key(payload)
            old = indexer.get_by_key(key)
            indexer.update_key(key, payload)
            if old is not None:
                handler.on_update(old, payload)
            else:
                handler.on_add(payload, False)
        elif kind in _DELETES:
            indexer.delete(payload)
            handler.on_delete(payload)
        elif kind == REPLACED_ALL:
            objs, rv = payload
            listed = {meta_namespace_key(o): o for o in objs}
            previous = {key: indexer.get_by_key(key) for key in indexer.list_keys()}
            tombstones = [
                DeletedFinalStateUnknown(key, old)
                for key, old in previous.items()
                if key not in listed and old is not None
            ]
            indexer.replace(objs, rv)
            for tombstone in tombstones:
                handler.on_delete(tombstone)
            initial = not handler_has_synced(handler)
            for key, obj in listed.items():
                old = previous.get(key)
                if old is not None:
                    handler.on_update(old, obj)
                else:
                    handler.on_add(obj, initial)
            handler.on_replaced()
        elif kind == SYNC_ALL:
            handler.on_resync(indexer.list())


def handler_has_synced(handler: DeltaHandler) -> bool:
    has_synced = getattr(handler, "has_synced", None)
    return bool(has_synced()) if has_synced is not None else True

"""A sorted key index per resource, so a paged list reads one page, not the whole store.

`kubectl get pods -A` asks for 500 rows at a time and follows `continue` tokens: 10,000 pods are
20 requests. Listing through `APIServer.read` walks and sorts every object of the resource on
each of them, and the continuation then filters that whole list by key: O(N log N) per page,
O(N²/limit) for the command. The index keeps the etcd keys (`namespace/name`) of one resource in
sorted order; a page bisects to where the last page ended (or to its namespace) and reads the
objects from there on, one by one, until it has `limit` of them that match.

Guarantees
----------
* The order is the server's list order: `namespace/name` compared as strings (etcd's), which is
  `APIServer._iter`'s order since names and namespaces hold no `/`.
* Before each use the index is brought up to the server's current revision from the server's
  committed events (`events_after`): every change to the store is one event (ADDED and MODIFIED
  leave the key present, DELETED removes it). It is rebuilt from the store instead when the
  history no longer holds those events, when more events than keys have passed (a rebuild is
  cheaper then), when it belongs to another server, or when its size disagrees with the store's
  count (a safety net: it never serves keys the store no longer has, nor misses one it has).
* Objects are read from the store as they are now (`APIServer.peek`): an index that is one event
  behind can never return a stale object, and a read changes nothing (no request log line).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.apiserver import ApiError
from controlplane.apiserver.resources import ResourceInfo
from controlplane.apiserver.server import APIServer

Obj = dict[str, Any]

DELETED = "DELETED"


def key_of(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or ''}/{meta['name']}"


class KeyIndex:
    """The sorted `namespace/name` keys of one resource of one server."""

    def __init__(self, server: APIServer, info: ResourceInfo) -> None:
        self.server = server
        self.info = info
        self.keys: list[str] = []
        self.revision = -1
        self.rebuilds = 0  # how often the keys were read from the store anew (tests, figures)

    def refresh(self) -> None:
        """Bring the keys up to the server's current revision."""
        server = self.server
        revision = server.revision
        if revision == self.revision:
            return
        behind = revision - self.revision
        if self.revision < 0 or behind < 0 or behind > max(len(self.keys), 64):
            self._rebuild()
            return
        try:
            events = server.events_after(self.revision)
        except ApiError:  # the history no longer holds them
            self._rebuild()
            return
        keys, plural = self.keys, self.info.plural
        for _rv, event_type, resource, obj, _old in events:
            if resource != plural:
                continue
            key = key_of(obj)
            at = bisect.bisect_left(keys, key)
            present = at < len(keys) and keys[at] == key
            if event_type == DELETED:
                if present:
                    del keys[at]
            elif not present:
                keys.insert(at, key)
        self.revision = revision
        if len(keys) != server.count(plural):
            self._rebuild()

    def _rebuild(self) -> None:
        self.keys = [key_of(obj) for obj in self.server.objects(self.info.plural)]
        self.revision = self.server.revision
        self.rebuilds += 1

    def walk(self, namespace: str | None, after: str | None) -> Iterator[Obj]:
        """The objects in key order, of `namespace` only when one is given, after the key `after`
        when one is given. Call `refresh()` first; read while the store does not change."""
        keys = self.keys
        lo, hi = 0, len(keys)
        if namespace is not None:
            lo = bisect.bisect_left(keys, namespace + "/")
            hi = bisect.bisect_left(keys, namespace + "0", lo)  # "0" follows "/"
        if after is not None:
            lo = max(lo, bisect.bisect_right(keys, after))
        peek, plural = self.server.peek, self.info.plural
        for i in range(lo, hi):
            namespace_of, _, name = keys[i].partition("/")
            obj = peek(plural, namespace_of or None, name)
            if obj is not None:
                yield obj

    def page(
        self, namespace: str | None, after: str | None, predicate: Callable[[Obj], bool] | None, limit: int | None
    ) -> tuple[list[Obj], bool]:
        """Up to `limit` matching objects (all without one) and whether more match after them."""
        items: list[Obj] = []
        for obj in self.walk(namespace, after):
            if predicate is None or predicate(obj):
                if limit is not None and len(items) == limit:
                    return items, True
                items.append(obj)
        return items, False

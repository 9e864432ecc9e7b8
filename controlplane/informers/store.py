"""The informer's local cache: a keyed store with secondary indexes (client-go
`thread_safe_store.go`, `index.go`, `store.go`).

Guarantees
----------
* Objects are stored by reference, never copied or mutated: the cache shares the API server's
  immutable dicts. Callers must not mutate what they read (STYLE rule 6).
* Every index is kept exact on add/update/delete/replace: `by_index(name, value)` returns exactly
  the stored objects whose index function yields `value`, in insertion order (deterministic; Go's
  map order is not, see spec §18).
* `last_store_sync_resource_version()` is the resourceVersion of the last add/update/delete or
  replace (client-go with `AtomicFIFO`, spec §3.5), used by the consistency store (spec §14).
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Iterable
from typing import Any

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], tuple[str, ...]]

NAMESPACE_INDEX = "namespace"


class DeletedFinalStateUnknown:
    """A delete seen only through a relist: `obj` is the last known (possibly stale) state."""

    __slots__ = ("key", "obj")

    def __init__(self, key: str, obj: Obj) -> None:
        self.key = key
        self.obj = obj

    def __repr__(self) -> str:
        return f"DeletedFinalStateUnknown({self.key!r})"


def meta_namespace_key(obj: Obj) -> str:
    """`<namespace>/<name>`, or `<name>` for cluster-scoped objects (MetaNamespaceKeyFunc).

    Interned: every cache keyed by it then shares one string per object."""
    meta = obj["metadata"]
    ns = meta.get("namespace")
    return namespaced_key(ns, meta["name"]) if ns else meta["name"]


# namespace -> name -> "namespace/name" (interned): the keys of the informers, the kubelets, the
# node simulator and the scheduler, built once per object instead of once per event (a pod's key
# is asked for about nine times in a converge). A name's hash is computed once (the server's
# store is keyed by the same string object), so a look-up is cheaper than building the key.
# Bounded: when a namespace's table reaches KEY_MEMO_LIMIT it starts over.
_KEYS: dict[str, dict[str, str]] = {}
KEY_MEMO_LIMIT = 1 << 17
KEY_MEMO_NAMESPACES = 1024


def namespaced_key(namespace: str, name: str) -> str:
    """`f"{namespace}/{name}"`, interned, remembered (see _KEYS)."""
    keys = _KEYS.get(namespace)
    if keys is not None:
        key = keys.get(name)
        if key is not None:
            return key
    else:
        if len(_KEYS) >= KEY_MEMO_NAMESPACES:
            _KEYS.clear()
        keys = _KEYS[namespace] = {}
    key = sys.intern(f"{namespace}/{name}")
    if type(namespace) is str and type(name) is str:  # only exact strings: no str subclass as key
        if len(keys) >= KEY_MEMO_LIMIT:
            keys.clear()
        keys[name] = key
    return key


def deletion_handling_meta_namespace_key(obj: Obj | DeletedFinalStateUnknown) -> str:
    """Like `meta_namespace_key`, but a tombstone yields its recorded key."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return meta_namespace_key(obj)


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """Inverse of `meta_namespace_key`; ValueError for a malformed key."""
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")


def meta_namespace_index_func(obj: Obj) -> tuple[str, ...]:
    return (obj["metadata"].get("namespace", ""),)


class Indexer:
    """Keyed store + indexes. Index values map to insertion-ordered key sets (dicts)."""

    __slots__ = ("_hints", "_indexers", "_indices", "_items", "_last_rv")

    def __init__(self, indexers: dict[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {}
        # An index function's optional `unchanged(old, new)`: True only when the function
        # would give both objects the same values (see _reindex).
        self._hints: dict[str, Callable[[Obj, Obj], bool]] = {}
        self._indices: dict[str, dict[str, dict[str, None]]] = {}
        self._last_rv = ""
        if indexers:
            self.add_indexers(indexers)

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        for name, fn in indexers.items():
            if name in self._indexers:
                raise ValueError(f"indexer conflict: {name}")
            self._indexers[name] = fn
            hint = getattr(fn, "unchanged", None)
            if hint is not None:
                self._hints[name] = hint
            index: dict[str, dict[str, None]] = {}
            for key, obj in self._items.items():
                for value in fn(obj):
                    index.setdefault(value, {})[key] = None
            self._indices[name] = index

    # -- writes ---------------------------------------------------------------------------
    def add(self, obj: Obj) -> None:
        self._put(meta_namespace_key(obj), obj)

    update = add

    def update_key(self, key: str, obj: Obj) -> None:
        """`update(obj)` for a caller that has already computed `key` (meta_namespace_key)."""
        self._put(key, obj)

    def delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        key = deletion_handling_meta_namespace_key(obj)
        old = self._items.pop(key, None)
        if old is not None:
            self._reindex(key, old, None)
        inner = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self._note_rv(inner)

    def replace(self, objs: Iterable[Obj], resource_version: str) -> None:
        """Swap the whole content for `objs` (a relist)."""
        self._items = {}
        self._indices = {name: {} for name in self._indexers}
        for obj in objs:
            self._put(meta_namespace_key(obj), obj)
        self._last_rv = resource_version

    def _put(self, key: str, obj: Obj) -> None:
        old = self._items.get(key)
        self._items[key] = obj
        if self._indexers:
            self._reindex(key, old, obj)
        self._note_rv(obj)

    def _note_rv(self, obj: Obj | None) -> None:
        if obj is not None:
            rv = obj["metadata"].get("resourceVersion")
            if rv:
                self._last_rv = rv

    def _reindex(self, key: str, old: Obj | None, new: Obj | None) -> None:
        hints = self._hints
        for name, fn in self._indexers.items():
            if old is not None and new is not None and name in hints and hints[name](old, new):
                continue  # the hint: both objects have the same values (most updates)
            old_values = fn(old) if old is not None else ()
            new_values = fn(new) if new is not None else ()
            if old_values == new_values:
                continue
            index = self._indices[name]
            for value in old_values:
                keys = index.get(value)
                if keys is not None:
                    keys.pop(key, None)
                    if not keys:
                        del index[value]
            for value in new_values:
                index.setdefault(value, {})[key] = None

    def set_last_resource_version(self, rv: str) -> None:
        """A bookmark or watch progress moved the cache's resourceVersion."""
        self._last_rv = rv

    # -- reads ----------------------------------------------------------------------------
    def get_by_key(self, key: str) -> Obj | None:
        return self._items.get(key)

    def get(self, namespace: str, name: str) -> Obj | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> builtins.list[Obj]:
        return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        return list(self._items)

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        try:
            keys = self._indices[index_name].get(value, {})
        except KeyError:
            raise KeyError(f"index with name {index_name} does not exist") from None
        items = self._items
        return [items[k] for k in keys]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        return list(self._indices[index_name].get(value, {}))

    def list_index_values(self, index_name: str) -> builtins.list[str]:
        return list(self._indices[index_name])

    def last_store_sync_resource_version(self) -> str:
        return self._last_rv

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

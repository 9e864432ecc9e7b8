"""`MatchingCache`: the v1.5 LRU that remembers which controller a pod's label set maps to
(`pkg/controller/lookup_cache.go` at K15, spec v1.5 §4, R4.4).

Guarantees
----------
* At most `capacity` entries; `get` refreshes an entry's recency, `add` replaces an entry or
  evicts the least recently used one when full, `invalidate_all` empties the cache.
* The key is the exact `(namespace, frozenset(labels.items()))` of the pod, where upstream keys
  by a 32-bit adler32 hash of the same data (a deviation, spec §15.3: only hash collisions,
  which upstream survives through its validity check, behave differently).
* The value is the controller object as it was when cached (R4.4: a later copy is never
  substituted; the validity check is the caller's, `ReplicationManager.is_cache_valid`).
* Counters (`hits`, `misses`, `invalidations`) are the caller's to keep: a hit is only a hit
  once the cached controller passed the validity check.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]
CacheKey = tuple[str, frozenset[tuple[str, str]]]

DEFAULT_LOOKUP_CACHE_SIZE = 4096  # --replication-controller-lookup-cache-size
SNAPSHOT_ENTRIES = 50  # entries a snapshot shows (most recently used first)


def cache_key(namespace: str, labels: Mapping[str, str] | None) -> CacheKey:
    """`keyFunc(pod)`: the pod's namespace and labels, exactly."""
    return (namespace, frozenset((labels or {}).items()))


class MatchingCache:
    def __init__(self, capacity: int = DEFAULT_LOOKUP_CACHE_SIZE) -> None:
        if capacity < 1:
            raise ValueError("a lookup cache holds at least 1 entry")
        self.capacity = capacity
        # Least recently used first. Invariant: len(_entries) <= capacity.
        self._entries: OrderedDict[CacheKey, Obj] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.invalidations = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey) -> Obj | None:
        """`GetMatchingObject`: the cached controller, refreshed as most recently used."""
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def add(self, key: CacheKey, controller: Obj) -> None:
        """`Add`: remember `controller` for `key`, evicting the least recently used if full."""
        self._entries[key] = controller
        self._entries.move_to_end(key)
        if len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def invalidate_all(self) -> None:
        """`InvalidateAll`: a new, empty LRU."""
        self._entries = OrderedDict()
        self.invalidations += 1

    def snapshot(self) -> dict[str, Any]:
        entries: list[Obj] = []
        for (namespace, labels), rc in reversed(self._entries.items()):
            if len(entries) == SNAPSHOT_ENTRIES:
                break
            entries.append({"namespace": namespace, "labels": dict(sorted(labels)), "rc": rc["metadata"]["name"]})
        return {
            "size": len(self._entries),
            "capacity": self.capacity,
            "hits": self.hits,
            "misses": self.misses,
            "invalidations": self.invalidations,
            "entries": entries,
        }

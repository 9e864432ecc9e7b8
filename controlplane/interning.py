"""Bounded intern tables: one object for every equal immutable fragment.

Stored objects are immutable by convention (nobody mutates what it did not create), so the same
condition dict, container-name tuple, Event message or involvedObject can be shared by every pod
or Event that has an equal one: it is what keeps 100,000 pods within a few KB each. A table is a
plain dict owned by the module that interns into it; when it reaches its limit it is cleared
(not evicted entry by entry: the next misses refill it with what is current). Nothing observable
depends on whether two equal objects are one: sharing changes memory, never a report or a trace.
"""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def keep(table: dict[K, V], key: K, value: V, limit: int) -> V:
    """Store `value` under `key` (after a miss), clearing the table first when it is full; returns
    `value`. For callers that look up before they build what they would store."""
    if len(table) >= limit:
        table.clear()
    table[key] = value
    return value


def intern(table: dict[K, V], key: K, value: V, limit: int) -> V:
    """The object already kept under `key`, else `value`, kept from now on."""
    hit = table.get(key)
    return hit if hit is not None else keep(table, key, value, limit)

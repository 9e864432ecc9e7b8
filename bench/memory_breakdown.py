"""Where a converged simulation's memory is: the retained size of each part of the world.

`breakdown(sim, pods)` walks the data each part holds (builtin containers, strings, numbers and the
core's record classes), counting every object once, in the first part that reaches it, in the
order of `PARTS`: shared fragments (a condition dict every pod points at) are charged to the
store, where they first appear. Process objects (kernel, clients, controllers, tasks, bound
methods, functions, classes, modules) are not walked: they are the same few hundred KB at any
size. Returns KB per pod for each part, the total, the current RSS per pod, and the number of
objects Python's collector tracks per pod (what a full collection has to traverse).
"""

from __future__ import annotations

import gc
import sys
from array import array
from collections import OrderedDict, deque
from typing import Any

_LEAVES = (str, bytes, int, float, bool, type(None), array, bytearray)
_CONTAINERS = (dict, list, tuple, set, frozenset, deque, OrderedDict)
# The core's own data records (slotted), walked like containers.
_RECORDS = {
    "_PodRecord",  # kubelet
    "_Node",  # garbage collector graph
    "_NodeInfo",  # scheduler
    "Timer",  # kernel queue entries
    "_History",
    "_ResourceHistory",
    "_EventQueue",
    "Indexer",
    "RequestLog",
    "DeletedFinalStateUnknown",
    "Watch",
    "_Expectations",
    "UIDTrackingControllerExpectations",
    "ControllerExpectations",
    "ControlleeExpectations",
    "_Bucket",
}


def _size_of(root: Any, seen: set[int]) -> tuple[int, int]:
    """Bytes and objects reachable from `root` through data, not counting ones in `seen`."""
    total = 0
    count = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        oid = id(obj)
        if oid in seen:
            continue
        if isinstance(obj, _LEAVES):
            seen.add(oid)
            total += sys.getsizeof(obj)
            count += 1
            continue
        if not isinstance(obj, _CONTAINERS) and type(obj).__name__ not in _RECORDS:
            continue  # a process object: not walked
        seen.add(oid)
        total += sys.getsizeof(obj)
        count += 1
        stack.extend(gc.get_referents(obj))
    return total, count


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4


def _recorders(sim: Any, controllers: list[Any]) -> list[Any]:
    """The EventRecorder of every component: controllers, the scheduler and each kubelet."""
    nodes = sim.nodes
    found = [c.recorder for c in controllers]
    found.append(nodes.scheduler.recorder)
    found.extend(k.recorder for k in nodes.kubelets.values())
    return found


def _recorder_data(recorder: Any) -> list[Any]:
    """What a recorder holds per object (its `_LRU`s are slotted and not walked themselves)."""
    return [recorder._spam._entries, recorder._aggregate._entries, recorder._log._entries, recorder._outbox]


def breakdown(sim: Any, pods: int) -> dict[str, Any]:
    from controlplane.apiserver import decode
    from controlplane.informers import store as key_table

    server = sim.server
    store = server._store
    nodes = sim.nodes
    controllers = list(sim.controllers.values())
    parts: list[tuple[str, list[Any]]] = [
        ("store (pods)", [store["pods"]]),
        ("store (Events)", [store["events"]]),
        ("store (other)", [v for k, v in store.items() if k not in ("pods", "events")]),
        ("watch history", [server._history]),
        ("request log", [server.requests]),
        ("kubelets", [k.pods for k in nodes.kubelets.values()]),
        ("node simulator + scheduler caches", [nodes.pods, nodes._by_node, nodes._pod_states, vars(nodes.scheduler)]),
        ("garbage-collector graph", [vars(sim.gc)]),
        (
            "informers (controller caches, expectations)",
            [
                [c.pod_informer.indexer, c.rs_informer.indexer, c.expectations, c._selectors]
                for c in controllers
            ],
        ),
        # Every component's recorder: the correlator's three LRU caches (spam buckets, similar-event
        # records, the eventLog of each Event) and the outbox of Events not yet posted.
        ("event recorders (all components)", [_recorder_data(r) for r in _recorders(sim, controllers)]),
        ("watches (undelivered)", [w for ws in server._watches.values() for w in ws]),
        ("kernel queue", [sim.kernel._heap, sim.kernel._ready]),
        # Process-wide memo tables of the core (bounded): namespace/name keys, the API server's
        # shared bound specs and the body type check's memo.
        (
            "memo tables (keys, bound specs, type check)",
            [
                key_table._KEYS,
                server._spec_content,
                server._canonical_specs,
                server._bound_specs,
                decode._memo_entries,
                decode._valid_times,
            ],
        ),
    ]
    seen: set[int] = set()
    out: dict[str, Any] = {}
    total = 0
    for name, roots in parts:
        size, count = _size_of(roots, seen)
        total += size
        out[name] = {"kb_per_pod": round(size / 1024 / pods, 3), "objects_per_pod": round(count / pods, 2)}
    gc.collect()
    tracked = len(gc.get_objects())
    return {
        "parts": out,
        "total_kb_per_pod": round(total / 1024 / pods, 3),
        "rss_now_kb_per_pod": round(_rss_kb() / pods, 3),
        "gc_tracked_per_pod": round(tracked / pods, 2),
    }

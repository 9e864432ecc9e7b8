"""Oracles an operator's author adds for their own operator (docs/operators.md, "Write an oracle").

An oracle is a predicate over the world's store, declared in the operator's module beside its
handlers:

    from controlplane.operators.oracle import Store, oracle

    @oracle("one-sidecar-per-replicaset")
    def one_sidecar(store: Store) -> Iterator[str]:
        for rs in store.list("replicasets"):
            ...
            yield f"ReplicaSet {key} has 2 sidecars: a, b"

It returns (or yields) what is wrong, one message per violation, and nothing (None, or no
messages) when the promise holds. The fault swarm checks every oracle of every operator of a
world where it checks its own liveness oracles (after the quiet period that follows the lift of
every fault, and once more later), beside the built-in ones, under the name
`<operator>:<oracle name>`; an oracle that raises is a violation of itself.

Guarantees
----------
* Importing this module imports neither kopf nor the simulation: the decorator only marks the
  function. The host collects the marked functions of a module after importing it, in the
  module's order, so a restarted operator (its module imported afresh) has the same oracles.
* The store the oracle reads is a copy: what it changes is not the world's.
* A bad declaration fails when the module is imported (a clear `ValueError`), which the scenario
  reports as `operators[i].module: … could not be imported: ValueError: …`.
"""

from __future__ import annotations

import copy
import re
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

Obj = dict[str, Any]
MARK = "__ctrlscope_oracle__"
NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
MAX_ORACLES = 32
"""Oracles one operator module may declare."""
MAX_MESSAGES = 20
"""Messages of one oracle kept per check (the rest are counted, not kept)."""
MAX_MESSAGE = 500
"""Characters of one message kept."""

Predicate = Callable[["Store"], "str | Iterable[str] | None"]


class _Server(Protocol):
    def objects(self, resource: str) -> Iterator[Obj]: ...


class Store:
    """What an oracle reads: the API server's objects, by resource (`pods`, `replicasets`, …),
    as copies, and the virtual time of the check."""

    def __init__(self, server: _Server, now: float) -> None:
        self._server = server
        self.now = now

    def list(self, resource: str, namespace: str | None = None) -> list[Obj]:
        """Every object of `resource` (in `namespace` when given), in the store's order."""
        return [
            copy.deepcopy(obj)
            for obj in self._server.objects(resource)
            if namespace is None or obj["metadata"].get("namespace") == namespace
        ]

    def get(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        """One object, or None."""
        for obj in self._server.objects(resource):
            meta = obj["metadata"]
            if meta["name"] == name and meta.get("namespace") == namespace:
                return copy.deepcopy(obj)
        return None


def oracle(name: str) -> Callable[[Predicate], Predicate]:
    """Decorator: declare `fn(store) -> messages` as the oracle `name` (a DNS label, unique in
    its module)."""
    if not isinstance(name, str) or not NAME.match(name):
        raise ValueError(f"an oracle's name must be a DNS label (lowercase letters, digits, '-'), not {name!r}")

    def mark(fn: Predicate) -> Predicate:
        if not callable(fn):
            raise ValueError(f"@oracle({name!r}) decorates a function of the store, not {type(fn).__name__}")
        setattr(fn, MARK, name)
        return fn

    return mark


def collect(module: types.ModuleType) -> list[tuple[str, Predicate]]:
    """The oracles a module declares, in its order; ValueError for two with one name or too many."""
    found: list[tuple[str, Predicate]] = []
    for value in list(vars(module).values()):
        name = getattr(value, MARK, None) if callable(value) else None
        if not isinstance(name, str):
            continue
        if any(name == seen for seen, _ in found):
            raise ValueError(f"two oracles are named {name!r}: give each its own name")
        found.append((name, value))
        if len(found) > MAX_ORACLES:
            raise ValueError(f"at most {MAX_ORACLES} oracles in one operator module")
    return found


def messages(found: object) -> tuple[list[str], int]:
    """What an oracle returned, as (messages kept, messages in all): None or a string or an
    iterable of strings (anything else is said to be wrong in one message)."""
    if found is None:
        return [], 0
    if isinstance(found, str):
        return [found[:MAX_MESSAGE]], 1
    if not isinstance(found, Iterable):
        return [f"the oracle returned {type(found).__name__}, not messages (None, a string, or strings)"], 1
    kept: list[str] = []
    total = 0
    for item in found:
        total += 1
        if total > 10_000:  # a ceiling on what one check reads
            break
        if len(kept) < MAX_MESSAGES:
            kept.append(str(item)[:MAX_MESSAGE])
    return kept, total

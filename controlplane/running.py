"""A running world as the modules that act on it or judge it see it, and the registry of oracles.

`RunningWorld` is what faults (`controlplane.faults`), checks (`controlplane.checks`) and oracles
(`controlplane.oracles`) reach of a simulation; `controlplane.world.Simulation` is the one world
that has it. They name this protocol instead of the world because the world imports them (its
faults, and its scenarios, which validate their `expect:` list with the checks): the arrows run
one way, from the world down.

Oracles are checks by name (`{oracle: NAME}`): a module registers one with `register_oracle`;
`controlplane.checks` imports `controlplane.oracles`, so the built-in ones are registered before a
file's checks are validated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from controlplane.apiserver import APIServer
    from controlplane.kernel import Kernel
    from controlplane.nodes import NodeSimulator
    from controlplane.replicaset import ReplicaSetController
    from controlplane.replication import ReplicationManager
    from controlplane.trace import Record, Trace

Obj = dict[str, Any]


class Timeline(Protocol):
    """The scenario a world was started from, as far as its judges read it."""

    @property
    def actions(self) -> list[Obj]: ...


class RunningWorld(Protocol):
    """A simulation's parts (see `controlplane.world.Simulation` for what each is). Checks and
    oracles only read them; faults act through them as a real failure would."""

    @property
    def scenario(self) -> Timeline: ...
    @property
    def config(self) -> Obj: ...
    @property
    def kernel(self) -> Kernel: ...
    @property
    def trace(self) -> Trace: ...
    @property
    def server(self) -> APIServer: ...
    @property
    def nodes(self) -> NodeSimulator: ...
    @property
    def controllers(self) -> dict[str, ReplicaSetController | ReplicationManager]: ...
    @property
    def syncs(self) -> list[Obj]: ...
    @property
    def now(self) -> float: ...
    def start(self) -> None: ...
    def subscribe(self, fn: Callable[[Record], None]) -> Callable[[], None]: ...


# -- oracles (the reliability work's properties, by name) -----------------------------------


@dataclass
class OracleVerdict:
    ok: bool
    wanted: str
    got: Any = None


Oracle = Callable[[RunningWorld, Obj], OracleVerdict]
ORACLES: dict[str, Oracle] = {}


def register_oracle(name: str) -> Callable[[Oracle], Oracle]:
    """Decorator: `@register_oracle("safety") def safety(sim, args) -> OracleVerdict`. An oracle
    reads the simulation (never changes it) and is judged where its check says (`at` or the end)."""

    def register(fn: Oracle) -> Oracle:
        ORACLES[name] = fn
        return fn

    return register

"""The garbage-collector policy for running simulations: one place, used by the headless runner,
the fault swarm, the dashboard host and the benchmarks.

Why
---
A simulation holds hundreds of thousands of long-lived container objects (pods, their status
fragments, informer caches, watch history) and allocates millions of short-lived ones that die by
reference counting. With CPython's default thresholds `(700, 10, 10)` the young generations fill
thousands of times per converge and every 25 % growth of the old generation triggers a *full*
collection that traverses all of it: at 100,000 pods about a third of the wall time, and none of
it finds anything (a converge creates no reference cycles). So while a simulation runs:

* `gc.freeze()` when the hold begins: everything alive then (the interpreter's modules, a host's
  web framework, the world a scenario loaded) moves to the permanent generation, which no
  collection traverses;
* thresholds `SIMULATION_THRESHOLDS` = (50,000, 20, 100): a young collection per 50,000 net
  allocations of container objects instead of 700, so nearly everything short-lived has died
  before one runs, and a full collection only after 100 middle ones (and CPython's rule that the
  old generation grew by 25 %). Cyclic garbage is still reclaimed: young cycles by the young
  collections, old ones by the rarer full collections, and by the `unfreeze()` below;
* when the last hold ends, the previous thresholds come back and `gc.unfreeze()` hands the frozen
  objects back to the collector (a finished simulation's cycles are reclaimed by the next full
  collection). Any release unfreezes, so a dropped simulation never stays frozen while another
  one is still held; the thresholds stay raised while any hold is left.

Guarantees
----------
* Only the `gc` module is touched: no clock, no randomness, nothing a simulation can observe. No
  report or trace depends on when Python collects (nothing in the core uses finalizers or weak
  references to decide anything), so every run is byte-identical with and without the policy.
* Holds nest and overlap (several simulations hosted in one process): `simulation_gc()` returns a
  `GcHold`, a context manager that can also be released explicitly, once. Use it from one thread
  (the host's event loop thread), as everything in controlplane.
"""

from __future__ import annotations

import gc
from types import TracebackType
from typing import Any

SIMULATION_THRESHOLDS = (50_000, 20, 100)

_holds = 0
_saved_thresholds: tuple[int, int, int] | None = None


class GcHold:
    """The policy in force until `release()` (or the end of the `with` block)."""

    __slots__ = ("_released",)

    def __init__(self) -> None:
        global _holds, _saved_thresholds
        self._released = False
        if _holds == 0:
            _saved_thresholds = gc.get_threshold()
            gc.set_threshold(*SIMULATION_THRESHOLDS)
        _holds += 1
        gc.freeze()

    def release(self) -> None:
        """End this hold (a second call does nothing)."""
        global _holds, _saved_thresholds
        if self._released:
            return
        self._released = True
        _holds -= 1
        gc.unfreeze()
        if _holds == 0 and _saved_thresholds is not None:
            gc.set_threshold(*_saved_thresholds)
            _saved_thresholds = None

    @property
    def released(self) -> bool:
        return self._released

    def __enter__(self) -> GcHold:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def simulation_gc() -> GcHold:
    """Apply the policy now (see the module docstring) until the returned hold is released.

    Call it once the simulation's starting world is built (after `Simulation(...)`, ideally after
    `start()` applied the scenario's objects), so that `gc.freeze()` covers it:

        with simulation_gc():
            sim.run_until(t)

    A host that runs a simulation across many event-loop turns keeps the hold and calls
    `hold.release()` when the simulation is stopped or discarded.
    """
    return GcHold()


def describe() -> dict[str, Any]:
    """The policy as a benchmark reports it: thresholds while held, and what is in force now."""
    return {
        "policy": "controlplane.gcpolicy.simulation_gc",
        "freeze": True,
        "thresholds_while_held": list(SIMULATION_THRESHOLDS),
        "holds": _holds,
        "thresholds_now": list(gc.get_threshold()),
        "frozen_now": gc.get_freeze_count(),
    }

"""The stepping goals of a session: where a step stops, and the reads of the world that decide it.

A goal is a stopping point of the one stepping mechanism (`controlplane.stepping.Target`: the
next sync stage, the end of a sync, optionally of one sync — the same targets the core's
`Simulation.step_stage` / `step_sync` and the past view's `Replay.next_mark` step to), a
predicate checked after each event (idle), or a time (`until`: a timer, "run to").
The session (`controlplane.session.session`) checks it after every event it runs; a goal that
only work can reach (`needs_work`) gives up, saying what it waits for, once the world is at rest
and nothing scheduled before its horizon would start work (`stuck`). Everything here reads the
simulation and changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from controlplane.stepping import Target
from controlplane.world import Simulation

Obj = dict[str, Any]

STEP_EVENT_LIMIT = 2_000_000  # a step goal gives up after this many events ...
STEP_HORIZON = 3600.0  # ... or this much virtual time
IDLE_GAP = 1.0  # max checks for idle where the next event is at least this far (virtual seconds)
IDLE_HORIZON = 60.0  # "idle": nothing queued, processing or lagging, and no requeue due this soon


class Goal:
    """Where a step stops: a record (`target`), a predicate checked after each event, or a time."""

    def __init__(
        self,
        label: str,
        *,
        target: Target | None = None,
        until: float = math.inf,
        predicate: Callable[[], bool] | None = None,
        limit_events: int = STEP_EVENT_LIMIT,
        start_events: int = 0,
        needs_work: bool = False,
    ) -> None:
        self.label = label
        # A goal only work can reach (a sync stage, a sync's end, idle): it gives up, saying what
        # it waits for, once the world is at rest and nothing scheduled before `until` would start
        # work (`stuck`), instead of running the clock on to `until`.
        self.needs_work = needs_work
        self.target = target  # the session checks each record against it (`Target.accepts`)
        self.until = until
        self.predicate = predicate
        self.limit_events = start_events + limit_events
        self.reached: str | None = None


def idle(sim: Simulation) -> bool:
    """Caches synced and caught up, queues empty, nothing processing, no requeue due within
    the horizon, every pod at rest."""
    return quiet(sim) and not manual_keys(sim)


def quiet(sim: Simulation) -> bool:
    """Idle but for the keys queued for manual workers: those wait for the user's “sync
    next” (`manualWorkers`), nothing in the world will take them."""
    now = sim.now
    for c in sim.controllers.values():
        if not c.caches_synced:
            return False
        snap = c.queue.snapshot()
        if snap["processing"] or (snap["queue"] and not c.config.manual_workers):
            return False
        if any(w["readyAt"] <= now + IDLE_HORIZON for w in snap["waiting"]):
            return False
        if any(informer.lag() for informer in c.informers):
            return False
    return sim.settling() is None


def manual_keys(sim: Simulation) -> list[tuple[str, str]]:
    """(controller, key) of the keys queued for workers that are manual, in queue order."""
    return [
        (name, str(key))
        for name, c in sim.controllers.items()
        if c.config.manual_workers
        for key in c.queue.snapshot()["queue"]
    ]


def timeline_before(sim: Simulation, until: float) -> bool:
    """A scenario action of the file's own timeline is still to come, at or before `until`."""
    pending = sim.timeline_pending
    return bool(pending) and float(sim.scenario.actions[pending[0]]["at"]) <= until


def stuck(sim: Simulation, goal: Goal) -> str | None:
    """Why `goal` (one that needs work) cannot be reached, or None while it may be: the world
    is at rest, no requeue, resync or scenario action before the goal's horizon would start
    work, and what is queued waits for a manual worker (or nothing is queued at all)."""
    if not quiet(sim) or timeline_before(sim, goal.until):
        return None
    for c in sim.controllers.values():
        if c.config.manual_workers:
            continue
        for informer in c.informers:
            due = informer.next_resync()
            if due is not None and due <= goal.until:
                return None  # a periodic resync (v1.5's every 10 minutes) queues the keys again
    waiting = manual_keys(sim)
    if waiting:
        return f"{goal.label}: not reached; {waiting_words(waiting)}"
    if goal.predicate is not None:
        return None  # idle: its predicate says so after the event that made it so
    return f"{goal.label}: not reached, nothing will happen: every queue is empty and the world is at rest"


def record_line(record: Obj) -> str:
    """The words for the record a goal stopped at."""
    kind = record["kind"]
    if kind == "sync.stage":
        return f"{record['controller']} {record['key']}: stage {record['stage']}"
    if kind == "sync.start":
        return f"{record['controller']} worker {record['worker']} starts syncing {record['key']}"
    if kind == "sync.end" and record.get("handler") is not None:
        ended = record.get("error") or "success"
        return (
            f"operator {record['controller']}'s handler {record['handler']} on {record['key']} "
            f"(retry {record.get('retry', 0)}) ended: {ended}"
        )
    if kind == "sync.end":
        error = f" with error: {record['error']}" if record.get("error") else ""
        return f"{record['controller']} finished syncing {record['key']}{error}"
    return str(kind)


def waiting_words(waiting: list[tuple[str, str]]) -> str:
    """What waits for the user: "default/web waits in the replicaset queue for a manual worker:
    click “sync next” …" (the first few keys, and how many more)."""
    controllers = sorted({controller for controller, _ in waiting})
    keys = ", ".join(key for _, key in waiting[:3]) + (f" and {len(waiting) - 3} more" if len(waiting) > 3 else "")
    verb = "waits" if len(waiting) == 1 else "wait"
    where = " and ".join(controllers)
    return (
        f"{keys} {verb} in the {where} queue for a manual worker: click “sync next” (Workers panel) "
        "or set the workers back to automatic"
    )

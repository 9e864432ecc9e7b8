"""Replay: a session's past rebuilt by deterministic replay, to an exact position.

Guarantees
----------
* A `Replay` is a fresh `Simulation` of a recorded session — the scenario as it was loaded, its
  seed, and the actions taken live, each applied at its time exactly as `Simulation.act` applied
  it (once every event of its instant has run) — driven forward to a position. Same recording,
  same position ⇒ the same world, byte for byte: `snapshot()` and `report()` of the replay equal
  those of the live session when it stood there (the kernel, the trace `seq`s and the pending
  timers included, since the timeline is scheduled at start and the live actions when they came).
* A position is `Position(events, seq, time)` (`Simulation.position()`). A replay reaches:
  a virtual time T (the end of instant T: every event and action due at T has run, like
  `python -m controlplane run --until T`); an event count N (right after the N-th kernel event:
  several events share an instant, so this is how "step back one event" lands exactly); or a
  trace record's `seq` (right after the event that emitted it). Forward only: a position before
  where the replay stands needs a new `Replay` (the caller keeps or rebuilds, as it likes).
* The steps of the debugger have their inverses here (`previous_event`, `previous_stage`,
  `previous_sync`) and their forward twin (`next_mark`), the one stepping mechanism of
  `controlplane.stepping` over the index of marks it keeps (`marks`: one small tuple per sync
  start, stage, end and `queue.get`), which a caller may share between replays of one
  recording, so rebuilding does not forget it. A step back or forward gives an event count;
  the replay reaches it like any other position.
* One replay path: every way the past is rebuilt replays the session's recording
  (`from_recording`: `Simulation.recording()` of a live session, `recording_of` of a stored one)
  — the past view, a restore after a restart, a re-open, a fork, and `GET
  /sim/<id>/report.json?at=T` (`python -m controlplane replay`, in a process of its own);
  `reproduces` checks that a replay gave the recorded action log back. Before a stored recording
  is replayed it is checked as its cut is (`check`): every action as a scenario file's, the
  run's ceilings — what `Simulation.check_replayable` promised when each action was taken. The
  export (`Simulation.export_scenario(at=T)`, `cut_scenario`) is a download format: run headless
  to T it reaches the world the recording's replay reaches at T (`from_export`;
  tests/controlplane/test_replay.py checks the two agree, byte for byte).
* Nothing here reads a clock or touches the live session: a replay is a read of the past.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from controlplane import stepping
from controlplane.kernel import NS_PER_SECOND, vtime
from controlplane.limits import MAX_ACTIONS, MAX_SECONDS, RunLimits
from controlplane.scenario import Scenario, ScenarioError, check_seed, parse_scenario
from controlplane.session.timetravel.snapshot import quiescent
from controlplane.stepping import MARK_KINDS, STEPS, Mark, Target, mark_of
from controlplane.trace import Record
from controlplane.world import Position, Simulation

Obj = dict[str, Any]
NANOSECOND = 1.0 / NS_PER_SECOND


def _entry(entry: Obj) -> str:
    """An action log entry without who acted, as JSON text: what a replay must give back."""
    return json.dumps({k: v for k, v in entry.items() if k != "source"}, sort_keys=True, default=str)


MAX_LIVE_ACTIONS = MAX_ACTIONS  # a recording's live actions, at most (a session logs no more)


def check_recording(recording: Any) -> tuple[Scenario, int | None, list[Obj]]:
    """A recording (`Simulation.recording()`'s form: `scenario`, `seed`, `actions`) checked
    whole — the scenario as a file is, the seed as every seed, each live action's time (a finite
    number of seconds >= 0, none before the one before it) and action (`Simulation.check_action`)
    — as (scenario, seed, live actions). ScenarioError naming the field (`actions[3].scale.name:
    required`) when it is not one."""
    if not isinstance(recording, dict):
        raise ScenarioError("a recording is a mapping: scenario, seed, actions")
    unknown = sorted(set(recording) - {"scenario", "seed", "actions"})
    if unknown:
        raise ScenarioError(f"{unknown[0]}: not a field of a recording (scenario, seed, actions)")
    if not isinstance(recording.get("scenario"), dict):
        raise ScenarioError("scenario: required, a mapping (a scenario file's fields)")
    scenario = parse_scenario(recording["scenario"])
    seed = recording.get("seed")
    if seed is not None:
        check_seed(seed, "seed")
    actions = recording.get("actions")
    actions = [] if actions is None else actions
    if not isinstance(actions, list):
        raise ScenarioError("actions: must be a list of {time, source, action}")
    if len(actions) > MAX_LIVE_ACTIONS:
        raise ScenarioError(f"actions: more than {MAX_LIVE_ACTIONS} (the most a session logs)")
    last = 0.0
    for i, entry in enumerate(actions):
        where = f"actions[{i}]"
        if not isinstance(entry, dict):
            raise ScenarioError(f"{where}: must be a mapping {{time, source, action}}")
        t = entry.get("time")
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
            raise ScenarioError(f"{where}.time: must be a finite number of seconds >= 0")
        if t > MAX_SECONDS:
            raise ScenarioError(f"{where}.time: must be <= {int(MAX_SECONDS)}")
        if t < last:
            raise ScenarioError(f"{where}.time: {t:g} is before the previous action's ({last:g})")
        last = t
        source = entry.get("source")
        if source is not None and not isinstance(source, str):
            raise ScenarioError(f"{where}.source: must be a string")
        problem = Simulation.check_action(entry.get("action"))
        if problem is not None:
            raise ScenarioError(f"{where}.action: {problem}" if not problem.startswith(where) else problem)
    return scenario, seed, actions


class ReplayError(ValueError):
    """A position this replay cannot reach: the message says why (one line)."""


class LiveAction(NamedTuple):
    time: float
    source: str | None
    action: Obj


class Replay:
    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int | None = None,
        actions: Sequence[Obj] = (),
        limits: RunLimits | None = None,
        marks: list[Mark] | None = None,
        index: bool = True,
    ) -> None:
        """`actions`: the live actions (`Simulation.recording()["actions"]`: `{time, source,
        action}`), in application order. `marks`: an index of sync records to extend (shared by
        the replays of one recording); `index` False: none is kept (a restore or a fork, which
        never steps back). The simulation is built, not started: subscribe to `sim` first to
        see every record (the first run starts it)."""
        self.sim = Simulation(scenario, seed=seed, limits=limits)
        self._actions: list[LiveAction] = []
        self._next = 0  # the first live action not yet applied
        self.extend(actions)
        self.marks: list[Mark] = marks if marks is not None else []
        if index:
            self.sim.subscribe(self._index)

    @classmethod
    def from_recording(
        cls,
        recording: Obj,
        *,
        limits: RunLimits | None = None,
        marks: list[Mark] | None = None,
        index: bool = True,
    ) -> Replay:
        """From `Simulation.recording()` or `recording_of`; ScenarioError naming the field when it
        is not one (`check_recording`)."""
        scenario, seed, actions = check_recording(recording)
        return cls(
            scenario,
            seed=seed,
            actions=actions,
            limits=limits,
            marks=marks,
            index=index,
        )

    @classmethod
    def from_export(cls, data: Obj, *, limits: RunLimits | None = None, index: bool = True) -> Replay:
        """From `Simulation.export_scenario()` (a scenario file's data, a session cut at T): every
        action is then part of the timeline, so the world matches the session's at every
        position; only the pending timers differ (the replay knows from the start what the
        session learnt later). ScenarioError if the data is not a valid scenario."""
        return cls(parse_scenario(data), limits=limits, index=index)

    @staticmethod
    def check(data: Obj, *, limits: RunLimits | None = None) -> None:
        """A recorded session, as its cut (`cut_scenario`: every action it applied in the
        timeline), checked as a scenario file is, against the run's ceilings too: ScenarioError
        naming the field (`actions[i]…`, i the index in the action log) when a replay of it
        would be refused. Nothing is run."""
        Simulation(parse_scenario(data), limits=limits).check_limits()

    def reproduces(self, history: Sequence[Obj]) -> int | None:
        """Whether this replay gave back `history` (a session's recorded action log,
        `Simulation.actions`, up to where the replay stands): the index of the first entry its
        own log does not reproduce (who acted aside), or None when it reproduces each one. Each
        entry reproduced takes `history`'s `source`: a cut's actions replay as the file's, and
        who acted is the recording's. Entries the replay applied beyond `history` are not
        judged (the caller decides: a restore may finish an instant the save cut short)."""
        log = self.sim.actions
        for i, old in enumerate(history):
            if i >= len(log) or _entry(log[i]) != _entry(old):
                return i
            if "source" in old:
                log[i]["source"] = old["source"]
        return None

    def extend(self, actions: Sequence[Obj]) -> None:
        """More live actions, taken since (each at or after the last one known)."""
        for entry in actions:
            t = vtime(float(entry["time"]))
            if self._actions and t < self._actions[-1].time:
                raise ReplayError(f"actions: time {t:.3f} is before the previous action's")
            self._actions.append(LiveAction(t, entry.get("source"), entry["action"]))

    # -- where it stands ------------------------------------------------------------------------
    def position(self) -> Position:
        return self.sim.position()

    def can_reach(self, events: int, time: float) -> bool:
        """True when the position (events, time) is not behind this replay."""
        here = self.sim.position()
        return events >= here.events and vtime(time) >= here.time

    def _index(self, record: Record) -> None:
        if record["kind"] not in MARK_KINDS or (self.marks and record["seq"] <= self.marks[-1].seq):
            return
        mark = mark_of(record, self.sim.kernel.events, self._queue_owner)
        if mark is not None:
            self.marks.append(mark)

    def _queue_owner(self, queue: str) -> str | None:
        return next((n for n, c in self.sim.controllers.items() if c.queue.name == queue), None)

    # -- running forward ------------------------------------------------------------------------
    def run_to_time(self, t: float) -> Position:
        """To the end of instant `t`: every event and live action due at `t` or before has run."""
        self._behind(None, t)
        self._advance(vtime(t))
        return self.position()

    def run_to_events(self, events: int, until: float, *, exact: bool = False) -> Position:
        """To right after the `events`-th kernel event, which is due at `until` or before (the
        caller's bound: the live moment). With `exact`, the clock then moves on to `until` — a
        position the session stood at only if nothing was due in between (else ReplayError)."""
        bound = vtime(until)
        self._behind(events, bound if exact else None)
        if events != self.sim.kernel.events:
            self._advance(bound, events=events)
        kernel = self.sim.kernel
        if kernel.events != events:
            raise ReplayError(f"events: the session has no position after {events} events by t={bound:.3f}")
        if exact and kernel.now < bound:
            nxt = kernel.peek()
            action = self._pending_action()
            if (nxt is not None and nxt <= bound) or (action is not None and action.time < bound):
                raise ReplayError(f"time: t={bound:.9f} is not a position of {events} events")
            self.sim.run_until(bound)
        return self.position()

    def run_to_quiet(self, events: int, until: float) -> bool:
        """Event by event towards `events` (each live action at its turn, as `run_to_events`
        applies them, never past `until`) until the world is quiescent (`snapshot.quiescent`:
        it can be snapshotted now); True when it is. False when `events` are reached or the next
        event is past `until` first (`run_to_events` then says which)."""
        sim, kernel = self.sim, self.sim.kernel
        sim.start()
        bound = vtime(until)
        while sim.halted is None and kernel.events < events:
            if quiescent(kernel):
                return True
            action = self._pending_action()
            nxt = kernel.peek()
            if action is not None and action.time <= bound and (nxt is None or nxt > action.time):
                # Every event of the action's instant has run: the action's turn.
                if kernel.now < action.time:
                    sim.run_until(action.time)
                self._next += 1
                sim.act(action.action, source=action.source or "user")
                continue
            if nxt is None or nxt > bound:
                return False
            sim.step()
        return sim.halted is None and quiescent(kernel)

    def run_to_seq(self, seq: int, time: float) -> Position:
        """To right after the event that emitted trace record `seq` (at `time`, its record's)."""
        t = vtime(time)
        self._behind(None, None if self.sim.trace.seq >= seq else t)
        trace = self.sim.trace
        self._advance(t, done=lambda: trace.seq >= seq)
        if trace.seq < seq:
            raise ReplayError(f"seq: no trace record {seq} at t={t:.3f}")
        return self.position()

    def run_until_mark(self, accept: Callable[[Mark], bool], until: float) -> Mark | None:
        """Step forward until a sync record that `accept`s is indexed (its position reached:
        right after its event) or `until` is reached; returns that mark."""
        seen = [len(self.marks)]  # marks checked so far
        found: list[Mark] = []

        def done() -> bool:
            while not found and seen[0] < len(self.marks):
                mark = self.marks[seen[0]]
                seen[0] += 1
                if accept(mark):
                    found.append(mark)
            return bool(found)

        self._advance(vtime(until), done=done)
        return found[0] if found else None

    def _pending_action(self) -> LiveAction | None:
        return self._actions[self._next] if self._next < len(self._actions) else None

    def _behind(self, events: int | None, t: float | None) -> None:
        here = self.sim.position()
        if (events is not None and events < here.events) or (t is not None and vtime(t) < here.time):
            raise ReplayError("the position is behind this replay: replay from the start")

    def _advance(self, until: float, *, events: int | None = None, done: Callable[[], bool] | None = None) -> None:
        """Run to the end of instant `until`, each live action applied at its turn (its own
        instant's events first, as `Simulation.act` does), stopping early once `events` kernel
        events have run or `done()` holds (checked after every event and action)."""
        sim, kernel = self.sim, self.sim.kernel
        sim.start()

        def reached() -> bool:
            if sim.halted is not None:
                return True
            if events is not None and kernel.events >= events:
                return True
            return done is not None and done()

        while not reached():
            action = self._pending_action()
            due = action is not None and action.time <= until
            bound = action.time if due and action is not None else until
            if done is None:
                if events is not None:
                    sim.run_to_events(bound, events)
                else:
                    sim.run_until(bound)
            else:
                # Every record of an earlier instant comes before the target: run those at full
                # speed, then event by event through the target's instant.
                before = vtime(bound - NANOSECOND)
                if before > kernel.now:
                    sim.run_until(before)
                while not done():
                    nxt = kernel.peek()
                    if nxt is None or nxt > bound or not sim.step():
                        break
                if done():
                    return
                if kernel.now < bound:
                    sim.run_until(bound)
            if reached() or not due or action is None:
                return
            if kernel.now < action.time:
                sim.run_until(action.time)
            self._next += 1
            sim.act(action.action, source=action.source or "user")

    # -- the debugger's steps, forward and back (controlplane.stepping over `marks`) --------------
    def previous_event(self, at: Position) -> int:
        return stepping.previous_event(at.events)

    def previous_stage(self, at: Position) -> int:
        """The event count the forward stage step (`Simulation.step_stage`, following the sync
        it stopped in) came from (`stepping.previous_stage`)."""
        return stepping.previous_stage(self.marks, at.events)

    def previous_sync(self, at: Position) -> int:
        """"Over" the sync `at` stands in or after (`stepping.previous_sync`)."""
        return stepping.previous_sync(self.marks, at.events)

    def next_mark(self, at: Position, step: str, until: float) -> int:
        """The event count a forward `step` ("stage" or "sync", `stepping.STEPS`) from `at` lands
        on (following the sync `at` stands in while it runs), replaying further, up to `until`,
        when the index stops short."""
        target = Target(STEPS[step], stepping.following(self.marks, at.events))
        found = stepping.next_mark(self.marks, at.events, target)
        if found is not None:
            return found.events
        if self.position().events < at.events:
            self.run_to_events(at.events, until)
        found = self.run_until_mark(stepping.after(at.events, target), until)
        if found is None:
            raise ReplayError("step: no further sync record before the live moment")
        return found.events

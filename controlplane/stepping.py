"""Stepping: where a step stops, forward and back — the one mechanism the core's
`Simulation.step_stage` / `step_sync`, the live session's goals (`controlplane.session.goals`)
and the past view's steps (`Replay.next_mark`, `Replay.previous_*`) all use.

Guarantees
----------
* A stopping point is a trace record of a step's kinds (`STEPS`: a stage step stops at the next
  `sync.start`, `sync.stage` or `sync.end`; a sync step at the next `sync.end`), of one sync only
  when the step follows it (`Target`: its `sync`, a `(controller, key)`), of one controller only
  when the step names it (`Target.controller`: an embedded kopf operator's name steps handler
  invocation by handler invocation, each a sync). One `Target.accepts`
  decides, for a record written now (a live world stepping) and for an indexed one (a replay).
* Forward on a world: `step_until` runs it event by event until the first event that writes a
  record the target accepts, and stops right after that event (`Simulation.step_stage`; the live
  session checks the same target per record in its paced slices, with its limits and the words
  it stops with).
* The index of marks: `mark_of` says which records are marks (the stopping points above, and
  `queue.get`, where a step back over a sync lands), each with the kernel event count that wrote
  it. Over a run's marks, in order: `following` (which sync a step from a position follows),
  `next_mark` (the next stopping point after a position, when the index holds it) and the
  inverses of the three steps, `previous_event`, `previous_stage`, `previous_sync` (the event
  count to replay to). These are pure reads of the index; reaching the event count is the
  replay's business (`controlplane.session.timetravel.replay`).
* A step that cannot be made raises `StepError`, whose message says why in one line.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, Protocol

from controlplane.trace import Record

STAGE_KINDS = frozenset({"sync.start", "sync.stage", "sync.end"})
SYNC_END = frozenset({"sync.end"})
# What each forward step stops at (the toolbar's `.` and `s`, shift+. and shift+S their inverses).
STEPS: Mapping[str, frozenset[str]] = {"stage": STAGE_KINDS, "sync": SYNC_END}
MARK_KINDS = STAGE_KINDS | {"queue.get"}  # the kinds of record the index of marks holds


class StepError(ValueError):
    """A step that cannot be made from here: the message says why (one line)."""


class Mark(NamedTuple):
    """One sync record of the run, where it happened: after `events` kernel events."""

    events: int
    seq: int
    time: float
    kind: str  # sync.start | sync.stage | sync.end | queue.get
    controller: str
    key: str


class Target(NamedTuple):
    """Where a forward step stops: the next record of `kinds`, of the sync `sync` only when set,
    of the controller `controller` only when set (an embedded operator's name: its next handler
    invocation)."""

    kinds: frozenset[str]
    sync: tuple[str, str] | None = None
    controller: str | None = None

    def accepts(self, kind: str, controller: object, key: object) -> bool:
        return (
            kind in self.kinds
            and (self.sync is None or (controller, key) == self.sync)
            and (self.controller is None or controller == self.controller)
        )


class World(Protocol):
    """What `step_until` drives: one kernel event per `step` (False once none is left), and the
    trace records each event writes (`subscribe` returns the function that unsubscribes)."""

    def step(self) -> bool: ...

    def subscribe(self, fn: Callable[[Record], None]) -> Callable[[], None]: ...


def step_until(world: World, target: Target, limit: int) -> Record | None:
    """Run `world` event by event, at most `limit` events, until an event writes a record that
    `target` accepts; returns that record (the first, if the event wrote several), or None when
    the events ran out first."""
    seen: list[Record] = []

    def watch(record: Record) -> None:
        if not seen and target.accepts(record["kind"], record.get("controller"), record.get("key")):
            seen.append(record)

    unsubscribe = world.subscribe(watch)
    try:
        for _ in range(limit):
            if seen or not world.step():
                break
    finally:
        unsubscribe()
    return seen[0] if seen else None


# -- the index of marks ---------------------------------------------------------------------------
def mark_of(record: Record, events: int, owner: Callable[[str], str | None]) -> Mark | None:
    """The mark `record` is, written after `events` kernel events, or None when it is none
    (its kind is not one of `MARK_KINDS`, or its queue is no controller's). `owner`: the name of
    the controller whose queue has that name (a `queue.get` names the queue)."""
    kind = record["kind"]
    if kind in STAGE_KINDS:
        controller = record["controller"]
    elif kind == "queue.get":
        # A worker takes a key: where "step back over a sync" lands (the key queued again).
        found = owner(record["queue"])
        if found is None:
            return None
        controller = found
    else:
        return None
    return Mark(events, record["seq"], record["time"], kind, controller, str(record["key"]))


def last_mark(marks: Sequence[Mark], events: int, kinds: frozenset[str] | None = None) -> int:
    """Index in `marks` of the last mark (of `kinds`) at or before `events` (-1 when none)."""
    i = bisect.bisect_right(marks, events, key=lambda m: m.events) - 1
    while kinds is not None and i >= 0 and marks[i].kind not in kinds:
        i -= 1
    return i


def following(marks: Sequence[Mark], at: int) -> tuple[str, str] | None:
    """The sync a step from `at` (kernel events run) follows: the one it stands in while that
    runs (its last stage record so far is not its end), else None (the next sync of any key)."""
    i = last_mark(marks, at, STAGE_KINDS)
    if i >= 0 and marks[i].kind != "sync.end":
        return (marks[i].controller, marks[i].key)
    return None


def after(at: int, target: Target) -> Callable[[Mark], bool]:
    """Whether a mark is a stopping point of a forward step from `at` (events) to `target`."""
    return lambda mark: mark.events > at and target.accepts(mark.kind, mark.controller, mark.key)


def next_mark(marks: Sequence[Mark], at: int, target: Target) -> Mark | None:
    """Where a forward step from `at` (events) to `target` lands, if the index holds it."""
    accept = after(at, target)
    for mark in marks[last_mark(marks, at) + 1 :]:
        if accept(mark):
            return mark
    return None


def previous_event(at: int) -> int:
    """One event back from `at` kernel events run."""
    if at <= 0:
        raise StepError("step back: this is the beginning (no event has run)")
    return at - 1


def previous_stage(marks: Sequence[Mark], at: int) -> int:
    """The event count the forward stage step to `at` (events; following the sync it stopped
    in) came from, if it came from a stage: the previous stage of the same sync, or of any sync
    when `at` stands on a sync's start."""
    i = last_mark(marks, at, STAGE_KINDS)
    if i < 0:
        raise StepError("step back: no sync stage before this moment")
    current = marks[i]
    same = current.kind != "sync.start" or current.events < at
    for mark in reversed(marks[: i + 1]):
        if mark.events >= at or mark.kind not in STAGE_KINDS:
            continue
        if not same or (mark.controller, mark.key) == (current.controller, current.key):
            return mark.events
    raise StepError("step back: no sync stage before this moment")


def previous_sync(marks: Sequence[Mark], at: int) -> int:
    """ "Over" the sync `at` (events) stands in or after: right before its worker took the key
    from the queue (the key is queued again), or before its start if that is not known."""
    i = last_mark(marks, at, STAGE_KINDS)
    if i < 0:
        raise StepError("step back: no sync before this moment")
    current = marks[i]
    ident = (current.controller, current.key)
    start: Mark | None = None
    for mark in reversed(marks[: i + 1]):
        if (mark.controller, mark.key) != ident:
            continue
        if start is None and mark.kind == "sync.start":
            start = mark
        elif start is not None and mark.kind == "queue.get":
            return max(0, mark.events - 1)
    if start is None:
        raise StepError("step back: the start of that sync is not known")
    return max(0, start.events - 1)

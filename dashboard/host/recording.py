"""Every session is a recording (issue 17, docs/time-travel.md): written through to the database
as it happens, replayed to rebuild the session after a crash or to re-open a stopped one.

Guarantees
----------
* **What is stored is the whole session.** A `Recording` holds how the session started
  (`Simulation.start_data()`), a `RecordedAction` per entry of its action log, in order, the
  virtual time it had reached and the file's timeline actions still pending then. Nothing else:
  the simulation is deterministic, so replaying that (`controlplane.simulation.cut_scenario`)
  gives the same world, byte for byte.
* **Consistent after any crash.** A time is saved in the same transaction as every action
  applied by then (one `Batch`, captured on the event loop in one go), so the recording is
  never ahead of its own log: after `kill -9` the replay reaches exactly a state the session was in.
* **Off the event loop, batched.** The loop only notices what changed (O(1) per slice) and
  serialises the new log entries; the writes run in a worker thread, one batch at a time per
  session, the next batch taking everything that accumulated meanwhile. A command's action and
  the time are written at once after every command and on pause; while the session runs, every
  `SAVE_EVERY` seconds, with the actions its timeline applied meanwhile.
* **Bounded.** At most `MAX_RECORDINGS` recordings are kept (a new session is refused, with
  what to delete, rather than an old one deleted silently), at most `MAX_ACTIONS` actions
  per recording and at most `MAX_BYTES` of their JSON, refused writes included (further
  actions are refused: `HostedSimulation._cmd_act`).
* **Restored, not resumed.** A session that was running when its server died is rebuilt by
  replay, paused at its last saved time, with its whole action history (sources too), and
  says so (`note`).
* **Damage is named, and stays where it is.** `load` checks every row it reads (`start` and
  `pending` as the session wrote them, each recorded action JSON with a time and an action,
  `seq` whole from 0), the replay each action; a recording that fails, or whose replay fails,
  is `DAMAGED` with one line saying which row or field and what was found (`mark_damaged`).
  Each recording is restored on its own, so one damaged recording never keeps another from
  coming back.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from controlplane.simulation import (
    MAX_RECORDED_ACTIONS,
    MAX_RECORDED_BYTES,
    Replay,
    ScenarioError,
    cut_scenario,
    recording_of,
)

if TYPE_CHECKING:
    from dashboard.host.hosted import HostedSimulation
    from dashboard.models import Recording

Obj = dict[str, Any]

MAX_RECORDINGS = 200  # recordings kept in the database, running and stopped
MAX_ACTIONS = MAX_RECORDED_ACTIONS  # actions per recording (HostedSimulation refuses more)
MAX_BYTES = MAX_RECORDED_BYTES  # JSON of the actions per recording (HostedSimulation refuses more)
SAVE_EVERY = 1.0  # wall seconds between two saves of the time while a session runs


class RecordingError(ValueError):
    """A recording that cannot be made, found or replayed: the message says why and what to do."""


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# -- writing --------------------------------------------------------------------------------------------
@dataclass
class Batch:
    """What changed since the last write: new log entries (JSON text), the time, the pending timeline."""

    first_seq: int
    entries: list[tuple[float, str, bool, str]] = field(default_factory=list)  # time, source, ok, entry
    time: float = 0.0
    pending: str = "[]"


class Recorder:
    """Writes one hosted session through to its `Recording`. `note()` on the event loop after
    anything may have changed; `close()` (awaited) writes what is left."""

    def __init__(self, hosted: HostedSimulation, stored: int) -> None:
        self.hosted = hosted
        self.stored = stored  # log entries captured so far (written or being written)
        self.saved_time = hosted.sim.now
        self.saved_mode = hosted.mode
        self.saved_wall = time.monotonic()
        self.writing = False
        self.again = False
        self.failed: str | None = None  # the last write's error (logged; the session goes on)
        self.write_seconds = 0.0  # time spent writing, in the worker thread (docs/time-travel.md)

    def note(self, *, force: bool = False) -> None:
        """After a slice or a command: start a write when a command ran (`force`: a user's
        action is stored before its answer is read), when the run paused or stepped, and while
        it runs `SAVE_EVERY` seconds after the last save, with every action applied meanwhile
        (the file's timeline, batched: one transaction a second, not one per action)."""
        sim = self.hosted.sim
        if len(sim.actions) == self.stored and sim.now == self.saved_time:
            if self.hosted.mode == self.saved_mode:
                return
        elif not force and self.hosted.busy and time.monotonic() - self.saved_wall < SAVE_EVERY:
            return
        if self.writing:
            self.again = True
            return
        import asyncio

        self.writing = True
        asyncio.get_running_loop().create_task(self._write_all(), name=f"record {self.hosted.id}")

    def capture(self) -> Batch | None:
        sim = self.hosted.sim
        new = sim.actions[self.stored :]
        if not new and sim.now == self.saved_time and self.hosted.mode == self.saved_mode:
            return None
        batch = Batch(self.stored, time=sim.now, pending=_dumps(sim.timeline_pending))
        for entry in new:
            batch.entries.append((entry["time"], str(entry.get("source", "")), bool(entry.get("ok")), _dumps(entry)))
        self.stored = len(sim.actions)
        self.saved_time, self.saved_mode, self.saved_wall = sim.now, self.hosted.mode, time.monotonic()
        return batch

    async def _write_all(self) -> None:
        try:
            while True:
                self.again = False
                batch = self.capture()
                if batch is None:
                    break
                started = time.perf_counter()
                try:
                    await write(self.hosted.id, batch)
                    self.failed = None
                except Exception as exc:  # the database's trouble: say so, keep the session
                    import logging

                    logging.getLogger(__name__).exception("recording %s: a write failed", self.hosted.id)
                    self.failed = f"{type(exc).__name__}: {exc}"
                self.write_seconds += time.perf_counter() - started
                if not self.again:
                    break
        finally:
            self.writing = False

    async def close(self) -> None:
        """Write whatever is left (waits for a write in progress first)."""
        import asyncio

        for _ in range(1000):  # a write takes milliseconds; this waits at most ~10 s
            if not self.writing:
                break
            await asyncio.sleep(0.01)
        self.writing = True
        self.again = False
        try:
            batch = self.capture()
            if batch is not None:
                await write(self.hosted.id, batch)
        finally:
            self.writing = False


# In a worker thread, not asgiref's one "thread-sensitive" thread (see host.save_record).
@sync_to_async(thread_sensitive=False)
def write(sim_id: str, batch: Batch) -> None:
    from dashboard.models import RecordedAction, Recording

    with transaction.atomic():
        RecordedAction.objects.bulk_create(
            [
                RecordedAction(recording_id=sim_id, seq=batch.first_seq + i, time=t, source=src[:100], ok=ok, entry=e)
                for i, (t, src, ok, e) in enumerate(batch.entries)
            ]
        )
        Recording.objects.filter(id=sim_id).update(
            virtual_time=batch.time,
            pending=batch.pending,
            actions=batch.first_seq + len(batch.entries),
            updated=timezone.now(),
        )


def create(hosted: HostedSimulation, host_id: str, *, parent: str = "", forked_at: float | None = None) -> None:
    """The session's recording, as it starts (RecordingError when the server keeps as many as it
    may, or the id belongs to a stored recording). A session that starts with a history (a fork,
    replayed to its `forked_at` from `parent`'s past) has its log written in the same transaction:
    the stored time is never ahead of the stored log."""
    from dashboard.models import RecordedAction, Recording

    sim = hosted.sim
    with transaction.atomic():
        if Recording.objects.filter(id=hosted.id).exists():
            raise RecordingError(f"simulation id {hosted.id!r} is the id of a stored recording: delete it first")
        if Recording.objects.count() >= MAX_RECORDINGS:
            raise RecordingError(
                f"this server keeps at most {MAX_RECORDINGS} recordings: delete stopped ones on the home page first"
            )
        Recording.objects.create(
            id=hosted.id,
            name=hosted.name[:200],
            source=hosted.source[:100],
            seed=sim.seed,
            start=_dumps(sim.start_data()),
            host=host_id,
            virtual_time=sim.now,
            pending=_dumps(sim.timeline_pending),
            actions=len(sim.actions),
            parent=parent,
            forked_at=forked_at,
        )
        RecordedAction.objects.bulk_create(
            [
                RecordedAction(
                    recording_id=hosted.id,
                    seq=i,
                    time=entry["time"],
                    source=str(entry.get("source", ""))[:100],
                    ok=bool(entry.get("ok")),
                    entry=_dumps(entry),
                )
                for i, entry in enumerate(sim.actions)
            ],
            batch_size=1000,
        )


create_async = sync_to_async(create, thread_sensitive=False)


@sync_to_async(thread_sensitive=False)
def mark_stopped(sim_id: str) -> None:
    from dashboard.models import Recording

    Recording.objects.filter(id=sim_id).update(state=Recording.STOPPED, stopped=timezone.now(), updated=timezone.now())


# -- reading ---------------------------------------------------------------------------------------------
@dataclass
class Stored:
    """A recording as read back: its row, how it started, its log, the timeline pending at its time."""

    recording: Recording
    start: Obj
    entries: list[Obj]
    pending: list[int]

    def cut(self, at: float | None = None) -> Obj:
        """The session as scenario data cut at `at` (default: its last saved time), as
        `Simulation.export_scenario(at=…)` gives it (ValueError naming `at` when outside 0…its time)."""
        last = self.recording.virtual_time
        if at is None:
            at = last
        elif at > last:
            raise ValueError(f"at: must be <= the recording's last time (t={last:.3f})")
        return cut_scenario(self.start, self.entries, self.pending, at)

    def replayable(self, until: float | None = None) -> Obj:
        """What replays the session (`Simulation.recording()`'s form: `recording_of`); with
        `until`, its past up to then (the log's entries by `until`)."""
        entries = self.entries if until is None else [e for e in self.entries if e["time"] <= until]
        return recording_of(self.start, entries, self.pending)


def load(sim_id: str) -> Stored:
    """Read a recording whole. RecordingError when there is none, or when it is damaged (`start`
    or `pending` not what the session wrote, a recorded action that is not JSON or not an
    action, an action missing from the log): one line naming the row or field and what was
    found there, as the home page lists it."""
    from dashboard.models import Recording

    try:
        recording = Recording.objects.get(id=sim_id)
    except Recording.DoesNotExist:
        raise RecordingError(f"no recording {sim_id}") from None
    start = _decoded(recording.start, "start", dict)
    missing = [key for key in START_KEYS if key not in start]
    if missing:
        raise RecordingError(f"start: not a session's start, it has no {missing[0]!r}: found {_found(recording.start)}")
    rows = list(recording.entries.order_by("seq").values_list("seq", "entry"))
    _check_seqs([seq for seq, _ in rows], recording.actions)
    entries = [_entry(seq, text) for seq, text in rows]
    pending = _decoded(recording.pending, "pending", list)
    timeline = start["actions"]
    if not isinstance(timeline, list) or not all(type(i) is int and 0 <= i < len(timeline) for i in pending):
        raise RecordingError(f"pending: not indexes of start's timeline actions: found {_found(recording.pending)}")
    return Stored(recording, start, entries, pending)


START_KEYS = ("name", "description", "seed", "config", "objects", "actions")  # Simulation.start_data()


def _found(text: str, width: int = 60) -> str:
    """What a damaged field holds, shortened for one line."""
    return repr(text if len(text) <= width else text[:width] + "…")


def _decoded(text: str, where: str, kind: type) -> Any:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        why = f"{exc.msg} at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise RecordingError(f"{where}: not JSON ({why}): found {_found(text)}") from None
    if not isinstance(value, kind):
        raise RecordingError(f"{where}: not a JSON {'object' if kind is dict else 'list'}: found {_found(text)}")
    return value


def _entry(seq: int, text: str) -> Obj:
    """One recorded action, its shape checked as the log writes it: a `time`, an `action`
    mapping. (The action itself is checked by the replay, `parse_scenario`, which names it
    `actions[seq]`: `replay` says `recorded action seq …` then.)"""
    where = f"recorded action seq {seq}"
    entry: Obj = _decoded(text, where, dict)
    t = entry.get("time")
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
        raise RecordingError(f"{where}: no time (a number of seconds >= 0): found {_found(text)}")
    if not isinstance(entry.get("action"), dict):
        raise RecordingError(f"{where}: no action (a mapping of one verb to its body): found {_found(text)}")
    return entry


def _check_seqs(seqs: list[int], count: int) -> None:
    """The log is whole: seq 0 … count-1, each once (unique by the table's constraint). A gap
    replayed over would be another world: RecordingError naming the first missing stretch."""
    total = max(count, seqs[-1] + 1 if seqs else 0)
    if len(seqs) == total:
        return
    have = set(seqs)
    first = next(i for i in range(total) if i not in have)
    last = first
    while last + 1 < total and last + 1 not in have:
        last += 1
    more = total - len(seqs) - (last - first + 1)
    if first == last:
        what = f"action {first + 1} of {total} is missing from the recording (seq {first})"
    else:
        what = f"actions {first + 1} to {last + 1} of {total} are missing from the recording (seq {first} to {last})"
    raise RecordingError(what + (f", and {more} more" if more else ""))


load_async = sync_to_async(load, thread_sensitive=False)


# -- replaying -------------------------------------------------------------------------------------------
def replay(stored: Stored, build: Any) -> tuple[HostedSimulation, int, int | None]:
    """Rebuild a session from its recording with the one replay path (`Replay.from_recording`),
    once the recording is checked as its cut at its last time is (`Replay.check`):
    `build(Simulation)` hosts it (frames see every record of the replay), then it runs to the
    recording's last time. Returns the hosted session, how many actions were replayed, and the
    first log entry the replay did not reproduce (None: all were). RecordingError when the
    recording cannot be replayed."""
    try:
        data = stored.cut()
        replayable = stored.replayable()
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"the recording cannot be cut: {type(exc).__name__}: {exc}") from None
    try:
        Replay.check(data)
        past = Replay.from_recording(replayable, index=False)
        hosted: HostedSimulation = build(past.sim)
        past.run_to_time(stored.recording.virtual_time)
    except ScenarioError as exc:
        # The cut lists the log first: its actions[i] is the recorded action of seq i.
        found = re.match(r"actions\[(\d+)\]", str(exc))
        if found is not None and int(found.group(1)) < len(stored.entries):
            rest = str(exc)[found.end() :]  # ".scale.name: required", ": needs one verb …"
            rest = rest[1:] if rest.startswith(".") else rest.lstrip(": ")
            seq = int(found.group(1))
            action = _found(_dumps(stored.entries[seq]["action"]))
            raise RecordingError(f"recorded action seq {seq}: {rest}: found {action}") from None
        raise RecordingError(f"the recording cannot be replayed: {exc}") from None
    except Exception as exc:  # what no check above foresaw: this recording's damage, not the server's
        raise RecordingError(f"the recording cannot be replayed: {type(exc).__name__}: {exc}") from None
    return hosted, len(stored.entries), past.reproduces(stored.entries)


def rebase(hosted: HostedSimulation, host_id: str, note: str) -> None:
    """After a replay: the recording restarts from the replayed session (its start is the cut it
    was replayed from, its log the replayed log), running, recorded by this process."""
    from dashboard.models import RecordedAction, Recording

    sim = hosted.sim
    start = sim.start_data()
    with transaction.atomic():
        old = Recording.objects.get(id=hosted.id)
        start["description"] = json.loads(old.start)["description"]
        RecordedAction.objects.filter(recording_id=hosted.id).delete()
        RecordedAction.objects.bulk_create(
            [
                RecordedAction(
                    recording_id=hosted.id,
                    seq=i,
                    time=entry["time"],
                    source=str(entry.get("source", ""))[:100],
                    ok=bool(entry.get("ok")),
                    entry=_dumps(entry),
                )
                for i, entry in enumerate(sim.actions)
            ],
            batch_size=1000,
        )
        Recording.objects.filter(id=hosted.id).update(
            start=_dumps(start),
            state=Recording.RUNNING,
            host=host_id,
            virtual_time=sim.now,
            pending=_dumps(sim.timeline_pending),
            actions=len(sim.actions),
            note=note[:300],
            stopped=None,
            updated=timezone.now(),
        )


rebase_async = sync_to_async(rebase, thread_sensitive=False)


@sync_to_async(thread_sensitive=False)
def orphans(host_id: str, shared: bool) -> list[str]:
    """The recordings of sessions that were running when their server died, claimed for this
    process. One process per database (`shared` False): every running one. Several (a shared
    channel layer): those no live process lists, claimed one by one (an atomic update), so two
    processes starting together never both restore one."""
    from dashboard.models import ALIVE_FOR, Recording, SimulationRecord

    claimed = []
    for rec in Recording.objects.filter(state=Recording.RUNNING).exclude(host=host_id):
        # Several processes: only a session no live process lists, quiet for a while.
        if shared and (SimulationRecord.alive().filter(id=rec.id).exists() or rec.updated > timezone.now() - ALIVE_FOR):
            continue
        if Recording.objects.filter(id=rec.id, host=rec.host, state=Recording.RUNNING).update(host=host_id):
            claimed.append(rec.id)
    return claimed


@sync_to_async(thread_sensitive=False)
def set_note(sim_id: str, note: str, *, stopped: bool = False) -> None:
    from dashboard.models import Recording

    changes: Obj = {"note": note[:300], "updated": timezone.now()}
    if stopped:
        changes.update(state=Recording.STOPPED, stopped=timezone.now())
    Recording.objects.filter(id=sim_id).update(**changes)


@sync_to_async(thread_sensitive=False)
def mark_damaged(sim_id: str, reason: str) -> None:
    """`sim_id` cannot be replayed: listed as damaged with `reason` (one line), no longer
    running under any host, deletable."""
    from dashboard.models import Recording

    now = timezone.now()
    Recording.objects.filter(id=sim_id).update(state=Recording.DAMAGED, note=reason[:300], stopped=now, updated=now)


@sync_to_async(thread_sensitive=False)
def move_stopped(sim_id: str, new_id: str) -> bool:
    """Give the stopped (or damaged) recording `sim_id` the id `new_id` (its actions and its forks' `parent`
    follow, in one transaction), so that `sim_id` is free for a new session: the demo after a
    restart. False, and nothing changed, when `sim_id` is not a stopped or damaged recording or
    `new_id` is taken."""
    from dashboard.models import RecordedAction, Recording

    with transaction.atomic():
        ended = (Recording.STOPPED, Recording.DAMAGED)
        rec = Recording.objects.select_for_update().filter(id=sim_id, state__in=ended).first()
        if rec is None or Recording.objects.filter(id=new_id).exists():
            return False
        note, created = (f"{rec.note}; " if rec.note else ""), rec.created
        rec.pk = new_id
        rec.note = f"{note}was {sim_id} until a new session took that id"[:300]
        rec.save(force_insert=True)
        Recording.objects.filter(id=new_id).update(created=created)  # save() set it to now
        RecordedAction.objects.filter(recording_id=sim_id).update(recording_id=new_id)
        Recording.objects.filter(parent=sim_id).update(parent=new_id)
        Recording.objects.filter(id=sim_id).delete()
    return True


@sync_to_async(thread_sensitive=False)
def stored_ids(only: str | None = None) -> set[str]:
    """The ids of every recording (`only`: of `only`, if it is one)."""
    from dashboard.models import Recording

    rows = Recording.objects.all() if only is None else Recording.objects.filter(id=only)
    return set(rows.values_list("id", flat=True))

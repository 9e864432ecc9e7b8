"""A past world in this process: `Worker` replays one hosted session's recording to a moment
and gives the view model of that moment; the replay worker process (`python -m
dashboard.host.replay_worker`) serves its requests with one (`serve`), and every world of
`controlplane.session.timetravel.keyframes` is one.

Guarantees
----------
* It keeps the last replayed world (`Replay.from_recording`, `controlplane.session.timetravel.
  replay`, wrapped in the past view's world, `PastView.world`, subscribed before the replay runs,
  so the sync narrations, the pod table and the timeline fill exactly as they did live): a later
  moment replays on from there; an earlier one rebuilds from the start, or, in a keyframe world
  (`rebuilds` False), raises `Behind` for another world to serve. The index of sync records
  (`Replay.marks`) survives rebuilds.
* The answer is the view model of that moment (`PastView.model`: one line of text, data, no
  HTML); the host renders it with the live page's own templates, so the past looks exactly like
  the present did. Nothing here renders, imports Django or reads the wall clock: the process
  entry gives the view and the clock (`PastView`).
* Newer requests supersede older ones of the same viewer: the replay runs in chunks of
  `CHUNK_EVENTS` and looks for a newer request between chunks (`Inbox.newer`; `Requests` reads
  them from stdin); a superseded request gets no answer (`Superseded`), and the world it reached
  so far is kept (a later moment goes on from it). While a replay takes long, `on_progress` is
  called every `PROGRESS_EVERY` seconds of the view's clock (`progress_line` tells the host).
"""

from __future__ import annotations

import json
import os
import select
import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from controlplane.kernel import vtime
from controlplane.scenario import ScenarioError
from controlplane.session.timetravel.replay import NANOSECOND, Replay, ReplayError
from controlplane.world import Position, Simulation

Obj = dict[str, Any]

CHUNK_EVENTS = 20_000  # events replayed between two looks for a newer request (~40 ms)
PROGRESS_EVERY = 1.0  # wall seconds between two progress lines of a replay in hand


class Superseded(Exception):
    """A newer request of the same viewer came in."""


class Behind(Exception):
    """The world of this process stands past the target and may not rebuild from the start (a
    keyframe world, `controlplane.session.timetravel.keyframes`): a world at or before `bounds` must serve
    `target` instead. `bounds`: `events` (at most), `time` (at most), `seq` (before it)."""

    def __init__(self, target: Obj, bounds: Obj) -> None:
        super().__init__("behind")
        self.target = target
        self.bounds = bounds


def _inherit(request: Obj, older: Obj) -> None:
    """`request` supersedes `older`, never answered: it takes over the recording or the live
    actions `older` brought (the host sends each only once)."""
    if "recording" in request:
        return
    if "recording" in older:
        recording = older["recording"]
        recording["actions"] = list(recording.get("actions") or []) + list(request.pop("actions", None) or [])
        request["recording"] = recording
    elif older.get("actions"):
        request["actions"] = list(older["actions"]) + list(request.get("actions") or [])


class Requests:
    """Lines of stdin, read without blocking between chunks; the latest request per viewer."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.waiting: OrderedDict[str, Obj] = OrderedDict()  # viewer -> its latest request
        self.closed = False

    def poll(self, timeout: float | None) -> None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return
        data = os.read(self.fd, 1 << 20)
        if not data:
            self.closed = True
            return
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            if line.strip():
                request = json.loads(line)
                viewer = str(request.get("viewer"))
                older = self.waiting.pop(viewer, None)
                if older is not None:
                    _inherit(request, older)
                self.waiting[viewer] = request  # the newest of a viewer supersedes its older ones

    def next(self) -> Obj | None:
        while not self.waiting and not self.closed:
            self.poll(None)
        if not self.waiting:
            return None
        _, request = self.waiting.popitem(last=False)
        return request

    def newer(self, viewer: str) -> bool:
        self.poll(0)
        return viewer in self.waiting


class Inbox(Protocol):
    def newer(self, viewer: str) -> bool:
        """True when a newer request of `viewer` came in (the one in hand is superseded)."""
        ...


class PastView(Protocol):
    """What the process entry gives a worker: the view of a past world (the dashboard's frame
    builder, which folds the world's records as it replays) and the wall clock."""

    def world(self, sim: Simulation, name: str) -> Any:
        """The session a replayed `sim` is seen through, its view subscribed before it starts."""
        ...

    def model(self, world: Any, focus: list[Any], owner: Any) -> str:
        """The view model of the moment `world` stands at, as one line of text."""
        ...

    def clock(self) -> float:
        """Wall seconds (monotonic): how often progress lines go out."""
        ...


class Worker:
    def __init__(self, requests: Inbox, view: PastView) -> None:
        self.requests = requests
        self.view = view
        self.recording: Obj | None = None
        self.replay: Replay | None = None
        self.hosted: Any = None
        self.marks: list[Any] = []
        self.chunk_events = CHUNK_EVENTS
        self.furthest = 0  # the most events any replay of this recording ran: `marks` covers them
        self.viewer = ""
        # Keyframes (timetravel.keyframes): in a keyframe world this process never rebuilds
        # (a target behind it raises Behind) and calls `on_keyframe` each time a forward replay
        # stands on a multiple of `keyframe_every` events. A keyframe is a snapshot, possible
        # only at a quiescent moment: while `seeking`, the replay goes event by event and calls
        # `on_quiet` at the first such moment.
        self.rebuilds = True
        self.keyframe_every: int | None = None
        self.on_keyframe: Callable[[bool, bool], None] | None = None  # (periodic, near)
        self.seeking = False
        self.on_quiet: Callable[[], None] | None = None
        # With keyframes: a replay more than 2 * `keyframe_near` events from its target also
        # looks for a keyframe from `keyframe_near` events before it on (the steps back that
        # follow land near it: they replay from there, not from an earlier keyframe).
        self.keyframe_near: int | None = None
        self.rate = 0.0  # the session's kernel events per virtual second (the live position's average)
        self.going: Obj = {}  # the target being served (what Behind asks another world to serve)
        # The clock may stand past the last event run (a time or an exact position was asked):
        # then this world is not "right after event N" for its N, only for a later moment.
        self.moved = False
        # Progress of a long replay: `on_progress({"events", "time"})` between chunks, at most
        # every `progress_every` wall seconds (the host's time limit counts from the last one,
        # and the page shows it). Not for a sweep: nobody waits for one.
        self.on_progress: Callable[[Obj], None] | None = None
        self.progress_every = PROGRESS_EVERY
        self._progress_at = 0.0

    # -- the world of the moment -----------------------------------------------------------------
    def _check(self) -> None:
        if self.on_progress is not None and self.replay is not None:
            now = self.view.clock()
            if now - self._progress_at >= self.progress_every:
                self._progress_at = now
                sim = self.replay.sim
                self.on_progress({"events": sim.events, "time": sim.now})
        if self.requests.newer(self.viewer):
            raise Superseded

    def _rebuild(self) -> None:
        assert self.recording is not None
        if self.replay is not None:
            self.replay.sim.close()  # the world it replaces ends (its embedded operators stop)
        self.replay = Replay.from_recording(self.recording, marks=self.marks)
        scenario = self.recording["scenario"]
        self.hosted = self.view.world(self.replay.sim, str(scenario.get("name")))

    def _ready(self, *, events: int | None = None, time: float | None = None, seq: int | None = None) -> Any:
        """The replay, rebuilt from the start if it already stands past the target (`events`
        kernel events, the clock at `time`, trace record `seq` written)."""
        replay = self.replay
        if replay is not None:
            here = replay.position()
            if (
                (events is not None and events < here.events)
                or (events is not None and events == here.events and time is None and self.moved)
                or (time is not None and vtime(time) < here.time)
                or (seq is not None and here.seq >= seq)
            ):
                if not self.rebuilds and here.events > 0:
                    raise Behind(self.going, {"events": events, "time": time, "seq": seq})
                replay = None
        if replay is None:
            self._rebuild()
            self.moved = False
        assert self.replay is not None
        return self.replay

    def _chunks(self, replay: Any, bound: float, events: int | None = None) -> None:
        """Replay at full speed towards `bound` (or `events`), a chunk at a time, looking for a
        newer request between chunks. With keyframes: `on_keyframe(periodic, near)` after each
        chunk; chunks end at each multiple of `keyframe_every` events (`periodic`), and (`near`) `keyframe_near` events
        before the target `events`; for a time target, whose event count is known only once
        reached, from about four times as many events before it (by the rate of this replay so
        far) and then every `keyframe_near` events (the broker keeps the last before the target)."""
        sim = replay.sim
        every = self.keyframe_every
        near = self.keyframe_near
        before = None  # the event count at which to leave a keyframe, just before `events`
        soon = None  # for a time target: the moment from which keyframes are left every `near` events
        tail: int | None = None  # for a time target, from `soon` on: the event count of the next one
        rate = self.rate  # events per virtual second: the session's average, then this replay's
        start = (sim.now, sim.events)
        if every and near:
            if events is not None:
                if events - sim.events > 2 * near:
                    before = events - near
            elif rate > 0 and (bound - sim.now) * rate > 8 * near:
                soon = vtime(bound - 4 * near / rate)
        while replay.sim.halted is None:
            if soon is not None and near and sim.now > start[0] and sim.events > start[1]:
                rate = (sim.events - start[1]) / (sim.now - start[0])
                soon = max(vtime(bound - 4 * near / rate), sim.now)
            target = sim.events + self.chunk_events
            if every:
                target = min(target, (sim.events // every + 1) * every)
            if before is not None and before > sim.events:
                target = min(target, before)
            if tail is not None:
                target = min(target, tail)
            if events is not None:
                target = min(target, events)
                if target <= sim.events:
                    return
            if self.seeking and self.on_quiet is not None and replay.run_to_quiet(target, bound):
                self.moved = False
                self.on_quiet()
                self._check()
                continue
            limit = bound if soon is None else soon
            try:
                replay.run_to_events(target, limit)
            except ReplayError:
                self.moved = True
                if soon is None:
                    return  # the bound came first
                soon, tail = None, sim.events + (near or 0)  # near the target time
                if self.on_keyframe is not None:
                    self.on_keyframe(False, True)
                continue
            self.moved = False
            if self.on_keyframe is not None and every:  # after every chunk (a snapshot may be due)
                self.on_keyframe(sim.events % every == 0, sim.events in (before, tail))
            if tail is not None and sim.events == tail:
                tail += near or 0
            self._check()

    def go(self, target: Obj, live: Obj) -> Obj:
        """Replay to `target`; returns the position reached."""
        live_time = float(live["time"])
        self.going = target
        self.rate = int(live["events"]) / live_time if live_time > 0 else 0.0
        if "at" in target:
            t = float(target["at"])
            replay = self._ready(time=t)
            self._chunks(replay, t)
            position = replay.run_to_time(t)
            self.moved = True
            return self._reached(position)
        if "seq" in target:
            seq, t = int(target["seq"]), float(target["time"])
            replay = self._ready(time=t, seq=seq)
            self._chunks(replay, vtime(t - NANOSECOND))
            position = replay.run_to_seq(seq, t)
            self.moved = False
            return self._reached(position)
        if "events" in target:
            events, t = int(target["events"]), float(target["time"])
            exact = bool(target.get("exact"))
            replay = self._ready(events=events, time=t if exact else None)
            self._chunks(replay, t, events)
            position = replay.run_to_events(events, t, exact=exact)
            self.moved = exact
            return self._reached(position)
        step = target.get("back") or target.get("forward")
        if step not in ("event", "stage", "sync"):
            raise ValueError("step: back or forward must be event, stage or sync")
        at = _position(target.get("from") or live)
        if self.furthest < at.events or self.replay is None:
            # The index of sync records must cover `at`: replay up to it first.
            replay = self._ready(events=at.events)
            self._chunks(replay, at.time, at.events)
            self._reached(replay.run_to_events(at.events, at.time))
            self.moved = False
        assert self.replay is not None
        if "back" in target:
            finder = {
                "event": self.replay.previous_event,
                "stage": self.replay.previous_stage,
                "sync": self.replay.previous_sync,
            }[step]
            return self.go({"events": finder(at), "time": at.time}, live)
        if step == "event":
            events = at.events + 1
        else:
            replay = self._ready(events=at.events)
            events = replay.next_mark(at, step, live_time)
            self.furthest = max(self.furthest, replay.position().events)
        if events >= int(live["events"]):
            return {"live": True}
        return self.go({"events": events, "time": live_time}, live)

    def _reached(self, position: Any) -> Obj:
        self.furthest = max(self.furthest, position.events)
        return dict(position.to_json())

    def render(self, focus: list[Any], owner: Any = None) -> str:
        """The view model of the moment (`PastView.model`), as one line of text."""
        return self.view.model(self.hosted, focus, owner)

    def drop_world(self) -> None:
        """Forget the replayed world (the next request rebuilds it)."""
        self.replay, self.hosted, self.moved = None, None, False

    # -- one request ---------------------------------------------------------------------------------
    def handle(self, request: Obj) -> Obj:
        self.viewer = str(request.get("viewer"))
        self._progress_at = self.view.clock()  # the first progress line a `progress_every` from now
        if "recording" in request:
            self.recording = request["recording"]
            self.replay, self.hosted, self.marks, self.furthest = None, None, [], 0
        elif self.recording is not None and request.get("actions"):
            self.recording["actions"].extend(request["actions"])
            if self.replay is not None:
                self.replay.extend(request["actions"])
        if self.recording is None:
            return {"ok": False, "error": "the worker has no recording yet"}
        try:
            position = self.go(request["target"], request["live"])
        except (ReplayError, ScenarioError, ValueError) as exc:
            return {"ok": False, "error": str(exc).splitlines()[0]}
        if position.get("live"):
            return {"ok": True, "live": True}
        if request.get("sweep"):  # keyframes on the way were its purpose: nothing to render
            return {"ok": True, "position": position}
        text = self.render(request.get("focus") or [], request.get("owner"))
        return {"ok": True, "position": position, "text": text}


def progress_line(request: Obj, progress: Obj) -> None:
    """Tell the host how far the replay of `request` has come: a line `{"id", "viewer",
    "progress": {"events", "time"}}` on stdout (no answer: the answer comes later)."""
    head = {"id": request.get("id"), "viewer": request.get("viewer"), "progress": progress}
    sys.stdout.write(json.dumps(head, separators=(",", ":"), allow_nan=False, default=str) + "\n")
    sys.stdout.flush()


def _position(value: Obj) -> Position:
    return Position(int(value["events"]), int(value["seq"]), float(value["time"]))

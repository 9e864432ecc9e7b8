"""Two hosted simulations driven as one: the compare page (issue 16 §4; the fork of issue 17 §5).

Guarantees
----------
* A pair is any two simulations hosted by this process, A and B, named by their ids; nothing in
  either changes by being paired (each stays a session of its own, with its own page).
* Lock-step virtual time: while the pair runs, its driver gives both the same "run to T" goal
  (`step to`, the sessions' own command), and sets the next T only once both have reached the
  current one. If they stand at different times (one was stepped on its own page, or stopped
  early), the one behind is run to the other's time first and the one ahead waits. So neither runs
  ahead of the other by more than one step (at most half a wall second times the speed; at most
  `MAX_FAST_STEP` virtual seconds as fast as possible), and only while the other catches up.
* A side that stops by itself before T (a breakpoint, a contained error, a ceiling) pauses the
  pair, which says why (`note`).
* The summary (`controlplane.compare.diff_reports` of the two worlds) is built at most once per
  `SUMMARY_INTERVAL` while running (further apart when building it is slow: never more than a
  tenth of the time), and as soon as both stand still at new times; every viewer reads the same.
* Pair commands change nothing on bad input (CommandError, one line).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from typing import Any

from controlplane.simulation import (
    POD_STATES,
    SPEEDS,
    CommandError,
    describe_block,
    diff_reports,
    parse_speed,
    parse_time,
)
from dashboard.host import panels
from dashboard.host.host import Host, spawn
from dashboard.host.hosted import HostedSimulation

Obj = dict[str, Any]

STEP_WALL = 0.05  # wall seconds of virtual time one lock-step covers at a speed
FAST_STEP = 0.5  # virtual seconds of the first lock-step as fast as possible ...
MIN_FAST_STEP, MAX_FAST_STEP = 0.01, 10.0  # ... then adapted so that one takes about FAST_WALL
FAST_WALL = 0.1
TICK = 0.01  # how often the driver looks whether both reached the goal
SUMMARY_INTERVAL = 1.0  # the summary is rebuilt at most this often while running ...
SUMMARY_SHARE = 10.0  # ... and at most once per 10x what building it cost
MAX_PAIRS = 10
REACHED = "ran to the time asked"


class Pair:
    def __init__(self, host: Host, a_id: str, b_id: str) -> None:
        self.host = host
        self.a_id, self.b_id = a_id, b_id
        self.mode = "paused"  # paused | running | fast
        self.speed = 1.0
        self.note: str | None = None  # why the pair paused by itself
        self.target: float | None = None  # the lock-step goal both sides are running to
        self._anchor = (0.0, 0.0)  # (virtual, wall) the pacing counts from
        self._fast_step = FAST_STEP
        self._step_started = 0.0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None
        self.summary: Obj | None = None
        self._summary_times: tuple[float, float] | None = None
        self._summary_at = -math.inf
        self._summary_cost = 0.0

    # -- the two sides ------------------------------------------------------------------------------
    def sides(self) -> tuple[HostedSimulation, HostedSimulation]:
        a, b = self.host.sims.get(self.a_id), self.host.sims.get(self.b_id)
        if a is None or b is None or a.stopped or b.stopped:
            raise CommandError("one of the two simulations has stopped")
        return a, b

    def ensure_driving(self) -> None:
        if self._task is None or self._task.done():
            self._task = spawn(self._drive(), f"pair {self.a_id} {self.b_id}")

    # -- the driver -----------------------------------------------------------------------------------
    async def _drive(self) -> None:
        while True:
            try:
                a, b = self.sides()
            except CommandError:
                return  # a side stopped: the pair ends with it
            if self.mode == "paused":
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=1.0)
                continue
            if _moving(a) or _moving(b):
                await asyncio.sleep(TICK)
                continue
            self._advance(a, b)
            await asyncio.sleep(TICK)

    def _advance(self, a: HostedSimulation, b: HostedSimulation) -> None:
        """Both sides stand still: check why, then give both the next goal (the one behind first)."""
        for side, name in ((a, "A"), (b, "B")):
            if side.error is not None or side.sim.halted is not None:
                self._pause(f"{name} stopped: {side.error or side.sim.halted}")
                return
            hit = side.hit
            if hit is not None and hit.get("why") != REACHED:
                self._pause(f"{name} paused: {hit.get('why')} at t={hit.get('t')}")
                return
        wall = time.monotonic()
        if self.mode == "fast" and self.target is not None:
            # Adapt the step so that one takes about FAST_WALL of wall time.
            took = wall - self._step_started
            factor = 2.0 if took < FAST_WALL / 2 else 0.5 if took > FAST_WALL * 2 else 1.0
            self._fast_step = min(MAX_FAST_STEP, max(MIN_FAST_STEP, self._fast_step * factor))
        ta, tb = a.sim.now, b.sim.now
        if abs(ta - tb) >= 0.0005:  # the one behind catches up first
            behind, ahead = (a, tb) if ta < tb else (b, ta)
            self._goal(behind, ahead)
            return
        now = max(ta, tb)
        if self.mode == "fast":
            target = now + self._fast_step
        else:
            anchor_v, anchor_w = self._anchor
            target = anchor_v + (wall - anchor_w) * self.speed
            if target - now > self.speed * 0.5:  # far behind the wall clock: drop the debt
                self._anchor = (now, wall)
                target = now + self.speed * STEP_WALL
        target = math.floor(target * 1000.0 + 1e-6) / 1000.0
        if target <= now:
            return
        self._step_started = wall
        self.target = target
        self._goal(a, target)
        self._goal(b, target)

    def _goal(self, side: HostedSimulation, target: float) -> None:
        if target > side.sim.now:
            side.command({"op": "step", "what": "to", "t": target})
            self.host.wake(side.id)

    def _pause(self, note: str | None) -> None:
        self.mode = "paused"
        self.note = note
        self.target = None

    # -- commands ---------------------------------------------------------------------------------------
    def command(self, cmd: Obj) -> Obj:
        a, b = self.sides()
        do = cmd.get("do")
        if do == "run":
            speed = cmd.get("speed", self.speed)
            if speed == "max":
                self.mode = "fast"
            else:
                self.speed = parse_speed(speed)
                self.mode = "running"
            self.note = None
            self._anchor = (min(a.sim.now, b.sim.now), time.monotonic())
            for side in (a, b):
                side.hit = None
        elif do == "pause":
            self._pause(None)
            for side in (a, b):
                side.command({"op": "pause"})
        elif do == "speed":
            speed = cmd.get("speed")
            if speed == "max":
                if self.mode != "paused":
                    self.mode = "fast"
            else:
                self.speed = parse_speed(speed)
                if self.mode == "fast":
                    self.mode = "running"
                self._anchor = (min(a.sim.now, b.sim.now), time.monotonic())
        elif do == "to":
            target = parse_time(cmd.get("t"), max(a.sim.now, b.sim.now))
            self._pause(None)
            for side in (a, b):
                self._goal(side, target)
        elif do == "event":
            self._pause(None)
            self._next_event(a, b)
        else:
            raise CommandError("pair: do must be run, pause, speed, to or event")
        self._wake.set()
        self.ensure_driving()
        return {"ok": True, "mode": self.mode}

    def _next_event(self, a: HostedSimulation, b: HostedSimulation) -> None:
        """One event of the world whose next event comes first (both, when at the same time);
        then the other is run to the same time."""
        if _moving(a) or _moving(b):
            raise CommandError("the two worlds are still running to the last goal: pause first")
        times = [side.sim.next_timer() for side in (a, b)]
        if all(t is None for t in times):
            raise CommandError("no event is scheduled in either world")
        first = min(t for t in times if t is not None)
        for side, t in zip((a, b), times, strict=True):
            if t == first:
                side.command({"op": "step", "what": "event"})
        later = max(a.sim.now, b.sim.now)
        for side in (a, b):
            self._goal(side, later)

    # -- what the page shows ------------------------------------------------------------------------------
    def view(self) -> Obj:
        a, b = self.sides()
        self._refresh_summary(a, b)
        summary = self.summary or {}
        return {
            "mode": self.mode,
            "speed": self.speed,
            "speeds": SPEEDS,
            "note": self.note,
            "a": _side(a, b, "A", summary),
            "b": _side(b, a, "B", summary),
            "summary": summary,
            "timeline": _timeline(summary),
        }

    def _refresh_summary(self, a: HostedSimulation, b: HostedSimulation) -> None:
        times = (a.sim.now, b.sim.now)
        if times == self._summary_times and self.summary is not None:
            return
        wall = time.monotonic()
        still = not (_moving(a) or _moving(b)) and self.mode == "paused"
        due = wall - self._summary_at >= max(SUMMARY_INTERVAL, SUMMARY_SHARE * self._summary_cost)
        if self.summary is not None and not still and not due:
            return
        self.summary = diff_reports(a.sim.diff_input(), b.sim.diff_input())
        self._summary_times = times
        self._summary_at = time.monotonic()
        self._summary_cost = self._summary_at - wall


def _moving(side: HostedSimulation) -> bool:
    return side.goal is not None or side.mode != "paused"


def _config_difference(mine: Obj, theirs: Obj) -> Obj:
    """The keys of `mine` whose value differs from `theirs` (nested mappings key by key)."""
    out: Obj = {}
    for key in sorted(set(mine) | set(theirs)):
        value, other = mine.get(key), theirs.get(key)
        if isinstance(value, dict) and isinstance(other, dict):
            inner = {k: value.get(k) for k in sorted(set(value) | set(other)) if value.get(k) != other.get(k)}
            if inner:
                out[key] = inner
        elif value != other:
            out[key] = value
    return out


def _side(side: HostedSimulation, other: HostedSimulation, letter: str, summary: Obj) -> Obj:
    key = letter.lower()
    owners = []
    for row in panels.owners(side)["rows"]:
        states = [
            {"state": POD_STATES[i], "count": n} for i, n in sorted(row["tiles"].items()) if n and i < len(POD_STATES)
        ]
        owners.append(
            {
                **{
                    k: row[k]
                    for k in (
                        "kind",
                        "short",
                        "name",
                        "namespace",
                        "desired",
                        "current",
                        "ready",
                        "available",
                        "conditions",
                    )
                },
                "states": states,
            }
        )
    calls = summary.get("calls") or []
    events = summary.get("events") or []
    failed = sum(row[key] for row in calls if isinstance(row["code"], int) and row["code"] >= 400)
    return {
        "letter": letter,
        "key": key,
        "id": side.id,
        "name": side.name,
        "status": panels.status(side),
        "config": describe_block(_config_difference(side.sim.config, other.sim.config)),
        "owners": owners,
        "calls": sum(row[key] for row in calls),
        "failed": failed,
        "top_calls": sorted((r for r in calls if r[key]), key=lambda r: -r[key])[:5],
        "events": [r for r in sorted(events, key=lambda r: -r[key]) if r[key]][:5],
    }


WIDTH, LANE = 1000.0, 40.0


def _timeline(summary: Obj) -> Obj:
    """The shared timeline as SVG geometry: A's live pods above, B's below, a ▲ per divergence."""
    pods = summary.get("pods") or {}
    times = pods.get("times") or [0.0]
    end = max(times[-1], 0.001)
    totals = pods.get("total") or {"a": [], "b": []}
    peak = max([v for side in ("a", "b") for v in totals.get(side, []) if v is not None] + [1])
    bars: list[Obj] = []
    width = WIDTH / max(len(times), 1)
    for side, base in (("a", 0.0), ("b", LANE + 16.0)):
        for i, value in enumerate(totals.get(side, [])):
            if value:
                height = LANE * value / peak
                y = base + LANE - height if side == "a" else base
                bars.append(
                    {
                        "side": side,
                        "x": round(i * width, 1),
                        "y": round(y, 1),
                        "w": round(max(width - 1, 1), 1),
                        "h": round(height, 1),
                        "t": times[i],
                        "n": value,
                    }
                )
    marks = [
        {"x": round(WIDTH * d["time"] / end, 1), "time": d["time"], "kind": d["kind"], "what": d["what"]}
        for d in summary.get("divergences") or []
    ]
    return {
        "width": WIDTH,
        "height": 2 * LANE + 16.0,
        "mid": LANE + 8.0,
        "bars": bars,
        "marks": marks,
        "end": end,
        "peak": peak,
    }


# -- the host's side -----------------------------------------------------------------------------------------


def pair_of(host: Host, a_id: str, b_id: str) -> Pair:
    """The pair of these two simulations (made on first use); CommandError when it cannot be."""
    pairs = host.pairs
    for key in [k for k in pairs if k[0] not in host.sims or k[1] not in host.sims]:
        del pairs[key]  # a side stopped: forget the pair
    if a_id == b_id:
        raise CommandError("a comparison needs two different simulations")
    if a_id not in host.sims or b_id not in host.sims:
        raise CommandError("both simulations must run in this server process")
    pair = pairs.get((a_id, b_id))
    if pair is None:
        if len(pairs) >= MAX_PAIRS:
            raise CommandError(f"this server compares at most {MAX_PAIRS} pairs at once: stop one first")
        pair = pairs[(a_id, b_id)] = Pair(host, a_id, b_id)
    return pair


def op(host: Host, hosted: HostedSimulation, cmd: Obj, message: Obj) -> Obj:
    """The host's `pair` op (`host.HOST_OPS`)."""
    return handle(host, hosted, cmd, bool(message.get("control")))


def handle(host: Host, hosted: HostedSimulation, cmd: Obj, control: bool) -> Obj:
    """The `pair` command sent to A's channel: `{"op": "pair", "other": B, "do": …}`; `do: view`
    is a read, the others need the control right."""
    other = cmd.get("other")
    if not isinstance(other, str):
        raise CommandError("pair: other must be a simulation id")
    pair = pair_of(host, hosted.id, other)
    if cmd.get("do") == "view":
        return {"ok": True, "view": pair.view()}
    if not control:
        raise CommandError("read-only: open the dashboard with its access token to control it")
    return pair.command(cmd)

"""A hosted session: one simulation under a debugger's control — its commands, its stepping goals,
its breakpoints, what its viewers look at — and what it publishes to them.

The dashboard hosts sessions (`dashboard.host.hosted.HostedSimulation` adds the wall-clock
pacing and the frame builder that renders what the session publishes); nothing here knows of
Django, Channels, asyncio or the wall clock.

Guarantees
----------
* The kernel moves only in `advance`, toward a target the caller gives (a wall-clock pacer's,
  when the session runs at a speed) or the session's own (a goal's horizon; as fast as possible),
  until the caller's `out_of_time()` says the slice is over. Pacing never enters `controlplane/`.
* Every change to the world is an action of the vocabulary (the scenario format of
  docs/scenarios.md), applied with `Simulation.act` at the current virtual time — the point a
  scenario file's action with that `at` is applied — so `export()` replays headless to the
  identical report.
* A step goal (next event, stage, sync, timer; run until idle: `controlplane.session.goals`) or a
  breakpoint pauses the run right after the event that reached it, and `hit` says which and why.
* An exception inside the simulation pauses it with `error` set; the process, the other
  simulations and the viewers carry on.
* What happened is published to the session's listeners (`SessionListener`, `subscribe`), in
  order, as it happens: every trace record (before the session checks its goal and breakpoints
  against it), what viewers focus on, each action taken, each stop. Listeners read; they never
  drive the session.
"""

from __future__ import annotations

import json
import math
import traceback
from collections.abc import Callable
from typing import Any

from controlplane.limits import MAX_SECONDS
from controlplane.session import edit, goals
from controlplane.session.breakpoints import BreakpointError, Breakpoints, Hit
from controlplane.session.commands import CommandError, _speed, _time, parse_manifests
from controlplane.session.goals import IDLE_GAP, IDLE_HORIZON, STEP_HORIZON, Goal
from controlplane.session.timefmt import vtime
from controlplane.stepping import STEPS, Target
from controlplane.world import Simulation

Obj = dict[str, Any]

MAX_RECORDED_ACTIONS = 100_000  # dashboard.host.recording.MAX_ACTIONS: a session is its recording
# The JSON of the actions a session may take (dashboard.host.recording.MAX_BYTES), refused writes
# included (each is logged with its body: it replays to the same refusal). A write is at most
# 3 MiB (kube-apiserver's limit), so without this 2.4-3 MB a write, refused or not, piled up in
# the database for ever. 64 MiB is what a scenario file may hold: the session's scenario.yaml,
# which carries every action, still loads.
MAX_RECORDED_BYTES = 64 * 1024 * 1024


def _json_size(value: Any) -> int:
    """Bytes of `value` as compact JSON (escaped ASCII: at least its UTF-8 size in the recording)."""
    return len(json.dumps(value, separators=(",", ":")))


class SessionListener:
    """What a session publishes (`Session.subscribe`), one method per kind of news; each does
    nothing here, and a listener overrides the ones it needs (the dashboard's frame builder
    renders from them). Called synchronously, in subscription order, while the session works: a
    listener reads the session and the simulation, it never changes them."""

    def record(self, record: Obj) -> None:
        """A trace record, as it is written (before the session checks its goal and breakpoints)."""

    def focused(self, keys: set[tuple[str, str]]) -> None:
        """A viewer now looks at these (controller, "ns/name") keys: their inspector and truth."""

    def pod_opened(self, key: str) -> None:
        """A viewer's Pod tab now shows the pod `key` ("ns/name")."""

    def owners_focused(self, owners: set[tuple[str, str]], new: tuple[str, str] | None) -> None:
        """The (controller, "ns/name") keys some viewer's whole page is focused on changed
        (`owners`: all of them now; `new`: the one a viewer just focused on, if any)."""

    def acted(self, action: Obj, result: Obj) -> None:
        """An action of the vocabulary was applied (its result; a refused one too)."""

    def stopped(self, hit: Obj) -> None:
        """The run stopped by itself (a breakpoint, a goal reached or given up, an error, the
        world at rest at max speed): `hit` says why, as the status line shows it."""


# What a stage or sync step's goal is called: following the sync it stopped in last, or the next.
STEP_LABELS = {
    "stage": ("next stage of the sync of {key}", "next sync stage"),
    "sync": ("end of the sync of {key}", "end of the next sync"),
}


class Session:
    """One simulation under a debugger's control. Build it, let listeners `subscribe`, then
    `start()` it (its first records, the starting objects, go to them too)."""

    def __init__(self, sim_id: str, sim: Simulation, *, name: str, source: str, keep_records: bool = True) -> None:
        """`keep_records` False: no record log (why? and the complete trace view are answered by
        the live session; a replayed past world, `replay_worker`, needs none)."""
        self.id = sim_id
        self.sim = sim
        self.name = name
        self.source = source  # the library id, or "upload"
        self.mode = "paused"  # paused | running | fast
        self.speed = 1.0
        # Virtual seconds per wall second lately (running/fast): measured by whoever paces the
        # session against a clock (dashboard.host.hosted); the session clears it when it pauses.
        self.rate: float | None = None
        self.goal: Goal | None = None
        self.hit: Obj | None = None  # why the run last stopped by itself
        self.error: str | None = None
        self.breakpoints = Breakpoints()
        self._focus: dict[str, set[tuple[str, str]]] = {}  # viewer channel -> keys it looks at
        self._open: dict[str, str] = {}  # viewer channel -> the pod ("ns/name") its Pod tab shows
        # viewer channel -> the owner key its whole page is focused on (#19 §3): its queue and
        # expectations panels are then filtered here, before their lists are capped
        self._owner: dict[str, tuple[str, str]] = {}
        self.open_pods: set[str] = set()  # the pods some viewer's Pod tab shows (frames keep them live)
        self.viewers: set[str] = set()  # channels of the viewers connected (frames are for them)
        self.marks: list[Obj] = []  # times pinned on the timeline: {t, label}
        self._stop: Hit | None = None
        self.stepping: tuple[str, str] | None = None  # the sync the last stage step stopped in
        self.syncing: set[tuple[str, str]] = set()  # (controller, key) of the syncs running now
        self.stopped = False
        self.saturated = False  # the last slice ran out of time with work left
        self.restored_note: str | None = None  # "restored after a restart at t=…; replayed N actions"
        self._action_bytes: int | None = None  # JSON bytes of sim.actions' actions (counted on first act)
        self._listeners: list[SessionListener] = []
        # Every record of the session, for why? and the complete trace view (controlplane.causes).
        if keep_records:
            sim.keep_records()
        sim.subscribe(self._on_record)

    def subscribe(self, listener: SessionListener) -> None:
        """`listener` hears what the session publishes from now on (subscribe before `start`)."""
        self._listeners.append(listener)

    def start(self) -> None:
        """Apply the scenario's starting objects and timeline: the simulation's first records."""
        self.sim.start()

    def action_bytes(self) -> int:
        """The JSON size of the actions in this session's log (its recording's bulk): bounded by
        `MAX_RECORDED_BYTES` for what users add."""
        if self._action_bytes is None:
            self._action_bytes = sum(_json_size(entry["action"]) for entry in self.sim.actions)
        return self._action_bytes

    def restored(self, note: str) -> None:
        """After a replay of its recording (dashboard.host.recording): paused where the
        replay ended, saying so; what the replay's records matched stops nothing."""
        self._stop = None
        self.mode = "paused"
        self.restored_note = note
        self.hit = {"breakpoint": None, "why": note, "t": round(self.sim.now, 3), "detail": ""}

    # -- what viewers look at -------------------------------------------------------------------
    def focus(self, viewer: str, keys: list[tuple[str, str]]) -> None:
        # A controller's keys, or an embedded operator's (its handler invocations are its syncs).
        names = {*self.sim.controllers, *self.sim.operator_names}
        valid = {(c, k) for c, k in keys if c in names and isinstance(k, str) and k.count("/") == 1}
        if valid:
            self._focus[viewer] = set(list(valid)[:4])
        else:
            self._focus.pop(viewer, None)
        for listener in self._listeners:
            listener.focused(valid)

    def open_pod(self, viewer: str, key: Any) -> None:
        """The pod `key` ("namespace/name") is open in this viewer's Pod tab, or none (None): its
        panel is then a focused panel, rebuilt whenever a record touches that pod (#19 §4)."""
        if isinstance(key, str) and key.count("/") == 1 and 3 <= len(key) <= 317:
            self._open[viewer] = key
            for listener in self._listeners:
                listener.pod_opened(key)
        else:
            self._open.pop(viewer, None)
        self.open_pods = set(self._open.values())

    def focus_owner(self, viewer: str, owner: Any) -> None:
        """The viewer's page is focused on one controller key (`[controller, "ns/name"]`), or
        on nothing (None): the focused queue and expectations panels of that key exist while
        some viewer is focused on it."""
        new: tuple[str, str] | None = None
        if (
            isinstance(owner, list | tuple)
            and len(owner) == 2
            and owner[0] in self.sim.controllers
            and isinstance(owner[1], str)
            and owner[1].count("/") == 1
        ):
            new = (str(owner[0]), owner[1])
            self._owner[viewer] = new
        else:
            self._owner.pop(viewer, None)
        for listener in self._listeners:
            listener.owners_focused(self.focused_owners(), new)

    def unfocus(self, viewer: str) -> None:
        self._focus.pop(viewer, None)
        if self._owner.pop(viewer, None) is not None:
            for listener in self._listeners:
                listener.owners_focused(self.focused_owners(), None)
        self._open.pop(viewer, None)
        self.open_pods = set(self._open.values())
        self.viewers.discard(viewer)

    def focused(self) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for keys in self._focus.values():
            out |= keys
        return out

    def focused_keys(self, controller: str) -> list[str]:
        return [k for c, k in self.focused() if c == controller]

    def focused_owners(self) -> set[tuple[str, str]]:
        """The (controller, "ns/name") keys some viewer's whole page is focused on."""
        return set(self._owner.values())

    # -- the trace ------------------------------------------------------------------------------
    def _on_record(self, record: Obj) -> None:
        for listener in self._listeners:
            listener.record(record)
        kind = record["kind"]
        if kind == "sync.start":
            self.syncing.add((record["controller"], record["key"]))
        elif kind == "sync.end":
            self.syncing.discard((record["controller"], record["key"]))
        goal = self.goal
        if (
            goal is not None
            and goal.target is not None
            and self._stop is None
            and goal.target.accepts(kind, record.get("controller"), record.get("key"))
        ):
            goal.reached = goal.label
            if kind in ("sync.start", "sync.stage"):
                self.stepping = (record["controller"], record["key"])
            self._stop = Hit(0, goal.label, record["time"], goals.record_line(record))
        if kind == "error" and self._stop is None:
            # Something raised inside the simulation and was contained there (a failed sync is
            # requeued, a failed action logged): pause on it, the session lives on.
            self._stop = Hit(
                0, f"the simulation contained an error ({record['where']})", record["time"], record["error"]
            )
        if self.breakpoints.items and self._stop is None:
            hit = self.breakpoints.match_record(record)
            if hit is not None:
                self._stop = hit

    # -- driving --------------------------------------------------------------------------------
    @property
    def goal_label(self) -> str | None:
        return self.goal.label if self.goal is not None else None

    @property
    def busy(self) -> bool:
        """Something for the driver to do now."""
        return not self.stopped and self.error is None and (self.mode != "paused" or self.goal is not None)

    def advance(self, paced: float, out_of_time: Callable[[], bool]) -> bool:
        """Run simulation events toward a target: a goal's horizon; as far as a session runs at
        max speed; else `paced`, the virtual time a pacer allows now (the dashboard's, counted
        against the wall clock: `dashboard.host.hosted`). Stops early after the event that hit a
        breakpoint or reached the goal, where a run at max comes to rest, or once `out_of_time()`
        (asked every 16 events) says the slice is over (`saturated` then). False when the
        simulation raised: the session is paused with `error` set."""
        sim, kernel = self.sim, self.sim.kernel
        if self.goal is not None:
            target = self.goal.until
        elif self.mode == "fast":
            target = MAX_SECONDS
        else:
            target = paced
        # A session never runs past the bound of a scenario's `until`: its export must replay.
        target = min(target, MAX_SECONDS)
        fast = self.mode == "fast" and self.goal is None
        ran = 0
        self.saturated = False
        try:
            while True:
                if sim.halted is not None:
                    self._pause_with(sim.halted)
                    break
                nxt = kernel.peek()
                goal = self.goal
                if goal is not None and goal.needs_work and (nxt is None or nxt - sim.now >= IDLE_GAP):
                    # A quiet gap: the world may have come to rest short of the goal.
                    why = goals.stuck(sim, goal)
                    if why is not None:
                        self._finish_goal(why)
                        break
                if nxt is None or nxt > target:
                    if math.isfinite(target) and target > sim.now:
                        sim.run_until(target)  # no event before the target: only the clock moves
                    break
                if fast and nxt - sim.now >= IDLE_GAP and goals.quiet(sim) and not goals.timeline_before(sim, math.inf):
                    # max stops where the world comes to rest (only a quiet gap can be one), never
                    # in front of the scenario's own next action: the world is idle only until then.
                    waiting = goals.manual_keys(sim)
                    if waiting:
                        self._pause_with(f"max: at rest; {goals.waiting_words(waiting)}")
                    else:
                        self._pause_with(
                            "max: idle (queues empty, caches caught up, every pod at rest); "
                            "only periodic timers are left"
                        )
                    break
                # One event, an exception it raises contained by the simulation (an `error`
                # record: the run pauses on it and the session goes on).
                sim.step()
                ran += 1
                if self._after_event():
                    break
                if (ran & 15) == 0 and out_of_time():
                    self.saturated = True  # more work than the slice: the simulation wants the CPU
                    break
        except Exception as exc:  # a bug in the simulation: pause, say so, keep the process
            self._fail(exc)
            return False
        if self.goal is not None:
            nxt = kernel.peek()
            if nxt is None or nxt > self.goal.until:
                # Nothing is due before the goal's horizon. A slice can end (out of time) right
                # after the last event before it: only the clock is left to move, as the loop
                # above moves it -- never finish a run to t=5 at t=2.28.
                if sim.halted is None and math.isfinite(self.goal.until) and self.goal.until > sim.now:
                    sim.run_until(min(self.goal.until, MAX_SECONDS))
                if self.goal.target is not None or self.goal.predicate is not None:
                    self._finish_goal(f"{self.goal.label}: not reached by t={vtime(self.goal.until)}")
                else:
                    self._finish_goal(self.goal.label)
        if self.mode != "paused" and self.goal is None and sim.now >= MAX_SECONDS:
            self._pause_with(
                f"t={MAX_SECONDS:.0f} s (30 days) is as far as a session runs: a scenario's until is at most that, "
                "so its export still replays"
            )
        elif self.mode == "fast" and self.goal is None and kernel.peek() is None:
            self._pause_with("nothing left to run: no event is scheduled")
        return True

    def next_event_time(self) -> float | None:
        """When the kernel's next event is due (virtual seconds), or None: nothing is scheduled."""
        return self.sim.kernel.peek()

    def _after_event(self) -> bool:
        """After each event: stop at a breakpoint or a reached goal. True to end the slice."""
        goal = self.goal
        if self.breakpoints.watches_lag and self._stop is None:
            hit = self.breakpoints.match_lag(self._informer_lags(), self.sim.now)
            if hit is not None:
                self._stop = hit
        if goal is not None and self._stop is None:
            if goal.predicate is not None and goal.predicate():
                self._stop = Hit(0, goal.label, self.sim.now, "reached")
            elif self.sim.kernel.events >= goal.limit_events or self.sim.now > goal.until:
                self._finish_goal(f"{goal.label}: not reached within the step's limit")
                return True
        if self._stop is None:
            return False
        stop, self._stop = self._stop, None
        if stop.breakpoint:
            self.hit = {
                "breakpoint": stop.breakpoint,
                "why": stop.description,
                "t": round(stop.time, 3),
                "detail": stop.detail,
            }
        else:
            self.hit = {"breakpoint": None, "why": stop.description, "t": round(stop.time, 3), "detail": stop.detail}
        self.goal = None
        self.mode = "paused"
        self.rate = None
        self._publish_stop(self.hit)
        return True

    def _finish_goal(self, why: str) -> None:
        self.hit = {"breakpoint": None, "why": why, "t": round(self.sim.now, 3), "detail": ""}
        self.goal = None
        self.mode = "paused"
        self._publish_stop(self.hit)

    def _pause_with(self, why: str) -> None:
        self.mode = "paused"
        self.rate = None
        self.hit = {"breakpoint": None, "why": why, "t": round(self.sim.now, 3), "detail": ""}
        self._publish_stop(self.hit)

    def _publish_stop(self, hit: Obj) -> None:
        for listener in self._listeners:
            listener.stopped(hit)

    def _informer_lags(self) -> list[Obj]:
        out = []
        for c in self.sim.controllers.values():
            for informer in c.informers:
                out.append({"name": informer.name, "resource": informer.resource, "lag": informer.lag()})
        return out

    def _fail(self, exc: BaseException) -> None:
        """Pause on an exception the simulation raised, saying so (the host logs it too)."""
        self.error = f"{type(exc).__name__}: {exc}"
        self.mode = "paused"
        self.goal = None
        self.hit = {
            "breakpoint": None,
            "why": "the simulation raised an error",
            "t": round(self.sim.now, 3),
            "detail": traceback.format_exception_only(exc)[-1].strip(),
        }
        self._publish_stop(self.hit)

    # -- commands (one per control on the page) ---------------------------------------------------
    def command(self, cmd: Obj, *, viewer: str | None = None) -> Obj:
        """Carry out one command from a viewer; returns a result (`ok` and the details). Bad
        input raises CommandError before anything changes."""
        op = cmd.get("op")
        handler = getattr(self, f"_cmd_{op}", None) if isinstance(op, str) and op.isidentifier() else None
        if handler is None:
            raise CommandError(f"unknown command {op!r}")
        result: Obj = handler(cmd, viewer)
        return result

    def _cmd_run(self, cmd: Obj, viewer: str | None) -> Obj:
        if self.error is not None:
            raise CommandError("the simulation stopped on an error; start a new one")
        speed = cmd.get("speed", self.speed)
        if speed == "max":
            self.mode = "fast"
        else:
            self.speed = _speed(speed)
            self.mode = "running"
        self.goal = None
        self.hit = None
        return {"ok": True, "mode": self.mode, "speed": self.speed}

    def _cmd_pause(self, cmd: Obj, viewer: str | None) -> Obj:
        self.mode = "paused"
        self.goal = None
        self.rate = None
        return {"ok": True, "mode": self.mode}

    def _cmd_speed(self, cmd: Obj, viewer: str | None) -> Obj:
        if cmd.get("speed") == "max":
            if self.mode != "paused":
                self.mode = "fast"
            return {"ok": True, "speed": "max"}
        self.speed = _speed(cmd.get("speed"))
        if self.mode == "fast":
            self.mode = "running"
        return {"ok": True, "speed": self.speed}

    def _cmd_step(self, cmd: Obj, viewer: str | None) -> Obj:
        if self.error is not None:
            raise CommandError("the simulation stopped on an error; start a new one")
        what = cmd.get("what")
        if what not in ("event", "stage", "sync", "timer", "idle", "to"):
            raise CommandError("step: what must be event, stage, sync, timer, idle or to")
        sim = self.sim
        if what == "to":
            target = _time(cmd.get("t"), sim.now)
        if what == "timer" and sim.next_event() is None and not sim.upcoming(1):
            raise CommandError("no timer is scheduled")
        self.mode = "paused"
        self.hit = None
        self.rate = None
        start = sim.kernel.events
        if what == "event":
            self.goal = None
            try:
                ran = sim.step()
            except Exception as exc:
                self._fail(exc)
                return {"ok": False, "error": self.error}
            if not ran:
                raise CommandError("no event is scheduled")
            self._after_event()
            return {"ok": True, "t": sim.now}
        # Stepping follows the sync it stopped in last, while that sync runs (like a debugger
        # stepping one thread); otherwise the next sync of any key. A `controller` (a sync step
        # only) names whose next sync: an embedded operator's name steps to its next handler.
        only = cmd.get("controller")
        if only is not None:
            names = [*sim.controllers, *sim.operator_names]
            if what != "sync" or only not in names:
                raise CommandError(f"step: controller names whose next sync: one of {', '.join(names)}")
        current = self.stepping if self.stepping in self.syncing else None
        if current is not None and only is not None and current[0] != only:
            current = None
        if (
            what in ("stage", "sync")
            and current is None
            and not self.syncing
            and only not in sim.operator_names
            and all(c.config.manual_workers for c in sim.controllers.values())
        ):
            raise CommandError("no sync is running and the workers are manual: click “sync next” first")
        if what in STEPS:  # a stage, a sync: the one stepping mechanism's stopping points
            following, fresh = STEP_LABELS[what]
            label = following.format(key=current[1]) if current else fresh
            if only is not None and current is None:
                label = f"end of the next sync of {only}"
            self.goal = Goal(
                label,
                target=Target(STEPS[what], current, only),
                until=sim.now + STEP_HORIZON,
                start_events=start,
                needs_work=True,
            )
        elif what == "timer":
            # The timer the status line names (`next_event`, which may be due at this very
            # instant) -- or, when the next thing due is not a kernel callback (an expectations
            # record expiring), the first of `upcoming`. A timer due now runs alone: the step
            # stops right after it, not at some later timer.
            due, upcoming = sim.next_event(), sim.upcoming(1)
            if due is not None and due["time"] <= sim.now:
                self.goal = Goal(
                    f"next timer: {due['what']}",
                    until=sim.now,
                    predicate=lambda: sim.kernel.events > start,
                    start_events=start,
                )
            else:
                nxt = min([t for t in (due, *upcoming) if t is not None], key=lambda t: float(t["time"]))
                self.goal = Goal(f"next timer: {nxt['what']}", until=nxt["time"], start_events=start)
        elif what == "to":
            self.goal = Goal("ran to the time asked", until=target, start_events=start)
        elif what == "idle":
            horizon = sim.now + IDLE_HORIZON
            self.goal = Goal(
                "idle", until=horizon, predicate=lambda: goals.idle(sim), start_events=start, needs_work=True
            )
            if goals.idle(sim):
                self.goal = None
                self.hit = {"breakpoint": None, "why": "idle already", "t": round(sim.now, 3), "detail": ""}
                self._publish_stop(self.hit)
        else:
            raise CommandError("step: what must be event, stage, sync, timer or idle")
        return {"ok": True, "goal": self.goal_label}

    def _cmd_act(self, cmd: Obj, viewer: str | None) -> Obj:
        action = cmd.get("action")
        problem = Simulation.check_action(action)
        if problem is not None or not isinstance(action, dict):  # (check_action refuses a non-mapping)
            raise CommandError(problem or "an action must be a mapping of one verb to its body")
        if self.error is not None:
            raise CommandError("the simulation stopped on an error; start a new one")
        if len(self.sim.actions) >= MAX_RECORDED_ACTIONS:
            raise CommandError(
                f"this session holds {MAX_RECORDED_ACTIONS} actions, the most a recording keeps: "
                "download its scenario.yaml and start a new session from it"
            )
        size = _json_size(action)
        held = self.action_bytes()
        if held + size > MAX_RECORDED_BYTES:
            raise CommandError(
                f"this action ({size} bytes of JSON) would take this session's recording past "
                f"{MAX_RECORDED_BYTES} bytes of actions, the most a recording keeps (it holds {held}): "
                "download its scenario.yaml and start a new session from it"
            )
        logged = len(self.sim.actions)
        try:
            result = self.sim.act(action, source=str(cmd.get("source") or "user"))
        except Exception as exc:
            self._fail(exc)
            return {"ok": False, "error": self.error}
        # What the log took meanwhile: this action, and the file's timeline actions of this instant.
        self._action_bytes = held + sum(_json_size(entry["action"]) for entry in self.sim.actions[logged:])
        for listener in self._listeners:
            listener.acted(action, result)
        if "sync" in action and result.get("ok"):
            synced = (action["sync"]["controller"], result["key"])
            self.stepping = synced  # stage steps follow it
            if viewer is not None:
                self.focus(viewer, [synced])  # the inspector of whoever clicked shows it, this frame
        self._after_event()  # the action's own records may have hit a breakpoint
        return result

    def _cmd_apply_yaml(self, cmd: Obj, viewer: str | None) -> Obj:
        """The YAML editor: one `apply` action per document; each document's result (the API
        server's field errors for a rejected one: nothing of it is stored)."""
        docs = parse_manifests(cmd.get("text"))
        results = []
        for i, doc in enumerate(docs):
            try:
                result = self._cmd_act({"action": {"apply": doc}}, viewer)
            except CommandError as exc:
                result = {"ok": False, "error": str(exc).replace("apply", f"document {i + 1}", 1)}
            results.append(result)
        return {"ok": all(r.get("ok") for r in results), "results": results}

    def _cmd_edit_apply(self, cmd: Obj, viewer: str | None) -> Obj:
        """An edit (controlplane.session.edit), applied: an update `request` action carrying the
        resourceVersion the object was opened at (a 409 if it changed meanwhile)."""
        result = self._cmd_act({"action": {"request": edit.request_of_edit(cmd)}}, viewer)
        response = result.get("response")
        code = response[0] if isinstance(response, list | tuple) and response else None
        if isinstance(code, int) and code >= 400:
            return {**result, "ok": False, "code": code}
        return result

    def _cmd_orphan(self, cmd: Obj, viewer: str | None) -> Obj:
        """Relabel a pod so its controller's selector no longer matches: the controller releases it."""
        namespace, name = _text(cmd, "namespace", "default"), _text(cmd, "name")
        pod = self.sim.server.peek("pods", namespace, name)
        if pod is None:
            raise CommandError(f'pods "{name}" not found')
        labels = pod["metadata"].get("labels") or {}
        if not labels:
            raise CommandError(f"pod {name} has no labels to change")
        patch = {"metadata": {"labels": {k: f"{v}-orphaned"[:63] for k, v in labels.items()}}}
        return self._cmd_act(
            {"action": {"patch": {"kind": "Pod", "name": name, "namespace": namespace, "patch": patch}}}, viewer
        )

    def _cmd_breakpoint(self, cmd: Obj, viewer: str | None) -> Obj:
        try:
            if cmd.get("do") == "add":
                spec = cmd.get("spec")
                operators = self.sim.operator_names
                if (
                    isinstance(spec, dict)
                    and spec.get("kind") == "handler"
                    and spec.get("operator") not in (None, "")
                    and spec["operator"] not in operators
                ):
                    known = ", ".join(operators) if operators else "none: this world runs no operator"
                    raise CommandError(f"breakpoint: operator: must be one of this world's operators ({known})")
                bp = self.breakpoints.add(spec)
                return {"ok": True, "id": bp.id, "description": bp.describe()}
            if cmd.get("do") == "remove":
                self.breakpoints.remove(cmd.get("id"))
                return {"ok": True}
            if cmd.get("do") == "toggle":
                bp = self.breakpoints.toggle(cmd.get("id"))
                return {"ok": True, "enabled": bp.enabled}
        except BreakpointError as exc:
            raise CommandError(f"breakpoint: {exc}") from None
        raise CommandError("breakpoint: do must be add, remove or toggle")

    def _cmd_focus(self, cmd: Obj, viewer: str | None) -> Obj:
        """`{op: focus, keys?: [[controller, namespace/name]], pod?: "namespace/name" | null,
        owner?: [controller, namespace/name] | null}`: what this viewer looks at (`owner`: the
        key its whole page is focused on); a field left out keeps its value."""
        pairs = []
        keys = cmd.get("keys") or []
        if not isinstance(keys, list) or len(keys) > 4:
            raise CommandError("focus: keys must be a list of at most 4 [controller, key] pairs")
        for item in keys:
            if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)):
                raise CommandError("focus: each key is [controller, namespace/name]")
            pairs.append((item[0], item[1]))
        pod = cmd.get("pod")
        if pod is not None and not (isinstance(pod, str) and pod.count("/") == 1 and 3 <= len(pod) <= 317):
            raise CommandError("focus: pod is namespace/name or null")
        owner = cmd.get("owner")
        if owner is not None and not (
            isinstance(owner, list)
            and len(owner) == 2
            and all(isinstance(x, str) for x in owner)
            and owner[0] in self.sim.controllers
            and owner[1].count("/") == 1
            and len(owner[1]) <= 317
        ):
            running = ", ".join(self.sim.controllers)
            raise CommandError(
                f"focus: owner is [controller, namespace/name] of a running controller ({running}), or null"
            )
        if viewer is not None:
            if "owner" in cmd:
                self.focus_owner(viewer, owner)
            if "keys" in cmd:
                self.focus(viewer, pairs)
            if "pod" in cmd:
                self.open_pod(viewer, pod)
        return {"ok": True}

    # -- reads (answers to one viewer) ------------------------------------------------------------
    def export(self, at: Any = None) -> Obj:
        """This session as scenario data (the current instant is finished first); with `at`,
        cut at that time of its past (CommandError naming `at` when it is not one)."""
        if self.error is None:
            self.sim.finish_instant()
        try:
            return self.sim.export_scenario(at=at)
        except ValueError as exc:
            raise CommandError(str(exc)) from None

    def recording(self, at: Any = None) -> Obj:
        """What replays this session up to `at` (a time of its past; None: now), the current
        instant finished first: `Simulation.recording(until=…)`, the one replay path's input
        (CommandError naming `at` when it is not a time of its past)."""
        if self.error is None:
            self.sim.finish_instant()
        try:
            return self.sim.recording(until=self.sim.past_time(at))
        except ValueError as exc:
            raise CommandError(str(exc)) from None

    def report(self) -> Obj:
        if self.error is None:
            self.sim.finish_instant()
        return self.sim.report()

    def finish_instant(self) -> None:
        """Run what is left of the current instant (a report shows the instant done)."""
        if self.error is None:
            self.sim.finish_instant()

    def report_json(self) -> str:
        """`report()` as compact JSON text (`Simulation.report_json`: no copy of the world).
        Call `finish_instant()` first: this changes nothing (it may run in a forked child)."""
        return self.sim.report_json()


def _text(cmd: Obj, key: str, default: str | None = None) -> str:
    value = cmd.get(key, default)
    if not isinstance(value, str) or not value or len(value) > 253:
        raise CommandError(f"{key}: required (a name)")
    return value

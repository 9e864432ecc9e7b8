"""The past on the page, the host's side: one replay worker process per hosted simulation.

Guarantees
----------
* A viewer's `past` command names a moment (a time, a trace record, an exact position, or a step
  back / forward from one); the host checks it against the live moment (a clear one-line error
  naming the field otherwise, nothing changes) and hands it to the session's replay worker
  (`dashboard.host.replay_worker`), started on the first past view and stopped with the
  session or after `IDLE` seconds without one. The live simulation never waits for it.
* The answer — the worker's view model of that moment, rendered here with the live page's own
  templates (`past_view.render`, in a thread: never on the event loop) — goes to the viewer who
  asked, and to no one else (`{"type": "past", …}`).
* A replay that takes long says how far it has come: the worker sends a progress line about
  once a second (`controlplane.session.timetravel.worker.PROGRESS_EVERY`), passed on to the viewer who asked (`{"type":
  "past_progress", "id", "events", "time"}`; the page shows it and waits on), and the answer
  arrives however long the replay is, while it moves. One that fails says why (the worker's
  exit status, the limit it ran into); never silence.
* Bounded: one replay at a time per session (the worker is one process); a viewer's newer
  request supersedes its older ones (scrubbing never queues replays); a replay that makes no
  progress for `TIME_LIMIT` seconds (a worker stuck or starting for that long), or takes more
  than `TOTAL_LIMIT` in all, has its worker killed and the viewer told; at most
  `BUSY_WORKERS` workers of this process replay at once (`reads.Gate`: others wait, then get
  "busy"). The host reads an answer as one header line and one line of the view model.
* Viewers without the token share one budget (`TokenlessBudget`): on the loopback they cannot be
  told apart, so together they are one requester. One of their replays is in hand at a time (a
  viewer's newer request still supersedes its own), and after each they rest as long as it took:
  however they loop, they use at most half of one core. The others get "busy" with the seconds
  to wait; a viewer with the token is never held back by them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

from controlplane.simulation import CommandError, Position, SessionService
from dashboard.host import past_view, reads
from dashboard.host.hosted import HostedSimulation

log = logging.getLogger(__name__)

Obj = dict[str, Any]

TIME_LIMIT = 60.0  # seconds a replay may go without progress (its worker is then killed) ...
TOTAL_LIMIT = 1800.0  # ... and may take in all (the live session's past is finite: a bound all the same)
IDLE = 600.0  # seconds without a past view before a session's worker is stopped
BUSY_WORKERS = 2  # workers of this process replaying at once (the machine's cores)
MAX_LINE = 1 << 30  # bytes of one answer line (the state of a huge world)
STEPS = ("event", "stage", "sync")
BASE_DIR = Path(__file__).resolve().parents[2]

_gate = reads.Gate("past view", slots=BUSY_WORKERS, queue=16, wait=30.0, retry_after=1)


class TokenlessBudget:
    """The replays of the viewers without the token, taken together (see the module docstring).
    `now` is the event loop's clock, passed in."""

    def __init__(self) -> None:
        self.viewer: str | None = None  # whose requests are in hand
        self.in_hand = 0
        self.rest_until = 0.0

    def refusal(self, viewer: str, now: float) -> float | None:
        """Seconds until `viewer` may ask, or None: it may now."""
        if self.in_hand:
            return None if viewer == self.viewer else 1.0
        return self.rest_until - now if now < self.rest_until else None

    def begin(self, viewer: str) -> None:
        self.viewer = viewer
        self.in_hand += 1

    def end(self, started: float, now: float) -> None:
        """A replay begun at `started` is answered (or superseded, or failed): rest as long."""
        self.in_hand -= 1
        if not self.in_hand:
            self.viewer = None
        self.rest_until = max(self.rest_until, now + (now - started))


tokenless = TokenlessBudget()


class PastWorker:
    """The replay worker of one hosted simulation, and the requests it has in hand."""

    def __init__(self, service: SessionService[HostedSimulation], hosted: HostedSimulation) -> None:
        self.service = service
        self.hosted = hosted
        self.proc: asyncio.subprocess.Process | None = None
        self.reader: asyncio.Task[None] | None = None
        self.actions_sent: int | None = None  # live actions the worker has (None: no recording)
        self.next_id = 0
        self.waiting: dict[int, tuple[str, asyncio.Future[Obj]]] = {}  # id -> (viewer, answer)
        # id -> what to do with a progress line of that request, and when the last one came
        self.progress: dict[int, Callable[[Obj], Awaitable[None]]] = {}
        self.heard: dict[int, float] = {}
        self.holds_gate = False  # this worker has requests in hand: it holds one of `_gate`'s slots
        self.ended = "the replay worker stopped"  # how the last worker process ended, in words
        self.lock = asyncio.Lock()
        self.idle: asyncio.TimerHandle | None = None

    async def _start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BASE_DIR), env.get("PYTHONPATH", "")) if p)
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "dashboard.host.replay_worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=str(BASE_DIR),
            env=env,
            limit=MAX_LINE,
        )
        self.actions_sent = None
        self.reader = asyncio.get_running_loop().create_task(self._read(self.proc), name=f"past {self.hosted.id}")

    async def ask(
        self,
        viewer: str,
        target: Obj,
        focus: list[Any],
        owner: list[str] | None = None,
        progress: Callable[[Obj], Awaitable[None]] | None = None,
    ) -> Obj:
        """The worker's answer for `target` (`{"ok": False, "superseded": True}` when a newer
        request of the same viewer took its place), its `text` the state message of that moment
        (the view model rendered, off the event loop); `progress` awaited with each progress
        line of it (`{"events", "time"}`), and once with `{"starting": True}` when the worker
        had to be started first."""
        head = await self._ask(viewer, target, focus, owner, progress)
        if head.get("ok") and "text" in head:
            head["text"] = await asyncio.to_thread(past_view.render, head["text"])
        return head

    async def _ask(
        self,
        viewer: str,
        target: Obj,
        focus: list[Any],
        owner: list[str] | None,
        progress: Callable[[Obj], Awaitable[None]] | None,
    ) -> Obj:
        self._touch()
        if self.proc is None or self.proc.returncode is not None:
            if progress is not None:
                await progress({"starting": True})
            await self._start()
        async with self.lock:
            if not self.holds_gate:
                await _gate.acquire()  # reads.Busy when too many sessions replay at once
                self.holds_gate = True
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        origin = self.service.past(self.hosted.id)  # what the past is rebuilt from, now
        recording = origin.recording()
        request: Obj = {"viewer": viewer, "target": target, "focus": focus, "live": dict(origin.position.to_json())}
        if owner is not None:
            request["owner"] = owner  # the page's focus on one owner (#19 §3): its panels filtered
        if self.actions_sent is None:
            request["recording"] = recording
        else:
            request["actions"] = recording["actions"][self.actions_sent :]
        self.actions_sent = len(recording["actions"])
        self.next_id += 1
        request["id"] = self.next_id
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Obj] = loop.create_future()
        request_id = self.next_id
        self.waiting[request_id] = (viewer, answer)
        started = self.heard[request_id] = loop.time()
        if progress is not None:
            self.progress[request_id] = progress
        proc.stdin.write(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        try:
            await proc.stdin.drain()
            while True:
                # The limits: TIME_LIMIT since the last sign of life, TOTAL_LIMIT in all.
                now = loop.time()
                left = min(self.heard[request_id] + TIME_LIMIT, started + TOTAL_LIMIT) - now
                if left <= 0 and not answer.done():
                    silent = now - self.heard[request_id]
                    await self.stop()  # a replay stuck this long holds the worker: start over next time
                    if silent >= TIME_LIMIT:
                        why = f"the replay made no progress for {TIME_LIMIT:g} s"
                    else:
                        why = f"the replay took longer than {TOTAL_LIMIT:g} s"
                    return {"ok": False, "error": f"{why}: stopped (the next look at the past starts it again)"}
                with contextlib.suppress(TimeoutError):
                    return await asyncio.wait_for(asyncio.shield(answer), max(left, 0.0))
        except (ConnectionError, BrokenPipeError):
            await self.stop()
            return {"ok": False, "error": f"{self.ended}: try again"}
        finally:
            self.waiting.pop(request_id, None)
            self.progress.pop(request_id, None)
            self.heard.pop(request_id, None)
            self._release_if_idle()

    async def configure(self, config: Obj) -> Obj:
        """Set the worker's policy (`keyframes.Broker.configure`: chunk sizes, keyframe spacing,
        progress; tests and the benchmark), starting it if need be; its answer."""
        if self.proc is None or self.proc.returncode is not None:
            await self._start()
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        self.next_id += 1
        request_id = self.next_id
        answer: asyncio.Future[Obj] = asyncio.get_running_loop().create_future()
        self.waiting[request_id] = ("configure", answer)
        try:
            request = {"id": request_id, "viewer": "configure", "configure": config}
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            await proc.stdin.drain()
            return await asyncio.wait_for(answer, TIME_LIMIT)
        finally:
            self.waiting.pop(request_id, None)

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        why = "the replay worker ended"
        try:
            while True:
                line = await proc.stdout.readline()
                if not line:
                    break
                head = json.loads(line)
                if "progress" in head:
                    await self._progressed(head)
                    continue
                if head.get("ok") and "position" in head:
                    head["text"] = (await proc.stdout.readline()).decode().rstrip("\n")
                self._answer(head)
            # The end of its stdout: the worker died (killed, out of memory, a crash) -- say how;
            # unless `stop` ended it (it is no longer this one's worker).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 5.0)
            if proc is self.proc:
                why = _ended(proc.returncode)
                log.warning("replay worker of %s: %s", self.hosted.id, why)
        except (ValueError, asyncio.LimitOverrunError) as exc:
            log.warning("replay worker of %s answered badly: %s", self.hosted.id, exc)
            why = f"the replay worker answered badly ({exc})"
        finally:
            self.ended = why
            for _, future in self.waiting.values():
                if not future.done():
                    future.set_result({"ok": False, "error": f"{why}: try again"})

    async def _progressed(self, head: Obj) -> None:
        """A progress line: the request is alive (its time limit starts again); its viewer hears it."""
        request_id = head.get("id")
        if not isinstance(request_id, int) or request_id not in self.heard:
            return  # answered meanwhile, or superseded
        self.heard[request_id] = asyncio.get_running_loop().time()
        report = self.progress.get(request_id)
        progress = head.get("progress")
        if report is not None and isinstance(progress, dict):
            await report(progress)

    def _answer(self, head: Obj) -> None:
        answered = head.get("id")
        viewer = head.get("viewer")
        for request_id, (who, future) in list(self.waiting.items()):
            if who != viewer or future.done():
                continue
            if request_id == answered:
                future.set_result(head)
            elif isinstance(answered, int) and request_id < answered:
                future.set_result({"ok": False, "superseded": True})

    def _touch(self) -> None:
        if self.idle is not None:
            self.idle.cancel()
        loop = asyncio.get_running_loop()
        self.idle = loop.call_later(IDLE, lambda: loop.create_task(self.stop()))

    def _release_if_idle(self) -> None:
        if self.holds_gate and not self.waiting:
            self.holds_gate = False
            _gate.release()

    async def stop(self) -> None:
        """End the worker (its replayed world goes with it)."""
        proc, self.proc = self.proc, None
        if self.idle is not None:
            self.idle.cancel()
            self.idle = None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5.0)
        if self.reader is not None:
            self.reader.cancel()
            self.reader = None
        for _, future in self.waiting.values():
            if not future.done():
                future.set_result({"ok": False, "error": "the replay worker stopped: try again"})


def _ended(returncode: int | None) -> str:
    """How a worker process ended, in words for the viewer."""
    if returncode is None:
        return "the replay worker closed its output"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = " (out of memory?)" if returncode == -signal.SIGKILL else ""
        return f"the replay worker was killed by {name}{hint}"
    return f"the replay worker exited with status {returncode} (the server's log says why)"


_workers: dict[str, PastWorker] = {}


def live_position(hosted: HostedSimulation) -> Obj:
    return dict(hosted.sim.position().to_json())


def _number(value: Any, field: str) -> float:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise CommandError(f"{field}: must be a number of seconds (got {value[:40]!r})") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CommandError(f"{field}: must be a finite number")
    return float(value)


def _count(value: Any, field: str, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CommandError(f"{field}: must be a whole number")
    if not 0 <= value <= most:
        raise CommandError(f"{field}: must be between 0 and {most}")
    return value


def _time(value: Any, field: str, live: Position) -> float:
    t = _number(value, field)
    if t < 0:
        raise CommandError(f"{field}: must be at least 0")
    if t > live.time:
        raise CommandError(f"{field}: t={t:g} is after the live moment (t={live.time:.3f})")
    return t


def target_of(cmd: Obj, live: Position, kept: Any = None) -> Obj | None:
    """The worker's target for a `past` command, or None for the live moment itself;
    CommandError naming the field when the command is not a moment of this session. A trace
    record (`seq`) without its time `t` takes it from the session's kept records (`kept`: the
    record log, when the session keeps one)."""
    if "at" in cmd:
        t = _time(cmd["at"], "t", live)
        return None if t >= live.time else {"at": t}
    if "seq" in cmd:
        seq = _count(cmd["seq"], "seq", live.seq)
        if cmd.get("t") is None and kept is not None:  # a record of the kept log: its own time
            record = kept.get(seq)
            if record is None:
                raise CommandError(f"seq: no record {seq} is kept: give its time t")
            return {"seq": seq, "time": _time(record["time"], "t", live)}
        return {"seq": seq, "time": _time(cmd.get("t"), "t", live)}
    if "events" in cmd:
        events = _count(cmd["events"], "events", live.events)
        t = _time(cmd.get("t"), "t", live)
        if events == live.events and t == live.time:
            return None
        return {"events": events, "time": t, "exact": bool(cmd.get("exact"))}
    for direction in ("back", "forward"):
        if direction in cmd:
            if cmd[direction] not in STEPS:
                raise CommandError(f"{direction}: must be one of {', '.join(STEPS)}")
            origin = cmd.get("from")
            if origin is None:
                if direction == "forward":
                    raise CommandError("forward: already at the live moment")
                return {direction: cmd[direction], "from": None}
            if not isinstance(origin, dict):
                raise CommandError("from: must be a position {events, seq, t}")
            at = {
                "events": _count(origin.get("events"), "from.events", live.events),
                "seq": _count(origin.get("seq"), "from.seq", live.seq),
                "time": _time(origin.get("t"), "from.t", live),
            }
            return {direction: cmd[direction], "from": at}
    raise CommandError("past: name a moment: at (a time), seq and t (a trace record), events and t, back or forward")


async def handle(service: SessionService[HostedSimulation], hosted: HostedSimulation, message: Obj) -> None:
    """A viewer's `past` command: checked now (an error is the reply), answered by the worker
    later, to that viewer only."""
    layer = get_channel_layer()
    reply_to = message.get("reply_to")
    cmd: Obj = message.get("cmd") or {}
    viewer = str(message.get("viewer") or reply_to)
    origin = service.past(hosted.id)
    live = origin.position

    async def reply(result: Obj) -> None:
        if reply_to:
            await layer.send(reply_to, {"type": "sim.reply", "id": message.get("id"), "op": "past", "result": result})

    try:
        target = target_of(cmd, live, origin.records)
    except CommandError as exc:
        await reply({"ok": False, "error": str(exc)})
        return
    if target is None:
        await reply({"ok": True, "live": True})
        return
    loop = asyncio.get_running_loop()
    budgeted = not message.get("control")
    if budgeted:
        wait = tokenless.refusal(viewer, loop.time())
        if wait is not None:
            error = (
                "busy: viewers without the access token replay the past one at a time and at most half "
                f"the time: try again in {wait:.1f} s, or open the dashboard with its token"
            )
            await reply({"ok": False, "error": error, "busy": max(1, math.ceil(wait))})
            return
        tokenless.begin(viewer)
    started = loop.time()
    focus = [k for k in cmd.get("focus") or [] if isinstance(k, list) and len(k) == 2][:4]
    owner = cmd.get("owner")
    if not (isinstance(owner, list) and len(owner) == 2 and all(isinstance(x, str) for x in owner)):
        owner = None

    async def progress(where: Obj) -> None:
        """How far the replay has come, to the viewer who asked (a page waits on while it moves)."""
        if not reply_to:
            return
        text = json.dumps({"type": "past_progress", "id": message.get("id"), **where}, separators=(",", ":"))
        with contextlib.suppress(ChannelFull):  # one progress line fewer: the next says more
            await layer.send(reply_to, {"type": "sim.past", "text": text})

    async def answer() -> None:
        try:
            worker = _workers.get(hosted.id)
            if worker is None:
                worker = _workers[hosted.id] = PastWorker(service, hosted)
            head = await worker.ask(viewer, target, focus, owner, progress)
        except reads.Busy as exc:
            head = {"ok": False, "error": str(exc), "busy": exc.retry_after}
        finally:
            if budgeted:
                tokenless.end(started, loop.time())
        if hosted.stopped or not reply_to:
            return
        if head.get("superseded"):  # the page drops it: its newer request answers
            await reply({"ok": False, "superseded": True, "error": "superseded by a newer request"})
            return
        if not head.get("ok") or head.get("live"):
            await reply({k: v for k, v in head.items() if k in ("ok", "error", "live", "busy")})
            return
        now = live_position(hosted)
        text = (
            '{"type":"past","id":'
            + json.dumps(message.get("id"))
            + ',"position":'
            + json.dumps(head["position"])
            + ',"live":'
            + json.dumps(now)
            + ',"state":'
            + head["text"]
            + "}"
        )
        await layer.send(reply_to, {"type": "sim.past", "text": text})

    task = loop.create_task(answer(), name=f"past answer {hosted.id}")
    task.add_done_callback(_log_crash)


def _log_crash(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("a past view failed", exc_info=task.exception())


async def close(sim_id: str) -> None:
    """The session stopped: end its worker."""
    worker = _workers.pop(sim_id, None)
    if worker is not None:
        await worker.stop()

"""Keyframes: the replay worker keeps paused forked copies of the past, so a move back replays
from the nearest earlier copy instead of from t=0 (docs/time-travel.md, *Keyframes*).

Guarantees
----------
* The replay worker (`dashboard.host.replay_worker`, a plain process without an event loop, so
  `os.fork()` is safe in it) becomes a *broker*: it reads the host's requests as before, holds
  the recording, and keeps no world itself. Every world lives in a forked child (a *world*):
  one *current* that serves requests and replays forward, and up to `MAX_KEYFRAMES` paused
  *keyframes*. A world only ever moves forward; it is a `Worker` that never rebuilds.
* While the current replays forward it forks a keyframe each time it stands on a multiple of
  `KEYFRAME_EVENTS` kernel events that no keyframe holds yet (event counts, not virtual time:
  the cost of replaying from a keyframe is proportional to the events between it and the
  target, whatever the clock does; a quiet minute costs nothing, a busy second a lot). A world
  the broker leaves for an earlier one becomes a keyframe too (it costs nothing more).
* A target behind the current (an earlier time, event count or trace record: `Behind`) is served
  by a new current forked from the latest keyframe at or before it (or, when none is, from the
  broker: a fresh replay from t=0); it replays forward only the difference, so the world it
  reaches is the world a replay from t=0 reaches, byte for byte (a fork copies the keyframe's
  memory exactly, and the replay is deterministic). Steps back land exactly where they did.
* Bounded: at most `MAX_KEYFRAMES` keyframes, and their private memory (copy-on-write pages
  no other process shares, read from /proc) at most `KEYFRAME_MEMORY` bytes. Over either, the
  broker evicts by *thinning*: the keyframe whose neighbours are closest together goes (its
  removal leaves the smallest gap between two keyframes), never the furthest one nor the one
  used last; ties go to the least recently used. Coverage stays even as the history grows.
* Every world holds one socket to the broker and exits when it closes: when the worker ends
  (the session stopped, idle, killed with -9), so do its keyframes. The broker ignores SIGCHLD
  (no zombies) and never signals a pid (a pid may be reused).
* Ahead of the viewer, between requests: once no request came for `SWEEP_AFTER` seconds after
  an answer, while the keyframes stop short of the live moment, a *sweeper* (a copy of the
  current, so the current stays where the viewer is) replays on towards the live moment and
  leaves keyframes on the way, in chunks of `SWEEP_CHUNK_EVENTS`; it is stopped before the
  broker serves the next request (so it never competes with one) and goes on when the worker is
  idle again. Done, it is a keyframe at the live moment. So a later jump beyond the moments
  viewed so far is served from a keyframe too.
* Without `os.fork` (or with `CTRLSCOPE_KEYFRAMES=0`, or when a fork fails) the worker keeps its
  world in its own process and replays from t=0 for every move back (`Worker`, as before).

Protocol between the broker and a world: JSON lines on a Unix socket (an optional second line
of text: the rendered state). A new world connects to the broker's listener and says
`{"hello": "current"|"keyframe"|"sweeper", "here": position, "actions": n}`. To a world: `{"op": "go",
"id", …a worker request…, "have": [keyframe event counts]}` (answered with the worker's answer
or `{"behind": bounds, "target"}` or `{"superseded": true}`, each with `here`), `{"op": "stop",
"id"}` (the request `id` is superseded: stop between chunks) and `{"op": "fork", "actions"[, "role"]}`
(to a keyframe: fork a new current; to the current, role "sweeper": fork the sweeper). A `go` with
`"sweep": true` is answered without the rendered state.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import secrets
import select
import socket
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

from dashboard.host.replay_worker import Behind, Requests, Superseded, Worker

Obj = dict[str, Any]

KEYFRAME_EVENTS = 2_000  # kernel events between two keyframes (~0.1 s of replay: see docs)
KEYFRAME_NEAR = 200  # a replay to an event count leaves a keyframe this many events before it
MAX_KEYFRAMES = 32  # keyframes kept at once
KEYFRAME_MEMORY = 512 << 20  # bytes of private memory all keyframes may hold together
SWEEP_AFTER = 0.25  # seconds without a request before the sweeper starts or goes on
SWEEP_CHUNK_EVENTS = 250  # the sweeper looks for a stop this often (~10 ms of replay)
MEASURE_PER_ROUND = 2  # keyframes whose memory is read again after an answer (the stalest)
HELLO_TIMEOUT = 10.0  # seconds a new world has to connect
MAX_ROUNDS = 4  # worlds one request may go through (a step back: at most two)


def available() -> bool:
    """True when keyframes can be used here (a fork, and not switched off)."""
    return hasattr(os, "fork") and hasattr(socket, "AF_UNIX") and os.environ.get("CTRLSCOPE_KEYFRAMES", "1") != "0"


class Conn:
    """JSON lines over a stream socket, with an optional line of text after a header."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, head: Obj, text: str | None = None) -> None:
        if text is not None:
            head = {**head, "has_text": True}
        data = json.dumps(head, separators=(",", ":"), allow_nan=False, default=str).encode() + b"\n"
        if text is not None:
            data += text.encode() + b"\n"
        self.sock.sendall(data)

    def pending(self) -> bool:
        """A whole line, or bytes (maybe the end of the stream), are there to read."""
        return b"\n" in self.buffer or bool(select.select([self.sock], [], [], 0)[0])

    def _line(self) -> bytes:
        start = 0
        while (end := self.buffer.find(b"\n", start)) < 0:
            start = len(self.buffer)
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionError:
                chunk = b""
            if not chunk:
                raise EOFError("the other side closed the socket")
            self.buffer += chunk
        line, self.buffer = self.buffer[:end], self.buffer[end + 1 :]
        return line

    def recv(self) -> Obj:
        head: Obj = json.loads(self._line())
        if head.pop("has_text", False):
            head["text"] = self._line().decode()
        return head

    def close(self) -> None:
        """This process's end only: a fork's copy in another process stays open."""
        self.sock.close()


def memory(pid: int) -> Obj | None:
    """`{"pss", "uss"}` bytes of a process (Linux /proc), or None when it cannot be read: PSS
    shares each page among the processes that map it; USS is what ending it would free."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    fields: dict[str, int] = {}
    for line in text.splitlines()[1:]:
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[name] = int(parts[0]) * 1024
    return {"pss": fields.get("Pss", 0), "uss": fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)}


# -- a world: a process holding one replayed past ------------------------------------------------


class _Inbox:
    """What a world's `Worker` asks between chunks: has the broker superseded the request?"""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.request_id: Any = None
        self.stopped = False

    def newer(self, viewer: str) -> bool:
        while not self.stopped and self.conn.pending():
            message = self.conn.recv()  # EOFError: the broker is gone, and the world with it
            if message.get("op") == "stop" and message.get("id") == self.request_id:
                self.stopped = True
        return self.stopped


class _World:
    """The serving loop of a world process (never returns: the process ends with its socket)."""

    def __init__(self, worker: Worker, address: str) -> None:
        self.worker = worker
        self.address = address
        self.conn: Conn | None = None
        self.have: set[int] = set()
        self.chunk = worker.chunk_events
        worker.on_keyframe = self.keyframe

    def connect(self, role: str) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.address)
        self.conn = Conn(sock)
        self.worker.requests = _Inbox(self.conn)
        self.conn.send({"hello": role, "pid": os.getpid(), "here": self.here(), "actions": self.actions()})

    def here(self) -> Obj | None:
        replay = self.worker.replay
        if replay is None:
            return None
        return {**replay.position().to_json(), "moved": self.worker.moved}

    def actions(self) -> int:
        recording = self.worker.recording
        return len(recording["actions"]) if recording is not None else 0

    def serve(self) -> NoReturn:
        try:
            conn = self.conn
            assert conn is not None
            while True:
                message = conn.recv()
                op = message.get("op")
                if op == "go":
                    self.go(conn, message)
                elif op == "fork":
                    self.extend(message.get("actions") or [])
                    self.fork("sweeper" if message.get("role") == "sweeper" else "current")
        except EOFError:
            pass
        except BaseException:  # a bug: the broker sees the socket close and drops this world
            traceback.print_exc()
        finally:
            os._exit(0)

    def extend(self, actions: list[Obj]) -> None:
        worker = self.worker
        if actions and worker.recording is not None:
            worker.recording["actions"].extend(actions)
            if worker.replay is not None:
                worker.replay.extend(actions)

    def go(self, conn: Conn, message: Obj) -> None:
        inbox = self.worker.requests
        assert isinstance(inbox, _Inbox)
        inbox.request_id, inbox.stopped = message.get("id"), False
        self.have = {int(e) for e in message.get("have") or ()}
        # A sweeper looks for a stop every SWEEP_CHUNK_EVENTS (~10 ms); a request, as configured.
        self.worker.chunk_events = SWEEP_CHUNK_EVENTS if message.get("sweep") else self.chunk
        answer: Obj
        try:
            answer = self.worker.handle(message)
        except Behind as behind:
            answer = {"behind": behind.bounds, "target": behind.target}
        except Superseded:
            answer = {"superseded": True}
        text = answer.pop("text", None)
        answer["here"] = self.here()
        conn.send(answer, text)

    def keyframe(self) -> None:
        """At a multiple of `KEYFRAME_EVENTS`, or `KEYFRAME_NEAR` events before the event count a
        request goes to (the worker's hook): leave a paused copy here."""
        worker = self.worker
        replay = worker.replay
        if replay is None:
            return
        events = replay.sim.kernel.events
        if events in self.have:
            return
        every, near = worker.keyframe_every or 0, worker.keyframe_near or 0
        if every and events % every and any(events - near <= held <= events for held in self.have):
            return  # a keyframe close enough before it is held already
        self.have.add(events)
        # Everything alive now is the keyframe's too: frozen, this process's collections never
        # traverse it, so they do not copy the pages the keyframe shares (controlplane.gcpolicy).
        gc.freeze()
        self.fork("keyframe")

    def fork(self, role: str) -> None:
        """A copy of this world as a new process that connects to the broker as `role`; this
        process goes on as it was. A failed fork only costs the copy (the broker copes)."""
        try:
            pid = os.fork()
        except OSError:
            return
        if pid != 0:
            return
        try:
            if self.conn is not None:
                self.conn.close()
            self.connect(role)
            self.serve()
        except BaseException:
            traceback.print_exc()
        os._exit(1)


# -- the broker: the worker process itself ---------------------------------------------------------


def _bounds(target: Obj) -> Obj | None:
    """What a world must not be past to serve `target` (as `Worker.go` asks `Worker._ready`);
    None for a step, which the world itself resolves."""
    if "at" in target:
        return {"events": None, "time": target["at"], "seq": None}
    if "seq" in target:
        return {"events": None, "time": target["time"], "seq": target["seq"]}
    if "events" in target:
        return {"events": target["events"], "time": target["time"] if target.get("exact") else None, "seq": None}
    return None


class _Held:
    """The broker's view of one world process."""

    def __init__(self, conn: Conn, hello: Obj) -> None:
        self.conn = conn
        self.pid = int(hello["pid"])
        self.here: Obj | None = hello.get("here")
        self.actions = int(hello.get("actions") or 0)
        self.role = str(hello.get("hello"))
        self.used = 0  # the broker's tick when it last served from this world
        # Its private memory (bytes) as last read from /proc, and when (the broker's count of
        # reads): a read costs ~3 ms a process, so the broker reads a few per round (`_memory`).
        self.uss: int | None = None
        self.measured = 0

    @property
    def events(self) -> int:
        return int(self.here["events"]) if self.here else 0


class Broker:
    """The replay worker with keyframes: the same requests and answers as `Worker.handle`."""

    def __init__(self, requests: Requests) -> None:
        self.requests = requests
        self.recording: Obj | None = None
        self.current: _Held | None = None
        self.keyframes: list[_Held] = []  # sorted by position
        self.tick = 0
        self.every = KEYFRAME_EVENTS
        self.near = KEYFRAME_NEAR
        self.max_keyframes = MAX_KEYFRAMES
        self.max_memory = KEYFRAME_MEMORY
        self.chunk_events: int | None = None  # the worlds' chunk size (None: the worker's default)
        self.viewer = ""
        self.evicted = 0
        self.reads = 0  # memory reads of /proc made so far
        self.measure_seconds = 0.0  # time they took (the benchmark reports it)
        self.forks_from_zero = 0
        self.forks_from_keyframe = 0
        if sys.platform.startswith("linux"):
            self.address = f"\0ctrlscope-replay-{os.getpid()}-{secrets.token_hex(8)}"
            self._dir: str | None = None
        else:
            self._dir = tempfile.mkdtemp(prefix="ctrlscope-kf-")
            self.address = os.path.join(self._dir, "s")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.address)
        self.listener.listen(64)
        self.fallback: Worker | None = None  # replaying in this process: a fork failed
        # The sweeper (see the module's guarantees): its world, the id of its `go` in flight (None:
        # paused), the live position of the last request (where sweeps go), sweeps started.
        self.sweeper: _Held | None = None
        self.sweep_id: str | None = None
        self.live: Obj | None = None
        self.sweeps = 0
        self.sweep_on = True

    # -- worlds ------------------------------------------------------------------------------------
    def _worlds(self) -> list[_Held]:
        others = [w for w in (self.current, self.sweeper) if w is not None]
        return self.keyframes + others

    def _drop(self, world: _Held) -> None:
        world.conn.close()  # the world sees the end of its socket and exits
        if world is self.sweeper:
            self.sweeper, self.sweep_id = None, None
        if world is self.current:
            self.current = None
        elif world in self.keyframes:
            self.keyframes.remove(world)

    def close(self) -> None:
        for world in self._worlds():
            self._drop(world)
        self.listener.close()
        if self._dir is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.address)
                os.rmdir(self._dir)

    def _accept(self) -> _Held:
        sock, _ = self.listener.accept()
        sock.settimeout(HELLO_TIMEOUT)
        conn = Conn(sock)
        hello = conn.recv()
        sock.settimeout(None)
        world = _Held(conn, hello)
        if hello.get("hello") == "keyframe":
            self._add_keyframe(world, measure=False)  # memory: between requests (`housekeep`)
        return world

    def _await_current(self, role: str = "current") -> _Held:
        """The next world to say hello as `role` (keyframes may connect meanwhile; a world of
        another role, late from a fork given up on, is dropped)."""
        while True:
            ready, _, _ = select.select([self.listener], [], [], HELLO_TIMEOUT)
            if not ready:
                raise OSError("a new replay process did not connect")
            world = self._accept()
            if world.role == role:
                return world
            if world not in self.keyframes:
                self._drop(world)

    def _from_zero(self) -> _Held:
        """A new world forked from this process: a fresh replay of the recording."""
        assert self.recording is not None
        pid = os.fork()  # OSError: the caller falls back to replaying in this process
        if pid == 0:
            try:
                for world in self._worlds():
                    world.conn.close()
                self.listener.close()
                devnull = os.open(os.devnull, os.O_RDWR)
                os.dup2(devnull, 0)  # stdin and stdout are the host's pipes: the broker's only
                os.dup2(devnull, 1)
                world_ = _World(self._worker(), self.address)
                world_.worker.recording = self.recording
                world_.connect("current")
                world_.serve()
            except BaseException:
                traceback.print_exc()
            os._exit(1)
        self.forks_from_zero += 1
        return self._await_current()

    def _worker(self) -> Worker:
        worker = Worker(self.requests)
        worker.rebuilds = False
        worker.keyframe_every = self.every
        worker.keyframe_near = self.near
        if self.chunk_events is not None:
            worker.chunk_events = self.chunk_events
        return worker

    def _from_keyframe(self, keyframe: _Held) -> _Held:
        assert self.recording is not None
        actions = self.recording["actions"]
        keyframe.conn.send({"op": "fork", "actions": actions[keyframe.actions :]})
        keyframe.actions = len(actions)
        self.forks_from_keyframe += 1
        world = self._await_current()
        world.actions = len(actions)
        return world

    def _add_keyframe(self, world: _Held, *, measure: bool = True) -> None:
        if world.here is None:
            self._drop(world)
            return
        self.keyframes.append(world)
        self.keyframes.sort(key=lambda w: (w.events, w.here["time"] if w.here else 0.0))
        self._evict(measure=measure)

    def _evict(self, *, measure: bool = True) -> None:
        """Thin to `max_keyframes`, and (`measure`) to `max_memory`."""
        over = len(self.keyframes) - self.max_keyframes
        total = self._memory() if measure else 0
        while over > 0 or (measure and len(self.keyframes) > 1 and total > self.max_memory):
            victim = self._victim()
            total -= victim.uss or 0
            self._drop(victim)
            self.evicted += 1
            over -= 1

    def _memory(self, refresh: int = MEASURE_PER_ROUND) -> int:
        """The keyframes' private memory together: each new keyframe read from /proc, and the
        `refresh` read longest ago read again (a keyframe's share grows as later worlds write
        to the pages it shared with them); the others as last read. Reading every keyframe
        after every answer cost ~3 ms each, ~80 ms for 27 at 1,000 pods, which the next
        request waited for."""
        stale = sorted((w for w in self.keyframes if w.uss is not None), key=lambda w: w.measured)[:refresh]
        for world in [w for w in self.keyframes if w.uss is None] + stale:
            started = time.perf_counter()
            used = memory(world.pid)
            self.measure_seconds += time.perf_counter() - started
            self.reads += 1
            world.uss, world.measured = (used["uss"] if used else 0), self.reads
        return sum(w.uss or 0 for w in self.keyframes)

    def _victim(self) -> _Held:
        """Thinning: the keyframe whose removal leaves the smallest gap (never the furthest, nor
        the one used last; ties: the least recently used)."""
        kfs = self.keyframes
        last_used = max(kfs, key=lambda w: w.used)
        best: tuple[int, int, int] | None = None
        victim = kfs[0]
        for i, world in enumerate(kfs[:-1]):
            if world is last_used and world.used > 0:
                continue
            gap = kfs[i + 1].events - (kfs[i - 1].events if i > 0 else 0)
            score = (gap, world.used, i)
            if best is None or score < best:
                best, victim = score, world
        return victim

    def _pick(self, bounds: Obj) -> _Held | None:
        """The latest keyframe at or before `bounds` (as `Worker._ready` judges it)."""
        from controlplane.simulation import vtime

        events, time, seq = bounds.get("events"), bounds.get("time"), bounds.get("seq")
        for world in reversed(self.keyframes):
            here = world.here
            if here is None:
                continue
            if events is not None and int(here["events"]) > int(events):
                continue
            if events is not None and int(here["events"]) == int(events) and time is None and here.get("moved"):
                continue  # its clock went on past event `events`: not the moment right after it
            if time is not None and float(here["time"]) > vtime(float(time)):
                continue
            if seq is not None and int(here["seq"]) >= int(seq):
                continue
            return world
        return None

    # -- one request ---------------------------------------------------------------------------------
    def handle(self, request: Obj) -> Obj:
        self.viewer = str(request.get("viewer"))
        self._pause_sweep()  # a request never competes with the sweeper
        if isinstance(request.get("live"), dict):
            self.live = request["live"]
        if request.get("stats"):
            return self.stats()
        if "configure" in request:
            return self.configure(request["configure"])
        if "recording" in request:
            for world in self._worlds():
                self._drop(world)
            self.recording = request["recording"]
        elif self.recording is not None and request.get("actions"):
            self.recording["actions"].extend(request["actions"])
        if self.recording is None:
            return {"ok": False, "error": "the worker has no recording yet"}
        if self.fallback is not None:
            return self.fallback.handle({k: v for k, v in request.items() if k not in ("recording", "actions")})
        try:
            return self._serve(request)
        except OSError as exc:
            # No fork (out of memory, out of processes): replay from t=0 in this process.
            print(f"keyframes off: {exc}", file=sys.stderr)
            for world in self._worlds():
                self._drop(world)
            self.fallback = Worker(self.requests)
            self.fallback.recording = self.recording
            return self.fallback.handle({k: v for k, v in request.items() if k not in ("recording", "actions")})

    def _serve(self, request: Obj) -> Obj:
        message = {k: v for k, v in request.items() if k not in ("recording", "actions")}
        message["op"] = "go"
        bounds = _bounds(message["target"])
        if bounds is not None:
            # A keyframe later than the current (and not past the target) is the shorter way.
            keyframe = self._pick(bounds)
            current = self.current
            if keyframe is not None and (current is None or keyframe.events > current.events):
                if current is not None:
                    self.current = None
                    self._add_keyframe(current, measure=False)
                self._use(keyframe)
        for _ in range(MAX_ROUNDS):
            world = self.current
            if world is None:
                world = self.current = self._from_zero()
            answer = self._go(world, message)
            if "behind" not in answer:
                return answer
            # The target is behind this world: keep it (a keyframe now) and serve from an earlier one.
            self.current = None
            self._add_keyframe(world, measure=False)  # memory: after the answer (`housekeep`)
            message["target"] = answer["target"]
            keyframe = self._pick(answer["behind"])
            if keyframe is not None:
                self._use(keyframe)
        return {"ok": False, "error": "replay failed: no world could reach that moment"}

    def _use(self, keyframe: _Held) -> None:
        """A new current, forked from `keyframe`."""
        self.tick += 1
        keyframe.used = self.tick
        self.current = self._from_keyframe(keyframe)

    def _go(self, world: _Held, message: Obj) -> Obj:
        assert self.recording is not None
        actions = self.recording["actions"]
        message = {**message, "actions": actions[world.actions :], "have": [k.events for k in self.keyframes]}
        world.actions = len(actions)
        world.conn.send(message)
        stop_sent = False
        while True:
            watch: list[Any] = [world.conn, self.listener]
            if not self.requests.closed:
                watch.append(self.requests.fd)
            if not world.conn.pending():
                ready, _, _ = select.select(watch, [], [])
            else:
                ready = [world.conn]
            if self.listener in ready:
                self._accept()
            if self.requests.fd in ready:
                self.requests.poll(0)
                if not stop_sent and self.viewer in self.requests.waiting:
                    world.conn.send({"op": "stop", "id": message.get("id")})
                    stop_sent = True
            if world.conn in ready:
                try:
                    answer = world.conn.recv()
                except (EOFError, OSError, ValueError):
                    self._drop(world)
                    return {"ok": False, "error": "replay failed: the replay process ended"}
                world.here = answer.pop("here", None) or world.here
                if answer.get("superseded"):
                    raise Superseded
                return answer

    def housekeep(self) -> None:
        """Between requests: take in the keyframes that connected late, hold them to `max_memory`."""
        self._accept_pending()
        self._evict()

    def idle(self) -> None:
        """No request came for `SWEEP_AFTER` seconds: sweep on towards the live moment (a viewer
        scrubbing sends one every 100 ms, so a sweep never slows a scrub down)."""
        with contextlib.suppress(OSError):  # no fork: no sweep (the requests are served as before)
            self._sweep()

    # -- the sweeper -------------------------------------------------------------------------------
    def _sweep(self) -> None:
        """Start (or go on with) the sweep to the live moment, while the keyframes stop short of it
        by more than `every` events. Never waits for it."""
        live, current = self.live, self.current
        if not self.sweep_on or live is None or self.recording is None or self.sweep_id is not None:
            return
        target = int(live["events"])
        ahead = max([k.events for k in self.keyframes] + [0])
        sweeper = self.sweeper
        if sweeper is None:
            if current is None or target - max(ahead, current.events) <= self.every:
                return
            actions = self.recording["actions"]
            current.conn.send({"op": "fork", "role": "sweeper", "actions": actions[current.actions :]})
            current.actions = len(actions)
            sweeper = self.sweeper = self._await_current("sweeper")
        elif target - max(ahead, sweeper.events) <= self.every:
            return
        self.sweeps += 1
        self.sweep_id = f"sweep-{self.sweeps}"
        actions = self.recording["actions"]
        sweeper.conn.send(
            {
                "op": "go",
                "id": self.sweep_id,
                "viewer": "sweep",
                "sweep": True,
                "target": {"events": target, "time": float(live["time"])},
                "live": live,
                "focus": [],
                "actions": actions[sweeper.actions :],
                "have": [k.events for k in self.keyframes],
            }
        )
        sweeper.actions = len(actions)

    def _pause_sweep(self) -> None:
        """Stop the sweeper between two chunks and wait for it (keyframes it left are taken in);
        at the live moment it has done its work: it is a keyframe now."""
        sweeper, sweep_id = self.sweeper, self.sweep_id
        if sweeper is None or sweep_id is None:
            return
        sweeper.conn.send({"op": "stop", "id": sweep_id})
        while True:
            ready, _, _ = select.select([sweeper.conn, self.listener], [], [], HELLO_TIMEOUT)
            if not ready:
                self._drop(sweeper)  # stuck: it goes; nothing depends on it
                return
            if self.listener in ready:
                self._accept()
            if sweeper.conn in ready:
                try:
                    answer = sweeper.conn.recv()
                except (EOFError, OSError, ValueError):
                    self._drop(sweeper)
                    return
                break
        self.sweep_id = None
        sweeper.here = answer.pop("here", None) or sweeper.here
        if not answer.get("superseded"):  # it reached the live moment it was sent to (or failed)
            self.sweeper = None
            if answer.get("ok"):
                self._add_keyframe(sweeper, measure=False)
            else:
                self._drop(sweeper)

    def _accept_pending(self) -> None:
        while select.select([self.listener], [], [], 0)[0]:
            self._accept()

    def configure(self, config: Obj) -> Obj:
        """Change the policy (tests and the benchmark): `every`, `max_keyframes`, `max_memory`,
        `chunk_events`, each a whole number >= 1, and `sweep` (true/false: sweep ahead between
        requests); the keyframes held are kept (and thinned)."""
        if "sweep" in config:
            if not isinstance(config["sweep"], bool):
                return {"ok": False, "error": "configure.sweep: must be true or false"}
            self.sweep_on = config["sweep"]
        for field in ("every", "near", "max_keyframes", "max_memory", "chunk_events"):
            if field in config:
                value = config[field]
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    return {"ok": False, "error": f"configure.{field}: must be a whole number >= 1"}
                setattr(self, field, value)
        if "every" in config or "near" in config or "chunk_events" in config:
            self.drop_world()  # worlds keep the policy they were forked with
        self._evict()
        return {"ok": True}

    def drop_world(self) -> None:
        """Forget every world (the next request replays from the start)."""
        for world in self._worlds():
            self._drop(world)

    def stats(self) -> Obj:
        """The keyframes held (for tests and the benchmark): position, pid and memory of each."""
        self.housekeep()
        worlds = []
        for world in self.keyframes:
            worlds.append({"here": world.here, "pid": world.pid, "memory": memory(world.pid)})
        now = self.current
        return {
            "ok": True,
            "keyframes": worlds,
            "current": None if now is None else {"here": now.here, "pid": now.pid, "memory": memory(now.pid)},
            "broker": {"pid": os.getpid(), "memory": memory(os.getpid())},
            "evicted": self.evicted,
            "sweeps": self.sweeps,
            "sweeper": None if self.sweeper is None else {"here": self.sweeper.here, "pid": self.sweeper.pid},
            "memory_reads": self.reads,
            "memory_read_seconds": round(self.measure_seconds, 4),
            "forks_from_zero": self.forks_from_zero,
            "forks_from_keyframe": self.forks_from_keyframe,
        }

"""Keyframes: the replay worker keeps snapshots of the past, so a move back replays from the
nearest earlier snapshot instead of from t=0 (docs/time-travel.md, *Keyframes*).

Guarantees
----------
* The replay worker (`python -m dashboard.host.replay_worker`, a plain process without an event
  loop, so `os.fork()` is safe in it) becomes a *broker*: it reads the host's requests as before, holds
  the recording and the keyframes, and keeps no world itself. Every world lives in a forked
  child: one *current* that serves requests and replays forward, at times a *sweeper*, and the
  *nearby* keyframe (below). A world only ever moves forward; it is a `Worker`
  (`controlplane.session.timetravel.worker`) that never rebuilds.
* A keyframe is a *snapshot* (`controlplane.session.timetravel.snapshot`: the world pickled and compressed, ~1 MB at
  1,000 pods), held by the broker as bytes. A world can be snapshotted only at a quiescent
  moment (every task of the simulation parked: nothing half-done in flight). Each time a
  forward replay stands on a multiple of `KEYFRAME_EVENTS` kernel events with no keyframe held
  in the `KEYFRAME_EVENTS` after it, it *seeks*: it replays on event by event to the first
  quiescent moment, and there forks a child that snapshots the world (on the other core, while
  the world goes on), sends it to the broker and exits. Event counts, not virtual time: the cost
  of replaying from a keyframe is proportional to the events between it and the target. A
  stretch with no quiescent moment (a burst of work) has no keyframe: a move back into it
  replays from the last one before it.
* A target behind the current (an earlier time, event count or trace record: `Behind`) is served
  by a new current: the broker forks itself and the child loads the latest keyframe at or
  before the target (or, when none is, replays from t=0) and replays forward only the
  difference. A snapshot runs on exactly as the world it was taken of, so the world reached is
  the world a replay from t=0 reaches, byte for byte. Steps back land exactly where they did.
  The world left behind ends.
* The *nearby* keyframe: a snapshot's load costs ~0.1 s at 1,000 pods, and steps back come in
  runs, so one paused fork of a world is kept near the viewer (a fork needs no quiescent
  moment): `KEYFRAME_NEAR` events before the event count a request goes to, or for a time
  (whose event count is known only once reached) every `KEYFRAME_NEAR` events from a little
  before it, the broker keeping the last one strictly before where the answer landed. A move to
  a position at or after it forks it. It is dropped when a world from elsewhere replaces the
  current: it shares its pages only with the worlds forked from the same process, and with none
  left it would come to own a whole world.
* Bounded: at most `MAX_KEYFRAMES` snapshots; the snapshots' bytes and the nearby keyframe's
  private memory (read from /proc after each answer) together at most `KEYFRAME_SHARE` of the
  resident memory of the largest world seen (the size of the simulation, read from /proc when a
  world connects) and never more than `KEYFRAME_MEMORY` bytes. The nearby keyframe goes when it
  holds more than half of that; over either bound, the broker evicts snapshots by *thinning*:
  the one whose neighbours are closest together goes (its removal leaves the smallest gap between
  two keyframes), never the furthest one nor the one used last; ties go to the least recently
  used. Coverage stays even as the history grows.
* Every world holds one socket to the broker and exits when it closes: when the worker ends
  (the session stopped, idle, killed with -9), so do its worlds. The broker ignores SIGCHLD
  (no zombies) and never signals a pid (a pid may be reused).
* Ahead of the viewer, between requests: once no request came for `SWEEP_AFTER` seconds after
  an answer, while the keyframes stop short of the live moment, a *sweeper* (a copy of the
  current, so the current stays where the viewer is) replays on towards the live moment and
  leaves keyframes on the way, in chunks of `SWEEP_CHUNK_EVENTS`; it is stopped before the
  broker serves the next request (so it never competes with one) and goes on when the worker is
  idle again. At the live moment it ends, and no other starts before the live moment moves on.
  So a later jump beyond the moments viewed so far is served from a keyframe too.
* Without `os.fork` (or with `CTRLSCOPE_KEYFRAMES=0`, or when a fork fails) the worker keeps its
  world in its own process and replays from t=0 for every move back (`Worker`, as before).

Protocol between the broker and a world: JSON lines on a Unix socket (an optional second line
of text: the view model of the moment; or `size` raw bytes after the line: a snapshot). A new world
connects to the broker's listener and says `{"hello": "current"|"sweeper"|"keyframe", "here":
position, "actions": n}` ("keyframe": a nearby keyframe); a snapshot comes on a connection of
its own: `{"hello": "snapshot", "here", "actions", "size"}` and its bytes. To a world: `{"op":
"go", "id", …a worker request…, "have": [keyframe event counts]}` (answered with the worker's
answer or `{"behind": bounds, "target"}` or `{"superseded": true}`, each with `here`), `{"op":
"stop", "id"}` (the request `id` is superseded: stop between chunks; while a `go` replays, the
world sends `{"progress": {"events", "time"}}` lines before its answer, which the broker passes on
to the host) and `{"op": "fork",
"actions"[, "role": "sweeper"]}` (to the nearby keyframe: fork a new current; to the current,
role "sweeper": fork the sweeper). A `go` with `"sweep": true` is answered without the view
model. Nothing here reads the wall clock: the worlds' progress lines go by the view's clock
(`worker.PastView`), and the sweeper's pause is the process entry's (`serve`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import socket
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from controlplane.kernel import vtime
from controlplane.session.timetravel.snapshot import dumps, loads
from controlplane.session.timetravel.worker import (
    PROGRESS_EVERY,
    Behind,
    PastView,
    Requests,
    Superseded,
    Worker,
    progress_line,
)

Obj = dict[str, Any]

KEYFRAME_EVENTS = 2_000  # kernel events between two keyframes (~0.15 s of replay at 1,000 pods)
KEYFRAME_NEAR = 200  # a replay to an event count leaves a keyframe this many events before it
MAX_KEYFRAMES = 32  # keyframes kept at once
KEYFRAME_SHARE = 0.28  # of the largest world's resident memory, all keyframes together
KEYFRAME_MEMORY = 512 << 20  # bytes all keyframes may hold together, whatever the share
SWEEP_AFTER = 0.25  # seconds without a request before the sweeper starts or goes on
SWEEP_CHUNK_EVENTS = 250  # the sweeper looks for a stop this often (~10 ms of replay)
HELLO_TIMEOUT = 10.0  # seconds a new world has to connect
MAX_ROUNDS = 4  # worlds one request may go through (a step back: at most two)
MAX_SNAPSHOT = 1 << 30  # bytes: a larger announced snapshot is a broken world's, dropped
# What a world's child meets connecting to a broker that has ended (its listener closed with it:
# the session stopped, the host killed a replay that made no progress): it exits, quietly.
BROKER_GONE = (ConnectionRefusedError, FileNotFoundError, BrokenPipeError, ConnectionResetError)


def available() -> bool:
    """True when keyframes can be used here (a fork, and not switched off)."""
    return hasattr(os, "fork") and hasattr(socket, "AF_UNIX") and os.environ.get("CTRLSCOPE_KEYFRAMES", "1") != "0"


class Conn:
    """JSON lines over a stream socket, with an optional line of text or raw bytes after a header."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, head: Obj, text: str | None = None, data: bytes | None = None) -> None:
        if text is not None:
            head = {**head, "has_text": True}
        if data is not None:
            head = {**head, "size": len(data)}
        out = json.dumps(head, separators=(",", ":"), allow_nan=False, default=str).encode() + b"\n"
        if text is not None:
            out += text.encode() + b"\n"
        self.sock.sendall(out)
        if data is not None:
            self.sock.sendall(data)

    def pending(self) -> bool:
        """A whole line, or bytes (maybe the end of the stream), are there to read."""
        return b"\n" in self.buffer or bool(select.select([self.sock], [], [], 0)[0])

    def _more(self) -> None:
        try:
            chunk = self.sock.recv(1 << 20)
        except ConnectionError:
            chunk = b""
        if not chunk:
            raise EOFError("the other side closed the socket")
        self.buffer += chunk

    def _line(self) -> bytes:
        start = 0
        while (end := self.buffer.find(b"\n", start)) < 0:
            start = len(self.buffer)
            self._more()
        line, self.buffer = self.buffer[:end], self.buffer[end + 1 :]
        return line

    def _bytes(self, size: int) -> bytes:
        parts, have = [self.buffer], len(self.buffer)
        self.buffer = b""
        while have < size:
            self._more()
            parts.append(self.buffer)
            have += len(self.buffer)
            self.buffer = b""
        data = b"".join(parts)
        data, self.buffer = data[:size], data[size:]
        return data

    def recv(self) -> Obj:
        head: Obj = json.loads(self._line())
        if head.pop("has_text", False):
            head["text"] = self._line().decode()
        size = head.get("size")
        if size is not None:
            if not isinstance(size, int) or not 0 <= size <= MAX_SNAPSHOT:
                raise ValueError(f"size: {size!r} is not a snapshot's")
            head["data"] = self._bytes(size)
        return head

    def close(self) -> None:
        """This process's end only: a fork's copy in another process stays open."""
        self.sock.close()


def memory(pid: int) -> Obj | None:
    """`{"rss", "pss", "uss"}` bytes of a process (Linux /proc), or None when it cannot be read:
    RSS counts every page it maps, PSS shares each page among the processes that map it, USS is
    what ending it would free."""
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
    return {
        "rss": fields.get("Rss", 0),
        "pss": fields.get("Pss", 0),
        "uss": fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0),
    }


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


def _world_state(worker: Worker) -> Obj:
    """What a snapshot of a world holds: the replay, its hosted view, the index of sync records."""
    return {"replay": worker.replay, "hosted": worker.hosted, "marks": worker.marks, "furthest": worker.furthest}


class _World:
    """The serving loop of a world process (never returns: the process ends with its socket)."""

    def __init__(self, worker: Worker, address: str) -> None:
        self.worker = worker
        self.address = address
        self.conn: Conn | None = None
        self.have: set[int] = set()
        self.chunk = worker.chunk_events
        self.sent: set[int] = set()  # event counts of the snapshots this world sent
        self.child: int | None = None  # the pid of the snapshot being taken (one at a time)
        self.due = False  # a snapshot is wanted once the child at work is done
        self.sweeping = False  # serving a sweep: no nearby keyframe (it is the viewer's)
        worker.on_keyframe = self.keyframe
        worker.on_quiet = self.snapshot
        worker.on_progress = self.progress

    def connect(self, role: str) -> None:
        self.conn = self._hello(role)
        self.worker.requests = _Inbox(self.conn)

    def _hello(self, role: str, data: bytes | None = None) -> Conn:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.address)
        conn = Conn(sock)
        conn.send({"hello": role, "pid": os.getpid(), "here": self.here(), "actions": self.actions()}, data=data)
        return conn

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
        except (EOFError, BrokenPipeError, ConnectionResetError):
            pass  # the broker closed this world's socket, or ended: so does the world
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
        # The broker's keyframes, and this world's snapshots that may not have reached it yet.
        self.have = {int(e) for e in message.get("have") or ()} | self.sent
        # A sweeper looks for a stop every SWEEP_CHUNK_EVENTS (~10 ms); a request, as configured.
        self.sweeping = bool(message.get("sweep"))
        self.worker.chunk_events = SWEEP_CHUNK_EVENTS if self.sweeping else self.chunk
        answer: Obj
        try:
            answer = self.worker.handle(message)
        except Behind as behind:
            answer = {"behind": behind.bounds, "target": behind.target}
        except Superseded:
            answer = {"superseded": True}
        finally:
            self.worker.seeking = False  # a seek does not outlive its request
        text = answer.pop("text", None)
        answer["here"] = self.here()
        conn.send(answer, text)

    def progress(self, progress: Obj) -> None:
        """The worker's hook while a request's replay goes on: tell the broker (which tells the
        host). A sweep's is nobody's business."""
        if self.conn is not None and not self.sweeping:
            self.conn.send({"progress": progress})

    def keyframe(self, periodic: bool, near: bool) -> None:
        """The worker's hook, after each chunk of a replay. At a multiple of `KEYFRAME_EVENTS`
        (`periodic`): seek a quiescent moment for a snapshot from here on, unless a keyframe is
        held in the `every` events after it; while a snapshot is still being taken (one at a
        time: each is ~0.2 s of the other core), the seek starts at the end of the first chunk
        after the child is done.
        `KEYFRAME_NEAR` events before the target of a request (`near`): leave a paused copy of
        this process here (the *nearby* keyframe: a fork needs no quiescent moment), unless a
        keyframe is held that close before it."""
        worker = self.worker
        replay = worker.replay
        if replay is None:
            return
        events = replay.sim.events
        every, span = worker.keyframe_every or 0, worker.keyframe_near or 0
        if periodic and every and not any(events <= held < events + every for held in self.have):
            self.due = True
        if self.due and not self._taking():
            worker.seeking, self.due = True, False
        if near and not self.sweeping and not any(events - span <= held <= events for held in self.have):
            self.have.add(events)
            # Everything alive now is the copy's too: frozen, this process's collections never
            # traverse it, so they do not copy the pages it shares (controlplane.gcpolicy).
            gc.freeze()
            self.fork("keyframe")

    def _taking(self) -> bool:
        """A snapshot child of this world is still at work."""
        if self.child is None:
            return False
        try:
            done, _ = os.waitpid(self.child, os.WNOHANG)
        except ChildProcessError:  # reaped already (the worker ignores SIGCHLD)
            done = self.child
        if done:
            self.child = None
        return self.child is not None

    def snapshot(self) -> None:
        """A quiescent moment while seeking (the worker's hook): a child snapshots the world and
        sends it to the broker, on the other core while this world goes on."""
        worker = self.worker
        worker.seeking = False
        replay = worker.replay
        if replay is None:
            return
        self.have.add(replay.sim.events)
        self.sent.add(replay.sim.events)
        try:
            pid = os.fork()
        except OSError:
            return
        if pid != 0:
            self.child = pid
            return
        code = 1
        try:
            gc.disable()  # a short life: nothing to collect, and pickling allocates a lot
            if self.conn is not None:
                self.conn.close()
            data = dumps(_world_state(worker))
            self._hello("snapshot", data).close()
            code = 0
        except BROKER_GONE:
            code = 0  # the worker ended meanwhile (the session stopped, the host killed it)
        except BaseException:
            traceback.print_exc()  # the broker never hears of it: a keyframe fewer
        os._exit(code)

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
        except BROKER_GONE:
            os._exit(0)  # the worker ended while this copy was made: nobody wants it
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


def _latest(held: list[Any], bounds: Obj, where: Callable[[Any], Obj]) -> Any:
    """The last of `held` (in position order) whose position `where(k)` is at or before
    `bounds`, as `Worker._ready` judges it; None when none is."""
    events, at, seq = bounds.get("events"), bounds.get("time"), bounds.get("seq")
    for keyframe in sorted(held, key=lambda k: int(where(k)["events"]), reverse=True):
        here = where(keyframe)
        if events is not None and int(here["events"]) > int(events):
            continue
        if events is not None and int(here["events"]) == int(events) and at is None and here.get("moved"):
            continue  # its clock went on past event `events`: not the moment right after it
        if at is not None and float(here["time"]) > vtime(float(at)):
            continue
        if seq is not None and int(here["seq"]) >= int(seq):
            continue
        return keyframe
    return None


class _Held:
    """The broker's view of one world process (the current, the sweeper, the nearby keyframe)."""

    def __init__(self, conn: Conn, hello: Obj) -> None:
        self.conn = conn
        self.pid = int(hello["pid"])
        self.here: Obj | None = hello.get("here")
        self.actions = int(hello.get("actions") or 0)
        self.role = str(hello.get("hello"))
        self.used = 0  # as the nearby keyframe: the broker's tick when it last served from it
        self.uss = 0  # as the nearby keyframe: its private memory, as last read from /proc

    @property
    def events(self) -> int:
        return int(self.here["events"]) if self.here else 0


class _Keyframe:
    """A snapshot of a world, held by the broker."""

    def __init__(self, hello: Obj, data: bytes) -> None:
        self.here: Obj = hello["here"]
        self.actions = int(hello.get("actions") or 0)
        self.data = data
        self.used = 0  # the broker's tick when it last served from this keyframe

    @property
    def events(self) -> int:
        return int(self.here["events"])


class Broker:
    """The replay worker with keyframes: the same requests and answers as `Worker.handle`."""

    def __init__(self, requests: Requests, view: PastView, secret: str = "") -> None:
        """`view`: what the worlds are seen through (`Worker`); `secret`: a part of the broker's
        socket name nobody can guess (the process entry draws it: no randomness here)."""
        self.requests = requests
        self.view = view
        self.recording: Obj | None = None
        self.current: _Held | None = None
        self.keyframes: list[_Keyframe] = []  # snapshots, sorted by position
        # The nearby keyframe: a paused copy of a world, just before the target of a request (of
        # those a world left on its way, the last strictly before where the last answer landed).
        self.nearby: _Held | None = None
        self.landed = 0  # the event count where the last answer landed
        self.candidates: list[_Held] | None = None  # while a request is served: nearby keyframes left
        self.tick = 0
        self.every = KEYFRAME_EVENTS
        self.near = KEYFRAME_NEAR
        self.max_keyframes = MAX_KEYFRAMES
        self.max_memory = KEYFRAME_MEMORY
        self.share = KEYFRAME_SHARE
        self.world_rss = 0  # resident bytes of the largest world measured (the share's base)
        self.unmeasured: _Held | None = None  # the last world that connected, measured between requests
        self.chunk_events: int | None = None  # the worlds' chunk size (None: the worker's default)
        self.progress_every = PROGRESS_EVERY  # the worlds' wall seconds between two progress lines
        self.viewer = ""
        self.request: Obj = {}  # the request in hand: its id and viewer go with its progress lines
        self.evicted = 0
        self.snapshots = 0  # keyframes received
        self.forks_from_zero = 0
        self.forks_from_keyframe = 0
        if sys.platform.startswith("linux"):
            self.address = f"\0ctrlscope-replay-{os.getpid()}-{id(self):x}-{secret}"
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
        self.swept = -1  # the live event count a sweep last reached: no other until live moves on

    # -- worlds ------------------------------------------------------------------------------------
    def _worlds(self) -> list[_Held]:
        held = [w for w in (self.current, self.sweeper, self.nearby) if w is not None]
        return held + list(self.candidates or ())

    def _drop(self, world: _Held) -> None:
        world.conn.close()  # the world sees the end of its socket and exits
        if world is self.sweeper:
            self.sweeper, self.sweep_id = None, None
        if world is self.current:
            self.current = None
        if world is self.nearby:
            self.nearby = None

    def close(self) -> None:
        for world in self._worlds():
            self._drop(world)
        self.keyframes.clear()
        self.listener.close()
        if self._dir is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.address)
                os.rmdir(self._dir)

    def _accept(self) -> _Held | None:
        """A new connection: a world saying hello (returned), or a snapshot (kept: None)."""
        sock, _ = self.listener.accept()
        sock.settimeout(HELLO_TIMEOUT)
        conn = Conn(sock)
        try:
            hello = conn.recv()
        except (EOFError, OSError, ValueError):
            conn.close()  # a world that died on the way: nothing to keep
            return None
        sock.settimeout(None)
        if hello.get("hello") == "snapshot":
            conn.close()
            if isinstance(hello.get("here"), dict) and isinstance(hello.get("data"), bytes):
                self._add_keyframe(_Keyframe(hello, hello["data"]))
            return None
        world = _Held(conn, hello)
        if world.role == "keyframe":
            if self.candidates is not None:
                self.candidates.append(world)  # judged once the answer says where it landed
            else:
                self._nearby(world)
            return None
        self.unmeasured = world  # read from /proc after the answer (~3 ms), not on a request's way
        return world

    def _await_current(self, role: str = "current") -> _Held:
        """The next world to say hello as `role` (snapshots may come meanwhile; a world of another
        role, late from a fork given up on, is dropped)."""
        while True:
            ready, _, _ = select.select([self.listener], [], [], HELLO_TIMEOUT)
            if not ready:
                raise OSError("a new replay process did not connect")
            world = self._accept()
            if world is None:
                continue
            if world.role == role:
                return world
            self._drop(world)

    def _new_world(self, keyframe: _Keyframe | None) -> _Held:
        """A new current forked from this process: `keyframe` loaded (or a fresh replay of the
        recording), then replaying forward from there."""
        assert self.recording is not None
        actions = self.recording["actions"]
        if self.nearby is not None:
            # It shares its pages with the worlds forked from it or from the world it was forked
            # from; with none of them left it would come to own a whole world's memory.
            self._drop(self.nearby)
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
                worker = world_.worker
                worker.recording = self.recording
                if keyframe is not None:
                    gc.disable()  # loading allocates the whole world at once: no collection helps
                    state = loads(keyframe.data)
                    self.keyframes.clear()  # this process's copy: the bytes are not needed here
                    gc.enable()
                    gc.freeze()  # the loaded world is long-lived (controlplane.gcpolicy)
                    worker.replay, worker.hosted = state["replay"], state["hosted"]
                    worker.marks, worker.furthest = state["marks"], state["furthest"]
                    worker.replay.extend(actions[keyframe.actions :])
                world_.connect("current")
                world_.serve()
            except BaseException:
                traceback.print_exc()
            os._exit(1)
        if keyframe is None:
            self.forks_from_zero += 1
        else:
            self.forks_from_keyframe += 1
        world = self._await_current()
        world.actions = len(actions)
        return world

    def _worker(self) -> Worker:
        worker = Worker(self.requests, self.view)
        worker.rebuilds = False
        worker.keyframe_every = self.every
        worker.keyframe_near = self.near
        if self.chunk_events is not None:
            worker.chunk_events = self.chunk_events
        worker.progress_every = self.progress_every
        return worker

    def _add_keyframe(self, keyframe: _Keyframe) -> None:
        if any(k.events == keyframe.events for k in self.keyframes):
            return  # two worlds snapshotted the same moment: one is enough
        self.snapshots += 1
        self.keyframes.append(keyframe)
        self.keyframes.sort(key=lambda k: (k.events, k.here["time"]))
        self._evict()

    def budget(self) -> int:
        """Bytes all keyframes may hold: `share` of the current world's resident memory (the
        size of the simulation), at most `max_memory`."""
        share = int(self.share * self.world_rss) if self.world_rss else self.max_memory
        return min(self.max_memory, share)

    def _nearby(self, world: _Held | None) -> None:
        """Keep one nearby keyframe: of `world` and the one held, the later strictly before where
        the last answer landed (a step back from there can use it), else the later."""
        held = self.nearby
        if world is None or held is None:
            self.nearby = world or held
            return
        before = [w for w in (held, world) if w.events < self.landed]
        keep = max(before or [held, world], key=lambda w: w.events)
        self._drop(world if keep is held else held)
        self.nearby = keep

    def _memory(self) -> int:
        """The snapshots' bytes and the nearby keyframe's private memory (as last read)."""
        return sum(len(k.data) for k in self.keyframes) + (self.nearby.uss if self.nearby is not None else 0)

    def _evict(self) -> None:
        """Hold to the `budget`: the nearby keyframe goes when it holds more than half of it (the
        worlds near it write to the pages it shares with them: it grows), then the snapshots are
        thinned to `max_keyframes` and to the rest."""
        budget = self.budget()
        if self.nearby is not None and self.nearby.uss > budget // 2:
            self._drop(self.nearby)
            self.evicted += 1
        total = self._memory()
        while len(self.keyframes) > 1 and (len(self.keyframes) > self.max_keyframes or total > budget):
            victim = self._victim()
            total -= len(victim.data)
            self.keyframes.remove(victim)
            self.evicted += 1

    def _victim(self) -> _Keyframe:
        """Thinning: the keyframe whose removal leaves the smallest gap (never the furthest, nor
        the one used last; ties: the least recently used)."""
        kfs = self.keyframes
        last_used = max(kfs, key=lambda k: k.used)
        best: tuple[int, int, int] | None = None
        victim = kfs[0]
        for i, keyframe in enumerate(kfs[:-1]):
            if keyframe is last_used and keyframe.used > 0:
                continue
            gap = kfs[i + 1].events - (kfs[i - 1].events if i > 0 else 0)
            score = (gap, keyframe.used, i)
            if best is None or score < best:
                best, victim = score, keyframe
        return victim

    def _pick(self, bounds: Obj) -> _Keyframe | _Held | None:
        """The latest keyframe at or before `bounds` (as `Worker._ready` judges it): a snapshot,
        or the nearby keyframe."""
        held: list[_Keyframe | _Held] = [*self.keyframes]
        if self.nearby is not None and self.nearby.here is not None:
            held.append(self.nearby)
        picked: _Keyframe | _Held | None = _latest(held, bounds, lambda k: k.here)
        return picked

    # -- one request ---------------------------------------------------------------------------------
    def handle(self, request: Obj) -> Obj:
        if isinstance(request.get("live"), dict):
            self.live = request["live"]
        if request.get("stats"):
            return self.stats()  # a look, not a viewer's move: the sweep goes on
        self.viewer = str(request.get("viewer"))
        self.request = request
        self._pause_sweep()  # a request never competes with the sweeper
        if "configure" in request:
            return self.configure(request["configure"])
        if "recording" in request:
            self.drop_world()
            self.keyframes.clear()
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
            self.drop_world()
            self.fallback = Worker(self.requests, self.view)
            self.fallback.on_progress = lambda progress: progress_line(self.request, progress)
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
                self._use(keyframe)
        for _ in range(MAX_ROUNDS):
            world = self.current
            if world is None:
                world = self.current = self._new_world(None)
            answer = self._go(world, message)
            if "behind" not in answer:
                return answer
            # The target is behind this world: it ends, an earlier keyframe serves.
            self._drop(world)
            message["target"] = answer["target"]
            keyframe = self._pick(answer["behind"])
            if keyframe is not None:
                self._use(keyframe)
        return {"ok": False, "error": "replay failed: no world could reach that moment"}

    def _use(self, keyframe: _Keyframe | _Held) -> None:
        """A new current from `keyframe`: a snapshot loaded, or a fork of the nearby keyframe
        (the current it replaces ends)."""
        self.tick += 1
        keyframe.used = self.tick
        if self.current is not None:
            self._drop(self.current)
        if isinstance(keyframe, _Keyframe):
            self.current = self._new_world(keyframe)
            return
        assert self.recording is not None
        actions = self.recording["actions"]
        keyframe.conn.send({"op": "fork", "actions": actions[keyframe.actions :]})
        keyframe.actions = len(actions)
        self.forks_from_keyframe += 1
        self.current = self._await_current()
        self.current.actions = len(actions)

    def _go(self, world: _Held, message: Obj) -> Obj:
        self.candidates = []
        try:
            return self._go_on(world, message)
        finally:
            candidates, self.candidates = self.candidates, None
            for candidate in candidates:
                self._nearby(candidate)

    def _go_on(self, world: _Held, message: Obj) -> Obj:
        assert self.recording is not None
        actions = self.recording["actions"]
        message = {**message, "actions": actions[world.actions :], "have": self._have()}
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
                self._adopt(self._accept())
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
                if "progress" in answer:  # how far the replay has come: the host hears it now
                    progress_line(self.request, answer["progress"])
                    continue
                world.here = answer.pop("here", None) or world.here
                position = answer.get("position")
                if isinstance(position, dict) and isinstance(position.get("events"), int):
                    self.landed = position["events"]
                if answer.get("superseded"):
                    raise Superseded
                return answer

    def _have(self) -> list[int]:
        """The event counts of the keyframes held (a world makes none where one is)."""
        return [k.events for k in self.keyframes] + ([self.nearby.events] if self.nearby is not None else [])

    def _adopt(self, world: _Held | None) -> None:
        """A world that said hello when none was awaited (late from a fork given up on): it ends."""
        if world is not None:
            self._drop(world)

    def wait(self) -> None:
        """Until a request is waiting (or the host closed the pipe), taking in the snapshots that
        come meanwhile (a sweeper's, a world's child's): they never wait for the next request."""
        requests = self.requests
        while not requests.waiting and not requests.closed:
            sweeper = self.sweeper if self.sweep_id is not None else None
            fds = [requests.fd, self.listener.fileno()] + ([sweeper.conn.fileno()] if sweeper is not None else [])
            ready, _, _ = select.select(fds, [], [])
            if self.listener.fileno() in ready:
                self._adopt(self._accept())
            if sweeper is not None and sweeper.conn.fileno() in ready:
                self._reap_sweep()
            if requests.fd in ready:
                requests.poll(0)

    def housekeep(self) -> None:
        """Between requests: take in the snapshots that came meanwhile, read the memory of the
        nearby keyframe and of a world that connected since (~3 ms each), thin."""
        self._accept_pending()
        world, self.unmeasured = self.unmeasured, None
        used = memory(world.pid) if world is not None else None
        if used is not None:  # the largest world seen: the share's base does not jump about
            self.world_rss = max(self.world_rss, used["rss"])
        if self.nearby is not None:
            used = memory(self.nearby.pid)
            self.nearby.uss = used["uss"] if used is not None else 0
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
        if target <= self.swept:
            return  # swept to there already (a stretch without a quiescent moment stays bare)
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
                "have": self._have(),
            }
        )
        sweeper.actions = len(actions)

    def _pause_sweep(self) -> None:
        """Stop the sweeper between two chunks and wait for it (snapshots it sent are taken in);
        at the live moment it has done its work: it ends."""
        sweeper, sweep_id = self.sweeper, self.sweep_id
        if sweeper is None or sweep_id is None:
            return
        sweeper.conn.send({"op": "stop", "id": sweep_id})
        while True:
            ready, _, _ = select.select([sweeper.conn.fileno(), self.listener.fileno()], [], [], HELLO_TIMEOUT)
            if not ready:
                self._drop(sweeper)  # stuck: it goes; nothing depends on it
                return
            if self.listener.fileno() in ready:
                self._adopt(self._accept())
            if sweeper.conn.fileno() in ready:
                self._reap_sweep()
                return

    def _reap_sweep(self) -> None:
        """The sweeper's answer is waiting (it stopped when told to, or it reached the live moment
        it was sent to): take it in. At the live moment (or on a failure) the sweeper ends."""
        sweeper = self.sweeper
        assert sweeper is not None
        self.sweep_id = None
        try:
            answer = sweeper.conn.recv()
        except (EOFError, OSError, ValueError):
            self._drop(sweeper)
            return
        sweeper.here = answer.pop("here", None) or sweeper.here
        if not answer.get("superseded"):  # it reached the live moment it was sent to (or failed)
            self._drop(sweeper)
            if answer.get("ok"):
                self.swept = sweeper.events

    def _accept_pending(self) -> None:
        while select.select([self.listener], [], [], 0)[0]:
            self._adopt(self._accept())

    def configure(self, config: Obj) -> Obj:
        """Change the policy (tests and the benchmark): `every`, `near`, `max_keyframes`,
        `max_memory`, `chunk_events`, each a whole number >= 1, `share` (a number in (0, 1]: of
        the world's memory), `progress` (seconds between two progress lines of a replay, in (0,
        60]) and `sweep` (true/false: sweep ahead between requests); the
        keyframes held are kept (and thinned)."""
        if "sweep" in config:
            if not isinstance(config["sweep"], bool):
                return {"ok": False, "error": "configure.sweep: must be true or false"}
            self.sweep_on = config["sweep"]
        if "progress" in config:
            progress = config["progress"]
            if isinstance(progress, bool) or not isinstance(progress, int | float) or not 0 < progress <= 60:
                return {"ok": False, "error": "configure.progress: must be a number of seconds in (0, 60]"}
            self.progress_every = float(progress)
        if "share" in config:
            share = config["share"]
            if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
                return {"ok": False, "error": "configure.share: must be a number in (0, 1]"}
            self.share = float(share)
        for field in ("every", "near", "max_keyframes", "max_memory", "chunk_events"):
            if field in config:
                value = config[field]
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    return {"ok": False, "error": f"configure.{field}: must be a whole number >= 1"}
                setattr(self, field, value)
        if "every" in config or "near" in config or "chunk_events" in config or "progress" in config:
            self.drop_world()  # worlds keep the policy they were forked with
        self._evict()
        return {"ok": True}

    def drop_world(self) -> None:
        """Forget every world (the next request replays from the start or a keyframe)."""
        for world in self._worlds():
            self._drop(world)

    def stats(self) -> Obj:
        """The keyframes held (for tests and the benchmark): position and size of each. A look
        that leaves a sweep in flight alone (a sweep that ended meanwhile is taken in)."""
        sweeper = self.sweeper
        if sweeper is not None and self.sweep_id is not None and select.select([sweeper.conn], [], [], 0)[0]:
            self._reap_sweep()
        self.housekeep()
        now = self.current
        return {
            "ok": True,
            "keyframes": [{"here": k.here, "bytes": len(k.data)} for k in self.keyframes],
            "nearby": None
            if self.nearby is None
            else {"here": self.nearby.here, "pid": self.nearby.pid, "memory": memory(self.nearby.pid)},
            "keyframe_bytes": self._memory(),  # the snapshots' and the nearby keyframe's
            "snapshot_bytes": sum(len(k.data) for k in self.keyframes),
            "budget": self.budget(),
            "current": None if now is None else {"here": now.here, "pid": now.pid, "memory": memory(now.pid)},
            "broker": {"pid": os.getpid(), "memory": memory(os.getpid())},
            "evicted": self.evicted,
            "snapshots": self.snapshots,
            "sweeps": self.sweeps,
            "swept": self.swept,  # the live event count the last finished sweep reached (-1: none)
            "sweeper": None if self.sweeper is None else {"here": self.sweeper.here, "pid": self.sweeper.pid},
            "forks_from_zero": self.forks_from_zero,
            "forks_from_keyframe": self.forks_from_keyframe,
        }


def serve(requests: Requests, worker: Worker | Broker) -> None:
    """Serve the host's requests (stdin) until it closes them: one JSON header line per answer
    on stdout, then the view model's line. Between requests a broker waits `SWEEP_AFTER` seconds
    for a viewer's next move and, when none comes, sweeps ahead."""
    out = sys.stdout
    while True:
        if not isinstance(worker, Worker) and not requests.waiting and not requests.closed:
            requests.poll(SWEEP_AFTER)  # a viewer's next move, if it comes soon
            if not requests.waiting and not requests.closed:
                worker.idle()  # it did not: the broker sweeps ahead meanwhile
            worker.wait()  # taking in the keyframes the worlds send
        request = requests.next()
        if request is None:
            return  # the host closed our stdin: it stopped the session, or exited
        if isinstance(worker, Worker):
            worker.on_progress = lambda progress, request=request: progress_line(request, progress)
        try:
            answer = worker.handle(request)
        except Superseded:
            continue
        except Exception as exc:  # a bug: say so to the viewer, drop the world, serve on
            worker.drop_world()
            answer = {"ok": False, "error": f"replay failed: {type(exc).__name__}: {exc}"[:500]}
        answer["id"] = request.get("id")
        answer["viewer"] = request.get("viewer")
        text = answer.pop("text", None)
        # A header line, then the view model on a line of its own: the host renders it.
        out.write(json.dumps(answer, separators=(",", ":"), allow_nan=False, default=str) + "\n")
        if text is not None:
            out.write(text + "\n")
        out.flush()
        if not isinstance(worker, Worker):
            worker.housekeep()

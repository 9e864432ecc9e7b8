"""Keyframes in the replay worker (controlplane.session.timetravel.keyframes): a move back forks the nearest
earlier keyframe and lands on exactly the world a replay from t=0 reaches; keyframes are bounded
in number and memory, thinned evenly, gone with the worker; without fork, replay from t=0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from controlplane.scenario import load_file
from controlplane.session.timetravel import keyframes
from controlplane.simulation import Simulation
from dashboard.host.hosted import HostedSimulation
from dashboard.host.past_view import PastView, render
from tests.patience import PATIENCE_S

from .test_past import FOCUS, NoNewer, live, live_panels

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not keyframes.available(), reason="keyframes need os.fork")


class WorkerProcess:
    """The real replay worker (`python -m dashboard.host.replay_worker`), spoken to as the host does."""

    def __init__(self, *, keyframes_on: bool = True, **config: Any) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("DJANGO_SETTINGS_MODULE", None)  # the worker renders nothing: it never sets Django up
        env["CTRLSCOPE_KEYFRAMES"] = "1" if keyframes_on else "0"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dashboard.host.replay_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=str(ROOT),
            env=env,
        )
        self.next_id = 0
        self.sent: int | None = None
        self.progress: list[dict[str, Any]] = []  # the progress lines read so far
        if config:
            assert self.raw({"viewer": "test", "configure": config})["ok"]

    def ask(self, hosted: HostedSimulation, target: dict[str, Any], focus: Any = ()) -> dict[str, Any]:
        recording = hosted.sim.recording()
        request: dict[str, Any] = {
            "viewer": "v",
            "target": target,
            "live": hosted.sim.position().to_json(),
            "focus": [list(k) for k in focus],
        }
        if self.sent is None:
            request["recording"] = recording
        else:
            request["actions"] = recording["actions"][self.sent :]
        self.sent = len(recording["actions"])
        return self.raw(request)

    def send(self, request: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.next_id += 1
        request["id"] = self.next_id
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        head: dict[str, Any] = json.loads(self.proc.stdout.readline())
        while "progress" in head:  # a long replay says how far it has come before it answers
            self.progress.append(head)
            head = json.loads(self.proc.stdout.readline())
        if head.get("ok") and "position" in head:
            head["text"] = self.proc.stdout.readline().decode().rstrip("\n")
        return head

    def raw(self, request: dict[str, Any]) -> dict[str, Any]:
        self.send(request)
        return self.read()

    def stats(self) -> dict[str, Any]:
        return self.raw({"viewer": "test", "stats": True})

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def world(answer: dict[str, Any]) -> tuple[Any, Any]:
    """What a past view shows: the position and every panel (not the render counter `seq`)."""
    assert answer["ok"], answer
    return answer["position"], json.loads(render(answer["text"]))["panels"]


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.fixture
def session() -> HostedSimulation:
    hosted = live()
    hosted.focus("viewer", FOCUS)
    hosted.sim.run_until(20.0)
    hosted.sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 2}})
    hosted.sim.run_until(60.0)
    return hosted


def test_moves_back_from_keyframes_land_where_a_replay_from_zero_does(session):
    fast = WorkerProcess(every=50)
    slow = WorkerProcess(keyframes_on=False)
    try:
        end = session.sim.position()
        targets: list[dict[str, Any]] = [{"at": 50.0}, {"at": 12.5}, {"at": 30.0}, {"at": 20.0}]
        targets += [{"events": e, "time": end.time} for e in (end.events - 3, 321, 77, 500, 499)]
        for target in targets:
            position, panels = world(fast.ask(session, target, FOCUS))
            assert (position, panels) == world(slow.ask(session, target, FOCUS)), target
            at = {"events": position["events"], "seq": position["seq"], "time": position["time"]}
            for step in ("event", "stage", "sync"):
                back = {"back": step, "from": at}
                assert world(fast.ask(session, back, FOCUS)) == world(slow.ask(session, back, FOCUS)), back
        stats = fast.stats()
        assert stats["forks_from_keyframe"] > 0  # the moves back were served from keyframes ...
        assert stats["forks_from_zero"] < stats["forks_from_keyframe"]  # ... t=0 only before the first
    finally:
        fast.close()
        slow.close()


def test_a_step_back_after_a_step_forward_lands_exactly_where_the_page_was():
    hosted = live("quota-slow-start")
    hosted.focus("viewer", FOCUS)
    hosted.sim.run_until(0.3)
    worker = WorkerProcess(every=20)
    try:
        where = []
        for step in ("event", "stage", "sync", "sync", "stage", "event"):
            where.append((hosted.sim.position(), live_panels(hosted, FOCUS)))
            {"event": hosted.sim.step, "stage": hosted.sim.step_stage, "sync": hosted.sim.step_sync}[step]()
        worker.ask(hosted, {"at": hosted.sim.now})  # keyframes along the way
        for before, seen in reversed(where):  # each a step back, to where the step forward started
            exact = {"events": before.events, "time": before.time, "exact": True}
            assert world(worker.ask(hosted, exact, FOCUS)) == (before.to_json(), seen)
        assert worker.stats()["forks_from_keyframe"] > 0
    finally:
        worker.close()


def test_keyframes_are_bounded_in_number_and_thinned_evenly(session):
    worker = WorkerProcess(every=25, max_keyframes=3)
    try:
        end = session.sim.position()
        for target in ({"at": 20.0}, {"events": end.events - 1, "time": end.time}):
            worker.ask(session, target)
        # Wait for the state (bounded), never for a time.
        # A keyframe is at the first quiescent moment after a multiple of 25, one snapshot at a
        # time: how many a replay leaves depends on how busy the machine is while they are taken.
        # While there are too few to thin, the viewer looks at other moments (each replay from
        # zero or from a keyframe leaves more on the way).
        more = iter([5.0, 10.0, 15.0, 25.0, 35.0, 45.0, 55.0] * 4)
        deadline = time.monotonic() + PATIENCE_S
        while True:
            stats = worker.stats()
            held = [k["here"]["events"] for k in stats["keyframes"]]
            if stats["snapshots"] > 3 and stats["evicted"] > 0:
                break
            assert time.monotonic() < deadline, (end.events, held, {k: stats[k] for k in ("snapshots", "evicted")})
            time.sleep(0.5)  # longer than SWEEP_AFTER: the sweeper goes on meanwhile
            at = next(more, None)
            if at is not None:
                worker.ask(session, {"at": at})
        assert len(held) == 3 and held == sorted(held), stats
        # Which are made depends on when each snapshot child is done (one at a time); which of
        # them go is the thinning's, checked with fixed positions below.
    finally:
        worker.close()


def test_keyframes_are_bounded_in_memory(session):
    worker = WorkerProcess(every=25, max_memory=1)
    try:
        end = session.sim.position()
        worker.ask(session, {"events": end.events - 1, "time": end.time})
        assert len(worker.stats()["keyframes"]) <= 1  # one byte: all but one evicted
    finally:
        worker.close()


def test_the_victim_is_the_keyframe_whose_neighbours_are_closest():
    broker = keyframes.Broker(NoNewer(), PastView())  # type: ignore[arg-type]
    try:

        class Fake:
            def __init__(self, events: int, used: int = 0) -> None:
                self.here = {"events": events, "seq": events, "time": 0.0}
                self.events, self.used = events, used

        kfs = [Fake(100), Fake(200), Fake(250), Fake(400), Fake(800)]
        broker.keyframes = kfs  # type: ignore[assignment]
        assert broker._victim() is kfs[1]  # 100..250 is the smallest gap its removal leaves
        kfs[1].used = 5  # the keyframe used last is kept: the next smallest gap goes
        assert broker._victim() in (kfs[0], kfs[2])
        broker.keyframes = []
    finally:
        broker.close()


def test_without_fork_the_worker_replays_from_zero(session, monkeypatch):
    broker = keyframes.Broker(NoNewer(), PastView())  # type: ignore[arg-type]

    def no_fork() -> int:
        raise OSError("fork: out of memory")

    monkeypatch.setattr(os, "fork", no_fork)
    try:
        live_now = session.sim.position().to_json()
        request = {"viewer": "v", "target": {"at": 30.0}, "live": live_now, "focus": []}
        answer = broker.handle({**request, "recording": session.sim.recording()})
        assert answer["ok"] and answer["position"]["time"] == 30.0
        assert broker.fallback is not None and not broker.keyframes
        back = broker.handle({**request, "target": {"at": 10.0}})  # an earlier moment: from t=0
        assert back["ok"] and back["position"]["time"] == 10.0
    finally:
        broker.close()


def test_the_worlds_end_with_the_worker_even_killed(session):
    worker = WorkerProcess(every=25)
    worker.ask(session, {"at": 59.0})
    stats = worker.stats()
    assert stats["keyframes"]  # snapshots, held by the worker itself
    pids = [stats["current"]["pid"]] + ([stats["nearby"]["pid"]] if stats["nearby"] else [])
    assert not any(gone(p) for p in pids)
    worker.proc.send_signal(signal.SIGKILL)
    worker.proc.wait(10)
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline and not all(gone(p) for p in pids):
        time.sleep(0.05)
    assert all(gone(p) for p in pids)


def test_a_newer_request_of_the_viewer_supersedes_the_one_in_hand():
    hosted = HostedSimulation("t", Simulation(load_file("demo")), name="demo", source="demo")
    hosted.sim.run_until(120.0)
    worker = WorkerProcess(chunk_events=50)
    try:
        now = hosted.sim.position().to_json()
        first = {"viewer": "v", "target": {"at": 100.0}, "live": now, "recording": hosted.sim.recording(), "id": 1}
        second = {"viewer": "v", "target": {"at": 40.0}, "live": now, "id": 2}
        assert worker.proc.stdin is not None
        worker.proc.stdin.write(f"{json.dumps(first)}\n{json.dumps(second)}\n".encode())  # at once
        worker.proc.stdin.flush()
        worker.next_id = 2
        answer = worker.read()
        assert answer["id"] == worker.next_id and answer["position"]["time"] == 40.0, answer  # the first got no answer
    finally:
        worker.close()


def test_the_keyframes_hold_a_share_of_the_worlds_memory():
    """Keyframes are snapshots: their memory is their bytes, at most `share` of the resident
    memory of the world (the simulation's size) and never over `max_memory`; over it they go by
    thinning as over the count, the furthest kept."""
    broker = keyframes.Broker(NoNewer(), PastView())  # type: ignore[arg-type]
    try:

        class Fake:
            def __init__(self, events: int) -> None:
                self.here, self.events, self.used = {"events": events, "seq": events, "time": 0.0}, events, 0
                self.data = b"x" * 10

        broker.keyframes = [Fake(100 * (i + 1)) for i in range(10)]  # type: ignore[misc]
        assert broker._memory() == 100
        broker.world_rss, broker.share = 1_000, 0.05  # 50 bytes
        assert broker.budget() == 50
        broker.max_memory = 30  # the cap wins
        assert broker.budget() == 30
        broker._evict()
        held = [k.events for k in broker.keyframes]
        assert broker._memory() <= 30 and held[-1] == 1000 and broker.evicted == 7
        refused = broker.configure({"share": 0})
        assert refused == {"ok": False, "error": "configure.share: must be a number in (0, 1]"}
        assert broker.share == 0.05  # unchanged
        broker.keyframes = []
    finally:
        broker.close()


def test_between_requests_a_sweeper_leaves_keyframes_up_to_the_live_moment(session):
    """After an early moment is viewed, the worker sweeps on towards the live moment while no
    request waits (a copy of the current: the current stays at the moment viewed), leaving
    keyframes on the way; a later jump beyond what was viewed is then served from one, and every
    world is still the one a replay from t=0 reaches."""
    fast = WorkerProcess(every=50)
    slow = WorkerProcess(keyframes_on=False)
    try:
        end = session.sim.position()
        first = fast.ask(session, {"at": 5.0}, FOCUS)
        assert world(first) == world(slow.ask(session, {"at": 5.0}, FOCUS))
        viewed = world(first)[0]["events"]
        deadline = time.monotonic() + PATIENCE_S
        while True:  # a look (stats) leaves the sweep alone: polling never starves it
            stats = fast.stats()
            held = [k["here"]["events"] for k in stats["keyframes"]]
            # Done (at the live moment the sweeper ends), its snapshots taken in: keyframes ahead of
            # the moment viewed (how close to the live moment the last one is depends on how busy
            # the machine is while the snapshots are taken: they are taken one at a time).
            done = stats["swept"] >= end.events and stats["sweeper"] is None
            if done and held and held[-1] > viewed:
                break
            assert time.monotonic() < deadline, (end, held, {k: stats[k] for k in ("sweeps", "swept", "sweeper")})
            time.sleep(0.2)
        assert stats["sweeps"] >= 1 and stats["forks_from_zero"] == 1
        # The current did not move: one event forward from the moment viewed is exact.
        at = world(first)[0]
        step = {"forward": "event", "from": {k: at[k] for k in ("events", "seq", "time")}}
        assert world(fast.ask(session, step, FOCUS)) == world(slow.ask(session, step, FOCUS))
        before = fast.stats()["forks_from_keyframe"]
        late = {"at": 58.5}  # beyond every moment viewed so far
        assert world(fast.ask(session, late, FOCUS)) == world(slow.ask(session, late, FOCUS))
        after = fast.stats()
        assert after["forks_from_keyframe"] == before + 1 and after["forks_from_zero"] == 1
    finally:
        fast.close()
        slow.close()


def test_without_sweeping_a_late_jump_replays_on_from_the_current(session):
    """The same with `sweep` off (the benchmark's comparison): no keyframe beyond the moment
    viewed, so the late jump replays forward from the current."""
    fast = WorkerProcess(every=50)
    try:
        assert fast.raw({"viewer": "test", "configure": {"sweep": False}})["ok"]
        refused = fast.raw({"viewer": "test", "configure": {"sweep": 1}})
        assert refused["error"] == "configure.sweep: must be true or false"
        first = world(fast.ask(session, {"at": 5.0}))[0]
        time.sleep(1.0)
        stats = fast.stats()
        assert stats["sweeps"] == 0 and all(k["here"]["events"] <= first["events"] for k in stats["keyframes"])
    finally:
        fast.close()


def test_a_replay_to_an_event_count_leaves_a_keyframe_just_before_it(session):
    """Steps back come in runs (shift+N, shift+N …): a replay to an event count far from the
    keyframe it started from also leaves a paused copy of itself `near` events before it (the
    nearby keyframe: a fork, at any moment), so the next steps back replay from there; the
    worlds are still exactly those of a replay from t=0."""
    # A world this small is mostly the interpreter: the nearby fork's private memory would pass
    # half of 28 % of it (the worker, which renders nothing, no longer holds Django's share).
    fast = WorkerProcess(every=10_000, near=10, sweep=False, share=0.6)
    slow = WorkerProcess(keyframes_on=False)
    try:
        end = session.sim.position()
        assert end.events > 400
        target = {"events": 391, "time": end.time}
        assert world(fast.ask(session, target, FOCUS)) == world(slow.ask(session, target, FOCUS))
        stats = fast.stats()
        assert stats["nearby"]["here"]["events"] == 381 and not stats["keyframes"]  # none periodic
        before = stats["forks_from_keyframe"]
        for events in (390, 389, 385):  # the next steps back: from the nearby keyframe
            target = {"events": events, "time": end.time}
            assert world(fast.ask(session, target, FOCUS)) == world(slow.ask(session, target, FOCUS))
        stats = fast.stats()
        assert stats["forks_from_keyframe"] == before + 3 and stats["forks_from_zero"] == 1
        assert stats["nearby"]["here"]["events"] == 381  # no other made: it is close enough
    finally:
        fast.close()
        slow.close()


def test_a_jump_to_a_time_leaves_a_nearby_keyframe_before_the_moment_it_lands_on(session):
    """For a time the event count is known only once reached: the replay leaves copies every
    `near` events from a little before it, and the broker keeps the last one strictly before the
    landing, so the first step back after a jump replays from there."""
    # A world this small is mostly the interpreter: the nearby fork's private memory would pass
    # half of 28 % of it (the worker, which renders nothing, no longer holds Django's share).
    fast = WorkerProcess(every=10_000, near=20, sweep=False, share=0.6)
    slow = WorkerProcess(keyframes_on=False)
    try:
        position, panels = world(fast.ask(session, {"at": 21.0}, FOCUS))  # just after the scale
        assert (position, panels) == world(slow.ask(session, {"at": 21.0}, FOCUS))
        near = fast.stats()["nearby"]["here"]["events"]
        assert position["events"] - 40 <= near < position["events"], (near, position)
        back = {"back": "event", "from": {k: position[k] for k in ("events", "seq", "time")}}
        before = fast.stats()["forks_from_keyframe"]
        assert world(fast.ask(session, back, FOCUS)) == world(slow.ask(session, back, FOCUS))
        assert fast.stats()["forks_from_keyframe"] == before + 1
    finally:
        fast.close()
        slow.close()


def test_a_long_replay_says_how_far_it_has_come_before_it_answers(session):
    """Progress lines come from the world replaying, through the broker, for the request in
    hand, its position moving on towards the target."""
    worker = WorkerProcess(chunk_events=50, progress=0.001)
    try:
        answer = worker.ask(session, {"at": 59.0})
        assert answer["ok"], answer
        lines = [p for p in worker.progress if p["id"] == worker.next_id]
        assert len(lines) >= 3, worker.progress  # a line after each chunk of 50 events
        assert all(p["viewer"] == "v" for p in lines)
        events = [p["progress"]["events"] for p in lines]
        assert events == sorted(events) and all(e <= answer["position"]["events"] for e in events)
        assert all(p["progress"]["time"] <= 59.0 for p in lines)
    finally:
        worker.close()


def test_a_copy_of_a_world_made_as_the_worker_ends_exits_quietly():
    """Issue 26 §4: the server's log showed ConnectionRefusedError tracebacks from keyframes.py
    when the host killed a replay worker mid-replay: the world replaying went on to its next
    chunk boundary and forked a copy there (a nearby keyframe, a snapshot), which connected to the
    broker's listener, gone with it. Such a copy has nobody to serve: it exits, quietly."""
    script = """
import os, secrets, sys
sys.path.insert(0, os.getcwd())
from controlplane.session.timetravel.keyframes import _World
from controlplane.session.timetravel.worker import Worker
from dashboard.host.past_view import PastView

class Nothing:
    def newer(self, viewer):
        return False

world = _World(Worker(Nothing(), PastView()), "\\0ctrlscope-test-broker-gone-" + secrets.token_hex(8))
world.fork("keyframe")  # the copy connects to a broker that has ended
_, status = os.wait()
print(os.waitstatus_to_exitcode(status))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT), DJANGO_SETTINGS_MODULE="dashboard.settings")
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0", done.stdout
    assert done.stderr == "", done.stderr

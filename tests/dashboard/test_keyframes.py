"""Keyframes in the replay worker (dashboard.host.keyframes): a move back forks the nearest
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
from controlplane.simulation import Simulation
from dashboard.host import keyframes
from dashboard.host.hosted import HostedSimulation

from .test_past import FOCUS, NoNewer, live, live_panels

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not keyframes.available(), reason="keyframes need os.fork")


class WorkerProcess:
    """The real replay worker (`python -m dashboard.host.replay_worker`), spoken to as the host does."""

    def __init__(self, *, keyframes_on: bool = True, **config: int) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT), DJANGO_SETTINGS_MODULE="dashboard.settings")
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
    return answer["position"], json.loads(answer["text"])["panels"]


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
    worker = WorkerProcess(every=25, max_keyframes=4)
    try:
        end = session.sim.position()
        worker.ask(session, {"events": end.events - 1, "time": end.time})
        stats = worker.stats()
        held = [k["here"]["events"] for k in stats["keyframes"]]
        assert len(held) == 4 and stats["evicted"] > 0
        assert held == sorted(held) and held[-1] >= end.events - 26  # the furthest is kept
        gaps = [b - a for a, b in zip([0, *held], held, strict=False)]
        assert max(gaps) <= 2 * min(gaps) + 2 * 25  # spread over the whole past, not bunched
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
    broker = keyframes.Broker(NoNewer())  # type: ignore[arg-type]
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
    broker = keyframes.Broker(NoNewer())  # type: ignore[arg-type]

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


def test_keyframes_end_with_the_worker_even_killed(session):
    worker = WorkerProcess(every=25)
    worker.ask(session, {"at": 59.0})
    stats = worker.stats()
    pids = [k["pid"] for k in stats["keyframes"]] + [stats["current"]["pid"]]
    assert len(pids) > 3 and not any(gone(p) for p in pids)
    worker.proc.send_signal(signal.SIGKILL)
    worker.proc.wait(10)
    deadline = time.monotonic() + 10
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


def test_the_memory_of_keyframes_is_read_a_few_at_a_time(monkeypatch):
    """Reading /proc costs ~3 ms a process: after an answer the broker reads each new keyframe
    and the MEASURE_PER_ROUND read longest ago, not all of them (27 took ~80 ms the next request
    waited for); over the budget, keyframes go by thinning as before."""
    broker = keyframes.Broker(NoNewer())  # type: ignore[arg-type]
    read: list[int] = []

    def fake_memory(pid: int) -> dict[str, int]:
        read.append(pid)
        return {"pss": 10, "uss": 10}

    monkeypatch.setattr(keyframes, "memory", fake_memory)
    try:

        class Fake:
            def __init__(self, pid: int) -> None:
                self.pid, self.here, self.events, self.used = pid, {"events": pid, "seq": pid, "time": 0.0}, pid, 0
                self.uss: int | None = None
                self.measured = 0

        kfs = [Fake(100 * (i + 1)) for i in range(10)]
        broker.keyframes = list(kfs)  # type: ignore[arg-type]
        assert broker._memory() == 100 and sorted(read) == [k.pid for k in kfs]  # new ones: all read
        read.clear()
        assert broker._memory() == 100 and len(read) == keyframes.MEASURE_PER_ROUND
        first = list(read)
        read.clear()
        broker._memory()
        assert len(read) == keyframes.MEASURE_PER_ROUND and not set(read) & set(first)  # round robin
        read.clear()
        newcomer = Fake(1100)
        broker.keyframes.append(newcomer)  # type: ignore[arg-type]
        assert broker._memory() == 110 and newcomer.pid in read and len(read) == keyframes.MEASURE_PER_ROUND + 1
        broker.max_memory = 55  # over the budget: thinned to it from what was read
        monkeypatch.setattr(broker, "_drop", lambda world: broker.keyframes.remove(world))
        broker._evict()
        assert sum(k.uss or 0 for k in broker.keyframes) <= 55 and broker.keyframes[-1] is newcomer
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
        deadline = time.monotonic() + 60
        while True:  # each look pauses the sweep; it goes on after the answer
            stats = fast.stats()
            held = [k["here"]["events"] for k in stats["keyframes"]]
            if stats["sweeper"] is None and held and held[-1] >= end.events - 50:
                break
            assert time.monotonic() < deadline, stats
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
    keyframe it started from also leaves one `near` events before it, so the next steps back
    replay from there; the worlds are still exactly those of a replay from t=0."""
    fast = WorkerProcess(every=100, near=10)
    slow = WorkerProcess(keyframes_on=False)
    try:
        end = session.sim.position()
        assert end.events > 400
        fast.ask(session, {"at": 1.0}, FOCUS)  # a first view: keyframes at 100, 200 … on the way
        target = {"events": 391, "time": end.time}
        assert world(fast.ask(session, target, FOCUS)) == world(slow.ask(session, target, FOCUS))
        held = [k["here"]["events"] for k in fast.stats()["keyframes"]]
        assert 381 in held  # 10 events before 391
        for events in (390, 389, 385):  # the next steps back: from the keyframe at 381
            target = {"events": events, "time": end.time}
            assert world(fast.ask(session, target, FOCUS)) == world(slow.ask(session, target, FOCUS))
        assert [k["here"]["events"] for k in fast.stats()["keyframes"]].count(381) == 1  # no more made
    finally:
        fast.close()
        slow.close()

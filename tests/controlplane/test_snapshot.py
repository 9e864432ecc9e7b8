"""Snapshots (controlplane.session.timetravel.snapshot): a quiescent simulation pickled and
loaded runs on exactly as the original — same events, same trace, same report — for every shipped
scenario, in this process and in a fresh one; a busy one refuses with NotQuiescent and changes nothing."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from controlplane.kernel import Kernel, NotQuiescent
from controlplane.scenario import parse_scenario
from controlplane.session.timetravel import snapshot
from controlplane.simulation import Simulation

from .factories import PROPERTY_MAX_PODS, rs_manifest, shipped

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = shipped(PROPERTY_MAX_PODS)
CHECKPOINTS = (0.25, 0.5, 0.75)  # fractions of a run's events after which a snapshot is taken


def started(name: str) -> Simulation:
    sim = Simulation.from_file(name)
    sim.keep_records()
    sim.start()
    return sim


def fingerprint(sim: Simulation) -> tuple[object, ...]:
    """Everything a run shows: its report, its clock and event count, its last trace records and
    every kept record (numbered, with its cause)."""
    log = sim.record_log
    assert log is not None
    page = sim.records(limit=1_000_000)
    return (sim.report_json(), sim.now, sim.kernel.events, list(sim.recent), page["total"], page["rows"])


@pytest.mark.parametrize("name", SHIPPED)
def test_a_snapshot_runs_on_exactly_as_the_original(name):
    whole = started(name)
    until = whole.scenario.until
    whole.run_until(until)
    total = whole.kernel.events

    stepping = started(name)
    loaded: list[tuple[int, Simulation]] = []
    for fraction in CHECKPOINTS:
        while stepping.kernel.events < total * fraction and stepping.step():
            pass
        while not snapshot.quiescent(stepping.kernel) and stepping.step():
            pass
        if stepping.kernel.events >= total:
            break
        loaded.append((stepping.kernel.events, snapshot.loads(snapshot.dumps(stepping))))
    stepping.run_until(until)
    expected = fingerprint(whole)
    assert fingerprint(stepping) == expected
    assert loaded, f"{name}: never quiescent after a quarter of its run"
    for events, sim in loaded:
        sim.run_until(until)
        assert fingerprint(sim) == expected, f"{name}: the snapshot at event {events} ran on differently"


def test_a_snapshot_runs_on_in_another_process_exactly_as_here(tmp_path):
    sim = started("demo")
    sim.run_until(20.0)
    while not snapshot.quiescent(sim.kernel):
        assert sim.step()
    path = tmp_path / "world.snapshot"
    path.write_bytes(snapshot.dumps(sim))
    sim.run_until(60.0)
    here = hashlib.sha256(sim.report_json().encode()).hexdigest()
    code = (
        "import hashlib, sys\n"
        "from controlplane.session.timetravel import snapshot\n"
        "sim = snapshot.loads(open(sys.argv[1], 'rb').read())\n"
        "sim.run_until(60.0)\n"
        "print(hashlib.sha256(sim.report_json().encode()).hexdigest())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120, check=True
    )
    assert out.stdout.strip() == here


def test_a_busy_world_refuses_and_runs_on_unchanged():
    busy = started("scale-up-and-down")
    calm = started("scale-up-and-down")
    refused = 0
    while busy.kernel.events < 3_000 and busy.step():
        calm.step()
        if not snapshot.quiescent(busy.kernel):
            with pytest.raises(NotQuiescent, match="task "):
                snapshot.dumps(busy)
            refused += 1
    assert refused > 0
    busy.run_until(busy.scenario.until)
    calm.run_until(calm.scenario.until)
    assert fingerprint(busy) == fingerprint(calm)


def test_the_shared_sentinels_stay_shared():
    from controlplane.garbagecollector import _NO_DEPENDENTS
    from controlplane.kernel import _NO_WAITERS
    from controlplane.workqueue.delaying_queue import _SUPERSEDED

    kernel = Kernel()
    future = kernel.create_future()
    loaded = snapshot.loads(snapshot.dumps([_NO_WAITERS, _NO_DEPENDENTS, _SUPERSEDED, future]))
    assert loaded[0] is _NO_WAITERS and loaded[1] is _NO_DEPENDENTS and loaded[2] is _SUPERSEDED
    assert loaded[3]._waiters is _NO_WAITERS  # a waiter added to one future is not every future's


def test_what_cannot_be_pickled_is_a_clear_error():
    async def lonely() -> None:
        return None

    coro = lonely()
    try:
        with pytest.raises(snapshot.SnapshotError, match=r"cannot snapshot: .*coroutine"):
            snapshot.dumps({"stray": coro})
    finally:
        coro.close()


def test_an_event_recorder_posting_is_parked_and_resumes_its_request():
    """Event recorders post through a rate-limited client: a task waiting for the limiter (a
    sleep) or for an answer (a future) is parked (controlplane.events declares it), so a world
    starting many pods is quiescent between its bursts; from there it runs on exactly."""
    doc = {
        "name": "many pods at once",
        "objects": [rs_manifest("web", 300)],
        "until": 20,
    }

    def fresh() -> Simulation:
        sim = Simulation(parse_scenario(doc))
        sim.keep_records()
        sim.start()
        return sim

    whole = fresh()
    whole.run_until(20.0)
    stepping = fresh()
    states: set[str] = set()
    loaded: list[Simulation] = []
    for _ in range(30_000):
        if len(states) == 2 or not stepping.step():
            break
        posting = {t.state for t in stepping.kernel.tasks if t.name.startswith("events/")} - states
        if posting and snapshot.quiescent(stepping.kernel):
            states |= posting
            loaded.append(snapshot.loads(snapshot.dumps(stepping)))
    assert states == {"sleeping", "waiting"}  # parked on the rate limiter, and on an answer
    for sim in loaded:
        sim.run_until(20.0)
        assert fingerprint(sim) == fingerprint(whole)


def test_run_to_quiet_applies_live_actions_at_their_turn_and_stops_only_at_quiescent_moments():
    """`Replay.run_to_quiet` goes event by event, each live action at the turn `run_to_events`
    gives it: every moment it stops at is quiescent and is the world a replay straight to that
    position reaches, and it ends where the session did."""
    from controlplane.simulation import Replay

    live = started("scale-up-and-down")
    live.run_until(5.0)
    live.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 6}})
    live.run_until(15.0)
    live.act({"podFault": {"selector": "app=web", "count": 2, "fault": "crash"}})
    live.run_until(30.0)
    end = live.position()
    stopping = Replay.from_recording(live.recording())
    stops = 0
    while stopping.run_to_quiet(end.events, end.time):
        assert snapshot.quiescent(stopping.sim.kernel)
        here = stopping.position()
        straight = Replay.from_recording(live.recording())
        straight.run_to_events(here.events, here.time, exact=True)  # the clock may stand past it
        assert straight.sim.report_json() == stopping.sim.report_json(), here
        stops += 1
        if here.events >= end.events:
            break
        stopping.run_to_time(here.time + 0.25)  # on, past this quiescent stretch
    assert stops > 10
    stopping.run_to_events(end.events, end.time, exact=True)
    assert stopping.position() == end
    assert stopping.sim.report_json() == live.report_json()


def test_a_reflector_backing_off_is_parked_and_lists_again_on_time():
    """A dropped watch sends its reflector into a back-off sleep before it lists again: parked
    (controlplane.informers.reflector declares it), so the world is quiescent then, and a
    snapshot taken there relists when the original does."""
    name = "lesson-leaked-expectations"  # drops the pods watch at t=30
    whole = started(name)
    whole.run_until(whole.scenario.until)
    stepping = started(name)
    loaded: Simulation | None = None
    for _ in range(100_000):
        if not stepping.step():
            break
        backing_off = [t for t in stepping.kernel.tasks if t.name.startswith("reflector/") and t.state == "sleeping"]
        if backing_off and snapshot.quiescent(stepping.kernel):
            loaded = snapshot.loads(snapshot.dumps(stepping))
            break
    assert loaded is not None, "no quiescent moment while a reflector backed off"
    loaded.run_until(whole.scenario.until)
    assert fingerprint(loaded) == fingerprint(whole)
    assert any(r["kind"] == "informer.relist" for r in loaded.records(limit=1_000_000)["rows"])

"""One stepping mechanism (controlplane/stepping.py): a live session's steps, the core's and a
replay's stop at the same positions, and a step back then forward returns where it started."""

from __future__ import annotations

import itertools
import math

import pytest

from controlplane.scenario import load_file
from controlplane.session.session import Session
from controlplane.simulation import Position, Replay, Simulation
from controlplane.stepping import StepError, Target, step_until

STEPS = ("stage", "stage", "stage", "sync", "stage", "stage", "sync", "sync", "stage", "stage", "stage", "sync")


def stepped(name: str, steps: tuple[str, ...]) -> tuple[Session, list[Position]]:
    """A live session of scenario `name`, stepped from its start: the position before the first
    step and after each."""
    s = Session("t", Simulation(load_file(name)), name=name, source=name)
    s.start()
    positions = [s.sim.position()]
    for what in steps:
        assert s.command({"op": "step", "what": what})["ok"]
        while s.busy:
            s.advance(math.inf, lambda: False)
        assert s.hit is not None and "not reached" not in s.hit["why"], s.hit
        positions.append(s.sim.position())
    return s, positions


@pytest.mark.parametrize("name", ["demo", "quota-slow-start"])
def test_a_live_session_and_a_replay_of_its_recording_step_forward_to_the_same_positions(name):
    live, positions = stepped(name, STEPS)
    recording = live.sim.recording()
    replay = Replay.from_recording(recording)
    for what, (at, landed) in zip(STEPS, itertools.pairwise(positions), strict=True):
        assert replay.next_mark(at, what, live.sim.now) == landed.events
    marks = replay.marks
    for landed in positions[1:]:
        again = Replay.from_recording(recording, marks=marks)
        assert again.run_to_events(landed.events, live.sim.now) == landed


@pytest.mark.parametrize("what", ["stage", "sync"])
def test_the_cores_step_stops_where_the_sessions_first_step_does(what):
    _, positions = stepped("quota-slow-start", (what,))
    sim = Simulation(load_file("quota-slow-start"))
    record = sim.step_stage() if what == "stage" else sim.step_sync()
    assert record is not None and sim.position() == positions[1]


@pytest.mark.parametrize("what", ["stage", "sync"])
def test_a_step_back_then_forward_returns_to_the_same_position(what):
    live, positions = stepped("quota-slow-start", (what,) * 8)
    recording = live.sim.recording()
    replay = Replay.from_recording(recording)
    replay.run_to_events(live.sim.kernel.events, live.sim.now)
    for landed in positions[2:]:
        back = replay.previous_stage(landed) if what == "stage" else replay.previous_sync(landed)
        assert back < landed.events
        origin = Replay.from_recording(recording, marks=replay.marks).run_to_events(back, landed.time)
        assert replay.next_mark(origin, what, live.sim.now) == landed.events


def test_step_until_stops_right_after_the_event_that_wrote_an_accepted_record():
    sim = Simulation(load_file("demo"))
    sim.start()
    record = step_until(sim, Target(frozenset({"sync.end"})), 1_000_000)
    assert record is not None and record["kind"] == "sync.end"
    assert sim.position().seq >= record["seq"]
    assert step_until(sim, Target(frozenset({"no.such.kind"})), 5) is None


def test_a_step_back_from_the_beginning_says_why():
    replay = Replay.from_recording(Simulation(load_file("demo")).recording())
    with pytest.raises(StepError, match="beginning"):
        replay.previous_event(Position(0, 0, 0.0))
    with pytest.raises(StepError, match="no sync stage before"):
        replay.previous_stage(Position(0, 0, 0.0))

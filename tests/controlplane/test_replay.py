"""Replay: a recorded session rebuilt to any of its positions is the session as it stood there,
byte for byte; the steps back are the inverses of the steps forward."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest
import yaml

from controlplane.scenario import ScenarioError, load_file
from controlplane.simulation import Position, Replay, ReplayError, Simulation, recording_of, run_scenario
from controlplane.stepping import StepError

SCENARIOS = ("demo", "quota-slow-start", "node-loss", "controller-restart")


def _owner(sim: Simulation) -> tuple[str, str, str]:
    """(kind, name, a label selector) of the scenario's first ReplicaSet or ReplicationController."""
    for manifest in sim.scenario.objects:
        if manifest["kind"] in ("ReplicaSet", "ReplicationController"):
            labels = manifest["spec"]["template"]["metadata"]["labels"]
            return manifest["kind"], manifest["metadata"]["name"], ",".join(f"{k}={v}" for k, v in labels.items())
    raise AssertionError("no owner in the scenario")


def _dump(sim: Simulation) -> str:
    return json.dumps(sim.snapshot(), sort_keys=True, default=str) + sim.report_json()


def live_session(name: str) -> tuple[Simulation, list[tuple[Position, str]]]:
    """A session driven as the dashboard drives one — run, steps that stop mid-instant, actions at
    odd times — sampling (position, world) as it goes."""
    sim = Simulation(load_file(name))
    sim.start()
    kind, owner, selector = _owner(sim)
    samples: list[tuple[Position, str]] = []

    def sample() -> None:
        samples.append((sim.position(), _dump(sim)))

    sim.run_until(0.4137)
    sample()
    for _ in range(7):
        sim.step()  # mid-instant, often
        sample()
    sim.act({"scale": {"kind": kind, "name": owner, "replicas": 7}})
    sample()
    sim.step_stage()
    sample()
    sim.step_stage()
    sample()
    sim.act({"apiFault": {"verb": "create", "resource": "pods", "after": 1, "count": 2, "code": 403}})
    sim.step_sync()
    sample()
    sim.run_until(3.0071)
    sample()
    sim.act({"podFault": {"selector": selector, "count": 1, "fault": "crash"}})
    sim.act({"config": {"watchLatency": 0.2}})
    sample()
    sim.run_until(12.5)
    sim.step()
    sample()
    sim.act({"scale": {"kind": kind, "name": owner, "replicas": 2}})
    sim.run_until(25.25)
    sample()
    return sim, samples


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_replay_reaches_every_sampled_position_with_the_identical_world(name):
    live, samples = live_session(name)
    recording = json.loads(json.dumps(live.recording()))  # as it crosses a process boundary
    for position, world in samples:
        replay = Replay.from_recording(recording)
        assert replay.run_to_events(position.events, position.time, exact=True) == position
        assert _dump(replay.sim) == world
    # One replay moved forward through all of them (moving forward is incremental).
    replay = Replay.from_recording(recording)
    for position, world in samples:
        assert replay.run_to_events(position.events, position.time, exact=True) == position
        assert _dump(replay.sim) == world


@pytest.mark.parametrize("name", SCENARIOS[:2])
def test_a_replay_to_a_trace_record_lands_right_after_the_event_that_wrote_it(name):
    live, samples = live_session(name)
    recording = live.recording()
    for position, world in samples:
        replay = Replay.from_recording(recording)
        reached = replay.run_to_seq(position.seq, position.time)
        assert reached.seq >= position.seq
        assert reached.events <= position.events
        if reached.events == position.events and reached.time == position.time:
            assert _dump(replay.sim) == world


def test_a_replay_to_a_time_is_the_headless_run_to_that_time(tmp_path):
    live, _ = live_session("demo")
    live.finish_instant()
    path = tmp_path / "session.yaml"
    path.write_text(yaml.safe_dump(live.export_scenario(), sort_keys=False))
    for t in (0.0, 2.5, 3.0071, 17.0, 25.25):
        replay = Replay.from_recording(live.recording())
        replay.run_to_time(t)
        assert replay.sim.report_json() == json.dumps(run_scenario(str(path), until=t), separators=(",", ":"))


def test_stepping_back_one_event_lands_where_the_forward_step_came_from():
    live = Simulation(load_file("demo"))
    live.run_until(1.0)
    for _ in range(3):
        live.step()
    before, world = live.position(), _dump(live)
    live.step()
    replay = Replay.from_recording(live.recording())
    replay.run_to_events(live.position().events, live.now)
    target = replay.previous_event(live.position())
    again = Replay.from_recording(live.recording())
    assert again.run_to_events(target, before.time) == before
    assert _dump(again.sim) == world


def test_stepping_back_a_stage_inverts_the_forward_stage_step():
    live = Simulation(load_file("quota-slow-start"))
    live.run_until(0.2)
    origins = []
    for _ in range(12):
        live.step_stage()
        origins.append((live.position(), _dump(live)))
    replay = Replay.from_recording(live.recording())
    replay.run_to_time(live.now)
    for (origin, world), (landed, _) in itertools.pairwise(origins):
        target = replay.previous_stage(landed)
        assert target == origin.events
        again = Replay.from_recording(live.recording(), marks=replay.marks)
        again.run_to_events(target, landed.time)
        assert _dump(again.sim) == world
        # and forward again lands on the stage it came back from
        assert replay.next_mark(origin, "stage", live.now) == landed.events


def test_stepping_back_over_a_sync_restores_the_queue_before_it():
    live = Simulation(load_file("demo"))
    live.run_until(0.01)
    live.step_sync()
    end = live.position()
    replay = Replay.from_recording(live.recording())
    replay.run_to_events(end.events, end.time, exact=True)
    ended = next(m for m in reversed(replay.marks) if m.kind == "sync.end")
    target = replay.previous_sync(end)
    again = Replay.from_recording(live.recording())
    again.run_to_events(target, end.time)
    queue = again.sim.controllers[ended.controller].queue.snapshot()
    assert ended.key in queue["queue"]
    # right before the worker took that key: one event later it is no longer queued
    again.sim.step()
    assert ended.key not in again.sim.controllers[ended.controller].queue.snapshot()["queue"]


def test_positions_a_replay_cannot_reach_are_refused_with_a_reason():
    live = Simulation(load_file("demo"))
    live.run_until(2.0)
    replay = Replay.from_recording(live.recording())
    replay.run_to_time(1.0)
    with pytest.raises(ReplayError, match="behind"):
        replay.run_to_time(0.5)
    with pytest.raises(ReplayError, match="events"):
        Replay.from_recording(live.recording()).run_to_events(live.kernel.events + 10**6, 2.0)
    with pytest.raises(StepError, match="beginning"):
        replay.previous_event(Position(0, 0, 0.0))


@pytest.mark.parametrize("name", SCENARIOS)
def test_one_replay_path_and_the_export_replays_to_the_same_report(name, tmp_path):
    """Every past is rebuilt by replaying the recording (`Replay.from_recording`): of a live
    session (`Simulation.recording(until=T)`: a fork, report.json?at=T) or of a stored one
    (`recording_of` its start, log and pending: a restore, a re-open). The export (the session cut
    at T) is a download format: run headless to T it gives the report the recording's replay
    gives at T, byte for byte; and the replay gives the recorded action log back (`reproduces`),
    who acted included."""
    live, _ = live_session(name)
    live.finish_instant()
    stored = json.loads(json.dumps([live.start_data(), live.actions]))
    for t in (0.0, 0.4137, 3.0071, 12.5, 25.25):
        cut = live.export_scenario(at=t)
        path = tmp_path / f"cut-{t}.yaml"
        path.write_text(yaml.safe_dump(cut, sort_keys=False))
        exported = json.dumps(run_scenario(str(path), until=t), separators=(",", ":"))
        recording = json.loads(json.dumps(live.recording(until=t)))
        entries = [e for e in stored[1] if e["time"] <= t]
        stored_form = recording_of(stored[0], entries, live.timeline_pending)  # (stored: no `until`)
        scenario = {k: v for k, v in recording["scenario"].items() if k != "until"}
        assert stored_form == {**recording, "scenario": scenario}
        from_recording = Replay.from_recording(recording, index=False)
        from_recording.run_to_time(t)
        assert from_recording.sim.report_json() == exported
        history = [dict(e, source="someone") for e in live.actions if e["time"] <= t]
        assert from_recording.reproduces(history) is None
        assert [e.get("source") for e in from_recording.sim.actions] == ["someone"] * len(history)
        assert from_recording.marks == []  # index=False: no sync index kept (a restore never steps back)
        # The report of the past the dashboard serves: the same replay, in a process of its own.
        child = subprocess.run(
            [sys.executable, "-m", "controlplane", "replay", "-", "--until", repr(t)],
            input=json.dumps(recording).encode(),
            capture_output=True,
            check=False,
        )
        assert child.returncode == 0 and child.stdout.decode() == exported + "\n", child.stderr


def test_a_stored_recording_tells_its_timeline_from_the_live_actions():
    """`recording_of` finds the file's own timeline actions in the log by time and body, also
    when a live action repeats one at its instant (after it: the timeline's comes first) or
    claims the timeline's source."""
    sim = Simulation(load_file("scale-up-and-down"))  # its file scales web at t=10, 12 and 40
    sim.start()
    sim.run_until(10.0)
    first = {k: v for k, v in sim.scenario.actions[0].items() if k != "at"}
    assert sim.act(first, source="scenario")["ok"]  # the file's action again, at its own instant
    sim.run_until(11.0)
    assert sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 4}})["ok"]
    sim.run_until(20.0)
    start, log = json.loads(json.dumps([sim.start_data(), sim.actions]))
    got = recording_of(start, log, sim.timeline_pending)
    assert got["actions"] == json.loads(json.dumps(sim.recording()["actions"]))
    assert [(e["time"], e["source"]) for e in got["actions"]] == [(10.0, "scenario"), (11.0, "user")]


@pytest.mark.parametrize(
    ("recording", "reason"),
    [
        ([], "a recording is a mapping: scenario, seed, actions"),
        ({"scenario": {"name": "x"}, "tape": []}, "tape: not a field of a recording (scenario, seed, actions)"),
        ({"scenario": "x"}, "scenario: required, a mapping (a scenario file's fields)"),
        ({"scenario": {"name": "x"}, "seed": -1}, "seed: must be a whole number from 0 to 9223372036854775807, not -1"),
        ({"scenario": {"name": "x"}, "actions": {}}, "actions: must be a list of {time, source, action}"),
        (
            {"scenario": {"name": "x"}, "actions": [{"time": float("nan"), "action": {}}]},
            "actions[0].time: must be a finite number of seconds >= 0",
        ),
        (
            {
                "scenario": {"name": "x"},
                "actions": [{"time": 2, "action": {"config": {}}}, {"time": 1, "action": {"config": {}}}],
            },
            "actions[1].time: 1 is before the previous action's (2)",
        ),
        (
            {"scenario": {"name": "x"}, "actions": [{"time": 1, "action": {"scale": {}}}]},
            "actions[0].action: scale.kind: required",
        ),
    ],
)
def test_a_recording_that_is_not_one_is_refused_naming_the_field(recording, reason):
    with pytest.raises(ScenarioError) as caught:
        Replay.from_recording(recording)
    assert str(caught.value) == reason
    child = subprocess.run(
        [sys.executable, "-m", "controlplane", "replay", "-", "--until", "1"],
        input=json.dumps(recording).encode(),
        capture_output=True,
        check=False,
    )
    assert child.returncode == 2 and child.stderr.decode() == reason + "\n" and child.stdout == b""


def test_reproduces_names_the_first_entry_the_replay_did_not_give_back():
    live, _ = live_session("demo")
    live.finish_instant()
    t = 12.5
    replay = Replay.from_export(live.export_scenario(at=t))
    replay.run_to_time(t)
    history = [dict(e) for e in live.actions if e["time"] <= t]
    assert len(history) >= 3
    changed = [dict(e) for e in history]
    changed[2] = {**changed[2], "time": changed[2]["time"] + 1.0}
    assert replay.reproduces(changed) == 2
    assert replay.reproduces([*history, {"time": t, "action": {"config": {"workers": 9}}, "ok": True}]) == len(history)
    assert replay.reproduces(history) is None

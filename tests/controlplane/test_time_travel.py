"""The world at any past moment (docs/time-travel.md): a session cut at T (`export_scenario(at=T)`,
`cut_scenario`) runs headless to T into the report the session gave at T, byte for byte."""

from __future__ import annotations

import json

import pytest
import yaml

from controlplane.runner import run
from controlplane.scenario import load_scenario
from controlplane.simulation import Simulation, cut_scenario

from .factories import PROPERTY_MAX_PODS, rs_manifest, shipped


def headless(export: dict, until: float) -> str:
    """What `python -m controlplane run <the exported file> --until T` prints (without its newline)."""
    scenario = load_scenario(yaml.safe_dump(export, sort_keys=False, allow_unicode=True))
    return json.dumps(run(scenario, until=until).report, separators=(",", ":"))


def live_report(sim: Simulation) -> str:
    sim.finish_instant()
    return json.dumps(sim.report(), separators=(",", ":"))


def small_session() -> Simulation:
    scenario = load_scenario(
        yaml.safe_dump(
            {
                "seed": 3,
                "objects": [rs_manifest("web", 2)],
                "actions": [
                    {"at": 1.0, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 4}},
                    {"at": 9.0, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 1}},
                ],
            }
        )
    )
    sim = Simulation(scenario)
    sim.run_until(2.0)
    sim.act({"podFault": {"selector": "app=web", "count": 1, "fault": "crash"}})
    sim.run_until(3.0)
    return sim


def test_export_at_now_is_the_export():
    sim = small_session()
    assert sim.export_scenario(at=sim.now) == sim.export_scenario()


def test_the_cut_keeps_what_was_applied_by_t_and_the_timeline_still_to_come():
    sim = small_session()
    cut = sim.export_scenario(at=1.5)
    assert cut["until"] == 1.5
    assert [a["at"] for a in cut["actions"]] == [1.0, 9.0]
    assert cut["actions"][0]["scale"]["replicas"] == 4
    assert "at t=1.500 s" in cut["description"]
    # Before the file's first action: nothing applied, the whole timeline to come.
    assert [a["at"] for a in sim.export_scenario(at=0.5)["actions"]] == [1.0, 9.0]
    # After the live podFault: it is in, at its time, between the file's two.
    assert [next(k for k in a if k != "at") for a in sim.export_scenario(at=2.5)["actions"]] == [
        "scale",
        "podFault",
        "scale",
    ]


def test_cut_scenario_of_a_recording_is_the_simulation_s_own_cut():
    sim = small_session()
    for at in (0.0, 1.0, 2.0, 2.5, 3.0):
        assert cut_scenario(sim.start_data(), sim.actions, sim.timeline_pending, at) == sim.export_scenario(at=at)


def test_a_timeline_action_still_pending_at_the_end_of_the_log_is_kept():
    sim = small_session()
    # The log ends at 3.0 with the t=9 action pending; cut at 3.0 it must still come.
    start = sim.start_data()
    assert [a["at"] for a in cut_scenario(start, sim.actions, [1], 3.0)["actions"]][-1] == 9.0
    # An action at exactly the cut's time that had not run yet (a paused, unfinished instant)
    # is kept as pending, not lost.
    start["actions"].append({"at": 3.0, "config": {"workers": 2}})
    cut = cut_scenario(start, sim.actions, [1, 2], 3.0)
    assert {"at": 3.0, "config": {"workers": 2}} in cut["actions"]
    assert {"at": 3.0, "config": {"workers": 2}} not in cut_scenario(start, sim.actions, [1], 3.0)["actions"]


@pytest.mark.parametrize("at", [-1.0, float("nan"), float("inf"), 3.5, "2", True])
def test_export_at_refuses_a_time_outside_the_past(at):
    sim = small_session()
    with pytest.raises(ValueError, match=r"^at: "):
        sim.export_scenario(at=at)


CUTS = (0.0, 1.5, 4.0)
END = 6.0


@pytest.mark.parametrize("name", shipped(PROPERTY_MAX_PODS))
def test_every_shipped_scenario_cut_at_t_replays_to_the_report_it_gave_at_t(name):
    """The contract of docs/time-travel.md, in-process: a live session with actions of its own, its
    report taken at several T on the way, then cut at each T after the fact."""
    sim = Simulation.from_file(name)
    seen: dict[float, str] = {}
    for at in CUTS:
        if at == 4.0:
            sim.run_until(2.25)
            sim.act({"apiFault": {"verb": "create", "resource": "pods", "count": 1, "code": 500}})
            sim.act({"config": {"workers": 2}})
        sim.run_until(at)
        if at == 1.5:
            # An action at T is part of the world at T (it is applied at the end of T's instant).
            sim.act({"watchFault": {"resource": "pods", "fault": "drop"}})
        seen[at] = live_report(sim)
    sim.run_until(END)
    for at, report in seen.items():
        assert headless(sim.export_scenario(at=at), at) == report, f"{name} at t={at}"


def test_the_cli_reads_the_cut_from_stdin_and_prints_the_same_report():
    import subprocess
    import sys

    sim = small_session()
    cut = yaml.safe_dump(sim.export_scenario(at=2.5), sort_keys=False, allow_unicode=True)
    done = subprocess.run(
        [sys.executable, "-m", "controlplane", "run", "-", "--until", "2.5"],
        input=cut.encode(),
        capture_output=True,
        check=True,
    )
    assert done.stdout.decode() == headless(sim.export_scenario(at=2.5), 2.5) + "\n"
    bad = subprocess.run([sys.executable, "-m", "controlplane", "run", "-"], input=b"objects: 3\n", capture_output=True)
    assert bad.returncode == 2
    assert bad.stderr.decode().strip() == "objects: must be a list, not number"

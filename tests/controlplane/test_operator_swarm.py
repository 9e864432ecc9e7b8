"""The fault swarm on operator worlds (issue 30): faults aimed at an operator, its own oracles,
and the planted bug of examples/kopf-operator-buggy found, shrunk and replayed headless."""

from __future__ import annotations

import io
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("kopf")

from controlplane.operators.oracle import oracle
from controlplane.scenario import ScenarioError, parse_scenario
from controlplane.swarm import generate, run_scenario_checked
from controlplane.world import Simulation
from faultswarm.cli import _dump, main, parse_base
from faultswarm.tasks import run_seed

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUGGY = "examples/kopf-operator-buggy/scenario.yaml"
ORACLE = "sidecars:one-sidecar-per-replicaset"
QUIET = 60.0


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # operator modules are paths relative to where the run starts


def _world(actions: list[dict], until: float = 20.0) -> dict:
    base = parse_base(BUGGY)
    return {
        "name": "t",
        "seed": 5,
        "operators": base["operators"],
        "objects": base["objects"],
        "actions": actions,
        "until": until,
    }


def test_the_swarm_finds_the_planted_bug_shrinks_it_and_the_scenario_replays_headless(tmp_path: pathlib.Path) -> None:
    base = parse_base(BUGGY)
    failing = None
    for seed in range(1, 9):
        outcome = run_seed(seed, QUIET, {}, False, True, base)
        if outcome["violations"]:
            failing = outcome
            break
    assert failing is not None, "no seed in 1-8 found the planted bug"
    assert failing["violations"][0]["oracle"] == ORACLE
    assert "sidecars:" in failing["violations"][0]["message"]
    shrunk = failing["shrunk"]
    assert shrunk["operators"] == base["operators"]
    assert len(shrunk["actions"]) <= len(failing["scenario"]["actions"])
    path = tmp_path / "shrunk.yaml"
    _dump(path, shrunk, failing["violations"][0], QUIET)
    done = subprocess.run(
        [sys.executable, "-m", "controlplane", "swarm", "--replay", str(path), "--quiet", f"{QUIET:g}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"VIOLATION {ORACLE}" in done.stdout and "has 2 sidecars" in done.stdout
    ran = subprocess.run(
        [sys.executable, "-m", "controlplane", "run", str(path)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert ran.returncode == 0, ran.stderr


def test_operator_faults_are_drawn_and_lifted_and_other_cases_are_unchanged() -> None:
    base = parse_base(BUGGY)
    plain, with_ops = generate(3), generate(3, base=base)
    assert plain.operators == [] and "operators" not in plain.scenario()
    assert [a for a in with_ops.chaos if a in plain.chaos] == plain.chaos
    aimed = [a for a in with_ops.chaos if a not in plain.chaos]
    assert aimed
    drawn = set()
    for seed in range(1, 30):
        case = generate(seed, base=base)
        for action in case.chaos:
            body = action.get("controllerFault") or action.get("apiFault") or action.get("watchFault") or {}
            if body.get("operator") == "sidecars":
                drawn.add(body["fault"])
            if body.get("client") == "kopf/sidecars":
                drawn.add("watch" if "fault" in body else "api")
        parse_scenario(case.scenario())  # every case is a valid scenario
        lift = case.lift()
        if any(a.get("controllerFault", {}).get("fault") == "slow" for a in case.chaos):
            assert {
                "at": case.lift_time,
                "controllerFault": {"operator": "sidecars", "fault": "slow", "seconds": 0},
            } in lift
    assert drawn == {"restart", "slow", "watch", "api"}


def test_an_operator_world_passes_the_determinism_oracle() -> None:
    base = parse_base(BUGGY)
    outcome = run_seed(5, QUIET, {}, True, False, base)
    assert "determinism" in outcome["checked"]
    assert not [v for v in outcome["violations"] if v["oracle"] == "determinism"], outcome["violations"]


def test_slow_handlers_are_charged_a_seeded_duration_and_lifted() -> None:
    records: list[dict] = []
    slow = {"at": 0, "controllerFault": {"operator": "sidecars", "fault": "slow", "seconds": 10}}

    def run() -> list[dict]:
        sim = Simulation(parse_scenario(_world([slow])), trace_buffer=64)
        got: list[dict] = []
        sim.subscribe(lambda r: got.append(dict(r)) if r["kind"] == "operator.handler" else None)
        sim.start()
        sim.run_until(20)
        sim.close()
        return got

    records = run()
    assert records and records[0]["outcome"] == "success"
    # The handler itself takes 2 s (its SETTLE); the charge comes on top, at most 10 s.
    took = records[0]["time"] - records[0]["started"]
    assert 2.0 < took <= 2.0 + 10.0 + 0.1
    assert run() == records  # seeded: the same again


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"operator": "sidecars", "fault": "slow"}, "seconds: is required"),
        ({"operator": "sidecars", "fault": "slow", "seconds": -1}, "seconds: must be >= 0"),
        ({"operator": "sidecars", "fault": "slow", "seconds": 1e9}, "seconds: must be <= 3600"),
        ({"operator": "sidecars", "fault": "restart", "seconds": 1}, "seconds: only goes with fault: slow"),
        ({"operator": "sidecars", "fault": "boom"}, "fault: must be one of restart, slow"),
    ],
)
def test_slow_is_validated(body: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(")):
        parse_scenario(_world([{"at": 1, "controllerFault": body}]))


def test_an_oracle_that_raises_is_its_own_violation(tmp_path: pathlib.Path) -> None:
    module = tmp_path / "raising.py"
    module.write_text(
        "import kopf\n"
        "from controlplane.operators.oracle import oracle\n"
        "@oracle('never-raises')\n"
        "def never(store):\n"
        "    return 1 / len(store.list('nodes', namespace='nowhere'))\n"
    )
    scenario = {"name": "t", "seed": 1, "operators": [{"module": str(module)}], "until": 5}
    result = run_scenario_checked(scenario, lift_time=0, quiet=5)
    assert "raising:never-raises" in result.checked
    assert next(str(v) for v in result.violations if v.oracle == "raising:never-raises").endswith(
        "the oracle raised ZeroDivisionError: division by zero"
    )


def test_oracle_names_are_checked_when_declared() -> None:
    with pytest.raises(ValueError, match="DNS label"):
        oracle("Not A Label")


def test_base_without_operators_is_a_usage_error(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text("name: p\nuntil: 5\n")
    err = io.StringIO()
    assert main(["--seeds", "1", "--base", str(path)], stdout=io.StringIO(), stderr=err) == 2
    assert "has no operators" in err.getvalue()

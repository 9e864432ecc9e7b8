"""The fault swarm (issue 9 §1): generation is pure and covers the vocabulary, a case is an
ordinary scenario, the shrinker keeps a failure while making the case smaller, and the CLI runs
20 seeds on the local pool and a few on a Dask LocalCluster."""

import io
import json

import pytest
import yaml

from controlplane import __main__ as controlplane_main
from controlplane.oracles import ORACLES
from controlplane.scenario import ACTION_VERBS, POD_FAULTS, load_scenario, parse_scenario
from controlplane.simulation import Simulation
from controlplane.swarm import DEFAULT_QUIET, SWARM_RESYNC_PERIOD, Case, generate, run_case, shrink
from faultswarm import cli


def test_generation_is_a_pure_function_of_the_seed():
    assert generate(7).scenario() == generate(7).scenario()
    assert generate(7).scenario() != generate(8).scenario()


def test_every_case_is_a_valid_scenario_that_ends_by_lifting_every_fault():
    for seed in range(1, 40):
        case = generate(seed)
        data = case.scenario()
        parsed = parse_scenario(json.loads(json.dumps(data)))
        assert parsed.config["resyncPeriod"] == SWARM_RESYNC_PERIOD
        lift = [a for a in data["actions"] if a["at"] == case.lift_time]
        if any("apiFault" in a for a in case.chaos):
            assert {"at": case.lift_time, "liftFault": {"apiFault": "all"}} in lift
        assert data["until"] == case.lift_time + DEFAULT_QUIET + 2 * SWARM_RESYNC_PERIOD


def test_the_seeds_cover_the_whole_action_vocabulary():
    verbs, pod_faults, codes, watch_faults = set(), set(), set(), set()
    for seed in range(1, 120):
        for action in generate(seed).chaos:
            verb = next(k for k in action if k != "at")
            verbs.add(verb)
            if verb == "podFault":
                pod_faults.add(action[verb]["fault"])
            if verb == "apiFault":
                codes.add(action[verb]["code"])
            if verb == "watchFault":
                watch_faults.add(action[verb]["fault"])
    assert verbs == set(ACTION_VERBS)
    assert pod_faults == set(POD_FAULTS)
    assert {409, 422, 429, 500, 403, 404} <= codes
    assert watch_faults == {"pause", "resume", "drop"}


def test_config_overrides_reach_the_case():
    case = generate(3, config={"resyncPeriod": 0.0, "whatIf": {"expectations": False}})
    assert case.config["resyncPeriod"] == 0.0
    assert case.config["whatIf"]["expectations"] is False


def test_a_case_runs_through_the_ordinary_runner_to_the_same_report():
    case = generate(5)
    sim = Simulation(parse_scenario(case.scenario()))
    sim.start()
    sim.run_until(case.scenario()["until"])
    again = Simulation(load_scenario(yaml.safe_dump(case.scenario())))
    again.start()
    again.run_until(case.scenario()["until"])
    assert sim.report() == again.report()


def test_a_clean_case_checks_every_oracle_family():
    result = run_case(generate(2), digest=True)
    assert result.violations == []
    assert {"resource-versions", "esr-quiescent", "no-crash"} <= set(result.checked)
    assert result.digest == run_case(generate(2), digest=True).digest


def test_a_crash_the_simulation_contains_is_still_a_no_crash_violation(monkeypatch):
    from controlplane.replicaset import ReplicaSetController

    async def broken(self, *args, **kwargs):
        raise KeyError("spec")

    monkeypatch.setattr(ReplicaSetController, "manage_replicas", broken)
    case = next(generate(seed) for seed in range(1, 50) if generate(seed).scenario().get("objects"))
    result = run_case(case)
    crashes = [v for v in result.violations if v.oracle == "no-crash"]
    assert crashes and crashes[0].message == "KeyError: 'spec' (contained: sync)"


def test_a_short_quiet_period_makes_liveness_fail_and_the_shrinker_keeps_the_failure():
    failing = next(
        (case, result)
        for seed in range(1, 60)
        if (result := run_case(case := generate(seed, quiet=0.5))).violations
        and result.violations[0].oracle.startswith("esr-")
    )
    case, result = failing
    oracle = result.violations[0].oracle

    def fails(candidate: Case) -> bool:
        return any(v.oracle == oracle for v in run_case(candidate).violations)

    small = shrink(case, fails, budget=60)
    assert fails(small)
    assert len(small.chaos) <= len(case.chaos)
    assert len(small.objects) <= len(case.objects)


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_the_swarm_cli_runs_20_seeds_clean_on_the_local_pool(tmp_path):
    code, out, err = run_cli(
        "--seeds", "1-20", "--workers", "2", "--no-progress", "--twice-every", "10", "--out", str(tmp_path)
    )
    assert code == 0, out + err
    assert "resyncPeriod 60 s (finite by default" in err
    assert "seeds run      20 of 20" in out
    assert "seeds/minute" in out
    assert "determinism    2 seeds run twice" in out
    for oracle in ORACLES:
        assert oracle in out
    assert "OK: 0 violations" in out
    assert list(tmp_path.iterdir()) == []


def test_the_swarm_cli_writes_replayable_failures_and_exits_1(tmp_path):
    code, out, _ = run_cli(
        "--seeds",
        "1-6",
        "--workers",
        "1",
        "--quiet",
        "0.5",
        "--no-progress",
        "--twice-every",
        "0",
        "--out",
        str(tmp_path),
    )
    assert code == 1
    assert "FAIL seed" in out and "replay:" in out
    written = sorted(tmp_path.glob("swarm-seed-*.yaml"))
    assert written
    replay_code, replay_out, _ = run_cli("--replay", str(written[0]), "--quiet", "0.5")
    assert replay_code == 1
    assert "VIOLATION esr-" in replay_out
    # The file is an ordinary scenario: the runner (and the dashboard's upload) takes it as is.
    assert load_scenario(written[0].read_text()).actions


def test_the_swarm_cli_shrinks_a_failure(tmp_path):
    seed = next(s for s in range(1, 60) if run_case(generate(s, quiet=0.5)).violations)
    code, out, _ = run_cli(
        "--seeds", str(seed), "--workers", "1", "--quiet", "0.5", "--shrink", "--no-progress", "--out", str(tmp_path)
    )
    assert code == 1
    shrunk = list(tmp_path.glob("*.shrunk.yaml"))
    assert len(shrunk) == 1 and "shrunk:" in out
    assert run_cli("--replay", str(shrunk[0]), "--quiet", "0.5")[0] == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "10-1"], "--seeds"),
        (["--seeds", "x"], "--seeds"),
        (["--config", "workers=0"], "--config.workers: must be >= 1"),
        (["--config", "nope"], "KEY=VALUE"),
        (["--quiet", "nan"], "--quiet"),
        (["--workers", "0"], "--workers"),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv, message):
    code, _, err = run_cli(*argv)
    assert code == 2
    assert message in err and err.count("\n") == 1


def test_python_m_controlplane_swarm_forwards_to_the_host(capsys, tmp_path):
    code = controlplane_main.main(["swarm", "--seeds", "1", "--workers", "1", "--no-progress", "--out", str(tmp_path)])
    assert code == 0
    assert "seeds run      1 of 1" in capsys.readouterr().out


def test_the_dask_path_runs_the_same_seeds_on_a_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        code, out, err = run_cli(
            "--seeds", "1-3", "--scheduler", cluster.scheduler_address, "--no-progress", "--twice-every", "3",
            "--out", str(tmp_path),
        )  # fmt: skip
    assert code == 0, out + err
    assert f"Dask cluster {cluster.scheduler_address}" in err
    assert "seeds run      3 of 3" in out
    assert "determinism    1 seeds run twice" in out

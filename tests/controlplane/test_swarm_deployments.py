"""The fault swarm with the Deployment controller on (`--controllers …,deployment`, issue 28 §4):
Deployments, their rollouts and faults aimed at them are drawn from a stream of their own, so a
seed's case without them is unchanged, and the rollout oracles judge the runs."""

import io
import json

from controlplane.controllers.registry import DEPLOYMENT, REGISTRY
from controlplane.oracles import ROLLOUT_LIVENESS, ROLLOUT_SAFETY
from controlplane.scenario import parse_scenario
from controlplane.swarm import generate, run_case
from faultswarm import cli

WITH_DEPLOYMENTS = {"controllers": [*REGISTRY.default_names(), DEPLOYMENT.name]}


def deployments(case):
    return [o for o in case.objects if o["kind"] == DEPLOYMENT.kind]


def test_without_the_deployment_controller_no_deployment_is_drawn():
    for seed in range(1, 30):
        case = generate(seed)
        assert deployments(case) == []
        targets = [body.get("kind") for a in case.chaos for body in a.values() if isinstance(body, dict)]
        assert DEPLOYMENT.kind not in targets
        assert DEPLOYMENT.name not in json.dumps(case.chaos)


def test_the_deployments_are_added_to_the_case_the_seed_gives_without_them():
    for seed in range(1, 30):
        plain, rollout = generate(seed), generate(seed, config=WITH_DEPLOYMENTS)
        assert deployments(rollout)
        assert rollout.objects[: len(plain.objects)] == plain.objects
        # The case's own chaos, in its order, with the Deployments' actions among it.
        rest = iter(rollout.chaos)
        assert all(any(action == other for other in rest) for action in plain.chaos)
        assert rollout.config == {**plain.config, **WITH_DEPLOYMENTS}


def test_every_deployment_case_is_a_valid_scenario_and_resumes_what_it_paused():
    for seed in range(1, 40):
        case = generate(seed, config=WITH_DEPLOYMENTS)
        data = case.scenario()
        parse_scenario(json.loads(json.dumps(data)))
        paused: dict[str, bool] = {}
        for action in data["actions"]:
            patch = action.get("patch") or {}
            if patch.get("kind") == DEPLOYMENT.kind and "paused" in (patch["patch"].get("spec") or {}):
                paused[patch["name"]] = patch["patch"]["spec"]["paused"]
                assert action["at"] <= case.lift_time
        assert not any(paused.values())


def test_deployment_cases_run_clean_under_every_oracle():
    checked = set()
    for seed in range(1, 13):
        result = run_case(generate(seed, config=WITH_DEPLOYMENTS))
        assert [str(v) for v in result.violations] == [], seed
        checked |= set(result.checked)
    assert {"rollout-surge", "rollout-hash-unique", "rollout-complete", "rollout-history"} <= checked
    assert set(ROLLOUT_SAFETY) | set(ROLLOUT_LIVENESS) >= {o for o in checked if o.startswith("rollout-")}


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_the_cli_runs_deployment_cases(tmp_path):
    names = ",".join(WITH_DEPLOYMENTS["controllers"])
    code, out, err = run_cli(
        "--seeds",
        "1-4",
        "--workers",
        "1",
        "--no-progress",
        "--twice-every",
        "0",
        "--controllers",
        names,
        "--out",
        str(tmp_path),
    )
    assert code == 0, out + err
    assert "rollout-complete" in out and "OK: 0 violations" in out


def test_the_cli_refuses_an_unknown_controller_with_one_line():
    code, _, err = run_cli("--controllers", "replicaset,nope")
    assert code == 2
    assert "--controllers" in err and "nope" in err and err.count("\n") == 1

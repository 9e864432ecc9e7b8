"""The pytest plugin (controlplane/pytest_plugin.py, entry point pytest11): `*.scenario.yaml`
files are test items; a failure shows the failed checks and the replay command. Each test runs
pytest in a subprocess, as a user would (in-process, the outer run's Playwright plugin interferes)."""

import pathlib

import yaml

pytest_plugins = ["pytester"]

BASE = pathlib.Path(__file__).parent / "data" / "checks-base.yaml"
NODES = {"count": {"kind": "Node"}, "equals": 3}


def scenario(expect):
    data = yaml.safe_load(BASE.read_text())
    data["expect"] = expect
    return yaml.safe_dump(data, sort_keys=False)


def test_scenario_files_are_collected_one_item_each_without_a_conftest(pytester):
    pytester.makefile(".scenario.yaml", web=scenario([NODES]))
    pytester.makefile(".yaml", other=scenario([NODES]))
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    result.stdout.fnmatch_lines(["web.scenario.yaml::web"])
    assert "other" not in result.stdout.str()


def test_passing_failing_and_invalid_scenarios_with_readable_failures(pytester):
    pytester.makefile(
        ".scenario.yaml",
        good=scenario([NODES]),
        bad=scenario(
            [NODES, {"at": 10, "object": "ReplicaSet/default/web", "path": "status.readyReplicas", "equals": 5}]
        ),
        broken=scenario([{"count": {"phase": "Runing"}, "equals": 1}]),
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "scenario checks failed: " in out
    assert (
        "1 of 2 checks failed:\n  expect[1] ReplicaSet/default/web status.readyReplicas @ t=10: wanted == 5, got 4\n"
        in out
    )
    assert "replay: python -m controlplane run " in out
    assert "invalid scenario: " in out
    assert "broken.scenario.yaml: expect[0].count.phase: must be one of" in out
    assert "Traceback" not in out


def test_a_compare_file_is_two_items_one_per_side_each_judging_its_checks(pytester):
    data = yaml.safe_load(scenario([NODES]))
    data["compare"] = {"a": {"label": "one", "config": {"workers": 1}}, "b": {"config": {"workers": 2}}}
    data["expect"] += [
        {"side": "a", "count": {"kind": "Node"}, "equals": 3},
        {"side": "b", "count": {"kind": "Node"}, "equals": 9},
    ]
    pytester.makefile(".scenario.yaml", pair=yaml.safe_dump(data, sort_keys=False))
    result = pytester.runpytest_subprocess("-v")
    result.stdout.fnmatch_lines(["*pair.scenario.yaml::a PASSED*", "*pair.scenario.yaml::b FAILED*"])
    out = result.stdout.str()
    assert "scenario checks failed: " in out and "(side b)" in out
    assert "expect[2] (side b) count{kind=Node} @ t=30: wanted == 9, got 3" in out
    assert "replay: python -m controlplane run " in out and " --side b" in out

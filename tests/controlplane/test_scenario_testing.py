"""Scenarios as tests: `run` with checks and trace files, `python -m controlplane test`, JUnit XML
(controlplane/__main__.py, controlplane/testing.py)."""

import json
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from controlplane.scenario import SCENARIO_DIR, library, load_file, resolve
from controlplane.testing import ERROR, FAILED, PASSED, SKIPPED, discover, junit_xml, run_one, run_suite, sides_of

from .factories import PROPERTY_MAX_PODS, shipped

BASE = pathlib.Path(__file__).parent / "data" / "checks-base.yaml"
PASSING = [{"at": 10, "object": "ReplicaSet/default/web", "path": "status.readyReplicas", "equals": 4}]
FAILING = [
    {"at": 10, "object": "ReplicaSet/default/web", "path": "status.readyReplicas", "equals": 3},
    {"calls": {"verb": "create", "resource": "pods", "code": 403}, "atMost": 1},
]


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "controlplane", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def write(directory, name, expect):
    data = yaml.safe_load(BASE.read_text())
    if expect is not None:
        data["expect"] = expect
    path = directory / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_run_exits_0_when_every_check_passes_and_reports_them(tmp_path):
    result = cli("run", str(write(tmp_path, "ok.yaml", PASSING)))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["checks"][0]["ok"] is True
    assert result.stderr == ""


def test_run_exits_1_with_one_line_per_failed_check(tmp_path):
    result = cli("run", str(write(tmp_path, "bad.yaml", FAILING)))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines == [
        "FAIL expect[0] ReplicaSet/default/web status.readyReplicas @ t=10: wanted == 3, got 4",
        "FAIL expect[1] calls{verb=create, resource=pods, code=403} @ t=30: wanted <= 1, got 2",
    ]
    assert [c["ok"] for c in json.loads(result.stdout)["checks"]] == [False, False]


def test_run_exits_2_for_an_invalid_check_naming_the_field(tmp_path):
    result = cli(
        "run", str(write(tmp_path, "invalid.yaml", [{"object": "ReplicaSet/web", "path": "a..b", "equals": 1}]))
    )
    assert result.returncode == 2
    assert result.stderr.startswith("expect[0].path: empty key")
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""


def test_run_writes_both_trace_files_and_the_same_report(tmp_path):
    path = str(write(tmp_path, "plain.yaml", None))
    plain = cli("run", path)
    traced = cli("run", path, "--trace", str(tmp_path / "t.jsonl"), "--perfetto", str(tmp_path / "p.json"))
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout
    assert json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])["version"] == 1
    assert json.loads((tmp_path / "p.json").read_text())["traceEvents"]


def test_shipped_scenarios_keep_their_names_and_are_collected_by_the_plugin_suffix():
    ids = [entry["id"] for entry in library()]
    assert "demo" in ids and all("." not in i for i in ids)
    assert resolve("demo") == SCENARIO_DIR / "demo.scenario.yaml"
    assert all(p.name.endswith(".scenario.yaml") for p in SCENARIO_DIR.glob("*.yaml"))


@pytest.mark.parametrize("name", [entry["id"] for entry in library()])
def test_every_shipped_scenario_states_its_lesson_as_checks(name):
    assert len(load_file(name).expect) >= 5


def test_discover_finds_yaml_files_under_directories_sorted_and_defaults_to_the_library(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ("b.yaml", "a.yml", "sub/c.scenario.yaml", "notes.txt"):
        (tmp_path / name).write_text("{}")
    assert [pathlib.Path(p).name for p in discover([str(tmp_path)])] == ["a.yml", "b.yaml", "c.scenario.yaml"]
    assert len(discover([])) == len(library())
    assert discover(["demo", "demo"]) == discover(["demo"])


def test_run_one_tells_passed_failed_error_and_skipped(tmp_path):
    assert run_one(str(write(tmp_path, "ok.yaml", PASSING))).status == PASSED
    failed = run_one(str(write(tmp_path, "bad.yaml", FAILING)))
    assert failed.status == FAILED and len(failed.failures) == 2
    assert "replay: python -m controlplane run" in failed.detail()
    error = run_one(str(write(tmp_path, "err.yaml", [{"count": {}, "equals": "x", "bogus": 1}])))
    assert error.status == ERROR and "expect[0].bogus: unknown key" in error.error
    assert run_one(str(write(tmp_path, "none.yaml", None)), skip_without_checks=True).status == SKIPPED


def test_the_suite_runs_in_parallel_and_reports_in_discovery_order(tmp_path):
    for i in range(3):
        write(tmp_path, f"ok{i}.yaml", PASSING)
    write(tmp_path, "bad.yaml", FAILING)
    paths = discover([str(tmp_path)])
    parallel = run_suite(paths, jobs=3)
    serial = run_suite(paths, jobs=1)
    assert [o.status for o in parallel] == [FAILED, PASSED, PASSED, PASSED]
    assert parallel == serial


def test_junit_xml_has_one_testcase_per_scenario_with_the_failed_checks(tmp_path):
    write(tmp_path, "ok.yaml", PASSING)
    write(tmp_path, "bad.yaml", FAILING)
    write(tmp_path, "none.yaml", None)
    root = ET.fromstring(junit_xml(run_suite(discover([str(tmp_path)]), jobs=1)))
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    failure = suite.find("testcase[@name='bad.yaml']/failure")
    assert failure.get("message") == "2 of 2 checks failed"
    assert "expect[0] ReplicaSet/default/web status.readyReplicas @ t=10: wanted == 3, got 4" in failure.text


def test_the_test_command_exit_codes_table_and_junit_file(tmp_path):
    good, bad, broken = tmp_path / "good", tmp_path / "bad", tmp_path / "broken"
    for directory in (good, bad, broken):
        directory.mkdir()
    write(good, "ok.yaml", PASSING)
    write(good, "none.yaml", None)
    write(bad, "bad.yaml", FAILING)
    write(broken, "err.yaml", [{"calls": {}, "atLeast": "many"}])

    passed = cli("test", str(good), "--junit-xml", str(tmp_path / "j.xml"))
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.splitlines()[0].split() == ["result", "checks", "failed", "virtual", "s", "scenario"]
    assert "1 scenarios: 1 passed, 0 failed, 0 errors (1 files without checks skipped)" in passed.stdout
    assert "/2] PASSED" in passed.stderr  # progress lines come in completion order
    assert ET.parse(tmp_path / "j.xml").getroot().find("testsuite").get("tests") == "1"

    failed = cli("test", str(bad), "-j", "1")
    assert failed.returncode == 1
    assert "FAIL" in failed.stdout and "wanted <= 1, got 2" in failed.stdout and "replay:" in failed.stdout

    invalid = cli("test", str(broken))
    assert invalid.returncode == 2
    assert "expect[0].atLeast: must be a number" in invalid.stdout

    nothing = cli("test", str(tmp_path / "good" / "none.yaml"))
    assert nothing.returncode == 2 and "no scenario file with checks" in nothing.stderr


def test_the_test_command_runs_the_shipped_library_by_default():
    # What it would run (`--list`), without running the library a second time: the plugin runs
    # every shipped scenario as its own test item in this same suite (controlplane/scenarios).
    listed = cli("test", "--list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    # A file with a compare block (the v1.5 lessons) is run once per side.
    assert sorted(discover([])) == sorted(discover([f"{entry['id']}" for entry in library()]))
    expected = [(path, side) for path in discover([]) if load_file(path).expect for side in sides_of(path)]
    assert len(expected) > len(library()) // 2
    lines = listed.stdout.splitlines()
    assert lines[-1] == f"{len(expected)} scenarios"
    shown = [line.rsplit("  (", 1)[0] for line in lines[:-1]]
    assert shown == [path + (f" --side {side}" if side else "") for path, side in expected], listed.stdout
    assert any(line.startswith(discover(["v15-quota-wall"])[0] + " --side a  (") for line in lines)
    assert all(line.endswith((" checks)", " check)")) for line in lines[:-1])
    # And run, a compare file once per side, as listed.
    ran = cli("test", "v15-quota-wall")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "2 scenarios: 2 passed" in ran.stdout and "v15-quota-wall.scenario.yaml --side a" in ran.stdout


def test_the_list_of_runs_names_an_invalid_file_and_refuses_an_empty_one(tmp_path):
    (tmp_path / "bad.yaml").write_text("kind: nonsense\n")
    write(tmp_path, "good.yaml", PASSING)
    listed = cli("test", "--list", str(tmp_path))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        f"{tmp_path / 'bad.yaml'}  (invalid: running it says why)",
        f"{tmp_path / 'good.yaml'}  (1 check)",
        "2 scenarios",
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    write(empty, "none.yaml", None)
    nothing = cli("test", "--list", str(empty))
    assert nothing.returncode == 2 and "no scenario file with checks" in nothing.stderr


def test_only_the_fleet_is_left_out_of_the_per_library_engine_properties():
    # A new large scenario must be a choice: each one left out of the snapshot, report.json and
    # replay properties is named here.
    # lesson-rollout-10000 (issue 28) is the fleet's Deployment counterpart: its own checks run it.
    assert set(shipped()) - set(shipped(PROPERTY_MAX_PODS)) == {"fleet-10000", "lesson-rollout-10000"}

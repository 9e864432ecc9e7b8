"""Hostile input is turned away without damage (issue 9, section 2): the corpus in tests/corpus
through the headless runner and through the Python facade, each case asserting the error and
that the store did not change; property tests for the label-selector parser, the YAML reader,
scenario parsing and API-server decoding."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane import labels, safeyaml
from controlplane.__main__ import main
from controlplane.apiserver import ApiError, APIServer
from controlplane.kernel import Kernel
from controlplane.scenario import ScenarioError, load_scenario, parse_scenario
from controlplane.simulation import Simulation
from tests.corpus import BASE_MANIFESTS, BASE_SCENARIO, Case, load_cases

ROOT = Path(__file__).resolve().parents[2]
CASES = load_cases()
MANIFESTS = [case for case in CASES if case.kind == "manifest"]
SCENARIOS = [case for case in CASES if case.kind == "scenario"]
ACTIONS = [case for case in CASES if case.kind == "action"]
SECONDS_PER_CASE = 15.0  # generous for a loaded CI machine; a case takes well under a second
ISOLATED_MEMORY = 1536 * 1024 * 1024  # address space of an isolated case's process


def base_simulation() -> Simulation:
    sim = Simulation(parse_scenario(BASE_SCENARIO))
    sim.start()
    sim.run_until(BASE_SCENARIO["until"])
    return sim


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own refusals
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def run_cli_isolated(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """The runner in its own process, with bounded memory and time (cases that would blow up
    an unprotected loader: alias bombs, deep nesting, huge files)."""

    def bound() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ISOLATED_MEMORY, ISOLATED_MEMORY))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "controlplane", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=bound,
        env=env,
    )
    return done.returncode, done.stdout, done.stderr


def assert_one_line(err: str, starts: str, contains: list[str]) -> None:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err[:2000]
    assert lines[0].startswith(starts), lines[0][:500]
    for piece in contains:
        assert piece in lines[0], (piece, lines[0][:1000])


def _pieces(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _case_id(case: Case) -> str:
    return case.id


# -- the corpus through the runner ---------------------------------------------------------------


def _run_runner_case(case: Case, tmp_path: Path, scenario: Any, text: str | None, argv: list[str]) -> str:
    if text is None:
        text = yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True)
    path = tmp_path / "case.yaml"
    path.write_text(text)
    started = time.monotonic()
    if "isolate" in case.tags:
        code, out, err = run_cli_isolated(["run", str(path), *argv], tmp_path)
    else:
        code, out, err = run_cli(["run", str(path), *argv])
    assert time.monotonic() - started < SECONDS_PER_CASE
    assert code == 2, (code, err[:1000])
    assert out == ""  # no report: nothing ran to report on
    return err


@pytest.mark.parametrize("case", MANIFESTS, ids=_case_id)
def test_a_bad_manifest_in_a_scenario_is_refused_naming_the_object(case: Case, tmp_path: Path) -> None:
    scenario = {"objects": [case.input["manifest"]], "until": 1}
    err = _run_runner_case(case, tmp_path, scenario, None, [])
    expect = case.expect
    runner = expect.get("runner", expect.get("refused", expect.get("contains")))
    assert_one_line(err, "objects[0]", _pieces(runner))


@pytest.mark.parametrize("case", SCENARIOS, ids=_case_id)
def test_a_bad_scenario_file_exits_2_with_one_line_naming_the_field(case: Case, tmp_path: Path) -> None:
    data = case.input
    argv = [str(arg) for arg in data.get("args", [])]
    expect = case.expect
    if "file" in data or "text" in data or "bytes" in data:
        text = data.get("text")
        if "bytes" in data:
            path = tmp_path / "case.yaml"
            path.write_bytes(bytes.fromhex(data["bytes"]) if isinstance(data["bytes"], str) else bytes(data["bytes"]))
            code, out, err = run_cli(["run", str(path), *argv])
            assert code == 2 and out == ""
        else:
            err = _run_runner_case(case, tmp_path, data.get("file"), text, argv)
    else:  # `path`: a name given as is (a directory, a missing file)
        target = str(data["path"]).replace("$TMP", str(tmp_path))
        code, out, err = run_cli(["run", target, *argv])
        assert code == 2 and out == ""
    starts = str(expect.get("field", "")).replace("$TMP", str(tmp_path))
    assert_one_line(err, starts, [p.replace("$TMP", str(tmp_path)) for p in _pieces(expect.get("contains"))])


# -- the corpus through the facade ---------------------------------------------------------------


def _check_refused_or_failed(
    sim: Simulation, result: dict[str, Any], expect: dict[str, Any], logged_before: int
) -> None:
    assert result["ok"] is False, result
    if "refused" in expect:
        assert expect["refused"] in result["error"], result
        assert "code" not in result
        assert len(sim.actions) == logged_before  # a malformed action never happened
        return
    for piece in _pieces(expect.get("contains")):
        assert piece in result["error"], (piece, result["error"][:1000])
    if "code" in expect:
        assert result.get("code") == expect["code"], result
    if "field" in expect:
        fields = [cause.get("field") for cause in result.get("causes", [])]
        assert expect["field"] in fields, (expect["field"], fields)
    assert len(sim.actions) == logged_before + 1  # a rejected action is logged, like a failed request
    assert sim.actions[-1]["ok"] is False


@pytest.mark.parametrize("case", MANIFESTS, ids=_case_id)
def test_a_bad_manifest_applied_live_is_rejected_and_nothing_is_stored(case: Case) -> None:
    sim = base_simulation()
    before, logged = sim.server.digest(), len(sim.actions)
    started = time.monotonic()
    result = sim.act({"apply": case.input["manifest"]})
    assert time.monotonic() - started < SECONDS_PER_CASE
    _check_refused_or_failed(sim, result, case.expect, logged)
    assert sim.server.digest() == before
    # The same through apply() (the timeline's door), and the simulation still runs.
    again = sim.apply({"apply": case.input["manifest"]}, "test")
    assert again["ok"] is False and again.get("code") == result.get("code")
    assert sim.server.digest() == before
    sim.advance(5)
    assert sim.halted is None and not sim.errors


@pytest.mark.parametrize("case", ACTIONS, ids=_case_id)
def test_a_bad_action_is_rejected_and_changes_nothing(case: Case) -> None:
    sim = base_simulation()
    before, logged = sim.server.digest(), len(sim.actions)
    now = sim.now
    result = sim.act(case.input["action"])
    assert isinstance(result, dict)
    _check_refused_or_failed(sim, result, case.expect, logged)
    assert sim.server.digest() == before
    assert sim.now == now
    sim.advance(5)
    assert sim.halted is None and not sim.errors


def test_the_corpus_has_at_least_150_cases() -> None:
    assert len(CASES) >= 150
    assert len(MANIFESTS) and len(SCENARIOS) and len(ACTIONS)


# -- properties: any input gives a result or the documented error, never another exception --------

QUICK = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))

SELECTOR_TEXT = st.one_of(
    st.text(st.sampled_from(list("ab=!,()<> \t\n-_./\\0123456789éinotxs")), max_size=40),
    st.text(max_size=30),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=15,
)
SELECTOR_KEYS = st.sampled_from(["matchLabels", "matchExpressions", "key", "operator", "values", "app"])
LABEL_SELECTORS = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(SELECTOR_KEYS, inner, max_size=3)),
    max_leaves=12,
)
YAML_TEXT = st.lists(
    st.sampled_from([*"ab:-[]{}&*!|>'\"#\n 12.,?<%@`~\t", "!!int ", "!!binary ", "<<", ".nan", "&a ", "*a"]),
    max_size=40,
).map("".join)
FIELDS = [
    "metadata",
    "spec",
    "template",
    "selector",
    "matchLabels",
    "matchExpressions",
    "labels",
    "annotations",
    "name",
    "namespace",
    "replicas",
    "containers",
    0,
    "image",
    "ownerReferences",
    "finalizers",
    "status",
    "key",
    "operator",
    "values",
    "restartPolicy",
    "ports",
    "resources",
    "limits",
    "creationTimestamp",
]
MUTATIONS = st.lists(st.tuples(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=6), JSON), min_size=1, max_size=3)


def mutate(manifest: Any, path: list[Any], value: Any) -> None:
    """Put `value` at `path`, creating mappings on the way (list steps use the first item)."""
    target = manifest
    for step in path[:-1]:
        if isinstance(target, dict):
            key = step if isinstance(step, str) else "x"
            if not isinstance(target.get(key), dict | list):
                target[key] = {}
            target = target[key]
        elif isinstance(target, list) and target:
            target = target[0]
        else:
            return
    last = path[-1]
    if isinstance(target, dict):
        target[last if isinstance(last, str) else "x"] = value
    elif isinstance(target, list) and target:
        target[0] = value


@QUICK
@given(SELECTOR_TEXT)
def test_any_selector_string_parses_or_raises_value_error(text: str) -> None:
    try:
        selector = labels.parse(text)
    except ValueError:
        return
    str(selector)
    selector.matches({"a": "b"})
    selector.matches(None)


@QUICK
@given(LABEL_SELECTORS)
def test_any_label_selector_value_converts_or_raises_value_error(value: Any) -> None:
    try:
        selector = labels.selector_from_label_selector(value)
    except ValueError:
        return
    str(selector)
    selector.matches({"app": "web"})


@QUICK
@given(st.one_of(YAML_TEXT, st.text(max_size=40)))
def test_any_text_reads_as_json_shaped_data_or_a_yaml_input_error(text: str) -> None:
    try:
        data = safeyaml.load(text)
    except safeyaml.YAMLInputError as exc:
        assert "\n" not in str(exc)
        return
    json.dumps(data, allow_nan=False)  # JSON-shaped: string keys, finite numbers


@QUICK
@given(st.one_of(YAML_TEXT, st.text(max_size=40)))
def test_any_text_is_a_scenario_or_a_one_line_scenario_error(text: str) -> None:
    try:
        load_scenario(text)
    except ScenarioError as exc:
        assert "\n" not in str(exc)


@QUICK
@given(st.sampled_from(sorted(BASE_MANIFESTS)), MUTATIONS, st.sampled_from(["create", "update", "patch"]))
def test_any_manifest_is_stored_or_refused_with_an_api_error_and_nothing_stored(
    base: str, mutations: list[tuple[list[Any], Any]], verb: str
) -> None:
    server = APIServer(Kernel(0))
    resource = {"rs": "replicasets", "rc": "replicationcontrollers", "pod": "pods"}[base]
    original = copy.deepcopy(BASE_MANIFESTS[base])
    name = original["metadata"]["name"]
    body = copy.deepcopy(original)
    for path, value in mutations:
        mutate(body, path, value)
    if verb != "create":
        server.create(resource, "default", copy.deepcopy(original))
    before = server.digest()
    try:
        if verb == "create":
            server.create(resource, "default", body)
        elif verb == "update":
            server.update(resource, "default", name, body)
        else:
            server.patch(resource, "default", name, body)
    except ApiError as exc:
        assert 400 <= exc.code < 500, exc
        assert server.digest() == before
        return
    for obj in server.objects(resource):
        json.dumps(obj, allow_nan=False)  # whatever was stored is JSON


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(BASE_MANIFESTS)), MUTATIONS)
def test_whatever_the_api_server_accepts_the_controllers_handle(
    base: str, mutations: list[tuple[list[Any], Any]]
) -> None:
    sim = base_simulation()
    body = copy.deepcopy(BASE_MANIFESTS[base])
    for path, value in mutations:
        mutate(body, path, value)
    result = sim.act({"apply": body})
    assert isinstance(result, dict) and "ok" in result
    sim.advance(20)
    assert not sim.errors, sim.errors
    sim.report()

"""Scenario files: validation messages name the field; the CLI exits 2 with one line."""

import subprocess
import sys
import textwrap

import pytest

from controlplane.scenario import ScenarioError, load_scenario

RS = """
  - apiVersion: apps/v1
    kind: ReplicaSet
    metadata: {name: web, namespace: default}
    spec:
      replicas: 1
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: app, image: nginx}]}
"""


def error_of(text):
    with pytest.raises(ScenarioError) as info:
        load_scenario(textwrap.dedent(text))
    return str(info.value)


def test_defaults_fill_every_config_key():
    scenario = load_scenario("name: x\n")
    assert scenario.seed == 0
    assert scenario.config["workers"] == 5
    assert scenario.config["kubeApiQPS"] == 20.0
    assert scenario.config["whatIf"] == {"expectations": True, "slowStart": True}
    assert scenario.until == 60.0


def test_partial_feature_gates_keep_the_other_defaults():
    scenario = load_scenario("config: {featureGates: {PodDeletionCost: false}}\n")
    assert scenario.config["featureGates"]["PodDeletionCost"] is False
    assert scenario.config["featureGates"]["StaleControllerConsistencyReplicaSet"] is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "actions:\n  - {at: 1, scale: {kind: ReplicaSet, name: web, replicas: -1}}\n",
            "actions[0].scale.replicas: must be >= 0",
        ),
        ("actions:\n  - {at: 1}\n  - {at: 2, explode: {}}\n", "actions[0]: needs one verb"),
        ("actions:\n  - {at: 2, explode: {}}\n", "actions[0].explode: unknown verb"),
        (
            "actions:\n  - {at: 2, scale: {kind: ReplicaSet, name: w, replicas: 1}, delete: {kind: Pod, name: p}}\n",
            "actions[0]: has more than one verb",
        ),
        ("actions:\n  - {scale: {kind: ReplicaSet, name: w, replicas: 1}}\n", "actions[0].at: required"),
        ("config: {workers: 0}\n", "config.workers: must be >= 1"),
        ("config: {workers: two}\n", "config.workers: must be an integer, not string"),
        ("config: {colour: blue}\n", "config.colour: unknown key"),
        ("config: {whatIf: {expectations: maybe}}\n", "config.whatIf.expectations: must be true or false"),
        ("seed: -3\n", "seed: must be >= 0"),
        ("until: -0.5\n", "until: must be >= 0"),
        ("nmae: typo\n", "nmae: unknown key"),
        ("objects: {}\n", "objects: must be a list, not mapping"),
        ("objects:\n  - {apiVersion: v1, kind: Secret, metadata: {name: s}}\n", "objects[0].kind: must be one of"),
        ("actions:\n  - {at: 0, podFault: {selector: 'app in (', fault: crash}}\n", "actions[0].podFault.selector:"),
        ("actions:\n  - {at: 0, podFault: {name: p, fault: melt}}\n", "actions[0].podFault.fault: must be one of"),
        (
            "actions:\n  - {at: 0, apiFault: {verb: create, resource: pods, code: 200}}\n",
            "actions[0].apiFault.code: must be an HTTP error code",
        ),
        (
            "actions:\n  - {at: 0, apiFault: {verb: create, resource: pods, code: 500, count: 2, rate: 0.5}}\n",
            "actions[0].apiFault: count and rate exclude each other",
        ),
        ("actions:\n  - {at: 0, watchFault: {resource: nodes, fault: pause}}\n", "actions[0].watchFault.resource"),
        (
            "actions:\n  - {at: 0, controllerFault: {controller: deployment, fault: restart}}\n",
            "actions[0].controllerFault.controller",
        ),
        ("actions: [\n", "not valid YAML at line"),
    ],
)
def test_invalid_scenarios_name_the_field(text, message):
    assert error_of(text).startswith(message)


def run_cli(tmp_path, text, *args):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    return subprocess.run(
        [sys.executable, "-m", "controlplane", "run", str(path), *args], capture_output=True, text=True, timeout=120
    )


def test_cli_exits_2_with_one_line_naming_the_field(tmp_path):
    result = run_cli(tmp_path, "actions:\n  - {at: 1, scale: {kind: ReplicaSet, name: web, replicas: -1}}\n")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == "actions[0].scale.replicas: must be >= 0\n"


def test_cli_exits_2_when_the_api_server_rejects_a_starting_object(tmp_path):
    text = "objects:" + RS.replace("replicas: 1", "replicas: -4")
    result = run_cli(tmp_path, text)
    assert result.returncode == 2
    assert result.stderr.startswith("objects[0]: ")
    assert "spec.replicas" in result.stderr
    assert result.stderr.count("\n") == 1


def test_cli_exits_2_for_a_missing_file(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "controlplane", "run", str(tmp_path / "nope.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "no such file" in result.stderr


def test_a_rejected_action_is_recorded_and_the_run_goes_on(tmp_path):
    import json

    text = (
        "objects:"
        + RS
        + "actions:\n  - {at: 1, patch: {kind: ReplicaSet, name: web, patch: {spec: {replicas: -2}}}}\nuntil: 5\n"
    )
    result = run_cli(tmp_path, text)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    rejected = [c for c in report["apiCalls"] if c["client"] == "user" and c["verb"] == "patch"]
    assert [c["code"] for c in rejected] == [422]
    assert report["objects"]["ReplicaSet"][0]["spec"]["replicas"] == 1

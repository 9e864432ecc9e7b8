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
        ("seed: -3\n", "seed: must be a whole number from 0 to 9223372036854775807, not -3"),
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


# -- compare: a file about two configurations, and a check's side -----------------------------

PAIR = """
name: pair
compare:
  a: {label: v1.5, config: {controllerVersion: {replicationcontroller: v1.5}, workers: 2}}
  b: {config: {whatIf: {slowStart: false}}}
config: {workers: 3, whatIf: {expectations: false}}
until: 5
expect:
  - {count: {kind: Node}, equals: 3}
  - {side: a, count: {kind: Node}, equals: 3}
  - {side: b, count: {kind: Node}, atLeast: 1}
"""


def test_a_compare_block_is_merged_over_the_files_config_per_side():
    from controlplane.scenario import for_side

    scenario = load_scenario(PAIR)
    assert scenario.compare["a"] == {
        "label": "v1.5",
        "config": {"controllerVersion": {"replicationcontroller": "v1.5"}, "workers": 2},
    }
    assert scenario.compare["b"]["label"] == "B"  # the side's letter when the file names none
    a, b = for_side(scenario, "a"), for_side(scenario, "b")
    assert (a.side, a.config["workers"], a.config["controllerVersion"]["replicationcontroller"]) == ("a", 2, "v1.5")
    assert a.config["controllerVersion"]["replicaset"] == "v1.36"  # merged key by key
    assert b.config["whatIf"] == {"expectations": False, "slowStart": False}
    assert (b.config["workers"], scenario.config["workers"], scenario.side) == (3, 3, None)


def test_each_side_judges_the_unsided_checks_and_its_own():
    from controlplane.runner import run
    from controlplane.scenario import for_side

    scenario = load_scenario(PAIR)
    judged = {
        side: [(c["check"], c.get("side")) for c in run(s).report["checks"]]
        for side, s in (("base", scenario), ("a", for_side(scenario, "a")), ("b", for_side(scenario, "b")))
    }
    assert judged == {
        "base": [("expect[0]", None)],
        "a": [("expect[0]", None), ("expect[1]", "a")],
        "b": [("expect[0]", None), ("expect[2]", "b")],
    }


def test_a_failed_sided_check_says_its_side():
    from controlplane.runner import run
    from controlplane.scenario import for_side

    text = PAIR.replace("{side: b, count: {kind: Node}, atLeast: 1}", "{side: b, count: {kind: Node}, equals: 9}")
    (failure,) = run(for_side(load_scenario(text), "b")).failures
    assert failure.line() == "expect[2] (side b) count{kind=Node} @ t=5: wanted == 9, got 3"


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("workers: 2}}", "workers: 0}}", "compare.a.config.workers: must be >= 1"),
        ("workers: 2}}", "bogus: 1}}", "compare.a.config.bogus: unknown key"),
        ("{whatIf: {slowStart: false}}", "{whatIf: {slowStart: 3}}", "compare.b.config.whatIf.slowStart: must be true"),
        ("v1.5}, workers: 2}}", "v9}}}", "compare.a.config.controllerVersion.replicationcontroller: must be one of"),
        ("  b: {config: {whatIf: {slowStart: false}}}\n", "", "compare.b: required"),
        ("b: {config:", "b: {lable: x, config:", "compare.b.lable: unknown key"),
        ("label: v1.5,", "label: 3,", "compare.a.label: must be a string"),
        ("label: v1.5,", "label: '',", "compare.a.label: must be 1 to 80 characters"),
        ("{whatIf: {slowStart: false}}", "{controllers: [replicaset]}", "compare.b.config.controllers: cannot change"),
        ("{side: a,", "{side: c,", "expect[1].side: must be one of a, b (got 'c')"),
    ],
)
def test_a_bad_compare_block_or_side_names_the_field(old, new, message):
    assert old in PAIR
    assert error_of(PAIR.replace(old, new)).startswith(message)


def test_a_v15_only_key_under_a_side_running_v136_names_that_sides_field():
    text = PAIR.replace("{whatIf: {slowStart: false}}", "{lookupCacheSize: 8}")
    assert error_of(text) == (
        "compare.b.config.lookupCacheSize: only the v1.5 ReplicationManager has a lookup cache "
        "(compare.b.config.controllerVersion.replicationcontroller is v1.36)"
    )


def test_a_side_on_a_check_needs_a_compare_block():
    text = "until: 5\nexpect:\n  - {side: a, count: {kind: Node}, equals: 3}\n"
    assert error_of(text) == "expect[0].side: only in a file with a compare block (compare: {a: ..., b: ...})"


def test_a_node_fault_beyond_a_sides_nodes_names_the_side():
    fault = "actions:\n  - {at: 1, nodeFault: {name: node-3, fault: down}}\n"
    text = PAIR.replace("workers: 2}}", "workers: 2, nodes: 1}}") + fault
    assert error_of(text) == (
        'actions[0].nodeFault.name: no node "node-3" (the nodes are node-1 to node-1 by then under compare.a.config)'
    )


def test_cli_runs_one_side_and_exits_2_for_a_side_of_a_file_without_compare(tmp_path):
    import json

    result = run_cli(tmp_path, PAIR, "--side", "a")
    assert result.returncode == 0, result.stderr
    assert [c.get("side") for c in json.loads(result.stdout)["checks"]] == [None, "a"]
    result = run_cli(tmp_path, "name: plain\nuntil: 1\n", "--side", "b")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "--side: 'plain' has no compare block (compare: {a: ..., b: ...})\n"
    result = run_cli(tmp_path, PAIR, "--side", "c")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "--side: invalid choice: 'c'" in result.stderr


def test_without_side_a_compare_file_runs_its_own_config_and_the_unsided_checks(tmp_path):
    import json

    result = run_cli(tmp_path, PAIR)
    assert result.returncode == 0, result.stderr
    assert [c["check"] for c in json.loads(result.stdout)["checks"]] == ["expect[0]"]

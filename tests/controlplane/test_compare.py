"""controlplane.compare: the summary of two reports, the two-config run and its CLI (docs/compare.md)."""

import copy
import itertools
import json

import pytest

from controlplane.__main__ import main
from controlplane.compare import (
    DEFAULT_PAIR,
    MAX_DIVERGENCES,
    compare,
    describe_block,
    diff_reports,
    merge_config,
    parse_block,
    table,
)
from controlplane.runner import run
from controlplane.scenario import ScenarioError, load_file


def call(t, client, verb, resource, code, name=None, namespace="default"):
    return {
        "time": t,
        "client": client,
        "verb": verb,
        "resource": resource,
        "namespace": namespace,
        "name": name,
        "code": code,
    }


def report(time, calls, pods=(), events=(), status=None, owners=()):
    return {
        "time": time,
        "apiCalls": list(calls),
        "objects": {
            "ReplicaSet": list(owners),
            "ReplicationController": [],
            "Pod": list(pods),
            "Node": [],
            "Event": list(events),
        },
        "statusHistory": status or {},
    }


def pod(name, owner):
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": "u", "controller": True}
    return {"metadata": {"name": name, "namespace": "default", "ownerReferences": [ref]}}


def event(name, reason, type_="Warning", count=1, component="replicaset-controller"):
    return {
        "metadata": {"name": name, "namespace": "default"},
        "reason": reason,
        "type": type_,
        "count": count,
        "source": {"component": component},
    }


RS = "replicaset-controller"


def at(pods, t):
    """The A and B totals at sample time t."""
    i = pods["times"].index(t)
    return pods["total"]["a"][i], pods["total"]["b"][i]


# -- the summary of two reports ----------------------------------------------------------------


def test_identical_reports_have_no_divergence_and_no_differing_row():
    ra = run(load_file("quota-slow-start")).report
    summary = diff_reports(ra, copy.deepcopy(ra))
    assert summary["divergences"] == []
    assert not any(row["differs"] for row in summary["calls"] + summary["events"])
    assert summary["pods"]["total"]["a"] == summary["pods"]["total"]["b"]


def test_calls_are_counted_by_client_verb_resource_and_code():
    a = report(
        1.0,
        [
            call(0.1, RS, "create", "pods", 201, "web-aaaaa"),
            call(0.1, RS, "create", "pods", 403),
            call(0.2, RS, "create", "pods", 403),
        ],
    )
    b = report(1.0, [call(0.1, RS, "create", "pods", 201, "web-bbbbb")])
    rows = diff_reports(a, b)["calls"]
    assert rows == [
        {"client": RS, "verb": "create", "resource": "pods", "code": 403, "a": 2, "b": 0, "differs": True},
        {"client": RS, "verb": "create", "resource": "pods", "code": 201, "a": 1, "b": 1, "differs": False},
    ]


def test_events_count_the_correlators_count():
    a = report(
        5.0, [], events=[event("web.1", "FailedCreate", count=495), event("web.2", "SuccessfulCreate", "Normal")]
    )
    b = report(5.0, [], events=[event("web.1", "FailedCreate", count=2)])
    rows = diff_reports(a, b)["events"]
    assert rows[0] == {"reason": "FailedCreate", "type": "Warning", "component": RS, "a": 495, "b": 2, "differs": True}
    assert rows[1] == {"reason": "SuccessfulCreate", "type": "Normal", "component": RS, "a": 1, "b": 0, "differs": True}


def test_a_pod_is_live_from_its_create_to_its_first_delete_and_owned_by_its_generated_prefix():
    calls = [
        call(0.0, "user", "create", "replicasets", 201, "web"),
        call(0.0, "user", "create", "replicasets", 201, "web-canary"),
        call(1.0, RS, "create", "pods", 201, "web-aaaaa"),
        call(1.0, RS, "create", "pods", 201, "web-canary-bbbbb"),
        call(1.0, "user", "create", "pods", 201, "loner"),
        call(3.0, RS, "delete", "pods", 200, "web-aaaaa"),  # gone by the end: owner from its name
        call(4.0, "kubelet", "delete", "pods", 200, "web-aaaaa"),  # the final delete: already counted
        call(5.0, RS, "delete", "pods", 404, "web-canary-bbbbb"),  # failed: still live
    ]
    summary = diff_reports(report(10.0, calls, pods=[pod("web-canary-bbbbb", "web-canary")]), report(10.0, []))
    owners = summary["pods"]["owners"]
    assert sorted(owners) == ["ReplicaSet/default/web", "ReplicaSet/default/web-canary", "none"]
    times = summary["pods"]["times"]
    web = owners["ReplicaSet/default/web"]["a"]
    assert [web[times.index(t)] for t in (0.0, 1.0, 2.0, 3.0, 10.0)] == [0, 1, 1, 0, 0]
    assert [at(summary["pods"], t)[0] for t in (0.0, 1.0, 3.0, 10.0)] == [0, 3, 2, 2]
    assert owners["none"]["a"][-1] == 1
    assert owners["ReplicaSet/default/web"]["b"][-1] == 0


def test_samples_are_evenly_spaced_bounded_and_null_past_a_reports_time():
    summary = diff_reports(report(600.0, []), report(300.0, []))
    times = summary["pods"]["times"]
    assert times[0] == 0.0 and times[-1] == 600.0 and len(times) <= 120
    assert len({round(b - a, 6) for a, b in itertools.pairwise(times)}) == 1  # one step
    a_total, b_total = summary["pods"]["total"]["a"], summary["pods"]["total"]["b"]
    assert a_total[-1] == 0 and b_total[-1] is None
    assert b_total[times.index(300.0)] == 0


def test_status_history_keeps_distinct_tuples_only():
    writes = [
        {"time": 0.1, "changed": {"replicas": 3, "observedGeneration": 1}},
        {"time": 0.2, "changed": {"observedGeneration": 2}},  # same tuple: left out
        {"time": 2.0, "changed": {"readyReplicas": 3, "availableReplicas": 3}},
        {"time": 3.0, "changed": {"conditions": [{"type": "ReplicaFailure", "status": "True"}]}},
    ]
    summary = diff_reports(report(5.0, [], status={"replicaset": {"default/web": writes}}), report(5.0, []))
    history = summary["status"]["ReplicaSet/default/web"]
    assert [entry["time"] for entry in history["a"]] == [0.1, 2.0, 3.0]
    assert history["a"][2] == {
        "time": 3.0,
        "replicas": 3,
        "fullyLabeledReplicas": 0,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "terminatingReplicas": None,
        "conditions": ["ReplicaFailure"],
    }
    assert history["b"] == []


def test_a_divergence_marks_where_equal_becomes_different():
    create = ("create", "pods", 201)
    a = report(
        10.0,
        [
            call(0.1, RS, *create, "web-a1"),
            call(2.5, RS, "update", "replicasets/status", 200, "web"),
            call(3.2, RS, *create, "web-a2"),  # a new divergence: bucket 2 was equal
            call(3.5, RS, *create, "web-a3"),  # same bucket: not a new one
            call(4.2, RS, *create, "web-a4"),  # bucket 3 was different: not a new one
        ],
    )
    b = report(
        10.0,
        [
            call(0.1, RS, *create, "web-b1"),
            call(0.1, RS, *create, "web-b2"),
            call(0.3, RS, *create, "web-b3"),
            call(2.9, RS, "update", "replicasets/status", 200, "web"),
        ],
    )
    calls = [d for d in diff_reports(a, b)["divergences"] if d["kind"] == "calls"]
    assert calls == [
        {"time": 0.1, "kind": "calls", "what": "replicaset-controller: A sent 1 create pods (201), B 3"},
        {"time": 3.2, "kind": "calls", "what": "replicaset-controller: A sent 2 create pods (201), B 0"},
    ]


def test_divergences_come_first_one_first_with_every_kind():
    a = report(
        10.0,
        [call(0.5, RS, "create", "pods", 201, "web-aaaaa"), call(0.6, RS, "create", "events", 201, "web.1")],
        events=[event("web.1", "SuccessfulCreate", "Normal")],
        owners=[{"metadata": {"name": "web", "namespace": "default"}}],
        status={"replicaset": {"default/web": [{"time": 0.7, "changed": {"replicas": 1}}]}},
    )
    b = report(10.0, [], status={"replicaset": {"default/web": [{"time": 0.9, "changed": {"replicas": 0}}]}})
    divergences = diff_reports(a, b)["divergences"]
    assert [(d["time"], d["kind"]) for d in divergences] == [
        (0.5, "calls"),
        (0.5, "pods"),
        (0.6, "events"),
        (0.7, "status"),
    ]
    assert divergences[1]["what"] == "live pods of ReplicaSet/default/web: A 1, B 0"
    assert divergences[2]["what"] == "A: 1 SuccessfulCreate events (Normal, replicaset-controller), B: 0"
    assert divergences[3]["what"] == "status of ReplicaSet/default/web: replicas A 1, B 0"


def test_only_the_time_both_reports_reached_is_compared():
    a = report(5.0, [call(4.0, RS, "create", "pods", 201, "web-aaaaa")])
    b = report(3.0, [])
    assert diff_reports(a, b)["divergences"] == []


def test_divergences_are_capped_and_the_cap_is_said():
    # A sends one call in every other second: each is a new divergence after an equal bucket.
    a = report(1000.0, [call(2.0 * i, RS, "create", "pods", 403) for i in range(300)])
    summary = diff_reports(a, report(1000.0, []))
    assert len(summary["divergences"]) == MAX_DIVERGENCES
    assert summary["truncated"]["divergences"] == 300 - MAX_DIVERGENCES
    assert summary["divergences"][0]["time"] == 0.0


def test_a_bad_bucket_is_refused():
    with pytest.raises(ValueError, match="bucket"):
        diff_reports(report(1.0, []), report(1.0, []), bucket=float("nan"))


# -- two configurations ------------------------------------------------------------------------


def test_compare_finds_the_first_divergence_where_slow_start_differs():
    result = compare("quota-slow-start", {"whatIf": {"slowStart": False}}, {})
    summary = result["summary"]
    first = summary["divergences"][0]
    assert first["time"] == pytest.approx(0.1)
    assert first["kind"] == "calls" and "create pods (403)" in first["what"]
    rows = {(r["client"], r["verb"], r["resource"], r["code"]): r for r in summary["calls"]}
    # The quota lets 3 creates through in both worlds (the scenario's own check for B).
    assert (rows[(RS, "create", "pods", 201)]["a"], rows[(RS, "create", "pods", 201)]["b"]) == (3, 3)
    failed = rows[(RS, "create", "pods", 403)]
    assert failed["a"] > failed["b"] and failed["differs"]


def test_compare_counts_match_each_worlds_own_run():
    scenario = load_file("quota-slow-start")
    result = compare(scenario, {"whatIf": {"slowStart": False}}, {"workers": 2}, until=40)
    for side, block in (("a", {"whatIf": {"slowStart": False}}), ("b", {"workers": 2})):
        scenario.config = merge_config(load_file("quota-slow-start").config, block)
        calls = run(scenario, until=40).report["apiCalls"]
        for row in result["summary"]["calls"]:
            key = (row["client"], row["verb"], row["resource"], row["code"])
            assert row[side] == sum(1 for c in calls if (c["client"], c["verb"], c["resource"], c["code"]) == key)


def test_same_config_on_both_sides_has_no_divergence():
    summary = compare("demo", {"workers": 3}, {"workers": 3})["summary"]
    assert summary["divergences"] == []


def test_a_bad_block_names_the_side_and_the_field():
    with pytest.raises(ScenarioError, match=r"^--a: config\.workers: must be >= 1$"):
        compare("demo", {"workers": 0}, {})
    with pytest.raises(ScenarioError, match=r"^--b: config\.whatIf\.slow: unknown key$"):
        compare("demo", {}, {"whatIf": {"slow": True}})


def test_blocks_merge_nested_mappings_key_by_key():
    merged = merge_config(
        {"whatIf": {"expectations": True, "slowStart": True}, "workers": 5}, {"whatIf": {"slowStart": False}}
    )
    assert merged == {"whatIf": {"expectations": True, "slowStart": False}, "workers": 5}


def test_describe_block():
    assert describe_block({"whatIf": {"slowStart": False}, "workers": 2}) == "whatIf.slowStart: false, workers: 2"
    assert describe_block({}) == "defaults"


def test_the_default_pair_is_two_valid_blocks():
    for side, block in zip("ab", DEFAULT_PAIR, strict=True):
        assert parse_block(json.dumps(block), side) == block


# -- the CLI ------------------------------------------------------------------------------------


def test_cli_prints_json_and_is_deterministic(capsys):
    outs = []
    for _ in range(2):
        assert main(["compare", "quota-slow-start", "--a", "whatIf: {slowStart: false}", "--b", "{}"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    result = json.loads(outs[0])
    assert result["a"] == {"whatIf": {"slowStart": False}} and result["b"] == {}
    assert result["summary"]["divergences"][0]["kind"] == "calls"


def test_cli_table_is_readable(capsys):
    assert main(["compare", "quota-slow-start", "--until", "10", "--table"]) == 0
    out = capsys.readouterr().out
    assert "A: controllerVersion.replicationcontroller: v1.5" in out
    assert "B: controllerVersion.replicationcontroller: v1.36" in out
    assert "divergences (where A and B start to differ)" in out
    assert "Live pods over time" in out and "ReplicaSet/default/web" in out


def test_cli_defaults_to_a_lessons_own_pair_with_its_labels(capsys, tmp_path):
    path = tmp_path / "lesson.yaml"
    path.write_text(
        "name: lesson\nuntil: 2\ncompare:\n"
        "  a: {label: one worker, config: {workers: 1}}\n"
        "  b: {label: slow start off, config: {whatIf: {slowStart: false}}}\n"
    )
    assert main(["compare", str(path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["a"], result["b"]) == ({"workers": 1}, {"whatIf": {"slowStart": False}})
    assert result["labels"] == {"a": "one worker", "b": "slow start off"}
    assert main(["compare", str(path), "--table"]) == 0
    out = capsys.readouterr().out
    assert "  A (one worker): workers: 1\n  B (slow start off): whatIf.slowStart: false\n" in out
    # A side given on the command line replaces the file's; the other stays the file's; no labels.
    assert main(["compare", str(path), "--a", "workers: 2"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["a"], result["b"], "labels" in result) == ({"workers": 2}, {"whatIf": {"slowStart": False}}, False)


def test_a_file_without_compare_keeps_the_default_pair_and_no_labels(capsys):
    assert main(["compare", "demo", "--until", "1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["a"], result["b"]) == DEFAULT_PAIR and "labels" not in result


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--a", "workers: 0"], "--a: config.workers: must be >= 1"),
        (["demo", "--b", "[1"], "--b: not YAML"),
        (["demo", "--b", "- 1"], "--b: must be a mapping of config keys"),
        (["no-such-scenario"], "no-such-scenario: no such file, and no shipped scenario of that name"),
        (["demo", "--until", "nan"], "--until: must be a finite number of seconds"),
        (["demo", "--seed", "-1"], "--seed: must be a whole number from 0 to 9223372036854775807, not -1"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(capsys, argv, message):
    assert main(["compare", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(message) and captured.err.count("\n") == 1


def test_table_of_a_result_says_what_was_left_out():
    result = {
        "scenario": "x",
        "seed": 0,
        "a": {},
        "b": {"workers": 2},
        "summary": diff_reports(
            report(1000.0, [call(2.0 * i, RS, "create", "pods", 403) for i in range(300)]), report(1000.0, [])
        ),
    }
    assert "left out (ceilings): divergences 200" in table(result)


def test_a_live_simulations_diff_input_gives_the_reports_summary():
    from controlplane.simulation import Simulation

    sims = [Simulation(load_file("quota-slow-start")) for _ in range(2)]
    sims[1].act({"config": {"whatIf": {"slowStart": False}}})
    for sim in sims:
        sim.run_until(35)
    live = diff_reports(sims[0].diff_input(), sims[1].diff_input())
    assert live == diff_reports(sims[0].report(), sims[1].report())
    assert live["divergences"]

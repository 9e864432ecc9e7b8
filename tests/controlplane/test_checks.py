"""Checks (`expect:`): every kind passes and fails on purpose, validation names the field, never
checks find the first instant, and checking changes nothing in the run (controlplane/checks.py)."""

import copy
import json
import pathlib

import pytest
import yaml

from controlplane import checks
from controlplane.runner import run
from controlplane.scenario import ScenarioError, load_file, parse_scenario

BASE = pathlib.Path(__file__).parent / "data" / "checks-base.yaml"


@pytest.fixture(scope="module")
def base():
    return yaml.safe_load(BASE.read_text())


def run_checks(base, expect, **options):
    data = copy.deepcopy(base)
    data["expect"] = expect
    return run(parse_scenario(data), **options)


RSC = "replicaset-controller"
WEB = {"controller": "replicaset", "key": "default/web"}

# (check, passes) pairs over the base run: a ReplicaSet of 4 whose first sync hits a quota error
# (slow start: 1 ok, then 2 refused), recovers at once, and is scaled to 2 at 20 s.
CASES = [
    # object fields
    ({"at": 10, "object": "ReplicaSet/default/web", "path": "status.readyReplicas", "equals": 4}, True),
    ({"at": 10, "object": "ReplicaSet/default/web", "path": "status.readyReplicas", "equals": 3}, False),
    ({"object": "ReplicaSet/web", "path": "status.replicas", "atLeast": 2}, True),
    ({"object": "ReplicaSet/web", "path": "status.replicas", "atLeast": 3}, False),
    ({"object": "ReplicaSet/web", "path": "status.replicas", "atMost": 2}, True),
    ({"object": "ReplicaSet/web", "path": "status.replicas", "atMost": 1}, False),
    ({"object": "ReplicaSet/web", "path": "status.replicas", "atLeast": 1, "atMost": 3}, True),
    ({"at": 0.15, "object": "ReplicaSet/web", "path": "status.conditions[type=ReplicaFailure].message",
      "matches": '^pods "web-" is forbidden: exceeded'}, True),  # as kube-apiserver words a quota 403
    ({"at": 0.15, "object": "ReplicaSet/web", "path": "status.conditions[type=ReplicaFailure].message",
      "matches": "^quota"}, False),
    ({"object": "ReplicaSet/web", "path": "status.conditions", "absent": True}, True),
    ({"at": 0.15, "object": "ReplicaSet/web", "path": "status.conditions", "absent": True}, False),
    ({"object": "ReplicaSet/default/nope", "absent": True}, True),
    ({"object": "ReplicaSet/default/nope", "present": True}, False),
    ({"object": "Node/node-1", "path": "status.conditions[type=Ready].status", "equals": "True"}, True),
    ({"object": "ReplicaSet/web", "path": "spec.template.spec.containers[0].image", "equals": "nginx"}, True),
    ({"object": "ReplicaSet/web", "path": "spec.replicas", "equals": True}, False),  # 2 is not true
    # counts of objects
    ({"count": {"selector": "app=web", "phase": "Running", "condition": "Ready", "owner": "ReplicaSet/web"},
      "equals": 2}, True),
    ({"count": {"selector": "app=web", "phase": "Running", "condition": "Ready", "owner": "ReplicaSet/web"},
      "equals": 4}, False),
    ({"at": 10, "count": {"owner": "ReplicaSet/default/web"}, "equals": 4}, True),
    ({"at": 20.5, "count": {"owner": "ReplicaSet/web", "terminating": True}, "equals": 2}, True),
    ({"at": 20.5, "count": {"owner": "ReplicaSet/web", "active": True}, "equals": 4}, False),
    ({"count": {"kind": "Node"}, "equals": 3}, True),
    # API calls in a window
    ({"calls": {"verb": "create", "resource": "pods", "between": [0, 10]}, "atMost": 500}, True),
    ({"calls": {"verb": "create", "resource": "pods", "between": [0, 10]}, "atMost": 5}, False),
    ({"calls": {"client": RSC, "verb": "create", "resource": "pods", "code": 403}, "equals": 2}, True),
    ({"calls": {"client": RSC, "verb": "create", "resource": "pods", "code": 403}, "equals": 3}, False),
    ({"calls": {"client": RSC, "verb": "delete", "between": [0, 19]}, "present": True}, False),
    # conditions
    ({"at": 0.15, "condition": {"object": "ReplicaSet/web", "type": "ReplicaFailure", "reason": "FailedCreate"},
      "present": True}, True),
    ({"condition": {"object": "ReplicaSet/web", "type": "ReplicaFailure"}, "present": True}, False),
    ({"condition": {"object": "ReplicaSet/web", "type": "ReplicaFailure", "status": "any"}, "absent": True}, True),
    ({"condition": {"object": "Pod/default/nope", "type": "Ready"}, "present": True}, False),
    # Events (the value is the number of occurrences: an aggregated Event counts its `count`)
    ({"event": {"reason": "FailedCreate", "type": "Warning", "object": "ReplicaSet/default/web"}, "equals": 2}, True),
    ({"event": {"reason": "FailedCreate"}, "present": True}, True),
    ({"event": {"reason": "FailedDelete"}, "present": True}, False),
    ({"event": {"reason": "SuccessfulDelete", "component": "replication-controller"}, "present": True}, False),
    # one sync, and syncs counted
    ({"sync": {"key": "default/web"}, "path": "batches[*].size", "equals": [1, 2]}, True),
    ({"sync": {"key": "default/web"}, "path": "batches[*].size", "equals": [1, 2, 4]}, False),
    ({"sync": {"key": "default/web"}, "path": "requeue", "equals": {"decision": "rateLimited", "delay": 0.005}}, True),
    ({"sync": {"key": "default/web", "index": -1, "manage": "delete"}, "path": "manage.count", "equals": 2}, True),
    ({"sync": {"key": "default/web", "between": [25, 30], "manage": "create"}, "present": True}, False),
    ({"syncs": {"key": "default/web", "error": True}, "atLeast": 1}, True),
    ({"syncs": {"consistency": "off"}, "atLeast": 1}, False),
    # expectations of a controller key
    ({"expectations": WEB, "equals": {"add": 0, "del": 0}}, True),
    ({"expectations": WEB, "path": "add", "equals": 1}, False),
    ({"expectations": {"controller": "replicationcontroller", "key": "default/web"}, "absent": True}, True),
    # never, over the whole run
    ({"never": {"count": {"owner": "ReplicaSet/web", "active": True}, "atLeast": 5}}, True),
    ({"never": {"count": {"owner": "ReplicaSet/web", "active": True}, "atLeast": 4}}, False),
    ({"never": {"calls": {"client": RSC, "verb": "delete", "resource": "pods"}, "atLeast": 3}}, True),
    ({"never": {"calls": {"client": RSC, "verb": "delete", "resource": "pods"}, "atLeast": 2}}, False),
    ({"never": {"object": "ReplicaSet/web", "path": "status.readyReplicas", "equals": 3}}, True),
    ({"never": {"object": "ReplicaSet/web", "path": "status.readyReplicas", "equals": 1}}, False),
    ({"never": {"condition": {"object": "ReplicaSet/web", "type": "ReplicaFailure"}, "present": True}}, False),
    ({"never": {"event": {"reason": "FailedDelete"}, "present": True}}, True),
    ({"never": {"event": {"reason": "FailedCreate"}, "present": True}}, False),
    ({"never": {"syncs": {"manage": "delete"}, "atLeast": 2}}, True),
    ({"never": {"syncs": {"manage": "delete"}, "atLeast": 1}}, False),
    ({"never": {"expectations": WEB, "path": "del", "atLeast": 3}}, True),
    ({"never": {"expectations": WEB, "path": "del", "atLeast": 2}}, False),
]  # fmt: skip


@pytest.fixture(scope="module")
def judged(base):
    """All cases in one run: checks are independent of each other (and of the run)."""
    result = run_checks(base, [check for check, _ in CASES])
    return result.checks


@pytest.mark.parametrize(("index", "case"), list(enumerate(CASES)), ids=[json.dumps(c[0])[:90] for c in CASES])
def test_each_check_kind_passes_and_fails_on_purpose(judged, index, case):
    _, passes = case
    result = judged[index]
    assert result.ok is passes, result.line()


def test_every_subject_and_comparator_is_exercised_both_ways():
    def kinds(check):
        body = check.get("never", check)
        subject = next(k for k in checks.SUBJECTS if k in body)
        return {(subject, k, "never" in check) for k in checks.COMPARATORS if k in body}

    covered = {}
    for check, passes in CASES:
        for kind in kinds(check):
            covered.setdefault(kind[0], set()).add(passes)
    assert set(covered) == set(checks.SUBJECTS) - {"oracle"}
    assert all(outcomes == {True, False} for outcomes in covered.values()), covered


def test_a_failed_never_check_reports_the_first_instant_it_held(judged):
    index = CASES.index(({"never": {"count": {"owner": "ReplicaSet/web", "active": True}, "atLeast": 4}}, False))
    result = judged[index]
    assert 0.1 < result.time < 0.3  # when the second sync's creates reach the store
    assert result.got == 4
    assert result.line().startswith("expect[")
    assert "wanted never >= 4, got 4" in result.line()


def test_the_report_lists_every_result_with_check_time_wanted_and_got(base):
    result = run_checks(base, [CASES[0][0], CASES[1][0]])
    assert result.report["checks"] == [
        {"check": "expect[0]", "name": "ReplicaSet/default/web status.readyReplicas", "at": 10.0, "ok": True,
         "time": 10.0, "wanted": "== 4", "got": 4},
        {"check": "expect[1]", "name": "ReplicaSet/default/web status.readyReplicas", "at": 10.0, "ok": False,
         "time": 10.0, "wanted": "== 3", "got": 4},
    ]  # fmt: skip


def test_a_check_at_an_instant_sees_that_instants_actions_and_their_immediate_effects(base):
    # The scale to 2 applies at the end of instant 20: a check at 20 sees the new spec.
    result = run_checks(base, [{"at": 20, "object": "ReplicaSet/web", "path": "spec.replicas", "equals": 2}])
    assert result.checks[0].ok


@pytest.mark.parametrize("name", ["quota-slow-start", "controller-restart", "stale-cache-expectations"])
def test_checks_change_nothing_in_the_run(name):
    scenario = load_file(name)
    assert scenario.expect
    with_checks = run(scenario).report
    bare = copy.deepcopy(scenario)
    bare.expect = []
    without = run(bare).report
    assert "checks" in with_checks and "checks" not in without
    del with_checks["checks"]
    assert json.dumps(with_checks) == json.dumps(without)


def test_an_at_check_beyond_a_shortened_run_fails_as_not_reached(base):
    result = run_checks(base, [{"at": 25, "count": {}, "atLeast": 0}], until=10)
    [outcome] = result.checks
    assert not outcome.ok and not outcome.reached
    assert "not reached" in outcome.line()


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        (3, "expect: must be a list, not number"),
        ([{"at": 1}], "expect[0]: needs one subject"),
        ([{"object": "ReplicaSet/web", "count": {}, "equals": 1}], "expect[0]: has more than one subject"),
        ([{"object": "ReplicaSet/web", "path": "status..x", "equals": 1}], "expect[0].path: empty key"),
        ([{"object": "ReplicaSet/web", "path": "a[b", "equals": 1}], "expect[0].path: bad bracket"),
        ([{"object": "Foo/web", "equals": 1}], "expect[0].object: unknown kind 'Foo'"),
        ([{"object": "Node/x/y", "present": True}], "expect[0].object: Node is cluster-scoped"),
        ([{"count": {"phase": "Runing"}, "equals": 1}], "expect[0].count.phase: must be one of"),
        ([{"count": {"selector": "a in (b"}, "equals": 1}], "expect[0].count.selector:"),
        ([{"count": {"colour": "red"}, "equals": 1}], "expect[0].count.colour: unknown key"),
        ([{"calls": {}, "atLeast": "x"}], "expect[0].atLeast: must be a number"),
        ([{"calls": {}, "equals": 1, "atLeast": 1}], "expect[0]: has more than one comparator"),
        ([{"calls": {}}], "expect[0]: needs a comparator"),
        ([{"calls": {"between": [5, 1]}, "atLeast": 1}], "expect[0].calls.between: the second time"),
        ([{"calls": {"verb": "frob"}, "atLeast": 1}], "expect[0].calls.verb: must be one of"),
        ([{"object": "ReplicaSet/web", "path": "a", "matches": "("}], "expect[0].matches: invalid regular expression"),
        ([{"count": {}, "path": "x", "equals": 1}], "expect[0].path: not for a count check"),
        ([{"never": {"calls": {}, "atLeast": 1}, "at": 3}], "expect[0].at: not beside never"),
        ([{"never": {"calls": {}, "atLeast": 1, "at": 3}}], "expect[0].never.at: unknown key"),
        ([{"never": {"sync": {}, "present": True}}], "expect[0].never.sync: one sync is not a situation"),
        ([{"oracle": "no-such-oracle"}], "expect[0].oracle: unknown oracle 'no-such-oracle'"),
        ([{"at": 500, "calls": {}, "atLeast": 0}], "expect[0].at: after the end of the run (until: 30)"),
        ([{"calls": {}, "atLeast": 0}, {"condition": {"type": "Ready"}, "present": True}],
         "expect[1].condition.object: required"),
    ],
)  # fmt: skip
def test_an_invalid_check_is_an_invalid_file_naming_the_field(base, expect, message):
    data = copy.deepcopy(base)
    data["expect"] = expect
    with pytest.raises(ScenarioError) as error:
        parse_scenario(data)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


@pytest.fixture
def oracle():
    @checks.register_oracle("test-owned-pods")
    def owned_pods(sim, args):
        count = sum(1 for _ in sim.server.objects("pods"))
        return checks.OracleVerdict(ok=count <= args["max"], wanted=f"<= {args['max']} pods", got=count)

    yield owned_pods
    del checks.ORACLES["test-owned-pods"]


def test_an_oracle_is_a_check_by_name_that_says_what_it_wants(base, oracle):
    result = run_checks(
        base,
        [
            {"oracle": "test-owned-pods", "args": {"max": 2}},
            {"at": 10, "oracle": "test-owned-pods", "args": {"max": 3}},
        ],
    )
    ok, failed = result.checks
    assert ok.ok and ok.wanted_text == "<= 2 pods"
    assert not failed.ok and failed.got == 4 and failed.time == 10
    assert "wanted <= 3 pods, got 4" in failed.line()

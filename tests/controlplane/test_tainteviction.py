"""The taint-eviction controller (controlplane/tainteviction.py): NoExecute taints a user puts on a
node evict the pods that do not tolerate them, at once or after their tolerationSeconds."""

from __future__ import annotations

import pytest

from controlplane.apiserver import APIServer
from controlplane.kernel import Kernel
from controlplane.nodes import NodeSimulator
from controlplane.tainteviction import get_matching_tolerations, get_min_toleration_time
from controlplane.trace import Trace
from tests.controlplane.factories import bare_pod, node_world

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}


def set_taints(server, taints, name="node-1"):
    node = server.get("nodes", None, name)
    spec = {**node["spec"], "taints": taints} if taints else {k: v for k, v in node["spec"].items() if k != "taints"}
    server.update("nodes", None, name, {**node, "spec": spec}, client="user")


def on_node_1(kernel, server, **spec):
    """Six running pods over three nodes; web-0 and web-3 are on node-1."""
    for i in range(6):
        server.create("pods", "default", bare_pod(f"web-{i}", **spec))
    kernel.advance(3)
    assert [p["metadata"]["name"] for p in server.list("pods")["items"] if p["spec"]["nodeName"] == "node-1"] == [
        "web-0",
        "web-3",
    ]


def terminating(server, name):
    return "deletionTimestamp" in server.get("pods", "default", name)["metadata"]


def reasons(server, name):
    return [
        (e["reason"], e["message"], e["source"]["component"])
        for e in server.list("events")["items"]
        if e["involvedObject"]["name"] == name and e["reason"] == "TaintManagerEviction"
    ]


def test_a_pod_that_does_not_tolerate_a_no_execute_taint_is_evicted_at_once():
    kernel, server, _ = node_world()
    on_node_1(kernel, server)
    set_taints(server, [TAINT])
    kernel.advance(1)
    for name in ("web-0", "web-3"):
        assert terminating(server, name)
        pod = server.get("pods", "default", name)
        disruption = next(c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert (disruption["reason"], disruption["message"]) == (
            "DeletionByTaintManager",
            "Taint manager: deleting due to NoExecute taint",
        )
        assert reasons(server, name) == [
            ("TaintManagerEviction", f"Marking for deletion Pod default/{name}", "taint-eviction-controller")
        ]
    assert not any(terminating(server, f"web-{i}") for i in (1, 2, 4, 5))
    deletes = [r for r in server.requests if r["verb"] == "delete" and r["resource"] == "pods"]
    assert [(r["client"], r["name"]) for r in deletes] == [
        ("taint-eviction-controller", "web-0"),
        ("taint-eviction-controller", "web-3"),
    ]


def test_a_no_schedule_taint_evicts_nothing():
    kernel, server, _ = node_world()
    on_node_1(kernel, server)
    set_taints(server, [{**TAINT, "effect": "NoSchedule"}])
    kernel.advance(600)
    assert not any(terminating(server, f"web-{i}") for i in range(6))


def test_a_pod_tolerating_for_a_while_is_evicted_when_its_toleration_seconds_pass():
    kernel, server, _ = node_world()
    toleration = {"key": "dedicated", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    on_node_1(kernel, server, tolerations=[toleration])
    set_taints(server, [TAINT])
    kernel.advance(29.9)
    assert not terminating(server, "web-0")
    kernel.advance(0.2)
    assert terminating(server, "web-0") and terminating(server, "web-3")


def test_a_pod_tolerating_forever_stays():
    kernel, server, _ = node_world()
    on_node_1(kernel, server, tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu"}])
    set_taints(server, [TAINT])
    kernel.advance(3600)
    assert not terminating(server, "web-0")
    set_taints(server, [TAINT, {"key": "other", "effect": "NoExecute"}])  # one it does not tolerate
    kernel.advance(1)
    assert terminating(server, "web-0")


def test_removing_the_taint_in_time_cancels_the_eviction():
    kernel, server, sim = node_world()
    toleration = {"key": "dedicated", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    on_node_1(kernel, server, tolerations=[toleration])
    set_taints(server, [TAINT])
    kernel.advance(1)
    assert sim.taint_eviction.scheduled() == {"default/web-0": 33.0, "default/web-3": 33.0}
    set_taints(server, [])
    kernel.advance(120)
    assert not terminating(server, "web-0") and sim.taint_eviction.scheduled() == {}
    assert reasons(server, "web-0") == [
        ("TaintManagerEviction", "Cancelling deletion of Pod default/web-0", "taint-eviction-controller")
    ]


def test_a_second_taint_keeps_the_first_scheduled_time():
    kernel, server, sim = node_world()
    tolerations = [
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
        {"key": "other", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 100},
    ]
    on_node_1(kernel, server, tolerations=tolerations)
    set_taints(server, [TAINT])
    kernel.advance(10)
    set_taints(server, [TAINT, {"key": "other", "effect": "NoExecute"}])
    kernel.advance(1)
    # processPodOnNode: the eviction first scheduled (at 3 + 30) stands.
    assert sim.taint_eviction.scheduled()["default/web-0"] == 33.0


def test_the_same_seed_gives_the_same_trace():
    def run():
        kernel = Kernel(seed=1)
        trace = Trace(kernel)
        records = []
        trace.subscribe(records.append)
        server = APIServer(kernel, trace)
        NodeSimulator(server, kernel, trace, {"nodes": 3}).start()
        on_node_1(kernel, server)
        set_taints(server, [TAINT])
        kernel.advance(30)
        return records

    first = run()
    assert first == run()
    events = [(r["component"], r["reason"], r["object"]) for r in first if r["kind"] == "event"]
    assert ("taint-eviction-controller", "TaintManagerEviction", "Pod/default/web-0") in events
    requests = [(r["client"], r["verb"], r["name"]) for r in first if r["kind"] == "api.request"]
    assert ("taint-eviction-controller", "delete", "web-3") in requests


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], (False, None)),
        ([{"key": "dedicated", "operator": "Exists"}], (True, None)),
        ([{"operator": "Exists", "tolerationSeconds": 5}, {"key": "dedicated", "operator": "Exists"}], (True, 5.0)),
        ([{"key": "dedicated", "operator": "Equal", "value": "cpu"}], (False, None)),
        ([{"key": "dedicated", "operator": "Exists", "tolerationSeconds": -1}], (True, 0.0)),
    ],
)
def test_matching_tolerations_and_the_least_toleration_time(tolerations, expected):
    tolerated, used = get_matching_tolerations([TAINT], tolerations)
    assert (tolerated, get_min_toleration_time(used) if tolerated else None) == expected

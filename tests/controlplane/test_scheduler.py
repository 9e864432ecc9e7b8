"""Scheduler: spreading, binding, unschedulable pods (controlplane/scheduler.py)."""

from __future__ import annotations

import pytest

from controlplane.scheduler import find_untolerated_taint, toleration_tolerates
from tests.controlplane.factories import bare_pod, node_world

UNREACHABLE_MESSAGE = (
    "0/3 nodes are available: 3 node(s) had untolerated taint(s). no new claims to deallocate, "
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


make_world = node_world
pod = bare_pod


def node_of(server, name):
    return server.get("pods", "default", name)["spec"].get("nodeName")


def requests(server, client, verb=None, resource=None):
    return [
        r
        for r in server.requests
        if r["client"] == client
        and (verb is None or r["verb"] == verb)
        and (resource is None or r["resource"] == resource)
    ]


def test_pods_are_spread_to_the_node_with_fewest_pods_ties_by_name():
    kernel, server, _ = make_world()
    for i in range(7):
        server.create("pods", "default", pod(f"web-{i}"))
    kernel.advance(0.1)
    placed = [node_of(server, f"web-{i}") for i in range(7)]
    assert placed == ["node-1", "node-2", "node-3", "node-1", "node-2", "node-3", "node-1"]


def test_binding_is_one_create_of_the_binding_subresource_by_default_scheduler():
    kernel, server, _ = make_world()
    server.create("pods", "default", pod("web-0"))
    kernel.advance(0.004)
    assert node_of(server, "web-0") is None
    kernel.advance(0.002)
    assert node_of(server, "web-0") == "node-1"
    binds = requests(server, "default-scheduler", "create")
    assert [(r["resource"], r["name"], r["code"]) for r in binds] == [("pods/binding", "web-0", 201)]


def test_terminal_pods_free_their_place_for_spreading():
    kernel, server, sim = make_world()
    for i in range(3):
        server.create("pods", "default", pod(f"web-{i}"))
    kernel.advance(3)
    sim.kubelets["node-2"].succeed(server.get("pods", "default", "web-1"))
    kernel.advance(1)
    server.create("pods", "default", pod("web-3"))
    kernel.advance(0.1)
    assert node_of(server, "web-3") == "node-2"


def test_pods_for_another_scheduler_are_left_alone():
    kernel, server, _ = make_world()
    server.create("pods", "default", pod("custom", schedulerName="my-scheduler"))
    kernel.advance(1)
    assert node_of(server, "custom") is None
    assert requests(server, "default-scheduler") == []


def test_pod_without_a_usable_node_gets_one_unschedulable_status_write():
    kernel, server, sim = make_world()
    for name in sim.kubelets:
        sim.node_down(name)
    kernel.advance(41)
    server.create("pods", "default", pod("web-0"))
    kernel.advance(5)
    stored = server.get("pods", "default", "web-0")
    scheduled = [c for c in stored["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled == [
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": "2026-01-01T00:00:41Z",
            "reason": "Unschedulable",
            "message": UNREACHABLE_MESSAGE,
        }
    ]
    assert stored["status"]["phase"] == "Pending"
    assert len(requests(server, "default-scheduler", "update", "pods/status")) == 1


def test_unschedulable_pod_is_bound_when_a_node_becomes_ready_again():
    kernel, server, sim = make_world()
    for name in sim.kubelets:
        sim.node_down(name)
    kernel.advance(41)
    server.create("pods", "default", pod("web-0"))
    kernel.advance(5)
    sim.node_up("node-2")
    kernel.advance(0.1)
    assert node_of(server, "web-0") == "node-2"


def test_full_nodes_are_reported_as_too_many_pods():
    kernel, server, _ = make_world(nodes=2, maxPods=1)
    for i in range(3):
        server.create("pods", "default", pod(f"web-{i}"))
    kernel.advance(1)
    cond = [c for c in server.get("pods", "default", "web-2")["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond[0]["message"] == (
        "0/2 nodes are available: 2 Too many pods. no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


def test_pod_waiting_for_room_is_bound_when_a_pod_leaves_a_full_node():
    kernel, server, _ = make_world(nodes=1, maxPods=1)
    server.create("pods", "default", pod("web-0"))
    server.create("pods", "default", pod("web-1"))
    kernel.advance(3)
    assert node_of(server, "web-1") is None
    server.delete("pods", "default", "web-0", grace_period_seconds=0)
    kernel.advance(0.1)
    assert node_of(server, "web-1") == "node-1"


def test_no_nodes_at_all_is_reported_as_such():
    kernel, server, _ = make_world(nodes=0)
    server.create("pods", "default", pod("web-0"))
    kernel.advance(1)
    cond = server.get("pods", "default", "web-0")["status"]["conditions"][0]
    assert cond["message"] == "no nodes available to schedule pods"


def test_pod_tolerating_the_unreachable_taint_may_go_to_a_lost_node():
    kernel, server, sim = make_world()
    for name in sim.kubelets:
        sim.node_down(name)
    kernel.advance(41)
    tolerations = [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}]
    server.create("pods", "default", pod("daemon", tolerations=tolerations))
    kernel.advance(1)
    assert node_of(server, "daemon") == "node-1"


def test_scheduler_latency_spaces_the_scheduling_cycles():
    kernel, server, _ = make_world(schedulerLatency=0.5)
    for i in range(3):
        server.create("pods", "default", pod(f"web-{i}"))
    kernel.advance(0.1)
    assert [node_of(server, f"web-{i}") for i in range(3)] == ["node-1", None, None]
    kernel.advance(1.0)
    assert [node_of(server, f"web-{i}") for i in range(3)] == ["node-1", "node-2", "node-3"]


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        ({"key": "k", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "w"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
        ({"operator": "Exists"}, {"key": "any", "effect": "NoExecute"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, {"key": "k", "effect": "NoSchedule"}, False),
        ({"key": "other", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, False),
    ],
)
def test_toleration_matching_follows_upstream(toleration, taint, expected):
    assert toleration_tolerates(toleration, taint) is expected


def test_prefer_no_schedule_taints_never_block():
    taints = [{"key": "k", "effect": "PreferNoSchedule"}]
    assert find_untolerated_taint(taints, []) is None

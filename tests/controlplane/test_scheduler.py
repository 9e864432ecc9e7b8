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


# -- resource requests (NodeResourcesFit) -------------------------------------------------------
# 64 CPUs is more than a 4-CPU node's whole allocatable: NodeResourcesFit's status is then
# UnschedulableAndUnresolvable, and preemption "is not helpful" (fitsRequest's Unresolvable).
INSUFFICIENT_CPU_MESSAGE = (
    "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, "
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


def requesting(name, cpu=None, memory=None, **spec):
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return pod(name, containers=[{"name": "app", "image": "nginx", "resources": {"requests": requests}}], **spec)


def events_of(server, name, reason=None):
    return [
        e
        for e in server.list("events", "default")["items"]
        if e["involvedObject"]["name"] == name and (reason is None or e["reason"] == reason)
    ]


def scheduled_condition(server, name):
    conditions = server.get("pods", "default", name)["status"].get("conditions") or []
    return next(c for c in conditions if c["type"] == "PodScheduled")


def test_pod_asking_64_cpus_on_4_cpu_nodes_stays_pending_with_insufficient_cpu():
    kernel, server, _ = make_world()
    server.create("pods", "default", requesting("big", cpu="64"))
    kernel.advance(1)
    assert node_of(server, "big") is None
    cond = scheduled_condition(server, "big")
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", INSUFFICIENT_CPU_MESSAGE)
    [event] = events_of(server, "big", "FailedScheduling")
    assert (event["type"], event["message"], event["source"]) == (
        "Warning",
        INSUFFICIENT_CPU_MESSAGE,
        {"component": "default-scheduler"},
    )


def test_every_insufficient_resource_of_a_node_is_a_reason():
    kernel, server, _ = make_world(nodes=2)
    server.create("pods", "default", requesting("big", cpu="5", memory="17Gi"))
    kernel.advance(1)
    assert scheduled_condition(server, "big")["message"] == (
        "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory. no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_requests_count_against_allocatable_minus_the_pods_bound_there():
    kernel, server, _ = make_world(nodes=1)
    server.create("pods", "default", requesting("a", cpu="3"))
    server.create("pods", "default", requesting("b", cpu="1500m"))
    server.create("pods", "default", requesting("c", cpu="1", memory="1Gi"))
    kernel.advance(1)
    assert [node_of(server, n) for n in ("a", "b", "c")] == ["node-1", None, "node-1"]
    # 1.5 CPUs would fit on an empty node: evicting pods could help, were there lower priorities.
    assert scheduled_condition(server, "b")["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    server.delete("pods", "default", "a", grace_period_seconds=0)
    kernel.advance(2)  # the pod leaving frees 3 CPUs: b is retried (after its 1 s back-off)
    assert node_of(server, "b") == "node-1"


def test_pods_without_requests_fit_on_a_node_whose_cpu_is_taken():
    kernel, server, _ = make_world(nodes=1)
    server.create("pods", "default", requesting("all", cpu="4"))
    server.create("pods", "default", pod("plain"))
    kernel.advance(1)
    assert (node_of(server, "all"), node_of(server, "plain")) == ("node-1", "node-1")


def test_a_bound_pod_gets_a_scheduled_event_from_default_scheduler():
    kernel, server, _ = make_world()
    server.create("pods", "default", pod("web-0"))
    kernel.advance(1)
    [event] = events_of(server, "web-0", "Scheduled")
    assert (event["type"], event["message"], event["source"]["component"]) == (
        "Normal",
        "Successfully assigned default/web-0 to node-1",
        "default-scheduler",
    )
    posts = requests(server, "default-scheduler", "create", "events")
    assert [r["code"] for r in posts] == [201]


def test_an_unschedulable_pod_is_retried_after_five_minutes_at_the_next_30_second_tick():
    kernel, server, _ = make_world()
    server.create("pods", "default", requesting("big", cpu="64"))
    kernel.advance(329)
    assert events_of(server, "big", "FailedScheduling")[0]["count"] == 1
    kernel.advance(1.5)  # t=330: the first tick at which it waited more than 300 s
    assert events_of(server, "big", "FailedScheduling")[0]["count"] == 2
    kernel.advance(330)
    assert events_of(server, "big", "FailedScheduling")[0]["count"] == 3


def test_a_retried_pod_waits_out_its_back_off_first():
    kernel, server, _ = make_world(nodes=1)
    server.create("pods", "default", requesting("big", cpu="8"))
    kernel.advance(0.2)
    node = server.get("nodes", None, "node-1")
    grown = {**node["status"], "allocatable": {**node["status"]["allocatable"], "cpu": "16"}}
    server.update("nodes", None, "node-1", {**node, "status": grown}, subresource="status")
    kernel.advance(0.5)
    assert node_of(server, "big") is None  # its 1 s back-off runs to t=1
    kernel.advance(0.5)
    assert node_of(server, "big") == "node-1"


def test_pod_requests_sum_containers_and_take_the_largest_init_container():
    from controlplane.scheduler import pod_requests

    def c(cpu, memory="0", **extra):
        return {"name": "x", "image": "i", "resources": {"requests": {"cpu": cpu, "memory": memory}}, **extra}

    spec = {
        "containers": [c("100m", "64Mi"), c("0.25", "1Gi")],
        "initContainers": [c("2", "1Mi"), c("50m", "10Mi", restartPolicy="Always")],
        "overhead": {"cpu": "10m"},
    }
    assert pod_requests({"spec": spec}) == (2000 + 10, 64 * 2**20 + 2**30 + 10 * 2**20)
    assert pod_requests({"spec": {"containers": [{"name": "x", "image": "i"}]}}) == (0, 0)

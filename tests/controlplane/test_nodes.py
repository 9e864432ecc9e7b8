"""Nodes, node loss and the simulator plumbing (controlplane/nodes.py)."""

from __future__ import annotations

import pytest

from controlplane.apiserver import APIServer
from controlplane.kernel import Kernel
from controlplane.nodes import NodeSimulator, eviction_delay, pod_display_state
from controlplane.trace import Trace
from tests.controlplane.factories import bare_pod, node_world

make_world = node_world
pod = bare_pod


def node(server, name="node-1"):
    return server.get("nodes", None, name)


def ready_condition(obj):
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")


def three_pods_on_node_1(kernel, server):
    """Three nodes, six running pods; node-1 runs web-0 and web-3."""
    for i in range(6):
        server.create("pods", "default", pod(f"web-{i}"))
    kernel.advance(3)


def test_start_registers_ready_nodes_with_capacity_and_addresses():
    _, server, _ = make_world()
    nodes = server.list("nodes")["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["node-1", "node-2", "node-3"]
    n1 = nodes[0]
    assert n1["metadata"]["labels"]["kubernetes.io/hostname"] == "node-1"
    assert n1["metadata"]["labels"]["kubernetes.io/os"] == "linux"
    assert n1["metadata"]["labels"]["kubernetes.io/arch"] == "amd64"
    assert n1["status"]["capacity"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    assert n1["status"]["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    assert n1["status"]["addresses"][0] == {"type": "InternalIP", "address": "10.0.0.1"}
    assert ready_condition(n1)["status"] == "True"
    assert ready_condition(n1)["reason"] == "KubeletReady"
    registrations = [r for r in server.requests if r["resource"] == "nodes" and r["verb"] == "create"]
    assert [r["client"] for r in registrations] == ["kubelet"] * 3


def test_node_down_turns_the_node_unknown_after_the_grace_period():
    kernel, server, sim = make_world()
    sim.node_down("node-1")
    kernel.advance(39.9)
    assert ready_condition(node(server))["status"] == "True"
    kernel.advance(0.2)
    n1 = node(server)
    for cond in n1["status"]["conditions"]:
        assert (cond["status"], cond["reason"], cond["message"]) == (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )
    assert ready_condition(n1)["lastTransitionTime"] == "2026-01-01T00:00:40Z"
    assert [(t["key"], t["effect"]) for t in n1["spec"]["taints"]] == [
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
    ]
    writers = {r["client"] for r in server.requests if r["resource"].startswith("nodes") and r["verb"] == "update"}
    assert writers == {"node-controller"}


def test_pods_on_a_lost_node_become_not_ready_with_phase_unchanged():
    kernel, server, sim = make_world()
    three_pods_on_node_1(kernel, server)
    sim.node_down("node-1")
    kernel.advance(41)
    for name in ("web-0", "web-3"):
        p = server.get("pods", "default", name)
        assert p["status"]["phase"] == "Running"
        assert ready_condition(p)["status"] == "False"
        assert ready_condition(p)["lastTransitionTime"] == "2026-01-01T00:00:43Z"
        assert sim.pod_state("default", name) == "NotReady"
    assert ready_condition(server.get("pods", "default", "web-1"))["status"] == "True"


def test_pods_on_a_lost_node_are_deleted_after_toleration_seconds_and_stay_terminating():
    kernel, server, sim = make_world()
    three_pods_on_node_1(kernel, server)
    sim.node_down("node-1")
    kernel.advance(40 + 299)
    assert "deletionTimestamp" not in server.get("pods", "default", "web-0")["metadata"]
    kernel.advance(2)
    for name in ("web-0", "web-3"):
        p = server.get("pods", "default", name)
        assert p["metadata"]["deletionTimestamp"]
        disruption = next(c for c in p["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert disruption["reason"] == "DeletionByTaintManager"
        assert sim.pod_state("default", name) == "Terminating"
    kernel.advance(600)
    assert server.get("pods", "default", "web-0")["metadata"]["deletionTimestamp"]
    assert "deletionTimestamp" not in server.get("pods", "default", "web-1")["metadata"]


def test_node_up_removes_the_taints_and_finishes_the_pending_deletions():
    kernel, server, sim = make_world()
    three_pods_on_node_1(kernel, server)
    sim.node_down("node-1")
    kernel.advance(400)
    sim.node_up("node-1")
    kernel.advance(0.1)
    n1 = node(server)
    assert ready_condition(n1)["status"] == "True"
    assert "taints" not in n1["spec"]
    assert sim.snapshot()["nodes"][0]["state"] == "Ready"
    kernel.advance(1.5)
    names = [p["metadata"]["name"] for p in server.list("pods", "default")["items"]]
    assert names == ["web-1", "web-2", "web-4", "web-5"]


def test_node_up_before_the_grace_period_changes_nothing():
    kernel, server, sim = make_world()
    three_pods_on_node_1(kernel, server)
    sim.node_down("node-1")
    kernel.advance(20)
    sim.node_up("node-1")
    kernel.advance(100)
    assert ready_condition(node(server))["status"] == "True"
    assert ready_condition(server.get("pods", "default", "web-0"))["status"] == "True"
    assert not [
        r for r in server.requests if r["client"] == "node-controller" and r["verb"] != "list" and r["verb"] != "watch"
    ]


def test_node_up_before_eviction_makes_the_pods_ready_again():
    kernel, server, sim = make_world()
    three_pods_on_node_1(kernel, server)
    sim.node_down("node-1")
    kernel.advance(60)
    sim.node_up("node-1")
    kernel.advance(400)
    p = server.get("pods", "default", "web-0")
    assert "deletionTimestamp" not in p["metadata"]
    assert ready_condition(p)["status"] == "True"
    assert sim.pod_state("default", "web-0") == "Ready"


def test_a_down_kubelet_ignores_its_pods():
    kernel, server, sim = make_world(nodes=1)
    sim.node_down("node-1")
    server.create("pods", "default", pod("web-0"))
    kernel.advance(10)
    p = server.get("pods", "default", "web-0")
    assert p["spec"]["nodeName"] == "node-1"  # the controller has not noticed yet
    assert p["status"]["phase"] == "Pending"
    assert sim.pod_state("default", "web-0") == "Scheduled"
    sim.node_up("node-1")
    kernel.advance(2.1)
    assert server.get("pods", "default", "web-0")["status"]["phase"] == "Running"


def test_pod_and_node_transitions_are_traced():
    kernel = Kernel(seed=1)
    trace = Trace(kernel)
    records = []
    trace.subscribe(records.append)
    server = APIServer(kernel, trace)
    sim = NodeSimulator(server, kernel, trace, {"nodes": 1})
    sim.start()
    server.create("pods", "default", pod("web-0"))
    kernel.advance(3)
    sim.node_down("node-1")
    kernel.advance(41)
    server.delete("pods", "default", "web-0", grace_period_seconds=0)
    kernel.advance(1)
    pods = [(r["from"], r["to"], r["node"]) for r in records if r["kind"] == "pod.transition"]
    assert pods == [
        (None, "Pending", None),
        ("Pending", "Scheduled", "node-1"),
        ("Scheduled", "Ready", "node-1"),
        ("Ready", "NotReady", "node-1"),
        ("NotReady", "Terminating", "node-1"),  # grace 0: marked, then removed (upstream too)
        ("Terminating", "Deleted", "node-1"),
    ]
    nodes = [(r["name"], r["from"], r["to"]) for r in records if r["kind"] == "node.transition"]
    assert nodes == [("node-1", None, "Ready"), ("node-1", "Ready", "Unknown")]


def test_snapshot_lists_nodes_and_pod_states():
    kernel, server, sim = make_world()
    three_pods_on_node_1(kernel, server)
    sim.node_down("node-2")
    kernel.advance(41)
    snap = sim.snapshot()
    assert [(n["name"], n["state"], n["kubelet"], n["pods"]) for n in snap["nodes"]] == [
        ("node-1", "Ready", "running", 2),
        ("node-2", "Unknown", "stopped", 2),
        ("node-3", "Ready", "running", 2),
    ]
    assert snap["nodes"][1]["taints"] == [
        "node.kubernetes.io/unreachable:NoExecute",
        "node.kubernetes.io/unreachable:NoSchedule",
    ]
    assert snap["nodes"][1]["podStates"] == {"NotReady": 2}
    assert len(snap["pods"]) == 6
    assert snap["pending"] == 0


def test_apply_config_adds_nodes_and_refuses_to_shrink():
    _, server, sim = make_world(nodes=1)
    sim.apply_config({"nodes": 2, "kubeletQPS": 5})
    assert [n["metadata"]["name"] for n in server.list("nodes")["items"]] == ["node-1", "node-2"]
    assert sim.kubelets["node-1"].client.qps == 5
    with pytest.raises(ValueError, match="nodes"):
        sim.apply_config({"nodes": 1})


def test_apply_config_changes_timings_for_later_pods():
    kernel, server, sim = make_world(nodes=1)
    sim.apply_config({"podStartup": 5.0})
    server.create("pods", "default", pod("web-0"))
    kernel.advance(4)
    assert server.get("pods", "default", "web-0")["status"]["phase"] == "Pending"
    kernel.advance(1.1)
    assert server.get("pods", "default", "web-0")["status"]["phase"] == "Running"


def test_a_dropped_pods_watch_is_relisted_and_nothing_is_missed():
    kernel, server, _ = make_world(nodes=1)
    for w in list(server.watches_for("pods")):
        w.drop()
    server.create("pods", "default", pod("web-0"))
    kernel.advance(3)
    assert server.get("pods", "default", "web-0")["status"]["phase"] == "Running"


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], 300.0),
        (
            [
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 30,
                }
            ],
            30.0,
        ),
        ([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}], None),
        (
            [
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 0,
                }
            ],
            0.0,
        ),
    ],
)
def test_eviction_delay_follows_the_pod_tolerations(tolerations, expected):
    assert eviction_delay(pod("p", tolerations=tolerations), 300.0) == expected


def test_display_state_separates_not_ready_from_starting():
    running = {
        "metadata": {"name": "p"},
        "spec": {"nodeName": "n"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]},
    }
    assert pod_display_state(running, "Scheduled") == "Running"
    assert pod_display_state(running, "Ready") == "NotReady"


def _traced_run():
    kernel = Kernel(seed=7)
    trace = Trace(kernel)
    records = []
    trace.subscribe(records.append)
    server = APIServer(kernel, trace)
    sim = NodeSimulator(server, kernel, trace, {"nodes": 3, "podReadyDelay": 1.0})
    sim.start()
    for i in range(9):
        server.create("pods", "default", pod(f"web-{i}"))
    kernel.advance(5)
    sim.kubelets["node-2"].crash(server.get("pods", "default", "web-1"))
    sim.node_down("node-3")
    kernel.advance(400)
    sim.node_up("node-3")
    kernel.advance(60)
    return records, server.requests


def test_same_seed_gives_the_same_trace_and_requests():
    assert _traced_run() == _traced_run()


def test_kubelets_report_the_version_the_api_server_reports():
    from controlplane.simulation import VERSION_INFO

    _, server, _ = node_world()
    info = server.get("nodes", None, "node-1")["status"]["nodeInfo"]
    assert info["kubeletVersion"] == info["kubeProxyVersion"] == VERSION_INFO["gitVersion"] == "v1.32.0-ctrlscope"
    assert (VERSION_INFO["major"], VERSION_INFO["minor"]) == ("1", "32")  # what /version serves


def test_display_state_names_an_image_that_cannot_be_pulled():
    """A pod waiting for an image it cannot pull reads as kubectl's STATUS column says it, not
    "Scheduled"; ContainerCreating stays Scheduled."""

    def waiting(reason):
        return {
            "metadata": {"name": "p"},
            "spec": {"nodeName": "n"},
            "status": {
                "phase": "Pending",
                "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": reason}}}],
            },
        }

    assert pod_display_state(waiting("ErrImagePull"), "Scheduled") == "ErrImagePull"
    assert pod_display_state(waiting("ImagePullBackOff"), "ErrImagePull") == "ImagePullBackOff"
    assert pod_display_state(waiting("ContainerCreating"), "Pending") == "Scheduled"

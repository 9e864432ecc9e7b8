"""The node components tell their story to the real kubectl (issue #18 §5): the scheduler's and
the kubelet's Events in `describe pod`, resource-aware scheduling, ContainerCreating, the
admission defaults, one version for the API server and the nodes, namespaces that terminate."""

from __future__ import annotations

import copy
import json
import re

from tests.kubectl.conftest import WORLD, Kubectl

BIG = """\
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources: {requests: {cpu: "64"}}
"""


def event_rows(describe: str) -> list[list[str]]:
    """The rows of `describe`'s Events table, split on runs of two or more spaces."""
    rows = describe.split("Events:", 1)[1].strip().splitlines()[2:]
    return [re.split(r"\s{2,}", row.strip()) for row in rows]


def reason_from_message(describe: str) -> list[tuple[str, str, str]]:
    return [(row[1], row[3], row[4]) for row in event_rows(describe)]


def test_describe_pod_shows_the_scheduler_and_kubelet_events_and_admission_defaults(kubectl):
    kubectl.until(lambda out: out.count(" 1/1 ") == 3, "get", "pods", "-l", "app=web")
    pod = kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}")
    node = kubectl("get", "pod", pod, "-o", "jsonpath={.spec.nodeName}")
    out = kubectl("describe", "pod", pod)
    story = reason_from_message(out)
    assert story[0] == ("Scheduled", "default-scheduler", f"Successfully assigned default/{pod} to {node}")
    reasons = [reason for reason, _, _ in story]
    assert reasons[-3:] == ["Pulled", "Created", "Started"]
    assert {source for _, source, _ in story[1:]} == {"kubelet"}
    assert ("Created", "kubelet", "Created container: nginx") in story
    assert ("Started", "kubelet", "Started container nginx") in story
    pulled = next(message for reason, _, message in story if reason == "Pulled")
    assert pulled == 'Container image "nginx:1.27" already present on machine' or pulled.startswith(
        'Successfully pulled image "nginx:1.27" in '
    )
    assert re.search(r"Service Account:\s+default\n", out)
    assert "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s" in out
    assert "node.kubernetes.io/unreachable:NoExecute op=Exists for 300s" in out


def test_a_pod_asking_64_cpus_stays_pending_with_failed_scheduling(kubectl):
    path = kubectl.server.tmp / f"{kubectl.sim_id}-big.yaml"
    path.write_text(BIG)
    assert kubectl("apply", "-f", str(path)).strip() == "pod/big created"
    out = kubectl.until(lambda out: "FailedScheduling" in out, "describe", "pod", "big")
    assert re.search(r"Status:\s+Pending\n", out)
    [failed] = [row for row in reason_from_message(out) if row[0] == "FailedScheduling"]
    assert failed == (
        "FailedScheduling",
        "default-scheduler",
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    )
    condition = json.loads(kubectl("get", "pod", "big", "-o", "jsonpath={.status.conditions[0]}"))
    assert (condition["type"], condition["status"], condition["reason"]) == ("PodScheduled", "False", "Unschedulable")


def test_a_starting_pod_shows_container_creating(server, kubectl_env):
    world = copy.deepcopy(WORLD)
    world["config"]["podStartup"] = 3600
    sim_id = server.start(world=world)
    try:
        kubectl = Kubectl(server, sim_id, kubectl_env)
        out = kubectl.until(lambda out: out.count("ContainerCreating") == 5, "get", "pods")
        assert all(row.split()[1:3] == ["0/1", "ContainerCreating"] for row in out.strip().splitlines()[1:])
        pod = kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}")
        story = reason_from_message(kubectl("describe", "pod", pod))
        assert [reason for reason, _, _ in story] == ["Scheduled", "Pulling"]
        assert story[1] == ("Pulling", "kubelet", 'Pulling image "nginx:1.27"')
    finally:
        server.stop(sim_id)


def test_the_api_server_and_the_kubelets_report_the_same_version(kubectl):
    server_version = json.loads(kubectl("version", "-o", "json"))["serverVersion"]["gitVersion"]
    kubelets = kubectl("get", "nodes", "-o", "jsonpath={.items[*].status.nodeInfo.kubeletVersion}").split()
    proxies = kubectl("get", "nodes", "-o", "jsonpath={.items[*].status.nodeInfo.kubeProxyVersion}").split()
    assert kubelets == proxies == [server_version, server_version]
    rows = [line.split() for line in kubectl("get", "nodes").strip().splitlines()[1:]]
    assert [row[-1] for row in rows] == [server_version, server_version]


def test_a_deleted_namespace_terminates_then_goes_away(kubectl):
    team = kubectl.server.tmp / f"{kubectl.sim_id}-team.yaml"
    team.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
    pod = kubectl.server.tmp / f"{kubectl.sim_id}-team-pod.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team}\n"
        "spec: {containers: [{name: app, image: nginx:1.27}]}\n"
    )
    assert kubectl("apply", "-f", str(team)).strip() == "namespace/team created"
    assert kubectl("apply", "-f", str(pod)).strip() == "pod/p created"
    kubectl.until(lambda out: " 1/1 " in out, "get", "pods", "-n", "team")
    spec = json.loads(kubectl("get", "ns", "team", "-o", "jsonpath={.spec}"))
    assert spec == {"finalizers": ["kubernetes"]}
    assert kubectl("delete", "ns", "team", "--wait=false").strip() == 'namespace "team" deleted'
    row = kubectl("get", "ns", "team").strip().splitlines()[1].split()
    assert row[:2] == ["team", "Terminating"]
    other = pod.with_name(f"{kubectl.sim_id}-team-pod2.yaml")
    other.write_text(pod.read_text().replace("name: p,", "name: q,"))
    refused = kubectl.run("apply", "-f", str(other), check=False)
    assert refused.returncode == 1
    assert (
        'pods "q" is forbidden: unable to create new content in namespace team because it is being terminated'
        in refused.stderr
    )
    # The namespace controller waits for the pod (grace 30 s: it looks again after 16 s).
    waited = kubectl.run("wait", "--for=delete", "ns/team", "--timeout=40s", check=False, timeout=60)
    assert waited.returncode == 0, waited.stderr
    missing = kubectl.run("get", "ns", "team", check=False)
    assert 'namespaces "team" not found' in missing.stderr


def test_kubectl_taint_no_execute_evicts_the_pods_that_do_not_tolerate_it(kubectl):
    """`kubectl taint node … :NoExecute` (the TaintEvictionController): the node's pods go at once,
    with the DisruptionTarget condition and a TaintManagerEviction Event; the ReplicaSet's
    replacements land on the other node."""
    path = "jsonpath={range .items[?(@.status.phase=='Running')]}{.metadata.name} {.spec.nodeName}{'\\n'}{end}"
    running = kubectl.until(lambda out: len(out.split()) == 6, "get", "pods", "-l", "app=web", "-o", path)
    on_node_1 = sorted(line.split()[0] for line in running.splitlines() if line.endswith(" node-1"))
    assert on_node_1, running  # the scheduler spreads the 3 replicas over both nodes
    assert kubectl("taint", "nodes", "node-1", "dedicated=gpu:NoExecute").strip() == "node/node-1 tainted"
    # Each is gone, or terminating with the taint manager's condition.
    path = (
        "jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp} "
        "{.status.conditions[?(@.type=='DisruptionTarget')].reason}{'\\n'}{end}"
    )

    def evicted(out: str) -> bool:
        rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
        gone = [None, "DeletionByTaintManager"]  # [deletionTimestamp, the condition's reason]
        return all(rows.get(name, gone)[1:] == ["DeletionByTaintManager"] for name in on_node_1)

    kubectl.until(evicted, "get", "pods", "-l", "app=web", "-o", path)
    events = kubectl("get", "events", "--field-selector", "reason=TaintManagerEviction", "-o", "json")
    messages = {e["message"] for e in json.loads(events)["items"]}  # the RC's pods there went too
    assert {f"Marking for deletion Pod default/{name}" for name in on_node_1} <= messages
    path = "jsonpath={range .items[*]}{.spec.nodeName}{'\\n'}{end}"
    kubectl.until(lambda out: out.split() == ["node-2"] * 3, "get", "pods", "-l", "app=web", "-o", path)

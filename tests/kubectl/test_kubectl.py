"""Every command of issue 8 §5 with the real kubectl, against a live server."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
import yaml

from controlplane.simulation import run_scenario
from tests.kubectl.conftest import KUBECTL, Kubectl

FRONT = """\
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: front
  labels: {app: front}
spec:
  replicas: 2
  selector: {matchLabels: {app: front}}
  template:
    metadata: {labels: {app: front}}
    spec: {containers: [{name: nginx, image: "nginx:1.27"}]}
"""


def ready(n):
    return lambda out: out.count(" 1/1 ") == n and "Terminating" not in out


def lines(out):
    return [line.split() for line in out.strip().splitlines()]


def write(kubectl: Kubectl, name: str, text: str) -> str:
    path = kubectl.server.tmp / f"{kubectl.sim_id}-{name}"
    path.write_text(text)
    return str(path)


def test_get_prints_the_tables_a_cluster_prints(kubectl):
    pods = kubectl.until(ready(5), "get", "pods")
    assert lines(pods)[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert len(lines(pods)) == 6 and all(row[2] == "Running" for row in lines(pods)[1:])
    wide = kubectl("get", "pods", "-o", "wide")
    assert lines(wide)[0] == [
        *("NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"),
        *("NOMINATED", "NODE", "READINESS", "GATES"),
    ]
    assert all(row[5].startswith("10.244.") and row[6].startswith("node-") for row in lines(wide)[1:])
    # The pods' readiness reaches kubectl before the controller's next status write (as on a
    # real cluster): wait for the status to say so.
    rs = kubectl.until(lambda out: lines(out)[1][:4] == ["web", "3", "3", "3"], "get", "rs", "-o", "wide")
    assert lines(rs)[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert lines(rs)[1][:4] == ["web", "3", "3", "3"] and lines(rs)[1][5:] == ["nginx", "nginx:1.27", "app=web"]
    rc = kubectl.until(lambda out: lines(out)[1][:4] == ["legacy", "2", "2", "2"], "get", "rc")
    assert lines(rc)[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert lines(rc)[1][:4] == ["legacy", "2", "2", "2"]
    nodes = kubectl("get", "nodes")
    assert lines(nodes)[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [row[:2] for row in lines(nodes)[1:]] == [["node-1", "Ready"], ["node-2", "Ready"]]
    events = kubectl("get", "events")
    assert lines(events)[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "SuccessfulCreate   replicaset/web" in events
    everything = kubectl("get", "pods", "-A", "-l", "app=web", "--show-labels")
    assert lines(everything)[0][0] == "NAMESPACE" and lines(everything)[0][-1] == "LABELS"
    assert len(lines(everything)) == 4 and all(r[0] == "default" and r[-1] == "app=web" for r in lines(everything)[1:])
    as_json = json.loads(kubectl("get", "pods", "-l", "app=legacy", "-o", "json"))
    assert as_json["kind"] == "List" and len(as_json["items"]) == 2
    assert as_json["items"][0]["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController"
    as_yaml = yaml.safe_load(kubectl("get", "rs", "web", "-o", "yaml"))
    assert as_yaml["kind"] == "ReplicaSet" and as_yaml["status"]["readyReplicas"] == 3
    assert "pod/" in kubectl("get", "all") and "replicaset.apps/web" in kubectl("get", "all")


def test_describe_rs_shows_the_pods_status_and_the_events(kubectl):
    kubectl.until(ready(5), "get", "pods")
    out = kubectl("describe", "rs", "web")
    assert "Name:         web" in out and "Selector:     app=web" in out
    assert "Replicas:     3 current / 3 desired" in out
    assert "Pods Status:  3 Running / 0 Waiting / 0 Succeeded / 0 Failed" in out
    assert "Events:" in out and "SuccessfulCreate" in out and "replicaset-controller" in out
    rc = kubectl("describe", "rc", "legacy")
    assert "Created pod: legacy-" in rc
    pod = kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}")
    assert "Controlled By:  ReplicaSet/web" in kubectl("describe", "pod", pod)
    node = kubectl("describe", "node", "node-1")
    assert "Allocatable:" in node and "Non-terminated Pods:" in node


def test_apply_twice_creates_then_patches_strategically(kubectl):
    path = write(kubectl, "front.yaml", FRONT)
    assert kubectl("apply", "-f", path).strip() == "replicaset.apps/front created"
    path = write(kubectl, "front.yaml", FRONT.replace("replicas: 2", "replicas: 3").replace("nginx:1.27", "nginx:1.28"))
    assert kubectl("apply", "-f", path).strip() == "replicaset.apps/front configured"
    assert kubectl("apply", "-f", path).strip() == "replicaset.apps/front unchanged"
    rs = json.loads(kubectl("get", "rs", "front", "-o", "json"))
    assert rs["spec"]["replicas"] == 3
    assert rs["spec"]["template"]["spec"]["containers"] == [
        {
            "name": "nginx",
            "image": "nginx:1.28",
            "imagePullPolicy": "IfNotPresent",
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
    ]
    kubectl.until(lambda out: out.count("1/1") == 3, "get", "pods", "-l", "app=front")


def test_server_side_apply_twice_then_a_conflict_and_force(kubectl):
    path = write(kubectl, "front.yaml", FRONT)
    assert kubectl("apply", "--server-side", "-f", path).strip() == "replicaset.apps/front serverside-applied"
    assert kubectl("apply", "--server-side", "-f", path).strip() == "replicaset.apps/front serverside-applied"
    other = write(kubectl, "front-other.yaml", FRONT.replace("replicas: 2", "replicas: 4"))
    refused = kubectl.run("apply", "--server-side", "--field-manager=other", "-f", other, check=False)
    assert refused.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas' in refused.stderr
    forced = kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", other)
    assert forced.strip() == "replicaset.apps/front serverside-applied"
    rs = json.loads(kubectl("get", "rs", "front", "-o", "json", "--show-managed-fields"))
    assert rs["spec"]["replicas"] == 4
    assert {m["manager"] for m in rs["metadata"]["managedFields"]} == {"kubectl", "other"}


def test_create_then_409_already_exists(kubectl):
    path = write(kubectl, "front.yaml", FRONT)
    assert kubectl("create", "-f", path).strip() == "replicaset.apps/front created"
    again = kubectl.run("create", "-f", path, check=False)
    assert again.returncode == 1
    assert (
        f'Error from server (AlreadyExists): error when creating "{path}": replicasets.apps "front" already exists'
        in (again.stderr)
    )


def test_scale_and_the_controller_creates_the_pods(kubectl):
    kubectl.until(ready(3), "get", "pods", "-l", "app=web")
    assert kubectl("scale", "rs", "web", "--replicas=5").strip() == "replicaset.apps/web scaled"
    kubectl.until(ready(5), "get", "pods", "-l", "app=web")
    assert kubectl("scale", "rc", "legacy", "--current-replicas=2", "--replicas=1").strip() == (
        "replicationcontroller/legacy scaled"
    )


def test_patch_with_the_three_types_and_label_overwrite(kubectl):
    out = kubectl("patch", "rs", "web", "-p", '{"metadata":{"labels":{"tier":"fe"}}}')
    assert out.strip() == "replicaset.apps/web patched"
    # kubectl says "(no change)" when the answer equals the object it read just before patching:
    # a status write of the controller in between (the demo runs on) makes it say "patched". The
    # same no-op patch again must say "(no change)" once nothing else writes (and a server that
    # bumped the resourceVersion of a no-op patch would never).
    for _ in range(10):
        again = kubectl("patch", "rs", "web", "-p", '{"metadata":{"labels":{"tier":"fe"}}}').strip()
        if again != "replicaset.apps/web patched":
            break
        time.sleep(0.3)
    assert again == "replicaset.apps/web patched (no change)"
    kubectl("patch", "rs", "web", "--type=merge", "-p", '{"metadata":{"annotations":{"note":"merge"}}}')
    kubectl("patch", "rs", "web", "--type=json", "-p", '[{"op":"replace","path":"/spec/replicas","value":4}]')
    assert kubectl("label", "rs", "web", "tier=be", "--overwrite").strip() == "replicaset.apps/web labeled"
    rs = json.loads(kubectl("get", "rs", "web", "-o", "json"))
    assert rs["metadata"]["labels"] == {"app": "web", "tier": "be"}
    assert rs["metadata"]["annotations"] == {"note": "merge"} and rs["spec"]["replicas"] == 4
    # Strategic merge by the containers' merge key: the image changes, the container stays whole.
    kubectl("set", "image", "rs/web", "nginx=nginx:2")
    containers = json.loads(kubectl("get", "rs", "web", "-o", "json"))["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"], c["imagePullPolicy"]) for c in containers] == [("nginx", "nginx:2", "IfNotPresent")]


def test_delete_pod_and_the_controller_replaces_it(kubectl):
    kubectl.until(ready(3), "get", "pods", "-l", "app=web")
    before = set(kubectl("get", "pods", "-l", "app=web", "-o", "name").split())
    victim = sorted(before)[0]
    assert kubectl("delete", victim).strip() == f'pod "{victim.split("/")[1]}" deleted'
    after = kubectl.until(
        lambda out: len(out.split()) == 3 and victim not in out, "get", "pods", "-l", "app=web", "-o", "name"
    )
    assert len(set(after.split()) - before) == 1


def test_delete_rs_orphan_and_foreground(kubectl):
    kubectl.until(ready(5), "get", "pods")
    assert kubectl("delete", "rs", "web", "--cascade=orphan").strip() == 'replicaset.apps "web" deleted'
    pods = json.loads(kubectl("get", "pods", "-l", "app=web", "-o", "json"))["items"]
    assert len(pods) == 3 and all("ownerReferences" not in p["metadata"] for p in pods)
    assert kubectl("delete", "rc", "legacy", "--cascade=foreground").strip() == (
        'replicationcontroller "legacy" deleted'
    )
    assert "No resources found" in kubectl.run("get", "pods", "-l", "app=legacy").stderr
    assert "No resources found" in kubectl.run("get", "rc").stderr


def test_get_pods_watch_sees_a_pod_the_controller_created(kubectl):
    kubectl.until(ready(3), "get", "pods", "-l", "app=web")
    watch = subprocess.Popen(
        [KUBECTL, "get", "pods", "-w", "-l", "app=web"], env=kubectl.env, stdout=subprocess.PIPE, text=True
    )
    try:
        header = watch.stdout.readline()
        assert header.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        known = {watch.stdout.readline().split()[0] for _ in range(3)}
        kubectl("scale", "rs", "web", "--replicas=4")
        line = watch.stdout.readline().split()
        assert line[0].startswith("web-") and line[0] not in known and line[2] in ("Pending", "ContainerCreating")
    finally:
        watch.terminate()
        watch.wait(timeout=10)


def test_wait_for_condition_ready(kubectl):
    kubectl("scale", "rs", "web", "--replicas=4")
    out = kubectl("wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout=30s")
    assert out.count("condition met") >= 3


def test_edit_with_an_editor_script(kubectl):
    editor = kubectl.server.tmp / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/replicas: 3/replicas: 2/' \"$1\"\n")
    editor.chmod(0o755)
    out = kubectl("edit", "rs", "web", env={"KUBE_EDITOR": str(editor)})
    assert out.strip() == "replicaset.apps/web edited"
    assert json.loads(kubectl("get", "rs", "web", "-o", "json"))["spec"]["replicas"] == 2
    kubectl.until(lambda out: len(out.split()) == 2, "get", "pods", "-l", "app=web", "-o", "name")


def test_errors_print_kubectls_usual_messages(kubectl, server, kubectl_env):
    missing = kubectl.run("get", "pod", "nope", check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'
    stale = FRONT.replace("name: front", 'name: web\n  resourceVersion: "1"').replace("app: front", "app: web")
    conflict = kubectl.run("replace", "-f", write(kubectl, "stale.yaml", stale), check=False)
    assert conflict.returncode == 1
    assert "Error from server (Conflict)" in conflict.stderr
    assert 'Operation cannot be fulfilled on replicasets.apps "web": the object has been modified' in conflict.stderr
    invalid = kubectl.run("scale", "rs", "web", "--replicas=-1", check=False)
    assert invalid.returncode == 1
    bad = kubectl.run("patch", "rs", "web", "-p", '{"spec":{"replicas":-2}}', check=False)
    assert bad.stderr.strip() == (
        'The ReplicaSet "web" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0'
    )
    stranger = kubectl.run("get", "pods", check=False, env={"KUBECONFIG": str(_no_token(kubectl))})
    assert stranger.returncode == 1
    # A bearer token the server refuses (the TLS kubeconfig): kubectl quotes the Status's reason, as
    # against a cluster.
    assert "error: You must be logged in to the server (Unauthorized)" in stranger.stderr
    # Nothing of the refused requests changed the world.
    assert json.loads(kubectl("get", "rs", "web", "-o", "json"))["spec"]["replicas"] == 3


def _no_token(kubectl: Kubectl):
    config = yaml.safe_load(kubectl.server.kubeconfig(kubectl.sim_id).read_text())
    config["users"][0]["user"]["token"] = "wrong"
    path = kubectl.server.tmp / "kubeconfig-wrong"
    path.write_text(yaml.safe_dump(config))
    return path


def test_dry_run_server_changes_nothing_and_is_not_an_action(kubectl):
    path = write(kubectl, "front.yaml", FRONT)
    out = kubectl("create", "--dry-run=server", "-f", path)
    assert out.strip() == "replicaset.apps/front created (server dry run)"
    assert "NotFound" in kubectl.run("get", "rs", "front", check=False).stderr
    scenario = yaml.safe_load(
        kubectl.server.session.get(f"{kubectl.server.url}/sim/{kubectl.sim_id}/scenario.yaml").text
    )
    assert not [a for a in scenario["actions"] if "request" in a]


def test_a_kubectl_session_exports_and_replays_to_the_identical_report(server, kubectl_env, tmp_path):
    sim_id = server.start()
    try:
        kubectl = Kubectl(server, sim_id, kubectl_env)
        kubectl("apply", "-f", write(kubectl, "front.yaml", FRONT))
        kubectl(
            "apply", "--server-side", "-f", write(kubectl, "front2.yaml", FRONT.replace("replicas: 2", "replicas: 3"))
        )
        kubectl("scale", "rs", "web", "--replicas=5")
        kubectl("patch", "rs", "web", "--type=json", "-p", '[{"op":"add","path":"/metadata/labels/x","value":"y"}]')
        kubectl("label", "rc", "legacy", "team=a")
        kubectl("delete", "rs", "front", "--wait=false")
        kubectl.run("get", "pod", "nope", check=False)
        server.command(sim_id, {"op": "pause"})  # the export and the report at the same instant
        scenario = server.session.get(f"{server.url}/sim/{sim_id}/scenario.yaml").text
        report = server.session.get(f"{server.url}/sim/{sim_id}/report.json").json()
    finally:
        server.stop(sim_id)
    requests_ = [a["request"] for a in yaml.safe_load(scenario)["actions"]]
    verbs = [r["verb"] for r in requests_]
    # The server-side apply is two patches: the apply, then kubectl-last-applied's annotation.
    assert verbs == ["create", "patch", "patch", "patch", "patch", "patch", "delete"]
    assert all(r["client"].startswith("kubectl/v1.32") for r in requests_)
    assert {c["client"] for c in report["apiCalls"]} >= {requests_[0]["client"]}
    path = tmp_path / "session.scenario.yaml"
    path.write_text(scenario)
    assert json.dumps(run_scenario(str(path))) == json.dumps(report)


@pytest.mark.parametrize("command", [["version"], ["api-resources"]])
def test_version_and_discovery(kubectl, command):
    out = kubectl(*command)
    if command == ["version"]:
        assert "Server Version: v1.32.0" in out
    else:
        rows = {row[0]: row for row in lines(out)[1:]}
        assert rows["pods"][1] == "po" and rows["replicasets"][1] == "rs" and rows["replicationcontrollers"][1] == "rc"

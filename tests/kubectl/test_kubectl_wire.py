"""kubectl's protobuf bodies, drain through pods/eviction, and strict field validation (issue 18
§1, §2), with the real kubectl against a live server."""

from __future__ import annotations

import json

from tests.kubectl.test_kubectl import lines, ready, write


def test_create_namespace_sends_protobuf_and_works(kubectl):
    assert kubectl("create", "namespace", "team-a").strip() == "namespace/team-a created"
    names = [row[0] for row in lines(kubectl("get", "namespaces"))[1:]]
    assert "team-a" in names
    again = kubectl.run("create", "namespace", "team-a", check=False)
    assert again.returncode == 1
    assert again.stderr.strip() == 'Error from server (AlreadyExists): namespaces "team-a" already exists'


def test_drain_cordons_evicts_and_the_controllers_replace_the_pods_elsewhere(kubectl):
    kubectl.until(ready(5), "get", "pods")
    on_node_1 = [row[0] for row in lines(kubectl("get", "pods", "-o", "wide"))[1:] if row[6] == "node-1"]
    assert on_node_1, "the scheduler put no pod on node-1"
    out = kubectl("drain", "node-1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s", timeout=90)
    assert "node/node-1 cordoned" in out and out.strip().endswith("node/node-1 drained")
    for name in on_node_1:
        assert f"pod/{name} evicted" in out
    assert lines(kubectl("get", "node", "node-1"))[1][1] == "Ready,SchedulingDisabled"

    def replaced(text: str) -> bool:
        rows = lines(text)[1:]
        return (
            len(rows) == 5
            and all(row[1] == "1/1" and row[6] == "node-2" for row in rows)
            and not {row[0] for row in rows} & set(on_node_1)
        )

    kubectl.until(replaced, "get", "pods", "-o", "wide")
    assert kubectl("uncordon", "node-1").strip() == "node/node-1 uncordoned"


TYPO = """\
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: typo}
spec:
  replcas: 8
  selector: {matchLabels: {app: typo}}
  template:
    metadata: {labels: {app: typo}}
    spec: {containers: [{name: c, image: nginx, imagePullPolicy: Always}]}
"""


def test_apply_with_a_typo_is_refused_under_strict_as_on_a_cluster(kubectl):
    path = write(kubectl, "typo.yaml", TYPO)
    for verb in ("apply", "create"):
        refused = kubectl.run(verb, "-f", path, check=False)
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            'Error from server (BadRequest): error when creating "' + path + '": ReplicaSet in version "v1" '
            'cannot be handled as a ReplicaSet: strict decoding error: unknown field "spec.replcas"'
        )
    assert kubectl.run("get", "rs", "typo", check=False).returncode == 1  # nothing stored


def test_validate_warn_stores_without_the_field_and_validate_false_drops_it_silently(kubectl):
    path = write(kubectl, "typo.yaml", TYPO)
    warned = kubectl.run("apply", "-f", path, "--validate=warn")
    assert warned.stdout.strip() == "replicaset.apps/typo created"
    assert warned.stderr.strip() == 'Warning: unknown field "spec.replcas"'
    stored = json.loads(kubectl("get", "rs", "typo", "-o", "json"))
    assert "replcas" not in stored["spec"] and stored["spec"]["replicas"] == 1
    kubectl("delete", "rs", "typo")
    quiet = kubectl.run("apply", "-f", path, "--validate=false")
    assert quiet.stdout.strip() == "replicaset.apps/typo created" and quiet.stderr == ""
    assert "replcas" not in json.loads(kubectl("get", "rs", "typo", "-o", "json"))["spec"]

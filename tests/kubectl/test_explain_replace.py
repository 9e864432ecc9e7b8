"""`kubectl explain` over the served OpenAPI schemas and `kubectl get -o yaml | kubectl replace -f -`
(issue 18 §3), with the real kubectl against a live server."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.controlplane.factories import rs_manifest


def test_explain_prints_upstreams_field_documentation(kubectl):
    out = kubectl("explain", "pods")
    assert out.startswith("KIND:       Pod\nVERSION:    v1\n\nDESCRIPTION:\n    Pod is a collection of containers")
    assert "  metadata\t<ObjectMeta>\n    ObjectMeta is metadata that all persisted resources must have" in out
    assert "  spec\t<PodSpec>\n    PodSpec is a description of a pod." in out
    assert "  apiVersion\t<string>\n    APIVersion defines the versioned schema" in out
    field = kubectl("explain", "pods.spec.containers.imagePullPolicy")
    assert "FIELD: imagePullPolicy <string>\nENUM:\n    Always\n    IfNotPresent\n    Never\n" in field
    assert "Image pull policy. One of Always, Never, IfNotPresent." in field


@pytest.mark.parametrize(
    ("resource", "head"),
    [
        ("replicasets", "GROUP:      apps\nKIND:       ReplicaSet\nVERSION:    v1\n"),
        ("rc", "KIND:       ReplicationController\nVERSION:    v1\n"),
        ("events", "KIND:       Event\nVERSION:    v1\n"),
        ("nodes", "KIND:       Node\nVERSION:    v1\n"),
        ("ns", "KIND:       Namespace\nVERSION:    v1\n"),
    ],
)
def test_explain_every_served_kind(kubectl, resource, head):
    out = kubectl("explain", resource)
    assert out.startswith(head)
    assert "\nFIELDS:\n" in out
    assert "\n    ObjectMeta is metadata that all persisted resources must have" in out


def test_explain_a_nested_field_and_recursive(kubectl):
    out = kubectl("explain", "rs.spec.template.spec.containers.resources")
    assert "FIELD: resources <ResourceRequirements>" in out
    assert "ResourceRequirements describes the compute resource requirements." in out
    assert "  limits\t<map[string]Quantity>\n    Limits describes the maximum amount of compute resources" in out
    tree = kubectl("explain", "rs", "--recursive")
    assert "  spec\t<ReplicaSetSpec> -required-\n    minReadySeconds\t<integer>\n    replicas\t<integer>\n" in tree
    assert "\n          imagePullPolicy\t<string>\n          enum: Always, IfNotPresent, Never\n" in tree
    assert "\n        containers\t<[]Container> -required-\n          args\t<[]string>\n" in tree
    missing = kubectl.run("explain", "pods.spec.replcas", check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == 'error: field "replcas" does not exist'


@pytest.mark.parametrize("resource", ["rs/web", "rc/legacy", "ns/default", "pod"])
def test_get_yaml_piped_to_replace_with_validation(kubectl, resource):
    if resource == "pod":
        resource = kubectl.until(lambda out: out.strip(), "get", "pods", "-l", "app=web", "-o", "name").split()[0]
    # Once the world holds still (pods ready, statuses written): a replace of what was read while
    # the controller still writes the status is a 409 Conflict, as on a cluster.
    ready = {"rs/web": "3/3", "rc/legacy": "2/2"}.get(resource)  # ready/available
    if ready is not None:
        path = "jsonpath={.status.readyReplicas}/{.status.availableReplicas}"
        kubectl.until(lambda out: out.strip() == ready, "get", resource, "-o", path)
    elif resource.startswith("pod/"):
        kubectl.until(
            lambda out: out.strip() == "True",
            "get",
            resource,
            "-o",
            "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
        )
    before = json.loads(kubectl("get", resource, "-o", "json"))
    manifest = kubectl("get", resource, "-o", "yaml")
    out = kubectl("replace", "--validate=strict", "-f", "-", stdin=manifest)
    assert out.strip().endswith(" replaced")
    after = json.loads(kubectl("get", resource, "-o", "json"))
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    # With a change: the change is stored; a misspelled field is refused by strict validation.
    changed = yaml.safe_load(manifest)
    changed["metadata"].setdefault("annotations", {})["replaced"] = "yes"
    kubectl("replace", "-f", "-", stdin=yaml.safe_dump(changed))
    assert json.loads(kubectl("get", resource, "-o", "json"))["metadata"]["annotations"]["replaced"] == "yes"
    typo = yaml.safe_load(kubectl("get", resource, "-o", "yaml"))
    typo["metadata"]["nmae"] = "x"
    refused = kubectl.run("replace", "-f", "-", stdin=yaml.safe_dump(typo), check=False)
    assert refused.returncode == 1
    assert 'strict decoding error: unknown field "metadata.nmae"' in refused.stderr


def _list(*items):
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(items)}, sort_keys=False)


def test_kind_list_files_with_validation_on(kubectl):
    """kubectl validates a `kind: List` client-side against /openapi/v2 (protobuf), item by item:
    create, apply and `get -o yaml | replace -f -` of a List work, a misspelled field is refused."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "listed"}, "spec": {"containers": [{"name": "c"}]}}
    pod["spec"]["containers"][0]["image"] = "nginx"
    out = kubectl("create", "-f", "-", stdin=_list(rs_manifest("listed-a", replicas=1), pod))
    assert out.split("\n")[:2] == ["replicaset.apps/listed-a created", "pod/listed created"]
    both = _list(rs_manifest("listed-a", replicas=2), rs_manifest("listed-b", replicas=1))
    out = kubectl("apply", "-f", "-", stdin=both)
    assert out.split("\n")[:2] == ["replicaset.apps/listed-a configured", "replicaset.apps/listed-b created"]
    assert kubectl("get", "rs", "listed-a", "-o", "jsonpath={.spec.replicas}") == "2"
    # Once the world holds still (pods available, statuses written): a replace of what was read
    # while the controller still wrote a status is a 409, as on a cluster.
    for name, ready in (("listed-a", "2/2"), ("listed-b", "1/1")):
        path = "jsonpath={.status.readyReplicas}/{.status.availableReplicas}"
        kubectl.until(lambda out, ready=ready: out.strip() == ready, "get", "rs", name, "-o", path)
    listed = kubectl("get", "rs", "listed-a", "listed-b", "-o", "yaml")
    assert yaml.safe_load(listed)["kind"] == "List"
    out = kubectl("replace", "-f", "-", stdin=listed)
    assert out.split("\n")[:2] == ["replicaset.apps/listed-a replaced", "replicaset.apps/listed-b replaced"]
    refused = kubectl.run("create", "-f", "-", stdin=_list(rs_manifest("listed-c", replicas=1, bogus=3)), check=False)
    assert refused.returncode == 1
    assert 'unknown field "bogus" in io.k8s.api.apps.v1.ReplicaSetSpec' in refused.stderr
    assert kubectl.run("get", "rs", "listed-c", check=False).returncode == 1  # nothing was sent

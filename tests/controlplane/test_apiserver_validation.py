"""422 Invalid answers: field paths and upstream's exact messages."""

import pytest

from controlplane.apiserver import ApiError
from tests.controlplane.test_apiserver import make_server, pod_manifest, rc_manifest, rs_manifest


def invalid(server, resource, body, verb="create", **kwargs):
    with pytest.raises(ApiError) as err:
        if verb == "create":
            server.create(resource, "default", body)
        else:
            server.update(resource, "default", body["metadata"]["name"], body, **kwargs)
    assert (err.value.code, err.value.reason) == (422, "Invalid")
    return err.value


def test_negative_replicas_is_invalid_with_the_upstream_message():
    _, server = make_server()
    err = invalid(server, "replicasets", rs_manifest(replicas=-1))
    assert (
        err.message
        == 'ReplicaSet.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0'
    )
    assert err.details == {
        "name": "web",
        "group": "apps",
        "kind": "ReplicaSet",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: -1: must be greater than or equal to 0",
                "field": "spec.replicas",
            }
        ],
    }


def test_a_replica_set_without_selector_is_invalid():
    _, server = make_server()
    body = rs_manifest()
    del body["spec"]["selector"]
    err = invalid(server, "replicasets", body)
    assert err.details["causes"][0] == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.selector",
    }


def test_an_empty_replica_set_selector_is_invalid():
    _, server = make_server()
    body = rs_manifest()
    body["spec"]["selector"] = {}
    err = invalid(server, "replicasets", body)
    assert err.message == (
        'ReplicaSet.apps "web" is invalid: spec.selector: Invalid value: {}: empty selector is invalid for deployment'
    )


def test_a_selector_that_does_not_match_the_template_labels_is_invalid():
    _, server = make_server()
    err = invalid(server, "replicasets", rs_manifest(template_labels={"app": "other"}))
    assert err.message == (
        'ReplicaSet.apps "web" is invalid: spec.template.metadata.labels: Invalid value: {"app":"other"}: '
        "`selector` does not match template `labels`"
    )


def test_a_replica_set_template_must_restart_always():
    _, server = make_server()
    body = rs_manifest()
    body["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    err = invalid(server, "replicasets", body)
    assert err.details["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "Never": supported values: "Always"',
            "field": "spec.template.spec.restartPolicy",
        }
    ]


def test_only_one_owner_reference_may_be_a_controller():
    _, server = make_server()
    refs = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "1", "controller": True},
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "b",
            "uid": "2",
            "controller": True,
            "blockOwnerDeletion": True,
        },
    ]
    err = invalid(server, "pods", pod_manifest(ownerReferences=refs))
    assert err.message == (
        'Pod "web-1" is invalid: metadata.ownerReferences: Invalid value: '
        '[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"1","controller":true},'
        '{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"b","uid":"2","controller":true,'
        '"blockOwnerDeletion":true}]: '
        "Only one reference can have Controller set to true. "
        'Found "true" in references for ReplicaSet/a and ReplicaSet/b'
    )


def test_the_replica_set_selector_is_immutable():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    spec = {**rs["spec"], "selector": {"matchLabels": {"app": "web", "tier": "x"}}}
    spec["template"] = {**spec["template"], "metadata": {"labels": {"app": "web", "tier": "x"}}}
    err = invalid(server, "replicasets", {**rs, "spec": spec}, verb="update")
    assert err.message == (
        'ReplicaSet.apps "web" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: '
        "field is immutable"
    )


def test_several_errors_are_listed_in_brackets():
    _, server = make_server()
    err = invalid(server, "replicasets", rs_manifest(replicas=-1, minReadySeconds=-2))
    assert err.message == (
        'ReplicaSet.apps "web" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, '
        "spec.minReadySeconds: Invalid value: -2: must be greater than or equal to 0]"
    )


def test_a_name_that_is_not_a_dns_subdomain_is_invalid():
    _, server = make_server()
    err = invalid(server, "pods", pod_manifest(name="Web_1"))
    assert err.details["causes"][0]["field"] == "metadata.name"
    assert err.details["causes"][0]["message"].startswith(
        'Invalid value: "Web_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters'
    )


def test_a_missing_name_is_required_as_kubectl_shows_it():
    _, server = make_server()
    err = invalid(server, "pods", pod_manifest(name=""))
    assert err.message == 'Pod "" is invalid: metadata.name: Required value: name or generateName is required'


def test_a_namespace_name_must_be_a_dns_label():
    _, server = make_server()
    with pytest.raises(ApiError) as err:
        server.create("namespaces", None, {"metadata": {"name": "a.b"}})
    assert err.value.details["causes"][0] == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "a.b": must not contain dots',
        "field": "metadata.name",
    }


def test_invalid_labels_are_reported_on_metadata_labels():
    _, server = make_server()
    err = invalid(server, "pods", pod_manifest(labels={"app": "-bad-"}))
    assert err.details["causes"][0]["field"] == "metadata.labels"


def test_a_pod_container_needs_an_image():
    _, server = make_server()
    body = pod_manifest()
    body["spec"]["containers"] = [{"name": "app"}]
    err = invalid(server, "pods", body)
    assert err.message == 'Pod "web-1" is invalid: spec.containers[0].image: Required value'


def test_a_pod_needs_containers():
    _, server = make_server()
    body = pod_manifest()
    body["spec"]["containers"] = []
    err = invalid(server, "pods", body)
    assert err.message == 'Pod "web-1" is invalid: spec.containers: Required value'


def test_pod_spec_updates_other_than_images_are_forbidden():
    _, server = make_server()
    pod = server.create("pods", "default", pod_manifest())
    err = invalid(server, "pods", {**pod, "spec": {**pod["spec"], "restartPolicy": "Never"}}, verb="update")
    assert err.details["causes"][-1]["field"] == "spec"
    assert err.details["causes"][-1]["message"].startswith("Forbidden: pod updates may not change fields other than")


def test_status_replica_counts_are_checked_on_status_updates():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    body = {**rs, "status": {"replicas": 1, "readyReplicas": 2, "availableReplicas": 2}}
    err = invalid(server, "replicasets", body, verb="update", subresource="status")
    assert [c["field"] for c in err.details["causes"]] == ["status.readyReplicas", "status.availableReplicas"]
    assert err.details["causes"][0]["message"] == "Invalid value: 2: cannot be greater than status.replicas"


def test_a_replication_controller_without_selector_or_template_labels_is_invalid():
    _, server = make_server()
    body = rc_manifest()
    body["spec"]["template"]["metadata"]["labels"] = {}
    err = invalid(server, "replicationcontrollers", body)
    assert {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.selector"} in err.details[
        "causes"
    ]


def test_a_binding_needs_a_target_name():
    _, server = make_server()
    server.create("pods", "default", pod_manifest())
    with pytest.raises(ApiError) as err:
        server.create("pods", "default", {"metadata": {"name": "web-1"}, "target": {}}, subresource="binding")
    assert err.value.message == 'Binding "web-1" is invalid: target.name: Required value'

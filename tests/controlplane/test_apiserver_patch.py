"""Patches: JSON merge, JSON patch, strategic merge (incl. the adopt/release bodies of spec §7), apply."""

import pytest

from controlplane.apiserver import ApiError
from controlplane.apiserver.patch import merge_patch, strategic_merge_patch
from tests.controlplane.test_apiserver import make_server, pod_manifest, rs_manifest


def controller_ref(rs):
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": rs["metadata"]["name"],
        "uid": rs["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def adopt_patch(rs, pod):
    # controller_ref_manager.go AdoptPod, JSON key order as upstream marshals it.
    return {"metadata": {"ownerReferences": [controller_ref(rs)], "uid": pod["metadata"]["uid"]}}


def release_patch(rs, pod):
    # controller_ref_manager.go ReleasePod.
    return {
        "metadata": {
            "uid": pod["metadata"]["uid"],
            "ownerReferences": [{"$patch": "delete", "uid": rs["metadata"]["uid"]}],
        }
    }


# -- JSON merge patch ----------------------------------------------------------------------


def test_merge_patch_null_deletes_and_objects_merge():
    target = {"a": {"b": 1, "c": 2}, "d": [1, 2]}
    assert merge_patch(target, {"a": {"b": None, "e": 3}, "d": [3]}) == {"a": {"c": 2, "e": 3}, "d": [3]}
    assert target == {"a": {"b": 1, "c": 2}, "d": [1, 2]}


def test_merge_patch_shares_untouched_subtrees():
    target = {"spec": {"x": 1}, "status": {"y": 2}}
    assert merge_patch(target, {"spec": {"x": 5}})["status"] is target["status"]


def test_merge_patch_of_labels_as_kubectl_label_sends_it():
    _, server = make_server()
    server.create("pods", "default", pod_manifest())
    pod = server.patch("pods", "default", "web-1", {"metadata": {"labels": {"x": "y", "app": None}}})
    assert pod["metadata"]["labels"] == {"x": "y"}


def test_an_empty_merge_patch_changes_nothing():
    _, server = make_server()
    created = server.create("pods", "default", pod_manifest())
    assert server.patch("pods", "default", "web-1", {}) is created


def test_a_patch_carrying_a_stale_resource_version_is_409():
    _, server = make_server()
    pod = server.create("pods", "default", pod_manifest())
    server.patch("pods", "default", "web-1", {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(ApiError) as err:
        server.patch(
            "pods",
            "default",
            "web-1",
            {"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"], "labels": {"x": "2"}}},
        )
    assert err.value.code == 409


# -- JSON patch ----------------------------------------------------------------------------


def test_json_patch_applies_rfc6902_operations():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    rs = server.patch(
        "replicasets",
        "default",
        "web",
        [
            {"op": "replace", "path": "/spec/replicas", "value": 7},
            {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}},
        ],
        patch_type="json",
    )
    assert rs["spec"]["replicas"] == 7 and rs["metadata"]["labels"] == {"a": "b"}


def test_a_failed_json_patch_test_is_422_not_500():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    with pytest.raises(ApiError) as err:
        server.patch(
            "replicasets", "default", "web", [{"op": "test", "path": "/spec/replicas", "value": 9}], patch_type="json"
        )
    assert err.value.code == 422


def test_an_unknown_patch_type_is_415():
    _, server = make_server()
    server.create("pods", "default", pod_manifest())
    with pytest.raises(ApiError) as err:
        server.patch("pods", "default", "web-1", {}, patch_type="application/xml")
    assert err.value.code == 415


# -- strategic merge patch -----------------------------------------------------------------


def test_adopt_patch_gives_an_orphan_pod_the_controller_reference():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    pod = server.create("pods", "default", pod_manifest())
    adopted = server.patch("pods", "default", "web-1", adopt_patch(rs, pod), patch_type="strategic")
    assert adopted["metadata"]["ownerReferences"] == [controller_ref(rs)]
    assert adopted["metadata"]["uid"] == pod["metadata"]["uid"]


def test_adopt_patch_puts_the_new_reference_before_existing_ones():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg", "uid": "cm-1"}
    pod = server.create("pods", "default", pod_manifest(ownerReferences=[other]))
    adopted = server.patch("pods", "default", "web-1", adopt_patch(rs, pod), patch_type="strategic")
    # mergeSortedSlice: an item new to the list goes before the server-only items.
    assert adopted["metadata"]["ownerReferences"] == [controller_ref(rs), other]


def test_adopt_patch_is_rejected_when_another_controller_owns_the_pod():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    other = server.create("replicasets", "default", rs_manifest(name="other", labels={"app": "web"}))
    pod = server.create("pods", "default", pod_manifest(owner=other))
    with pytest.raises(ApiError) as err:
        server.patch("pods", "default", "web-1", adopt_patch(rs, pod), patch_type="strategic")
    assert err.value.code == 422
    assert 'Found "true" in references for ReplicaSet/web and ReplicaSet/other' in err.value.message


def test_release_patch_removes_the_controller_reference():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    pod = server.create("pods", "default", pod_manifest(owner=rs))
    released = server.patch("pods", "default", "web-1", release_patch(rs, pod), patch_type="strategic")
    assert "ownerReferences" not in released["metadata"]


def test_release_patch_keeps_other_references():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg", "uid": "cm-1"}
    pod = server.create("pods", "default", pod_manifest(ownerReferences=[other, controller_ref(rs)]))
    released = server.patch("pods", "default", "web-1", release_patch(rs, pod), patch_type="strategic")
    assert released["metadata"]["ownerReferences"] == [other]


def test_release_patch_on_a_pod_without_references_is_422():
    # The $patch element is taken whole when the list is absent; typed decoding keeps only its uid,
    # and validation rejects the half reference (why ReleasePod swallows Invalid).
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    pod = server.create("pods", "default", pod_manifest())
    with pytest.raises(ApiError) as err:
        server.patch("pods", "default", "web-1", release_patch(rs, pod), patch_type="strategic")
    assert err.value.code == 422
    assert [c["field"] for c in err.value.details["causes"]] == [
        "metadata.ownerReferences.apiVersion",
        "metadata.ownerReferences.kind",
        "metadata.ownerReferences.name",
    ]


def test_a_patch_naming_another_uid_is_rejected_as_an_immutable_uid():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    pod = server.create("pods", "default", pod_manifest())
    stale = {"metadata": {**pod["metadata"], "uid": "recreated"}}
    with pytest.raises(ApiError) as err:
        server.patch("pods", "default", "web-1", adopt_patch(rs, stale), patch_type="strategic")
    assert err.value.code == 422
    assert err.value.details["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "recreated": field is immutable',
            "field": "metadata.uid",
        }
    ]


def test_strategic_merge_as_kubectl_apply_sends_it():
    # The body kubectl-surface.md §6 observed when a label is dropped and a container added.
    _, server = make_server()
    body = rs_manifest()
    body["metadata"]["labels"] = {"tier": "front"}
    body["spec"]["template"]["spec"]["containers"] = [
        {"name": "nginx", "image": "nginx", "ports": [{"containerPort": 80}]}
    ]
    server.create("replicasets", "default", body)
    patch = {
        "metadata": {"labels": None},
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "nginx"}],
                    "containers": [{"image": "busybox", "name": "sidecar"}, {"name": "nginx", "ports": None}],
                }
            }
        },
    }
    rs = server.patch("replicasets", "default", "web", patch, patch_type="strategic")
    containers = rs["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("sidecar", "busybox"), ("nginx", "nginx")]
    assert "ports" not in containers[1]
    assert "labels" not in rs["metadata"]
    assert "$setElementOrder/containers" not in rs["spec"]["template"]["spec"]
    assert rs["metadata"]["generation"] == 2


def test_strategic_merge_merges_conditions_by_type():
    original = {
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}
    }
    patched = strategic_merge_patch(original, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert patched["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]


def test_strategic_merge_merges_finalizers_as_a_set_new_ones_first():
    patched = strategic_merge_patch({"metadata": {"finalizers": ["a", "b"]}}, {"metadata": {"finalizers": ["c", "a"]}})
    assert patched["metadata"]["finalizers"] == ["c", "a", "b"]


def test_strategic_merge_delete_from_primitive_list():
    patched = strategic_merge_patch(
        {"metadata": {"finalizers": ["a", "b"]}}, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    )
    assert patched["metadata"]["finalizers"] == ["b"]


def test_strategic_merge_replaces_lists_without_a_merge_key():
    original = {"spec": {"tolerations": [{"key": "a"}], "containers": [{"name": "c", "args": ["x", "y"]}]}}
    patched = strategic_merge_patch(
        original, {"spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "c", "args": ["z"]}]}}
    )
    assert patched["spec"] == {"tolerations": [{"key": "b"}], "containers": [{"name": "c", "args": ["z"]}]}


def test_strategic_merge_patch_replace_directive_on_a_map():
    patched = strategic_merge_patch({"spec": {"a": 1, "b": 2}}, {"spec": {"$patch": "replace", "c": 3}})
    assert patched == {"spec": {"c": 3}}


def test_strategic_merge_does_not_mutate_the_original():
    original = {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}}
    strategic_merge_patch(original, {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "1"}]}})
    assert original == {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}}


# -- apply -----------------------------------------------------------------------------------


def test_apply_creates_a_missing_object_with_201():
    _, server = make_server()
    rs = server.patch("replicasets", "default", "web", rs_manifest(), patch_type="apply")
    assert rs["metadata"]["uid"] and server.requests[-1]["code"] == 201


def test_apply_on_an_existing_object_merges_like_a_strategic_patch():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    rs = server.patch("replicasets", "default", "web", {"spec": {"replicas": 8}}, patch_type="apply")
    assert rs["spec"]["replicas"] == 8 and server.requests[-1]["code"] == 200


def test_a_non_apply_patch_of_a_missing_object_is_404():
    _, server = make_server()
    with pytest.raises(ApiError) as err:
        server.patch("pods", "default", "nope", {"metadata": {"labels": {"a": "b"}}}, patch_type="strategic")
    assert err.value.message == 'pods "nope" not found'

"""The simulated API server: CRUD, metadata, concurrency, subresources, deletion, requests."""

import pytest

from controlplane.apiserver import ApiError, APIServer, Request
from controlplane.apiserver.server import NAME_ALPHABET
from controlplane.kernel import Kernel
from controlplane.trace import Trace

# -- helpers (imported by the other test_apiserver_* files) --------------------------------
from tests.controlplane.factories import rs_manifest


def make_server(seed=0, **kwargs):
    kernel = Kernel(seed)
    return kernel, APIServer(kernel, **kwargs)


def pod_manifest(name="web-1", labels=None, node=None, owner=None, namespace="default", **meta):
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": "web"}, **meta},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }
    if node:
        pod["spec"]["nodeName"] = node
    if owner is not None:
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return pod


def rc_manifest(name="legacy", replicas=2):
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }


def watch_events(server, resource, **kwargs):
    events = []
    watch = server.watch(resource, **kwargs)
    watch.start(events.extend)
    return watch, events


# -- namespaces and create ----------------------------------------------------------------


def test_default_and_kube_system_namespaces_exist_at_start():
    _, server = make_server()
    assert [ns["metadata"]["name"] for ns in server.objects("namespaces")] == ["default", "kube-system"]
    assert server.revision == 2


def test_create_sets_uid_creation_timestamp_resource_version_and_generation():
    kernel, server = make_server()
    kernel.advance(61.5)
    rs = server.create("replicasets", "default", rs_manifest())
    meta = rs["metadata"]
    assert meta["creationTimestamp"] == "2026-01-01T00:01:01Z"
    assert meta["resourceVersion"] == "3"
    assert meta["generation"] == 1
    assert len(meta["uid"]) == 36 and meta["uid"][14] == "4"
    assert rs["status"] == {"replicas": 0}


def test_uids_are_deterministic_per_seed():
    uids = []
    for _ in range(2):
        _, server = make_server(seed=7)
        uids.append(server.create("pods", "default", pod_manifest())["metadata"]["uid"])
    assert uids[0] == uids[1]
    _, other = make_server(seed=8)
    assert other.create("pods", "default", pod_manifest())["metadata"]["uid"] != uids[0]


def test_create_fills_kind_and_api_version_from_the_endpoint():
    _, server = make_server()
    body = pod_manifest()
    del body["kind"], body["apiVersion"]
    pod = server.create("pods", "default", body)
    assert (pod["apiVersion"], pod["kind"]) == ("v1", "Pod")
    assert list(pod)[:3] == ["apiVersion", "kind", "metadata"]


def test_create_does_not_mutate_the_body():
    _, server = make_server()
    body = pod_manifest()
    snapshot = repr(body)
    server.create("pods", "default", body)
    assert repr(body) == snapshot


def test_generate_name_appends_five_characters_from_the_upstream_alphabet():
    _, server = make_server()
    pod = server.create("pods", "default", pod_manifest(name="", generateName="web-"))
    name = pod["metadata"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5
    assert set(name[4:]) <= set(NAME_ALPHABET)


def test_generate_name_is_deterministic_per_seed():
    names = []
    for _ in range(2):
        _, server = make_server(seed=3)
        names.append(
            [
                server.create("pods", "default", pod_manifest(name="", generateName="web-"))["metadata"]["name"]
                for _ in range(3)
            ]
        )
    assert names[0] == names[1]


def test_generate_name_retries_when_the_generated_name_is_taken():
    kernel, server = make_server(seed=5)
    state = kernel.rng.getstate()
    first = server.create("pods", "default", pod_manifest(name="", generateName="web-"))
    kernel.rng.setstate(state)  # the next attempt draws the same name again
    second = server.create("pods", "default", pod_manifest(name="", generateName="web-"))
    assert second["metadata"]["name"] != first["metadata"]["name"]
    assert server.count("pods", "default") == 2


def test_create_of_an_existing_name_is_409_already_exists():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    with pytest.raises(ApiError) as err:
        server.create("replicasets", "default", rs_manifest())
    assert (err.value.code, err.value.reason) == (409, "AlreadyExists")
    assert err.value.message == 'replicasets.apps "web" already exists'


def test_create_in_a_missing_namespace_is_404_namespace_not_found():
    _, server = make_server()
    with pytest.raises(ApiError) as err:
        server.create("pods", "nope", pod_manifest(namespace="nope"))
    assert err.value.code == 404
    assert err.value.message == 'namespaces "nope" not found'


def test_create_with_a_resource_version_is_refused():
    _, server = make_server()
    body = pod_manifest()
    body["metadata"]["resourceVersion"] = "5"
    with pytest.raises(ApiError) as err:
        server.create("pods", "default", body)
    assert err.value.code == 500
    assert "resourceVersion should not be set on objects to be created" in err.value.message


# -- defaults ------------------------------------------------------------------------------


def test_pod_defaults_follow_upstream():
    _, server = make_server()
    pod = server.create("pods", "default", pod_manifest())
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["enableServiceLinks"] is True
    assert spec["containers"][0]["imagePullPolicy"] == "Always"
    assert spec["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert pod["metadata"]["generation"] == 1


def test_replica_set_defaults_replicas_to_one_and_defaults_its_template():
    _, server = make_server()
    body = rs_manifest()
    del body["spec"]["replicas"]
    rs = server.create("replicasets", "default", body)
    assert rs["spec"]["replicas"] == 1
    assert rs["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert "enableServiceLinks" not in rs["spec"]["template"]["spec"]


def test_replication_controller_copies_template_labels_to_selector_and_labels():
    _, server = make_server()
    rc = server.create("replicationcontrollers", "default", rc_manifest())
    assert rc["spec"]["selector"] == {"app": "legacy"}
    assert rc["metadata"]["labels"] == {"app": "legacy"}


# -- get and list --------------------------------------------------------------------------


def test_get_of_a_missing_object_is_404_with_the_upstream_message():
    _, server = make_server()
    with pytest.raises(ApiError) as err:
        server.get("pods", "default", "web-abcde")
    assert err.value.message == 'pods "web-abcde" not found'
    with pytest.raises(ApiError) as err:
        server.get("replicasets", "default", "web")
    assert err.value.message == 'replicasets.apps "web" not found'
    assert err.value.details == {"name": "web", "group": "apps", "kind": "replicasets"}


def test_list_is_in_key_order_with_list_kind_and_current_revision():
    _, server = make_server()
    server.create("namespaces", None, {"metadata": {"name": "a-b"}})
    for ns, name in [("default", "b"), ("a-b", "z"), ("default", "a")]:
        server.create("pods", ns, pod_manifest(name=name, namespace=ns))
    listed = server.list("pods")
    assert listed["kind"] == "PodList" and listed["apiVersion"] == "v1"
    assert listed["metadata"]["resourceVersion"] == str(server.revision)
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in listed["items"]] == [
        ("a-b", "z"),
        ("default", "a"),
        ("default", "b"),
    ]


def test_list_of_one_namespace_returns_only_that_namespace():
    _, server = make_server()
    server.create("namespaces", None, {"metadata": {"name": "other"}})
    server.create("pods", "other", pod_manifest(name="x", namespace="other"))
    server.create("pods", "default", pod_manifest(name="y"))
    assert [p["metadata"]["name"] for p in server.list("pods", "default")["items"]] == ["y"]


def test_list_applies_label_and_field_selectors():
    _, server = make_server()
    server.create("pods", "default", pod_manifest(name="a", labels={"app": "web"}, node="node-1"))
    server.create("pods", "default", pod_manifest(name="b", labels={"app": "web"}))
    server.create("pods", "default", pod_manifest(name="c", labels={"app": "db"}, node="node-1"))
    names = lambda listed: [p["metadata"]["name"] for p in listed["items"]]  # noqa: E731
    assert names(server.list("pods", "default", label_selector="app=web")) == ["a", "b"]
    assert names(server.list("pods", "default", field_selector="spec.nodeName=node-1")) == ["a", "c"]
    assert names(server.list("pods", "default", label_selector="app=web", field_selector="spec.nodeName!=node-1")) == [
        "b"
    ]


def test_list_with_an_unsupported_field_label_is_400():
    _, server = make_server()
    with pytest.raises(ApiError) as err:
        server.list("pods", field_selector="spec.bogus=1")
    assert err.value.code == 400
    assert err.value.message == "field label not supported: spec.bogus"


def test_list_with_a_malformed_label_selector_is_400():
    _, server = make_server()
    with pytest.raises(ApiError) as err:
        server.list("pods", label_selector="app in (")
    assert err.value.code == 400


# -- update, optimistic concurrency, generation ---------------------------------------------


def test_update_with_a_stale_resource_version_is_409_conflict():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    server.update("replicasets", "default", "web", {**rs, "spec": {**rs["spec"], "replicas": 5}})
    with pytest.raises(ApiError) as err:
        server.update("replicasets", "default", "web", {**rs, "spec": {**rs["spec"], "replicas": 6}})
    assert (err.value.code, err.value.reason) == (409, "Conflict")
    assert err.value.message == (
        'Operation cannot be fulfilled on replicasets.apps "web": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_update_without_a_resource_version_is_unconditional():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    server.update("replicasets", "default", "web", {**rs, "spec": {**rs["spec"], "replicas": 5}})
    body = {**rs, "metadata": {k: v for k, v in rs["metadata"].items() if k != "resourceVersion"}}
    updated = server.update("replicasets", "default", "web", {**body, "spec": {**rs["spec"], "replicas": 7}})
    assert updated["spec"]["replicas"] == 7


def test_update_with_another_uid_is_a_storage_precondition_conflict():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    body = {**rs, "metadata": {**rs["metadata"], "uid": "other"}}
    with pytest.raises(ApiError) as err:
        server.update("replicasets", "default", "web", body)
    assert err.value.code == 409
    assert err.value.message == (
        'Operation cannot be fulfilled on replicasets.apps "web": StorageError: invalid object, Code: 4, '
        "Key: /registry/replicasets/default/web, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: "
        f"UID in precondition: other, UID in object meta: {rs['metadata']['uid']}"
    )


def test_generation_is_bumped_by_spec_changes_only():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    relabelled = server.update(
        "replicasets", "default", "web", {**rs, "metadata": {**rs["metadata"], "labels": {"tier": "front"}}}
    )
    assert relabelled["metadata"]["generation"] == 1
    scaled = server.update("replicasets", "default", "web", {**relabelled, "spec": {**rs["spec"], "replicas": 9}})
    assert scaled["metadata"]["generation"] == 2


def test_pods_bump_generation_on_spec_change():
    _, server = make_server()
    pod = server.create("pods", "default", pod_manifest())
    spec = {**pod["spec"], "containers": [{**pod["spec"]["containers"][0], "image": "nginx:2"}]}
    assert server.update("pods", "default", "web-1", {**pod, "spec": spec})["metadata"]["generation"] == 2


def test_update_of_the_main_resource_ignores_status():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    updated = server.update("replicasets", "default", "web", {**rs, "status": {"replicas": 3}})
    assert updated["status"] == {"replicas": 0}


def test_a_no_op_update_commits_nothing():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    revision = server.revision
    assert server.update("replicasets", "default", "web", rs) is rs
    assert server.revision == revision


def test_status_subresource_writes_only_status():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    body = {**rs, "spec": {**rs["spec"], "replicas": 50}, "status": {"replicas": 2, "observedGeneration": 1}}
    updated = server.update("replicasets", "default", "web", body, subresource="status")
    assert updated["status"] == {"replicas": 2, "observedGeneration": 1}
    assert updated["spec"]["replicas"] == 3
    assert updated["metadata"]["generation"] == 1
    assert server.requests[-1]["resource"] == "replicasets/status"


def test_pod_status_updates_cannot_touch_owner_references():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    pod = server.create("pods", "default", pod_manifest(owner=rs))
    body = {**pod, "metadata": {**pod["metadata"], "ownerReferences": []}, "status": {"phase": "Running"}}
    updated = server.update("pods", "default", "web-1", body, subresource="status")
    assert updated["metadata"]["ownerReferences"] == pod["metadata"]["ownerReferences"]
    assert updated["status"] == {"phase": "Running", "qosClass": "BestEffort"}


# -- scale -----------------------------------------------------------------------------------


def test_scale_subresource_reads_as_an_autoscaling_v1_scale():
    _, server = make_server()
    rs = server.create("replicasets", "default", rs_manifest())
    scale = server.get("replicasets", "default", "web", subresource="scale")
    assert scale == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": rs["metadata"]["uid"],
            "resourceVersion": rs["metadata"]["resourceVersion"],
            "creationTimestamp": rs["metadata"]["creationTimestamp"],
        },
        "spec": {"replicas": 3},
        "status": {"replicas": 0, "selector": "app=web"},
    }


def test_scale_update_changes_spec_replicas_and_bumps_generation():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    scale = server.get("replicasets", "default", "web", subresource="scale")
    result = server.update("replicasets", "default", "web", {**scale, "spec": {"replicas": 5}}, subresource="scale")
    assert result["spec"] == {"replicas": 5}
    rs = server.get("replicasets", "default", "web")
    assert (rs["spec"]["replicas"], rs["metadata"]["generation"]) == (5, 2)


def test_scale_merge_patch_as_kubectl_scale_sends_it():
    _, server = make_server()
    server.create("replicationcontrollers", "default", rc_manifest())
    result = server.patch("replicationcontrollers", "default", "legacy", {"spec": {"replicas": 0}}, subresource="scale")
    assert result["spec"] == {}  # ScaleSpec.replicas is omitempty
    assert server.get("replicationcontrollers", "default", "legacy")["spec"]["replicas"] == 0


def test_scale_to_negative_replicas_is_422_on_the_scale():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    with pytest.raises(ApiError) as err:
        server.patch("replicasets", "default", "web", {"spec": {"replicas": -1}}, subresource="scale")
    assert err.value.message == (
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0'
    )


def test_scale_with_a_stale_resource_version_is_409():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    scale = server.get("replicasets", "default", "web", subresource="scale")
    server.patch("replicasets", "default", "web", {"spec": {"replicas": 4}}, subresource="scale")
    with pytest.raises(ApiError) as err:
        server.update("replicasets", "default", "web", {**scale, "spec": {"replicas": 5}}, subresource="scale")
    assert err.value.code == 409


# -- pods/binding ----------------------------------------------------------------------------


def test_binding_assigns_the_node_and_sets_pod_scheduled():
    kernel, server = make_server()
    server.create("pods", "default", pod_manifest())
    kernel.advance(3)
    status = server.create(
        "pods",
        "default",
        {"metadata": {"name": "web-1"}, "target": {"kind": "Node", "name": "node-1"}},
        subresource="binding",
    )
    assert status["status"] == "Success" and status["code"] == 201
    pod = server.get("pods", "default", "web-1")
    assert pod["spec"]["nodeName"] == "node-1"
    assert pod["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-01-01T00:00:03Z"}
    ]
    assert server.requests[-2]["resource"] == "pods/binding" and server.requests[-2]["code"] == 201


def bind(server, name, node):
    server.create(
        "pods", "default", {"metadata": {"name": name}, "target": {"kind": "Node", "name": node}}, subresource="binding"
    )
    return server.get("pods", "default", name)


def test_pods_with_the_same_spec_on_one_node_share_their_bound_spec_and_only_then():
    import json

    _, server = make_server()
    specs = {
        "a": {"containers": [{"name": "app", "image": "nginx"}], "hostname": "h1"},
        "b": {"containers": [{"name": "app", "image": "nginx"}], "hostname": "h1"},  # equal content
        "c": {"hostname": "h1", "containers": [{"name": "app", "image": "nginx"}]},  # other key order
        "d": {"containers": [{"name": "app", "image": "nginx"}], "hostname": "h1"},  # other node
        "e": {"containers": [{"name": "app", "image": "nginx"}], "hostname": "h2"},  # other value
    }
    for name, spec in specs.items():
        server.create("pods", "default", {**pod_manifest(name), "spec": spec})
    bound = {name: bind(server, name, "node-2" if name == "d" else "node-1") for name in specs}
    assert bound["a"]["spec"] is bound["b"]["spec"]
    for other in "cde":
        assert bound[other]["spec"] is not bound["a"]["spec"]
    for name, pod in bound.items():
        # Byte for byte what a copy of the pod's own spec would be.
        own = {**server.peek("pods", "default", name)["spec"]}
        assert json.dumps(pod["spec"]) == json.dumps(own)
        assert pod["spec"]["nodeName"] == ("node-2" if name == "d" else "node-1")
    keys = list(bound["c"]["spec"])
    assert keys[:2] == ["hostname", "containers"] and keys[-1] == "nodeName"


def test_a_shared_bound_spec_is_the_servers_own_copy():
    _, server = make_server()
    server.create("pods", "default", pod_manifest("a"))
    server.create("pods", "default", pod_manifest("b"))
    first = bind(server, "a", "node-1")
    # Built from the server's deep copy, not from the first pod's (possibly caller-owned) spec.
    own = server.peek("pods", "default", "b")["spec"]
    second = bind(server, "b", "node-1")
    assert second["spec"] is first["spec"] and second["spec"]["containers"] is not own["containers"]


def test_binding_an_assigned_pod_is_409():
    _, server = make_server()
    server.create("pods", "default", pod_manifest(node="node-1"))
    with pytest.raises(ApiError) as err:
        server.create(
            "pods", "default", {"metadata": {"name": "web-1"}, "target": {"name": "node-2"}}, subresource="binding"
        )
    assert err.value.message == (
        'Operation cannot be fulfilled on pods/binding "web-1": pod web-1 is already assigned to node "node-1"'
    )


# -- deletion ----------------------------------------------------------------------------


def test_deleting_an_unbound_pod_removes_it_at_once():
    kernel, server = make_server()
    server.create("pods", "default", pod_manifest())
    _, events = watch_events(server, "pods", resource_version=str(server.revision))
    deleted = server.delete("pods", "default", "web-1")
    assert server.peek("pods", "default", "web-1") is None
    assert deleted["metadata"]["deletionGracePeriodSeconds"] == 0
    kernel.run()
    # store.go: the graceful update (deletionTimestamp) is written, then the object removed.
    assert [t for t, _ in events] == ["MODIFIED", "DELETED"]


def test_deleting_a_bound_pod_marks_it_with_the_grace_period():
    kernel, server = make_server()
    server.create("pods", "default", pod_manifest(node="node-1"))
    kernel.advance(10)
    marked = server.delete("pods", "default", "web-1")
    meta = marked["metadata"]
    assert meta["deletionTimestamp"] == "2026-01-01T00:00:40Z"
    assert meta["deletionGracePeriodSeconds"] == 30
    assert meta["generation"] == 2
    assert server.peek("pods", "default", "web-1") is marked


def test_a_second_delete_may_shorten_the_grace_period_never_lengthen_it():
    _, server = make_server()
    server.create("pods", "default", pod_manifest(node="node-1"))
    server.delete("pods", "default", "web-1", grace_period_seconds=20)
    revision = server.revision
    server.delete("pods", "default", "web-1", grace_period_seconds=25)
    assert server.revision == revision
    shortened = server.delete("pods", "default", "web-1", grace_period_seconds=5)
    assert shortened["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:05Z"
    assert shortened["metadata"]["deletionGracePeriodSeconds"] == 5


def test_delete_with_grace_zero_removes_a_bound_pod():
    _, server = make_server()
    server.create("pods", "default", pod_manifest(node="node-1"))
    server.delete("pods", "default", "web-1")
    server.delete("pods", "default", "web-1", grace_period_seconds=0)
    assert server.peek("pods", "default", "web-1") is None


def test_an_object_with_finalizers_is_only_marked_until_they_are_removed():
    _, server = make_server()
    rs = server.create(
        "replicasets", "default", {**rs_manifest(), "metadata": {"name": "web", "finalizers": ["example.com/hold"]}}
    )
    marked = server.delete("replicasets", "default", "web")
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert marked["metadata"]["generation"] == 2
    assert server.peek("replicasets", "default", "web") is not None
    server.patch("replicasets", "default", "web", {"metadata": {"finalizers": None}})
    assert server.peek("replicasets", "default", "web") is None
    assert rs["metadata"]["uid"] == marked["metadata"]["uid"]


def test_no_new_finalizers_may_be_added_to_an_object_being_deleted():
    _, server = make_server()
    server.create("replicasets", "default", {**rs_manifest(), "metadata": {"name": "web", "finalizers": ["a.io/x"]}})
    server.delete("replicasets", "default", "web")
    with pytest.raises(ApiError) as err:
        server.patch("replicasets", "default", "web", {"metadata": {"finalizers": ["a.io/x", "a.io/y"]}})
    assert err.value.details["causes"][0]["message"] == (
        "Forbidden: no new finalizers can be added if the object is being deleted, "
        'found new finalizers []string{"a.io/y"}'
    )


def test_orphan_propagation_adds_the_orphan_finalizer_and_marks_the_owner():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    marked = server.delete("replicasets", "default", "web", propagation_policy="Orphan")
    assert marked["metadata"]["finalizers"] == ["orphan"]
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0


def test_foreground_propagation_adds_the_foreground_finalizer_with_zero_grace():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    marked = server.delete("replicasets", "default", "web", propagation_policy="Foreground")
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0


def test_replica_sets_default_to_background_deletion():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    server.delete("replicasets", "default", "web")
    assert server.peek("replicasets", "default", "web") is None


def test_replication_controllers_default_to_orphaning_their_pods():
    _, server = make_server()
    server.create("replicationcontrollers", "default", rc_manifest())
    marked = server.delete("replicationcontrollers", "default", "legacy")
    assert marked["metadata"]["finalizers"] == ["orphan"]


def test_an_unknown_propagation_policy_is_422():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    with pytest.raises(ApiError) as err:
        server.delete("replicasets", "default", "web", propagation_policy="Sideways")
    assert err.value.code == 422


def test_delete_preconditions_that_do_not_match_are_409():
    _, server = make_server()
    pod = server.create("pods", "default", pod_manifest())
    with pytest.raises(ApiError) as err:
        server.delete("pods", "default", "web-1", preconditions={"uid": "stale"})
    assert err.value.message == (
        'Operation cannot be fulfilled on Pod "web-1": the UID in the precondition (stale) does not match the UID in '
        f"record ({pod['metadata']['uid']}). The object might have been deleted and then recreated"
    )
    with pytest.raises(ApiError) as err:
        server.delete("pods", "default", "web-1", preconditions={"resourceVersion": "1"})
    assert err.value.code == 409


def test_deleting_a_missing_object_is_404():
    _, server = make_server()
    with pytest.raises(ApiError) as err:
        server.delete("replicasets", "default", "web")
    assert err.value.code == 404


def test_the_default_namespace_may_not_be_deleted():
    _, server = make_server()
    with pytest.raises(ApiError) as err:
        server.delete("namespaces", None, "default")
    assert err.value.message == 'namespaces "default" is forbidden: this namespace may not be deleted'


def test_deleting_a_namespace_marks_it_terminating_and_leaves_its_content_to_the_controller():
    kernel, server = make_server()
    server.create("namespaces", None, {"metadata": {"name": "team"}})
    server.create("pods", "team", pod_manifest(name="a", namespace="team"))
    kernel.advance(3)
    answered = server.delete("namespaces", None, "team")
    stored = server.peek("namespaces", None, "team")
    assert answered == stored
    assert stored["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:03Z"
    assert (stored["status"]["phase"], stored["spec"]["finalizers"]) == ("Terminating", ["kubernetes"])
    assert server.count("pods", "team") == 1
    with pytest.raises(ApiError) as err:
        server.create("pods", "team", pod_manifest(name="b", namespace="team"))
    assert (err.value.code, err.value.message) == (
        403,
        'pods "b" is forbidden: unable to create new content in namespace team because it is being terminated',
    )
    # Neither an update nor a status write lets the finalizer go; only the finalize subresource does.
    server.update("namespaces", None, "team", {**stored, "spec": {}})
    assert server.peek("namespaces", None, "team")["spec"]["finalizers"] == ["kubernetes"]


def test_finalizing_a_terminating_namespace_deletes_it():
    _, server = make_server()
    server.create("namespaces", None, {"metadata": {"name": "team"}})
    server.delete("namespaces", None, "team")
    ns = server.peek("namespaces", None, "team")
    server.update("namespaces", None, "team", {**ns, "spec": {"finalizers": []}}, subresource="finalize")
    assert server.peek("namespaces", None, "team") is None
    assert server.requests[-1]["resource"] == "namespaces/finalize"


def test_a_namespace_without_finalizers_is_deleted_at_once():
    _, server = make_server()
    ns = server.create("namespaces", None, {"metadata": {"name": "team"}})
    finalized = server.update("namespaces", None, "team", {**ns, "spec": {"finalizers": []}}, subresource="finalize")
    assert "finalizers" not in finalized["spec"] and finalized["status"]["phase"] == "Active"
    server.delete("namespaces", None, "team")
    assert server.peek("namespaces", None, "team") is None


def test_the_finalize_subresource_takes_only_updates():
    _, server = make_server()
    with pytest.raises(ApiError) as err:
        server.patch("namespaces", None, "default", {"spec": {"finalizers": []}}, subresource="finalize")
    assert err.value.code == 405


# -- requests, interceptors, trace ---------------------------------------------------------


def test_every_request_is_recorded_with_its_code():
    _, server = make_server()
    server.create("replicasets", "default", rs_manifest())
    with pytest.raises(ApiError):
        server.get("replicasets", "default", "nope", client="replicaset-controller")
    server.update("replicasets", "default", "web", server.get("replicasets", "default", "web"), subresource="status")
    keys = ("client", "verb", "resource", "name", "code")
    assert [tuple(r[k] for k in keys) for r in server.requests] == [
        ("user", "create", "replicasets", "web", 201),
        ("replicaset-controller", "get", "replicasets", "nope", 404),
        ("user", "get", "replicasets", "web", 200),
        ("user", "update", "replicasets/status", "web", 200),
    ]
    assert {(r["time"], r["namespace"]) for r in server.requests} == {(0.0, "default")}


def test_a_create_with_generate_name_records_the_generated_name():
    _, server = make_server()
    pod = server.create("pods", "default", pod_manifest(name="", generateName="web-"))
    assert server.requests[-1]["name"] == pod["metadata"]["name"]


def test_a_request_records_the_time_it_was_sent():
    kernel, server = make_server()
    kernel.advance(2.0)
    server.handle(Request("kubelet", "get", "namespaces", None, None, "default", sent_at=1.5))
    assert server.requests[-1]["time"] == 1.5


def test_an_interceptor_error_is_the_answer_and_is_recorded():
    _, server = make_server()

    def quota(req):
        if req.verb == "create" and req.resource == "pods":
            return ApiError(403, "Forbidden", "exceeded quota")
        return None

    server.interceptors.append(quota)
    with pytest.raises(ApiError) as err:
        server.create("pods", "default", pod_manifest())
    assert err.value.message == "exceeded quota"
    assert server.requests[-1]["code"] == 403
    assert server.count("pods") == 0


def test_requests_emit_api_request_and_response_trace_records():
    kernel = Kernel()
    trace = Trace(kernel)
    records = []
    trace.subscribe(records.append)
    server = APIServer(kernel, trace)
    with pytest.raises(ApiError):
        server.get("pods", "default", "x", client="kubelet")
    assert [(r["kind"], r["id"]) for r in records] == [("api.request", 0), ("api.response", 0)]
    assert records[0]["client"] == "kubelet" and records[0]["resource"] == "pods"
    assert (records[1]["code"], records[1]["reason"]) == (404, "NotFound")


def test_an_unknown_resource_is_404():
    _, server = make_server()
    with pytest.raises(ApiError) as err:
        server.list("statefulsets")
    assert err.value.message == "the server could not find the requested resource"


def test_generated_names_draw_as_random_choices_does():
    import random

    kernel, server = make_server(seed=7)
    twin = random.Random()
    twin.setstate(kernel.rng.getstate())
    for _ in range(2000):
        assert server._generate_name("web-") == "web-" + "".join(twin.choices(NAME_ALPHABET, k=5))
    assert kernel.rng.getstate() == twin.getstate()

"""The garbage collector end to end: Background, Foreground and Orphan cascades."""

from controlplane.apiserver import Client
from controlplane.garbagecollector import GarbageCollector
from tests.controlplane.test_apiserver import make_server, pod_manifest, rc_manifest, rs_manifest


def world(pods=3, owner="replicasets", **pod_meta):
    kernel, server = make_server()
    if owner == "replicasets":
        parent = server.create("replicasets", "default", rs_manifest())
    else:
        parent = server.create("replicationcontrollers", "default", rc_manifest(name="web"))
    for i in range(pods):
        server.create("pods", "default", pod_manifest(name=f"web-{i}", owner=parent, **pod_meta))
    gc = GarbageCollector(server, kernel, Client(server, kernel, "garbage-collector"), delay=0.05)
    gc.start()
    kernel.advance(1)
    return kernel, server, gc, parent


def pod_names(server):
    return [p["metadata"]["name"] for p in server.objects("pods")]


def test_background_deletion_removes_the_owner_at_once_and_the_gc_deletes_the_pods():
    kernel, server, _, _ = world()
    server.delete("replicasets", "default", "web", propagation_policy="Background")
    assert server.peek("replicasets", "default", "web") is None and len(pod_names(server)) == 3
    kernel.advance(5)
    assert pod_names(server) == []
    gc_deletes = [r for r in server.requests if r["client"] == "garbage-collector" and r["verb"] == "delete"]
    assert [(r["name"], r["code"]) for r in gc_deletes] == [("web-0", 200), ("web-1", 200), ("web-2", 200)]


def test_the_gc_honours_its_watch_delay():
    kernel, server, _, _ = world()
    server.delete("replicasets", "default", "web")
    kernel.advance(0.04)
    assert not [r for r in server.requests if r["client"] == "garbage-collector" and r["time"] > 1]


def test_foreground_deletion_deletes_the_pods_before_the_owner():
    kernel, server, _, _ = world()
    marked = server.delete("replicasets", "default", "web", propagation_policy="Foreground")
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    kernel.advance(5)
    assert pod_names(server) == []
    assert server.peek("replicasets", "default", "web") is None
    last_pod_delete = max(i for i, r in enumerate(server.requests) if r["resource"] == "pods" and r["verb"] == "delete")
    finalizer_patch = next(
        i for i, r in enumerate(server.requests) if r["resource"] == "replicasets" and r["verb"] == "patch"
    )
    assert last_pod_delete < finalizer_patch


def test_foreground_deletion_waits_for_terminating_pods_to_go():
    kernel, server, _, _ = world(pods=2)
    for i in range(2):
        server.create(
            "pods", "default", {"metadata": {"name": f"web-{i}"}, "target": {"name": "node-1"}}, subresource="binding"
        )
    server.delete("replicasets", "default", "web", propagation_policy="Foreground")
    kernel.advance(5)
    # Bound pods are only marked (graceful deletion): the owner must wait for them.
    assert len(pod_names(server)) == 2 and server.peek("replicasets", "default", "web") is not None
    for i in range(2):
        server.delete("pods", "default", f"web-{i}", grace_period_seconds=0)
    kernel.advance(5)
    assert server.peek("replicasets", "default", "web") is None


def test_orphan_deletion_strips_the_owner_reference_and_keeps_the_pods():
    kernel, server, _, _ = world()
    server.delete("replicasets", "default", "web", propagation_policy="Orphan")
    kernel.advance(5)
    assert pod_names(server) == ["web-0", "web-1", "web-2"]
    assert all("ownerReferences" not in p["metadata"] for p in server.objects("pods"))
    assert server.peek("replicasets", "default", "web") is None
    patches = [r for r in server.requests if r["client"] == "garbage-collector" and r["verb"] == "patch"]
    assert [r["resource"] for r in patches] == ["pods", "pods", "pods", "replicasets"]


def test_replication_controllers_orphan_their_pods_by_default():
    kernel, server, _, _ = world(owner="replicationcontrollers")
    server.delete("replicationcontrollers", "default", "web")
    kernel.advance(5)
    assert pod_names(server) == ["web-0", "web-1", "web-2"]
    assert server.peek("replicationcontrollers", "default", "web") is None


def test_a_pod_created_for_a_missing_owner_is_collected():
    kernel, server, _, parent = world(pods=0)
    ghost = {**parent, "metadata": {**parent["metadata"], "name": "ghost", "uid": "0000-gone"}}
    server.create("pods", "default", pod_manifest(name="orphaned", owner=ghost))
    kernel.advance(5)
    assert pod_names(server) == []


def test_a_pod_with_another_live_owner_only_loses_the_dangling_reference():
    kernel, server, _, parent = world(pods=0)
    other = server.create("replicasets", "default", rs_manifest(name="other"))
    refs = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": parent["metadata"]["uid"]},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "other", "uid": other["metadata"]["uid"]},
    ]
    server.create("pods", "default", pod_manifest(name="shared", ownerReferences=refs))
    kernel.advance(1)
    server.delete("replicasets", "default", "web")
    kernel.advance(5)
    assert server.peek("pods", "default", "shared")["metadata"]["ownerReferences"] == [refs[1]]


def test_owners_of_unserved_kinds_are_never_considered_gone():
    kernel, server, _, _ = world(pods=0)
    ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "d", "uid": "sts-1", "controller": True}
    server.create(
        "replicasets", "default", {**rs_manifest(name="child"), "metadata": {"name": "child", "ownerReferences": [ref]}}
    )
    kernel.advance(5)
    assert server.peek("replicasets", "default", "child") is not None


def test_the_gc_rebuilds_its_graph_after_a_dropped_watch():
    kernel, server, gc, parent = world(pods=1)
    server.watches_for("pods")[0].drop()
    server.create("pods", "default", pod_manifest(name="late", owner=parent))
    kernel.advance(1)
    assert set(gc.dependents_of(parent["metadata"]["uid"])) == {p["metadata"]["uid"] for p in server.objects("pods")}
    server.delete("replicasets", "default", "web")
    kernel.advance(5)
    assert pod_names(server) == []

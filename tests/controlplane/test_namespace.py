"""The namespace controller (controlplane/namespace.py)."""

from __future__ import annotations

from controlplane.apiserver import Client
from controlplane.namespace import NamespaceController
from tests.controlplane.factories import bare_pod, node_world, rs_manifest


def world():
    kernel, server, _ = node_world(nodes=1)
    controller = NamespaceController(kernel, Client(server, kernel, "namespace-controller", latency=0.005))
    controller.start()
    server.create("namespaces", None, {"metadata": {"name": "team"}})
    for name in ("a", "b"):
        server.create("pods", "team", {**bare_pod(name), "metadata": {"name": name, "namespace": "team"}})
    server.create("replicasets", "team", {**rs_manifest(replicas=0), "metadata": {"name": "web", "namespace": "team"}})
    kernel.advance(5)
    return kernel, server, controller


def calls(server, since=0):
    return [
        (r["verb"], r["resource"], r["code"]) for r in server.requests[since:] if r["client"] == "namespace-controller"
    ]


def test_the_controller_deletes_the_content_then_finalizes_the_namespace():
    kernel, server, _ = world()
    start = len(server.requests)
    server.delete("namespaces", None, "team")
    kernel.advance(0.5)
    # Pods are deleted gracefully: their kubelet is still stopping them.
    assert all(p["metadata"].get("deletionTimestamp") for p in server.list("pods", "team")["items"])
    assert server.count("replicasets", "team") == 0
    assert server.peek("namespaces", None, "team")["status"]["phase"] == "Terminating"
    first = calls(server, start)
    assert first[:4] == [
        ("get", "namespaces", 200),
        ("list", "pods", 200),  # the estimate: terminationGracePeriodSeconds 30
        ("deletecollection", "pods", 200),
        ("list", "pods", 200),
    ]
    assert ("deletecollection", "replicasets", 200) in first and ("update", "namespaces/finalize", 200) not in first
    kernel.advance(15)  # retried after 30 / 2 + 1 = 16 s, at t=21
    assert server.peek("namespaces", None, "team") is not None
    kernel.advance(1.1)
    assert server.peek("namespaces", None, "team") is None
    assert calls(server, start)[-1] == ("update", "namespaces/finalize", 200)
    assert server.count("pods", "team") == 0


def test_an_empty_namespace_goes_at_the_first_sync():
    kernel, server, _ = node_world(nodes=1)
    controller = NamespaceController(kernel, Client(server, kernel, "namespace-controller"))
    controller.start()
    server.create("namespaces", None, {"metadata": {"name": "empty"}})
    server.delete("namespaces", None, "empty")
    kernel.advance(0.1)
    assert server.peek("namespaces", None, "empty") is None

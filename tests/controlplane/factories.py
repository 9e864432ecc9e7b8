"""Builders shared by the controlplane tests: manifests and small worlds."""

from __future__ import annotations

from controlplane.apiserver import APIServer
from controlplane.kernel import Kernel
from controlplane.nodes import NodeSimulator


def rs_manifest(name="web", replicas=3, labels=None, template_labels=None, **spec):
    labels = labels or {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(template_labels or labels)},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
            **spec,
        },
    }


def rc_manifest(name="legacy", replicas=2):
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"app": name},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "busybox"}]},
            },
        },
    }


def bare_pod(name, **spec):
    """A pod manifest with no owner, labelled app=web; `spec` fields are added to its spec."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec},
    }


def node_world(trace=None, **config):
    """Kernel + API server + started NodeSimulator (nodes registered, watches open)."""
    kernel = Kernel(seed=1)
    server = APIServer(kernel)
    sim = NodeSimulator(server, kernel, trace, config)
    sim.start()
    return kernel, server, sim

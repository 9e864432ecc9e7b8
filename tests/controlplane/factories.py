"""Builders shared by the controlplane tests: manifests and small worlds."""

from __future__ import annotations

from controlplane.apiserver import APIServer
from controlplane.kernel import Kernel
from controlplane.nodes import NodeSimulator
from controlplane.scenario import demand, library, load_file

# The properties every shipped scenario is run through (liveness, a snapshot runs on as the
# original, report.json is the report, a cut replays to the report it gave) run on the scenarios of
# at most this many pods. The 10,000-pod fleet is judged once, by its own checks (the pytest plugin
# and `controlplane test`), its liveness among them ({oracle: esr}): one run is 17 s of CPU, and each
# property would run it again, the snapshot and replay ones several times.
PROPERTY_MAX_PODS = 1_000


def shipped(max_pods: int | None = None) -> list[str]:
    """The ids of the shipped scenarios; with `max_pods`, those that ask for at most that many
    pods (counted as the run's --max-pods ceiling counts them, `scenario.demand`)."""
    ids = [entry["id"] for entry in library()]
    if max_pods is None:
        return ids
    return [name for name in ids if demand(load_file(name)).pods <= max_pods]


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


def fleet_objects(replicasets, replicas):
    """`replicasets` ReplicaSets rs-000, rs-001 … of `replicas` pods each, labelled (the owner and
    its pods) app=rs-NNN and tier=web or db by parity; each selects app=rs-NNN."""
    objects = []
    for i in range(replicasets):
        name = f"rs-{i:03d}"
        labels = {"app": name, "tier": "db" if i % 2 else "web"}
        manifest = rs_manifest(name, replicas, labels={"app": name}, template_labels=labels)
        manifest["metadata"]["labels"] = dict(labels)
        objects.append(manifest)
    return objects


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

"""A watch from a resourceVersion older than the resource's watch cache window answers 410 Gone
(`too old resource version: 1 (N)`) to the real clients, as kube-apiserver's watch cache does once
it has dropped the events (controlplane/apiserver/watch_cache.py)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from .conftest import Kubectl

# 40 pods come up in the first seconds (~200 pod events), and go at t=90: by then the first ones
# are stale (older than 75 s), so the cache drops them instead of growing.
CHURN = {
    "name": "watch cache churn",
    "seed": 5,
    "config": {"nodes": 2, "podStartup": 0.5},
    "objects": [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "churn", "namespace": "default"},
            "spec": {
                "replicas": 40,
                "selector": {"matchLabels": {"app": "churn"}},
                "template": {
                    "metadata": {"labels": {"app": "churn"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
                },
            },
        }
    ],
    "actions": [{"at": 90, "scale": {"kind": "ReplicaSet", "name": "churn", "replicas": 0}}],
    "until": 3600,
}


@pytest.fixture
def churned(server, kubectl_env):
    """A paused simulation stepped to t=120, once its pods are gone."""
    sim_id = server.start(running=False, world=CHURN)
    kubectl = Kubectl(server, sim_id, kubectl_env)
    reply = server.command(sim_id, {"op": "step", "what": "to", "t": 120})
    assert reply.get("error") is None, reply
    kubectl.until(
        lambda out: out.strip() == "0", "get", "rs", "churn", "-o", "jsonpath={.status.replicas}", timeout=120
    )
    kubectl.until(lambda out: not out.strip(), "get", "pods", "-l", "app=churn", "-o", "name")
    yield kubectl
    server.stop(sim_id)


def test_kubectl_raw_watch_from_a_compacted_version_is_410(churned):
    # `--raw` takes the path from the server's root, not from the kubeconfig's server URL.
    pods = f"/sim/{churned.sim_id}/k8s/api/v1/namespaces/default/pods?watch=1"
    out = churned("get", "--raw", f"{pods}&resourceVersion=1&timeoutSeconds=20")
    events = [json.loads(line) for line in out.splitlines()]
    assert len(events) == 1 and events[0]["type"] == "ERROR"  # no replay of the history before it
    status = events[0]["object"]
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"].startswith("too old resource version: 1 (")
    floor = int(status["message"].removeprefix("too old resource version: 1 (").rstrip(")"))
    # From the oldest version still held, the watch is served (and ends with its timeout).
    later = churned("get", "--raw", f"{pods}&resourceVersion={floor}&timeoutSeconds=1")
    assert later and all(json.loads(line)["type"] != "ERROR" for line in later.splitlines())


def test_the_python_clients_watch_from_a_compacted_version_raises_410(server, churned):
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig(churned.sim_id)))
    try:
        core = client.CoreV1Api(api_client)
        with pytest.raises(ApiException) as gone:
            for _ in watch.Watch().stream(
                core.list_namespaced_pod, "default", resource_version="1", timeout_seconds=20
            ):
                pass
    finally:
        api_client.close()
    assert gone.value.status == 410 and "too old resource version: 1 (" in gone.value.reason

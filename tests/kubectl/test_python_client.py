"""The official `kubernetes` Python client against a live server: list, create a ReplicaSet,
patch its scale, watch pods, and its exceptions."""

from __future__ import annotations

import copy
import subprocess
import sys
import time

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.patience import PATIENCE_S

from .conftest import ROOT

RS = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "py"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "py"}},
        "template": {"metadata": {"labels": {"app": "py"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
    },
}


@pytest.fixture
def api(server, sim):
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig(sim)))
    yield client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    api_client.close()


def test_list_create_scale_and_watch(api):
    core, apps = api
    pods = core.list_namespaced_pod("default")
    assert pods.metadata.resource_version and all(p.metadata.namespace == "default" for p in pods.items)
    assert [rs.metadata.name for rs in apps.list_namespaced_replica_set("default").items] == ["web"]
    assert core.list_node().items[0].status.allocatable["pods"] == "110"
    assert core.list_namespaced_replication_controller("default").items[0].status.replicas >= 0
    # The controllers' Events about their ReplicaSet / RC, the scheduler's and kubelets' about pods
    # (the kubelets' with a source host and a field path the client's model decodes).
    events = core.list_namespaced_event("default").items
    assert {e.involved_object.kind for e in events} == {"ReplicaSet", "ReplicationController", "Pod"}
    assert {e.source.host for e in events if e.source.component == "kubelet"} <= {"node-1", "node-2"}
    body = copy.deepcopy(RS)
    del body["apiVersion"], body["kind"]  # the client's models may omit them: the URL says what it is
    created = apps.create_namespaced_replica_set("default", body)
    assert created.metadata.uid and created.status.replicas == 0
    scale = apps.patch_namespaced_replica_set_scale("py", "default", {"spec": {"replicas": 2}})
    assert scale.spec.replicas == 2
    seen = set()
    stream = watch.Watch()
    for event in stream.stream(core.list_namespaced_pod, "default", label_selector="app=py", timeout_seconds=15):
        seen.add(event["object"].metadata.name)
        if len(seen) == 2:
            stream.stop()
    assert len(seen) == 2 and all(name.startswith("py-") for name in seen)
    assert len(core.list_pod_for_all_namespaces(label_selector="app=py").items) == 2


def test_errors_are_the_clients_exceptions(api):
    core, apps = api
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("nope", "default")
    assert missing.value.status == 404
    with pytest.raises(ApiException) as exists:
        apps.create_namespaced_replica_set("default", {**RS, "metadata": {"name": "web"}})
    assert exists.value.status == 409
    rs = apps.read_namespaced_replica_set("web", "default")
    rs.metadata.resource_version = "1"
    with pytest.raises(ApiException) as stale:
        apps.replace_namespaced_replica_set("web", "default", rs)
    assert stale.value.status == 409 and '"reason":"Conflict"' in stale.value.body.replace(" ", "")
    apps.delete_namespaced_replica_set("web", "default", propagation_policy="Orphan")
    deadline = time.monotonic() + PATIENCE_S
    while True:  # the garbage collector orphans them a watch delivery later
        pods = core.list_namespaced_pod("default", label_selector="app=web").items
        if pods and all(not p.metadata.owner_references for p in pods):
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_version_api_answers_at_the_root_and_under_a_simulation(server, sim, tmp_path):
    """`VersionApi().get_code()` asks for `/version/` (kr8s does on connect): the version JSON, not
    the dashboard's 404 page, with the README's kubeconfig (the demo, at the root) and with --sim."""
    demo = tmp_path / "kubeconfig"
    demo.write_text(
        subprocess.run(
            [sys.executable, "manage.py", "kubeconfig", "--server", server.tls_url],
            cwd=ROOT,
            env=server.env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    for path in (demo, server.kubeconfig(sim)):
        api_client = config.new_client_from_config(config_file=str(path))
        try:
            info = client.VersionApi(api_client).get_code()
        finally:
            api_client.close()
        assert (info.major, info.minor, info.git_version) == ("1", "32", "v1.32.0-ctrlscope")

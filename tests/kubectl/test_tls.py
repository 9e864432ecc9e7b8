"""The TLS kubeconfig (issue #18 §4): the real kubectl and the official Python client over the TLS
port, with ctrlscope's CA and the access token as a bearer token; no URL carries the token."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import time

import pytest
import requests
import yaml

from tests.patience import PATIENCE_S

from .conftest import KUBECTL, TOKEN, Kubectl, free_port


def _config(path) -> dict:
    return yaml.safe_load(path.read_text())


def test_one_context_per_running_simulation_with_the_ca_and_a_bearer_token(server, sim):
    other = server.start(running=False)
    try:
        config = _config(server.kubeconfig(other))
    finally:
        server.stop(other)
    names = [c["name"] for c in config["contexts"]]
    # The demo first (it answers at the root), then by start; the current one is --sim's.
    assert names[0] == "ctrlscope-demo" and f"ctrlscope-{sim}" in names and f"ctrlscope-{other}" in names
    assert config["current-context"] == f"ctrlscope-{other}"
    clusters = {c["name"]: c["cluster"] for c in config["clusters"]}
    assert clusters["ctrlscope-demo"]["server"] == server.tls_url
    assert clusters[f"ctrlscope-{sim}"]["server"] == f"{server.tls_url}/sim/{sim}/k8s"
    ca = server.ca.read_bytes()
    assert all(base64.b64decode(c["certificate-authority-data"]) == ca for c in clusters.values())
    assert config["users"] == [{"name": "ctrlscope", "user": {"token": TOKEN}}]
    assert all(TOKEN not in c["server"] for c in clusters.values())
    for context in config["contexts"]:
        assert context["context"] == {"cluster": context["name"], "user": "ctrlscope", "namespace": "default"}


def test_kubectl_over_tls_gets_pods_metrics_and_readyz_at_the_root(kubectl):
    out = kubectl.until(lambda o: o.count("Running") == 5, "get", "pods")
    assert out.splitlines()[0].split()[:3] == ["NAME", "READY", "STATUS"]
    # --raw replaces the server URL's path: with a bearer token the root's /metrics answers.
    metrics = kubectl("get", "--raw", "/metrics")
    assert f'ctrlscope_virtual_time_seconds{{simulation="{kubectl.sim_id}"}}' in metrics
    assert kubectl("get", "--raw", "/readyz?verbose").splitlines() == [
        "[+]ping ok",
        "[+]etcd ok",
        "readyz check passed",
    ]
    # And the simulation's own, under its URL.
    assert f'simulation="{kubectl.sim_id}"' in kubectl("get", "--raw", f"/sim/{kubectl.sim_id}/k8s/metrics")


def _proxy(kubectl: Kubectl, *args: str):
    port = free_port()
    proc = subprocess.Popen(
        [KUBECTL, "proxy", f"--port={port}", *args],
        env=kubectl.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + PATIENCE_S
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"kubectl proxy did not start: {proc.communicate()[1]}") from None
            time.sleep(0.1)


def test_kubectl_proxy_without_append_server_path(kubectl):
    """The demo's context is the root: kubectl proxy (which drops the server URL's path) reaches
    it as it reaches a cluster; another simulation's context needs --append-server-path."""
    proc, url = _proxy(kubectl, "--context", "ctrlscope-demo")
    try:
        pods = requests.get(f"{url}/api/v1/namespaces/default/pods", timeout=10).json()
        assert pods["kind"] == "PodList" and pods["items"]
        assert "ctrlscope_virtual_time_seconds" in requests.get(f"{url}/metrics", timeout=10).text
    finally:
        proc.terminate()
        proc.wait(timeout=PATIENCE_S)
    proc, url = _proxy(kubectl, "--append-server-path")
    try:
        rs = requests.get(f"{url}/apis/apps/v1/namespaces/default/replicasets/web", timeout=10).json()
        assert rs["kind"] == "ReplicaSet" and rs["spec"]["replicas"] == 3
    finally:
        proc.terminate()
        proc.wait(timeout=PATIENCE_S)


def test_a_wrong_or_missing_token_is_a_401_status(kubectl, server):
    config = _config(server.kubeconfig(kubectl.sim_id))
    config["users"][0]["user"]["token"] = "wrong-token-of-some-length"
    wrong = server.tmp / "kubeconfig-tls-wrong"
    wrong.write_text(yaml.safe_dump(config))
    result = kubectl.run("get", "pods", check=False, env={"KUBECONFIG": str(wrong)})
    assert result.returncode == 1
    assert "You must be logged in to the server" in result.stderr
    raw = kubectl.run("get", "--raw", "/metrics", check=False, env={"KUBECONFIG": str(wrong)})
    assert raw.returncode == 1 and "Unauthorized" in raw.stderr
    # The answer itself is a Status, with no token (kubectl would prompt for a password: as on a
    # cluster) or a wrong one, over TLS as over http.
    for headers in ({}, {"Authorization": "Bearer wrong-token-of-some-length"}):
        answer = requests.get(
            f"{server.tls_url}/sim/{kubectl.sim_id}/k8s/api/v1/namespaces/default/pods",
            headers=headers,
            verify=str(server.ca),
            timeout=10,
        )
        assert answer.status_code == 401
        assert answer.json() == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }


def test_the_certificate_is_refused_without_the_ca_and_names_the_loopback(server):
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{server.tls_url}/version", timeout=10)
    port = server.tls_url.rsplit(":", 1)[1]
    for host in ("127.0.0.1", "localhost"):
        answer = requests.get(f"https://{host}:{port}/version", verify=str(server.ca), timeout=10)
        assert answer.json()["gitVersion"].startswith("v1.32")


def test_the_path_token_form_still_works_on_plain_http(server, sim, kubectl_env):
    config = _config(server.kubeconfig(sim, path_token=True))
    assert config["clusters"][0]["cluster"]["server"] == f"{server.url}/sim/{sim}/k8s/token/{TOKEN}"
    kubectl = Kubectl(server, sim, kubectl_env)
    kubectl.env["KUBECONFIG"] = str(server.kubeconfig(sim, path_token=True))
    assert json.loads(kubectl("get", "rs", "web", "-o", "json"))["metadata"]["name"] == "web"


def test_the_official_python_client_over_tls(server, sim):
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=str(server.kubeconfig(sim)))
    assert api_client.configuration.verify_ssl and api_client.configuration.ssl_ca_cert
    assert api_client.configuration.host == f"{server.tls_url}/sim/{sim}/k8s"
    pods = client.CoreV1Api(api_client).list_namespaced_pod("default")
    assert {p.metadata.owner_references[0].name for p in pods.items} <= {"web", "legacy"}
    rs = client.AppsV1Api(api_client).read_namespaced_replica_set("web", "default")
    assert rs.spec.replicas == 3
    api_client.close()

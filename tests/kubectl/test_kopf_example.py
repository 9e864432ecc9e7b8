"""The kopf example (`examples/kopf-operator/`) against a live server while faults aim at it
(issue #18 §6): kopf from PyPI runs as a subprocess with the simulation's kubeconfig; its first
pod patches fail with 500 (`apiFault {client: kopf}`), its pod watch is dropped
(`watchFault {client: kopf, fault: drop}`) while the ReplicaSet scales; it converges anyway, and
its writes are actions in the session's recording."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from tests.kubectl.conftest import ROOT, Kubectl

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("kopf") is None, reason="kopf is not installed (pip install kopf: the test extras have it)"
)

SEEN = ".metadata.labels.seen-by"
OPERATOR = ROOT / "examples" / "kopf-operator" / "operator.py"
WORLD = {
    "name": "kopf example",
    "seed": 5,
    "config": {"nodes": 2, "podStartup": 0.5},
    "objects": [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
                },
            },
        },
        # Not controlled by a ReplicaSet: the operator leaves it alone.
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "loner", "namespace": "default", "labels": {"app": "loner"}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
        },
    ],
    "until": 3600,
}


def act(server, sim_id: str, action: dict) -> dict:
    reply = server.command(sim_id, {"op": "act", "action": action})
    assert reply["result"]["ok"], reply
    return reply["result"]


def labelled(kubectl, *, timeout: float, count: int | None = None) -> str:
    """Every pod of web labelled by the operator (and, with `count`, that many pods: a scale's
    new pods may not exist yet when the command returns)."""
    return kubectl.until(
        lambda out: out.split()
        and (count is None or len(out.splitlines()) == count)
        and all(line.endswith("kopf") for line in out.splitlines()),
        *("get", "pods", "-l", "app=web", "--no-headers", "-o", f"custom-columns=NAME:.metadata.name,SEEN:{SEEN}"),
        timeout=timeout,
    )


@pytest.fixture
def kopf_sim(server):
    sim_id = server.start(world=WORLD)
    yield sim_id
    server.stop(sim_id)


def test_the_kopf_example_converges_under_faults_aimed_at_it(server, kopf_sim, kubectl_env, tmp_path):
    kubectl = Kubectl(server, kopf_sim, kubectl_env)
    # Its first three pod patches fail; kubectl's are not touched.
    failing = {"verb": "patch", "resource": "pods", "code": 500, "count": 3, "client": "kopf"}
    act(server, kopf_sim, {"apiFault": failing})
    log = (tmp_path / "kopf.log").open("w")
    operator = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--standalone", "--verbose", "--namespace", "default", str(OPERATOR)],
        env={**kubectl_env, "KUBECONFIG": str(server.kubeconfig(kopf_sim))},
        cwd=OPERATOR.parent,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        labelled(kubectl, timeout=30)
        # Its pod watch is dropped while the ReplicaSet grows: it relists and labels the new pods.
        act(server, kopf_sim, {"watchFault": {"resource": "pods", "fault": "drop", "client": "kopf"}})
        kubectl("scale", "rs", "web", "--replicas=5")
        out = labelled(kubectl, timeout=30, count=5)
        assert len(out.splitlines()) == 5
        # Its pod watch is paused: a new pod stays unlabelled (its view is stale) until resumed.
        act(server, kopf_sim, {"watchFault": {"resource": "pods", "fault": "pause", "client": "kopf"}})
        kubectl("scale", "rs", "web", "--replicas=6")
        kubectl.until(lambda out: len(out.split()) == 6, "get", "pods", "-l", "app=web", "--no-headers", "-o", "name")
        time.sleep(3)
        stale = kubectl("get", "pods", "-l", "app=web,!seen-by", "--no-headers", "-o", "name")
        assert len(stale.split()) == 1, stale
        act(server, kopf_sim, {"watchFault": {"resource": "pods", "fault": "resume", "client": "kopf"}})
        assert len(labelled(kubectl, timeout=30, count=6).splitlines()) == 6
        assert operator.poll() is None, "the operator exited"
    finally:
        os.killpg(operator.pid, signal.SIGTERM)
        try:
            operator.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(operator.pid, signal.SIGKILL)
            operator.wait()
        log.close()
    output = (tmp_path / "kopf.log").read_text()
    assert "labelled pod web-" in output, output[-3000:]
    # kube-apiserver's words for a 500, the fault's text as the cause (controlplane/faults.py)
    assert "APIServerError('Internal error occurred: injected fault: 500 InternalError'" in output, output[-3000:]
    assert "Restarting the watch-stream for pods.v1 in 'default'" in output, output[-3000:]  # (the drop)
    loner = kubectl("get", "pod", "loner", "-o", "jsonpath={.metadata.labels}")
    assert "seen-by" not in loner
    # Its writes are actions in the recording, under its User-Agent, the injected 500s among them.
    session = yaml.safe_load(server.session.get(f"{server.url}/sim/{kopf_sim}/scenario.yaml", timeout=30).text)
    writes = [a["request"] for a in session["actions"] if "request" in a and a["request"]["client"].startswith("kopf/")]
    patches = [w for w in writes if w["verb"] == "patch" and w["resource"] == "pods"]
    assert len(patches) >= 5 + 3
    faults = [a["watchFault"]["fault"] for a in session["actions"] if "watchFault" in a]
    assert faults == ["drop", "pause", "resume"]

"""Health, /metrics, auth reviews, logs and the refused streams with the real kubectl (#18 §3)."""

from __future__ import annotations

import json
import subprocess
import time

import requests

from tests.kubectl.conftest import KUBECTL, TOKEN

RUNS_NO_PROCESS = "ctrlscope: pod {pod} is simulated: it runs no process, so there is nothing to {what}"


def first_pod(kubectl, label: str = "app=web") -> str:
    kubectl.until(lambda out: out.count(" 1/1 ") >= 1, "get", "pods", "-l", label)
    return kubectl("get", "pods", "-l", label, "-o", "jsonpath={.items[0].metadata.name}")


def test_health_endpoints_answer_as_kube_apiserver_and_anonymously(kubectl, server):
    assert kubectl("get", "--raw=/readyz?verbose") == "[+]ping ok\n[+]etcd ok\nreadyz check passed\n"
    assert kubectl("get", "--raw=/livez?verbose") == "[+]ping ok\n[+]etcd ok\nlivez check passed\n"
    assert kubectl("get", "--raw=/healthz") == "ok"
    assert kubectl("get", "--raw=/livez/ping") == "ok"
    excluded = kubectl("get", "--raw=/readyz?verbose&exclude=etcd&exclude=nope")
    assert excluded.splitlines() == [
        "[+]ping ok",
        "[+]etcd excluded: ok",
        'warn: some health checks cannot be excluded: no matches for "nope"',
        "readyz check passed",
    ]
    # No token needed (system:public-info-viewer), at the root and under a simulation's URL ...
    assert requests.get(f"{server.url}/livez", timeout=10).text == "ok"
    assert requests.get(f"{server.url}/sim/{kubectl.sim_id}/k8s/readyz", timeout=10).text == "ok"
    assert requests.get(f"{server.url}/livez/nope", timeout=10).status_code == 404
    # ... but a wrong token presented is refused, and a simulation nobody runs is not ready.
    wrong = requests.get(f"{server.url}/sim/{kubectl.sim_id}/k8s/token/wrong/livez", timeout=10)
    assert wrong.status_code == 401 and wrong.json()["reason"] == "Unauthorized"
    bearer = requests.get(f"{server.url}/healthz", headers={"Authorization": "Bearer wrong"}, timeout=10)
    assert bearer.status_code == 401
    gone = requests.get(f"{server.url}/sim/nobody-runs-this/k8s/readyz?verbose", timeout=10)
    assert gone.status_code == 500
    assert gone.text == "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n"


def test_metrics_need_the_token_and_answer_under_the_simulations_url(kubectl, server):
    # With the path-token kubeconfig (plain http) `--raw` replaces the server URL's path, so kubectl
    # reaches /metrics with no credentials: refused as a cluster refuses it. (With the TLS one it
    # sends its bearer token: test_tls.py.)
    plain = {"KUBECONFIG": str(server.kubeconfig(kubectl.sim_id, path_token=True))}
    anonymous = kubectl.run("get", "--raw", "/metrics", check=False, env=plain)
    assert anonymous.returncode == 1 and "Unauthorized" in anonymous.stderr
    text = kubectl("get", "--raw", f"/sim/{kubectl.sim_id}/k8s/token/{TOKEN}/metrics", env=plain)
    assert f'ctrlscope_virtual_time_seconds{{simulation="{kubectl.sim_id}"}}' in text
    assert 'simulation="demo"' not in text  # this simulation's API: its own figures only
    bearer = requests.get(
        f"{server.url}/sim/{kubectl.sim_id}/k8s/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
    )
    assert bearer.status_code == 200 and "workqueue_depth" in bearer.text


def test_auth_can_i_and_whoami_answer_for_the_all_or_nothing_token(kubectl, server):
    assert kubectl("auth", "can-i", "get", "pods") == "yes\n"
    assert kubectl("auth", "can-i", "delete", "nodes", "--all-namespaces") == "yes\n"
    assert kubectl("auth", "can-i", "get", "/metrics") == "yes\n"
    rules = kubectl("auth", "can-i", "--list").split("\n")
    assert rules[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    verbs = "[get list watch create update patch delete deletecollection proxy bind escalate approve sign use]"
    assert rules[1].split() == ["[*]", "[]", "[*]"]  # (kubectl lists non-resource rules first here)
    assert rules[2].split(None, 3) == ["*.*", "[]", "[]", verbs], rules  # every verb but impersonate
    whoami = kubectl("auth", "whoami").splitlines()
    assert [line.split(None, 1) for line in whoami] == [
        ["ATTRIBUTE", "VALUE"],
        ["Username", "ctrlscope-admin"],
        ["Groups", "[system:masters system:authenticated]"],
    ]
    resources = kubectl("api-resources", "--api-group=authorization.k8s.io")
    assert "selfsubjectaccessreviews" in resources and "selfsubjectrulesreviews" in resources
    assert "SelfSubjectReview" in kubectl("api-resources", "--api-group=authentication.k8s.io")
    # Without the token a review is refused like every other request (401), never "yes".
    no_token = requests.post(
        f"{server.url}/sim/{kubectl.sim_id}/k8s/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        json={"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}},
        timeout=10,
    )
    assert no_token.status_code == 401
    both = requests.post(
        f"{server.url}/sim/{kubectl.sim_id}/k8s/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        json={"spec": {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    assert both.status_code == 422 and both.json()["reason"] == "Invalid"


def test_impersonation_is_refused_as_a_cluster_refuses_a_user_without_the_verb(kubectl, server):
    """`--as` (Impersonate-User and friends): the 403 of kube-apiserver's impersonation filter for
    a user whose role lacks `impersonate`, for reviews, reads and writes alike; nothing is written."""
    forbidden = 'users "bob" is forbidden: User "ctrlscope-admin" cannot impersonate resource "users" in API group ""'
    can_i = kubectl.run("auth", "can-i", "create", "pods", "--as=bob", check=False)
    assert can_i.returncode == 1 and f"Error from server (Forbidden): {forbidden} at the cluster scope" in can_i.stderr
    assert can_i.stdout == ""
    before = kubectl("get", "namespaces", "-o", "name")
    create = kubectl.run("create", "namespace", "as-bob", "--as=bob", check=False)
    assert create.returncode == 1 and forbidden in create.stderr, create.stderr
    get = kubectl.run("get", "pods", "--as=bob", "--as-group=devs", check=False)
    assert get.returncode == 1 and forbidden in get.stderr, get.stderr
    sa = kubectl.run("delete", "pods", "--all", "--as=system:serviceaccount:kube-system:deployer", check=False)
    assert sa.returncode == 1, sa.stderr
    assert (
        'serviceaccounts "deployer" is forbidden: User "ctrlscope-admin" cannot impersonate resource '
        '"serviceaccounts" in API group "" in the namespace "kube-system"'
    ) in sa.stderr
    assert kubectl("get", "namespaces", "-o", "name") == before  # nothing was written
    assert kubectl("get", "pods", "-o", "name").count("pod/") >= 1  # nothing was deleted
    # The reviews agree: the token's identity may do anything but impersonate.
    assert kubectl.run("auth", "can-i", "impersonate", "users", check=False).stdout == "no\n"
    assert kubectl("auth", "can-i", "create", "pods") == "yes\n"
    # The Status itself, as upstream's responsewriters.Forbidden writes it; a group alone, too.
    url = f"{server.url}/sim/{kubectl.sim_id}/k8s/api/v1/namespaces"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    answer = requests.post(url, json={"metadata": {"name": "x"}}, headers={**headers, "Impersonate-Group": "devs"},
                           timeout=10)  # fmt: skip
    assert answer.status_code == 403 and answer.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'groups "devs" is forbidden: User "ctrlscope-admin" cannot impersonate resource "groups" '
        'in API group "" at the cluster scope',
        "reason": "Forbidden",
        "details": {"name": "devs", "kind": "groups"},
        "code": 403,
    }
    extra = requests.get(url, headers={**headers, "Impersonate-Extra-Scopes": "view"}, timeout=10)
    assert extra.status_code == 403 and 'resource "userextras/scopes"' in extra.json()["message"]
    assert requests.get(url, headers={**headers, "Impersonate-User": ""}, timeout=10).status_code == 200


def test_logs_tell_what_the_kubelet_did_with_the_container(kubectl, server):
    pod = first_pod(kubectl)
    log = kubectl("logs", pod)
    assert log.startswith('ctrlscope: container "nginx" started at 2026-')
    assert "runs no process" in log and 'container "nginx" is ready at' in log
    assert kubectl("logs", pod, "-c", "nginx", "--tail=1").startswith('ctrlscope: container "nginx" is ready')
    stamped = kubectl("logs", pod, "--timestamps").splitlines()[0]
    assert stamped.startswith("2026-") and stamped.split(" ", 1)[0].endswith(".000000000Z")
    no_previous = kubectl.run("logs", pod, "--previous", check=False)
    assert no_previous.returncode == 1
    assert f'previous terminated container "nginx" in pod "{pod}" not found' in no_previous.stderr
    unknown_container = kubectl.run("logs", pod, "-c", "sidecar", check=False)
    assert f"container sidecar is not valid for pod {pod}" in unknown_container.stderr
    unknown_pod = kubectl.run("logs", "nope", check=False)
    assert unknown_pod.returncode == 1 and 'pods "nope" not found' in unknown_pod.stderr

    server.command(kubectl.sim_id, {"op": "act", "action": {"podFault": {"name": pod, "fault": "crash"}}})
    crashed = kubectl.until(lambda out: "exited with code 1" in out, "logs", pod)
    assert "exited with code 1 (Error)" in crashed and "CrashLoopBackOff: back-off 10s" in crashed
    kubectl.until(lambda out: "restarted 1 times" in out, "logs", pod)
    previous = kubectl("logs", pod, "--previous")
    assert "exited with code 1 (Error)" in previous and "restarted" not in previous


def test_logs_follow_streams_until_the_container_stops(kubectl):
    pod = first_pod(kubectl)
    env = {**kubectl.env}
    follower = subprocess.Popen(
        [KUBECTL, "logs", "-f", pod], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        time.sleep(2)
        assert follower.poll() is None  # still streaming: the container runs
        kubectl("delete", "pod", pod, "--wait=false")
        out, err = follower.communicate(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, err
    assert out.startswith('ctrlscope: container "nginx" started')
    assert "the pod is being deleted: the kubelet stops container" in out


def test_exec_attach_cp_and_port_forward_say_that_a_simulated_pod_runs_no_process(kubectl):
    pod = first_pod(kubectl)
    exec_ = kubectl.run("exec", pod, "--", "ls", check=False, timeout=30)
    assert exec_.returncode == 1
    assert f"Error from server (BadRequest): {RUNS_NO_PROCESS.format(pod=pod, what='exec into')}" in exec_.stderr
    attach = kubectl.run("attach", pod, check=False, timeout=30)
    assert RUNS_NO_PROCESS.format(pod=pod, what="attach to") in attach.stderr
    cp = kubectl.run("cp", f"{pod}:/etc/hosts", str(kubectl.server.tmp / "hosts"), check=False, timeout=30)
    assert RUNS_NO_PROCESS.format(pod=pod, what="exec into") in cp.stderr
    forward = kubectl.run("port-forward", pod, "0:80", check=False, timeout=30)
    assert forward.returncode == 1
    assert RUNS_NO_PROCESS.format(pod=pod, what="forward a port to") in forward.stderr
    missing = kubectl.run("exec", "nope", "--", "ls", check=False, timeout=30)
    assert 'pods "nope" not found' in missing.stderr


def test_a_trailing_slash_is_served_where_kube_apiserver_serves_it(kubectl, server):
    """go-restful answers `/version/`, `/api/`, `/apis/` as without the slash; the health endpoints
    are exact paths (PathRecorderMux), so `/healthz/` is a 404 there and here."""
    assert json.loads(kubectl("get", "--raw=/version/"))["gitVersion"] == "v1.32.0-ctrlscope"
    assert json.loads(kubectl("get", "--raw=/api/"))["kind"] == "APIVersions"
    assert json.loads(kubectl("get", "--raw=/apis/"))["kind"] == "APIGroupList"
    refused = kubectl.run("get", "--raw=/healthz/", check=False)
    assert refused.returncode == 1 and "NotFound" in refused.stderr
    auth = {"Authorization": f"Bearer {TOKEN}"}
    slash = requests.get(f"{server.url}/sim/{kubectl.sim_id}/k8s/livez/", headers=auth, timeout=10)
    assert slash.status_code == 404 and slash.json()["reason"] == "NotFound"
    anonymous = requests.get(f"{server.url}/sim/{kubectl.sim_id}/k8s/livez/", timeout=10)
    assert anonymous.status_code == 401  # not a public path

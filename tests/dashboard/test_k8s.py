"""The Kubernetes API in process: access, Status bodies, Tables, watches that change nothing,
writes as request actions, and /metrics. (tests/kubectl drives the same with the real binary.)"""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml
from channels.layers import get_channel_layer
from channels.testing import HttpCommunicator

from controlplane.scenario import load_file
from controlplane.simulation import Simulation, run_scenario
from dashboard.asgi import application
from dashboard.host import k8s_ops
from dashboard.host.hosted import HostedSimulation
from dashboard.k8s import tables

from .conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)


def _text(message: dict) -> str:
    """A watch message's lines: bytes for the HTTP side (`data`), or text."""
    return message.get("data", b"").decode() + message["text"]


AUTH = [(b"authorization", f"Bearer {TOKEN}".encode())]
TABLE = [(b"accept", b"application/json;as=Table;v=v1;g=meta.k8s.io,application/json")]


async def call(method, path, body=None, headers=()):
    data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body or b""
    comm = HttpCommunicator(application, method, path, body=data, headers=list(headers))
    response = await comm.get_response(timeout=10)
    return response["status"], json.loads(response["body"]) if response["body"] else None


async def test_the_api_wants_the_token_but_version_is_public(running_host):
    status, body = await call("GET", "/api/v1/namespaces/default/pods")
    assert status == 401 and body["kind"] == "Status" and body["reason"] == "Unauthorized"
    status, body = await call("GET", "/sim/demo/k8s/token/wrong/api/v1/pods")
    assert status == 401
    status, body = await call("GET", "/version")
    assert status == 200 and (body["major"], body["minor"]) == ("1", "32")
    status, body = await call("GET", f"/sim/demo/k8s/token/{TOKEN}/api/v1/pods")
    assert status == 200 and body["kind"] == "PodList"
    status, _ = await call("GET", "/metrics")
    assert status == 401


async def test_failures_are_status_objects_and_change_nothing(running_host):
    hosted = running_host.sims["demo"]
    before = len(hosted.sim.actions)
    status, body = await call("GET", "/apis/apps/v1/namespaces/default/replicasets/nope", headers=AUTH)
    assert (status, body["reason"], body["message"]) == (404, "NotFound", 'replicasets.apps "nope" not found')
    status, body = await call(
        "PATCH", "/apis/apps/v1/namespaces/default/replicasets/web", {"spec": {}}, [*AUTH, (b"content-type", b"text/x")]
    )
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")
    status, body = await call("POST", "/api/v1/namespaces/default/pods", b"{not json", AUTH)
    assert (status, body["reason"]) == (400, "BadRequest")
    status, body = await call("GET", "/apis/apps/v1/statefulsets", headers=AUTH)
    assert status == 404
    status, body = await call("GET", "/sim/nosuch/k8s/api/v1/pods", headers=AUTH)
    assert status == 404 and body["message"] == 'simulation "nosuch" is not running'
    assert len(hosted.sim.actions) == before


async def test_a_write_is_one_request_action_with_the_user_agent(running_host):
    hosted = running_host.sims["demo"]
    headers = [*AUTH, (b"content-type", b"application/merge-patch+json"), (b"user-agent", b"kubectl/v1.32.4 test")]
    status, body = await call(
        "PATCH", "/apis/apps/v1/namespaces/default/replicasets/web/scale", {"spec": {"replicas": 6}}, headers
    )
    assert status == 200 and body["kind"] == "Scale" and body["spec"]["replicas"] == 6
    entry = hosted.sim.actions[-1]
    assert entry["source"] == "kubectl/v1.32.4 test" and entry["action"]["request"]["client"] == "kubectl/v1.32.4 test"
    assert [r["resource"] for r in hosted.sim.server.requests if r["client"] == "kubectl/v1.32.4 test"] == [
        "replicasets/scale"
    ]
    status, body = await call("POST", "/api/v1/namespaces/default/pods?dryRun=All", _pod("dry"), AUTH)
    assert status == 201 and body["metadata"]["uid"]
    assert hosted.sim.actions[-1] is entry and hosted.sim.server.peek("pods", "default", "dry") is None


async def test_tables_and_paging(running_host):
    status, body = await call("GET", "/api/v1/nodes?limit=2", headers=[*AUTH, *TABLE])
    assert status == 200 and body["kind"] == "Table" and len(body["rows"]) == 2
    assert [c["name"] for c in body["columnDefinitions"]][:5] == ["Name", "Status", "Roles", "Age", "Version"]
    assert body["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    names = [row["cells"][0] for row in body["rows"]]
    token = body["metadata"]["continue"]
    status, rest = await call("GET", f"/api/v1/nodes?limit=500&continue={token}", headers=AUTH)
    assert status == 200 and "continue" not in rest["metadata"]
    assert not set(names) & {p["metadata"]["name"] for p in rest["items"]}


def test_human_durations_and_pod_status_as_kubectl_prints_them():
    assert [tables.human_duration(s) for s in (0, 59, 119, 120, 150, 600, 7200, 11000, 90000, 200000)] == [
        "0s",
        "59s",
        "119s",
        "2m",
        "2m30s",
        "10m",
        "120m",
        "3h3m",
        "25h",
        "2d7h",
    ]
    crashing = {
        "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "c"}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "c",
                    "ready": False,
                    "restartCount": 2,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"finishedAt": "2026-01-01T00:00:50Z"}},
                }
            ],
        },
    }
    assert tables.print_pod(crashing, 60.0)[:5] == ["p", "0/1", "CrashLoopBackOff", "2 (10s ago)", "60s"]
    terminating = {**crashing, "metadata": {**crashing["metadata"], "deletionTimestamp": "2026-01-01T00:01:00Z"}}
    assert tables.print_pod(terminating, 60.0)[2] == "Terminating"


def test_a_deployment_prints_as_print_deployment_prints_it():
    columns, printer = tables.PRINTERS["deployments"]
    assert [c["name"] for c in columns] == [
        *("Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector")
    ]
    assert [c["priority"] for c in columns] == [0, 0, 0, 0, 0, 1, 1, 1]
    deployment = {
        "metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "replicas": 5,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}]}},
        },
        "status": {"replicas": 6, "updatedReplicas": 3, "readyReplicas": 4, "availableReplicas": 2},
    }
    assert printer(deployment, 90.0) == ["web", "4/5", 3, 2, "90s", "a,b", "a:1,b:2", "app=web"]
    broken = {**deployment, "spec": {**deployment["spec"], "selector": {"matchLabels": {"app": "no spaces"}}}}
    assert printer(broken, 90.0)[-1] == "<invalid>"
    assert printer({"metadata": {"name": "new"}, "spec": {"replicas": 1}}, 0.0)[:4] == ["new", "0/1", 0, 0]


def _pod(name):
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


async def test_a_watch_streams_committed_events_and_leaves_the_report_identical(transactional_db, tmp_path):
    """A watcher registered on a hosted simulation gets each change once, and the session
    replays headless to the byte-identical report (watching is a pure read)."""
    scenario = load_file("demo")
    hosted = HostedSimulation("w", Simulation(scenario), name="demo", source="demo")
    layer = get_channel_layer()
    channel = await layer.new_channel()
    answer = k8s_ops.READS["k8s_watch"](
        hosted, {"channel": channel, "resource": "pods", "namespace": "default", "labelSelector": "app=web"}
    )
    assert answer["code"] == 200 and answer["lines"] == ""  # no pods yet at t=0
    lines: list[str] = []
    for t in (1.0, 3.0, 6.0):
        hosted.sim.run_until(t)
        await k8s_ops.publish(hosted)
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(channel), 0.05)
            except TimeoutError:
                break
            lines += _text(message).splitlines()
    hosted.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 2}}})
    hosted.sim.run_until(9.0)
    await k8s_ops.publish(hosted)
    message = await asyncio.wait_for(layer.receive(channel), 1)
    lines += _text(message).splitlines()
    events = [json.loads(line) for line in lines]
    added = [e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED"]
    assert len(added) == 4 and all(name.startswith("web-") for name in added)
    assert any(e["type"] == "MODIFIED" and e["object"]["status"]["phase"] == "Running" for e in events)
    assert sum(e["type"] == "DELETED" for e in events) == 2
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs)
    path = tmp_path / "w.scenario.yaml"
    path.write_text(yaml.safe_dump(hosted.export(), sort_keys=False))
    assert json.dumps(run_scenario(str(path))) == json.dumps(hosted.report())


async def test_a_watch_from_a_compacted_version_answers_410_expired(transactional_db):
    hosted = HostedSimulation("x", Simulation(load_file("demo")), name="demo", source="demo")
    hosted.sim.server._history = type(hosted.sim.server._history)(1)  # keep one event only
    hosted.sim.run_until(3.0)
    answer = k8s_ops.READS["k8s_watch"](hosted, {"channel": "c!x", "resource": "pods", "resourceVersion": "1"})
    event = json.loads(answer["lines"])
    assert answer["end"] and event["type"] == "ERROR" and event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"


async def test_a_watch_from_a_version_not_reached_yet_answers_too_large_resource_version(transactional_db):
    hosted = HostedSimulation("x", Simulation(load_file("demo")), name="demo", source="demo")
    hosted.sim.run_until(1.0)
    current = hosted.sim.server.revision
    future = str(current + 1000)
    answer = k8s_ops.READS["k8s_watch"](hosted, {"channel": "c!x", "resource": "pods", "resourceVersion": future})
    event = json.loads(answer["lines"])
    assert answer["end"] and event == {
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"Timeout: Too large resource version: {current + 1000}, current: {current}",
            "reason": "Timeout",
            "details": {
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            },
            "code": 504,
        },
    }


async def test_metrics_expose_the_simulations_figures_with_a_simulation_label(running_host):
    await asyncio.sleep(0.3)
    comm = HttpCommunicator(application, "GET", "/metrics", headers=AUTH)
    response = await comm.get_response(timeout=10)
    assert response["status"] == 200
    text = response["body"].decode()
    for name in (
        'workqueue_depth{name="replicaset",simulation="demo"}',
        'workqueue_adds_total{name="replicationmanager",simulation="demo"}',
        "workqueue_queue_duration_seconds_bucket{",
        "workqueue_work_duration_seconds_count{",
        "workqueue_retries_total{",
        "workqueue_unfinished_work_seconds{",
        "workqueue_longest_running_processor_seconds{",
        "replicaset_controller_sorting_deletion_age_ratio_bucket{",
        'apiserver_request_total{client="replicaset-controller",code="201",resource="pods",simulation="demo",verb="create"}',
        'ctrlscope_virtual_time_seconds{simulation="demo"}',
        'ctrlscope_kernel_events_total{simulation="demo"}',
        # The demo runs the Deployment controller: its queue is there, and it exports no
        # ReplicaSet-controller figures (its metrics are `{}`).
        'workqueue_depth{name="deployment",simulation="demo"}',
    ):
        assert name in text, name
    assert 'controller="deployment"' not in text

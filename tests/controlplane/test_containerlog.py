"""A simulated container's log: what the kubelet did with each instance, refused as upstream."""

from __future__ import annotations

import pytest

from controlplane.apiserver import ApiError, Request
from controlplane.containerlog import container_log
from controlplane.scenario import parse_scenario
from controlplane.simulation import Simulation

WORLD = {
    "name": "logs",
    "seed": 1,
    "config": {"nodes": 1, "podStartup": 2.0},
    "objects": [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
                },
            },
        }
    ],
}


def _sim(world=WORLD) -> tuple[Simulation, str]:
    sim = Simulation(parse_scenario(world))
    sim.start()
    sim.run_until(10)
    pods = sim.server.read(Request("t", "list", "pods", None, "default", None))["items"]
    return sim, pods[0]["metadata"]["name"]


def texts(log) -> list[str]:
    return [text for _, text in log.lines]


def test_a_running_container_tells_when_it_started_and_became_ready():
    sim, pod = _sim()
    log = sim.container_log("default", pod, None, False)
    assert not log.finished and log.container_id.startswith("containerd://")
    started = 'ctrlscope: container "nginx" started at 2026-01-01T00:00:02Z (image docker.io/library/nginx:1.27'
    assert texts(log)[0].startswith(started)
    assert "runs no process" in texts(log)[0]
    assert texts(log)[1] == 'ctrlscope: container "nginx" is ready at 2026-01-01T00:00:02Z'
    assert [t for t, _ in log.lines] == [2.0, 2.0]


def test_a_crash_shows_the_exit_code_and_the_back_off_and_is_the_previous_log_after_the_restart():
    sim, pod = _sim()
    first = sim.container_log("default", pod, None, False).container_id
    sim.apply({"podFault": {"name": pod, "fault": "crash"}})
    sim.advance(1)
    crashed = sim.container_log("default", pod, None, False)
    assert crashed.finished and crashed.container_id == first
    assert texts(crashed)[-2] == 'ctrlscope: container "nginx" exited with code 1 (Error) at 2026-01-01T00:00:10Z'
    assert texts(crashed)[-1].startswith("ctrlscope: CrashLoopBackOff: back-off 10s restarting failed container=nginx")
    sim.advance(15)  # the back-off is over: a new instance runs
    current = sim.container_log("default", pod, None, False)
    assert current.container_id != first and not current.finished
    assert 'container "nginx" was restarted 1 times so far' in texts(current)[1]
    previous = sim.container_log("default", pod, "nginx", True)
    assert previous.container_id == first and "exited with code 1 (Error)" in texts(previous)[1]


def test_refusals_carry_upstreams_reason_and_text():
    sim, pod = _sim()
    with pytest.raises(ApiError) as unknown_pod:
        sim.container_log("default", "nope", None, False)
    assert (unknown_pod.value.code, unknown_pod.value.message) == (404, 'pods "nope" not found')
    with pytest.raises(ApiError) as unknown_container:
        sim.container_log("default", pod, "sidecar", False)
    assert (unknown_container.value.code, unknown_container.value.message) == (
        400,
        f"container sidecar is not valid for pod {pod}",
    )
    with pytest.raises(ApiError) as no_previous:
        sim.container_log("default", pod, None, True)
    assert no_previous.value.message == f'previous terminated container "nginx" in pod "{pod}" not found'


def test_a_container_not_started_yet_is_waiting_and_an_unscheduled_pod_has_an_empty_log():
    sim, pod = _sim()
    sim.apply({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 2}})
    sim.advance(0.5)  # created and scheduled, not started (podStartup is 2 s)
    pods = sim.server.read(Request("t", "list", "pods", None, "default", None))["items"]
    new = next(p for p in pods if p["metadata"]["name"] != pod)
    with pytest.raises(ApiError) as waiting:
        sim.container_log("default", new["metadata"]["name"], None, False)
    assert waiting.value.code == 400
    assert waiting.value.message.endswith("is waiting to start: ContainerCreating")
    sim.apply({"nodeFault": {"name": "node-1", "fault": "down"}})
    unscheduled = {**new, "spec": {**new["spec"], "nodeName": ""}}
    assert container_log(unscheduled, None, False, sim.now).lines == []


def test_a_multi_container_pod_needs_a_container_name():
    pod = {"metadata": {"name": "two"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n"}}
    with pytest.raises(ApiError) as err:
        container_log(pod, None, False, 0.0)
    assert err.value.message == "a container name must be specified for pod two, choose one of: [a b]"


def test_an_evicted_pod_says_so_and_reading_a_log_changes_no_report():
    sim, pod = _sim()
    before = sim.report_json()
    sim.container_log("default", pod, None, False)
    assert sim.report_json() == before
    sim.apply({"podFault": {"name": pod, "fault": "evict"}})
    sim.advance(0.1)
    log = sim.container_log("default", pod, None, False)
    assert log.finished
    assert "ctrlscope: the kubelet evicted the pod: The node was low on resource: memory." in texts(log)
    assert texts(log)[-1].startswith('ctrlscope: container "nginx" exited with code 137 (Error)')

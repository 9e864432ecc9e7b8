"""Kubelet: pod startup, readiness, deletion, crash loop back-off and faults (controlplane/kubelet.py)."""

from __future__ import annotations

from controlplane.apiserver import APIServer
from controlplane.kernel import Kernel
from controlplane.kubelet import image_refs
from controlplane.nodes import NodeSimulator


def make_world(**config):
    kernel = Kernel(seed=1)
    server = APIServer(kernel)
    sim = NodeSimulator(server, kernel, None, {"nodes": 1, **config})
    sim.start()
    return kernel, server, sim


def pod(name="web-0", **spec):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec},
    }


def get(server, name="web-0"):
    return server.get("pods", "default", name)


def condition(p, ctype):
    return next(c for c in p["status"]["conditions"] if c["type"] == ctype)


def kubelet_writes(server, verb="update"):
    return [
        r for r in server.requests if r["client"] == "kubelet" and r["verb"] == verb and r["resource"] == "pods/status"
    ]


def started(kernel, server, sim, **spec):
    """A pod running and ready on node-1 (bound at 0.005, Running+Ready at 2.010)."""
    server.create("pods", "default", pod(**spec))
    kernel.advance(3)
    return sim.kubelets["node-1"]


def test_bound_pod_is_container_creating_then_running_and_ready_in_one_write():
    kernel, server, _ = make_world()
    server.create("pods", "default", pod())
    kernel.advance(2.0)
    p = get(server)
    assert p["status"]["phase"] == "Pending"
    [status] = p["status"]["containerStatuses"]
    assert status == {
        "name": "app",
        "state": {"waiting": {"reason": "ContainerCreating"}},
        "lastState": {},
        "ready": False,
        "restartCount": 0,
        "image": "nginx",
        "imageID": "",
        "started": False,
    }
    assert condition(p, "PodReadyToStartContainers")["status"] == "False"
    assert condition(p, "Ready")["reason"] == "ContainersNotReady"
    assert "podIP" not in p["status"]
    assert len(kubelet_writes(server)) == 1
    kernel.advance(0.02)
    p = get(server)
    assert p["status"]["phase"] == "Running"
    assert condition(p, "Ready")["status"] == "True"
    assert len(kubelet_writes(server)) == 2


def test_ready_follows_running_after_pod_ready_delay():
    kernel, server, _ = make_world(podReadyDelay=5.0)
    server.create("pods", "default", pod())
    kernel.advance(2.02)
    p = get(server)
    assert p["status"]["phase"] == "Running"
    assert condition(p, "Ready")["status"] == "False"
    assert condition(p, "Ready")["reason"] == "ContainersNotReady"
    assert condition(p, "Ready")["message"] == "containers with unready status: [app]"
    kernel.advance(5.0)
    p = get(server)
    assert condition(p, "Ready")["status"] == "True"
    assert condition(p, "Ready")["lastTransitionTime"] == "2026-01-01T00:00:07Z"
    assert len(kubelet_writes(server)) == 3  # ContainerCreating, Running, Ready


def test_running_status_reports_ips_start_time_and_container_status():
    kernel, server, sim = make_world()
    started(kernel, server, sim)
    status = get(server)["status"]
    assert status["hostIP"] == "10.0.0.1"
    assert status["podIP"] == "10.244.1.2"
    assert status["podIPs"] == [{"ip": "10.244.1.2"}]
    assert status["startTime"] == "2026-01-01T00:00:00Z"
    [cs] = status["containerStatuses"]
    assert cs["state"] == {"running": {"startedAt": "2026-01-01T00:00:02Z"}}
    assert cs["ready"] is True
    assert cs["restartCount"] == 0
    assert cs["image"] == "docker.io/library/nginx:latest"
    assert cs["imageID"].startswith("docker.io/library/nginx@sha256:")
    assert cs["containerID"].startswith("containerd://")
    assert [c["type"] for c in status["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]


def test_graceful_deletion_removes_the_pod_after_pod_shutdown():
    kernel, server, sim = make_world()
    started(kernel, server, sim)
    server.delete("pods", "default", "web-0")
    assert get(server)["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:33Z"
    kernel.advance(0.99)
    assert get(server)["status"]["phase"] == "Running"
    kernel.advance(0.03)
    assert server.list("pods", "default")["items"] == []
    deletes = [r for r in server.requests if r["client"] == "kubelet" and r["verb"] == "delete"]
    assert [(r["name"], r["code"]) for r in deletes] == [("web-0", 200)]


def test_final_status_before_deletion_is_terminal_with_exit_code():
    kernel, server, sim = make_world()
    started(kernel, server, sim)
    seen = []
    server.watch("pods", "default").start(lambda events: seen.extend(events))
    server.delete("pods", "default", "web-0")
    kernel.advance(2)
    last_modified = [p for kind, p in seen if kind == "MODIFIED"][-1]
    assert last_modified["status"]["phase"] == "Succeeded"
    terminated = last_modified["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")


def test_shutdown_is_capped_by_the_grace_period_and_kills_the_container():
    kernel, server, sim = make_world(podShutdown=10.0)
    started(kernel, server, sim, terminationGracePeriodSeconds=2)
    seen = []
    server.watch("pods", "default").start(lambda events: seen.extend(events))
    server.delete("pods", "default", "web-0")
    kernel.advance(1.9)
    assert get(server) is not None
    kernel.advance(0.2)
    assert server.list("pods", "default")["items"] == []
    last_modified = [p for kind, p in seen if kind == "MODIFIED"][-1]
    assert last_modified["status"]["phase"] == "Failed"
    assert last_modified["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


def test_crash_shows_crash_loop_back_off_then_restarts_after_ten_seconds():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim)
    assert kubelet.crash(get(server)) is True
    kernel.advance(0.01)
    p = get(server)
    [cs] = p["status"]["containerStatuses"]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    message = cs["state"]["waiting"]["message"]
    assert message.startswith("back-off 10s restarting failed container=app pod=web-0_default(")
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert cs["restartCount"] == 1
    assert condition(p, "Ready")["status"] == "False"
    assert p["status"]["phase"] == "Running"
    assert sim.pod_state("default", "web-0") == "CrashLoopBackOff"
    kernel.advance(9.98)
    assert "waiting" in get(server)["status"]["containerStatuses"][0]["state"]
    kernel.advance(0.02)
    p = get(server)
    assert "running" in p["status"]["containerStatuses"][0]["state"]
    assert condition(p, "Ready")["status"] == "True"


def test_crash_loop_back_off_doubles_from_10_to_300_seconds():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim)
    for restarts, back_off in enumerate([10, 20, 40, 80, 160, 300, 300], start=1):
        assert kubelet.crash(get(server))
        kernel.advance(back_off - 0.001)
        [cs] = get(server)["status"]["containerStatuses"]
        assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert cs["restartCount"] == restarts
        kernel.advance(0.011)
        assert "running" in get(server)["status"]["containerStatuses"][0]["state"]


def test_back_off_resets_after_the_container_ran_ten_minutes():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim)
    kubelet.crash(get(server))
    kernel.advance(11)
    kubelet.crash(get(server))  # second crash soon after: 20 s
    kernel.advance(21)
    kernel.advance(601)
    kubelet.crash(get(server))
    kernel.advance(0.01)
    message = get(server)["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
    assert message.startswith("back-off 10s ")


def test_fail_sets_phase_failed_with_exit_code_one():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim)
    assert kubelet.fail(get(server))
    kernel.advance(0.01)
    p = get(server)
    assert p["status"]["phase"] == "Failed"
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
    assert condition(p, "Ready")["reason"] == "PodFailed"


def test_succeed_sets_phase_succeeded_with_exit_code_zero():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim)
    assert kubelet.succeed(get(server))
    kernel.advance(0.01)
    p = get(server)
    assert p["status"]["phase"] == "Succeeded"
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert condition(p, "Ready")["reason"] == "PodCompleted"


def test_evict_fails_the_pod_with_reason_evicted():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim)
    assert kubelet.evict(get(server))
    kernel.advance(0.01)
    status = get(server)["status"]
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed",
        "Evicted",
        "The node was low on resource: memory.",
    )
    assert sim.pod_state("default", "web-0") == "Failed"
    disruption = condition(get(server), "DisruptionTarget")
    assert (disruption["status"], disruption["reason"]) == ("True", "TerminationByKubelet")


def test_pod_deleted_before_its_containers_started_is_removed_without_another_status_write():
    kernel, server, _ = make_world()
    server.create("pods", "default", pod())
    kernel.advance(1)
    assert len(kubelet_writes(server)) == 1  # ContainerCreating
    server.delete("pods", "default", "web-0")
    kernel.advance(0.01)
    assert server.list("pods", "default")["items"] == []
    assert len(kubelet_writes(server)) == 1


def test_each_fault_is_exactly_one_status_write():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim)
    before = len(kubelet_writes(server))
    kubelet.set_ready(get(server), False)
    kernel.advance(0.01)
    assert len(kubelet_writes(server)) == before + 1


def test_set_ready_moves_last_transition_time_only_when_readiness_changes():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim)
    kernel.advance(7)  # now 10
    kubelet.set_ready(get(server), False)
    kernel.advance(0.01)
    p = get(server)
    assert condition(p, "Ready")["status"] == "False"
    assert condition(p, "Ready")["lastTransitionTime"] == "2026-01-01T00:00:10Z"
    assert condition(p, "PodScheduled")["status"] == "True"
    assert sim.pod_state("default", "web-0") == "NotReady"
    writes = len(kubelet_writes(server))
    kubelet.set_ready(get(server), False)
    kernel.advance(0.01)
    assert len(kubelet_writes(server)) == writes
    kernel.advance(5)
    kubelet.set_ready(get(server), True)
    kernel.advance(0.01)
    assert condition(get(server), "Ready")["lastTransitionTime"] == "2026-01-01T00:00:15Z"
    assert sim.pod_state("default", "web-0") == "Ready"


def test_status_write_conflict_rereads_and_retries():
    kernel, server, _ = make_world()
    server.create("pods", "default", pod())
    kernel.advance(2.007)  # the kubelet's write was sent at 2.005 and lands at 2.010
    server.patch("pods", "default", "web-0", {"metadata": {"labels": {"touched": "yes"}}})
    kernel.advance(1)
    calls = [
        (r["verb"], r["code"]) for r in server.requests if r["client"] == "kubelet" and r["resource"].startswith("pods")
    ]
    assert calls[-3:] == [("update", 409), ("get", 200), ("update", 200)]
    assert get(server)["status"]["phase"] == "Running"


def test_faults_need_a_running_container():
    kernel, server, sim = make_world()
    server.create("pods", "default", pod())
    kernel.advance(1)
    assert sim.kubelets["node-1"].crash(get(server)) is False


def test_restart_policy_never_turns_a_crash_into_failure():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim, restartPolicy="Never")
    kubelet.crash(get(server))
    kernel.advance(0.01)
    assert get(server)["status"]["phase"] == "Failed"


def test_image_refs_normalise_like_containerd():
    assert image_refs("nginx")[0] == "docker.io/library/nginx:latest"
    assert image_refs("nginx:1.27")[0] == "docker.io/library/nginx:1.27"
    assert image_refs("bitnami/redis:7")[0] == "docker.io/bitnami/redis:7"
    assert image_refs("registry.k8s.io/pause:3.10")[0] == "registry.k8s.io/pause:3.10"
    assert image_refs("localhost:5000/app")[0] == "localhost:5000/app:latest"


# -- Events (pkg/kubelet/events) ------------------------------------------------------------------
def events(server, name="web-0"):
    """(reason, message, count) of the kubelet's Events about the pod, in creation order."""
    items = [
        e
        for e in server.list("events", "default")["items"]
        if e["involvedObject"]["name"] == name and e["source"]["component"] == "kubelet"
    ]
    items.sort(key=lambda e: (e["firstTimestamp"], e["metadata"]["name"]))
    return [(e["reason"], e["message"], e["count"]) for e in items]


def test_a_starting_pod_records_pulling_pulled_created_started_from_its_node():
    kernel, server, _ = make_world()
    server.create("pods", "default", pod(containers=[{"name": "web", "image": "nginx"}]))
    kernel.advance(0.5)
    assert events(server) == [("Pulling", 'Pulling image "nginx"', 1)]
    kernel.advance(2)
    size = 10_000_000 + int.from_bytes(__import__("hashlib").sha256(b"nginx").digest()[:4], "big") % 90_000_000
    assert events(server) == [
        ("Pulling", 'Pulling image "nginx"', 1),
        ("Pulled", f'Successfully pulled image "nginx" in 2s (2s including waiting). Image size: {size} bytes.', 1),
        ("Created", "Created container: web", 1),
        ("Started", "Started container web", 1),
    ]
    started = next(e for e in server.list("events", "default")["items"] if e["reason"] == "Started")
    assert started["source"] == {"component": "kubelet", "host": "node-1"}
    assert started["reportingInstance"] == "node-1"
    assert started["involvedObject"]["fieldPath"] == "spec.containers{web}"
    assert started["involvedObject"]["kind"] == "Pod"
    posts = [r for r in server.requests if r["resource"] == "events" and r["verb"] == "create"]
    assert [r["client"] for r in posts] == ["default-scheduler"] + ["kubelet"] * 4


def test_an_image_already_on_the_node_is_not_pulled_again_if_not_present_policy():
    kernel, server, _ = make_world()
    web = [{"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent"}]
    server.create("pods", "default", pod("web-0", containers=web))
    kernel.advance(3)
    server.create("pods", "default", pod("web-1", containers=web))
    kernel.advance(3)
    assert [r for r, _, _ in events(server, "web-0")] == ["Pulling", "Pulled", "Created", "Started"]
    assert events(server, "web-1") == [
        ("Pulled", 'Container image "nginx:1.27" already present on machine', 1),
        ("Created", "Created container: web", 1),
        ("Started", "Started container web", 1),
    ]


def test_a_crash_loop_aggregates_into_counts_with_a_back_off_warning():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim, containers=[{"name": "web", "image": "nginx:1.27"}])
    uid = get(server)["metadata"]["uid"]
    for _ in range(2):
        kubelet.crash(get(server))
        kernel.advance(60)
    got = events(server)
    assert ("BackOff", f"Back-off restarting failed container web in pod web-0_default({uid})", 2) in got
    assert ("Pulled", 'Container image "nginx:1.27" already present on machine', 2) in got
    assert ("Created", "Created container: web", 3) in got
    assert ("Started", "Started container web", 3) in got
    backoff = next(e for e in server.list("events", "default")["items"] if e["reason"] == "BackOff")
    assert backoff["type"] == "Warning"


def test_deleting_a_running_pod_records_killing():
    kernel, server, sim = make_world()
    started(kernel, server, sim, containers=[{"name": "web", "image": "nginx"}])
    server.delete("pods", "default", "web-0")
    kernel.advance(0.01)
    assert events(server)[-1] == ("Killing", "Stopping container web", 1)


def test_an_eviction_records_evicted_then_killing():
    kernel, server, sim = make_world()
    kubelet = started(kernel, server, sim, containers=[{"name": "web", "image": "nginx"}])
    kubelet.evict(get(server))
    kernel.advance(0.01)
    assert events(server)[-2:] == [
        ("Evicted", "The node was low on resource: memory.", 1),
        ("Killing", "Stopping container web", 1),
    ]


def test_go_durations_of_pulls_are_truncated_to_milliseconds():
    from controlplane.kubelet import _go_ms_duration

    assert [_go_ms_duration(s) for s in (0, 0.25, 2, 1.5, 65.25, 3600)] == [
        "0s",
        "250ms",
        "2s",
        "1.5s",
        "1m5.25s",
        "1h0m0s",
    ]

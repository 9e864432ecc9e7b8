"""config.imageFaults: ErrImagePull / ImagePullBackOff and NeverReady from the kubelet (controlplane/kubelet.py)."""

from __future__ import annotations

import pytest

from controlplane.kubelet import image_fault, pull_error
from controlplane.scenario import ScenarioError, check_config, default_config, parse_scenario
from controlplane.simulation import Simulation
from tests.controlplane.test_kubelet import condition, events, get, make_world, pod

BAD = "nginx:9.9"
NOT_FOUND = (
    'rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:9.9": '
    'failed to resolve reference "docker.io/library/nginx:9.9": docker.io/library/nginx:9.9: not found'
)


def waiting(p):
    [status] = p["status"]["containerStatuses"]
    return status["state"].get("waiting")


def test_pull_error_is_containerds_not_found():
    assert pull_error(BAD) == NOT_FOUND


def test_first_matching_pattern_wins_and_no_pattern_means_no_fault():
    faults = {"nginx:9.*": "ErrImagePull", "nginx:*": "NeverReady"}
    assert image_fault(faults, "nginx:9.9") == "ErrImagePull"
    assert image_fault(faults, "nginx:1.27") == "NeverReady"
    assert image_fault(faults, "redis") is None
    assert image_fault({}, "nginx") is None


def test_err_image_pull_then_image_pull_back_off_with_doubling_back_off():
    kernel, server, _ = make_world(imageFaults={"nginx:9.*": "ErrImagePull"})
    server.create("pods", "default", pod(containers=[{"name": "app", "image": BAD}]))
    kernel.advance(2.5)  # the pull fails when it would have finished (podStartup 2 s)
    p = get(server)
    assert p["status"]["phase"] == "Pending"
    assert waiting(p) == {"reason": "ErrImagePull", "message": NOT_FOUND}
    assert condition(p, "Ready")["status"] == "False"
    assert condition(p, "PodReadyToStartContainers")["status"] == "True"
    assert events(server) == [
        ("Pulling", f'Pulling image "{BAD}"', 1),
        ("Failed", f'Failed to pull image "{BAD}": {NOT_FOUND}', 1),
        ("Failed", "Error: ErrImagePull", 1),
    ]
    kernel.advance(1.0)  # the next pod sync finds the pull backing off
    p = get(server)
    assert waiting(p) == {
        "reason": "ImagePullBackOff",
        "message": f'Back-off pulling image "{BAD}": ErrImagePull: {NOT_FOUND}',
    }
    assert ("BackOff", f'Back-off pulling image "{BAD}"', 1) in events(server)
    assert ("Failed", "Error: ImagePullBackOff", 1) in events(server)
    # Back-off 10 s from the failure at ~2: the pull starts again at ~12, fails at ~14; then 20 s.
    kernel.advance(8.4)  # t ~ 11.9: still backing off
    assert events(server)[0] == ("Pulling", f'Pulling image "{BAD}"', 1)
    kernel.advance(0.2)
    assert events(server)[0] == ("Pulling", f'Pulling image "{BAD}"', 2)
    kernel.advance(2.0 + 20.0 - 0.3)  # t ~ 33.8: the second back-off (20 s) not over
    assert events(server)[0][2] == 2
    kernel.advance(0.5)
    assert events(server)[0][2] == 3
    assert get(server)["status"]["phase"] == "Pending"


def test_lifting_the_fault_lets_the_next_pull_succeed():
    kernel, server, sim = make_world(imageFaults={BAD: "ErrImagePull"})
    server.create("pods", "default", pod(containers=[{"name": "app", "image": BAD}]))
    kernel.advance(5)
    sim.apply_config({"imageFaults": {}})
    kernel.advance(5)  # the retry at ~12 pulls and starts
    assert get(server)["status"]["phase"] == "Pending"
    kernel.advance(5)
    p = get(server)
    assert p["status"]["phase"] == "Running"
    assert condition(p, "Ready")["status"] == "True"
    pulled = [e for e in events(server) if e[0] == "Pulled"]
    assert pulled[0][1].startswith(f'Successfully pulled image "{BAD}" in 2s (2s including waiting)')


def test_an_image_already_on_the_node_is_not_pulled_so_it_does_not_fail():
    kernel, server, sim = make_world()
    server.create("pods", "default", pod("a", containers=[{"name": "app", "image": BAD}]))
    kernel.advance(3)
    sim.apply_config({"imageFaults": {BAD: "ErrImagePull"}})
    server.create("pods", "default", pod("b", containers=[{"name": "app", "image": BAD}]))
    kernel.advance(3)
    assert get(server, "b")["status"]["phase"] == "Running"  # IfNotPresent, present
    server.create("pods", "default", pod("c", containers=[{"name": "app", "image": BAD, "imagePullPolicy": "Always"}]))
    kernel.advance(3)
    assert waiting(get(server, "c"))["reason"] == "ErrImagePull"


def test_never_ready_runs_but_never_becomes_ready_until_the_fault_is_lifted():
    kernel, server, sim = make_world(imageFaults={"nginx": "NeverReady"})
    server.create("pods", "default", pod())
    kernel.advance(100)
    p = get(server)
    assert p["status"]["phase"] == "Running"
    assert condition(p, "Ready")["status"] == "False"
    assert p["status"]["containerStatuses"][0]["started"] is True
    assert ("Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503", 1) in events(server)
    sim.apply_config({"imageFaults": {"other": "NeverReady"}})
    kernel.advance(0.1)
    assert condition(get(server), "Ready")["status"] == "True"


def test_never_ready_with_a_ready_delay_and_the_ready_pod_fault():
    kernel, server, sim = make_world(imageFaults={"nginx": "NeverReady"}, podReadyDelay=3.0)
    server.create("pods", "default", pod())
    kernel.advance(10)
    assert condition(get(server), "Ready")["status"] == "False"
    assert sim.kubelets["node-1"].set_ready(get(server), True)
    kernel.advance(0.1)
    assert condition(get(server), "Ready")["status"] == "True"


def test_a_failing_pod_is_deleted_without_a_status():
    kernel, server, _ = make_world(imageFaults={BAD: "ErrImagePull"})
    server.create("pods", "default", pod(containers=[{"name": "app", "image": BAD}]))
    kernel.advance(5)
    server.delete("pods", "default", "web-0")
    kernel.advance(2)
    assert server.list("pods", "default")["items"] == []


# -- the config key ---------------------------------------------------------------------------------
def test_default_is_empty():
    assert default_config()["imageFaults"] == {}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "config.imageFaults: must be a mapping, not list"),
        ({"nginx": "Crash"}, "config.imageFaults.nginx: must be one of ErrImagePull, NeverReady (got 'Crash')"),
        ({"nginx": 3}, "config.imageFaults.nginx: must be a string, not number"),
        ({"": "NeverReady"}, "config.imageFaults: a pattern must not be empty"),
        (
            {"x" * 257: "NeverReady"},
            "config.imageFaults: pattern 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'...: at most 256 characters",
        ),
        ({f"i{n}": "NeverReady" for n in range(101)}, "config.imageFaults: at most 100 patterns (got 101)"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_field(value, message):
    with pytest.raises(ScenarioError) as err:
        check_config({"imageFaults": value})
    assert str(err.value) == message


def test_a_config_action_replaces_the_mapping_and_a_bad_one_changes_nothing():
    sim = Simulation(parse_scenario({"config": {"nodes": 1, "imageFaults": {"a": "NeverReady"}}, "until": 10}))
    sim.start()
    out = sim.apply({"config": {"imageFaults": {"nginx:bad": "ErrImagePull"}}})
    assert out["config"] == {"imageFaults": {"nginx:bad": "ErrImagePull"}}
    assert sim.config["imageFaults"] == {"nginx:bad": "ErrImagePull"}
    assert sim.nodes.config["imageFaults"] == {"nginx:bad": "ErrImagePull"}
    refused = sim.apply({"config": {"imageFaults": {"nginx:bad": "Nope"}}})
    assert refused["ok"] is False
    assert refused["error"].startswith("config.imageFaults.nginx:bad: must be one of ErrImagePull, NeverReady")
    assert sim.config["imageFaults"] == {"nginx:bad": "ErrImagePull"}

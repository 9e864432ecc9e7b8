"""apps/v1 deployments in the simulated API server: SetDefaults_Deployment, generation, the
status and scale subresources, validation (deployment spec D15)."""

from __future__ import annotations

import copy

import pytest

from controlplane.apiserver import ApiError, APIServer
from controlplane.kernel import Kernel


def body(**spec):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
            **spec,
        },
    }


@pytest.fixture
def server():
    return APIServer(Kernel(seed=1))


def test_create_applies_upstreams_defaults_and_generation_one(server):
    d = server.create("deployments", "default", body())
    spec = d["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert d["metadata"]["generation"] == 1
    recreate = server.create(
        "deployments", "default", {**body(strategy={"type": "Recreate"}), "metadata": {"name": "r"}}
    )
    assert recreate["spec"]["strategy"] == {"type": "Recreate"}


def test_a_spec_or_annotation_change_bumps_generation_and_a_status_write_does_not(server):
    d = server.create("deployments", "default", body())
    changed = copy.deepcopy(d)
    changed["metadata"]["annotations"] = {"kubernetes.io/change-cause": "v2"}
    d = server.update("deployments", "default", "web", changed)
    assert d["metadata"]["generation"] == 2
    status = copy.deepcopy(d)
    status["status"] = {"observedGeneration": 2, "replicas": 1}
    status["spec"]["replicas"] = 7  # ignored by the status endpoint
    status["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1"  # kept (D6.5)
    d = server.update("deployments", "default", "web", status, subresource="status")
    assert (d["metadata"]["generation"], d["spec"]["replicas"], d["status"]["replicas"]) == (2, 1, 1)
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"


def test_the_scale_subresource_reads_and_writes_spec_replicas(server):
    server.create("deployments", "default", body(replicas=3))
    scale = server.get("deployments", "default", "web", subresource="scale")
    assert (scale["spec"]["replicas"], scale["status"]["selector"]) == (3, "app=web")
    scale["spec"]["replicas"] = 5
    server.update("deployments", "default", "web", scale, subresource="scale")
    assert server.peek("deployments", "default", "web")["spec"]["replicas"] == 5


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}},
            "may not be 0 when `maxSurge` is 0",
        ),
        (
            {"strategy": {"type": "Recreate", "rollingUpdate": {}}},
            "may not be specified when strategy `type` is 'Recreate'",
        ),
        (
            {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%"}}},
            "must not be greater than 100%",
        ),
        ({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "x"}}}, "a valid percent string"),
        # Go's `$` ends the text: a newline after the % is not a percent (Python's `$` took it,
        # and the number after it raised instead of a 422).
        ({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%\n"}}}, "a valid percent string"),
        # More digits than an int64 (or Python's int() takes): Atoi's out-of-range value, > 100%.
        (
            {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "9" * 5000 + "%"}}},
            "must not be greater than 100%",
        ),
        ({"strategy": {"type": "Blue"}}, "Unsupported value"),
        ({"minReadySeconds": 10, "progressDeadlineSeconds": 10}, "must be greater than minReadySeconds"),
        ({"revisionHistoryLimit": -1}, "must be greater than or equal to 0"),
        ({"selector": {"matchLabels": {"app": "other"}}}, "`selector` does not match template `labels`"),
    ],
)
def test_invalid_deployments_are_refused_with_422(server, spec, message):
    with pytest.raises(ApiError) as err:
        server.create("deployments", "default", body(**spec))
    assert err.value.code == 422 and message in err.value.message
    assert server.count("deployments") == 0


def test_the_selector_is_immutable_and_collision_count_never_decreases(server):
    d = server.create("deployments", "default", body())
    moved = copy.deepcopy(d)
    moved["spec"]["selector"] = {"matchLabels": {"app": "web", "x": "y"}}
    moved["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    with pytest.raises(ApiError, match="field is immutable"):
        server.update("deployments", "default", "web", moved)
    d["status"] = {"collisionCount": 2}
    d = copy.deepcopy(server.update("deployments", "default", "web", d, subresource="status"))
    d["status"] = {"collisionCount": 1}
    with pytest.raises(ApiError, match="cannot be decremented"):
        server.update("deployments", "default", "web", d, subresource="status")

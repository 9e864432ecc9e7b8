"""Ports of upstream's `pkg/controller/deployment/rolling_test.go` (spec D8): the four table
tests, same names in snake_case and the same rows. Each drives our controller's own
`reconcileNewReplicaSet`, `reconcileOldReplicaSets`, `cleanupUnhealthyReplicas` and
`scaleDownOldReplicaSetsForRollingUpdate` on objects built as upstream's `rs` and `newDeployment`
fixtures build them, against a fake client that records each action (upstream's
`fake.Clientset{}`) and answers an update with the object it was sent; Events go to the
recorder, as upstream's `record.FakeRecorder`, and are not actions."""

from __future__ import annotations

import copy

import pytest

from controlplane.apiserver import APIServer
from controlplane.apiserver.errors import not_found
from controlplane.controllers.config import ControllerConfig
from controlplane.controllers.runtime import SyncContext
from controlplane.deployment.deployment_controller import DeploymentController
from controlplane.kernel import Kernel


class FakeClientset:
    """`fake.Clientset{}`: every call is an action; an update answers the object it was sent
    (with a new resourceVersion). Event writes are left out of `actions` (FakeRecorder)."""

    def __init__(self, kernel: Kernel) -> None:
        self.calls: list[tuple[str, str, dict]] = []
        self.objects: dict[tuple[str, str, str], dict] = {}
        self.server = APIServer(kernel)  # what the (never started) informers are built on

    def actions(self) -> list[tuple[str, str, dict]]:
        return [c for c in self.calls if c[1] != "events"]

    def updates(self, resource: str = "replicasets") -> list[dict]:
        return [body for verb, res, body in self.actions() if verb == "update" and res == resource]

    def _answer(self, verb: str, resource: str, body: dict) -> dict:
        self.calls.append((verb, resource, copy.deepcopy(body)))
        answer = copy.deepcopy(body)
        answer.setdefault("metadata", {})["resourceVersion"] = str(100 + len(self.calls))
        return answer

    async def update(self, resource, namespace, name, body, subresource=None):
        return self._answer("update", resource, body)

    async def create(self, resource, namespace, body):
        return self._answer("create", resource, body)

    async def patch(self, resource, namespace, name, patch, *args, **kwargs):
        return self._answer("patch", resource, {"metadata": {"name": name}, "patch": patch})

    async def get(self, resource, namespace, name, *args, **kwargs):
        """`NewSimpleClientset(objects...)`: a GET answers a preloaded object (`objects`)."""
        self.calls.append(("get", resource, {"metadata": {"name": name}}))
        found = self.objects.get((resource, namespace, name))
        if found is None:
            raise not_found(resource, name)
        return copy.deepcopy(found)

    async def delete(self, resource, namespace, name, *args, **kwargs):
        return self._answer("delete", resource, {"metadata": {"name": name}})

    def deleted(self, resource: str = "replicasets") -> list[str]:
        return [body["metadata"]["name"] for verb, res, body in self.actions() if verb == "delete" and res == resource]


def rs(name, replicas, selector=None, available=0):
    """`rs(name, replicas, selector, noTimestamp)` (deployment_controller_test.go), with
    `Status.AvailableReplicas` set as each test sets it."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(selector or {})},
            "template": {},
        },
        "status": {"availableReplicas": available} if available else {},
    }


def new_deployment(name, replicas, max_surge, max_unavailable, selector=None):
    """`newDeployment(name, replicas, nil, &maxSurge, &maxUnavailable, selector)`."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "uid": "uid-dep", "annotations": {}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(selector or {})},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable},
            },
            "template": {"metadata": {"labels": dict(selector or {})}, "spec": {"containers": [{"name": "c"}]}},
        },
        "status": {},
    }


class Controller:
    """`&DeploymentController{client: &fake, eventRecorder: &record.FakeRecorder{}}`: our
    controller on a kernel of its own, nothing started; `call` runs one method to its end."""

    def __init__(self, config: ControllerConfig | None = None) -> None:
        self.kernel = Kernel(seed=1)
        self.fake = FakeClientset(self.kernel)
        self.dc = DeploymentController(self.kernel, self.fake, config)
        self.ctx = SyncContext("default/foo", None, 0.0)

    def call(self, method, *args):
        task = self.kernel.spawn(getattr(self.dc, method)(self.ctx, *args))
        self.kernel.run()
        return task.result()


@pytest.mark.parametrize(
    ("deployment_replicas", "max_surge", "old_replicas", "new_replicas", "scale_expected", "expected_new_replicas"),
    [
        pytest.param(10, 0, 10, 0, False, 0, id="should not scale up when old replica set is fully saturated"),
        pytest.param(
            10,
            2,
            10,
            0,
            True,
            2,
            id="should scale up according to the maxSurge when old replica set is fully saturated",
        ),
        pytest.param(10, 2, 5, 0, True, 7, id="should scale up according to the maxSurge"),
        pytest.param(10, 2, 10, 2, False, 0, id="should not scale when maxSurge is fully saturated"),
        pytest.param(10, 2, 2, 11, True, 10, id="should scale down when there are replicas above maxSurge"),
    ],
)
@pytest.mark.parametrize("terminating_replicas_gate", [True, False])  # withTwoFeatureGates
def test_deployment_controller_reconcile_new_replica_set(
    deployment_replicas,
    max_surge,
    old_replicas,
    new_replicas,
    scale_expected,
    expected_new_replicas,
    terminating_replicas_gate,
):
    # The rows of the released path (the newer table's rows that set a podReplacementPolicy
    # belong to the unreleased DeploymentPodReplacementPolicy, spec D9.3: not ported).
    new_rs = rs("foo-v2", new_replicas)
    old_rs = rs("foo-v1", old_replicas)
    all_rss = [new_rs, old_rs]
    deployment = new_deployment("foo", deployment_replicas, max_surge, 0, {"foo": "bar"})
    c = Controller(ControllerConfig(terminating_replicas=terminating_replicas_gate))
    scaled, err = c.call("reconcile_new_replica_set", all_rss, new_rs, deployment)
    assert err is None
    if not scale_expected:
        assert not scaled and c.fake.actions() == []
        return
    assert scaled
    assert len(c.fake.actions()) == 1, c.fake.actions()
    (updated,) = c.fake.updates()
    assert updated["spec"]["replicas"] == expected_new_replicas
    # What upstream's FakeRecorder would have received, and the replica annotations it writes.
    annotations = updated["metadata"]["annotations"]
    assert annotations["deployment.kubernetes.io/desired-replicas"] == str(deployment_replicas)
    assert annotations["deployment.kubernetes.io/max-replicas"] == str(deployment_replicas + max_surge)


@pytest.mark.parametrize(
    (
        "deployment_replicas",
        "max_unavailable",
        "old_replicas",
        "new_replicas",
        "ready_pods_from_old_rs",
        "ready_pods_from_new_rs",
        "scale_expected",
        "expected_old_replicas",
    ),
    [
        (10, 0, 10, 0, 10, 0, True, 9),
        (10, 2, 10, 0, 10, 0, True, 8),
        # expect unhealthy replicas from old replica sets been cleaned up
        (10, 2, 10, 0, 8, 0, True, 8),
        # expect 1 unhealthy replica from old replica sets been cleaned up, and 1 ready pod been scaled down
        (10, 2, 10, 0, 9, 0, True, 8),
        # the unavailable pods from the newRS would not make us scale down old RSs in a further step
        (10, 2, 8, 2, 8, 0, False, 8),
    ],
)
def test_deployment_controller_reconcile_old_replica_sets(
    deployment_replicas,
    max_unavailable,
    old_replicas,
    new_replicas,
    ready_pods_from_old_rs,
    ready_pods_from_new_rs,
    scale_expected,
    expected_old_replicas,
):
    new_selector, old_selector = {"foo": "new"}, {"foo": "old"}
    new_rs = rs("foo-new", new_replicas, new_selector, ready_pods_from_new_rs)
    old_rs = rs("foo-old", old_replicas, old_selector, ready_pods_from_old_rs)
    old_rss, all_rss = [old_rs], [old_rs, new_rs]
    deployment = new_deployment("foo", deployment_replicas, 0, max_unavailable, new_selector)
    c = Controller()
    scaled, err = c.call("reconcile_old_replica_sets", all_rss, old_rss, new_rs, deployment)
    assert err is None
    assert scaled == scale_expected
    # Upstream's table states the old RS's size after the call; its loop checks only `scaled`.
    # Here the last update of the old RS must reach it (none when nothing scaled).
    sizes = [u["spec"]["replicas"] for u in c.fake.updates() if u["metadata"]["name"] == "foo-old"]
    assert (sizes[-1] if sizes else old_replicas) == expected_old_replicas
    assert all(u["metadata"]["name"] == "foo-old" for u in c.fake.updates())  # the new RS is never touched


@pytest.mark.parametrize(
    ("old_replicas", "ready_pods", "unhealthy_pods", "max_cleanup_count", "cleanup_count_expected"),
    [(10, 8, 2, 1, 1), (10, 8, 2, 3, 2), (10, 8, 2, 0, 0), (10, 10, 0, 3, 0)],
)
def test_deployment_controller_cleanup_unhealthy_replicas(
    old_replicas, ready_pods, unhealthy_pods, max_cleanup_count, cleanup_count_expected
):
    assert old_replicas - ready_pods == unhealthy_pods  # the table's own consistency
    old_rs = rs("foo-v2", old_replicas, available=ready_pods)
    deployment = new_deployment("foo", 10, 2, 2)
    c = Controller()
    updated_rss, cleanup_count, err = c.call("cleanup_unhealthy_replicas", [old_rs], deployment, max_cleanup_count)
    assert err is None
    assert cleanup_count == cleanup_count_expected
    # One update per RS scaled, to its size less what was cleaned up; the returned list holds it.
    updates = c.fake.updates()
    if cleanup_count_expected == 0:
        assert updates == []
        assert updated_rss[0]["spec"]["replicas"] == old_replicas
    else:
        assert [u["spec"]["replicas"] for u in updates] == [old_replicas - cleanup_count_expected]
        assert updated_rss[0]["spec"]["replicas"] == old_replicas - cleanup_count_expected


@pytest.mark.parametrize(
    ("deployment_replicas", "max_unavailable", "ready_pods", "old_replicas", "scale_expected", "expected_old_replicas"),
    [
        (10, 0, 10, 10, True, 9),
        (10, 2, 10, 10, True, 8),
        (10, 2, 8, 10, False, 0),
        (10, 2, 10, 0, False, 0),
        (10, 2, 1, 10, False, 0),
    ],
)
def test_deployment_controller_scale_down_old_replica_sets_for_rolling_update(
    deployment_replicas, max_unavailable, ready_pods, old_replicas, scale_expected, expected_old_replicas
):
    old_rs = rs("foo-v2", old_replicas, available=ready_pods)
    all_rss, old_rss = [old_rs], [old_rs]
    deployment = new_deployment("foo", deployment_replicas, 0, max_unavailable, {"foo": "bar"})
    c = Controller()
    scaled, err = c.call("scale_down_old_replica_sets_for_rolling_update", all_rss, old_rss, deployment)
    assert err is None
    if not scale_expected:
        assert scaled == 0 and c.fake.updates() == []
        return
    assert scaled != 0
    (update_action,) = c.fake.updates()  # "expected only 1 update action"
    assert update_action["spec"]["replicas"] == expected_old_replicas

"""Ports of upstream's `pkg/controller/deployment/progress_test.go` (spec D12.6, D12.8):
`TestRequeueStuckDeployment` and `TestSyncRolloutStatus`, every row by its name, on our
`requeue_stuck_deployment` and `sync_rollout_status` with upstream's `currentDeployment` and
`newRSWithAvailable` fixtures. Upstream's dates (2017-02-15 18:49) are moved onto the simulation's
clock (it starts at 2026-01-01 and cannot run backwards): the same day and time in 2026, and the
kernel's clock stands for upstream's `nowFn`."""

from __future__ import annotations

import pytest

from controlplane.deployment import util
from controlplane.kernel import parse_rfc3339
from tests.controlplane.deployment.test_rolling_go import Controller
from tests.controlplane.deployment.test_sync_go import rs

TEST_TIME = "2026-02-15T18:49:00Z"  # upstream's 2017-02-15T18:49:00Z (testTime, the stuck condition's lastUpdateTime)
T0 = parse_rfc3339(TEST_TIME)
INT32_MAX = 2**31 - 1


def new_deployment_status(replicas, updated_replicas, available_replicas):
    """`newDeploymentStatus` (zero fields omitted, as our status is written)."""
    status = {"replicas": replicas, "updatedReplicas": updated_replicas, "availableReplicas": available_replicas}
    return {k: v for k, v in status.items() if v}


def current_deployment(pds, replicas, status_replicas, updated_replicas, available_replicas, conditions):
    """`currentDeployment(pds, replicas, statusReplicas, updatedReplicas, availableReplicas,
    conditions)`: a Recreate Deployment "progress-test" (in "default": our queue keys need one)."""
    spec = {"replicas": replicas, "strategy": {"type": "Recreate"}}
    if pds is not None:
        spec["progressDeadlineSeconds"] = pds
    status = new_deployment_status(status_replicas, updated_replicas, available_replicas)
    if conditions:
        status["conditions"] = [dict(c) for c in conditions]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "progress-test", "namespace": "default", "resourceVersion": "1"},
        "spec": spec,
        "status": status,
    }


def new_rs_with_available(name, spec_replicas, status_replicas, available_replicas):
    """`newRSWithAvailable(name, specReplicas, statusReplicas, availableReplicas)`."""
    each = rs(name, spec_replicas)
    each["status"] = new_deployment_status(status_replicas, 0, available_replicas)
    return each


FAILED = [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]
STUCK = [{"type": "Progressing", "status": "True", "lastUpdateTime": TEST_TIME}]


@pytest.mark.parametrize(
    ("d", "status", "now", "expected"),
    [
        pytest.param(current_deployment(None, 4, 3, 3, 2, None), new_deployment_status(3, 3, 2), None, None,
                     id="nil progressDeadlineSeconds specified"),
        pytest.param(current_deployment(INT32_MAX, 4, 3, 3, 2, None), new_deployment_status(3, 3, 2), None, None,
                     id="infinite progressDeadlineSeconds specified"),
        pytest.param(current_deployment(60, 4, 3, 3, 2, None), new_deployment_status(3, 3, 2), None, None,
                     id="no progressing condition found"),
        pytest.param(current_deployment(60, 3, 3, 3, 3, None), new_deployment_status(3, 3, 3), None, None,
                     id="complete deployment does not need to be requeued"),
        pytest.param(current_deployment(60, 3, 3, 3, 0, FAILED), new_deployment_status(3, 3, 0), None, None,
                     id="already failed deployment does not need to be requeued"),
        pytest.param(current_deployment(60, 3, 3, 3, 1, STUCK), new_deployment_status(3, 3, 1), T0 + 30, 30.0,
                     id="stuck deployment - 30s"),
        pytest.param(current_deployment(60, 3, 3, 3, 1, STUCK), new_deployment_status(3, 3, 1), T0 + 59, 1.0,
                     id="stuck deployment - 1s"),
        pytest.param(current_deployment(60, 3, 3, 3, 1, STUCK), new_deployment_status(3, 3, 1), T0 + 59.000000001, 0.0,
                     id="failed deployment - less than a second => now"),
        pytest.param(current_deployment(60, 3, 3, 3, 1, STUCK), new_deployment_status(3, 3, 1), T0 + 60, 0.0,
                     id="failed deployment - now"),
        pytest.param(current_deployment(60, 3, 3, 3, 1, STUCK), new_deployment_status(3, 3, 1), T0 + 61, 0.0,
                     id="failed deployment - 1s after deadline"),
        pytest.param(current_deployment(60, 3, 3, 3, 1, STUCK), new_deployment_status(3, 3, 1), T0 + 120, 0.0,
                     id="failed deployment - 60s after deadline"),
    ],
)  # fmt: skip
def test_requeue_stuck_deployment(d, status, now, expected):
    """`TestRequeueStuckDeployment`: the duration returned (upstream's -1 is our None); and, as
    upstream's queue would hold it, the Deployment queued after `expected` + 1 s, rate-limited at 0."""
    c = Controller()
    c.kernel.run_until(T0 if now is None else now)
    got = c.dc.requeue_stuck_deployment(d, status)
    if expected is None:
        assert got is None
        assert len(c.dc.queue) == 0
        return
    assert got == pytest.approx(expected, abs=1e-9)
    if expected > 0:
        assert len(c.dc.queue) == 0  # waiting in the delaying queue
        c.kernel.run_until(c.kernel.now + expected + 1.0 - 1e-6)
        assert len(c.dc.queue) == 0  # not a hair early (the 1 s pad)
    c.kernel.run_until(c.kernel.now + expected + 1.0)
    assert len(c.dc.queue) == 1


FAILED_TIMED_OUT = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
NEW_RS_AVAILABLE = {
    "type": "Progressing",
    "status": "True",
    "reason": "NewReplicaSetAvailable",
    "lastUpdateTime": TEST_TIME,
    "lastTransitionTime": TEST_TIME,
}
REPLICA_SET_UPDATED = {
    "type": "Progressing",
    "status": "True",
    "reason": "ReplicaSetUpdated",
    "lastUpdateTime": TEST_TIME,
    "lastTransitionTime": TEST_TIME,
}
KEEP = "kept"  # the row says the time must not change (upstream's lastUpdate/lastTransition: testTime)


@pytest.mark.parametrize(
    ("d", "all_rss", "new_rs", "condition_status", "condition_reason", "last_update", "last_transition"),
    [
        pytest.param(current_deployment(None, 3, 2, 2, 2, [REPLICA_SET_UPDATED]),
                     [new_rs_with_available("bar", 0, 1, 1)], new_rs_with_available("foo", 3, 2, 2),
                     None, None, None, None,
                     id="General: remove Progressing condition and do not estimate progress if deployment has no "
                        "Progress Deadline"),
        pytest.param(current_deployment(60, 3, 3, 3, 3, [NEW_RS_AVAILABLE]),
                     [new_rs_with_available("bar", 3, 3, 3)], None,
                     "True", "NewReplicaSetAvailable", KEEP, KEEP,
                     id="General: do not estimate progress of deployment with only one active ReplicaSet"),
        pytest.param(current_deployment(60, 3, 2, 2, 2, [REPLICA_SET_UPDATED]),
                     [new_rs_with_available("bar", 0, 1, 1)], new_rs_with_available("foo", 3, 2, 2),
                     "True", "ReplicaSetUpdated", None, KEEP,
                     id="DeploymentProgressing: dont update lastTransitionTime if deployment already has "
                        "Progressing=True"),
        pytest.param(current_deployment(60, 3, 2, 2, 2, [FAILED_TIMED_OUT]),
                     [new_rs_with_available("bar", 0, 1, 1)], new_rs_with_available("foo", 3, 2, 2),
                     "True", "ReplicaSetUpdated", None, None,
                     id="DeploymentProgressing: update everything if deployment has Progressing=False"),
        pytest.param(current_deployment(60, 3, 2, 2, 2, []),
                     [new_rs_with_available("bar", 0, 1, 1)], new_rs_with_available("foo", 3, 2, 2),
                     "True", "ReplicaSetUpdated", None, None,
                     id="DeploymentProgressing: create Progressing condition if it does not exist"),
        pytest.param(current_deployment(60, 3, 3, 3, 3, [REPLICA_SET_UPDATED]),
                     [], new_rs_with_available("foo", 3, 3, 3),
                     "True", "NewReplicaSetAvailable", None, KEEP,
                     id="DeploymentComplete: dont update lastTransitionTime if deployment already has "
                        "Progressing=True"),
        pytest.param(current_deployment(60, 3, 3, 3, 3, [FAILED_TIMED_OUT]),
                     [], new_rs_with_available("foo", 3, 3, 3),
                     "True", "NewReplicaSetAvailable", None, None,
                     id="DeploymentComplete: update everything if deployment has Progressing=False"),
        pytest.param(current_deployment(60, 3, 3, 3, 3, []),
                     [], new_rs_with_available("foo", 3, 3, 3),
                     "True", "NewReplicaSetAvailable", None, None,
                     id="DeploymentComplete: create Progressing condition if it does not exist"),
        pytest.param(current_deployment(60, 0, 3, 3, 3, [REPLICA_SET_UPDATED]),
                     [new_rs_with_available("foo", 0, 0, 0)], None,
                     "True", "NewReplicaSetAvailable", None, None,
                     id="DeploymentComplete: defend against NPE when newRS=nil"),
        pytest.param(current_deployment(60, 3, 2, 2, 2, [REPLICA_SET_UPDATED]),
                     [], new_rs_with_available("foo", 3, 2, 2),
                     "False", "ProgressDeadlineExceeded", None, None,
                     id="DeploymentTimedOut: update status if rollout exceeds Progress Deadline"),
        pytest.param(current_deployment(60, 3, 2, 2, 2, [FAILED_TIMED_OUT]),
                     [], new_rs_with_available("foo", 3, 2, 2),
                     "False", "ProgressDeadlineExceeded", KEEP, KEEP,
                     id="DeploymentTimedOut: do not update status if deployment has existing timedOut condition"),
    ],
)  # fmt: skip
def test_sync_rollout_status(d, all_rss, new_rs, condition_status, condition_reason, last_update, last_transition):
    """`TestSyncRolloutStatus`: the Progressing condition `syncRolloutStatus` leaves on `d`.
    Upstream's time checks compare the row's own value with testTime (they cannot fail); here a
    kept time must equal the one the Deployment had before the call. The clock stands an hour
    after testTime (upstream's now is the wall clock, years after it)."""
    before = util.get_deployment_condition(d["status"], "Progressing")
    c = Controller()
    c.kernel.run_until(T0 + 3600)
    all_rss = [*all_rss, new_rs] if new_rs is not None else all_rss
    assert c.call("sync_rollout_status", all_rss, new_rs, d) is None
    cond = util.get_deployment_condition(d["status"], "Progressing")
    if condition_status is None:
        assert cond is None  # no progress deadline: the condition is removed
        return
    assert cond is not None
    assert (cond["status"], cond["reason"]) == (condition_status, condition_reason)
    assert before is not None or (last_update is None and last_transition is None)
    if last_update == KEEP:
        assert cond.get("lastUpdateTime") == before.get("lastUpdateTime")
    if last_transition == KEEP:
        assert cond.get("lastTransitionTime") == before.get("lastTransitionTime")

"""Breakpoints of the Deployment controller: new ReplicaSet created, rollout complete, progress
deadline exceeded, a stage of its sync (controlplane/session/breakpoints.py)."""

from __future__ import annotations

import math

import pytest

from controlplane.session.breakpoints import BreakpointError, Breakpoints
from controlplane.session.session import Session
from controlplane.simulation import Simulation, load_file


def session(name: str) -> Session:
    s = Session("t", Simulation(load_file(name)), name=name, source=name)
    s.start()
    return s


def run_to_hit(s: Session, limit: int = 100_000) -> dict | None:
    s.command({"op": "run", "speed": "max"})
    for _ in range(limit):
        if not s.busy:
            hit = s.hit
            return hit if hit is not None and hit["breakpoint"] is not None else None
        s.advance(math.inf, lambda: False)
    raise AssertionError("the session never stopped")


def deployment(s: Session) -> dict:
    return s.sim.server.get("deployments", "default", "web")


def progressing(s: Session) -> dict:
    return next(c for c in deployment(s)["status"]["conditions"] if c["type"] == "Progressing")


def add(s: Session, spec: dict) -> None:
    assert s.command({"op": "breakpoint", "do": "add", "spec": spec})["ok"]


def test_new_replica_set_stops_once_the_create_was_answered():
    s = session("deployment-rolling-update")
    add(s, {"kind": "newReplicaSet", "key": "default/web"})
    hit = run_to_hit(s)
    assert hit is not None and hit["why"] == "Deployment default/web: a new ReplicaSet is created"
    # The first ReplicaSet, created at start-up (revision 1), exists in the API server already.
    rss = s.sim.server.list("replicasets", "default")["items"]
    assert [rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in rss] == ["1"]
    assert rss[0]["metadata"]["name"] in hit["detail"] and "(revision 1)" in hit["detail"]
    hit = run_to_hit(s)  # the rollout at t=30 creates the second
    assert hit is not None and hit["t"] >= 30 and "(revision 2)" in hit["detail"]
    assert len(s.sim.server.list("replicasets", "default")["items"]) == 2


def test_rollout_complete_stops_when_progressing_turns_new_replica_set_available():
    s = session("deployment-rolling-update")
    add(s, {"kind": "rolloutComplete"})
    hit = run_to_hit(s)
    assert hit is not None and hit["t"] < 30  # the first rollout (of revision 1) completes too
    assert progressing(s)["reason"] == "NewReplicaSetAvailable"
    hit = run_to_hit(s)
    assert hit is not None and hit["t"] > 30
    assert deployment(s)["status"]["updatedReplicas"] == 10
    assert progressing(s)["reason"] == "NewReplicaSetAvailable"


def test_progress_deadline_exceeded_stops_at_the_deadline():
    s = session("deployment-progress-deadline")
    add(s, {"kind": "progressDeadlineExceeded", "key": "default/web", "controller": "deployment"})
    hit = run_to_hit(s)
    assert hit is not None and 50 <= hit["t"] <= 52
    cond = progressing(s)
    assert (cond["status"], cond["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert "ProgressDeadlineExceeded" in hit["detail"]


def test_a_key_of_another_deployment_never_stops():
    s = session("deployment-progress-deadline")
    add(s, {"kind": "progressDeadlineExceeded", "key": "default/other"})
    add(s, {"kind": "rolloutComplete", "key": "default/other"})
    add(s, {"kind": "newReplicaSet", "key": "default/other"})
    assert run_to_hit(s) is None


def test_a_stage_of_the_deployment_sync_stops_there():
    s = session("deployment-rolling-update")
    add(s, {"kind": "stage", "stage": "reconcileOldReplicaSets", "controller": "deployment"})
    hit = run_to_hit(s)
    assert hit is not None
    assert hit["detail"].startswith("sync of default/web reached reconcileOldReplicaSets")


def test_pod_write_breakpoints_ignore_the_deployment_controllers_replica_set_writes():
    s = session("deployment-rolling-update")
    add(s, {"kind": "podWrite", "verb": "create", "n": 1})
    hit = run_to_hit(s)
    assert hit is not None and "create" in hit["detail"]
    assert s.sim.server.list("replicasets", "default")["items"]  # the RS exists: its pods are being created
    record = next(r for r in reversed(s.sim.recent) if r["kind"] == "sync.request")
    assert record["controller"] == "replicaset" and record["verb"] == "create"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"kind": "rolloutComplete", "controller": "replicaset"},
            "controller: rolloutComplete is a breakpoint of the deployment controller",
        ),
        ({"kind": "newReplicaSet", "key": 3}, "key: must be a string"),
        ({"kind": "stage", "stage": "nope"}, "stage: must be one of"),
    ],
)
def test_bad_specs_name_the_field(spec, message):
    with pytest.raises(BreakpointError) as err:
        Breakpoints().add(spec)
    assert str(err.value).startswith(message)


def test_the_deployment_stages_are_offered():
    from controlplane.simulation import CONTROLLER_STAGE_GROUPS

    names = {name for group in CONTROLLER_STAGE_GROUPS() for name, _ in group["stages"]}
    assert {"rolloutRolling", "reconcileOldReplicaSets", "syncRolloutStatus", "getNewReplicaSet"} <= names

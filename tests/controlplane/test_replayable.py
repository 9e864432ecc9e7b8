"""What a live session accepts replays (issue 26 §3): a restore, a re-open, a fork and
`report.json?at=` replay the session as its cut, a scenario file checked like any other against
the same run ceilings; `Simulation.act` refuses, unlogged, exactly the actions that would make
that file refused (`Simulation.check_replayable`), and takes every other."""

from __future__ import annotations

import json
import re

import pytest

from controlplane.limits import RunLimits
from controlplane.scenario import ScenarioError, load_file
from controlplane.simulation import Replay, Simulation, cut_scenario

from .factories import rs_manifest

LIMITS = RunLimits(pods=50, nodes=10)  # scale-up-and-down asks for 10 pods and runs 3 nodes


API_FAULT = {"apiFault": {"verb": "create", "resource": "pods", "code": 500, "count": 1}}
PATCH = {"kind": "ReplicaSet", "name": "web", "patch": {"spec": {"replicas": 51}}}
SCALE_BY_THE_API = {
    "request": {
        "verb": "patch",
        "resource": "replicasets",
        "subresource": "scale",
        "namespace": "default",
        "name": "web",
        "patchType": "merge",
        "body": {"spec": {"replicas": 1_000_000_000}},
    }
}

CASES = {
    "scale to a billion": ([], {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 1_000_000_000}}),
    "scale past the ceiling": ([], {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 51}}),
    "scale to the ceiling": ([], {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 50}}),
    # Each ReplicaSet counts at the largest replicas it was ever given, as in a file.
    "scaled back, another past": (
        [{"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 45}},
         {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 2}}],
        {"apply": rs_manifest("other", 6)},
    ),
    "a scale that fails live": ([], {"scale": {"kind": "ReplicaSet", "name": "nosuch", "replicas": 60}}),
    "apply past the ceiling": ([], {"apply": rs_manifest("big", 41)}),
    "patch past the ceiling": ([], {"patch": PATCH}),
    "nodes past the ceiling": ([], {"config": {"nodes": 11}}),
    "nodes to the ceiling": ([], {"config": {"nodes": 10}}),
    "lift a rule never injected": ([], {"liftFault": {"apiFault": 1}}),
    "lift a rule injected": ([API_FAULT], {"liftFault": {"apiFault": 1}}),
    "a node that never was": ([], {"nodeFault": {"name": "node-4", "fault": "down"}}),
    "a node configured since": ([{"config": {"nodes": 4}}], {"nodeFault": {"name": "node-4", "fault": "down"}}),
    "a controller that does not run": ([], {"sync": {"controller": "replicationcontroller"}}),
    "a billion through the Kubernetes API": ([], SCALE_BY_THE_API),  # a quota refuses the pods, as upstream
}


def _replays(sim: Simulation, entries: list[dict]) -> str | None:
    """None when the session cut now, with `entries` as its log, replays; else why not."""
    data = cut_scenario(sim.start_data(), entries, sim.timeline_pending, sim.now)
    try:
        Replay.from_export(data, limits=LIMITS, index=False).run_to_time(sim.now)
    except ScenarioError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_a_live_action_is_refused_exactly_when_the_replay_would_refuse_it(case):
    before, action = CASES[case]
    sim = Simulation(load_file("scale-up-and-down"), seed=5, limits=LIMITS)
    sim.run_until(1.0)
    for earlier in before:
        assert sim.act(earlier)["ok"] is True
    assert _replays(sim, sim.actions) is None
    log, now, store = json.dumps(sim.actions), sim.now, json.dumps(sim.snapshot(), sort_keys=True, default=str)
    replay_refuses = _replays(sim, [*sim.actions, {"time": sim.now, "action": action, "ok": True}])

    result = sim.act(action)

    if replay_refuses is None:
        assert len(sim.actions) == len(json.loads(log)) + 1  # taken (it may fail, as live, logged)
    else:
        assert result["ok"] is False
        assert json.dumps(sim.actions) == log and sim.now == now  # nothing logged, time unchanged
        assert json.dumps(sim.snapshot(), sort_keys=True, default=str) == store  # the world unchanged
        pods = re.search(r"up to \d+ pods at once", replay_refuses)
        if pods is not None:  # the file's total, where it first peaks; the same total here
            assert pods.group(0) in result["error"] and "(--max-pods)" in result["error"], result
        else:  # the same field and words: actions[17].liftFault.apiFault: … -> liftFault.apiFault: …
            assert result["error"] == replay_refuses.split(".", 1)[1], (result["error"], replay_refuses)
    assert _replays(sim, sim.actions) is None  # and whatever happened, the session replays


def test_the_billion_scale_is_refused_naming_the_ceiling():
    sim = Simulation(load_file("scale-up-and-down"), seed=5)
    sim.run_until(1.0)
    result = sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 1_000_000_000}})
    assert result == {
        "ok": False,
        "error": "scale.replicas: the session would then ask for up to 1000000000 pods at once, more than this run's "
        "ceiling of 100000 (--max-pods); a scenario file asking for as many is refused, so is this (each ReplicaSet "
        "and ReplicationController counts at the largest replicas it is ever given)",
    }
    assert sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 100_000}})["ok"] is True

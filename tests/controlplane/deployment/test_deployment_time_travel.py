"""Time travel, forks and compare for Deployments (issue 28 §3), through the same machinery the
ReplicaSet sessions use (tests/controlplane/test_replay.py, tests/dashboard/test_past.py,
test_fork.py, tests/controlplane/test_compare.py): a session running a rollout that stalls
(deployment-progress-deadline) goes back to the moment the progress deadline passed and shows
the Deployment as the live run had it then; a fork from that moment takes its own future; and
compare runs a Deployment scenario under two configurations."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from controlplane.compare import compare, default_pair
from controlplane.deployment import util
from controlplane.scenario import load_file
from controlplane.session.session import Session
from controlplane.simulation import Replay, SessionService, Simulation

NAME = "deployment-progress-deadline"
SCENARIOS = Path(__file__).resolve().parents[3] / "controlplane" / "scenarios"


def started(sim_id: str, sim: Simulation, name: str, source: str) -> Session:
    session = Session(sim_id, sim, name=name, source=source)
    session.start()
    return session


def rollout_state(sim: Simulation) -> dict:
    """The Deployment and its ReplicaSets as stored (what the rollout panel and kubectl read)."""
    d = next(d for d in sim.server.objects("deployments") if d["metadata"]["name"] == "web")
    sets = sorted(sim.server.objects("replicasets"), key=lambda rs: rs["metadata"]["name"])
    return json.loads(json.dumps({"deployment": d, "replicaSets": sets}))


def progressing(state: dict) -> dict:
    return next(c for c in state["deployment"]["status"]["conditions"] if c["type"] == "Progressing")


def a_stalled_session():
    """The shipped scenario in a session, run past its stall with a live action on the way (a
    label a user added at 45 s), the moment the deadline passed caught from the trace: the
    `syncRolloutStatus` stage that decided `timedOut`, and the world as it was right then."""
    service = SessionService(started)
    session = service.start("s", load_file(NAME), source=NAME)
    sim = session.sim
    caught: dict = {}

    def watch(record):
        if record["kind"] == "sync.stage" and record.get("progress") == "timedOut" and "seq" not in caught:
            caught.update(seq=record["seq"], time=record["time"], state=rollout_state(sim))

    sim.trace.subscribe(watch)
    sim.run_until(45)
    label = {"patch": {"kind": "Deployment", "name": "web", "patch": {"metadata": {"labels": {"team": "a"}}}}}
    assert service.command("s", {"op": "act", "action": label})["ok"]
    sim.run_until(60)
    stalled_at = sim.position()
    stalled = rollout_state(sim)
    sim.run_until(100)
    return service, session, caught, stalled_at, stalled


def test_the_past_shows_the_deployment_as_it_was_when_the_rollout_stalled():
    service, _, caught, stalled_at, stalled = a_stalled_session()
    assert 51 <= caught["time"] < 52  # lastUpdateTime 20 + 30 s + the 1 s pad
    assert (progressing(caught["state"])["status"], progressing(caught["state"])["reason"]) == (
        "False",
        "ProgressDeadlineExceeded",
    )
    recording = json.loads(json.dumps(service.past("s").recording()))  # as the replay worker gets it
    # Right after the event that wrote the stage record: the Deployment as it was then.
    replay = Replay.from_recording(recording)
    reached = replay.run_to_seq(caught["seq"], caught["time"])
    assert reached.seq >= caught["seq"]
    assert rollout_state(replay.sim) == caught["state"]
    # A moment of the stall, to the exact event: the same world, the live action included.
    replay = Replay.from_recording(recording)
    assert replay.run_to_events(stalled_at.events, stalled_at.time, exact=True) == stalled_at
    assert rollout_state(replay.sim) == stalled
    assert stalled["deployment"]["metadata"]["labels"] == {"team": "a"}


def test_a_fork_from_the_stall_replays_to_it_and_then_takes_its_own_future():
    service, session, _, _, stalled = a_stalled_session()
    t = 60.0
    origin = service.fork("s", t)
    # Its log by then: the file's template change at 20 s and the user's label at 45 s.
    assert origin.t == t and [e["time"] for e in origin.history] == [20, 45]
    fork = Replay.from_recording(copy.deepcopy(origin.recording), index=False)
    fork.run_to_time(t)
    assert fork.reproduces(origin.history) is None  # the one replay path gave the log back
    assert rollout_state(fork.sim) == stalled
    # The fork's own future: the legacy rollback to revision 1 (which the live session never got).
    fork.sim.act(
        {
            "patch": {
                "kind": "Deployment",
                "name": "web",
                "patch": {"metadata": {"annotations": {util.DEPRECATED_ROLLBACK_TO: "1"}}},
            }
        }
    )
    fork.sim.run_until(100)
    forked, live = rollout_state(fork.sim), rollout_state(session.sim)
    assert (progressing(forked)["status"], progressing(forked)["reason"]) == ("True", "NewReplicaSetAvailable")
    assert forked["deployment"]["status"]["availableReplicas"] == 4
    assert util.annotations_of(forked["deployment"])[util.REVISION_ANNOTATION] == "3"
    assert [rs["spec"]["replicas"] for rs in forked["replicaSets"]] != [
        rs["spec"]["replicas"] for rs in live["replicaSets"]
    ]
    # The original went on stalled, untouched by its fork.
    assert (progressing(live)["status"], progressing(live)["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert util.annotations_of(live["deployment"])[util.REVISION_ANNOTATION] == "2"


def test_compare_runs_a_deployment_scenario_with_an_image_fault_on_one_side():
    result = compare("deployment-rolling-update", {}, {"imageFaults": {"nginx:1.28": "ErrImagePull"}}, until=90)
    summary = result["summary"]
    divergences = summary["divergences"]
    assert divergences, summary
    # Equal until the new image's pods are pulled (created at 30 s, pulled ~2 s on): then B's
    # kubelets report ErrImagePull, and its new ReplicaSet's pods never become Ready.
    assert 30 <= divergences[0]["time"] < 35
    assert {d["kind"] for d in divergences} == {"calls", "events", "status", "pods"}
    events = {(row["reason"], row["component"]): (row["a"], row["b"]) for row in summary["events"]}
    assert events[("Failed", "kubelet")][0] == 0 and events[("Failed", "kubelet")][1] > 0
    # Both ReplicaSets of the Deployment have their status histories side by side: A's new one
    # ends with 10 available, B's never has one (its rollout stops at its budget: 8 old serve).
    owners = summary["status"]
    assert len(owners) == 2 and all(o.startswith("ReplicaSet/default/web-") for o in owners)
    old, new = sorted(owners, key=lambda o: owners[o]["a"][0]["time"])
    assert owners[new]["a"][-1]["availableReplicas"] == 10 and owners[old]["a"][-1]["replicas"] == 0
    assert max(e["availableReplicas"] or 0 for e in owners[new]["b"]) == 0
    assert owners[old]["b"][-1]["availableReplicas"] == 8


def test_a_deployment_files_own_compare_pair_is_the_default_and_names_the_sides(tmp_path):
    text = (SCENARIOS / "deployment-rolling-update.scenario.yaml").read_text()
    text = text.replace(
        "config:\n",
        "compare:\n"
        "  a: {label: pulls, config: {}}\n"
        "  b: {label: cannot pull, config: {imageFaults: {'nginx:1.28': ErrImagePull}}}\n"
        "config:\n",
        1,
    )
    path = tmp_path / "rollout.scenario.yaml"
    path.write_text(text)
    scenario = load_file(str(path))
    a, b = default_pair(scenario)
    assert (a, b) == ({}, {"imageFaults": {"nginx:1.28": "ErrImagePull"}})
    result = compare(scenario, a, b, until=60)
    assert result["labels"] == {"a": "pulls", "b": "cannot pull"}
    # The same two worlds as the shipped file run under the same two blocks given by hand.
    by_hand = compare("deployment-rolling-update", a, b, until=60)
    assert result["summary"] == by_hand["summary"] and result["summary"]["divergences"]

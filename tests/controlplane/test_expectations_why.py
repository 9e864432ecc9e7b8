"""Why a sync may create or delete (issue #19 §4): the `expectations` stage of a sync says which
of upstream's `SatisfiedExpectations` cases answered -- fulfilled, expired, no record, waiting --
in both controllers (the v1.36 ReplicaSet/RC controller and the v1.5 ReplicationManager)."""

from __future__ import annotations

import pytest

from controlplane.expectations import EXPECTATIONS_TIMEOUT, ControllerExpectations, UIDTrackingControllerExpectations
from controlplane.scenario import load_file, load_scenario, read_text, resolve
from controlplane.simulation import Simulation


class Clock:
    now = 0.0


@pytest.mark.parametrize("store", [ControllerExpectations, UIDTrackingControllerExpectations])
def test_satisfied_reason_names_each_case_and_changes_nothing(store):
    clock = Clock()
    e = store(clock)
    assert e.satisfied_reason("default/web") == "noRecord"
    e.set_expectations("default/web", 1, 0)
    assert e.satisfied_reason("default/web") == "waiting"
    clock.now = EXPECTATIONS_TIMEOUT  # at the timeout exactly: still waiting (upstream is strict)
    assert e.satisfied_reason("default/web") == "waiting"
    clock.now = EXPECTATIONS_TIMEOUT + 0.001
    assert e.satisfied_reason("default/web") == "expired"
    assert e.satisfied_expectations("default/web")
    e.creation_observed("default/web")
    assert e.satisfied_reason("default/web") == "fulfilled"
    e.enabled = False
    assert e.satisfied_reason("default/web") == "disabled"


def stages_why(sim: Simulation, until: float) -> list[tuple[str, float, str, bool]]:
    seen: list[tuple[str, float, str, bool]] = []
    sim.subscribe(
        lambda r: seen.append((r["controller"], r["time"], r["why"], r["satisfied"]))
        if r["kind"] == "sync.stage" and r["stage"] == "expectations"
        else None
    )
    sim.start()
    sim.run_until(until)
    return seen


def test_the_replicaset_sync_after_the_leak_says_its_expectations_expired():
    seen = stages_why(Simulation(load_file("lesson-leaked-expectations")), 362)
    whys = {why for _, _, why, _ in seen}
    assert {"noRecord", "fulfilled", "waiting", "expired"} <= whys
    # The resync at t=360 is the sync that goes ahead because the leaked record expired.
    assert [(t, ok) for _, t, why, ok in seen if why == "expired"] == [(360.0, True)]
    assert all(not ok for _, _, why, ok in seen if why == "waiting")


# The v1.5 ReplicationManager's informers resync later (its own resync period): its stall ends at t=600.
@pytest.mark.parametrize(("version", "until"), [("v1.36", 362), ("v1.5", 601)])
def test_the_replication_controller_says_so_too(version, until):
    text = read_text(resolve("lesson-leaked-expectations"))
    text = text.replace("kind: ReplicaSet", "kind: ReplicationController")
    text = text.replace("apiVersion: apps/v1", "apiVersion: v1")
    text = text.replace("selector: {matchLabels: {app: web}}", "selector: {app: web}")
    text = text.replace("config:\n", f"config:\n  controllerVersion: {{replicationcontroller: {version}}}\n", 1)
    text = text.split("\nexpect:")[0] + "\n"
    seen = stages_why(Simulation(load_scenario(text)), until)
    assert {c for c, _, _, _ in seen} == {"replicationcontroller"}
    assert [ok for _, _, why, ok in seen if why == "expired"] == [True]
    assert "waiting" in {why for _, _, why, _ in seen}

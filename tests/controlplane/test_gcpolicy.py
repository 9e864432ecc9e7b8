"""The GC policy of running simulations (controlplane.gcpolicy)."""

import gc
import json

from controlplane.gcpolicy import SIMULATION_THRESHOLDS, simulation_gc
from controlplane.simulation import Simulation


def test_a_hold_raises_the_thresholds_and_freezes_then_restores_both():
    before = gc.get_threshold()
    with simulation_gc():
        assert gc.get_threshold() == SIMULATION_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_overlapping_holds_keep_the_thresholds_until_the_last_is_released():
    before = gc.get_threshold()
    first = simulation_gc()
    second = simulation_gc()
    first.release()
    first.release()  # a second release does nothing
    assert gc.get_threshold() == SIMULATION_THRESHOLDS
    assert gc.get_freeze_count() == 0  # any release unfreezes: a dropped simulation is collectable
    second.release()
    assert gc.get_threshold() == before


def test_the_policy_changes_no_report():
    def report(held: bool) -> str:
        sim = Simulation.from_file("demo")
        sim.start()
        if held:
            with simulation_gc():
                sim.run_until(90)
        else:
            sim.run_until(90)
        return json.dumps(sim.report(), sort_keys=True)

    assert report(True) == report(False)

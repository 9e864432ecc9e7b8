"""The two faithful upstream stalls the fault swarm met (issue 9 §1.2), shipped as lessons:
each stalls exactly as its description says, a resync ends it, and without a resync the liveness
oracle says "faithful stall" instead of failing."""

import copy

import pytest

from controlplane.oracles import LIVENESS
from controlplane.podutil import is_pod_active
from controlplane.scenario import load_file, resolve
from controlplane.simulation import Simulation
from controlplane.swarm import lift_time_of, run_scenario_checked

LESSONS = {
    # name: (a time inside the stall, pods then, a time after the resync, pods then)
    "lesson-404-delete-taken-as-gone": (119, 3, 121, 1),
    "lesson-leaked-expectations": (359, 0, 361, 2),
}


def active_pods(sim):
    return sum(1 for p in sim.server.objects("pods") if is_pod_active(p))


@pytest.mark.parametrize("name", LESSONS)
def test_the_lesson_stalls_until_the_resync_ends_it(name):
    stalled_at, stalled, healed_at, healed = LESSONS[name]
    sim = Simulation(load_file(name))
    sim.start()
    sim.run_until(stalled_at)
    assert active_pods(sim) == stalled
    sim.run_until(healed_at)
    assert active_pods(sim) == healed == sim.server.peek("replicasets", "default", "web")["spec"]["replicas"]


def lesson_data(name, resync):
    import yaml

    data = yaml.safe_load(resolve(name).read_text())
    data = copy.deepcopy(data)
    data["config"]["resyncPeriod"] = resync
    return data


@pytest.mark.parametrize("name", LESSONS)
def test_with_a_resync_the_oracles_find_nothing(name):
    data = lesson_data(name, 120)
    result = run_scenario_checked(data, lift_time=lift_time_of(data), quiet=600)
    assert result.violations == []
    assert set(LIVENESS) <= set(result.checked)


@pytest.mark.parametrize("name", LESSONS)
def test_without_a_resync_liveness_names_the_faithful_stall(name):
    data = lesson_data(name, 0)
    result = run_scenario_checked(data, lift_time=lift_time_of(data), quiet=600)
    assert result.violations == []
    assert "faithful stall" in result.voided["esr-replicas"]

"""The oracles (controlplane/oracles.py) hold on the real controllers and fail on broken ones:
an oracle that cannot fail is not an oracle (issue 9 §1.6). Each broken controller is a
subclass that gets one upstream rule wrong, swapped in before the simulation starts."""

import itertools

import pytest

from controlplane.oracles import (
    LIVENESS,
    OracleReport,
    SafetyMonitor,
    TraceDigest,
    check_liveness,
    compare_digests,
)
from controlplane.replicaset import ReplicaSetController
from controlplane.scenario import parse_scenario
from controlplane.simulation import Simulation
from tests.controlplane.factories import bare_pod, rs_manifest


def scenario(*actions, replicas=3, config=None, objects=None, until=60):
    return {
        "name": "oracle test",
        "config": {"nodes": 2, "resyncPeriod": 30, **(config or {})},
        "objects": objects if objects is not None else [rs_manifest("web", replicas)],
        "actions": list(actions),
        "until": until,
    }


def watched(data, controller_cls=ReplicaSetController):
    """A Simulation of `data` whose ReplicaSet controller is `controller_cls`, with a safety
    monitor and a report."""
    sim = Simulation(parse_scenario(data))
    real = sim.controllers["replicaset"]
    if controller_cls is not ReplicaSetController:
        sim.controllers["replicaset"] = controller_cls(sim.kernel, real.client, real.kind, real.config, trace=sim.trace)
    report = OracleReport()
    monitor = SafetyMonitor(sim, report)
    return sim, report, monitor


def run(data, controller_cls=ReplicaSetController, liveness_at=None):
    sim, report, monitor = watched(data, controller_cls)
    sim.start()
    sim.run_until(data["until"])
    monitor.flush()
    if liveness_at is not None:
        check_liveness(sim, report)
    return report


def oracles_violated(report):
    return {v.oracle for v in report.violations}


STALE_CACHE = (
    {"at": 10, "watchFault": {"resource": "pods", "fault": "pause"}},
    {"at": 11, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 6}},
    {"at": 20, "watchFault": {"resource": "pods", "fault": "resume"}},
)
NO_CONSISTENCY = {"featureGates": {"StaleControllerConsistencyReplicaSet": False}}


# -- the real controllers keep every promise -----------------------------------------------------


def test_the_real_controller_keeps_every_safety_promise_through_a_stale_cache():
    report = run(scenario(*STALE_CACHE, config=NO_CONSISTENCY))
    assert report.violations == []
    assert {"expectations-gate", "burst", "slow-start", "status-from-listing", "resource-versions"} <= report.checked


def test_the_real_controller_converges_and_passes_liveness():
    report = run(scenario({"at": 5, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}}), liveness_at=60)
    assert report.violations == []
    assert set(LIVENESS) <= report.checked


# -- expectations-gate ---------------------------------------------------------------------------


class IgnoresExpectations(ReplicaSetController):
    """Syncs as if expectations were always satisfied (while the user left them on)."""

    def _build(self):
        super()._build()
        self.expectations.satisfied_expectations = lambda key: True


def test_expectations_gate_catches_a_controller_that_ignores_expectations():
    report = run(scenario(*STALE_CACHE, config=NO_CONSISTENCY), IgnoresExpectations)
    assert "expectations-gate" in oracles_violated(report)


def test_expectations_off_voids_the_gate_instead_of_failing():
    config = {**NO_CONSISTENCY, "whatIf": {"expectations": False}}
    report = run(scenario(*STALE_CACHE, config=config))
    assert "expectations-gate" not in oracles_violated(report)
    assert "whatIf.expectations=false" in report.voided["expectations-gate"]


# -- burst ---------------------------------------------------------------------------------------


class IgnoresBurst(ReplicaSetController):
    """Creates everything at once whatever burstReplicas says."""

    def _build(self):
        super()._build()
        self.config.burst_replicas = 10**6


def test_burst_catches_a_controller_that_creates_beyond_burst_replicas():
    report = run(scenario(replicas=8, config={"burstReplicas": 3}), IgnoresBurst)
    assert "burst" in oracles_violated(report)


def test_burst_holds_for_the_real_controller_with_a_small_burst():
    report = run(scenario(replicas=8, config={"burstReplicas": 3}))
    assert "burst" not in oracles_violated(report)
    assert "burst" in report.checked


# -- slow-start ----------------------------------------------------------------------------------


class NoSlowStart(ReplicaSetController):
    """One batch for everything, while the user left slow start on."""

    async def slow_start_batch(self, count, initial, fn, ctx=None):
        return await super().slow_start_batch(count, count, fn, ctx)


class KeepsGoingAfterFailure(ReplicaSetController):
    """Doubles the batch even after one failed."""

    async def slow_start_batch(self, count, initial, fn, ctx=None):
        remaining, successes, batch, first_error = count, 0, min(count, initial), None
        while batch > 0:
            results = await self._gather([fn() for _ in range(batch)], "create")
            errors = [e for e in results if e is not None]
            first_error = first_error or (errors[0] if errors else None)
            successes += batch - len(errors)
            self._stage(ctx, "batch", size=batch, succeeded=batch - len(errors), failed=len(errors), error=None)
            remaining -= batch
            batch = min(2 * batch, remaining)
        return successes, first_error


QUOTA = {"at": 0, "apiFault": {"verb": "create", "resource": "pods", "after": 3, "count": 100, "code": 403}}


def test_slow_start_catches_one_big_batch():
    report = run(scenario(replicas=10), NoSlowStart)
    assert "slow-start" in oracles_violated(report)


def test_slow_start_catches_a_batch_after_a_failed_one():
    report = run(scenario(QUOTA, replicas=10, until=5), KeepsGoingAfterFailure)
    assert "slow-start" in oracles_violated(report)


def test_slow_start_holds_for_the_real_controller_under_quota():
    report = run(scenario(QUOTA, replicas=10, until=5))
    assert report.violations == []
    assert "slow-start" in report.checked


def test_slow_start_off_voids_the_oracle():
    report = run(scenario(replicas=10, config={"whatIf": {"slowStart": False}}))
    assert "slow-start" in report.voided
    assert "slow-start" not in oracles_violated(report)


# -- status-from-listing -------------------------------------------------------------------------


class CountsItsOwnCreates(ReplicaSetController):
    """Writes a status that counts a pod twice (as if counting after its own writes)."""

    async def manage_replicas(self, filtered_pods, rs, ctx):
        err = await super().manage_replicas(filtered_pods, rs, ctx)
        if filtered_pods:
            filtered_pods.append(filtered_pods[0])
        return err


def test_status_from_listing_catches_a_status_not_computed_from_the_listed_pods():
    report = run(
        scenario({"at": 10, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 4}}), CountsItsOwnCreates
    )
    assert "status-from-listing" in oracles_violated(report)


# -- announced-writes and one-sync-per-key -------------------------------------------------------


class SneakyCreate(ReplicaSetController):
    """Creates one extra pod per create decision without a sync.request record."""

    async def manage_replicas(self, filtered_pods, rs, ctx):
        err = await super().manage_replicas(filtered_pods, rs, ctx)
        if len(filtered_pods) < rs["spec"]["replicas"]:
            ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"]}
            ref |= {"uid": rs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
            await self.pod_control.create_pods("default", rs["spec"]["template"], rs, ref)
        return err


def test_announced_writes_catches_a_pod_create_no_sync_announced():
    report = run(scenario(), SneakyCreate)
    assert "announced-writes" in oracles_violated(report)


class NotStingy(ReplicaSetController):
    """Also syncs a key from its event handler, beside the worker that may be syncing it."""

    def update_rs(self, old, cur):
        super().update_rs(old, cur)
        self.kernel.spawn(self.sync_handler(f"{cur['metadata']['namespace']}/{cur['metadata']['name']}", 99))


def test_one_sync_per_key_catches_two_syncs_of_one_key_at_once():
    report = run(scenario({"at": 5, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 6}}), NotStingy)
    assert "one-sync-per-key" in oracles_violated(report)


# -- resource-versions and single-controller: the store itself ------------------------------------


def test_resource_versions_catches_an_object_mutated_after_it_was_committed():
    sim, report, monitor = watched(scenario())
    sim.start()
    sim.run_until(10)
    monitor.flush()
    pod = next(iter(sim.server.objects("pods")))
    pod["metadata"]["resourceVersion"] = "1"  # a broken writer scribbles on a stored object
    monitor.flush()
    assert "resource-versions" in oracles_violated(report)


def test_single_controller_catches_a_pod_with_two_controller_owners():
    sim, report, monitor = watched(scenario(replicas=0))
    sim.start()
    sim.run_until(1)
    from controlplane.apiserver.resources import lookup

    pod = bare_pod("two-owners")
    owners = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": n, "uid": f"uid-{n}", "controller": True} for n in "ab"
    ]
    pod["metadata"] |= {"uid": "uid-pod", "ownerReferences": owners}
    # Validation refuses this through the API; a broken store could still commit it.
    sim.server._commit(lookup("pods"), "ADDED", pod, None)
    monitor.flush()
    assert "single-controller" in oracles_violated(report)


def test_the_api_server_refuses_a_second_controller_owner():
    sim, report, monitor = watched(scenario(replicas=0))
    sim.start()
    pod = bare_pod("two-owners")
    owners = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": n, "uid": f"uid-{n}", "controller": True} for n in "ab"
    ]
    pod["metadata"]["ownerReferences"] = owners
    result = sim.act({"apply": pod})
    assert result["ok"] is False and result["code"] == 422
    monitor.flush()
    assert report.violations == []


# -- liveness ------------------------------------------------------------------------------------


class NeverAdopts(ReplicaSetController):
    async def claim_pods(self, rs, selector, pods, ctx=None):
        own = [p for p in pods if (p["metadata"].get("ownerReferences") or [{}])[0].get("uid") == rs["metadata"]["uid"]]
        return own, None


class NeverDeletes(ReplicaSetController):
    async def manage_replicas(self, filtered_pods, rs, ctx):
        if len(filtered_pods) > rs["spec"]["replicas"]:
            return None
        return await super().manage_replicas(filtered_pods, rs, ctx)


class LeaksExpectations(ReplicaSetController):
    """Expects one creation more than it makes."""

    def _build(self):
        super()._build()
        expect = self.expectations.expect_creations
        self.expectations.expect_creations = lambda key, n: expect(key, n + 1)


def test_liveness_catches_a_controller_that_never_adopts_orphans():
    data = scenario(objects=[bare_pod("stray"), rs_manifest("web", 2)])
    report = run(data, NeverAdopts, liveness_at=60)
    assert "esr-ownership" in oracles_violated(report)


def test_liveness_catches_a_controller_that_never_scales_down():
    report = run(scenario({"at": 10, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 1}}), NeverDeletes, 60)
    assert "esr-replicas" in oracles_violated(report)


def test_liveness_catches_leaked_expectations():
    report = run(
        scenario({"at": 10, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}}), LeaksExpectations, 60
    )
    assert "esr-quiescent" in oracles_violated(report)


def test_liveness_catches_a_status_that_lies():
    sim, report, _monitor = watched(scenario())
    sim.start()
    sim.run_until(60)
    sim.server.patch(
        "replicasets", "default", "web", {"status": {"readyReplicas": 1, "availableReplicas": 1}}, subresource="status"
    )
    check_liveness(sim, report)
    assert "esr-status" in oracles_violated(report)


def test_manual_workers_void_liveness():
    sim, report, _monitor = watched(scenario(config={"manualWorkers": ["replicaset"]}))
    sim.start()
    sim.run_until(60)
    check_liveness(sim, report)
    assert report.violations == []
    assert "manualWorkers" in report.voided["esr-replicas"]


@pytest.mark.parametrize(
    "fault",
    [
        {"apiFault": {"verb": "delete", "resource": "pods", "code": 404, "count": 5}},
        {"watchFault": {"resource": "pods", "fault": "pause"}},
    ],
)
def test_without_resync_a_failure_a_faithful_stall_explains_voids_liveness(fault):
    data = scenario({"at": 10, **fault}, config={"resyncPeriod": 0})
    data["actions"].append({"at": 11, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 1}})
    report = run(data, NeverDeletes, liveness_at=60)
    assert not oracles_violated(report) & set(LIVENESS)
    assert "faithful stall" in report.voided["esr-replicas"]


# -- determinism ---------------------------------------------------------------------------------


def digest_of(data, controller_cls=ReplicaSetController):
    sim, _, _ = watched(data, controller_cls)
    digest = TraceDigest(sim)
    sim.start()
    sim.run_until(data["until"])
    return digest.hexdigest()


_syncs_ever = itertools.count()


class RemembersPreviousRuns(ReplicaSetController):
    """Keeps state across simulations (a module-level counter): the second run differs."""

    async def sync_replica_set(self, key, worker=None):
        if next(_syncs_ever) % 7 == 3:
            self.queue.add_after(key, 1.0)
        return await super().sync_replica_set(key, worker)


def test_determinism_holds_for_the_real_controller():
    data = scenario(*STALE_CACHE)
    assert compare_digests(digest_of(data), digest_of(data)) is None


def test_determinism_catches_state_shared_between_runs():
    data = scenario({"at": 5, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 6}})
    first, second = digest_of(data, RemembersPreviousRuns), digest_of(data, RemembersPreviousRuns)
    assert compare_digests(first, second) is not None


# -- as expect: checks ---------------------------------------------------------------------------


def checked_run(data, controller_cls=ReplicaSetController):
    from controlplane.checks import Checker, parse_checks

    scenario_ = parse_scenario(data)
    sim = Simulation(scenario_)
    real = sim.controllers["replicaset"]
    if controller_cls is not ReplicaSetController:
        sim.controllers["replicaset"] = controller_cls(sim.kernel, real.client, real.kind, real.config, trace=sim.trace)
    checker = Checker(sim, parse_checks(scenario_.expect))
    checker.start()
    sim.run_until(scenario_.until)
    return checker.finish()


def test_safety_and_esr_are_expect_checks_by_name():
    data = scenario(*STALE_CACHE, config=NO_CONSISTENCY)
    data["expect"] = [{"oracle": "safety"}, {"at": 60, "oracle": "esr"}]
    assert [r.ok for r in checked_run(data)] == [True, True]


def test_the_safety_check_fails_on_a_broken_controller():
    data = scenario(*STALE_CACHE, config=NO_CONSISTENCY)
    data["expect"] = [{"oracle": "safety"}]
    (result,) = checked_run(data, IgnoresExpectations)
    assert not result.ok
    assert "expectations-gate" in str(result.to_json())

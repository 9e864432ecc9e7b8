"""`config.controllerVersion`, `config.enableGarbageCollector` and `config.lookupCacheSize`
(docs/versions.md): the v1.5 ReplicationManager through the Simulation facade, the CLI and the `config` action."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap

import pytest
import yaml

from controlplane.replication import ReplicationManager
from controlplane.scenario import ScenarioError, load_scenario
from controlplane.session.breakpoints import Breakpoints
from controlplane.simulation import SYNC_STAGES, Simulation

RC = """
  - apiVersion: v1
    kind: ReplicationController
    metadata: {name: web, namespace: default}
    spec:
      replicas: REPLICAS
      selector: {app: web}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: app, image: nginx}]}
"""


def scenario(config="", replicas=2, actions="", until=20, extra_objects=""):
    text = f"name: t\nseed: 3\nconfig: {{{config}}}\nobjects:{RC.replace('REPLICAS', str(replicas))}{extra_objects}"
    if actions:
        text += f"actions:\n{textwrap.indent(textwrap.dedent(actions), '  ')}"
    return load_scenario(text + f"until: {until}\n")


def run(config="", **kwargs):
    sim = Simulation(scenario(config, **kwargs))
    sim.run_until(sim.scenario.until)
    return sim


def creates(sim):
    return [c for c in sim.report()["apiCalls"] if c["verb"] == "create" and c["resource"] == "pods"]


V15 = "controllerVersion: {replicationcontroller: v1.5}"


# -- the switch ---------------------------------------------------------------------------------


def test_the_default_is_v1_36_and_naming_it_changes_nothing():
    implicit = run()
    explicit = run("controllerVersion: {replicationcontroller: v1.36}, enableGarbageCollector: true")
    assert implicit.controller_version("replicationcontroller") == "v1.36"
    assert not isinstance(implicit.controllers["replicationcontroller"], ReplicationManager)
    assert json.dumps(implicit.report()) == json.dumps(explicit.report())


def test_v1_5_runs_the_replication_manager_under_the_same_report_names():
    sim = run(V15)
    assert isinstance(sim.controllers["replicationcontroller"], ReplicationManager)
    assert sim.controller_version("replicationcontroller") == "v1.5"
    report = sim.report()
    assert set(report["queues"]) == {"replicaset", "replicationcontroller"}
    assert report["expectations"]["replicationcontroller"] == {"default/web": {"add": 0, "del": 0}}
    assert {s["controller"] for s in report["syncs"]} == {"replicationcontroller"}
    assert len([p for p in report["objects"]["Pod"] if not p["metadata"].get("deletionTimestamp")]) == 2
    events = report["objects"]["Event"]
    # The controller's Events carry its report name; the node components record their own.
    assert {e["source"]["component"] for e in events} == {"replication-controller", "default-scheduler", "kubelet"}
    assert {c["client"] for c in creates(sim)} == {"replication-controller"}
    snap = sim.snapshot()["controllers"]["replicationcontroller"]
    assert snap["version"] == "v1.5"
    assert snap["queue"]["name"] == "replicationmanager"
    assert snap["lookupCache"]["capacity"] == 4096
    assert snap["lookupCache"]["entries"] == [{"namespace": "default", "labels": {"app": "web"}, "rc": "web"}]
    assert sim.snapshot()["controllers"]["replicaset"]["version"] == "v1.36"


def test_a_v1_5_run_is_deterministic():
    first = run(V15, actions="- {at: 5, scale: {kind: ReplicationController, name: web, replicas: 5}}\n")
    second = run(V15, actions="- {at: 5, scale: {kind: ReplicationController, name: web, replicas: 5}}\n")
    assert first.report_json() == second.report_json()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            "controllerVersion: {replicationcontroller: v1.4}",
            "config.controllerVersion.replicationcontroller: must be one of v1.36, v1.5, v1.5-late (got 'v1.4')",
        ),
        (
            "controllerVersion: {replicaset: v1.5}",
            "config.controllerVersion.replicaset: only v1.36 is implemented for this controller (got 'v1.5')",
        ),
        (
            "controllerVersion: {statefulset: v1.5}",
            "config.controllerVersion.statefulset: unknown controller "
            "(one of replicaset, replicationcontroller, deployment)",
        ),
        (
            "controllerVersion: {deployment: v1.5}",
            "config.controllerVersion.deployment: only v1.36 is implemented for this controller (got 'v1.5')",
        ),
        (
            "lookupCacheSize: 100",
            "config.lookupCacheSize: only the v1.5 ReplicationManager has a lookup cache "
            "(config.controllerVersion.replicationcontroller is v1.36)",
        ),
        (
            "controllerVersion: {replicationcontroller: v1.5}, lookupCacheSize: 0",
            "config.lookupCacheSize: must be >= 1",
        ),
        (
            "controllerVersion: {replicationcontroller: v1.5}, lookupCacheSize: 2000000",
            "config.lookupCacheSize: must be <= 1048576",
        ),
        ("enableGarbageCollector: 1", "config.enableGarbageCollector: must be true or false, not number"),
    ],
)
def test_bad_version_config_is_one_line_naming_the_field(config, message):
    with pytest.raises(ScenarioError) as info:
        scenario(config)
    assert str(info.value) == message


def test_the_cli_exits_2_for_an_unknown_version(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("config:\n  controllerVersion: {replicationcontroller: v1.4}\n")
    result = subprocess.run(
        [sys.executable, "-m", "controlplane", "run", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "config.controllerVersion.replicationcontroller: must be one of v1.36, v1.5, v1.5-late (got 'v1.4')\n"
    )


def test_lookup_cache_size_reaches_the_manager():
    sim = Simulation(scenario(f"{V15}, lookupCacheSize: 7"))
    assert sim.controllers["replicationcontroller"].lookup_cache.capacity == 7


# -- the lessons' first sanity checks (spec §14.2) -----------------------------------------------

QUOTA = (
    "- {at: 0, apiFault: {verb: create, resource: pods, after: 5, count: 100000, code: 403, reason: Forbidden, "
    "message: exceeded quota}}\n"
)


def test_quota_wall_v1_5_fires_the_whole_burst_v1_36_seven_creates():
    old = run(V15, replicas=500, actions=QUOTA, until=30)
    new = run(replicas=500, actions=QUOTA, until=30)
    first_old, first_new = old.report()["syncs"][0], new.report()["syncs"][0]
    assert first_old["batches"] == [{"size": 500, "succeeded": 5, "failed": 495}]
    assert [b["size"] for b in first_new["batches"]] == [1, 2, 4]
    assert len([c for c in creates(new) if c["time"] <= first_new["end"]]) == 7
    assert len([c for c in creates(old) if c["time"] <= first_old["end"]]) == 500


def test_pod_metadata_v1_5_has_created_by_and_no_block_owner_deletion():
    (old,) = run(V15, replicas=1).report()["objects"]["Pod"]
    (new,) = run(replicas=1).report()["objects"]["Pod"]
    assert "kubernetes.io/created-by" in old["metadata"]["annotations"]
    assert "blockOwnerDeletion" not in old["metadata"]["ownerReferences"][0]
    assert "annotations" not in new["metadata"]
    assert new["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True


def test_gc_off_v1_5_creates_pods_without_owners_and_nothing_cascades():
    sim = run(
        f"{V15}, enableGarbageCollector: false",
        actions="- {at: 10, delete: {kind: ReplicationController, name: web}}\n",
    )
    pods = sim.report()["objects"]["Pod"]
    assert len(pods) == 2
    assert all("ownerReferences" not in p["metadata"] for p in pods)
    assert all(not p["metadata"].get("deletionTimestamp") for p in pods)


def test_gc_off_v1_36_only_stops_the_garbage_collector():
    sim = run(
        "enableGarbageCollector: false",
        actions="- {at: 10, delete: {kind: ReplicationController, name: web}}\n",
    )
    pods = sim.report()["objects"]["Pod"]
    assert len(pods) == 2
    assert all(p["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] for p in pods)  # ControllerRef kept
    assert not [c for c in sim.report()["apiCalls"] if c["client"] == "garbage-collector"]


def test_overlapping_rcs_route_the_younger_rcs_pod_events_to_the_older():
    younger = RC.replace("name: web", "name: web-b").replace("replicas: REPLICAS", "replicas: 3")
    sim = Simulation(scenario(V15, extra_objects=younger))
    sim.run_until(5)
    manager = sim.controllers["replicationcontroller"]
    # Same creation second: "web" sorts first by name and hears every event; web-b never does.
    record, _ = manager.expectations.get_expectations("default/web-b")
    assert record is not None and not record.fulfilled()
    assert record.get_expectations() == (3, 0)


def test_every_rc_resyncs_every_ten_minutes_in_an_idle_cluster():
    sim = run(V15, until=1801)
    resyncs = [s for s in sim.report()["syncs"] if s["start"] > 60]
    assert [round(s["start"]) for s in resyncs] == [600, 1200, 1800]


def test_a_delayed_pod_list_makes_syncs_wait_100_ms_each():
    actions = "- {at: 0, apiFault: {verb: list, resource: pods, count: 1, code: 500, client: replication-controller}}\n"
    sim = Simulation(scenario(V15, actions=actions, until=5))
    waits = []
    sim.subscribe(lambda r: waits.append(r) if r["kind"] == "sync.stage" and r["stage"] == "podStoreSynced" else None)
    sim.run_until(5)
    unsynced = [r for r in waits if not r["synced"]]
    assert unsynced
    assert len(unsynced) > 3
    assert all(b["time"] - a["time"] > 0.1 - 1e-9 for a, b in itertools.pairwise(unsynced))
    assert not [c for c in creates(sim) if c["time"] < unsynced[-1]["time"]]
    assert len([p for p in sim.report()["objects"]["Pod"]]) == 2


# -- at run time: the config action restarts the controller ---------------------------------------


def test_config_action_switches_the_version_like_a_controller_manager_restart():
    actions = (
        f"- {{at: 10, config: {{{V15}}}}}\n"
        "- {at: 12, scale: {kind: ReplicationController, name: web, replicas: 4}}\n"
    )
    sim = Simulation(scenario(actions=actions))
    records = []
    sim.subscribe(lambda r: records.append(r) if r["kind"] == "controller.restart" else None)
    sim.run_until(20)
    manager = sim.controllers["replicationcontroller"]
    assert isinstance(manager, ReplicationManager)
    assert manager.restarts == 1
    (restart,) = records
    assert (restart["previousVersion"], restart["version"], restart["reason"]) == ("v1.36", "v1.5", "config")
    after = [s for s in sim.report()["syncs"] if s["start"] > 12]
    assert after and after[0]["manage"] == {"action": "create", "count": 2}
    # The action log replays to the identical report.
    replay = Simulation(load_scenario(yaml.safe_dump(sim.export_scenario(), sort_keys=False)))
    replay.run_until(sim.now)
    assert replay.report_json() == sim.report_json()


def test_a_refused_config_changes_nothing():
    sim = Simulation(scenario())
    sim.run_until(5)
    before = sim.controllers["replicationcontroller"]
    result = sim.act({"config": {"lookupCacheSize": 10}})
    assert result["ok"] is False
    assert result["error"].startswith("config.lookupCacheSize: only the v1.5 ReplicationManager")
    assert sim.config["lookupCacheSize"] == 4096
    assert sim.controllers["replicationcontroller"] is before


def test_turning_the_gc_off_at_run_time_restarts_a_v1_5_manager_without_controller_refs():
    sim = Simulation(scenario(V15))
    sim.run_until(5)
    result = sim.act({"config": {"enableGarbageCollector": False}})
    assert result["ok"] is True
    manager = sim.controllers["replicationcontroller"]
    assert manager.garbage_collector_enabled is False
    assert manager.restarts == 1
    sim.act({"scale": {"kind": "ReplicationController", "name": "web", "replicas": 3}})
    sim.run_until(10)
    owners = [p["metadata"].get("ownerReferences") for p in sim.report()["objects"]["Pod"]]
    assert owners.count(None) == 1


# -- the debugger: stages, breakpoints, step_stage ----------------------------------------------


def test_the_facade_names_the_v1_5_stages():
    names = [stage.name for stage in SYNC_STAGES["v1.5"]]
    assert names[:3] == ["podStoreSynced", "get", "expectations"]
    assert SYNC_STAGES["v1.5"][0].source.startswith(
        "https://github.com/kubernetes/kubernetes/blob/a0dadf16f9578b7e926945a85ea34b1621cde796/"
    )


def test_breakpoints_and_step_stage_work_on_a_v1_5_sync():
    sim = Simulation(scenario(V15, replicas=3))
    breakpoints = Breakpoints()
    breakpoints.add({"kind": "podWrite", "controller": "replicationcontroller", "verb": "create", "n": 3})
    hits = []
    sim.subscribe(lambda r: hits.append(hit) if (hit := breakpoints.match_record(r)) is not None else None)
    record = sim.step_stage()
    assert record["kind"] == "sync.start" and record["version"] == "v1.5"
    assert sim.step_stage()["stage"] == "get"  # podStoreSynced came with sync.start, then a yield
    sim.run_until(5)
    assert len(hits) == 1
    assert "create #3" in hits[0].detail

"""The v1.5 ReplicationManager in the debugger: the sync inspector tells a v1.5 sync in v1.5's
stages and words with links to the lines at the pinned commit, the controller panels and the
status line name the version, the lookup cache is a panel, breakpoints stop on v1.5 stages, and
the version is switched at run time and per simulation from the home page's form."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.template.loader import render_to_string

from controlplane.controllers.registry import REGISTRY
from controlplane.controllers.stages import RS_COMMIT
from controlplane.scenario import load_file
from controlplane.session.commands import CommandError
from controlplane.simulation import Simulation, configured
from dashboard.host import panels
from dashboard.host.hosted import HostedSimulation

from .conftest import controlling_client
from .test_hosted import drive, frames_until_quiet, run_until

K15 = "https://github.com/kubernetes/kubernetes/blob/a0dadf16f9578b7e926945a85ea34b1621cde796/"
RC_GO = K15 + "pkg/controller/replication/replication_controller.go"
V15 = {"controllerVersion": {"replicationcontroller": "v1.5"}}
RC_KEY = "default/legacy"  # the demo's ReplicationController


def hosted(block=None, name="demo"):
    scenario = load_file(name)
    if block:
        scenario = configured(scenario, block)
    h = HostedSimulation("t", Simulation(scenario), name=scenario.name, source=name)
    h.viewers.add("viewer")
    return h


def render(h, panel_id):
    return render_to_string(panels.template_of(panel_id), panels.context(h, panel_id))


def text(markup):
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", markup)))


def inspector(h, key=RC_KEY, controller="replicationcontroller"):
    h.frames.frame()
    return render(h, panels.inspector_id(controller, key))


def links(markup):
    return dict(re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', markup))


# -- the sync inspector -----------------------------------------------------------------------


def test_a_v1_5_sync_is_told_in_v1_5_stages_each_linked_to_its_line_at_k15():
    h = hosted(V15)
    run_until(h, 1.0)
    first = h.frames.narrations[("replicationcontroller", RC_KEY)][0]
    assert first.version == "v1.5"
    markup = render_to_string("dashboard/_inspector.html", {**panels.narration_tables(first), "narration": first})
    said = text(markup)
    for words in (
        "rm.queue.Get()",
        "syncReplicationController",
        "rm.podStoreSynced()",
        "PodControllerRefManager.Classify",
        "manageReplicas",
        "all 2 creates at once (no slow start)",
        "CreatePodsWithControllerRef",
        "kubernetes.io/created-by",
        "calculateStatus + updateReplicationControllerStatus",
        "rm.queue.Forget(key)",
    ):
        assert words in said, words
    anchors = {label: href for href, label in links(markup).items()}
    assert anchors["worker"] == f"{RC_GO}#L471"  # the closing line: Forget after a nil sync
    assert anchors["manageReplicas"] == f"{RC_GO}#L489"
    assert anchors["PodControllerRefManager.Classify"] == K15 + "pkg/controller/controller_ref_manager.go#L56"
    assert anchors["calculateStatus"] == K15 + "pkg/controller/replication/replication_controller_utils.go#L87"
    assert anchors["updateReplicationControllerStatus"] == (
        K15 + "pkg/controller/replication/replication_controller_utils.go#L33"
    )
    assert f"{RC_GO}#L622" in markup and f"{RC_GO}#L510" in markup and f"{RC_GO}#L514" in markup
    assert RS_COMMIT not in markup and "slow-start" not in markup


def test_a_v1_36_sync_of_the_same_controller_keeps_the_v1_36_narration():
    h = hosted()
    run_until(h, 1.0)
    markup = inspector(h)
    assert "processNextWorkItem" in markup and RS_COMMIT in markup
    assert K15 not in markup and "v1.36" in text(markup)


def test_an_unsynced_pod_store_is_told_with_upstreams_log_line_and_its_sleep_and_requeue():
    h = hosted(V15)
    run_until(h, 3.0)
    manager = h.sim.controllers["replicationcontroller"]
    # A field, as upstream, so that a test can say the pod store has not synced (TestRCManagerNotReady).
    manager.pod_store_synced = lambda: False
    h.command({"op": "act", "action": {"scale": {"kind": "ReplicationController", "name": "legacy", "replicas": 3}}})
    run_until(h, 3.2)
    markup = inspector(h)
    assert "Waiting for pods controller to sync, requeuing rc default/legacy" in text(markup)
    assert f"{RC_GO}#L624" in markup and f"{RC_GO}#L626" in markup


def test_a_failed_delete_says_notfound_on_delete_is_an_error_and_links_deletion_observed():
    h = hosted(V15)
    run_until(h, 5.0)
    fault = {"verb": "delete", "resource": "pods", "count": 1, "code": 404, "reason": "NotFound"}
    h.command({"op": "act", "action": {"apiFault": fault}})
    h.command({"op": "act", "action": {"scale": {"kind": "ReplicationController", "name": "legacy", "replicas": 1}}})
    run_until(h, 6.0)
    syncs = h.frames.narrations[("replicationcontroller", RC_KEY)]
    failed = next(n for n in syncs if n.error)
    markup = render_to_string("dashboard/_inspector.html", {**panels.narration_tables(failed), "narration": failed})
    said = text(markup)
    assert "NotFound on delete is an error" in said and "sort.Sort(controller.ActivePods)" in said
    assert f"{RC_GO}#L589" in markup and f"{RC_GO}#L563" in markup
    assert "rm.queue.AddRateLimited(key)" in said and f"{RC_GO}#L475" in markup


def test_the_create_call_is_named_after_the_gc_setting():
    h = hosted({**V15, "enableGarbageCollector": False})
    run_until(h, 1.0)
    first = h.frames.narrations[("replicationcontroller", RC_KEY)][0]
    markup = render_to_string("dashboard/_inspector.html", {**panels.narration_tables(first), "narration": first})
    assert first.garbage_collector is False
    assert "RealPodControl.CreatePods" in markup and f"{RC_GO}#L529" in markup
    assert f"{RC_GO}#L698" in markup  # the list by selector
    assert "Classify" not in markup


# -- the controller panels and the status line ---------------------------------------------------------


def test_the_controller_panels_name_the_v1_5_manager_its_queue_and_the_version():
    h = hosted(V15)
    run_until(h, 2.0)
    workers = text(render(h, "workers-replicationcontroller"))
    queue = text(render(h, "queue-replicationcontroller"))
    expectations = text(render(h, "expectations-replicationcontroller"))
    assert "ReplicationManager workers (--concurrent_rc_syncs)" in workers
    assert "ReplicationManager workqueue replicationmanager" in queue
    assert "rm.expectations" in expectations
    for kind in ("workers", "queue", "expectations", "lookupcache"):
        panel_id = f"{kind}-replicationcontroller"
        assert re.search(r'class="version" title="replicationcontroller v1.5[^"]*">v1\.5<', render(h, panel_id))
    assert re.search(r'class="version" title="replicaset v1.36[^"]*">v1\.36<', render(h, "workers-replicaset"))
    assert "ReplicationManager" not in text(render(h, "workers-replicaset"))
    # the demo runs all three controllers
    versions = {"replicaset": "v1.36", "replicationcontroller": "v1.5", "deployment": "v1.36"}
    assert panels.status(h)["versions"] == versions
    owners = render(h, "owners")
    assert re.search(r'data-owner="ReplicationController/legacy".*?class="version"[^>]*>v1\.5<', owners, re.S)


def test_the_lookup_cache_is_a_live_panel_only_while_v1_5_runs():
    h = hosted(V15)
    run_until(h, 2.0)
    frames = frames_until_quiet(h)
    sent = {}
    for frame in frames:
        sent.update(frame["panels"])
    cache = sent["lookupcache-replicationcontroller"]
    said = text(cache)
    snap = h.sim.controllers["replicationcontroller"].lookup_cache.snapshot()
    assert snap["size"] == 1 and snap["hits"] > 0
    assert f"size {snap['size']} / 4096" in said and f"hits {snap['hits']}" in said
    assert f"misses {snap['misses']}" in said and "invalidations 0" in said
    assert "app=legacy legacy" in said
    assert "hidden" in render(h, "lookupcache-replicaset")
    # Back to v1.36 at run time: the panel empties and hides, the status line says so.
    h.command({"op": "act", "action": {"config": {"controllerVersion": {"replicationcontroller": "v1.36"}}}})
    run_until(h, 2.5)
    state = json.loads(h.frames.state())
    hidden = '<section id="lookupcache-replicationcontroller" class="panel lookupcache" hidden>'
    assert state["panels"]["lookupcache-replicationcontroller"].startswith(hidden)
    assert state["status"]["versions"]["replicationcontroller"] == "v1.36"


def test_overlapping_rcs_show_upstreams_user_error_line_in_the_lookup_cache_panel():
    h = hosted(V15)
    run_until(h, 2.0)
    twin = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "twin", "namespace": "default"},
        "spec": {
            "replicas": 0,
            "selector": {"app": "legacy"},
            "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    # A label set the cache has not seen: a miss, so every RC of the namespace is asked.
    stray = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stray", "namespace": "default", "labels": {"app": "legacy", "tier": "x"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    h.command({"op": "act", "action": {"apply": twin}})
    h.command({"op": "act", "action": {"apply": stray}})
    run_until(h, 4.0)
    h.frames.frame()
    said = text(render(h, "lookupcache-replicationcontroller"))
    assert "user error! more than one replication controller is selecting pods" in said
    assert "(oldest wins)" in said


def test_the_faults_panel_lists_a_non_default_version_and_gc_with_a_revert():
    h = hosted({**V15, "enableGarbageCollector": False})
    markup = render(h, "faults")
    assert "controllerVersion: replicationcontroller v1.5" in text(markup)
    assert "enableGarbageCollector = false" in text(markup)
    assert '{"controllerVersion":{"replicationcontroller":"v1.36"}}' in html.unescape(markup)


# -- switching at run time, breakpoints ---------------------------------------------------------------


def test_switching_the_version_at_run_time_restarts_the_controller_and_changes_the_narration():
    h = hosted()
    run_until(h, 2.0)
    result = h.command({"op": "act", "action": {"config": {**V15, "enableGarbageCollector": True}}})
    assert result["ok"] is True
    assert h.sim.controller_version("replicationcontroller") == "v1.5"
    assert h.sim.controllers["replicationcontroller"].restarts == 1
    h.command({"op": "act", "action": {"scale": {"kind": "ReplicationController", "name": "legacy", "replicas": 3}}})
    run_until(h, 3.0)
    assert "syncReplicationController" in inspector(h)
    with pytest.raises(CommandError, match=r"config\.controllerVersion\.replicationcontroller"):
        h.command({"op": "act", "action": {"config": {"controllerVersion": {"replicationcontroller": "v9"}}}})
    assert h.sim.controller_version("replicationcontroller") == "v1.5"  # nothing changed


def test_a_stage_breakpoint_stops_a_v1_5_sync_at_that_stage():
    h = hosted(V15)
    h.command(
        {
            "op": "breakpoint",
            "do": "add",
            "spec": {"kind": "stage", "stage": "classify", "controller": "replicationcontroller", "key": RC_KEY},
        }
    )
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert h.hit["breakpoint"] == 1
    last = h.sim.recent[-1]
    assert last["kind"] == "sync.stage" and last["stage"] == "classify" and last["key"] == RC_KEY
    assert "reached classify" in h.hit["detail"]
    assert h.breakpoints.items[0].describe() == "replicationcontroller sync of default/legacy reaches stage classify"


def test_a_stage_breakpoint_names_the_field_of_a_bad_stage():
    h = hosted(V15)
    with pytest.raises(CommandError, match=r"breakpoint: stage: must be one of consistency, .*podStoreSynced"):
        h.command({"op": "breakpoint", "do": "add", "spec": {"kind": "stage", "stage": "slowStartBatch"}})
    assert h.breakpoints.items == []


def test_the_stage_groups_are_each_versions_stages():
    groups = {(g["controllers"], g["versions"]): [name for name, _ in g["stages"]] for g in REGISTRY.stage_groups()}
    assert groups[("replicaset replicationcontroller", "v1.36")][:3] == ["consistency", "get", "expectations"]
    v15 = groups[("replicationcontroller", "v1.5 v1.5-late")]
    assert v15[0] == "podStoreSynced" and "classify" in v15
    assert groups[("deployment", "v1.36")][:2] == ["get", "getReplicaSetsForDeployment"]


# -- pages ----------------------------------------------------------------------------------------------

pytestmark_db = pytest.mark.django_db(transaction=True)


@pytestmark_db
async def test_the_home_form_starts_a_scenario_under_v1_5_without_the_gc(running_host):
    client = await controlling_client()
    page = (await client.get("/")).content.decode()
    assert 'name="controller_version"' in page and '<option value="v1.5"' in page and 'name="gc_off"' in page
    response = await client.post("/sim/new", {"scenario": "demo", "controller_version": "v1.5", "gc_off": "1"})
    assert response.status_code == 302
    sim_id = response["Location"].strip("/").split("/")[1]
    sim = running_host.sims[sim_id].sim
    assert sim.controller_version("replicationcontroller") == "v1.5"
    assert sim.config["enableGarbageCollector"] is False
    assert sim.controllers["replicationcontroller"].garbage_collector_enabled is False
    page = (await client.get(f"/sim/{sim_id}/")).content.decode()
    assert 'id="form-version"' in page and 'data-versions="v1.5 v1.5-late"' in page


@pytestmark_db
async def test_the_home_form_without_a_version_keeps_the_scenarios_config(running_host):
    client = await controlling_client()
    response = await client.post("/sim/new", {"scenario": "demo"})
    sim = running_host.sims[response["Location"].strip("/").split("/")[1]].sim
    assert sim.controller_version("replicationcontroller") == "v1.36"
    assert sim.config["enableGarbageCollector"] is True


@pytestmark_db
async def test_a_bad_version_on_the_home_form_is_a_form_error_and_starts_nothing(running_host):
    client = await controlling_client()
    before = set(running_host.sims)
    response = await client.post("/sim/new", {"scenario": "demo", "controller_version": "v1.7"})
    assert response.status_code == 400
    body = html.unescape(response.content.decode())
    assert "config.controllerVersion.replicationcontroller: must be one of" in body
    assert set(running_host.sims) == before


@pytest.mark.parametrize("gc", [True, False])
def test_cache_vs_truth_of_a_v1_5_key_reads_the_managers_own_cache(gc):
    h = hosted({**V15, "enableGarbageCollector": gc})
    run_until(h, 5.0)
    truth = panels.truth(h, "replicationcontroller", RC_KEY)
    assert truth["found"] and truth["differing"] == 0
    assert truth["server_active"] == truth["cache_active"] == truth["counted"] == 2
    assert "legacy-" in render(h, panels.truth_id("replicationcontroller", RC_KEY))

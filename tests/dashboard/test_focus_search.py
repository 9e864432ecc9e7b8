"""The page-wide focus on one owner and the search box, on the server (#19 §3): the focused queue
and expectations panels are filtered before their lists are capped, and the search answers
names and label selectors with the core's own parser."""

from __future__ import annotations

import json

import pytest

from controlplane.scenario import parse_scenario
from controlplane.session.commands import CommandError
from controlplane.simulation import Simulation
from dashboard.host.hosted import HostedSimulation
from dashboard.host.search import search
from tests.controlplane.factories import fleet_objects

from .test_hosted import drive, frames_until_quiet, run_until


def fleet(replicasets: int, replicas: int, **config) -> HostedSimulation:
    objects = fleet_objects(replicasets, replicas)
    doc = {"name": "fleet", "seed": 1, "config": {"nodes": 3, "kubeApiQPS": -1, **config}, "objects": objects}
    scenario = parse_scenario(doc)
    return HostedSimulation("t", Simulation(scenario), name="fleet", source="upload")


def test_a_focused_queue_lists_the_keys_entry_even_past_the_first_fifty():
    h = fleet(60, 1, manualWorkers=["replicaset"])
    h.viewers.add("viewer")
    run_until(h, 1.0)
    assert h.command({"op": "focus", "owner": ["replicaset", "default/rs-059"]}, viewer="viewer")["ok"]
    ids = h.frames.focused_panel_ids()
    assert "queue-replicaset:default/rs-059" in ids and "expectations-replicaset:default/rs-059" in ids
    sent: dict[str, str] = {}
    for frame in frames_until_quiet(h):
        sent.update(frame["panels"])
    everyone, mine = sent["queue-replicaset"], sent["queue-replicaset:default/rs-059"]
    assert "+10 more" in everyone and "default/rs-059" not in everyone
    assert mine.count('<li class="key') == 1 and "default/rs-059" in mine and "60 of 60 queued" in mine
    assert 'id="queue-replicaset"' in mine  # the same element on the page
    # The state a (re)connecting viewer gets has it too; unfocusing drops it.
    state = json.loads(h.frames.state())
    assert "queue-replicaset:default/rs-059" in state["panels"]
    assert h.command({"op": "focus", "owner": None}, viewer="viewer")["ok"]
    assert not any(p.startswith("queue-replicaset:") for p in h.frames.focused_panel_ids())


def test_the_expectations_panel_lists_fifty_keys_blocking_first_and_a_focused_one_its_own():
    h = fleet(60, 1)
    h.viewers.add("viewer")
    run_until(h, 3.0)
    h.command({"op": "focus", "owner": ["replicaset", "default/rs-059"]}, viewer="viewer")
    sent: dict[str, str] = {}
    for frame in frames_until_quiet(h):
        sent.update(frame["panels"])
    everyone = sent["expectations-replicaset"]
    assert everyone.count('data-focus="replicaset|') == 50 and "+10 more keys" in everyone
    assert "default/rs-059" not in everyone
    mine = sent["expectations-replicaset:default/rs-059"]
    assert mine.count('data-focus="replicaset|') == 1 and "default/rs-059" in mine


def test_a_focused_expectations_panel_shows_only_that_key():
    h = fleet(3, 2)
    h.viewers.add("viewer")
    run_until(h, 0.5)
    h.command({"op": "focus", "owner": ["replicaset", "default/rs-001"]}, viewer="viewer")
    sent: dict[str, str] = {}
    for frame in frames_until_quiet(h):
        sent.update(frame["panels"])
    mine = sent["expectations-replicaset:default/rs-001"]
    assert "default/rs-001" in mine and "default/rs-000" not in mine and "default/rs-002" not in mine
    assert "3 keys in all" in mine


@pytest.mark.parametrize(
    ("owner", "error"),
    [
        (["deployment", "default/x"], "focus: owner is [controller, namespace/name]"),
        (["replicaset", "no-slash"], "focus: owner is"),
        ("default/rs-000", "focus: owner is"),
    ],
)
def test_a_bad_focus_owner_is_refused_and_changes_nothing(owner, error):
    h = fleet(1, 1)
    with pytest.raises(CommandError, match=error.replace("[", r"\[").replace("]", r"\]")):
        h.command({"op": "focus", "owner": owner}, viewer="viewer")
    assert h.frames.focused_panel_ids() == []


def test_search_by_name_and_by_label_selector():
    h = fleet(6, 2)
    run_until(h, 5.0)
    by_name = search(h, {"q": "rs-004"})
    assert not by_name["selector"]
    assert [o["owner"] for o in by_name["owners"]] == ["ReplicaSet/rs-004"]
    assert by_name["podsTotal"] == 2 and len(by_name["ids"]) == 2
    assert all(p["owner"] == "ReplicaSet/rs-004" and p["state"] for p in by_name["pods"])
    chosen = search(h, {"q": "tier!=db,app in (rs-000,rs-001,rs-002)"})
    assert chosen["selector"]
    assert [o["key"] for o in chosen["owners"]] == ["default/rs-000", "default/rs-002"]
    assert chosen["podsTotal"] == 4
    nodes = search(h, {"q": "node-"})
    assert nodes["nodesTotal"] == 3 and nodes["nodes"][0] == "node-1"


@pytest.mark.parametrize(
    ("q", "error"),
    [
        ("app in (", "q: not a label selector"),
        ("", "q: empty"),
        ("x" * 300, "q: must be a text of at most 256 characters"),
        (7, "q: must be a text"),
    ],
)
def test_a_bad_search_says_what_is_wrong(q, error):
    h = fleet(1, 1)
    with pytest.raises(CommandError, match=error.replace("(", r"\(")):
        search(h, {"q": q})


def test_a_focused_owners_events_and_api_calls_are_not_crowded_out_of_a_frame():
    h = fleet(30, 4, manualWorkers=["replicaset"])
    h.viewers.add("viewer")
    run_until(h, 1.0)
    frames_until_quiet(h)
    h.command({"op": "focus", "owner": ["replicaset", "default/rs-000"]}, viewer="viewer")
    # rs-000 syncs first, then 29 others five at a time (five workers), all before the next
    # frame: 30 x 4 creates, 120 Events, hundreds of API calls.
    t = 1.0
    for batch in ([0], range(1, 6), range(6, 11), range(11, 16), range(16, 21), range(21, 26), range(26, 30)):
        for i in batch:
            sync = {"controller": "replicaset", "key": f"default/rs-{i:03d}"}
            assert h.command({"op": "act", "action": {"sync": sync}})["ok"]
        t += 0.5
        run_until(h, t)
    frame = json.loads(h.frames.frame())
    everyone = frame["rows"]["events"]
    assert "rs-000" not in everyone and frame["skipped"]["events"] > 0  # the cap kept the newest
    mine = frame["focusRows"]["replicaset:default/rs-000"]
    assert mine["events"].count("SuccessfulCreate") == 4
    assert "rs-001" not in mine["events"] and "rs-001" not in mine["api"]
    assert mine["api"].count("pods/binding") == 4 and "replicasets/status" in mine["api"]
    # Unfocused: no rows are kept apart any more.
    h.command({"op": "focus", "owner": None}, viewer="viewer")
    h.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "rs-000", "replicas": 5}}})
    run_until(h, 8.0)
    assert all("focusRows" not in f for f in frames_until_quiet(h))


@pytest.mark.django_db(transaction=True)
async def test_a_resync_keeps_the_page_focus_and_a_read_only_viewer_may_focus_and_search(running_host):
    from .test_consumers import command, connect, receive

    comm, _, _ = await connect(token="")  # read-only: focus and search change nothing
    await receive(comm, "state")
    assert (await command(comm, {"op": "focus", "owner": ["replicaset", "default/web"]}))["ok"]
    found = await command(comm, {"op": "search", "q": "app=web"}, msg_id=2)
    assert found["ok"] and [o["key"] for o in found["owners"]] == ["default/web"]
    await comm.send_to(text_data=json.dumps({"type": "resync"}))
    state = await receive(comm, "state")
    assert "queue-replicaset:default/web" in state["panels"]
    assert 'data-only="default/web"' in state["panels"]["queue-replicaset:default/web"]
    await comm.disconnect()


def test_owners_of_one_name_in_two_namespaces_are_two_lanes_two_blocks_and_two_focuses():
    """ReplicaSet web in default (2 pods) and in team-a (3 pods): the page used to key owners by
    Kind/name, so their tiles, lane and card shared one name and their counts one block."""
    from tests.controlplane.factories import rs_manifest

    other = rs_manifest("web", 3)
    other["metadata"]["namespace"] = "team-a"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    doc = {
        "name": "two-namespaces",
        "seed": 1,
        "config": {"nodes": 3},
        "objects": [namespace, rs_manifest("web", 2), other],
    }
    h = HostedSimulation("t", Simulation(parse_scenario(doc)), name="two", source="upload")
    h.viewers.add("viewer")
    run_until(h, 30.0)
    frames_until_quiet(h)
    frames = h.frames
    assert {"ReplicaSet/web", "ReplicaSet/team-a/web"} <= set(frames.owners)
    ready = frames.tiles
    by_label = {frames.owners[i]: sum(counts.values()) for i, counts in ready.items()}
    assert by_label["ReplicaSet/web"] == 2 and by_label["ReplicaSet/team-a/web"] == 3
    owners_html = json.loads(frames.state())["panels"]["owners"]
    assert 'data-owner="ReplicaSet/web"' in owners_html and 'data-owner="ReplicaSet/team-a/web"' in owners_html
    # Focused on team-a's web: its pods' API calls are its own, not default's web's.
    assert h.command({"op": "focus", "owner": ["replicaset", "team-a/web"]}, viewer="viewer")["ok"]
    for ns in ("default", "team-a"):
        fault = {"selector": "app=web", "namespace": ns, "count": 2, "fault": "delete"}
        assert h.command({"op": "act", "action": {"podFault": fault}})["ok"]
    run_until(h, 40.0)
    frame = json.loads(frames.frame())
    mine = frame["focusRows"]["replicaset:team-a/web"]
    assert "team-a/web-" in mine["api"] and "default/web-" not in mine["api"]
    # The search names each by its label.
    labels = [o["owner"] for o in search(h, {"q": "web"})["owners"]]
    assert sorted(labels) == ["ReplicaSet/team-a/web", "ReplicaSet/web"]


@pytest.mark.parametrize(
    ("owner", "namespaces"),
    [("ReplicaSet/team-a/web", {"team-a"}), ("ReplicaSet/default/web", {"default"}), ("ReplicaSet/web", None)],
)
def test_a_pod_state_breakpoint_takes_the_pages_owner_name_with_its_namespace(owner, namespaces):
    from tests.controlplane.factories import rs_manifest

    other = rs_manifest("web", 3)
    other["metadata"]["namespace"] = "team-a"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    doc = {"name": "two", "seed": 1, "config": {"nodes": 3}, "objects": [namespace, rs_manifest("web", 2), other]}
    h = HostedSimulation("t", Simulation(parse_scenario(doc)), name="two", source="upload")
    spec = {"kind": "podState", "owner": owner, "state": "Ready"}
    assert h.command({"op": "breakpoint", "do": "add", "spec": spec})["ok"]
    stopped_on = []  # the namespace of the pod each stop names
    for _ in range(10):
        h.command({"op": "run", "speed": "max"})
        drive(h)
        if not h.hit or h.hit["breakpoint"] != 1:
            break
        pod = h.hit["detail"].split()[1]  # "pod web-xxxxx went Running → Ready"
        stopped_on.append(
            next(p["metadata"]["namespace"] for p in h.sim.server.objects("pods") if p["metadata"]["name"] == pod)
        )
    assert stopped_on, "the breakpoint never fired"
    assert all(namespaces is None or ns in namespaces for ns in stopped_on), stopped_on


@pytest.mark.parametrize("owner", ["ReplicaSet/a/b/c", "ReplicaSet//web", "Pod/web", "web"])
def test_a_bad_pod_state_breakpoint_owner_is_refused(owner):
    h = fleet(1, 1)
    with pytest.raises(CommandError, match="owner: must be ReplicaSet/NAME"):
        h.command({"op": "breakpoint", "do": "add", "spec": {"kind": "podState", "owner": owner, "state": "Ready"}})
    assert h.breakpoints.items == []

"""Every session is a recording (issue 17): written through as it runs, kept when stopped,
re-opened by replay, deleted on request; its past answers `?at=T` (docs/time-travel.md)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest
from django.test import AsyncClient

from controlplane.session import session as session_module
from dashboard import host as host_package
from dashboard.host import recording
from dashboard.models import RecordedAction, Recording
from tests.patience import PATIENCE_S

from .conftest import TOKEN, command, controlling_client, run_to, start

pytestmark = pytest.mark.django_db(transaction=True)


async def stored(sim_id, *, actions, t):
    """The recording once it holds `actions` entries and the time `t` (written off-loop)."""
    for _ in range(500):
        rec = await Recording.objects.filter(id=sim_id).afirst()
        if rec is not None and rec.actions == actions and rec.virtual_time == t:
            return rec
        await asyncio.sleep(0.01)
    raise AssertionError(f"recording of {sim_id}: {rec and (rec.actions, rec.virtual_time)} != {(actions, t)}")


async def a_session_with_history(client):
    sim_id = await start(client)
    await run_to(sim_id, 2.0)
    await command(sim_id, {"op": "act", "action": {"podFault": {"selector": "app=web", "count": 1, "fault": "crash"}}})
    await command(sim_id, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 7}}})
    await run_to(sim_id, 5.0)
    return sim_id


async def test_a_session_is_written_through_as_it_runs(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    hosted = running_host.sims[sim_id]
    rec = await stored(sim_id, actions=len(hosted.sim.actions), t=5.0)
    assert rec.state == Recording.RUNNING and rec.seed == 3
    assert json.loads(rec.start) == hosted.sim.start_data()
    rows = [row async for row in RecordedAction.objects.filter(recording_id=sim_id).order_by("seq")]
    assert [json.loads(row.entry) for row in rows] == json.loads(json.dumps(hosted.sim.actions))
    assert [row.source for row in rows][-2:] == ["user", "user"]
    assert json.loads(rec.pending) == hosted.sim.timeline_pending


async def test_stop_asks_first_then_keeps_the_recording_to_export_reopen_and_delete(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    before = (await client.get(f"/sim/{sim_id}/report.json")).content
    scenario = (await client.get(f"/sim/{sim_id}/scenario.yaml")).content
    asked = await client.get(f"/sim/{sim_id}/stop")
    assert asked.status_code == 200 and b"recording is kept" in asked.content and sim_id in running_host.sims
    assert (await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})).status_code == 302
    assert sim_id not in running_host.sims
    rec = await Recording.objects.aget(id=sim_id)
    assert rec.state == Recording.STOPPED and rec.virtual_time == 5.0
    home = (await client.get("/")).content.decode()
    assert f'data-recording="{sim_id}"' in home and f"/sim/{sim_id}/reopen" in home
    # Exportable: the same file and the same report as before the stop (the report replayed headless).
    assert (await client.get(f"/sim/{sim_id}/scenario.yaml")).content == scenario
    replayed = await client.get(f"/sim/{sim_id}/report.json")
    assert replayed.status_code == 200 and replayed.content.rstrip(b"\n") == before
    # Re-opened: replayed to its last time, paused, the same report again.
    assert (await client.post(f"/sim/{sim_id}/reopen")).status_code == 302
    hosted = running_host.sims[sim_id]
    assert hosted.mode == "paused" and hosted.sim.now == 5.0
    assert hosted.restored_note.startswith("re-opened from its recording at t=5.000; replayed 2 actions")
    assert [e["source"] for e in hosted.sim.actions][-2:] == ["user", "user"]  # its history, as it was
    assert (await client.get(f"/sim/{sim_id}/report.json")).content == before
    page = (await client.get(f"/sim/{sim_id}/")).content.decode()
    assert "This session was re-opened from its recording at t=5.000; replayed 2 actions" in page
    # A running session cannot be deleted; a stopped one, after a confirmation.
    assert (await client.post(f"/sim/{sim_id}/delete", {"confirm": "yes"})).status_code == 409
    await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})
    assert (await client.post(f"/sim/{sim_id}/delete")).status_code == 200  # are you sure?
    assert await Recording.objects.filter(id=sim_id).aexists()
    assert (await client.post(f"/sim/{sim_id}/delete", {"confirm": "yes"})).status_code == 302
    assert not await Recording.objects.filter(id=sim_id).aexists()
    assert not await RecordedAction.objects.filter(recording_id=sim_id).aexists()
    assert (await client.get(f"/sim/{sim_id}/scenario.yaml")).status_code == 404


async def test_without_the_token_nothing_is_stopped_reopened_or_deleted(running_host):
    client = await controlling_client()
    sim_id = await start(client)
    await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})
    anonymous = AsyncClient()
    assert (await anonymous.post(f"/sim/{sim_id}/reopen")).status_code == 403
    assert (await anonymous.post(f"/sim/{sim_id}/delete", {"confirm": "yes"})).status_code == 403
    assert (await anonymous.post("/sim/demo/stop", {"confirm": "yes"})).status_code == 403
    assert await Recording.objects.filter(id=sim_id).aexists() and "demo" in running_host.sims


async def test_reads_of_the_past_need_the_token_and_say_so(running_host):
    """A report or export of the past replays or cuts a recording (a child process for up to 60 s):
    without the token it is a 403 naming what is needed, and nothing is replayed; the present
    stays readable; the token in a session or a bearer header opens the past."""
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    anonymous = AsyncClient()
    report = await anonymous.get(f"/sim/{sim_id}/report.json?at=2")
    assert report.status_code == 403 and report["Content-Type"] == "application/json"
    status = json.loads(report.content)
    assert status["kind"] == "Status" and status["reason"] == "Forbidden" and status["code"] == 403
    assert "report.json of the past" in status["message"] and "needs the access token" in status["message"]
    export = await anonymous.get(f"/sim/{sim_id}/scenario.yaml?at=2")
    assert export.status_code == 403 and b"needs the access token" in export.content
    assert (await anonymous.get(f"/sim/{sim_id}/report.json")).status_code == 200  # the present
    assert (await anonymous.get(f"/sim/{sim_id}/scenario.yaml")).status_code == 200
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert (await anonymous.get(f"/sim/{sim_id}/report.json?at=2", headers=bearer)).status_code == 200
    wrong = {"Authorization": "Bearer not-the-token-0123456789"}
    assert (await anonymous.get(f"/sim/{sim_id}/report.json?at=2", headers=wrong)).status_code == 403
    assert (await client.get(f"/sim/{sim_id}/scenario.yaml?at=2")).status_code == 200
    # A stopped session's report and export are its past too; its row offers them only with the token.
    await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})
    assert (await anonymous.get(f"/sim/{sim_id}/report.json")).status_code == 403
    assert (await anonymous.get(f"/sim/{sim_id}/scenario.yaml")).status_code == 403
    assert f"/sim/{sim_id}/report.json" not in (await anonymous.get("/sims/")).content.decode()
    assert f"/sim/{sim_id}/report.json" in (await client.get("/sims/")).content.decode()
    assert (await client.get(f"/sim/{sim_id}/report.json")).status_code == 200


def cli(scenario_text: str, until: float) -> bytes:
    command = [sys.executable, "-m", "controlplane", "run", "-", "--until", repr(until)]
    return subprocess.run(command, input=scenario_text.encode(), capture_output=True, check=True).stdout


async def test_report_at_t_is_the_headless_run_of_the_scenario_cut_at_t(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    for at in ("1.5", "2", "4.25", "5"):
        cut = await client.get(f"/sim/{sim_id}/scenario.yaml?at={at}")
        assert cut.status_code == 200 and f"at-{float(at):g}.scenario.yaml" in cut["Content-Disposition"]
        report = await client.get(f"/sim/{sim_id}/report.json?at={at}")
        assert report.status_code == 200 and report["Content-Type"] == "application/json"
        assert report.content == cli(cut.content.decode(), float(at))
        assert json.loads(report.content)["time"] == float(at)
    # At now, the past is the present.
    now = await client.get(f"/sim/{sim_id}/report.json")
    assert (await client.get(f"/sim/{sim_id}/report.json?at=5")).content.rstrip(b"\n") == now.content
    # A stopped session answers from its recording, the same bytes.
    at_2 = (await client.get(f"/sim/{sim_id}/report.json?at=2")).content
    await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})
    assert (await client.get(f"/sim/{sim_id}/report.json?at=2")).content == at_2


@pytest.mark.parametrize(
    ("at", "message"),
    [
        ("-1", "at: must be >= 0"),
        ("abc", "at: must be a number of seconds"),
        ("nan", "at: must be a number of seconds"),
        ("inf", "at: must be a number of seconds"),
        ("3x", "at: must be a number of seconds"),
        ("1e3", "at: must be a number of seconds"),
        ("99", "at: must be <= now (t=5.000)"),
    ],
)
async def test_a_time_outside_the_past_is_a_clear_400_and_changes_nothing(running_host, at, message):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    hosted = running_host.sims[sim_id]
    before = (len(hosted.sim.actions), hosted.sim.now, hosted.mode)
    report = await client.get(f"/sim/{sim_id}/report.json?at={at}")
    assert report.status_code == 400
    body = report.json()
    assert body["kind"] == "Status" and body["code"] == 400 and body["reason"] == "BadRequest"
    assert body["message"].startswith(message)
    yaml_answer = await client.get(f"/sim/{sim_id}/scenario.yaml?at={at}")
    assert yaml_answer.status_code == 400 and yaml_answer["Content-Type"].startswith("text/plain")
    assert yaml_answer.content.decode().startswith(message)
    assert (len(hosted.sim.actions), hosted.sim.now, hosted.mode) == before
    await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})
    if at == "99":  # a stopped session: its recording's last time is the limit
        answer = await client.get(f"/sim/{sim_id}/report.json?at=99")
        assert answer.status_code == 400
        assert answer.json()["message"] == "at: must be <= the recording's last time (t=5.000)"


async def test_a_report_of_the_past_that_takes_too_long_is_a_504(running_host, monkeypatch):
    from dashboard import views

    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    monkeypatch.setattr(views, "PAST_TIMEOUT", 0.001)
    answer = await client.get(f"/sim/{sim_id}/report.json?at=4")
    assert answer.status_code == 504 and "took longer than" in answer.json()["message"]
    assert sim_id in running_host.sims


async def test_the_server_keeps_a_bounded_number_of_recordings(running_host, monkeypatch):
    client = await controlling_client()
    monkeypatch.setattr(recording, "MAX_RECORDINGS", await Recording.objects.acount() + 1)
    sim_id = await start(client)
    refused = await client.post("/sim/new", {"scenario": "demo"})
    assert refused.status_code == 400
    assert "this server keeps at most" in refused.content.decode()
    assert await Recording.objects.acount() == recording.MAX_RECORDINGS
    await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})
    assert await Recording.objects.filter(id=sim_id, state=Recording.STOPPED).aexists()  # kept, not evicted


async def test_a_session_holds_a_bounded_number_of_actions(running_host, monkeypatch):
    client = await controlling_client()
    sim_id = await start(client)
    monkeypatch.setattr(session_module, "MAX_RECORDED_ACTIONS", len(running_host.sims[sim_id].sim.actions) + 1)
    await command(sim_id, {"op": "act", "action": {"config": {"workers": 2}}})
    refused = await host_package.request(sim_id, {"op": "act", "action": {"config": {"workers": 3}}}, control=True)
    assert not refused["ok"] and "the most a recording keeps" in refused["error"]


async def test_refused_writes_fill_a_recording_only_up_to_its_byte_bound(running_host, monkeypatch):
    """A write the API server refuses is logged with its body (it replays to the same refusal):
    1 MiB refused writes count against the recording's bound, and once it is reached the next is
    refused at the door, naming the bound; what the database holds stays under it."""
    client = await controlling_client()
    sim_id = await start(client)
    bound = 4 * 2**20
    monkeypatch.setattr(session_module, "MAX_RECORDED_BYTES", bound, raising=False)
    big = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Not_A_Name", "annotations": {"k": "x" * 2**20}}}
    write = {"request": {"client": "kubectl", "verb": "create", "resource": "pods", "namespace": "default"}}
    write["request"]["body"] = big
    answers = []
    for _ in range(10):
        answers.append(await host_package.request(sim_id, {"op": "act", "action": write}, control=True))
    logged = [a for a in answers if a.get("response")]
    assert logged and all(a["response"][0] == 422 for a in logged)  # refused by the API server, logged
    bounced = [a for a in answers if not a.get("response")]
    assert bounced and all("the most a recording keeps" in a["error"] for a in bounced)
    hosted = running_host.sims[sim_id]
    await stored(sim_id, actions=len(hosted.sim.actions), t=hosted.sim.now)
    sizes = [len(e) async for e in RecordedAction.objects.filter(recording_id=sim_id).values_list("entry", flat=True)]
    assert sum(sizes) <= bound + 64 * 1024  # the actions, plus each entry's time and result


async def test_the_time_is_saved_at_least_every_second_while_running(running_host):
    client = await controlling_client()
    sim_id = await start(client)
    await command(sim_id, {"op": "run", "speed": 1.0})
    started = time.monotonic()
    first = (await Recording.objects.aget(id=sim_id)).virtual_time
    while time.monotonic() - started < 3.0:
        await asyncio.sleep(0.1)
        if (await Recording.objects.aget(id=sim_id)).virtual_time >= first + 1.0:
            return
    raise AssertionError("the recording's time did not move while the session ran")


async def test_after_a_restart_the_demo_gets_its_id_back_and_the_stopped_demo_keeps_its_recording(
    running_host, settings
):
    """The demo's URL (/sim/demo/, printed by ./scripts/run) names the new demo after a restart,
    not the recording of the demo the previous run stopped: that one moves to an id of its own,
    with its actions, and its forks follow it."""
    from dashboard.host import host as host_module

    settings.CTRLSCOPE_START = "demo"
    await host_module.ensure_started()
    assert "demo" in running_host.sims
    await command("demo", {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 4}}})
    await stored("demo", actions=len(running_host.sims["demo"].sim.actions), t=running_host.sims["demo"].sim.now)
    fork = await Recording.objects.acreate(
        id="fork-of-demo",
        name="fork",
        source="fork",
        seed=1,
        start="{}",
        state=Recording.STOPPED,
        host="x",
        parent="demo",
        forked_at=0.0,
    )
    actions = await RecordedAction.objects.filter(recording_id="demo").acount()
    assert actions >= 1
    await host_module.reset_for_tests()  # the server stops: its sessions are stopped, kept
    assert (await Recording.objects.aget(id="demo")).state == Recording.STOPPED

    await host_module.ensure_started()  # a new run of the server
    restarted = host_module.get_host()
    assert "demo" in restarted.sims and restarted.sims["demo"].sim.actions == []  # a new demo, fresh
    assert (await Recording.objects.aget(id="demo")).state == Recording.RUNNING
    old = [r async for r in Recording.objects.filter(state=Recording.STOPPED).exclude(id=fork.id)]
    assert len(old) == 1 and old[0].id.startswith("demo-") and "was demo" in old[0].note
    assert await RecordedAction.objects.filter(recording_id=old[0].id).acount() == actions
    assert (await Recording.objects.aget(id=fork.id)).parent == old[0].id
    client = await controlling_client()
    home = (await client.get("/")).content.decode()
    assert f'data-recording="{old[0].id}"' in home and 'data-recording="demo"' not in home
    exported = await client.get(f"/sim/{old[0].id}/scenario.yaml")
    assert exported.status_code == 200 and b"replicas: 4" in exported.content


async def test_a_restore_replays_under_the_gc_policy_with_nothing_else_hosted(running_host, monkeypatch):
    # A restore at start (nothing hosted yet) or a re-open with every other session stopped ran
    # its replay with CPython's default collector thresholds: full collections over the growing
    # world (bench/time_travel.py: restore 5.7 s, 3.5 s under the policy).
    import gc

    from controlplane import gcpolicy

    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    for other in list(running_host.sims):
        await client.post(f"/sim/{other}/stop", {"confirm": "yes"})
    assert not running_host.sims and gc.get_threshold() != gcpolicy.SIMULATION_THRESHOLDS
    seen = []
    real = recording.replay

    def watched(stored, build):
        seen.append(gc.get_threshold())
        return real(stored, build)

    monkeypatch.setattr(recording, "replay", watched)
    assert (await client.post(f"/sim/{sim_id}/reopen")).status_code == 302
    assert seen == [gcpolicy.SIMULATION_THRESHOLDS]
    assert gc.get_threshold() == gcpolicy.SIMULATION_THRESHOLDS  # now the hosted session's own hold
    await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})
    assert gc.get_threshold() != gcpolicy.SIMULATION_THRESHOLDS  # and no hold left behind


def _a_recording_of(actions: int) -> Recording:
    from controlplane.scenario import load_file
    from controlplane.simulation import Simulation

    sim = Simulation(load_file("scale-up-and-down"), seed=1)
    rec = Recording.objects.create(
        id="gappy", name="gappy", source="test", seed=1, start=json.dumps(sim.start_data()), host="x", actions=actions
    )
    entry = {"time": 1.0, "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 4}}, "ok": True}
    RecordedAction.objects.bulk_create(
        RecordedAction(recording=rec, seq=i, time=1.0, source="user", ok=True, entry=json.dumps(entry))
        for i in range(actions)
    )
    return rec


@pytest.mark.parametrize(
    ("missing", "reason"),
    [
        ([17, 18, 19], "actions 18 to 20 of 40 are missing from the recording (seq 17 to 19)"),
        ([3, 30, 31], "action 4 of 40 is missing from the recording (seq 3), and 2 more"),
        ([39], "action 40 of 40 is missing from the recording (seq 39)"),  # the log's end
    ],
)
def test_a_gap_in_the_recorded_actions_is_named_not_replayed_over(missing, reason):
    _a_recording_of(40)
    assert len(recording.load("gappy").entries) == 40
    RecordedAction.objects.filter(recording_id="gappy", seq__in=missing).delete()
    with pytest.raises(recording.RecordingError) as caught:
        recording.load("gappy")
    assert str(caught.value) == reason


async def test_a_recording_its_replay_refuses_is_damaged_and_says_why(running_host):
    """A session recorded before a scale past the pod ceiling was refused at the door (issue 26
    §3): its restore or re-open is refused by the replay; it is listed as damaged, saying why."""
    from asgiref.sync import sync_to_async

    rec = await sync_to_async(_a_recording_of)(2)
    scale = {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 1_000_000_000}}
    entry = json.dumps({"time": 1.0, "action": scale, "ok": True})
    await RecordedAction.objects.filter(recording_id=rec.id, seq=1).aupdate(entry=entry)
    await Recording.objects.filter(id=rec.id).aupdate(state=Recording.STOPPED, virtual_time=1.0)
    client = await controlling_client()
    response = await client.post(f"/sim/{rec.id}/reopen")
    why = (
        "recorded action seq 1: scale.replicas: the scenario asks for up to 1000000000 pods at once, more than "
        "this run's ceiling of 100000 (--max-pods): found "
    )
    assert response.status_code == 400 and why in response.content.decode().replace("&#x27;", "'")
    saved = await Recording.objects.aget(id=rec.id)
    assert saved.state == Recording.DAMAGED and saved.note.startswith(why)
    page = await client.get(f"/sim/{rec.id}/")
    assert page.status_code == 404 and "is damaged and cannot be replayed" in page.content.decode()
    again = await client.post(f"/sim/{rec.id}/reopen")
    assert again.status_code == 409 and "is damaged and cannot be replayed" in again.content.decode()
    assert (await client.post(f"/sim/{rec.id}/delete", {"confirm": "yes"})).status_code == 302
    assert not await Recording.objects.filter(id=rec.id).aexists()


async def test_a_stopped_sessions_world_is_freed_at_once(running_host):
    """Its objects hold reference cycles, and under the simulations' gc policy an idle process may
    run no full collection for ever: the stop frees the world itself (no collection by the test)."""
    import weakref

    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    world = weakref.ref(running_host.sims[sim_id].sim)
    assert (await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})).status_code == 302
    deadline = time.monotonic() + PATIENCE_S  # it is done about a second after the stop
    while world() is not None:
        assert time.monotonic() < deadline, "the stopped session's Simulation is still in the process"
        await asyncio.sleep(0.01)

"""Fork from here (issue 17 §5): a running session's past up to T, replayed, then its own future;
recorded like any session; beside its original on the compare page; bad input changes nothing."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml
from django.test import AsyncClient

from controlplane.simulation import diff_reports
from dashboard import host as host_package
from dashboard.host import forks, recording
from dashboard.models import RecordedAction, Recording

from .conftest import OWN_ORIGIN, command, controlling_client, run_to, start

pytestmark = pytest.mark.django_db(transaction=True)

SCALE_TO_8 = "scale: {kind: ReplicaSet, name: web, replicas: 8}"


async def a_session_with_history(client):
    """scale-up-and-down (its file scales web to 10 at t=10, to 3 at t=12, to 5 at t=40), with a
    user's crash at t=2 and scale to 4 at t=6, run to t=20."""
    sim_id = await start(client)
    await run_to(sim_id, 2.0)
    await command(sim_id, {"op": "act", "action": {"podFault": {"selector": "app=web", "count": 1, "fault": "crash"}}})
    await run_to(sim_id, 6.0)
    await command(sim_id, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 4}}})
    await run_to(sim_id, 20.0)
    return sim_id


async def fork(client, sim_id, **fields):
    data = {"at": "", "change": "", "compare": "0", **fields}
    return await client.post(f"/sim/{sim_id}/fork", data)


def fork_id_of(response):
    assert response.status_code == 302, response.content.decode()[:2000]
    location = response["Location"]
    if location.startswith("/compare/open?"):
        return location.rsplit("b=", 1)[1]
    return location.strip("/").split("/")[1]


async def report_at(client, sim_id, t):
    response = await client.get(f"/sim/{sim_id}/report.json?at={t}")
    assert response.status_code == 200, response.content.decode()[:500]
    return response.content


async def nothing_new(running_host, before):
    assert set(running_host.sims) == before
    assert {r.id async for r in Recording.objects.all()} == before


# -- the fork --------------------------------------------------------------------------------------------
async def test_a_fork_at_a_past_moment_replays_the_same_past_and_pauses_there(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    original = running_host.sims[sim_id]
    fork_id = fork_id_of(await fork(client, sim_id, at="11"))
    forked = running_host.sims[fork_id]
    assert forked.sim.now == 11.0 and forked.mode == "paused"
    assert forked.name == "fork of scale up and down at t=11.000"
    assert original.sim.now >= 20.0  # the original is where it was
    # The same history, who acted included: the user's crash and scale, the file's scale at t=10.
    past = [e for e in original.sim.actions if e["time"] <= 11.0]
    assert forked.sim.actions == past
    assert [e["source"] for e in forked.sim.actions] == ["user", "user", "scenario"]
    # The world at T is the original's at T, byte for byte; and at an earlier moment too.
    assert await report_at(client, fork_id, "11") == await report_at(client, sim_id, "11")
    assert await report_at(client, fork_id, "7.5") == await report_at(client, sim_id, "7.5")
    live = await client.get(f"/sim/{fork_id}/report.json")
    body = b"".join([part async for part in live.streaming_content]) if live.streaming else live.content
    assert body + b"\n" == await report_at(client, sim_id, "11")  # (the runner ends its output with a newline)


async def test_a_fork_at_now_takes_the_whole_past(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    original = running_host.sims[sim_id]
    response = await fork(client, sim_id)
    fork_id = fork_id_of(response)
    forked = running_host.sims[fork_id]
    assert forked.sim.now == original.sim.now == 20.0
    assert forked.sim.actions == original.sim.actions
    assert await report_at(client, fork_id, "20") == await report_at(client, sim_id, "20")


async def test_a_change_at_t_gives_the_fork_its_own_future(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    original = running_host.sims[sim_id]
    fork_id = fork_id_of(await fork(client, sim_id, at="9.5", change=SCALE_TO_8))
    forked = running_host.sims[fork_id]
    change = forked.sim.actions[-1]
    assert change == {
        "time": 9.5,
        "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 8}},
        "ok": True,
        "source": "fork",
    }
    # Before T the two worlds are one, byte for byte; at T the fork has the change on top.
    assert await report_at(client, fork_id, "9.499") == await report_at(client, sim_id, "9.499")
    at_t = json.loads(await report_at(client, fork_id, "9.5"))
    assert at_t["actions"][:-1] == json.loads(await report_at(client, sim_id, "9.5"))["actions"]
    # Then they part: both run to t=20 (the file's scales at 10 and 12 happen in both).
    await run_to(fork_id, 20.0)
    assert original.sim.now == forked.sim.now == 20.0
    a, b = original.sim.report(), forked.sim.report()
    assert a != b
    divergences = diff_reports(a, b)["divergences"]
    assert divergences and all(d["time"] >= 9.5 for d in divergences)
    assert divergences[0]["time"] < 10.0  # the fork's own scale to 8, before the file's scale at t=10


async def test_a_config_block_is_a_config_change_at_t(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    fork_id = fork_id_of(await fork(client, sim_id, at="9", change="whatIf: {slowStart: false}\nworkers: 2"))
    forked = running_host.sims[fork_id]
    assert forked.sim.actions[-1]["action"] == {"config": {"whatIf": {"slowStart": False}, "workers": 2}}
    assert forked.sim.config["whatIf"]["slowStart"] is False and forked.sim.config["workers"] == 2
    assert running_host.sims[sim_id].sim.config["whatIf"]["slowStart"] is True


async def test_two_forks_at_once_are_made_one_after_the_other(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    first, second = await asyncio.gather(fork(client, sim_id, at="5"), fork(client, sim_id, at="15", change=SCALE_TO_8))
    ids = [fork_id_of(first), fork_id_of(second)]
    assert ids[0] != ids[1]
    assert [running_host.sims[i].sim.now for i in ids] == [5.0, 15.0]
    assert {r.parent async for r in Recording.objects.filter(id__in=ids)} == {sim_id}


async def test_the_fork_is_recorded_with_its_parent_and_time_and_its_scenario_reproduces_it(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    fork_id = fork_id_of(await fork(client, sim_id, at="11", change=SCALE_TO_8))
    forked = running_host.sims[fork_id]
    rec = await Recording.objects.aget(id=fork_id)
    assert (rec.parent, rec.forked_at, rec.state) == (sim_id, 11.0, Recording.RUNNING)
    assert rec.virtual_time == 11.0 and rec.actions == len(forked.sim.actions) == 4
    rows = [json.loads(r.entry) async for r in RecordedAction.objects.filter(recording_id=fork_id).order_by("seq")]
    assert rows == forked.sim.actions  # the whole history, in the same transaction as the time
    # Replayed from the recording alone (as after kill -9): the same world.
    stored = await recording.load_async(fork_id)
    assert stored.cut() == forked.sim.export_scenario()
    # Its scenario.yaml: named after its origin; run headless, it is the fork's report.
    text = (await client.get(f"/sim/{fork_id}/scenario.yaml")).content.decode()
    data = yaml.safe_load(text)
    assert data["name"] == "fork of scale up and down at t=11.000"
    assert f"Forked from session {sim_id} at t=11.000 s." in data["description"]
    await run_to(fork_id, 15.0)
    assert await report_at(client, fork_id, "15") == (forked.sim.report_json() + "\n").encode()


async def test_compare_on_opens_the_pair_with_the_fork_mark(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    response = await client.post(f"/sim/{sim_id}/fork", {"at": "9.5", "change": SCALE_TO_8})  # compare: default on
    assert response.status_code == 302
    fork_id = fork_id_of(response)
    assert response["Location"] == f"/compare/open?a={sim_id}&b={fork_id}"
    page = await client.get(response["Location"], follow=True)
    body = page.content.decode()
    assert page.status_code == 200
    assert "B is a fork of A at t=9.500" in body
    assert 'class="fork-mark"' in body


# -- bad input, and who may ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"at": "-1"}, "at: must be &gt;= 0"),
        ({"at": "abc"}, "at: must be a number of seconds, like 42.105"),
        ({"at": "nan"}, "at: must be a number of seconds"),
        ({"at": "1e3"}, "at: must be a number of seconds"),
        ({"at": "999"}, "at: must be &lt;= now (t=20.000)"),
        ({"change": "scale: {kind: ReplicaSet, name: web"}, "change: not YAML"),
        ({"change": "- a list"}, "change: must be a config block"),
        ({"change": "workers: 0"}, "change: config.workers: must be &gt;= 1"),
        ({"change": "scale: {kind: ReplicaSet, name: web, replicas: -1}"}, "change: scale.replicas: must be &gt;= 0"),
        ({"change": "noSuchKey: 1"}, "change: config.noSuchKey"),
        ({"change": "scale: {kind: ReplicaSet, name: nope, replicas: 3}"}, "change: refused at t=20.000"),
        # A fork that could not be replayed (restored, re-opened, reported at t) is not made.
        (
            {"change": "scale: {kind: ReplicaSet, name: web, replicas: 1000000000}"},
            "change: refused at t=20.000: scale.replicas: the session would then ask for up to 1000000000 pods",
        ),
        ({"change": "at: 3\nscale: {kind: ReplicaSet, name: web, replicas: 3}"}, "change.at: leave it out"),
    ],
)
async def test_bad_input_is_a_form_error_and_creates_nothing(running_host, fields, message):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    original = running_host.sims[sim_id]
    before, actions = set(running_host.sims), list(original.sim.actions)
    response = await fork(client, sim_id, **fields)
    body = response.content.decode()
    assert response.status_code == 400
    assert 'id="fork-errors"' in body and message in body, body[:3000]
    await nothing_new(running_host, before)
    assert original.sim.actions == actions and not original.stopped


@pytest.mark.parametrize("payload", ["<img src=x onerror=alert(1)>", '"><script>alert(1)</script>'])
async def test_the_fork_forms_errors_are_escaped(running_host, payload):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    for fields in ({"at": payload}, {"change": payload}, {"change": f"scale: {{kind: ReplicaSet, name: '{payload}'}}"}):
        response = await fork(client, sim_id, **fields)
        body = response.content.decode()
        assert response.status_code == 400 and 'id="fork-errors"' in body
        assert "<img src=x" not in body and "<script>alert" not in body, body[:3000]


async def test_a_fork_of_a_stopped_session_is_refused(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    assert (await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})).status_code == 302
    rec = await Recording.objects.aget(id=sim_id)
    sims, recordings = set(running_host.sims), {r.id async for r in Recording.objects.all()}
    response = await fork(client, sim_id, at="5")
    assert response.status_code == 409
    assert f"simulation {sim_id} is stopped: re-open it" in response.content.decode()
    assert set(running_host.sims) == sims and sim_id not in sims
    assert {r.id async for r in Recording.objects.all()} == recordings
    after = await Recording.objects.aget(id=sim_id)
    assert (after.state, after.actions, after.virtual_time) == (rec.state, rec.actions, rec.virtual_time)


async def test_a_fork_of_no_session_is_404(running_host):
    client = await controlling_client()
    assert (await fork(client, "no-such-sim")).status_code == 404


async def test_forking_needs_the_access_token(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    before = set(running_host.sims)
    response = await fork(AsyncClient(), sim_id, at="5")
    assert response.status_code == 403
    await nothing_new(running_host, before)
    # The host refuses too, whoever asks it without the right.
    result = await host_package.request(sim_id, {"op": "fork", "at": 5.0, "change": None}, control=False)
    assert result == {"ok": False, "error": "read-only: open the dashboard with its access token to fork it"}
    await nothing_new(running_host, before)


async def test_forking_needs_the_csrf_token(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    strict = AsyncClient(enforce_csrf_checks=True, **OWN_ORIGIN)  # from the page: only the CSRF token lacks
    strict.cookies = client.cookies
    before = set(running_host.sims)
    assert (await fork(strict, sim_id, at="5")).status_code == 403
    await nothing_new(running_host, before)


async def test_the_host_limit_holds_for_forks(running_host, monkeypatch):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    monkeypatch.setattr(host_package.host, "MAX_SIMULATIONS", len(running_host.sims))
    before = set(running_host.sims)
    response = await fork(client, sim_id)
    assert response.status_code == 400
    assert f"this server runs at most {len(before)} simulations" in response.content.decode()
    await nothing_new(running_host, before)


async def test_the_recordings_limit_holds_for_forks(running_host, monkeypatch):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    monkeypatch.setattr(recording, "MAX_RECORDINGS", await Recording.objects.acount())
    before = set(running_host.sims)
    response = await fork(client, sim_id)
    assert response.status_code == 400
    assert "recordings: delete stopped ones" in response.content.decode()
    await nothing_new(running_host, before)


# -- the controls ----------------------------------------------------------------------------------------
async def test_the_sim_page_has_the_fork_menu_and_a_fork_says_where_it_came_from(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    body = (await client.get(f"/sim/{sim_id}/")).content.decode()
    assert 'id="fork-menu"' in body and f'action="/sim/{sim_id}/fork"' in body
    assert 'name="compare" value="1" checked' in body and "csrfmiddlewaretoken" in body
    fork_id = fork_id_of(await fork(client, sim_id, at="11"))
    body = (await client.get(f"/sim/{fork_id}/")).content.decode()
    assert 'id="fork-note"' in body and "A fork of" in body and "at t=11.000" in body


async def test_the_fork_form_is_prefilled_from_the_query(running_host):
    client = await controlling_client()
    sim_id = await a_session_with_history(client)
    response = await client.get(f"/sim/{sim_id}/fork?at=12.5&change=workers%3A%202")
    body = response.content.decode()
    assert response.status_code == 200
    assert 'value="12.5"' in body and ">workers: 2</textarea>" in body


def test_parse_change_reads_a_config_block_or_one_action():
    assert forks.parse_change("") is None and forks.parse_change("# nothing\n") is None
    assert forks.parse_change("featureGates: {PodDeletionCost: false}") == {
        "config": {"featureGates": {"PodDeletionCost": False}}
    }
    assert forks.parse_change("config: {workers: 3}") == {"config": {"workers": 3}}
    assert forks.parse_change("podFault: {selector: app=web, count: 2, fault: crash}") == {
        "podFault": {"selector": "app=web", "count": 2, "fault": "crash"}
    }
    with pytest.raises(forks.ForkError, match=r"^change: an action needs exactly one verb$"):
        forks.parse_change("scale: {kind: ReplicaSet, name: web, replicas: 1}\nconfig: {workers: 2}")
    with pytest.raises(forks.ForkError, match=r"^change: longer than 16 KiB$"):
        forks.parse_change("#" * (forks.MAX_CHANGE + 1))

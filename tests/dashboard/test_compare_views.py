"""The compare page: starting a pair, the lock-step toolbar, the summary partial, bad input."""

from __future__ import annotations

import asyncio

import pytest
from django.test import AsyncClient

from dashboard.host import pairs
from dashboard.models import SimulationRecord

from .conftest import controlling_client

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_START_OFF = "whatIf: {slowStart: false}"


async def start_pair(client, **fields):
    data = {"scenario": "quota-slow-start", "a": SLOW_START_OFF, "b": "{}", **fields}
    response = await client.post("/compare/new", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    a_id, b_id = response["Location"].strip("/").split("/")[1:3]
    return a_id, b_id


async def wait_for(predicate, timeout=10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_the_home_page_links_to_the_compare_form(running_host):
    body = (await AsyncClient().get("/")).content.decode()
    assert 'href="/compare/new"' in body


async def test_the_form_is_prefilled_from_the_query(running_host):
    response = await AsyncClient().get("/compare/new?scenario=demo&a=workers%3A%202&b=workers%3A%201&seed=4")
    body = response.content.decode()
    assert response.status_code == 200
    assert '<option value="demo" selected>' in body
    assert ">workers: 2</textarea>" in body and ">workers: 1</textarea>" in body and 'value="4"' in body


async def test_the_form_defaults_to_the_default_pair(running_host):
    body = (await AsyncClient().get("/compare/new")).content.decode()
    assert "{&quot;controllerVersion&quot;: {&quot;replicationcontroller&quot;: &quot;v1.5&quot;}}</textarea>" in body


async def test_a_lesson_prefills_its_own_pair_and_labels(running_host):
    body = (await AsyncClient().get("/compare/new?scenario=v15-pod-metadata")).content.decode()
    assert "Config A (v1.5) <textarea" in body and "Config B (v1.36) <textarea" in body
    assert "{&quot;controllerVersion&quot;: {&quot;replicationcontroller&quot;: &quot;v1.36&quot;}}</textarea>" in body


async def test_the_home_page_offers_each_lesson_as_a_comparison(running_host):
    body = (await AsyncClient().get("/")).content.decode()
    assert 'href="/compare/new?scenario=v15-quota-wall">compare v1.5 vs v1.36</a>' in body
    assert 'href="/compare/new?scenario=demo"' not in body  # only files with a compare block
    client = await controlling_client()
    body = (await client.get("/")).content.decode()
    assert body.count("start the pair</button>") == body.count('class="lesson-compare"') >= 14


async def test_one_click_starts_a_lessons_pair_under_its_own_blocks(running_host):
    client = await controlling_client()
    response = await client.post("/compare/new", {"scenario": "v15-pod-metadata", "run": "1"})
    assert response.status_code == 302, response.content.decode()[:2000]
    a_id, b_id = response["Location"].strip("/").split("/")[1:3]
    sims = [running_host.sims[sim_id].sim for sim_id in (a_id, b_id)]
    assert [s.config["controllerVersion"]["replicationcontroller"] for s in sims] == ["v1.5", "v1.36"]
    assert a_id.startswith("v15-pod-metadata-a-") and b_id.startswith("v15-pod-metadata-b-")


async def test_start_a_pair_with_each_block_merged_over_the_scenarios_config(running_host):
    client = await controlling_client()
    a_id, b_id = await start_pair(client, seed="9", run="")
    a, b = running_host.sims[a_id], running_host.sims[b_id]
    assert a.sim.config["whatIf"]["slowStart"] is False and b.sim.config["whatIf"]["slowStart"] is True
    assert a.sim.seed == b.sim.seed == 9
    assert a.mode == b.mode == "paused"
    page = await client.get(f"/compare/{a_id}/{b_id}/")
    body = page.content.decode()
    assert page.status_code == 200
    assert "whatIf.slowStart: false" in body and "whatIf.slowStart: true" in body
    assert f'hx-get="/compare/{a_id}/{b_id}/view"' in body


async def test_step_to_moves_both_to_the_same_time_and_the_summary_shows_the_divergence(running_host):
    client = await controlling_client()
    a_id, b_id = await start_pair(client)
    a, b = running_host.sims[a_id], running_host.sims[b_id]
    await client.post(f"/compare/{a_id}/{b_id}/control", {"do": "pause"})
    target = round(max(a.sim.now, b.sim.now) + 5.0, 3)
    response = await client.post(f"/compare/{a_id}/{b_id}/control", {"do": "to", "t": str(target)})
    assert response.status_code == 302
    await wait_for(lambda: a.goal is None and b.goal is None)
    assert a.sim.now == b.sim.now == target
    view = (await client.get(f"/compare/{a_id}/{b_id}/view")).content.decode()
    assert "first divergence at t=0.100" in view
    assert "create pods (403)" in view
    assert 'id="calls-table"' in view and 'id="pods-table"' in view and "ReplicaSet/default/web" in view


async def test_running_keeps_both_worlds_in_lock_step(running_host):
    client = await controlling_client()
    a_id, b_id = await start_pair(client, run="")
    a, b = running_host.sims[a_id], running_host.sims[b_id]
    assert (await client.post(f"/compare/{a_id}/{b_id}/control", {"do": "run", "speed": "max"})).status_code == 302
    seen = []
    for _ in range(40):
        await asyncio.sleep(0.03)
        seen.append(abs(a.sim.now - b.sim.now))
    assert (await client.post(f"/compare/{a_id}/{b_id}/control", {"do": "pause"})).status_code == 302
    assert a.sim.now > 1.0 and b.sim.now > 1.0
    pair = running_host.pairs[(a_id, b_id)]
    assert max(seen) <= pairs.MAX_FAST_STEP + 1e-9  # never more than one lock-step apart
    assert max(seen) < 1.0, seen  # and in practice much closer
    # Paused: the one behind runs to the other's time, no further.
    await wait_for(lambda: not (a.goal or b.goal))
    assert pair.mode == "paused"


async def test_next_event_steps_the_earlier_world_and_aligns_the_other(running_host):
    client = await controlling_client()
    a_id, b_id = await start_pair(client, run="")
    a, b = running_host.sims[a_id], running_host.sims[b_id]
    before = a.sim.kernel.events + b.sim.kernel.events
    assert (await client.post(f"/compare/{a_id}/{b_id}/control", {"do": "event"})).status_code == 302
    await wait_for(lambda: a.goal is None and b.goal is None)
    assert a.sim.kernel.events + b.sim.kernel.events > before
    assert a.sim.now == b.sim.now


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"a": "workers: 0"}, "config A: config.workers: must be &gt;= 1"),
        ({"b": "whatIf: {slow: true}"}, "config B: config.whatIf.slow: unknown key"),
        ({"a": "[1"}, "config A: not YAML"),
        ({"b": "- 1"}, "config B: must be a mapping of config keys"),
        ({"seed": "-3"}, "seed: must be a whole number"),
        ({"scenario": "../../etc/passwd"}, "scenario: choose one from the library"),
    ],
)
async def test_bad_input_is_a_form_error_and_starts_nothing(running_host, fields, error):
    client = await controlling_client()
    before = set(running_host.sims)
    data = {"scenario": "quota-slow-start", "a": "{}", "b": "{}", **fields}
    response = await client.post("/compare/new", data)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert set(running_host.sims) == before
    assert await SimulationRecord.objects.acount() == len(before)


async def test_starting_without_the_token_is_refused(running_host):
    before = set(running_host.sims)
    response = await AsyncClient().post("/compare/new", {"scenario": "demo", "a": "{}", "b": "{}"})
    assert response.status_code == 403
    assert set(running_host.sims) == before


async def test_a_bad_toolbar_command_is_a_400_with_its_line_and_changes_nothing(running_host):
    client = await controlling_client()
    a_id, b_id = await start_pair(client, run="")
    a = running_host.sims[a_id]
    now = a.sim.now
    for fields, message in (
        ({"do": "to", "t": "nan"}, "t: must be a finite number of seconds"),
        ({"do": "to", "t": "-1"}, "t: must be later than now"),
        ({"do": "run", "speed": "7"}, "speed: must be one of"),
        ({"do": "jump"}, "pair: do must be run, pause, speed, to or event"),
    ):
        response = await client.post(f"/compare/{a_id}/{b_id}/control", fields, HTTP_HX_REQUEST="true")
        assert response.status_code == 400
        assert message in response.content.decode()
    assert a.sim.now == now and a.mode == "paused" and running_host.pairs[(a_id, b_id)].mode == "paused"


async def test_the_toolbar_needs_the_token(running_host):
    client = await controlling_client()
    a_id, b_id = await start_pair(client, run="")
    response = await AsyncClient().post(f"/compare/{a_id}/{b_id}/control", {"do": "run"})
    assert response.status_code == 403
    pair = running_host.pairs.get((a_id, b_id))
    assert pair is None or pair.mode == "paused"
    # Reading is allowed without it.
    assert (await AsyncClient().get(f"/compare/{a_id}/{b_id}/")).status_code == 200


async def test_any_two_running_simulations_open_side_by_side(running_host):
    client = await controlling_client()
    response = await client.post("/sim/new", {"scenario": "demo", "seed": "3"})
    other = response["Location"].strip("/").split("/")[1]
    opened = await client.get(f"/compare/open?a=demo&b={other}")
    assert opened.status_code == 302 and opened["Location"] == f"/compare/demo/{other}/"
    page = await client.get(opened["Location"])
    assert page.status_code == 200
    assert 'id="side-a"' in page.content.decode() and f'href="/sim/{other}/"' in page.content.decode()
    assert (await client.get("/compare/open?a=demo&b=demo")).status_code == 400
    assert (await client.get("/compare/demo/no-such-sim/")).status_code == 404


async def test_stopping_a_side_ends_the_pair(running_host):
    client = await controlling_client()
    a_id, b_id = await start_pair(client, run="")
    assert (await client.post(f"/sim/{b_id}/stop", {"confirm": "yes"})).status_code == 302
    assert (await client.get(f"/compare/{a_id}/{b_id}/view")).status_code == 404

"""why? and the complete trace through the web: /sim/<id>/why/<seq>, /sim/<id>/records.json."""

from __future__ import annotations

import json

import pytest
from django.test import AsyncClient

pytestmark = pytest.mark.django_db(transaction=True)


def paused_demo(running_host, until: float):
    hosted = running_host.sims["demo"]
    hosted.command({"op": "pause"})
    hosted.sim.run_until(until)
    return hosted


async def test_why_answers_the_chain_of_a_created_pod_back_to_the_scale(running_host):
    hosted = paused_demo(running_host, 31.0)  # the demo scales web to 6 at t=30
    log = hosted.sim.record_log
    pending = next(
        r["seq"]
        for s in range(log.last, log.base, -1)
        if (r := log.get(s))["kind"] == "pod.transition" and r["to"] == "Pending" and r["time"] >= 30
    )
    client = AsyncClient()
    answer = await client.get(f"/sim/demo/why/{pending}?format=json")
    assert answer.status_code == 200
    links = json.loads(answer.content)["links"]
    assert links[0]["seq"] == pending
    assert links[-1]["kind"] == "action.start" and "scale" in links[-1]["text"]
    assert any(link["kind"] == "sync.start" for link in links)
    panel = (await client.get(f"/sim/demo/why/{pending}")).content.decode()
    assert f'data-jump-seq="{pending}"' in panel and "action.start" in panel and 'class="why"' in panel


async def test_why_of_a_record_that_does_not_exist_is_a_clear_400(running_host):
    paused_demo(running_host, 1.0)
    answer = await AsyncClient().get("/sim/demo/why/999999999?format=json")
    assert answer.status_code == 400
    assert json.loads(answer.content)["message"].startswith("seq: must be the number of a trace record")


async def test_records_pages_through_every_record_and_filters(running_host):
    hosted = paused_demo(running_host, 25.0)
    log = hosted.sim.record_log
    client = AsyncClient()
    first = json.loads((await client.get("/sim/demo/records.json?offset=0&limit=1000")).content)
    assert first["total"] == len(log) and first["rows"][0]["seq"] == log.base
    last = json.loads((await client.get(f"/sim/demo/records.json?offset={first['total'] - 1}&limit=5")).content)
    assert [row["seq"] for row in last["rows"]] == [log.last]
    syncs = json.loads((await client.get("/sim/demo/records.json?kind=sync.start&limit=1000")).content)
    assert syncs["total"] > 0 and {row["kind"] for row in syncs["rows"]} == {"sync.start"}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=5000", "limit"),
        ("offset=-1", "offset"),
        ("offset=x", "offset"),
        ("text=" + "x" * 101, "text"),
        ("upto=-3", "upto"),
        ("upto=1e3", "upto"),
        ("upto=" + "9" * 13, "upto"),
    ],
)
async def test_records_refuses_bad_input_naming_the_field(running_host, query, field):
    paused_demo(running_host, 1.0)
    answer = await AsyncClient().get(f"/sim/demo/records.json?{query}")
    assert answer.status_code == 400
    assert json.loads(answer.content)["message"].startswith(f"{field}:")


async def test_a_pods_transitions_in_its_detail_each_have_a_why(running_host):
    hosted = paused_demo(running_host, 5.0)
    name = next(p["metadata"]["name"] for p in hosted.sim.server.objects("pods"))
    detail = (await AsyncClient().get(f"/sim/demo/pod/default/{name}")).content.decode()
    assert 'class="why" data-why-seq="' in detail


async def test_the_trace_and_why_at_a_moment_of_the_past_end_there(running_host):
    """`upto=S` (the page views the past at record S): the trace holds no record after S, filters
    included, and a why? marks each link after S as its future; bad `upto` is a 400 naming it."""
    hosted = paused_demo(running_host, 31.0)
    log = hosted.sim.record_log
    client = AsyncClient()
    upto = log.last // 2
    page = json.loads((await client.get(f"/sim/demo/records.json?upto={upto}&offset={upto - 3}&limit=50")).content)
    assert page["upto"] == upto and page["total"] == upto - log.base + 1
    assert [row["seq"] for row in page["rows"]] == [upto - 2, upto - 1, upto]
    everything = json.loads((await client.get("/sim/demo/records.json?kind=sync.start&limit=1000")).content)
    cut = json.loads((await client.get(f"/sim/demo/records.json?kind=sync.start&limit=1000&upto={upto}")).content)
    assert cut["rows"] == [row for row in everything["rows"] if row["seq"] <= upto]
    assert 0 < cut["total"] < everything["total"]
    later = log.last  # a record in the future of the moment `upto`
    why = json.loads((await client.get(f"/sim/demo/why/{later}?format=json&upto={upto}")).content)
    assert why["upto"] == upto
    assert [link["future"] for link in why["links"] if link["time"] is not None] == [
        link["seq"] > upto for link in why["links"] if link["time"] is not None
    ]
    assert why["links"][0]["future"] is True
    panel = (await client.get(f"/sim/demo/why/{later}?upto={upto}")).content.decode()
    assert f"#{later} is after the moment you are viewing (record #{upto})" in panel and "in the future" in panel
    now = (await client.get(f"/sim/demo/why/{later}")).content.decode()  # live: nothing is the future
    live = json.loads((await client.get(f"/sim/demo/why/{later}?format=json")).content)
    assert "in the future" not in now and "future" not in live["links"][0]
    bad = await client.get(f"/sim/demo/why/{later}?upto=abc")
    assert bad.status_code == 400 and json.loads(bad.content)["message"].startswith("upto:")

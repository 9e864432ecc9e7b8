"""External clients in the host (issue #18 §6): `watchFault {client}` pauses, resumes and drops
the watches of the clients whose User-Agent starts with the prefix, and no other; the connected
clients panel lists each client's requests, errors and watches with their lag."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import InMemoryChannelLayer
from django.template.loader import render_to_string

from controlplane.scenario import load_file
from controlplane.simulation import Simulation
from dashboard.host import host as host_module
from dashboard.host import k8s_ops, panels
from dashboard.host.hosted import HostedSimulation

pytestmark = pytest.mark.django_db(transaction=True)


def _text(message: dict) -> str:
    """A watch message's lines: bytes for the HTTP side (`data`), or text."""
    return message.get("data", b"").decode() + message["text"]


KOPF = "kopf/1.45.2"
KUBECTL = "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07"


def _hosted() -> HostedSimulation:
    hosted = HostedSimulation("c", Simulation(load_file("demo")), name="demo", source="demo")
    hosted.sim.run_until(3.0)
    return hosted


def _scale(hosted: HostedSimulation, replicas: int, seconds: float = 2.0) -> None:
    hosted.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": replicas}}})
    hosted.sim.run_until(hosted.sim.now + seconds)


async def _drain(layer, channel: str) -> list[dict]:
    messages = []
    while True:
        try:
            messages.append(await asyncio.wait_for(layer.receive(channel), 0.05))
        except TimeoutError:
            return messages


def _events(messages: list[dict]) -> list[dict]:
    return [json.loads(line) for m in messages for line in _text(m).splitlines()]


async def _watch(hosted, layer, client: str) -> str:
    channel = await layer.new_channel()
    answer = k8s_ops.READS["k8s_watch"](hosted, {"channel": channel, "resource": "pods", "client": client})
    assert answer["code"] == 200
    return channel


@pytest.fixture
def layer(monkeypatch):
    layer = InMemoryChannelLayer()
    monkeypatch.setattr(k8s_ops, "get_channel_layer", lambda: layer)
    return layer


async def test_a_client_watch_drop_ends_only_that_clients_watch_with_410(layer):
    hosted = _hosted()
    kopf, kubectl = await _watch(hosted, layer, KOPF), await _watch(hosted, layer, KUBECTL)
    hosted.command({"op": "act", "action": {"watchFault": {"resource": "pods", "fault": "drop", "client": "kopf"}}})
    _scale(hosted, 5)
    await k8s_ops.publish(hosted)
    dropped = await _drain(layer, kopf)
    assert dropped[-1]["end"] and dropped[-1]["error"]
    error = _events(dropped)[-1]
    assert error["type"] == "ERROR" and error["object"]["code"] == 410
    assert "watchFault (client kopf)" in error["object"]["message"]
    kept = _events(await _drain(layer, kubectl))
    assert kept and all(e["type"] != "ERROR" for e in kept)


async def test_a_client_watch_pause_holds_events_and_resume_sends_them_in_order(layer):
    hosted = _hosted()
    start = hosted.sim.server.revision
    kopf = await _watch(hosted, layer, KOPF)
    hosted.command({"op": "act", "action": {"watchFault": {"resource": "*", "fault": "pause", "client": "kopf/"}}})
    _scale(hosted, 6)
    await k8s_ops.publish(hosted)
    assert await _drain(layer, kopf) == []
    row = next(c for c in k8s_ops.clients(hosted) if c["userAgent"] == KOPF)
    assert row["watches"][0]["paused"] and row["watches"][0]["lag"] == hosted.sim.server.revision - start
    assert panels.faults(hosted)["client_paused"] == [{"client": "kopf/", "resource": "*"}]
    # A resume lifts the pauses it names: this prefix's `*` pause is not lifted by one of pods.
    hosted.command({"op": "act", "action": {"watchFault": {"resource": "pods", "fault": "resume", "client": "kopf/"}}})
    await k8s_ops.publish(hosted)
    assert await _drain(layer, kopf) == []
    hosted.command({"op": "act", "action": {"watchFault": {"resource": "*", "fault": "resume", "client": "kopf/"}}})
    _scale(hosted, 2)
    await k8s_ops.publish(hosted)
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in _events(await _drain(layer, kopf))]
    expected = [rv for rv, _, resource, _, _ in hosted.sim.server.events_after(start) if resource == "pods"]
    assert rvs == expected and len(rvs) > 10
    assert panels.faults(hosted)["client_paused"] == []


async def test_the_clients_panel_counts_requests_and_errors_per_user_agent(layer):
    hosted = _hosted()
    await _watch(hosted, layer, KOPF)
    host_module._note_client(hosted, {"op": "k8s_list", "resource": "pods", "client": KOPF}, {"code": 200})
    bad = {"op": "act", "client": KOPF, "action": {"request": {"verb": "patch", "resource": "pods"}}}
    host_module._note_client(hosted, bad, {"ok": True, "response": [500, {}]})
    host_module._note_client(hosted, {"op": "k8s_renew", "client": KOPF}, {"alive": True})
    host_module._note_client(hosted, {"op": "k8s_get", "resource": "pods", "client": KUBECTL}, {"code": 404})
    rows = {r["userAgent"]: r for r in panels.clients(hosted)["rows"]}
    assert (rows[KOPF]["requests"], rows[KOPF]["errors"], rows[KOPF]["lastError"]) == (2, 1, "500 patch pods")
    assert rows[KOPF]["rate"] == 0.2 and [w["resource"] for w in rows[KOPF]["watches"]] == ["pods"]
    assert (rows[KUBECTL]["requests"], rows[KUBECTL]["errors"]) == (1, 1)
    html = render_to_string(panels.template_of("clients"), panels.context(hosted, "clients"))
    assert 'id="clients"' in html and KOPF in html and "watch <b>pods</b>" in html


async def test_a_watch_opened_after_a_client_fault_meets_only_the_pauses_still_in_force(layer):
    hosted = _hosted()
    for fault in ("drop", "pause"):
        body = {"resource": "pods", "fault": fault, "client": "kopf"}
        hosted.command({"op": "act", "action": {"watchFault": body}})
    kopf = await _watch(hosted, layer, KOPF)  # the first watch of this simulation: its hub is new
    _scale(hosted, 5)
    await k8s_ops.publish(hosted)
    assert await _drain(layer, kopf) == []  # paused, not dropped by the drop injected before it came
    hosted.command({"op": "act", "action": {"watchFault": {"resource": "pods", "fault": "resume", "client": "kopf"}}})
    await k8s_ops.publish(hosted)
    events = _events(await _drain(layer, kopf))
    assert events and all(e["type"] != "ERROR" for e in events)

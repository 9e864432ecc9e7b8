"""Watch delivery in the host: overlapping publishes neither drop nor reorder events; a full
channel delays events (never drops them); a watcher too far behind gets 410 Expired, then the end."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import InMemoryChannelLayer

from controlplane.scenario import load_file
from controlplane.simulation import Kube, Simulation
from dashboard.host import k8s_ops
from dashboard.host.hosted import HostedSimulation

pytestmark = pytest.mark.django_db(transaction=True)


class YieldingLayer(InMemoryChannelLayer):
    """The in-memory layer, but a send lets others run first (as a send to Redis does)."""

    slow = 0  # loop turns the next send takes (then one)

    async def send(self, channel, message):
        turns, self.slow = self.slow, 0
        for _ in range(turns + 1):
            await asyncio.sleep(0)
        await super().send(channel, message)


def _text(message: dict) -> str:
    """A watch message's lines: bytes for the HTTP side (`data`), or text."""
    return message.get("data", b"").decode() + message["text"]


def _hosted() -> HostedSimulation:
    return HostedSimulation("w", Simulation(load_file("demo")), name="demo", source="demo")


def _churn(hosted: HostedSimulation, step: int, seconds: float) -> None:
    """Scale web up and down (pods come and go), then run `seconds` of simulation."""
    replicas = 8 if step % 2 else 2
    hosted.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": replicas}}})
    hosted.sim.run_until(hosted.sim.now + seconds)


def _expected(hosted: HostedSimulation, since: int) -> list[int]:
    return [rv for rv, _, resource, _, _ in hosted.sim.server.events_after(since) if resource == "pods"]


async def _drain(layer, channel: str) -> list[dict]:
    messages = []
    while True:
        try:
            messages.append(await asyncio.wait_for(layer.receive(channel), 0.05))
        except TimeoutError:
            return messages


def _rvs(messages: list[dict]) -> list[int]:
    lines = [json.loads(line) for m in messages for line in _text(m).splitlines()]
    return [int(e["object"]["metadata"]["resourceVersion"]) for e in lines if e["type"] != "ERROR"]


async def test_overlapping_publishes_neither_drop_nor_reorder_events(monkeypatch):
    layer = YieldingLayer()
    monkeypatch.setattr(k8s_ops, "get_channel_layer", lambda: layer)
    hosted = _hosted()
    start = hosted.sim.server.revision
    channels = [await layer.new_channel() for _ in range(4)]
    for channel in channels:
        assert k8s_ops.READS["k8s_watch"](hosted, {"channel": channel, "resource": "pods"})["code"] == 200
    for step in range(6):
        _churn(hosted, step, 1.0)
        # The drive loop's publish is sending to the first watchers when a command's publish
        # comes with newer events.
        layer.slow = 20  # its first send is slow: the second publish overtakes it
        first = asyncio.ensure_future(k8s_ops.publish(hosted))
        await asyncio.sleep(0)
        _churn(hosted, step + 1, 0.5)
        await k8s_ops.publish(hosted)
        await first
    expected = _expected(hosted, start)
    assert len(expected) > 50
    for channel in channels:
        assert _rvs(await _drain(layer, channel)) == expected


async def test_a_publish_waits_for_one_round_not_for_every_later_publish(monkeypatch):
    """The listener's publish must not be kept sending by a simulation that keeps publishing
    (the command listener would answer nobody); the events still all arrive, in order."""
    layer = YieldingLayer()
    monkeypatch.setattr(k8s_ops, "get_channel_layer", lambda: layer)
    hosted = _hosted()
    start = hosted.sim.server.revision
    channels = [await layer.new_channel() for _ in range(4)]
    for channel in channels:
        k8s_ops.READS["k8s_watch"](hosted, {"channel": channel, "resource": "pods"})
    running = True

    async def drive():  # publishes after every slice, as the host's drive loop does
        step = 0
        while running:
            step += 1
            _churn(hosted, step, 0.2)
            await k8s_ops.publish(hosted)
            await asyncio.sleep(0)

    _churn(hosted, 0, 1.0)
    command = asyncio.ensure_future(k8s_ops.publish(hosted))  # a command's publish: it sends
    driving = asyncio.ensure_future(drive())
    await asyncio.wait_for(command, 5)
    running = False
    await driving
    hub = Kube.of(hosted).hub
    for _ in range(500):
        if not hub.sending:
            break
        await asyncio.sleep(0.01)
    expected = _expected(hosted, start)
    for channel in channels:
        assert _rvs(await _drain(layer, channel)) == expected


async def _slow_reader(monkeypatch, steps: int):
    """A pod watcher whose channel holds 2 messages and who reads only every 10 steps of churn
    (each step published): the simulation, its revision before, the layer, the channel and what
    the reader got."""
    layer = InMemoryChannelLayer(capacity=2)
    monkeypatch.setattr(k8s_ops, "get_channel_layer", lambda: layer)
    hosted = _hosted()
    start = hosted.sim.server.revision
    channel = await layer.new_channel()
    k8s_ops.READS["k8s_watch"](hosted, {"channel": channel, "resource": "pods"})
    received: list[dict] = []
    for step in range(1, steps + 1):
        _churn(hosted, step, 0.5)
        await k8s_ops.publish(hosted)  # the reader does not read: its channel fills up
        if step % 10 == 0:
            received += await _drain(layer, channel)
    return hosted, start, layer, channel, received


async def test_a_full_channel_delays_events_and_never_drops_them(monkeypatch):
    hosted, start, layer, channel, received = await _slow_reader(monkeypatch, 20)
    while True:  # the reader reads on; each publish (nothing new) sends more of what waited
        await k8s_ops.publish(hosted)
        more = await _drain(layer, channel)
        if not more:
            break
        received += more
    assert not any(m["end"] for m in received)
    assert _rvs(received) == _expected(hosted, start)


async def test_a_watcher_too_far_behind_gets_410_expired_then_the_end(monkeypatch):
    monkeypatch.setattr(k8s_ops, "WATCH_BACKLOG_BYTES", 1000, raising=False)
    hosted, start, layer, channel, received = await _slow_reader(monkeypatch, 40)
    received += await _drain(layer, channel)
    last = received[-1]
    assert last["end"] and last["error"]
    error = json.loads(_text(last))
    assert error["type"] == "ERROR" and error["object"]["code"] == 410 and error["object"]["reason"] == "Expired"
    assert "fell behind" in error["object"]["message"]
    # Before the error, a gapless prefix of the events, in order; nothing after it.
    rvs = _rvs(received)
    assert rvs == _expected(hosted, start)[: len(rvs)]
    assert not any(m["end"] for m in received[:-1])
    assert channel not in Kube.of(hosted).hub.watchers


async def _http_watch(path: str, until) -> list[dict]:
    """A watch request through the whole ASGI application: the body's events, once it ended
    (`until(events)` runs between reads)."""
    from dashboard.asgi import application

    from .conftest import TOKEN

    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"watch=true",
        "headers": [(b"authorization", f"Bearer {TOKEN}".encode())],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 1),
    }
    body = asyncio.Queue()
    events: list[dict] = []

    async def receive():
        await asyncio.Event().wait()  # the client never goes away

    async def send(message):
        await body.put(message)

    app = asyncio.ensure_future(application(scope, receive, send))
    text = b""
    try:
        while True:
            message = await asyncio.wait_for(body.get(), 10)
            if message["type"] != "http.response.body":
                continue
            text += message.get("body", b"")
            *lines, text = text.split(b"\n")
            events += [json.loads(line) for line in lines]
            if not message.get("more_body"):
                return events
            await until(events)
    finally:
        app.cancel()


async def test_a_stream_whose_watcher_the_host_dropped_ends_with_410_expired(running_host, monkeypatch):
    from dashboard.k8s import api

    monkeypatch.setattr(api, "RENEW_EVERY", 0.3)
    hosted = running_host.sims["demo"]

    async def lose_the_watcher(events):
        Kube.of(hosted).hub.watchers.clear()  # its lease ran out while the stream could not renew

    events = await _http_watch("/api/v1/namespaces/default/pods", lose_the_watcher)
    assert events[-1]["type"] == "ERROR", events[-1]
    assert events[-1]["object"]["code"] == 410 and events[-1]["object"]["reason"] == "Expired"


async def test_watchers_with_the_same_events_share_one_encoded_message(monkeypatch):
    """The HTTP side's watches that print the same events alike get one joined and encoded
    message, not a copy each (20 watchers of every pod used to cost 20 joins and encodes); one
    that sees other events gets its own."""
    layer = InMemoryChannelLayer()
    monkeypatch.setattr(k8s_ops, "get_channel_layer", lambda: layer)
    hosted = _hosted()
    alike = [await layer.new_channel() for _ in range(3)]
    other = await layer.new_channel()
    for channel in alike:
        assert k8s_ops.READS["k8s_watch"](hosted, {"channel": channel, "resource": "pods"})["code"] == 200
    watch = {"channel": other, "resource": "pods", "labelSelector": "app=web"}
    assert k8s_ops.READS["k8s_watch"](hosted, watch)["code"] == 200
    _churn(hosted, 1, 2.0)
    await k8s_ops.publish(hosted)
    firsts = [(await _drain(layer, channel))[0] for channel in alike]
    assert firsts[0]["data"] and all(m["data"] is firsts[0]["data"] for m in firsts)
    mine = (await _drain(layer, other))[0]
    assert mine["data"] is not firsts[0]["data"] and mine["data"] != firsts[0]["data"]
    assert _rvs([mine]) and set(_rvs([mine])) < set(_rvs(firsts[:1]))

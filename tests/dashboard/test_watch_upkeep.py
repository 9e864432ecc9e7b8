"""A watch's own machinery -- its registration, its lease renewals, its end -- is never refused by
the limit on requests (a full command channel is "busy": 429), and a watch never goes silent:
it keeps every event, or ends with an ERROR event (410 Expired when its lease could not be
renewed in time, 500 InternalError for a failure on the server), then the end of its body.
(A live server under load, both cores busy: tests/kubectl/test_watch_load.py.)"""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

from controlplane.simulation import Kube
from dashboard.host import command_channel, k8s_ops, watch_channel
from dashboard.host import host as host_module
from dashboard.k8s import api

from .conftest import TOKEN
from .test_load import demo

pytestmark = pytest.mark.django_db(transaction=True)
PATH = "/apis/apps/v1/namespaces/default/replicasets"
WAIT = 10.0  # seconds, at most, for anything the test waits for (it fails, rather than hangs)


class Refusals:
    """The channel layer's `send`, except that the channels in `full` are full (ChannelFull),
    counting the watch commands sent to the demo's channels by op."""

    def __init__(self, layer) -> None:
        self.send = layer.send
        self.full: set[str] = set()
        self.sent: dict[str, int] = {}

    async def __call__(self, channel, message):
        op = (message.get("cmd") or {}).get("op")
        if channel in self.full:
            raise ChannelFull()
        if op in ("k8s_watch", "k8s_renew", "k8s_unwatch") and channel == command_channel("demo"):
            self.sent[op] = self.sent.get(op, 0) + 1
        return await self.send(channel, message)


@pytest.fixture
def refusals(running_host, monkeypatch):
    layer = get_channel_layer()
    refusing = Refusals(layer)
    monkeypatch.setattr(layer, "send", refusing)
    return refusing


class Stream:
    """A watch request through the whole ASGI application, read as the client reads it."""

    def __init__(self, path: str, query: str = "watch=true", reading: asyncio.Event | None = None) -> None:
        """`reading`: while it is clear, the client reads nothing (the server's writes wait)."""
        from dashboard.asgi import application

        scope = {
            "type": "http",
            "method": "GET",
            "path": path,
            "query_string": query.encode(),
            "headers": [(b"authorization", f"Bearer {TOKEN}".encode())],
            "http_version": "1.1",
            "scheme": "http",
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 1),
        }
        self.messages: asyncio.Queue[dict] = asyncio.Queue()
        self.status: int | None = None
        self.events: list[dict] = []
        self.ended = False  # the body's last message came (more_body false)
        self._text = b""
        self.reading = reading
        self.app = asyncio.ensure_future(application(scope, self._receive, self._send))

    async def _send(self, message: dict) -> None:
        if self.reading is not None:
            await self.reading.wait()
        await self.messages.put(message)

    @staticmethod
    async def _receive():
        await asyncio.Event().wait()  # the client never goes away

    async def read(self) -> None:
        """One message of the answer (the test fails if none comes within WAIT)."""
        message = await asyncio.wait_for(self.messages.get(), WAIT)
        if message["type"] == "http.response.start":
            self.status = message["status"]
            return
        self._text += message.get("body", b"")
        *lines, self._text = self._text.split(b"\n")
        self.events += [json.loads(line) for line in lines]
        self.ended = not message.get("more_body")

    async def read_until(self, done) -> None:
        while not done():
            assert not self.ended, self.events[-3:]
            await self.read()

    async def close(self) -> None:
        self.app.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.app


async def until(condition) -> None:
    loop = asyncio.get_running_loop()
    ends = loop.time() + WAIT
    while not condition():
        assert loop.time() < ends, "the state never came"
        await asyncio.sleep(0.01)


async def scale(hosted, replicas: int) -> None:
    """A change to the ReplicaSet `web` (a MODIFIED event), made in the host: not a command."""
    action = {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": replicas}}
    assert hosted.command({"op": "act", "action": action})["ok"]
    await k8s_ops.publish(hosted)


def modified_to(stream: Stream, replicas: int) -> bool:
    return any(e["type"] == "MODIFIED" and e["object"]["spec"]["replicas"] == replicas for e in stream.events)


async def test_a_watch_renews_its_lease_and_gets_its_events_while_the_command_channel_is_full(
    running_host, refusals, monkeypatch
):
    monkeypatch.setattr(api, "RENEW_EVERY", 0.05)
    hosted = await demo(running_host)
    renewed = []  # the renewals the host answered
    renew = host_module.READS["k8s_renew"]
    monkeypatch.setitem(host_module.READS, "k8s_renew", lambda h, cmd: renewed.append(renew(h, cmd)) or renewed[-1])
    stream = Stream(PATH)
    try:
        await stream.read_until(lambda: stream.events)  # the initial ADDED events: it is open
        refusals.full.add(command_channel("demo"))  # every request is "busy" from now on
        await until(lambda: len(renewed) >= 5)
        for replicas in (5, 6, 7):
            await scale(hosted, replicas)
        await stream.read_until(lambda: modified_to(stream, 7))
    finally:
        await stream.close()
    assert stream.status == 200 and not any(e["type"] == "ERROR" for e in stream.events)
    assert [e["object"]["spec"]["replicas"] for e in stream.events if e["type"] == "MODIFIED"][-3:] == [5, 6, 7]
    assert all(answer["alive"] for answer in renewed)
    assert refusals.sent.get("k8s_renew", 0) == 0  # none went to the command channel


async def test_a_watch_opens_and_ends_while_the_command_channel_is_full(running_host, refusals):
    hosted = await demo(running_host)
    refusals.full.add(command_channel("demo"))
    stream = Stream(PATH, "watch=true&timeoutSeconds=1")
    await stream.read_until(lambda: stream.ended)
    await stream.app
    assert stream.status == 200 and stream.events and stream.events[0]["type"] == "ADDED"
    await until(lambda: not Kube.of(hosted).hub.watchers)  # its end reached the host too


async def test_a_lease_that_cannot_be_renewed_in_time_ends_the_watch_with_410_expired(
    running_host, refusals, monkeypatch
):
    monkeypatch.setattr(api, "RENEW_EVERY", 0.05)
    monkeypatch.setattr(api, "RENEW_WAIT", 0.3)
    await demo(running_host)
    stream = Stream(PATH)
    try:
        await stream.read_until(lambda: stream.events)
        refusals.full.add(watch_channel("demo"))  # the watch machinery's own channel stays full
        await stream.read_until(lambda: stream.ended)
    finally:
        await stream.close()
    error = stream.events[-1]
    assert error["type"] == "ERROR" and error["object"]["code"] == 410 and error["object"]["reason"] == "Expired"
    assert "lease could not be renewed" in error["object"]["message"]


async def test_a_watch_that_fails_midway_ends_with_an_error_event_and_its_body_ends(running_host, monkeypatch):
    hosted = await demo(running_host)
    stream = Stream(PATH)
    await stream.read_until(lambda: stream.events)
    layer = get_channel_layer()
    receive = layer.receive

    async def broken(channel):
        if channel in Kube.of(hosted).hub.watchers:
            raise RuntimeError("the channel layer broke")
        return await receive(channel)

    monkeypatch.setattr(layer, "receive", broken)
    await scale(hosted, 5)  # wakes the stream's receive: the next one fails
    await stream.read_until(lambda: stream.ended)
    await stream.app  # the application returned: nothing raised after the answer started
    error = stream.events[-1]
    assert error["type"] == "ERROR" and error["object"]["code"] == 500, error
    assert error["object"]["reason"] == "InternalError"


async def test_a_list_whose_parts_stop_coming_ends_its_body(running_host, monkeypatch):
    from dashboard.host import reads

    await demo(running_host)
    monkeypatch.setattr(reads, "CHUNK", 20)  # the list comes in several parts
    receive = reads.receive
    parts = []

    async def stalled(layer, channel, timeout):
        parts.append(channel)
        if len(parts) > 2:
            raise LookupError("the simulation did not answer")
        return await receive(layer, channel, timeout)

    monkeypatch.setattr(host_module.reads, "receive", stalled)
    stream = Stream("/api/v1/pods", "")
    await stream.read_until(lambda: stream.ended)
    with pytest.raises(LookupError):  # (then Daphne logs it; it can start no second answer)
        await stream.app
    assert stream.status == 200


async def test_events_the_channel_layer_dropped_end_the_watch_with_410_expired(running_host, monkeypatch):
    """A channel layer drops what waited in a channel longer than its expiry (60 s in memory):
    a stream that slow must not lose the events without a word, also when they were the last."""
    from dashboard.host import request

    monkeypatch.setattr(api, "RENEW_EVERY", 0.05)
    hosted = await demo(running_host)
    reading = asyncio.Event()
    reading.set()
    stream = Stream(PATH, reading=reading)
    await stream.read_until(lambda: stream.events)
    (channel,) = Kube.of(hosted).hub.watchers
    layer = get_channel_layer()
    reading.clear()  # the client stops reading: the stream's next write waits, its channel fills
    monkeypatch.setattr(layer, "expiry", 0.2)
    for replicas in (5, 6, 7):
        await scale(hosted, replicas)
    assert layer.channels.get(channel)

    async def dropped() -> bool:
        await request("demo", {"op": "status"})  # (a receive drops the expired messages)
        return not layer.channels.get(channel)

    for _ in range(1000):
        if await dropped():
            break
        await asyncio.sleep(0.01)
    monkeypatch.setattr(layer, "expiry", 60)
    reading.set()
    try:
        await stream.read_until(lambda: stream.ended)  # no more events come: the heartbeat tells
    finally:
        await stream.close()
    error = stream.events[-1]
    assert error["type"] == "ERROR" and error["object"]["code"] == 410 and error["object"]["reason"] == "Expired"
    assert "longer than the server keeps them" in error["object"]["message"]
    assert not modified_to(stream, 7)


async def test_what_a_slow_reader_has_not_read_waits_in_the_backlog_not_in_its_channel(running_host):
    """The layer drops what waits in a channel too long; the host's backlog drops nothing: a
    watch's channel holds 16 messages, the rest of its events wait in the backlog."""
    hosted = await demo(running_host)
    reading = asyncio.Event()
    reading.set()
    stream = Stream(PATH, reading=reading)
    await stream.read_until(lambda: stream.events)
    (channel,) = Kube.of(hosted).hub.watchers
    watcher = Kube.of(hosted).hub.watchers[channel]
    layer = get_channel_layer()
    reading.clear()
    try:
        for replicas in range(2, 40):  # a message each
            await scale(hosted, replicas)
        assert channel.startswith(api.WATCHER_CHANNEL)
        assert layer.channels[channel].qsize() == 16 and watcher.backlog
        reading.set()
        await stream.read_until(lambda: modified_to(stream, 39))
    finally:
        await stream.close()
    assert not any(e["type"] == "ERROR" for e in stream.events)

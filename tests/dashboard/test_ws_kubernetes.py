"""The websocket's Kubernetes verbs and its hostile messages: the verbs need the token as on the
HTTP API, a websocket watch reaches its own viewer only and a viewer holds a bounded number, and
JSON nested past the parser's depth gets the documented error on a connection that stays."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from channels.layers import get_channel_layer

from controlplane.session import kube
from controlplane.simulation import Kube
from dashboard.host import k8s_ops
from dashboard.host import request as host_request

from .test_consumers import command, connect, receive

pytestmark = pytest.mark.django_db(transaction=True)


def _text(message: dict) -> str:
    """A watch message's lines: bytes for the HTTP side (`data`), or text."""
    return message.get("data", b"").decode() + message["text"]


READ_ONLY = "read-only: open the dashboard with its access token to control it"
SCALE = {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 6}}}


async def test_a_read_only_viewer_gets_an_error_for_every_kubernetes_verb(running_host):
    comm, connected, _ = await connect(token=None)
    assert connected and (await receive(comm, "hello"))["control"] is False
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}
    arguments = {"resource": "pods", "namespace": "default", "name": "x", "watch": 1, "channel": "x"}
    arguments["request"] = {"client": "c", "verb": "create", "resource": "pods", "namespace": "default", "body": pod}
    assert set(k8s_ops.READS) == {
        "k8s_get",
        "k8s_list",
        "k8s_dryrun",
        "k8s_watch",
        "k8s_unwatch",
        "k8s_renew",
        "k8s_metrics",
        "k8s_log",
        "k8s_health",
    }
    for n, op in enumerate(sorted(k8s_ops.READS)):
        assert await command(comm, {"op": op, **arguments}, msg_id=n) == {"ok": False, "error": READ_ONLY}, op
    assert not Kube.of(running_host.sims["demo"]).hub.watchers
    await comm.disconnect()


async def test_a_viewers_watch_goes_to_that_viewer_never_to_a_channel_it_names(running_host):
    layer = get_channel_layer()
    victim = await layer.new_channel()  # somebody else's channel: an HTTP watch, say
    answer = await host_request("demo", {"op": "k8s_watch", "channel": victim, "resource": "replicasets"}, control=True)
    assert answer["ok"] and answer["code"] == 200
    comm, connected, _ = await connect()
    assert connected
    watch = {"op": "k8s_watch", "channel": victim, "resource": "replicasets", "watch": "rs"}
    result = await command(comm, watch)
    assert result["ok"] and result["code"] == 200 and '"name":"web"' in result["lines"]
    # It cannot end or renew the other watch either: it names only its own.
    assert (await command(comm, {"op": "k8s_unwatch", "channel": victim}, msg_id=2))["ok"]
    assert (await command(comm, {"op": "k8s_renew", "channel": victim}, msg_id=3)) == {"ok": True, "alive": False}
    assert (await host_request("demo", {"op": "k8s_renew", "channel": victim}, control=True))["alive"]
    assert (await command(comm, SCALE, msg_id=4))["ok"]
    lines: list[dict] = []
    while not any(line["object"]["spec"]["replicas"] == 6 for line in lines):
        event = await receive(comm, "watch")
        assert event["watch"] == "rs" and event["end"] is False
        lines += [json.loads(line) for line in _text(event).splitlines()]
    scaled = next(line for line in lines if line["object"]["spec"]["replicas"] == 6)
    # The victim's own watch got the change once, and nothing of the viewer's watch.
    received = [await asyncio.wait_for(layer.receive(victim), 2)]
    with pytest.raises(TimeoutError):
        while True:
            received.append(await asyncio.wait_for(layer.receive(victim), 0.5))
    assert all("watch" not in message for message in received)
    texts = "".join(_text(message) for message in received)
    rvs = [json.loads(line)["object"]["metadata"]["resourceVersion"] for line in texts.splitlines()]
    assert rvs.count(scaled["object"]["metadata"]["resourceVersion"]) == 1
    await comm.disconnect()


async def test_a_viewer_holds_at_most_four_watches_and_they_end_when_it_leaves(running_host):
    comm, connected, _ = await connect()
    assert connected
    hub = Kube.of(running_host.sims["demo"]).hub
    for n in range(4):
        assert (await command(comm, {"op": "k8s_watch", "resource": "pods", "watch": n}, msg_id=n))["ok"]
    fifth = await command(comm, {"op": "k8s_watch", "resource": "pods", "watch": 99}, msg_id=10)
    assert fifth == {"ok": False, "error": "a viewer may hold at most 4 watches: end one (k8s_unwatch) first"}
    # Watching again under a name it holds replaces that watch; ending one makes room.
    assert (await command(comm, {"op": "k8s_watch", "resource": "nodes", "watch": 0}, msg_id=11))["ok"]
    assert (await command(comm, {"op": "k8s_unwatch", "watch": 1}, msg_id=12))["ok"]
    assert (await command(comm, {"op": "k8s_watch", "resource": "pods", "watch": 99}, msg_id=13))["ok"]
    bad = await command(comm, {"op": "k8s_watch", "resource": "pods", "watch": "a|b"}, msg_id=14)
    assert bad["ok"] is False and bad["error"].startswith("watch: ")
    other, connected, _ = await connect()
    assert (await command(other, {"op": "k8s_watch", "resource": "pods", "watch": 0}, msg_id=1))["ok"]
    assert len(hub.watchers) == 4 + 1
    await comm.disconnect()
    for _ in range(100):
        if len(hub.watchers) == 1:
            break
        await asyncio.sleep(0.02)
    assert [w.viewer for w in hub.watchers.values()] == [next(iter(hub.watchers.values())).viewer]
    assert len(hub.watchers) == 1
    await other.disconnect()


@pytest.mark.parametrize("depth", [1800, 101])
async def test_deeply_nested_json_gets_the_error_reply_and_the_connection_stays(running_host, caplog, depth):
    comm, connected, _ = await connect()
    assert connected
    await receive(comm, "state")
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        await comm.send_to(text_data="[" * depth + "]" * depth)  # 1800: 3.6 KB, deeper than json parses
        error = await receive(comm, "error")
        assert error["error"] == "messages must nest at most 100 levels"
        assert (await command(comm, {"op": "status"}, msg_id=5))["ok"]  # still open, still answering
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    await comm.disconnect()


async def test_a_simulation_serves_a_bounded_number_of_watches_then_too_many_requests(running_host, monkeypatch):
    while "demo" not in running_host.sims:
        await asyncio.sleep(0.01)
    monkeypatch.setattr(kube, "MAX_WATCHERS", 2)
    layer = get_channel_layer()
    channels = [await layer.new_channel() for _ in range(3)]
    watch = {"op": "k8s_watch", "resource": "pods", "namespace": "default"}
    for channel in channels[:2]:
        assert "lines" in await host_request("demo", {**watch, "channel": channel}, control=True)
    refused = await host_request("demo", {**watch, "channel": channels[2]}, control=True)
    status = json.loads(refused["body"])
    assert refused["code"] == 429 and status["reason"] == "TooManyRequests"
    assert "2 watches" in status["message"]
    # A watch that ends frees its place.
    await host_request("demo", {"op": "k8s_unwatch", "channel": channels[0]}, control=True)
    assert "lines" in await host_request("demo", {**watch, "channel": channels[2]}, control=True)

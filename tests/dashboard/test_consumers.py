"""The simulation websocket (WebsocketCommunicator against the whole ASGI application): access,
state on connect, every command, junk, and flow control for a viewer that falls behind."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from dashboard.consumers import WINDOW

from .conftest import ORIGIN, TOKEN

pytestmark = pytest.mark.django_db(transaction=True)


async def connect(path="/ws/sim/demo/", token=TOKEN, headers=ORIGIN):
    query = f"?token={token}" if token else ""
    comm = WebsocketCommunicator(application, path + query, headers=headers)
    connected, code = await comm.connect(timeout=5)
    return comm, connected, code


async def receive(comm, kind, timeout=5.0):
    """The next message of `kind`, skipping others (frames keep coming while the demo runs)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        message = json.loads(await comm.receive_from(timeout=max(0.01, deadline - loop.time())))
        if message["type"] == kind:
            return message


async def command(comm, cmd, msg_id=1):
    await comm.send_to(text_data=json.dumps({"type": "cmd", "id": msg_id, "cmd": cmd}))
    while True:
        message = await receive(comm, "reply")
        if message["id"] == msg_id:
            return message["result"]


async def test_a_viewer_with_the_token_gets_hello_then_the_full_state(running_host):
    comm, connected, _ = await connect()
    assert connected
    hello = await receive(comm, "hello")
    assert hello == {"type": "hello", "control": True, "sim": "demo"}
    state = await receive(comm, "state")
    assert {"owners", "nodes", "queue-replicaset", "informers"} <= set(state["panels"])
    assert state["status"]["id"] == "demo" and state["status"]["mode"] == "running"
    assert "web" in state["panels"]["owners"] and "legacy" in state["panels"]["owners"]
    await comm.disconnect()


async def test_without_the_token_a_viewer_may_watch_but_not_control(running_host):
    comm, connected, _ = await connect(token=None)
    assert connected
    assert (await receive(comm, "hello"))["control"] is False
    await receive(comm, "state")
    result = await command(comm, {"op": "pause"})
    assert result == {"ok": False, "error": "read-only: open the dashboard with its access token to control it"}
    assert running_host.sims["demo"].mode == "running"
    wrong, connected, _ = await connect(token="guess")
    assert (await receive(wrong, "hello"))["control"] is False
    await comm.disconnect()
    await wrong.disconnect()


async def test_a_foreign_origin_is_refused(running_host):
    _, connected, _ = await connect(headers=[(b"origin", b"http://evil.example")])
    assert not connected
    _, connected, _ = await connect(headers=[])
    assert not connected


async def test_an_unknown_simulation_or_path_is_closed_cleanly(running_host):
    _, connected, code = await connect(path="/ws/sim/nope/")
    assert not connected and code == 4404
    _, connected, code = await connect(path="/ws/elsewhere/")
    assert not connected and code == 4404


async def test_every_command_answers(running_host):
    comm, _, _ = await connect()
    await receive(comm, "state")
    hosted = running_host.sims["demo"]
    assert (await command(comm, {"op": "pause"}))["mode"] == "paused"
    assert (await command(comm, {"op": "speed", "speed": "10"}))["speed"] == 10.0
    assert (await command(comm, {"op": "step", "what": "event"}))["ok"] is True
    assert (await command(comm, {"op": "step", "what": "stage"}))["goal"] == "next sync stage"
    await asyncio.sleep(0.2)
    result = await command(
        comm, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}}}
    )
    assert result == {"ok": True}
    assert hosted.sim.actions[-1]["action"] == {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}}
    bp = await command(comm, {"op": "breakpoint", "do": "add", "spec": {"kind": "syncError"}})
    assert bp["ok"] and bp["id"] == 1
    assert (await command(comm, {"op": "breakpoint", "do": "toggle", "id": 1}))["enabled"] is False
    assert (await command(comm, {"op": "breakpoint", "do": "remove", "id": 1}))["ok"] is True
    assert (await command(comm, {"op": "focus", "keys": [["replicaset", "default/web"]]}))["ok"] is True
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: loose, labels: {app: loose}}\n"
        "spec:\n  containers: [{name: c, image: busybox}]\n"
    )
    applied = await command(comm, {"op": "apply_yaml", "text": manifest})
    assert applied["results"] == [{"ok": True, "object": "Pod/loose"}]
    assert (await command(comm, {"op": "run", "speed": "1"}))["mode"] == "running"
    assert (await command(comm, {"op": "pod", "name": "loose"}))["html"].count("loose") > 1
    exported = (await command(comm, {"op": "export"}))["scenario"]["actions"]
    assert [a["apply"]["metadata"]["name"] for a in exported if "apply" in a] == ["loose"]
    await comm.disconnect()


async def test_focus_brings_that_keys_inspector_and_truth_panels(running_host):
    comm, _, _ = await connect()
    await receive(comm, "state")
    await command(comm, {"op": "focus", "keys": [["replicaset", "default/web"]]})
    seen = set()
    for _ in range(40):
        message = await receive(comm, "frame")
        seen |= set(message["panels"])
        if {"truth:replicaset:default/web", "inspector:replicaset:default/web"} <= seen:
            break
        await comm.send_to(text_data=json.dumps({"type": "ack", "seq": message["seq"]}))
    assert "truth:replicaset:default/web" in seen
    await comm.disconnect()


async def test_junk_gets_an_error_and_changes_nothing(running_host):
    comm, _, _ = await connect()
    await receive(comm, "state")
    await command(comm, {"op": "pause"})
    hosted = running_host.sims["demo"]
    before = (hosted.sim.now, len(hosted.sim.actions), hosted.sim.kernel.events)
    junk = [
        "not json",
        "[1, 2, 3]",
        '{"type": "nope"}',
        '{"type": "cmd"}',
        '{"type": "cmd", "cmd": {"op": 3}}',
        '{"type": "cmd", "cmd": "pause"}',
        '{"type": "cmd", "id": 7, "cmd": {"op": "state"}}',
        json.dumps({"type": "cmd", "cmd": {"op": "x" * 10}, "pad": "y" * 300_000}),
    ]
    for text in junk:
        await comm.send_to(text_data=text)
        message = await receive(comm, "error")
        assert message["error"]
    await comm.send_to(bytes_data=b"\x00\x01")
    assert (await receive(comm, "error"))["error"].startswith("messages must be JSON text")
    for cmd in (
        {"op": "drop_tables"},
        {"op": "act", "action": {"scale": {"kind": "Pod", "name": "x", "replicas": -1}}},
    ):
        result = await command(comm, cmd, msg_id=9)
        assert result["ok"] is False and result["error"]
    assert (hosted.sim.now, len(hosted.sim.actions), hosted.sim.kernel.events) == before
    await comm.disconnect()


async def test_a_viewer_that_stops_acknowledging_is_skipped_then_caught_up(running_host):
    hosted = running_host.sims["demo"]
    await asyncio.sleep(0)
    # 100x, not max: max pauses once the demo is idle, and this needs a host that goes on publishing.
    hosted.command({"op": "run", "speed": 100})
    comm, _, _ = await connect()
    state = await receive(comm, "state")
    await comm.send_to(text_data=json.dumps({"type": "ack", "seq": state["seq"]}))
    # No more acks: at most WINDOW frames arrive, then nothing while the simulation runs on.
    frames = []
    while not await comm.receive_nothing(timeout=1.0):
        frames.append(json.loads(await comm.receive_from()))
    frames = [f for f in frames if f["type"] == "frame"]
    assert 1 <= len(frames) <= WINDOW
    assert hosted.frames.seq > frames[-1]["seq"] + 2  # the host went on publishing
    # Acknowledge: the consumer asks the host for the frames it skipped, merged into one frame
    # (not a full state of the world), and the viewer is back.
    await comm.send_to(text_data=json.dumps({"type": "ack", "seq": frames[-1]["seq"]}))
    again = json.loads(await comm.receive_from(timeout=5))
    assert again["type"] == "frame" and again["seq"] > frames[-1]["seq"] + 1, again.get("type")
    assert "pods" not in again.get("canvas", {})
    await comm.send_to(text_data=json.dumps({"type": "ack", "seq": again["seq"]}))
    following = await receive(comm, "frame")  # and the frames go on from there
    assert following["seq"] > again["seq"]
    await comm.disconnect()


async def test_the_page_may_not_ask_the_host_for_a_catch_up_itself(running_host):
    comm, _, _ = await connect()
    await receive(comm, "state")
    await comm.send_to(text_data=json.dumps({"type": "cmd", "id": 4, "cmd": {"op": "catchup", "since": 0}}))
    error = await receive(comm, "error")
    assert error["id"] == 4 and error["error"] == "catchup is not a command"
    await comm.disconnect()


async def test_frames_and_acknowledgements_cost_no_hop_to_a_database_thread(running_host, monkeypatch):
    # Channels closes stale database connections before each message a consumer handles, in a
    # worker thread; a viewer's frames and acks never touch the database, so only the handshake
    # (which checks the simulation is alive) may pay for it.
    import channels.consumer

    hops = []
    original = channels.consumer.aclose_old_connections

    async def counted():
        hops.append(1)
        await original()

    monkeypatch.setattr(channels.consumer, "aclose_old_connections", counted)
    hosted = running_host.sims["demo"]
    hosted.command({"op": "run", "speed": 100})
    comm, _, _ = await connect()
    state = await receive(comm, "state")
    await comm.send_to(text_data=json.dumps({"type": "ack", "seq": state["seq"]}))
    for _ in range(3):
        frame = await receive(comm, "frame")
        await comm.send_to(text_data=json.dumps({"type": "ack", "seq": frame["seq"]}))
    assert (await command(comm, {"op": "pause"}))["mode"] == "paused"  # a command and its reply too
    await comm.disconnect()
    assert len(hops) == 1, f"{len(hops)} hops for one handshake, 3 frames, 4 acks and a command"

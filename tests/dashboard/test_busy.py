"""A simulation whose command channel is full, or whose channel layer fails for a moment: every
door answers that it is busy (429 with Retry-After on the pages and the Kubernetes API, an error
message on the websocket) instead of an error 500, and the host keeps listening."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer
from channels.testing import HttpCommunicator
from django.test import AsyncClient

from dashboard.asgi import application
from dashboard.host import command_channel, request

from .conftest import TOKEN
from .test_consumers import connect, receive
from .test_load import demo

pytestmark = pytest.mark.django_db(transaction=True)
AUTH = [(b"authorization", f"Bearer {TOKEN}".encode())]


def refusing(send):
    """The layer's `send`, except that the demo's command channel is full."""

    async def refusing_send(channel, message):
        if channel == command_channel("demo"):
            raise ChannelFull()
        return await send(channel, message)

    return refusing_send


@pytest.fixture
def full_command_channel(running_host, monkeypatch):
    layer = get_channel_layer()
    monkeypatch.setattr(layer, "send", refusing(layer.send))
    return layer


async def test_a_page_asking_a_full_command_channel_gets_429_with_retry_after(running_host, full_command_channel):
    await demo(running_host)
    response = await AsyncClient().get("/sim/demo/status.json")
    assert response.status_code == 429 and response["Retry-After"] == "1"
    assert b"too many commands requests at once" in response.content


async def test_the_kubernetes_api_answers_a_full_command_channel_with_too_many_requests(
    running_host, full_command_channel
):
    await demo(running_host)
    for path in ("/api/v1/namespaces/default/pods/nope", "/api/v1/pods?limit=5"):
        comm = HttpCommunicator(application, "GET", path, headers=AUTH)
        response = await comm.get_response(timeout=10)
        status = json.loads(response["body"])
        assert response["status"] == 429 and status["reason"] == "TooManyRequests", path
        assert dict(response["headers"])[b"retry-after"] == b"1"


async def test_a_websocket_command_to_a_full_command_channel_gets_an_error_and_the_socket_stays(running_host):
    await demo(running_host)
    comm, connected, _ = await connect()
    assert connected
    await receive(comm, "hello")
    layer = get_channel_layer()
    send = layer.send
    layer.send = refusing(send)
    try:
        await comm.send_to(text_data=json.dumps({"type": "cmd", "id": 7, "cmd": {"op": "pause"}}))
        error = await receive(comm, "error")
        assert error["id"] == 7 and "busy" in error["error"]
    finally:
        layer.send = send
    await comm.send_to(text_data=json.dumps({"type": "cmd", "id": 8, "cmd": {"op": "pause"}}))
    reply = await receive(comm, "reply")
    assert reply["id"] == 8
    await comm.disconnect()


async def test_the_listener_keeps_listening_after_the_channel_layer_fails_once(running_host, monkeypatch, caplog):
    await demo(running_host)
    layer = get_channel_layer()
    receive_ = layer.receive
    failed = []

    async def failing_once(channel):
        if channel == command_channel("demo") and not failed:
            failed.append(channel)
            raise TimeoutError("Timeout reading from 127.0.0.1:6379")  # what redis-py raised
        return await receive_(channel)

    monkeypatch.setattr(layer, "receive", failing_once)
    # The listener is already waiting in the old receive: a command wakes it, and the next
    # receive is the failing one.
    assert (await request("demo", {"op": "status"}))["ok"]
    for _ in range(100):
        if failed:
            break
        await asyncio.sleep(0.01)
    assert failed
    assert (await request("demo", {"op": "status"}, timeout=5))["ok"]


@pytest.fixture
def silent_host(running_host, monkeypatch):
    """The demo's host takes its commands and answers none in time, as a host busy with a
    10,000-pod step on a loaded machine does: the doors wait `ANSWER_TIMEOUT` (made short)."""
    from dashboard.host import host as host_module

    layer = get_channel_layer()
    send = layer.send

    async def swallowing_send(channel, message):
        if channel == command_channel("demo"):
            return None  # taken, never answered
        return await send(channel, message)

    monkeypatch.setattr(host_module, "ANSWER_TIMEOUT", 0.3)
    monkeypatch.setattr(layer, "send", swallowing_send)
    return layer


async def test_a_page_whose_session_does_not_answer_in_time_gets_503_not_404(running_host, silent_host):
    """The session exists; its host is busy: 503 with Retry-After, never the 404 that says there
    is no such session (a report.json at load 15 used to answer 404 "did not answer")."""
    await demo(running_host)
    for path in ("/sim/demo/status.json", "/sim/demo/report.json"):
        response = await AsyncClient().get(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 503 and response["Retry-After"] == "5", (path, response.status_code)
        assert b"simulation demo did not answer within 0.3 s: it is busy; try again" in response.content, path


async def test_the_kubernetes_api_answers_a_silent_host_with_a_timeout_status(running_host, silent_host):
    await demo(running_host)
    for path in ("/api/v1/namespaces/default/pods/nope", "/api/v1/pods?limit=5"):
        comm = HttpCommunicator(application, "GET", path, headers=AUTH)
        response = await comm.get_response(timeout=10)
        status = json.loads(response["body"])
        assert response["status"] == 504 and status["reason"] == "Timeout", (path, status)
        assert status["message"].startswith("Timeout: request did not complete within requested timeout - "), status

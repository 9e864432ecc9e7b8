"""The websocket's limits against a real Daphne (issue #19 §6): what a communicator in the test
process cannot show, since Daphne (autobahn) cuts a message before the consumer sees it.

* A message over Daphne's own cut (1 MiB a frame and a message) gets the documented error
  (`{"type": "error", …}`, as any message over 256 KiB does) and the connection stays open,
  instead of being failed with 1009.
* A 5,000-deep JSON array gets the nesting error, not a 1011 close and a traceback in the log.

Both with `python -m dashboard.serve` (as ./scripts/run starts it) and plain `daphne`."""

from __future__ import annotations

import json
import time

import pytest

from .live_server import SERVERS, live_server

SECRET = "ws-limits-token-0123456789"


@pytest.fixture(params=list(SERVERS.values()), ids=list(SERVERS))
def live(request, tmp_path):
    with live_server(tmp_path, request.param, SECRET) as port:
        yield port, tmp_path / "server.log"


def _until(ws, kind: str) -> dict:
    while True:
        message = json.loads(ws.recv())
        if message.get("type") == kind:
            return message


def _still_answers(ws) -> None:
    ws.send(json.dumps({"type": "cmd", "id": 77, "cmd": {"op": "status"}}))
    while True:
        message = json.loads(ws.recv())
        if message.get("type") == "reply" and message.get("id") == 77:
            assert message["result"]["ok"]
            return


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("x" * (2 * 1024 * 1024), "messages must be JSON text of at most 262144 bytes"),  # over Daphne's 1 MiB
        ("x" * (1024 * 1024 + 1), "messages must be JSON text of at most 262144 bytes"),  # just over
        ("[" * 5000 + "]" * 5000, "messages must nest at most 100 levels"),
    ],
    ids=["2MiB", "1MiB+1", "5000-deep"],
)
def test_an_oversized_or_deep_message_gets_the_error_and_the_connection_stays(live, text, error):
    import websocket

    port, log = live
    ws = websocket.create_connection(f"ws://127.0.0.1:{port}/ws/sim/demo/?token={SECRET}", timeout=20)
    try:
        _until(ws, "state")
        ws.send(text)
        assert _until(ws, "error")["error"] == error
        _still_answers(ws)
        ws.send(text)  # and again: the first left nothing behind
        assert _until(ws, "error")["error"] == error
        _still_answers(ws)
    finally:
        ws.close()
    time.sleep(0.3)
    written = log.read_text()
    assert "Traceback" not in written and "failing WebSocket connection" not in written, written[-3000:]

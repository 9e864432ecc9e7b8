"""The page's acknowledgements, as the server sees them on the websocket: a full state at once,
frames cumulatively -- at most one acknowledgement a second unless 4 frames wait -- and the
newest frame always acknowledged in the end (the consumer's flow control waits for it)."""

from __future__ import annotations

import itertools
import json
import re
import time

from playwright.sync_api import Page, WebSocket

from .test_dashboard import command, errors, start, stop  # noqa: F401

SEQ = re.compile(r'^\{"type":"(frame|state)","seq":(\d+)')


def test_the_page_acknowledges_frames_cumulatively_at_most_once_a_second_unless_four_wait(
    page: Page,
    live_server_url: str,
    errors,  # noqa: F811
):
    received: list[tuple[float, str, int]] = []  # (when, frame|state, seq)
    acks: list[tuple[float, int]] = []
    parts = {"n": 0, "left": 0}  # a long message comes as {"type":"parts","n":N}, then N slices

    def on_received(payload: str | bytes) -> None:
        text = payload if isinstance(payload, str) else payload.decode()
        if parts["left"]:
            parts["left"] -= 1
            if parts["left"] < parts["n"] - 1:
                return  # a later slice: the message's head was in the first
        elif text.startswith('{"type":"parts"'):
            parts["n"] = parts["left"] = json.loads(text)["n"]
            return
        match = SEQ.match(text)
        if match:
            received.append((time.monotonic(), match.group(1), int(match.group(2))))

    def on_sent(payload: str | bytes) -> None:
        message = json.loads(payload)
        if message.get("type") == "ack":
            acks.append((time.monotonic(), message["seq"]))

    def on_websocket(ws: WebSocket) -> None:
        if "/ws/sim/" in ws.url:
            ws.on("framereceived", on_received)
            ws.on("framesent", on_sent)

    page.on("websocket", on_websocket)
    sim = start(page, live_server_url)
    command(page, {"op": "run", "speed": 10})
    page.wait_for_timeout(4000)
    command(page, {"op": "pause"})
    page.wait_for_timeout(2500)  # the last frames, then the page's timer acknowledges them

    states = [seq for _, kind, seq in received if kind == "state"]
    frames = [(at, seq) for at, kind, seq in received if kind == "frame"]
    assert states and len(frames) > 20, (states, len(frames))
    # The state is acknowledged at once, before any frame.
    assert acks[0][1] == states[0]
    seqs = [seq for _, seq in acks]
    assert seqs == sorted(set(seqs))  # cumulative: each one covers more
    # Fewer acknowledgements than frames, and the newest frame acknowledged in the end.
    assert len(acks) - 1 <= len(frames) / 2, (len(acks), len(frames))
    assert seqs[-1] == frames[-1][1]
    # Between two acknowledgements, either 4 frames arrived or about a second went by.
    for (t0, s0), (t1, s1) in itertools.pairwise(acks[1:]):  # (after the state's)
        assert s1 - s0 >= 4 or t1 - t0 >= 0.8, (s0, s1, round(t1 - t0, 3))
    stop(page, live_server_url, sim)

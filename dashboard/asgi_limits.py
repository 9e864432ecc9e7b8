"""ASGI wrappers: a body size limit enforced before the body is read, and the host's start; and
Daphne's websocket protocol answering a message over its size cut instead of dropping the
connection (`answer_oversized_websocket_messages`).

Django's ASGI handler reads a whole request body before the view runs (spooling to disk past
`FILE_UPLOAD_MAX_MEMORY_SIZE`). `BodyLimit` answers 413 as soon as the declared length, or the
bytes received so far, pass `CTRLSCOPE_MAX_BODY`, without passing further bytes to the app.

Under Daphne the body never gets here over the limit: `dashboard.http_limits` refuses it as
it arrives, before Daphne queues it for the application (it used to queue a whole body at once,
in memory). This check stays for other servers and the tests' in-process clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from django.conf import settings

Scope = dict[str, Any]


async def _send_413(send: Any, limit: int) -> None:
    body = json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"the request body is larger than the limit of {limit} bytes",
            "reason": "RequestEntityTooLarge",
            "code": 413,
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"x-content-type-options", b"nosniff"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    def __init__(self, app: Any, limit: int | None = None) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit if self.limit is not None else settings.CTRLSCOPE_MAX_BODY
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = limit + 1
                if declared > limit:
                    await _send_413(send, limit)
                    return
        received = 0
        refused = False

        async def limited_receive() -> Any:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    await _send_413(send, limit)
                    return {"type": "http.disconnect"}
            return message

        await self.app(scope, limited_receive, send)


class _AnswersOversizedMessages:
    """Mixed into Daphne's websocket protocol. Daphne (autobahn) fails the connection with 1009
    when a message passes `websocket_max_message_size` (1 MiB a message and a frame by default):
    the page loses its session over one oversized paste. Instead, the rest of that message is
    read and thrown away as it arrives (never buffered: the connection costs no more memory
    than at the cut) and the application receives an empty binary message in its place, which
    the consumer answers with its documented error (`{"type": "error", "error": "messages must
    be JSON text of at most …"}`); the connection stays open."""

    _oversized = False

    def onMessageBegin(self, isBinary: bool) -> None:
        self._oversized = False
        super().onMessageBegin(isBinary)  # type: ignore[misc]

    def _max_message_size_exceeded(self, msg_size: int, max_msg_size: int, reason: str) -> None:
        if not self._oversized:
            self._oversized = True
            self.message_data: list[bytes] = []  # what was kept of it so far goes too
            self.frame_data: list[bytes] = []

    def onMessageFrameData(self, payload: bytes) -> None:
        if not self._oversized:
            super().onMessageFrameData(payload)  # type: ignore[misc]

    def onMessageFrameEnd(self) -> None:
        if self._oversized:
            self.frame_data = []
            return
        super().onMessageFrameEnd()  # type: ignore[misc]

    def onMessageEnd(self) -> None:
        if self._oversized:
            self._oversized = False
            self.message_data = []
            self.onMessage(b"", True)  # type: ignore[attr-defined]
            return
        super().onMessageEnd()  # type: ignore[misc]


def answer_oversized_websocket_messages() -> None:
    """Daphne's websocket protocol in this process answers an oversized message (see
    `_AnswersOversizedMessages`); once, again is a no-op. Applied by `dashboard.serve` and when
    Daphne imports `dashboard.asgi`, before the first connection."""
    from daphne import ws_protocol

    factory = ws_protocol.WebSocketFactory
    if issubclass(factory.protocol, _AnswersOversizedMessages):
        return
    factory.protocol = type("WebSocketProtocol", (_AnswersOversizedMessages, factory.protocol), {})


RESTORE_WAIT = 60.0  # seconds a session's request waits for the host's start (its restores)
SESSION_PATHS = ("/sim/", "/ws/sim/")


class StartHost:
    """Starts the host (and the demo) on the first scope: Daphne sends no lifespan events.

    As it starts, the host brings back by replay the sessions that were running when the server
    died (docs/time-travel.md). Until that is done they are not running, so a request for one
    (its page, its status, its Kubernetes API, its websocket) waits for the start, up to
    `RESTORE_WAIT` seconds, instead of answering that no such session exists: the page a user
    reloads right after a restart finds its session. Other requests (the home page) do not wait."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        from dashboard.host import ensure_started

        start = ensure_started()
        if not start.done() and str(scope.get("path", "")).startswith(SESSION_PATHS):
            # (a start that failed, or takes longer, leaves the request to answer as it can)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(start), timeout=RESTORE_WAIT)
        await self.app(scope, receive, send)

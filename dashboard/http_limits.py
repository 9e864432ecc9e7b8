"""What a connection can make Daphne hold before the application sees its request:
`bound_http_connections()` wraps Daphne's HTTP channel and request (Twisted) so that

* **a request's headers arrive in time**: a connection that has not sent a whole request line
  and headers `CTRLSCOPE_HEADER_TIMEOUT` seconds (10) after it opened, or after the first byte
  of its next request (keep-alive), is answered 408 and closed (Go's
  `http.Server.ReadHeaderTimeout` is the model). Twisted's own timeout is an idle one (60 s,
  restarted by every byte): a client sending a header byte a minute was held for ever, and
  3,000 silent ones for 68 s. It still closes, silently, a kept-alive connection that sent no
  byte of a next request;
* **at most `MAX_UNFINISHED` (1,000) connections wait for their headers at once**: the next one
  closes the one that has waited longest (a client that sends its request at once is never
  the oldest for long), so a flood of silent sockets cannot hold more than that many;
* **a body over `CTRLSCOPE_MAX_BODY` is refused as it arrives**: a declared `Content-Length`
  over the limit is answered 413 before a byte of the body is read (and `Expect: 100-continue`
  gets no 100), a chunked body the moment its count passes the limit. Without this Twisted
  received the whole body (in a temporary file past 100,000 bytes) and Daphne then put all of
  it into the application's queue at once, in memory: a 500 MiB upload cost ~500 MB before the
  application's 413. After the 413 the rest of the body is read and thrown away for
  `LINGER` seconds (a client still sending then reads the answer instead of a reset), then the
  connection is closed.

Applied once by `dashboard.serve` and when Daphne imports `dashboard.asgi` (a class-level
change: every channel Daphne builds afterwards, plain and TLS, is bounded); again is a no-op.
`asgi_limits.BodyLimit` stays as the application's own check (other ASGI servers, tests).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import OrderedDict
from typing import Any

HEADER_TIMEOUT = float(os.environ.get("CTRLSCOPE_HEADER_TIMEOUT", "10"))
MAX_UNFINISHED = int(os.environ.get("CTRLSCOPE_MAX_UNFINISHED", "1000"))
LINGER = 1.0  # seconds a refused body is read and dropped before the connection closes

# Connections waiting for their request's headers, oldest first (insertion order).
_unfinished: OrderedDict[int, Any] = OrderedDict()


def unfinished() -> int:
    """How many connections wait for their request's headers now."""
    return len(_unfinished)


def _raw_answer(status: str, code: int, message: str, reason: str) -> bytes:
    body = json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    ).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class _BoundedChannel:
    """Mixed into Twisted's `HTTPChannel` as Daphne builds it: the header timeout and the cap
    on connections waiting for their headers (module docstring).

    A connection waits for a request in one of two ways: `headers` (from its opening, or from
    the first byte of a request after a kept-alive response: on the header clock) or `idle`
    (kept alive after a response, not a byte of the next request yet: only Twisted's idle
    timeout, 60 s, applies; closed without an answer, as nginx's `keepalive_timeout`, since a
    408 sent then would be read by the client as the answer to its next request). Both count
    against the cap."""

    _header_call: Any = None
    _waiting: str | None = None  # "headers" | "idle" | None (a request is being received or answered)
    _refused_body = False

    def connectionMade(self) -> None:
        super().connectionMade()  # type: ignore[misc]
        self._await("headers")

    def _await(self, how: str) -> None:
        from twisted.internet import reactor

        self._stop_waiting()
        self._waiting = how
        _unfinished[id(self)] = self
        if how == "headers":
            self._header_call = reactor.callLater(HEADER_TIMEOUT, self._headers_late)  # type: ignore[attr-defined]
        while len(_unfinished) > MAX_UNFINISHED:
            _, oldest = _unfinished.popitem(last=False)
            oldest._headers_late()

    def _stop_waiting(self) -> None:
        self._waiting = None
        _unfinished.pop(id(self), None)
        call, self._header_call = self._header_call, None
        if call is not None and call.active():
            call.cancel()

    def _headers_late(self) -> None:
        idle = self._waiting == "idle"
        self._header_call = None
        self._stop_waiting()
        transport = getattr(self, "transport", None)
        if transport is None:
            return
        if not idle:
            message = f"the request's headers did not arrive within {HEADER_TIMEOUT:g} s"
            transport.write(_raw_answer("408 Request Timeout", 408, message, "Timeout"))
        transport.loseConnection()
        from twisted.internet import reactor

        # A peer that never reads does not keep it: the socket goes, written or not.
        reactor.callLater(LINGER, _abort, transport)  # type: ignore[attr-defined]

    def dataReceived(self, data: bytes) -> None:
        if self._waiting == "idle":
            self._await("headers")  # the next request began: its headers are on the clock
        super().dataReceived(data)  # type: ignore[misc]

    def allHeadersReceived(self) -> None:
        self._stop_waiting()
        super().allHeadersReceived()  # type: ignore[misc]

    def _send100Continue(self) -> None:
        if not self._refused_body:  # a refused body is not to be sent
            super()._send100Continue()  # type: ignore[misc]

    def requestDone(self, request: Any) -> None:
        # Kept alive: set before Twisted parses what the client already sent of its next request
        # (in `requestDone`), so that a whole one ends the wait at once; part of one is on the clock.
        keep = getattr(self, "persistent", False) and getattr(self, "transport", None) is not None
        if keep:
            self._await("idle")
        super().requestDone(request)  # type: ignore[misc]
        if keep and self._waiting == "idle" and getattr(self, "_buffer", b""):
            self._await("headers")

    def connectionLost(self, reason: Any) -> None:
        self._stop_waiting()
        super().connectionLost(reason)  # type: ignore[misc]


def _abort(transport: Any) -> None:
    with contextlib.suppress(Exception):  # already gone
        transport.abortConnection()


class _BoundedBody:
    """Mixed into Daphne's `WebRequest`: a body over `CTRLSCOPE_MAX_BODY` is refused as it arrives
    (module docstring); such a request never reaches the application."""

    _body_refused = False
    _body_received = 0

    def _body_limit(self) -> int:
        from django.conf import settings

        return int(settings.CTRLSCOPE_MAX_BODY)

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > self._body_limit():
            self._refuse_body()
            return  # no buffer: nothing of the body is kept
        super().gotLength(length)  # type: ignore[misc]

    def handleContentChunk(self, data: bytes) -> None:
        if self._body_refused:
            return
        self._body_received += len(data)
        if self._body_received > self._body_limit():
            self._refuse_body()
            return
        super().handleContentChunk(data)  # type: ignore[misc]

    def _refuse_body(self) -> None:
        from twisted.internet import reactor

        self._body_refused = True
        channel = self.channel  # type: ignore[attr-defined]
        channel._refused_body = True
        content = getattr(self, "content", None)
        if content is not None:
            content.close()  # what was received so far goes (a temporary file is deleted)
            self.content = None
        transport = channel.transport
        message = f"the request body is larger than the limit of {self._body_limit()} bytes"
        transport.write(_raw_answer("413 Request Entity Too Large", 413, message, "RequestEntityTooLarge"))
        channel.persistent = False
        reactor.callLater(LINGER, transport.loseConnection)  # type: ignore[attr-defined]
        reactor.callLater(LINGER + 5.0, _abort, transport)  # type: ignore[attr-defined]

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if self._body_refused:
            return  # answered already: the application never sees it
        super().requestReceived(command, path, version)  # type: ignore[misc]


def bound_http_connections() -> None:
    """Every HTTP channel and request Daphne builds in this process from now on is bounded
    (module docstring); once, again is a no-op."""
    from daphne import http_protocol

    if issubclass(http_protocol.WebRequest, _BoundedBody):
        return
    bounded_request = type("WebRequest", (_BoundedBody, http_protocol.WebRequest), {})
    http_protocol.WebRequest = bounded_request  # type: ignore[misc]
    build = http_protocol.HTTPFactory.buildProtocol
    channel_classes: dict[type, type] = {}

    def buildProtocol(self: Any, addr: Any) -> Any:
        protocol = build(self, addr)
        # Twisted's factory gives a proxy that picks HTTP/1.1 or HTTP/2 once TLS negotiated;
        # the HTTP/1.1 channel is behind it (`_channel`), and so bounded before it connects.
        channel = getattr(protocol, "_channel", protocol)
        base = type(channel)
        bounded = channel_classes.get(base)
        if bounded is None:
            bounded = channel_classes[base] = type(base.__name__, (_BoundedChannel, base), {})
        channel.__class__ = bounded
        protocol.requestFactory = bounded_request
        return protocol

    http_protocol.HTTPFactory.buildProtocol = buildProtocol  # type: ignore[method-assign]

"""The in-memory HTTP door between an embedded operator's aiohttp session and the simulated API
server: bytes in, bytes out, no socket.

`Door.connect` is what `SimLoop.create_unix_connection` returns for the door's path (so
`aiohttp.UnixConnector(path)` reaches it); each `Connection` is an asyncio transport that parses
the HTTP/1.1 requests aiohttp writes, hands each to the door, and feeds the answer's bytes back
to aiohttp's protocol through the loop (`call_soon(protocol.data_received, …)`). All of aiohttp's
parsing, keep-alive, chunked decoding and timeouts run for real.

Guarantees
----------
* One request path: the HTTP request is mapped by `controlplane.apiserver.http` (the same
  functions the dashboard's Kubernetes API uses: paths, query, patch types, bodies, write
  options, Statuses), then sent through the operator's `Client` (its latency, QPS limiter and
  User-Agent; the trace's causes), so its requests are in the request log under its User-Agent
  and `apiFault {client}` applies to them.
* Discovery (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/apps/v1`, and an
  `apiextensions.k8s.io/v1` listing `customresourcedefinitions`, which kopf waits for) is answered
  after the client's latency without a request-log line: it is static.
  CustomResourceDefinitions themselves are not served (a list of them is empty, anything else
  404): an operator of a custom resource cannot run here yet.
* Watches: `?watch=true` opens a server watch under the operator's User-Agent (the world's watch
  latency) and streams its events as chunked, newline-delimited JSON; BOOKMARK lines every
  `BOOKMARK_EVERY` virtual seconds when asked for (`allowWatchBookmarks`) and at a
  `timeoutSeconds` end; a watch the server drops (`watchFault {client} drop`) or that starts
  from a resourceVersion too old ends with an ERROR line carrying a 410 Expired Status, never a
  gap. `watchFault {client} pause/resume` hold and release its events (`Door.watch_fault`).
* Bodies larger than kube-apiserver reads (3 MiB) are 413; a request whose head is larger than
  `MAX_HEAD` or that is chunked is refused (400 / 411) and its connection closed; an operator
  holds at most `MAX_CONNECTIONS` connections at once (a further one is refused).
* Nothing here reads the wall clock: every delay is a kernel timer.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from controlplane.apiserver import http as api_http
from controlplane.apiserver.errors import ApiError
from controlplane.apiserver.server import Request, query_options
from controlplane.limits import MAX_REQUEST_BYTES
from controlplane.operators.loop import Unpicklable
from controlplane.version import VERSION_INFO

if TYPE_CHECKING:
    from controlplane.apiserver.client import Client
    from controlplane.apiserver.watch import Watch
    from controlplane.kernel import Kernel, Timer

Obj = dict[str, Any]

MAX_HEAD = 64 * 1024  # bytes of a request's line and headers
MAX_CONNECTIONS = 256  # connections one operator holds open at once (kopf: a few per watched resource)
BOOKMARK_EVERY = 30.0  # virtual seconds between a watch's bookmarks (as the dashboard's door)
REASONS = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    410: "Gone",
    411: "Length Required",
    413: "Request Entity Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
APIEXTENSIONS = "apiextensions.k8s.io"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class Connection(Unpicklable, asyncio.Transport):
    """One in-memory connection (module docstring): requests in order, one at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.BaseProtocol, door: Door) -> None:
        super().__init__()
        self._loop = loop
        self._protocol: Any = protocol
        self._door = door
        self._buffer = bytearray()
        self._busy = False  # a request is being answered
        self._closing = False
        self._paused = False
        self._held: deque[bytes] = deque()
        self.watch: WatchStream | None = None

    # -- asyncio.Transport -------------------------------------------------------------------
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        if self.watch is not None:
            self.watch.stop()
            self.watch = None
        self._door.connections.discard(self)
        self._loop.call_soon(self._protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        self._buffer += data
        self._parse()

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def write_eof(self) -> None:
        self.close()

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return (0, 0)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def pause_reading(self) -> None:
        self._paused = True

    def resume_reading(self) -> None:
        if self._paused:
            self._paused = False
            while self._held and not self._paused and not self._closing:
                self._protocol.data_received(self._held.popleft())

    def is_reading(self) -> bool:
        return not self._paused

    # -- requests in ----------------------------------------------------------------------------
    def _parse(self) -> None:
        while not self._busy and not self._closing:
            buffer = self._buffer
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > MAX_HEAD:
                    self._refuse(400, "BadRequest", "the request's head is too large")
                return
            head = bytes(buffer[:end]).decode("latin-1")
            lines = head.split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                self._refuse(400, "BadRequest", "malformed request line")
                return
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if "transfer-encoding" in headers:
                self._refuse(411, "LengthRequired", "a chunked request body is not supported here")
                return
            try:
                length = int(headers.get("content-length") or 0)
            except ValueError:
                self._refuse(400, "BadRequest", "malformed Content-Length")
                return
            if length < 0 or length > MAX_REQUEST_BYTES:
                self._refuse(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BYTES}")
                return
            if len(buffer) < end + 4 + length:
                return
            body = bytes(buffer[end + 4 : end + 4 + length])
            del buffer[: end + 4 + length]
            self._busy = True
            self._door.request(self, parts[0], parts[1], headers, body)

    def _refuse(self, code: int, reason: str, message: str) -> None:
        body = _dumps(api_http.HttpFailure(code, reason, message).status()).encode()
        self._busy = True  # nothing more is read from this connection
        self._send(_head(code, "application/json", len(body), close=True) + body)
        self._loop.call_soon(self.close)  # after the answer reached the client

    # -- answers out ----------------------------------------------------------------------------
    def _send(self, data: bytes) -> None:
        self._loop.call_soon(self._receive, data)

    def _receive(self, data: bytes) -> None:
        if self._closing:
            return
        if self._paused:
            self._held.append(data)
            return
        self._protocol.data_received(data)

    def respond(self, code: int, text: str) -> None:
        """The whole answer to the current request; the next request (if written) follows."""
        if self._closing:
            return
        data = text.encode()
        self._send(_head(code, "application/json", len(data)) + data)
        self._busy = False
        self._loop.call_soon(self._parse)

    def start_stream(self) -> None:
        self._send(_head(200, "application/json", None))

    def chunk(self, text: str) -> None:
        if text and not self._closing:
            data = text.encode()
            self._send(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        if self._closing:
            return
        self._send(b"0\r\n\r\n")
        self.watch = None
        self._busy = False
        self._loop.call_soon(self._parse)


def _head(code: int, content_type: str, length: int | None, *, close: bool = False) -> bytes:
    lines = [f"HTTP/1.1 {code} {REASONS.get(code, 'Unknown')}", f"Content-Type: {content_type}"]
    if length is None:
        lines += ["Transfer-Encoding: chunked", "Cache-Control: no-cache, private"]
    else:
        lines.append(f"Content-Length: {length}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class WatchStream(Unpicklable):
    """A server watch streamed to one connection (module docstring)."""

    def __init__(
        self, door: Door, conn: Connection, watch: Watch, info: Any, timeout: float | None, bookmarks: bool
    ) -> None:
        self.door, self.conn, self.watch, self.info = door, conn, watch, info
        self.bookmarks = bookmarks
        self.revision = door.server.revision
        self.timers: list[Timer] = []
        kernel = door.kernel
        if timeout is not None:
            self.timers.append(kernel.call_later(timeout, self.end))
        if bookmarks:
            self.timers.append(kernel.call_later(BOOKMARK_EVERY, self.bookmark))
        watch.start(self.on_events, self.on_close)

    def on_events(self, events: list[tuple[str, Obj]]) -> None:
        lines = []
        for event_type, obj in events:
            lines.append(api_http.watch_line(event_type, obj))
            rv = obj.get("metadata", {}).get("resourceVersion")
            if isinstance(rv, str) and rv.isdigit():
                self.revision = max(self.revision, int(rv))
        self.conn.chunk("".join(lines))

    def on_close(self, why: str) -> None:
        self.finish(api_http.error_line(api_http.expired(f"the watch was ended by the server ({why}); list again")))

    def bookmark(self) -> None:
        if self.watch.closed:
            return
        if not self.watch.paused:
            self.conn.chunk(api_http.bookmark_line(self.info, self.revision))
        self.timers.append(self.door.kernel.call_later(BOOKMARK_EVERY, self.bookmark))

    def end(self) -> None:
        """`timeoutSeconds` passed: a last bookmark, and the stream ends cleanly."""
        if self.watch.closed:
            return
        self.watch.stop()
        self.finish(api_http.bookmark_line(self.info, self.revision) if self.bookmarks else "")

    def finish(self, last: str) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()
        self.door.streams.discard(self)
        self.conn.chunk(last)
        self.conn.end_stream()

    def stop(self) -> None:
        """The client went away."""
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()
        self.door.streams.discard(self)
        self.watch.stop()


MAX_TASK_ANCESTRY = 8  # tasks walked up from a request's to find the handler that caused it


class Door(Unpicklable):
    """The simulated API server as one operator's HTTP endpoint (module docstring)."""

    def __init__(self, kernel: Kernel, client: Client, *, watch_latency: float) -> None:
        self.kernel = kernel
        self.client = client
        self.server = client.server
        self.watch_latency = watch_latency
        self.connections: set[Connection] = set()
        self.streams: set[WatchStream] = set()
        self.open = True
        # The operator's worker task -> the seq of the `sync.start` of the handler it ran last
        # (host.py): the requests that task sends are caused by it.
        self.handler_causes: weakref.WeakKeyDictionary[asyncio.Task[Any], int] = weakref.WeakKeyDictionary()
        # Each task of the operator's loop -> the task that created it (`task_factory`): kopf
        # sends a handler's patch from a task its worker started.
        self.task_parents: weakref.WeakKeyDictionary[asyncio.Task[Any], asyncio.Task[Any]] = weakref.WeakKeyDictionary()
        # `watchFault {client} pause` in force on this operator's watches, by resource (or "*"):
        # watches it opens meanwhile start paused.
        self.paused: set[str] = set()

    def connect(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.BaseProtocol) -> Connection:
        if not self.open:
            raise ConnectionRefusedError("the simulated API server's door is closed (the world ended)")
        if len(self.connections) >= MAX_CONNECTIONS:
            raise ConnectionRefusedError(f"the operator holds {MAX_CONNECTIONS} connections open already")
        conn = Connection(loop, protocol, self)
        self.connections.add(conn)
        protocol.connection_made(conn)
        return conn

    def close(self) -> None:
        """The world ends: every stream stops, every connection closes."""
        self.open = False
        for conn in sorted(self.connections, key=id):
            conn.close()

    # -- one request ----------------------------------------------------------------------------
    def request(self, conn: Connection, method: str, target: str, headers: dict[str, str], body: bytes) -> None:
        split = urlsplit(target)
        raw = parse_qs(split.query, keep_blank_values=True)
        query = {k: v[-1] for k, v in raw.items()}
        segs = [s for s in split.path.split("/") if s]
        try:
            served = api_http.served_group(segs)
            if served is None:
                if method != "GET":
                    raise api_http.HttpFailure(405, "MethodNotAllowed", f"{method} is not supported on this path")
                self.later(conn, 200, _dumps(self.discovery(segs, query)))
                return
            self.resource(conn, method, api_http.resource_target(*served), query, headers, body)
        except api_http.HttpFailure as failure:
            self.later(conn, failure.code, _dumps(failure.status()))

    def later(self, conn: Connection, code: int, text: str) -> None:
        """An answer that needs no request to the server, after the client's latency."""
        self.kernel.call_later(self.client.latency, conn.respond, code, text)

    def discovery(self, segs: list[str], query: dict[str, str]) -> Obj:
        if segs == ["version"]:
            return dict(VERSION_INFO)
        if segs == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if segs == ["apis"]:
            return api_http.api_group_list((api_http.group_version(APIEXTENSIONS),))
        if segs == ["api", "v1"]:
            return api_http.resource_list("")
        if len(segs) == 2 and segs[0] == "apis" and segs[1] in api_http.GROUPS:
            return api_http.api_group(segs[1])
        if len(segs) == 3 and segs[0] == "apis" and segs[1] in api_http.GROUPS and segs[2] == "v1":
            return api_http.resource_list(segs[1])
        if segs == ["apis", APIEXTENSIONS]:
            return {"kind": "APIGroup", "apiVersion": "v1", **api_http.group_version(APIEXTENSIONS)}
        if segs == ["apis", APIEXTENSIONS, "v1"]:
            crds = {
                "name": "customresourcedefinitions",
                "singularName": "customresourcedefinition",
                "namespaced": False,
                "kind": "CustomResourceDefinition",
                "verbs": ["get", "list", "watch"],
                "shortNames": ["crd", "crds"],
            }
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": f"{APIEXTENSIONS}/v1",
                "resources": [crds],
            }
        if segs == ["apis", APIEXTENSIONS, "v1", "customresourcedefinitions"] and not api_http.is_watch(query):
            # No CustomResourceDefinition is served (module docstring): the list is empty.
            return {
                "kind": "CustomResourceDefinitionList",
                "apiVersion": f"{APIEXTENSIONS}/v1",
                "metadata": {"resourceVersion": str(self.server.revision)},
                "items": [],
            }
        raise api_http.not_found()

    def resource(
        self,
        conn: Connection,
        method: str,
        target: api_http.Target,
        query: dict[str, str],
        headers: dict[str, str],
        raw: bytes,
    ) -> None:
        ua = self.client.user_agent
        info = target.info
        if method == "GET":
            if target.name is not None:
                self.send(conn, Request(ua, "get", info.plural, target.subresource, target.namespace, target.name))
            elif api_http.is_watch(query):
                self.watch(conn, target, query)
            else:
                options = query_options(
                    label_selector=query.get("labelSelector") or None,
                    field_selector=query.get("fieldSelector") or None,
                )
                self.send(conn, Request(ua, "list", info.plural, None, target.namespace, None, None, options))
            return
        verb = api_http.write_verb(method, target)
        body: Any = None
        patch_kind: str | None = None
        delete_options: Obj = {}
        duplicates: list[Obj] = []
        if verb in ("create", "update"):
            body = self.body(raw, headers, duplicates, yaml_ok=True)
        elif verb == "patch":
            patch_kind = api_http.patch_type(headers)
            body = self.body(raw, headers, duplicates, yaml_ok=patch_kind == "apply")
        elif raw.strip():
            found = api_http.decode(api_http.limited(raw), yaml_ok=False)
            if not isinstance(found, dict):
                raise api_http.HttpFailure(400, "BadRequest", "the body of the request must be a DeleteOptions object")
            delete_options = found
        if verb in ("update", "patch"):
            api_http.named(target)
        options, dry_run = api_http.write_options(verb, query, delete_options)
        action = api_http.write_request(
            ua, verb, target, body, patch_kind=patch_kind, options=options, duplicates=duplicates
        )
        req = api_http.request_of(action)
        if dry_run:
            self.kernel.call_later(self.client.latency, self._dry_run, conn, req)
            return
        self.send(conn, req)

    def body(self, raw: bytes, headers: dict[str, str], duplicates: list[Obj], *, yaml_ok: bool) -> Any:
        if not raw.strip():
            raise api_http.HttpFailure(400, "BadRequest", "the body of the request was empty")
        media = api_http.header_media_type(headers)
        if (
            media not in ("", "application/json", "*/*", "application/yaml")
            and media not in api_http.PATCH_CONTENT_TYPES
        ):
            raise api_http.HttpFailure(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json, application/yaml",
            )
        return api_http.decode(api_http.limited(raw), yaml_ok=yaml_ok and "yaml" in media, duplicates=duplicates)

    def task_factory(self, loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        """The operator's loop's task factory: a task as asyncio makes it, its creator noted."""
        task: asyncio.Task[Any] = asyncio.Task(coro, loop=loop, **kwargs)
        try:
            parent = asyncio.current_task(loop)
        except RuntimeError:
            parent = None
        if parent is not None:
            self.task_parents[task] = parent
        return task

    def handler_cause(self) -> int | None:
        """The `sync.start` seq of the handler the current task, or the nearest task that
        created it (at most MAX_TASK_ANCESTRY up), ran last; None outside any."""
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return None
        for _ in range(MAX_TASK_ANCESTRY):
            if task is None:
                return None
            cause = self.handler_causes.get(task)
            if cause is not None:
                return cause
            task = self.task_parents.get(task)
        return None

    def send(self, conn: Connection, req: Request) -> None:
        """The request through the operator's Client (latency, QPS, causes): its answer, or
        its Status, goes back to the connection when it arrives."""
        cause = self.handler_cause()
        outer = self.kernel.cause
        if cause is not None:
            self.kernel.cause = cause  # the spawned call (its api.request) is caused by the handler
        try:
            self.kernel.spawn(self._call(conn, req), name=f"{self.client.user_agent} {req.verb} {req.resource}")
        finally:
            self.kernel.cause = outer

    async def _call(self, conn: Connection, req: Request) -> None:
        try:
            answer = await self.client.request(req)
        except ApiError as err:
            conn.respond(err.code, _dumps(err.status()))
            return
        # The answer arrives inline, right after the server logged it: the log's last line is its.
        conn.respond(int(self.server.requests[-1]["code"]), _dumps(answer))

    def _dry_run(self, conn: Connection, req: Request) -> None:
        try:
            answer, code = self.server.dry_run(req)
        except ApiError as err:
            conn.respond(err.code, _dumps(err.status()))
            return
        conn.respond(code, _dumps(answer))

    def watch(self, conn: Connection, target: api_http.Target, query: dict[str, str]) -> None:
        timeout = api_http.watch_timeout(query)
        bookmarks = api_http.wants_bookmarks(query)
        rv = query.get("resourceVersion") or None
        label_selector = query.get("labelSelector") or None
        field_selector = query.get("fieldSelector") or None

        def open_watch() -> None:
            if conn.is_closing():
                return
            try:
                watch = self.client.watch(
                    target.info.plural,
                    target.namespace,
                    resource_version=rv,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    latency=self.watch_latency,
                )
            except ApiError as err:
                if err.code == 410:  # as kube-apiserver: a 200 stream whose only event is the ERROR
                    conn.start_stream()
                    conn.chunk(api_http.error_line(err.status()))
                    conn.end_stream()
                    return
                conn.respond(err.code, _dumps(err.status()))
                return
            conn.start_stream()
            stream = WatchStream(self, conn, watch, target.info, timeout, bookmarks)
            conn.watch = stream
            self.streams.add(stream)
            if self.paused & {"*", target.info.plural}:
                watch.pause()

        self.kernel.call_later(self.client.latency, open_watch)

    # -- watchFault {client} --------------------------------------------------------------------------
    def watch_fault(self, entry: Obj) -> None:
        """A `watchFault {client}` entry (controlplane.faults): applied to this operator's watches
        when its User-Agent starts with the entry's client and the resource matches (or `*`)."""
        if not self.client.user_agent.startswith(entry["client"]):
            return
        resource, fault = entry["resource"], entry["fault"]
        if fault == "pause":
            self.paused.add(resource)
        elif fault == "resume":
            self.paused.discard(resource)
        for stream in sorted(self.streams, key=lambda s: s.watch.id):
            if resource not in ("*", stream.info.plural):
                continue
            if fault == "drop":
                stream.watch.drop()
            elif fault == "pause":
                stream.watch.pause()
            elif fault == "resume":
                stream.watch.resume()

"""The Kubernetes API over HTTP: what real `kubectl` and the official Python client talk to.

An ASGI app in front of Django: it answers `/version` (and `/version/`), `/api…`, `/apis…`,
`/openapi/…` (the demo simulation) and `/sim/<id>/k8s/…` (any simulation), and `/metrics`; every
other path goes to the dashboard. It never holds a simulation: reads, dry runs and watches are ops
of the host (`dashboard.host.k8s_ops`), writes are `request` actions (`op: act`), all through the
channel layer, so several Daphne processes with the Redis layer work as one. `RefuseWebsocket`
turns away a websocket handshake on the same paths.

Imports run one way: this module (the request, `Call`) over `endpoints` (health, reviews, pod
logs) and `discovery` (the static documents), all three over `wire` (the Status failures, body
decoding, answers).

Guarantees
----------
* `Authorization: Bearer <the dashboard's access token>` on everything but `/version`; 401
  Unauthorized Status otherwise. No request acts as someone else: `Impersonate-*` headers get
  kube-apiserver's 403 for a user without the `impersonate` verb (`endpoints.refuse_impersonation`).
* Every failure is a `metav1.Status` (kind Status, apiVersion v1, status Failure, reason, code),
  so kubectl prints its usual messages.
* A write changes the world only as one `request` action (recorded with the request's
  User-Agent as its client, replayed by "Download as scenario"); `dryRun=All` writes are answered
  by the host without any action. Reads never enter the simulation's API call log.
* Watches stream chunked, newline-delimited JSON events until the client goes away,
  `timeoutSeconds` passes, or the simulation stops (then the stream ends cleanly, after every
  event). Every committed event reaches the stream once, in resourceVersion order; a watcher
  that falls behind, that the host no longer knows, or whose lease could not be renewed in time
  gets an ERROR event (a 410 Expired Status: the client relists) and the stream ends: never a
  gap, never a clean end after one. A watch's registration, lease renewals and end go through
  the host's watch channel (`host.request_watch`), never through the limit on requests (a full
  command channel); a renewal runs beside the stream, which keeps delivering meanwhile.
* Nothing raised once an answer has started hangs its connection (Daphne can start no second
  answer): a watch ends with an ERROR event (the Status of the failure; 500 InternalError for
  a bug), any other answer ends where it is (the client sees a truncated body, not silence).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from typing import Any
from urllib.parse import parse_qs

from channels.layers import InMemoryChannelLayer, get_channel_layer

from controlplane.simulation import MAX_CLIENT, RESOURCES, ResourceInfo, api_http
from dashboard.access import token_matches
from dashboard.host.reads import Answer, Busy, NoAnswer
from dashboard.k8s import discovery, endpoints, openapi_v2_proto, protobuf
from dashboard.k8s.wire import (
    Failure,
    decode,
    ensure_running,
    not_found,
    respond,
    respond_bytes,
    timed_out,
    wait_disconnect,
)

Obj = dict[str, Any]
Scope = dict[str, Any]
log = logging.getLogger(__name__)

DEMO = "demo"
SIM_PATH = re.compile(r"^/sim/(?P<id>[a-z0-9][a-z0-9-]{0,62})/k8s(?:/token/(?P<token>[^/]*))?(?P<rest>/.*)?$")
ROOT_PREFIXES = ("/api", "/apis", "/openapi/")
RENEW_EVERY = 30.0  # seconds between a watch's lease renewals (controlplane.session.kube.WATCH_LEASE is 90) ...
RENEW_WAIT = 45.0  # ... each waits this long at most for room and its answer (the lease has 60 s left)
UNWATCH_WAIT = 10.0  # seconds an ended watch's `k8s_unwatch` waits for room (the lease ends it anyway)
WATCH_WAIT = 10.0  # seconds a watch's registration waits for room and its answer (then 429, 404)
WATCHER_CHANNEL = "ctrlscope.watcher"  # prefix of a watch's channel in memory (settings: 16 messages deep)
BOOKMARK_EVERY = 30.0  # seconds between bookmarks when the client allows them
MAX_WARNINGS = 20  # Warning headers on one answer (decode.MAX_CAUSES unknown fields at most)
# What a POST or PUT body (and a DELETE's DeleteOptions) may be; no Content-Type means JSON, as
# the official Python client sends it.
BODY_CONTENT_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
# The kinds a protobuf body may carry, by (resource, subresource) of a POST or PUT: a controller's
# kind when dashboard.k8s.protobuf decodes it (`kubectl create deployment`).
PROTOBUF_KINDS = {
    ("namespaces", None): ("Namespace",),
    ("pods", "eviction"): ("Eviction",),
    **{
        (info.plural, None): (info.kind,)
        for info in RESOURCES.values()
        if (info.api_version, info.kind) in protobuf.KINDS
    },
}


def route(path: str) -> tuple[str, str, str, str | None] | None:
    """(simulation id, URL prefix, path below it, token in the path) for a Kubernetes API path,
    else None."""
    match = SIM_PATH.match(path)
    if match:
        prefix = path[: match.start("rest")] if match["rest"] else path
        return match["id"], prefix, match["rest"] or "/", match["token"]
    # kube-apiserver's go-restful routes answer `/version/` as `/version` (kr8s asks for it on
    # connect, the official client's VersionApi too); `/api/` and `/apis/` start with a prefix.
    if path in ("/version", "/version/", "/api", "/apis") or path.startswith(("/api/", "/apis/", "/openapi/")):
        return DEMO, "", path, None
    if endpoints.is_health_path(path):
        return DEMO, "", path, None
    return None


class KubernetesAPI:
    """ASGI: the Kubernetes API and `/metrics`; anything else goes to `app`."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            if path == "/metrics":
                await _metrics(scope, receive, _nosniff(send))
                return
            target = route(path)
            if target is not None:
                await Call(scope, receive, _nosniff(send), *target).run()
                return
        await self.app(scope, receive, send)


def _nosniff(send: Any) -> Any:
    """`send` that marks every answer `X-Content-Type-Options: nosniff` (this app is outside
    Django's security middleware): streamed watches and lists, 429s and Statuses alike."""

    async def marked(message: Obj) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(name.lower() == b"x-content-type-options" for name, _ in headers):
                headers.append((b"x-content-type-options", b"nosniff"))
            message = {**message, "headers": headers}
        await send(message)

    return marked


# -- websocket upgrades on API paths ------------------------------------------------------------------
class RefuseWebsocket:
    """ASGI: a websocket handshake on a Kubernetes API path (kubectl's exec, attach, port-forward
    and `logs` over websockets) is refused before it is accepted; Daphne answers it 403, and
    client-go falls back to SPDY, a plain POST that the API answers with a Status. Everything
    else goes to `app`."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Obj, receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and route(scope["path"]) is not None:
            message = await receive()
            if message["type"] == "websocket.connect":
                await send({"type": "websocket.close", "code": 1008})
            return None
        return await self.app(scope, receive, send)


# -- one request ------------------------------------------------------------------------------------
class Call:
    def __init__(
        self, scope: Scope, receive: Any, send: Any, sim_id: str, prefix: str, rest: str, path_token: str | None
    ) -> None:
        self.scope, self.receive = scope, receive
        self.started = False  # the answer's status line went out: no second answer can start
        self.send = self._tracked(send)
        self.path_token = path_token
        self.head_only = False  # a HEAD request, answered as GET without its body (dispatch)
        self.sim_id, self.prefix = sim_id, prefix
        self.segments = [s for s in rest.split("/") if s]
        self.health = endpoints.is_health_path(rest)  # /healthz, /livez/ping, … (not /healthz/)
        self.method = scope["method"]
        self.headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        raw = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        self.query = {k: v[-1] for k, v in raw.items()}
        self.accept = self.headers.get("accept", "")
        self.client = (self.headers.get("user-agent") or "unknown")[:MAX_CLIENT]
        # The objects of the body read with a repeated key (controlplane.duplicate_keys).
        self.duplicates: list[Obj] = []

    async def run(self) -> None:
        try:
            authorized = token_matches(self.path_token) if self.path_token is not None else _authorized(self.headers)
            # Health is anonymous as on a cluster, but a wrong token presented is still refused.
            presented = self.path_token is not None or "authorization" in self.headers
            anonymous = self.health and not presented
            if self.segments != ["version"] and not authorized and not anonymous:
                raise Failure(401, "Unauthorized", "Unauthorized")
            # After authentication, before anything is read or written, as upstream's filter chain.
            endpoints.refuse_impersonation(self, authorized)
            await self.dispatch()
        except Failure as failure:
            if self.started:
                await self.cut(failure)
                return
            await respond(self.send, failure.code, failure.status())
        except BaseException as exc:
            if self.started and not isinstance(exc, asyncio.CancelledError):
                # Daphne's own "500" would be a second answer ("HTTP response has already been
                # started"): the connection would stay open and silent. End the body, then let
                # Daphne log the failure.
                await self.cut(exc)
            raise

    def _tracked(self, send: Any) -> Any:
        async def tracked(message: Obj) -> None:
            if message["type"] == "http.response.start":
                self.started = True
            await send(message)

        return tracked

    async def cut(self, why: BaseException) -> None:
        """End an answer that has started, where it is, after a failure (`why`)."""
        log.warning("%s %s: the answer ended early: %s", self.method, self.scope.get("path"), why)
        with contextlib.suppress(Exception):  # (the client may be gone)
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def reply(self, body: Any, code: int = 200, content_type: str = "application/json") -> None:
        await respond(self.send, code, body, content_type)

    async def dispatch(self) -> None:
        self.head_only = self.method == "HEAD"
        if self.head_only:  # a GET without its body, as kube-apiserver answers it
            self.method, self.send = "GET", _headless(self.send)
        try:
            await self.route()
        except Busy as busy:  # kube-apiserver's max-in-flight answer; clients retry after it
            if self.started:
                await self.cut(busy)
                return
            failure = Failure(429, "TooManyRequests", str(busy), {"retryAfterSeconds": busy.retry_after})
            body = json.dumps(failure.status(), separators=(",", ":")).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(busy.retry_after).encode()),
            ]
            await self.send({"type": "http.response.start", "status": 429, "headers": headers})
            await self.send({"type": "http.response.body", "body": body})

    async def route(self) -> None:
        segs = self.segments
        if self.method not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            raise Failure(405, "MethodNotAllowed", f"{self.method} is not supported")
        if self.health:
            await endpoints.health(self, segs)
            return
        if segs == ["metrics"]:
            await endpoints.metrics(self)
            return
        if segs[:1] == ["apis"] and len(segs) > 1 and segs[1] in endpoints.REVIEWS:
            await endpoints.reviews(self, segs)
            return
        served = api_http.served_group(segs)
        if served is not None:
            await self.resource_request(*served)
            return
        if self.method != "GET":
            raise Failure(405, "MethodNotAllowed", f"{self.method} is not supported on this path")
        await self.static(segs)

    async def static(self, segs: list[str]) -> None:
        if segs == ["version"]:
            await self.reply(discovery.VERSION)
        elif segs in (["api"], ["apis"]):
            aggregated = discovery.aggregated("" if segs == ["api"] else "apps", self.accept)
            if aggregated is not None:
                content_type, body = aggregated
                await self.reply(body, content_type=content_type)
            elif segs == ["api"]:
                await self.reply(discovery.api_versions(self.headers.get("host", "127.0.0.1")))
            else:
                await self.reply(discovery.api_group_list())
        elif segs == ["api", "v1"]:
            await self.reply(discovery.resource_list(""))
        elif segs == ["apis", "apps"]:
            await self.reply(discovery.api_group("apps"))
        elif segs == ["apis", "apps", "v1"]:
            await self.reply(discovery.resource_list("apps"))
        elif segs == ["openapi", "v3"]:
            await self.reply(discovery.openapi_v3_index(self.prefix))
        elif segs[:2] == ["openapi", "v3"] and "/".join(segs[2:]) in discovery.OPENAPI_V3_DOCUMENTS:
            await self.reply(discovery.OPENAPI_V3_DOCUMENTS["/".join(segs[2:])])
        elif segs == ["openapi", "v2"] and ("json" in self.accept or not self.accept or "*/*" in self.accept):
            await self.reply(discovery.OPENAPI_V2)
        elif segs == ["openapi", "v2"] and openapi_v2_proto.accepted(self.accept):
            await respond_bytes(self.send, 200, discovery.openapi_v2_protobuf(), openapi_v2_proto.CONTENT_TYPE)
        elif segs == []:
            paths = [
                "/api",
                "/api/v1",
                "/apis",
                "/apis/apps",
                "/apis/apps/v1",
                "/openapi/v2",
                "/openapi/v3",
                "/version",
                *(f"/apis/{group}" for group in endpoints.REVIEWS),
                *(f"/apis/{group}/{version}" for group, (version, _) in endpoints.REVIEWS.items()),
                *(f"/{name}" for name in endpoints.HEALTH),
                *(f"/{name}/{check}" for name, checks in endpoints.HEALTH.items() for check in checks),
                "/metrics",
            ]
            await self.reply({"paths": paths})
        else:
            raise not_found()

    # -- resources --------------------------------------------------------------------------------
    async def resource_request(self, group: str, segs: list[str]) -> None:
        target = api_http.resource_target(group, segs)
        info, namespace, name, subresource = target.info, target.namespace, target.name, target.subresource
        if info.plural == "pods" and subresource in endpoints.POD_SUBRESOURCES:
            await endpoints.pod_subresource(self, namespace, name, subresource)
            return
        method = self.method
        if method == "GET":
            if name is not None:
                await self.get(info, namespace, name, subresource)
            elif api_http.is_watch(self.query):
                await self.watch(info, namespace)
            else:
                await self.list(info, namespace)
            return
        verb = api_http.write_verb(method, target)
        protobuf_kinds = PROTOBUF_KINDS.get((info.plural, subresource), ())
        if verb == "create":
            await self.write(target, verb, await self.body(protobuf_kinds=protobuf_kinds))
        elif verb == "update":
            body = await self.body(protobuf_kinds=protobuf_kinds)
            api_http.named(target)
            await self.write(target, verb, body)
        elif verb == "patch":
            patch_type = api_http.patch_type(self.headers)
            body = await self.body(yaml_ok=patch_type == "apply")
            api_http.named(target)
            await self.write(target, verb, body, patch_type)
        else:
            raw = await self.read_body()
            delete_options: Any = {}
            if raw.strip():
                delete_options = self.decode_body(raw, protobuf_kinds=("DeleteOptions",), yaml_ok=False)
            if not isinstance(delete_options, dict):
                raise Failure(400, "BadRequest", "the body of the request must be a DeleteOptions object")
            await self.write(target, verb, None, None, delete_options)

    async def get(self, info: ResourceInfo, namespace: str | None, name: str, subresource: str | None) -> None:
        answer = await self.ask(
            {
                "op": "k8s_get",
                "resource": info.plural,
                "namespace": namespace,
                "name": name,
                "subresource": subresource,
                "table": _wants_table(self.accept),
                "includeObject": self.query.get("includeObject"),
            }
        )
        await self.reply_text(answer)

    async def list(self, info: ResourceInfo, namespace: str | None) -> None:
        limit = api_http.list_limit(self.query)
        answer = await self.ask_stream(
            {
                "op": "k8s_list",
                "resource": info.plural,
                "namespace": namespace,
                "labelSelector": self.query.get("labelSelector"),
                "fieldSelector": self.query.get("fieldSelector"),
                "limit": limit,
                "continue": self.query.get("continue"),
                "table": _wants_table(self.accept),
                "includeObject": self.query.get("includeObject"),
            }
        )
        await self.reply_text(answer)

    async def write(
        self,
        target: api_http.Target,
        verb: str,
        body: Any,
        patch_type: str | None = None,
        delete_options: Obj | None = None,
    ) -> None:
        options, dry_run = api_http.write_options(verb, self.query, delete_options or {})
        request = api_http.write_request(
            self.client, verb, target, body, patch_kind=patch_type, options=options, duplicates=self.duplicates
        )
        if dry_run:
            result = await self.ask({"op": "k8s_dryrun", "request": request})
            if "body" not in result:
                raise Failure(400, "BadRequest", str(result.get("error") or "bad request"))
            code, answer = result["code"], result["body"]
        else:
            result = await self.ask({"op": "act", "action": {"request": request}, "source": self.client})
            response = result.get("response")
            if response is None:
                raise Failure(400, "BadRequest", str(result.get("error") or "the request was refused"))
            code, answer = response
        # KEP-2885: fieldValidation=Warn's unknown fields come back as `Warning: 299 - "…"`
        # headers, which kubectl prints as `Warning: unknown field "spec.replcas"` (a dry run's too).
        warnings = [(b"warning", f"299 - {json.dumps(str(text))}".encode()) for text in result.get("warnings") or ()]
        await respond(self.send, int(code), answer, headers=tuple(warnings[:MAX_WARNINGS]))

    # -- watch ------------------------------------------------------------------------------------
    async def watch(self, info: ResourceInfo, namespace: str | None) -> None:
        layer = get_channel_layer()
        channel = await _watcher_channel(layer)
        timeout = api_http.watch_timeout(self.query)
        bookmarks = api_http.wants_bookmarks(self.query)
        await ensure_running(self.sim_id)
        try:
            answer = await self.ask_watch(
                {
                    "op": "k8s_watch",
                    "channel": channel,
                    "resource": info.plural,
                    "namespace": namespace,
                    "labelSelector": self.query.get("labelSelector"),
                    "fieldSelector": self.query.get("fieldSelector"),
                    "resourceVersion": self.query.get("resourceVersion"),
                    "sendInitialEvents": self.query.get("sendInitialEvents") == "true",
                    "bookmarks": bookmarks,
                    "table": _wants_table(self.accept),
                    "includeObject": self.query.get("includeObject"),
                }
            )
            if "lines" not in answer:
                await self.reply_text(answer)
                return
            await self.send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-cache, private")],
                }
            )
            if self.head_only:  # the headers of the watch, and no stream that never ends
                await self.chunk("", last=True)
                return
            try:
                await self.stream(layer, channel, answer, info, timeout, bookmarks)
            except Exception as exc:  # (not CancelledError: the client went away)
                await self.end_with_error(exc)
        finally:
            await _unwatch(self.sim_id, channel)  # (also after a registration that timed out)

    async def stream(
        self, layer: Any, channel: str, answer: Obj, info: ResourceInfo, timeout: float | None, bookmarks: bool
    ) -> None:
        """The watch's events as they come, its bookmarks, and its lease renewed every
        `RENEW_EVERY` seconds by a task beside it (`renew`): the events keep flowing while a
        renewal waits for a busy host."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout is not None else None
        revision = int(answer.get("revision") or 0)
        # Even empty: Daphne (twisted) writes the status line and headers with the first body
        # write, and a client waiting for them must not wait for the first event.
        await self.chunk(answer["lines"])
        if answer.get("end"):
            await self.chunk("", last=True)
            return
        disconnected = asyncio.ensure_future(wait_disconnect(self.receive))
        receiving: asyncio.Future[Obj] | None = None
        renewing: asyncio.Future[Obj | None] | None = None
        renew_at = loop.time() + RENEW_EVERY
        bookmark_at = loop.time() + BOOKMARK_EVERY
        try:
            while True:
                now = loop.time()
                if deadline is not None and now >= deadline:
                    break
                if now >= renew_at:
                    renew_at = now + RENEW_EVERY
                    if renewing is None:  # (one at a time: a slow one is still within its RENEW_WAIT)
                        renewing = asyncio.ensure_future(self.renew(channel))
                if renewing is not None and renewing.done():
                    lost, renewing = renewing.result(), None
                    if lost is not None:  # never end silently: the client relists
                        await self.chunk(_error_line(lost))
                        await self.chunk("", last=True)
                        return
                if bookmarks and now >= bookmark_at:
                    await self.chunk(_bookmark_line(info, revision))
                    bookmark_at = now + BOOKMARK_EVERY
                wake = min(renew_at, bookmark_at if bookmarks else renew_at)
                if deadline is not None:
                    wake = min(wake, deadline)
                if receiving is None:
                    receiving = asyncio.ensure_future(layer.receive(channel))
                waiting: set[asyncio.Future[Any]] = {receiving, disconnected}
                if renewing is not None:
                    waiting.add(renewing)
                done, _ = await asyncio.wait(waiting, timeout=max(0.0, wake - now), return_when=asyncio.FIRST_COMPLETED)
                if disconnected in done:
                    return
                if receiving not in done:
                    continue
                message, receiving = receiving.result(), None
                after = message.get("after")
                if isinstance(after, int) and after > revision and not message.get("error"):
                    # Messages before this one never came: the channel layer dropped them after
                    # they waited longer than its expiry. Never a gap: the client relists.
                    await self.chunk(_error_line(_expired(MISSED)))
                    await self.chunk("", last=True)
                    return
                revision = int(message.get("revision") or revision)
                if message.get("data"):  # the lines, encoded once for every watch that shares them
                    await self.send({"type": "http.response.body", "body": message["data"], "more_body": True})
                if message.get("text"):
                    await self.chunk(message["text"])
                if message.get("end"):
                    if message.get("error"):  # it ended with an ERROR event: nothing after it
                        await self.chunk("", last=True)
                        return
                    break
            if bookmarks:
                await self.chunk(_bookmark_line(info, revision))
            await self.chunk("", last=True)
        finally:
            for task in (disconnected, receiving, renewing):
                if task is not None:
                    task.cancel()

    async def renew(self, channel: str) -> Obj | None:
        """Renew the watch's lease through the host's watch channel, waiting (up to `RENEW_WAIT`)
        for room and for the answer, never refused by the limit on requests. None when renewed,
        else the Status the stream ends with: 404 when the simulation is gone, 410 Expired when
        the host no longer has the watcher or did not answer in time (events may be missing)."""
        try:
            await ensure_running(self.sim_id)
        except Failure as failure:
            return failure.status()
        from dashboard.host import request_watch

        cmd = {"op": "k8s_renew", "channel": channel, "client": self.client}
        try:
            renewal = await request_watch(self.sim_id, cmd, timeout=RENEW_WAIT)
        except (Busy, LookupError):
            return _expired(NOT_RENEWED)
        if not renewal.get("alive"):
            # The host no longer has this watcher (its lease ran out while this stream could
            # not renew): events may be missing, so the client relists.
            return _expired(LOST_WATCHER)
        return None

    async def end_with_error(self, exc: Exception) -> None:
        """A watch stream that failed midway ends with an ERROR event (the failure's Status; 500
        InternalError, as kube-apiserver sends for an internal failure, for anything else)."""
        if isinstance(exc, Failure):
            status = exc.status()
        else:
            log.error("the watch %s failed", self.scope.get("path"), exc_info=exc)
            status = Failure(
                500,
                "InternalError",
                f"Internal error occurred: the watch failed ({type(exc).__name__}); "
                "list again and watch from the list's resourceVersion",
            ).status()
        with contextlib.suppress(Exception):  # (the client may be gone)
            await self.chunk(_error_line(status))
            await self.chunk("", last=True)

    async def chunk(self, text: str, *, last: bool = False) -> None:
        await self.send({"type": "http.response.body", "body": text.encode(), "more_body": not last})

    # -- plumbing ---------------------------------------------------------------------------------
    async def ask(self, cmd: Obj) -> Obj:
        await ensure_running(self.sim_id)
        from dashboard.host import request

        cmd = {**cmd, "client": self.client}  # the connected-clients panel counts it (k8s_ops.clients)
        try:
            return await request(self.sim_id, cmd, control=True)
        except NoAnswer as silent:
            raise timed_out(silent) from None
        except LookupError:
            raise not_found(f'simulation "{self.sim_id}" is not running') from None

    async def ask_watch(self, cmd: Obj) -> Obj:
        """A watch's registration, through the host's watch channel (`host.request_watch`): not
        counted by the limit on requests (kube-apiserver's max-in-flight leaves watches out too);
        `Busy` (429) only when the watch channel itself stays full for `WATCH_WAIT`."""
        from dashboard.host import request_watch

        cmd = {**cmd, "client": self.client}
        try:
            return await request_watch(self.sim_id, cmd, timeout=WATCH_WAIT)
        except NoAnswer as silent:
            raise timed_out(silent) from None
        except LookupError:
            raise not_found(f'simulation "{self.sim_id}" is not running') from None

    async def ask_stream(self, cmd: Obj) -> Answer:
        """An expensive read (a list): its answer comes in parts (`host.request_stream`)."""
        await ensure_running(self.sim_id)
        from dashboard.host import request_stream

        cmd = {**cmd, "client": self.client}
        try:
            return await request_stream(self.sim_id, cmd, control=True)
        except NoAnswer as silent:
            raise timed_out(silent) from None
        except LookupError:
            raise not_found(f'simulation "{self.sim_id}" is not running') from None

    async def reply_text(self, answer: Obj | Answer) -> None:
        if isinstance(answer, Answer):
            if "code" not in answer.head:
                await answer.aclose()
                raise Failure(400, "BadRequest", str(answer.head.get("error") or "bad request"))
            if not answer.more:
                await respond(self.send, int(answer.head["code"]), answer.first)
                return
            # Several parts: sent as they come (chunked), each within the host's timeout.
            start = {"type": "http.response.start", "status": int(answer.head["code"])}
            await self.send({**start, "headers": [(b"content-type", b"application/json")]})
            async for text in answer.text():
                await self.send({"type": "http.response.body", "body": text.encode(), "more_body": True})
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if "body" not in answer:
            raise Failure(400, "BadRequest", str(answer.get("error") or "bad request"))
        await respond(self.send, int(answer["code"]), answer["body"])

    async def read_body(self) -> bytes:
        chunks = []
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        return b"".join(chunks)

    async def body(self, *, yaml_ok: bool = False, protobuf_kinds: tuple[str, ...] | None = None) -> Any:
        """The request's body as JSON data. `protobuf_kinds`: a POST/PUT body, which may be JSON,
        YAML or protobuf (of these kinds), any other Content-Type is 415; None: a patch (its
        Content-Type is the patch type, checked by the caller)."""
        raw = await self.read_body()
        if not raw.strip():
            raise Failure(400, "BadRequest", "the body of the request was empty")
        if protobuf_kinds is None:
            yaml_ok = yaml_ok or "yaml" in self.headers.get("content-type", "")
            return decode(self.limited(raw), yaml_ok=yaml_ok, duplicates=self.duplicates)
        return self.decode_body(raw, protobuf_kinds=protobuf_kinds, yaml_ok=True, duplicates=self.duplicates)

    def limited(self, raw: bytes) -> bytes:
        return api_http.limited(raw)  # kube-apiserver reads at most 3 MiB of a body

    def decode_body(
        self, raw: bytes, *, protobuf_kinds: tuple[str, ...], yaml_ok: bool, duplicates: list[Obj] | None = None
    ) -> Any:
        """A body negotiated by its Content-Type (upstream's negotiation of the request's
        serializer): JSON, YAML or Kubernetes protobuf; 415 listing the accepted types otherwise.
        `duplicates` receives the objects read with a repeated key (None: they are not wanted)."""
        raw = self.limited(raw)
        media_type = self.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type in ("", "application/json", "*/*"):
            return decode(raw, yaml_ok=False, duplicates=duplicates)
        if media_type == "application/yaml" and yaml_ok:
            return decode(raw, yaml_ok=True, duplicates=duplicates)
        if media_type == protobuf.MEDIA_TYPE:
            if not protobuf_kinds:
                raise Failure(
                    415,
                    "UnsupportedMediaType",
                    "ctrlscope decodes protobuf bodies of Namespace, Deployment, DeleteOptions and Eviction only; "
                    "send this one as application/json",
                )
            try:
                return protobuf.decode(raw, protobuf_kinds)[2]
            except protobuf.ProtobufError as exc:
                raise Failure(400, "BadRequest", f"the body of the request could not be decoded: {exc}") from None
            except protobuf.UnsupportedKind as exc:
                raise Failure(
                    415,
                    "UnsupportedMediaType",
                    f"ctrlscope does not decode {exc} from protobuf; send it as application/json",
                ) from None
        accepted = ", ".join(t for t in BODY_CONTENT_TYPES if yaml_ok or t != "application/yaml")
        raise Failure(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: {accepted}",
        )


def _headless(send: Any) -> Any:
    """`send` for a HEAD request: the status and headers of the GET, no body bytes."""

    async def headless(message: Obj) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return headless


def _wants_table(accept: str) -> bool:
    return "as=Table" in accept


LOST_WATCHER = "the watch was ended by the server; list again and watch from the list's resourceVersion"
MISSED = (
    "the watcher fell behind: events waited for it longer than the server keeps them; "
    "list again and watch from the list's resourceVersion"
)
NOT_RENEWED = (
    "the watch's lease could not be renewed in time (the server is overloaded); "
    "list again and watch from the list's resourceVersion"
)


_expired = api_http.expired
_error_line = api_http.error_line
_bookmark_line = api_http.bookmark_line


def _authorized(headers: dict[str, str]) -> bool:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    return scheme.lower() == "bearer" and token_matches(token.strip())


async def _watcher_channel(layer: Any) -> str:
    """A watch's channel: in memory, one named to get its own capacity (settings: 16 messages).
    channels_redis serves every channel of a process from one queue of the default prefix (a
    channel of another prefix is never read while that queue is): there, the default."""
    if isinstance(layer, InMemoryChannelLayer):
        return str(await layer.new_channel(prefix=WATCHER_CHANNEL))
    return str(await layer.new_channel())


async def _unwatch(sim_id: str, channel: str) -> None:
    """Tell the host the watch is over (no answer awaited). A full watch channel is waited out
    by a task of its own, for up to `UNWATCH_WAIT` (the request ends now); if it never has room,
    the watcher's lease ends it."""
    from dashboard.host import send_watch_command

    cmd = {"op": "k8s_unwatch", "channel": channel}
    try:
        await send_watch_command(sim_id, cmd, wait=0.0)
    except Busy:
        task = asyncio.ensure_future(_unwatch_later(sim_id, cmd))
        _UNWATCHING.add(task)
        task.add_done_callback(_UNWATCHING.discard)
    except Exception:  # the channel layer's own trouble: the lease ends the watcher
        log.warning("could not end the watch %s of %s", channel, sim_id, exc_info=True)


async def _unwatch_later(sim_id: str, cmd: Obj) -> None:
    from dashboard.host import send_watch_command

    with contextlib.suppress(Exception):
        await send_watch_command(sim_id, cmd, wait=UNWATCH_WAIT)


_UNWATCHING: set[asyncio.Future[None]] = set()  # the unwatches waiting for room (kept referenced)


# -- /metrics -----------------------------------------------------------------------------------------
async def _metrics(scope: Scope, receive: Any, send: Any) -> None:
    from dashboard.k8s.metrics import exposition

    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
    if not _authorized(headers):
        await respond(send, 401, Failure(401, "Unauthorized", "Unauthorized").status())
        return
    content_type, text = await exposition()
    await respond(send, 200, text, content_type)

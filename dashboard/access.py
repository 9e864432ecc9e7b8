"""Who may control a simulation: whoever opened the dashboard with its access token.

The token is random (printed by the run command with a ready-to-open URL) unless
`CTRLSCOPE_TOKEN` sets it. `/?token=…` (any page) stores the token's fingerprint in the session
and redirects to the same page without the token; the websocket reads that session (or a `token`
query parameter, for scripts). A session grants control only while its fingerprint is the current
token's: a server restarted with a new token turns every older session read-only. Without it the
pages are read-only.

The websocket also checks where a handshake comes from (`SameOriginWebsocket`): the Host header
must be an allowed host (DNS rebinding) and a browser's Origin must be exactly the dashboard's own
scheme, host and port.

The session cookie is ambient: a browser sends it to every port of the host (cookies have no
port), so a server on another port that the browser visits receives it. It therefore grants
control only to a request that says it comes from the dashboard's own page: a websocket
handshake, or a request that changes something (POST ...), whose Origin header is exactly the
dashboard's own origin (`from_own_origin`). Without an Origin (not a browser) the cookie grants
nothing; the token itself (`?token=` on the websocket, `Authorization: Bearer`) still does. The
cookies' names carry the instance, the port the page was served from (`InstanceCookies`), so
two servers on two ports of one host each keep their own session and CSRF cookies.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from http.cookies import Morsel
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.request import validate_host
from django.shortcuts import render
from django.utils.crypto import salted_hmac

from dashboard.redact import is_token_param

SESSION_KEY = "ctrlscope_control"
_FINGERPRINT_SALT = "ctrlscope.access.session-control"


def token_matches(candidate: Any) -> bool:
    return isinstance(candidate, str) and secrets.compare_digest(candidate.encode(), settings.CTRLSCOPE_TOKEN.encode())


def token_fingerprint(token: str) -> str:
    """What a session keeps of the token it was opened with: an HMAC (keyed by SECRET_KEY, with a
    fixed label), never the token itself -- signed-cookie sessions are readable by whoever holds
    the cookie."""
    return salted_hmac(_FINGERPRINT_SALT, token, algorithm="sha256").hexdigest()


def _session_grants(session: Any) -> bool:
    stored = session.get(SESSION_KEY) if session is not None else None
    return isinstance(stored, str) and secrets.compare_digest(stored, token_fingerprint(settings.CTRLSCOPE_TOKEN))


def can_control(request: HttpRequest) -> bool:
    """The session was opened with the current token and, for a request that changes something,
    the request comes from the dashboard's own page (its Origin)."""
    if not _session_grants(request.session):
        return False
    return request.method in ("GET", "HEAD", "OPTIONS", "TRACE") or from_own_origin(request)


def from_own_origin(request: HttpRequest) -> bool:
    """The request's Origin header is exactly the origin it was sent to: the scheme, host and
    port of its Host (default ports normalised). Browsers send it with every POST."""
    origin = request.headers.get("Origin")
    host = request.META.get("HTTP_HOST") or request.META.get("SERVER_NAME", "")
    scheme = "https" if request.is_secure() else "http"
    return origin is not None and _origin_matches(origin, _host_port(host, scheme), scheme)


def has_token(request: HttpRequest) -> bool:
    """The request shows the token: a session opened with it, or `Authorization: Bearer <token>`
    (a script, as the Kubernetes API takes it)."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return can_control(request) or (scheme.lower() == "bearer" and token_matches(token.strip()))


def scope_can_control(scope: dict[str, Any]) -> bool:
    """The handshake shows the token (`?token=`), or carries a session opened with it and comes
    from the dashboard's own page (an Origin header, exactly the dashboard's own origin)."""
    origin = [value for name, value in scope.get("headers", ()) if name.lower() == b"origin"]
    if origin and same_origin(scope) and _session_grants(scope.get("session")):
        return True
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    return any(token_matches(value) for name, value in query if is_token_param(name))


class TokenMiddleware:
    """`?token=` on any page: remember its fingerprint in the session and drop it from the address bar."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        names = [name for name in request.GET if is_token_param(name)]
        if names and request.method == "GET" and not request.path.startswith(("/api", "/apis")):
            # Every spelling the access log redacts (dashboard.redact), and no other, is the token.
            if not all(token_matches(value) for name in names for value in request.GET.getlist(name)):
                message = "Wrong access token. Use the URL the run command printed."
                return render(request, "error.html", {"status": 403, "message": message}, status=403)
            request.session[SESSION_KEY] = token_fingerprint(settings.CTRLSCOPE_TOKEN)
            rest = {k: v for k, v in request.GET.lists() if not is_token_param(k)}
            query = urlencode(rest, doseq=True)
            return HttpResponseRedirect(request.path + (f"?{query}" if query else ""))
        return self.get_response(request)


# -- the websocket's origin ----------------------------------------------------------------------------
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _host_port(netloc: str, scheme: str) -> tuple[str, int] | None:
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host or parts.username is not None or parts.password is not None or parts.path or parts.query:
        return None
    return host.lower(), port if port is not None else _DEFAULT_PORTS[scheme]


def same_origin(scope: dict[str, Any]) -> bool:
    """A websocket handshake may proceed: its Host is allowed and its Origin, if any, is exactly
    the dashboard's own (scheme, host and port of that Host; ws -> http, wss -> https).

    Browsers always send an Origin; a handshake without one is not a page (a script, a benchmark)
    and gets only what its cookie or `?token=` grants -- as Jupyter's `check_origin` does."""
    headers: dict[bytes, bytes] = {}
    for name, value in scope.get("headers", ()):
        name = name.lower()
        if name not in (b"host", b"origin"):
            continue
        if name in headers:  # two Host or Origin headers: refuse rather than guess
            return False
        headers[name] = value
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    host_header = headers.get(b"host")
    if host_header is None:
        return False
    own = _host_port(host_header.decode("latin-1"), scheme)
    # ALLOWED_HOSTS names IPv6 addresses in brackets, as Django's own Host check does.
    if own is None or not validate_host(f"[{own[0]}]" if ":" in own[0] else own[0], settings.ALLOWED_HOSTS):
        return False
    origin = headers.get(b"origin")
    if origin is None:
        return True
    return _origin_matches(origin.decode("latin-1"), own, scheme)


def _origin_matches(origin: str, own: tuple[str, int] | None, scheme: str) -> bool:
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if own is None or parts.scheme.lower() != scheme or parts.path not in ("", "/") or parts.query or parts.fragment:
        return False
    return _host_port(parts.netloc, scheme) == own


# -- cookies of this instance ----------------------------------------------------------------------------
def instance_cookie(name: str, host: str, scheme: str) -> str:
    """The name on the wire of the cookie `name` (settings.SESSION_COOKIE_NAME, CSRF_COOKIE_NAME)
    for the dashboard served at `host` (a Host header): suffixed with its port, `ctrlscope_session_8000`."""
    own = _host_port(host, scheme)
    return f"{name}_{own[1] if own else 0}"


def _instance_names(host: str, scheme: str) -> dict[str, str]:
    return {
        name: instance_cookie(name, host, scheme) for name in (settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME)
    }


class InstanceCookies:
    """Django middleware, outside the session and CSRF middlewares: they read and write their
    cookies under the settings' names, and the browser holds them under this instance's
    (`instance_cookie`). A cookie under the bare name is ignored: another server of the host may
    have set it."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        names = self._incoming(request)
        return self._outgoing(self.get_response(request), names)

    async def _acall(self, request: HttpRequest) -> Any:
        names = self._incoming(request)
        return self._outgoing(await self.get_response(request), names)

    @staticmethod
    def _incoming(request: HttpRequest) -> dict[str, str]:
        host = request.META.get("HTTP_HOST") or request.META.get("SERVER_NAME", "")
        names = _instance_names(host, "https" if request.is_secure() else "http")
        for name, wire in names.items():
            request.COOKIES.pop(name, None)
            if wire in request.COOKIES:
                request.COOKIES[name] = request.COOKIES.pop(wire)
        return names

    @staticmethod
    def _outgoing(response: HttpResponse, names: dict[str, str]) -> HttpResponse:
        for name, wire in names.items():
            morsel = response.cookies.pop(name, None)
            if morsel is not None:
                renamed: Morsel[str] = Morsel()
                renamed.set(wire, morsel.value, morsel.coded_value)
                renamed.update(morsel)
                response.cookies[wire] = renamed
        return response


class InstanceCookiesWebsocket:
    """ASGI middleware between Channels' CookieMiddleware and SessionMiddleware: the websocket
    reads the session from this instance's cookie, as `InstanceCookies` does for pages."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        host = next((v.decode("latin-1") for n, v in scope.get("headers", ()) if n.lower() == b"host"), "")
        cookies = dict(scope.get("cookies", {}))
        for name, wire in _instance_names(host, "https" if scope.get("scheme") in ("wss", "https") else "http").items():
            cookies.pop(name, None)
            if wire in cookies:
                cookies[name] = cookies.pop(wire)
        return await self.app({**scope, "cookies": cookies}, receive, send)


class SameOriginWebsocket:
    """ASGI middleware: refuses any websocket that is not `same_origin`: closed before it is
    accepted, with code 4403 (Daphne answers the handshake with 403)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not same_origin(scope):
            message = await receive()
            if message["type"] == "websocket.connect":
                await send({"type": "websocket.close", "code": 4403})
            return None
        return await self.app(scope, receive, send)

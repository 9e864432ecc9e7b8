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
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

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
    return _session_grants(request.session)


def scope_can_control(scope: dict[str, Any]) -> bool:
    if _session_grants(scope.get("session")):
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
    try:
        parts = urlsplit(origin.decode("latin-1").strip())
    except ValueError:
        return False
    if parts.scheme.lower() != scheme or parts.path not in ("", "/") or parts.query or parts.fragment:
        return False
    return _host_port(parts.netloc, scheme) == own


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

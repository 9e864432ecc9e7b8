"""Who may control a simulation: whoever opened the dashboard with its access token.

The token is random (printed by the run command with a ready-to-open URL) unless
`CTRLSCOPE_TOKEN` sets it. `/?token=…` (any page) stores a signed flag in the session and
redirects to the same page without the token; the websocket reads that session (or a `token`
query parameter, for scripts). Without it the pages are read-only.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden, HttpResponseRedirect

SESSION_FLAG = "ctrlscope_control"


def token_matches(candidate: Any) -> bool:
    return isinstance(candidate, str) and secrets.compare_digest(candidate.encode(), settings.CTRLSCOPE_TOKEN.encode())


def can_control(request: HttpRequest) -> bool:
    return bool(request.session.get(SESSION_FLAG))


def scope_can_control(scope: dict[str, Any]) -> bool:
    session = scope.get("session")
    if session is not None and session.get(SESSION_FLAG):
        return True
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return any(token_matches(t) for t in query.get("token", []))


class TokenMiddleware:
    """`?token=` on any page: remember it in the session and drop it from the address bar."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        if "token" in request.GET and request.method == "GET" and not request.path.startswith(("/api", "/apis")):
            if not token_matches(request.GET["token"]):
                return HttpResponseForbidden("Wrong access token. Use the URL the run command printed.")
            request.session[SESSION_FLAG] = True
            rest = {k: v for k, v in request.GET.lists() if k != "token"}
            query = urlencode(rest, doseq=True)
            return HttpResponseRedirect(request.path + (f"?{query}" if query else ""))
        return self.get_response(request)

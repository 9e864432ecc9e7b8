"""The web layer against a page elsewhere (issue #15): no reflected markup and a Content-Security-
Policy on every page, a websocket only for the dashboard's own origin, sessions bound to the token
they were opened with, SameSite=Strict cookies, HEAD as GET, and a weak token refused at start.

Requests go through the whole ASGI application (the Kubernetes API and /metrics are outside
Django), as Daphne would hand them over."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
from urllib.parse import quote, urlencode

import pytest
from channels.testing import HttpCommunicator, WebsocketCommunicator
from django.core import signing
from django.test import AsyncClient, Client

from dashboard.access import SESSION_KEY, same_origin
from dashboard.asgi import application
from dashboard.urls import urlpatterns

from .conftest import OWN_ORIGIN, TOKEN
from .live_server import SERVERS, free_port, live_server

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOST = b"127.0.0.1:8000"
SELF = b"http://127.0.0.1:8000"

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    '"><script>alert(1)</script>',
    "'><svg/onload=alert(1)>",
    "javascript:alert(1)",
    "ünï\u202e<b>cödé</b>",
    "a%00<i>b</i>\x00",
]
# What must never appear in a text/html body: the payloads' markup, unescaped.
MARKUP = re.compile(
    r"<img src=x|<script>alert|<svg/onload|<b>cödé|<i>b</i>|(?:href|src|action|formaction|data)=[\"']?javascript:",
    re.IGNORECASE,
)
VALID = {
    "sim_id": "demo",
    "namespace": "default",
    "name": "web",
    "controller": "replicaset",
    "a_id": "demo",
    "b_id": "demo",
    "seq": "1",
}

pytestmark = pytest.mark.django_db(transaction=True)


def _dashboard_paths(value: str) -> list[str]:
    """Every URL pattern of the dashboard, with each of its parameters in turn set to `value`
    (quoted as a browser sends it) and the others valid."""
    paths = []
    for pattern in urlpatterns:
        route = str(pattern.pattern)
        params = re.findall(r"<(?:\w+:)?(\w+)>", route)
        for hostile in params or [None]:
            path = route
            for param in params:
                raw = value if param == hostile else VALID[param]
                path = re.sub(rf"<(?:\w+:)?{param}>", quote(raw, safe=""), path)
            paths.append("/" + path)
    return paths


def _other_paths(value: str) -> list[str]:
    v = quote(value, safe="")
    return [
        f"/api/v1/namespaces/{v}/pods/{v}",
        f"/api/v1/namespaces/default/pods/{v}",
        f"/apis/apps/v1/namespaces/{v}/replicasets",
        f"/apis/{v}/v1/{v}",
        f"/api/v1/{v}",
        f"/openapi/{v}",
        f"/sim/{v}/k8s/api/v1/pods",
        f"/sim/demo/k8s/token/{v}/api/v1/pods",
        f"/sim/demo/k8s/api/v1/namespaces/{v}/pods",
        "/version",
        "/metrics",
        f"/metrics/{v}",
        f"/ws/sim/{v}/",
        "/ws/sim/demo/",
        f"/ws/{v}",
        f"/{v}",
        f"/static/{v}",
    ]


async def _fetch(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict:
    comm = HttpCommunicator(application, method, path, headers=[(b"host", HOST), *headers])
    try:
        return await comm.get_response(timeout=10)
    finally:
        await comm.wait(timeout=10)


def _check(response: dict, what: str) -> None:
    headers = {k.decode().lower(): v.decode() for k, v in response["headers"]}
    assert response["status"] < 500, (what, response["status"], response["body"][:300])
    # Nothing is sniffed into HTML: every answer names its type and forbids sniffing.
    assert headers.get("x-content-type-options") == "nosniff", what
    if headers.get("content-type", "").startswith("text/html"):
        body = response["body"].decode("utf-8", "replace")
        assert not MARKUP.search(body), (what, body[:2000])
        csp = headers.get("content-security-policy", "")
        assert "script-src 'self'" in csp and "default-src 'self'" in csp, (what, headers)


@pytest.mark.parametrize("payload", HOSTILE)
async def test_no_url_reflects_markup(running_host, payload):
    keys = ("x", "sync", "scenario", "seed", "mark", "watch", "labelSelector", "at", "change")
    query = urlencode({k: payload for k in keys})
    with_token = [(b"authorization", f"Bearer {TOKEN}".encode())]
    for path in _dashboard_paths(payload) + _other_paths(payload):
        for headers in ([], with_token):
            for url in (path, f"{path}?{query}", f"{path}?token={quote(payload)}"):
                _check(await _fetch("GET", url, headers), f"GET {url} {headers}")


@pytest.mark.parametrize("payload", HOSTILE[:2])
async def test_the_start_forms_errors_are_escaped(running_host, payload):
    client = AsyncClient(**OWN_ORIGIN)
    await client.get(f"/?token={TOKEN}")
    data = {"scenario": payload, "seed": payload, "pause_before": payload, "mark": payload}
    answer = await client.post("/sim/new", data)
    assert answer.status_code == 400 and b"seed: must be a whole number" in answer.content
    assert not MARKUP.search(answer.content.decode())
    assert "script-src 'self'" in answer["Content-Security-Policy"]


async def test_errors_are_escaped_templates(running_host):
    """The probe's own example: a 400 that echoed the controller's name into text/html."""
    response = await _fetch("GET", "/sim/demo/syncs/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E/default/web", [])
    assert response["status"] == 400
    assert b"&lt;img src=x onerror=alert(1)&gt;" in response["body"]
    assert b"<img" not in response["body"]


async def test_every_page_carries_the_security_headers(running_host):
    response = await _fetch("GET", "/sim/demo/", [])
    headers = {k.decode().lower(): v.decode() for k, v in response["headers"]}
    csp = dict(d.strip().split(" ", 1) for d in headers["content-security-policy"].split(";"))
    assert csp == {
        "default-src": "'self'",
        "script-src": "'self'",
        "style-src": "'self'",
        "img-src": "'self' data:",
        "connect-src": "'self'",
        "object-src": "'none'",
        "base-uri": "'none'",
        "frame-ancestors": "'none'",
        "form-action": "'self'",
    }
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "same-origin"
    assert headers["cross-origin-opener-policy"] == "same-origin"
    assert headers["x-content-type-options"] == "nosniff"


def test_pages_have_no_inline_script_style_or_handler(running_host):
    """What the CSP forbids, the pages do not need: no inline <script>/<style>, no on…= handler,
    no style= attribute (htmx's own indicator styles are off, and it evaluates nothing)."""
    client = Client()
    client.get(f"/?token={TOKEN}")
    for path in ("/", "/sim/demo/", "/sim/new?scenario=demo", "/nope"):
        body = client.get(path).content.decode()
        assert not re.search(r"<script(?![^>]*\ssrc=)[^>]*>", body), path
        assert not re.search(r"<style|\son[a-z]+\s*=|\sstyle\s*=|hx-on|javascript:", body, re.IGNORECASE), path
        assert '"includeIndicatorStyles":false' in body and '"allowEval":false' in body
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        assert not re.search(r"\sstyle\s*=|\son[a-z]+\s*=|<style", text), template


def test_a_failed_csrf_check_is_our_error_page_under_the_policy(running_host):
    """Django's own CSRF failure page has an inline <style> that the policy refuses."""
    client = Client(enforce_csrf_checks=True)
    client.get(f"/?token={TOKEN}")
    response = client.post("/sim/new", {"scenario": "demo"})
    body = response.content.decode()
    assert response.status_code == 403 and "CSRF" in body
    assert "content-security-policy" in {k.lower() for k in response.headers}
    assert not re.search(r"<style|\sstyle\s*=", body, re.IGNORECASE)


# -- HEAD ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/", "/sims/", "/sim/new", "/sim/demo/", "/sim/demo/status.json"])
async def test_head_answers_as_get(running_host, path):
    client = AsyncClient()
    get, head = await client.get(path), await client.head(path)
    assert head.status_code == get.status_code == 200
    assert head["Content-Type"] == get["Content-Type"]


# -- the websocket's origin -----------------------------------------------------------------------------
# The test client's pages are served at http://testserver (port 80): its cookies carry that port.
SESSION_80, CSRF_80 = "ctrlscope_session_80", "ctrlscope_csrf_80"


def _session_cookie() -> str:
    client = Client()
    assert client.get(f"/sim/demo/?token={TOKEN}").status_code == 302
    return client.cookies[SESSION_80].value


def _cookie_for(host: bytes, value: str) -> bytes:
    """The session cookie as the browser sends it to the dashboard at `host`."""
    from dashboard.access import instance_cookie

    return f"{instance_cookie('ctrlscope_session', host.decode(), 'http')}={value}".encode()


ORIGINS = [
    # (Host, Origin or None, accepted)
    (HOST, SELF, True),
    (b"127.0.0.1", b"http://127.0.0.1", True),
    (b"127.0.0.1", b"http://127.0.0.1:80", True),  # default port, normalised
    (b"LOCALHOST:8000", b"http://localhost:8000", True),
    (HOST, None, True),  # no Origin: not a browser; control only with ?token=, never the cookie
    (HOST, b"http://127.0.0.1:3000", False),  # another local server's page
    (HOST, b"http://127.0.0.1", False),
    (HOST, b"https://127.0.0.1:8000", False),  # another scheme
    (HOST, b"ws://127.0.0.1:8000", False),
    (HOST, b"null", False),  # sandboxed frames, file: pages
    (HOST, b"http://localhost:8000", False),  # an allowed host, but not this page's
    (HOST, b"http://evil.example", False),
    (HOST, b"http://127.0.0.1:8000.evil.example", False),
    (HOST, b"http://user@127.0.0.1:8000", False),
    (b"evil.example:8000", b"http://evil.example:8000", False),  # DNS rebinding: a host not allowed
    (b"evil.example:8000", None, False),
]


@pytest.mark.parametrize(("host", "origin", "accepted"), ORIGINS)
@pytest.mark.parametrize("cookie", [False, True])
@pytest.mark.parametrize("token", [False, True])
async def test_only_the_dashboards_own_origin_may_open_the_websocket(
    running_host, host, origin, accepted, cookie, token
):
    headers = [(b"host", host)]
    if origin is not None:
        headers.append((b"origin", origin))
    if cookie:
        headers.append((b"cookie", _cookie_for(host, await _async_session_cookie())))
    path = "/ws/sim/demo/" + (f"?token={TOKEN}" if token else "")
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await comm.connect(timeout=5)
    assert connected is accepted, code
    if connected:
        while True:
            message = json.loads(await comm.receive_from(timeout=5))
            if message["type"] == "hello":
                break
        # The cookie is ambient (every port of the host receives it): it controls only from the
        # dashboard's own page, an Origin that is exactly its own.
        assert message["control"] is ((cookie and origin is not None) or token)
        await comm.disconnect()
    else:
        assert code == 4403  # closed before it was accepted (Daphne answers the handshake with 403)


async def _async_session_cookie() -> str:
    from asgiref.sync import sync_to_async

    return await sync_to_async(_session_cookie)()


def test_a_secure_websocket_needs_an_https_origin(settings):
    def scope(origin: bytes, scheme: str = "wss") -> dict:
        return {"type": "websocket", "scheme": scheme, "headers": [(b"host", b"127.0.0.1"), (b"origin", origin)]}

    assert same_origin(scope(b"https://127.0.0.1"))
    assert same_origin(scope(b"https://127.0.0.1:443"))
    assert not same_origin(scope(b"http://127.0.0.1"))
    assert not same_origin(scope(b"https://127.0.0.1", scheme="ws"))
    settings.ALLOWED_HOSTS = ["127.0.0.1", "[::1]"]
    ipv6 = {"type": "websocket", "headers": [(b"host", b"[::1]:8000"), (b"origin", b"http://[::1]:8000")]}
    assert same_origin(ipv6)
    assert not same_origin({**ipv6, "headers": [(b"host", b"[::1]:8000"), (b"origin", b"http://[::1]:8001")]})
    two = {"type": "websocket", "headers": [(b"host", HOST), (b"origin", SELF), (b"origin", b"null")]}
    assert not same_origin(two)
    cookies = [(b"host", HOST), (b"cookie", b"a=1"), (b"origin", SELF), (b"cookie", b"b=2")]
    assert same_origin({"type": "websocket", "headers": cookies})  # other headers may repeat


# -- the session is bound to the token -------------------------------------------------------------------
def test_a_session_keeps_a_fingerprint_of_the_token_never_the_token(running_host):
    cookie = _session_cookie()
    data = signing.loads(
        cookie, salt="django.contrib.sessions.backends.signed_cookies", serializer=signing.JSONSerializer
    )
    assert set(data) == {SESSION_KEY}
    assert TOKEN not in json.dumps(data) and TOKEN not in cookie
    assert isinstance(data[SESSION_KEY], str) and len(data[SESSION_KEY]) == 64


async def test_a_new_token_turns_an_old_session_read_only(running_host, settings):
    cookie = await _async_session_cookie()  # opened under TOKEN
    client = AsyncClient()
    client.cookies[SESSION_80] = cookie
    assert b'data-control="1"' in (await client.get("/sim/demo/")).content
    settings.CTRLSCOPE_TOKEN = "a-new-token-after-restart-0123"
    page = await client.get("/sim/demo/")
    assert b'data-control="0"' in page.content
    stop = await client.post("/sim/demo/stop")
    assert stop.status_code == 403
    headers = [(b"host", HOST), (b"origin", SELF), (b"cookie", _cookie_for(HOST, cookie))]
    comm = WebsocketCommunicator(application, "/ws/sim/demo/", headers=headers)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    while (message := json.loads(await comm.receive_from(timeout=5)))["type"] != "hello":
        pass
    assert message["control"] is False
    await comm.disconnect()


def test_the_token_link_sets_strict_cookies_and_still_grants_control(running_host):
    client = Client()
    answer = client.get(f"/sim/demo/?token={TOKEN}&follow=1")
    assert answer.status_code == 302 and answer["Location"] == "/sim/demo/?follow=1"
    assert answer["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in answer["Content-Security-Policy"]
    assert client.cookies[SESSION_80]["samesite"] == "Strict"
    assert client.cookies[SESSION_80]["max-age"] == 12 * 3600
    page = client.get("/sim/demo/")
    assert b'data-control="1"' in page.content
    assert client.cookies[CSRF_80]["samesite"] == "Strict"
    wrong = Client().get("/sim/demo/?token=%3Cscript%3Ealert(1)%3C/script%3E")
    assert wrong.status_code == 403 and b"<script>alert" not in wrong.content
    assert wrong["X-Frame-Options"] == "DENY"


# -- a weak token is refused at start ----------------------------------------------------------------------
def _start(args: list[str], tmp_path: pathlib.Path, token: str | None, token_file: str | None = None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTRLSCOPE_") and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    if token_file is not None:
        (state / "token").write_text(token_file + "\n")
    env.update(
        CTRLSCOPE_STATE_DIR=str(state),
        CTRLSCOPE_DB_PATH=str(tmp_path / "db.sqlite3"),
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        PYTHONPATH=str(ROOT),
    )
    if token is not None:
        env["CTRLSCOPE_TOKEN"] = token
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


MANAGE_URL = [sys.executable, "manage.py", "url"]
DAPHNE = [str(pathlib.Path(sys.executable).parent / "daphne"), "-p", "0", "dashboard.asgi:application"]
SERVE = [sys.executable, "-m", "dashboard.serve", "-p", "0", "dashboard.asgi:application"]
KUBECONFIG = [sys.executable, "manage.py", "kubeconfig"]


@pytest.mark.parametrize(
    ("command", "token", "token_file", "problem"),
    [
        (MANAGE_URL, "", None, "CTRLSCOPE_TOKEN is set but empty"),
        (MANAGE_URL, "short-token", None, "CTRLSCOPE_TOKEN holds a token of 11 characters"),
        (KUBECONFIG, "fifteen-chars-x", None, "CTRLSCOPE_TOKEN holds a token of 15 characters"),
        (MANAGE_URL, None, "weak", "the token file"),
        (DAPHNE, "", None, "CTRLSCOPE_TOKEN is set but empty"),
        (SERVE, "short", None, "CTRLSCOPE_TOKEN holds a token of 5 characters"),
    ],
)
def test_a_weak_token_is_refused_at_start(tmp_path, command, token, token_file, problem):
    result = _start(command, tmp_path, token, token_file)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctrlscope: weak access token:") and problem in lines[0], lines
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_strong_token_starts(tmp_path):
    token = "sixteen-chars-ok"
    result = _start(MANAGE_URL, tmp_path, token)
    assert result.returncode == 0 and result.stdout.strip().endswith(f"?token={token}"), result.stderr


# -- the token never reaches a log ---------------------------------------------------------------------------
def _raw(port: int, request: bytes) -> bytes:
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


@pytest.mark.parametrize("server", list(SERVERS.values()), ids=list(SERVERS))
def test_the_server_never_logs_the_token_and_head_has_no_body(tmp_path, server):
    """The real server: a token in the query, in a kubeconfig's path (also where Django logs a
    404), in an Authorization header and in a websocket's query never reaches its output. HEAD
    answers as GET, without a body."""
    import time

    import requests
    import websocket

    secret = "SECRET-0123456789-abcdefXYZ"
    tls_port = free_port()
    serves_tls = server[-1] == "dashboard.serve"  # plain Daphne serves what it is told: http here
    with live_server(tmp_path, server, secret, tls_port=tls_port) as port:
        url = f"http://127.0.0.1:{port}"
        session = requests.Session()
        assert session.get(f"{url}/sim/demo/?token={secret}", timeout=10).status_code == 200
        assert requests.get(f"{url}/sim/demo/k8s/token/{secret}/api", timeout=10).status_code == 200
        assert requests.get(f"{url}/sim/DEMO/k8s/token/{secret}/api", timeout=10).status_code == 404  # Django's 404
        assert requests.get(f"{url}/sim/demo/?x=1&token={secret}x", timeout=10).status_code == 403
        headers = {"Authorization": f"Bearer {secret}"}
        assert requests.get(f"{url}/api/v1/namespaces/default/pods", headers=headers, timeout=10).status_code == 200
        ws = websocket.create_connection(f"ws://127.0.0.1:{port}/ws/sim/demo/?token={secret}", timeout=10)
        assert json.loads(ws.recv())["control"] is True
        ws.close()
        # A page elsewhere: the handshake is refused with 403, and nothing is logged but that.
        with pytest.raises(websocket.WebSocketBadStatusException) as refused:
            websocket.create_connection(
                f"ws://127.0.0.1:{port}/ws/sim/demo/?token={secret}", origin="http://127.0.0.1:3000", timeout=10
            )
        assert refused.value.status_code == 403
        if serves_tls:  # the bearer token and a path token over TLS are no more logged than over http
            ca = str(tmp_path / "state" / "ca.crt")
            tls_url = f"https://127.0.0.1:{tls_port}"
            assert requests.get(f"{tls_url}/metrics", headers=headers, verify=ca, timeout=10).status_code == 200
            assert requests.get(f"{tls_url}/sim/demo/k8s/token/{secret}/api", verify=ca, timeout=10).status_code == 200

        # Spelled as the login and the Kubernetes API decode them: accepted, and still redacted.
        for target, status in [
            (f"/sim/demo/?tok%65n={secret}", b"302"),
            (f"/sim/demo/?x=1&%74oken={secret}", b"302"),
            (f"/sim/demo/k8s/%74oken/{secret}/api", b"200"),
            (f"/sim/demo/k8s/token%2F{secret}/api", b"200"),
            (f"/ws/sim/demo/?tok%65n={secret}", None),
        ]:
            answer = _raw(port, f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            assert status is None or answer.startswith(b"HTTP/1.1 " + status), (target, answer[:300])
        ws = websocket.create_connection(f"ws://127.0.0.1:{port}/ws/sim/demo/?tok%65n={secret}", timeout=10)
        assert json.loads(ws.recv())["control"] is True
        ws.close()
        get = _raw(port, b"GET /sim/demo/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        head = _raw(port, b"HEAD /sim/demo/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and get.startswith(b"HTTP/1.1 200")
        head_headers, _, head_body = head.partition(b"\r\n\r\n")
        assert head_body == b"", head_body[:200]
        assert len(get.partition(b"\r\n\r\n")[2]) > 1000
        assert b"text/html" in head_headers
        time.sleep(0.5)
    log = (tmp_path / "server.log").read_text()
    assert "GET /sim/demo/?token=[redacted]" in log and "/k8s/token/[redacted]/api" in log, log
    assert "Not Found: /sim/DEMO/k8s/token/[redacted]/api" in log, log
    assert "GET /sim/demo/?tok%65n=[redacted]" in log and "GET /sim/demo/?x=1&%74oken=[redacted]" in log, log
    assert ('"GET /metrics" 200' in log) == serves_tls, log
    assert secret not in log and secret.lower() not in log.lower(), log
    assert "Traceback" not in log, log


# -- every spelling of the token parameter is the token, and is redacted --------------------------------------
def _spellings() -> list[str]:
    """`token` with each letter as itself, upper-cased, or percent-encoded (lower or upper hex)."""
    import itertools

    choices = [[c, c.upper(), f"%{ord(c):02x}", f"%{ord(c):02X}"] for c in "token"]
    return ["".join(parts) for parts in itertools.product(*choices)]


def test_whatever_the_login_takes_for_the_token_the_access_log_redacts(running_host):
    """Every spelling of the parameter's name that the login accepts as the token (decoded as
    Django decodes a query) is redacted from the access log line, and no spelling escapes both."""
    from django.http import QueryDict

    from dashboard.redact import redact_target

    secret = "S3CRET-value-0123456789"
    spellings = [*_spellings(), "tok%65n", "%74oken", "%74%6F%6B%65%6E", "TOKEN", "Tok%45n", "to\u212aen"]
    for name in spellings:
        query = f"a=1&{name}={secret}&b=2"
        decoded = QueryDict(query)
        logged = redact_target(f"/sim/demo/?{query}")
        assert secret not in logged, (name, logged)
        assert f"{name}=[redacted]" in logged and "a=1" in logged and logged.endswith("&b=2"), logged
        assert any(k.lower() == "token" for k in decoded), name  # what the login reads
    client = Client()
    for name in ("tok%65n", "%74oken", "TOKEN", "t%4Fken"):
        answer = client.get(f"/sim/demo/?{name}={TOKEN}&follow=1")
        assert answer.status_code == 302 and answer["Location"] == "/sim/demo/?follow=1", name
        assert Client().get(f"/sim/demo/?{name}={TOKEN}x").status_code == 403, name
    # Not the token: a name that only looks like it once `+` or `;` are read as Django reads them.
    for raw in ("/sim/demo/?tok+en=v", "/sim/demo/?x;token2=v"):
        assert "[redacted]" not in redact_target(raw), raw
    # A path token, however the path spells `token` or its slashes, as the Kubernetes API decodes it.
    for path in (f"/sim/demo/k8s/%74oken/{secret}/api", f"/sim/demo/k8s/token%2F{secret}/api",
                 f"/sim/demo/k8s/tok%65n%2f{secret}%2Fapi", f"/sim/demo/k8s/TOKEN/{secret}/api"):
        assert secret not in redact_target(path) and "[redacted]" in redact_target(path), path


# -- the cookie is ambient: it controls only from the dashboard's own page -----------------------------------
def _login(host: str) -> tuple[str, str]:
    """(name, value) of the session cookie the dashboard at `host` sets for the token link."""
    client = Client(HTTP_HOST=host)
    answer = client.get(f"/sim/demo/?token={TOKEN}")
    assert answer.status_code == 302
    (name, morsel), *_ = ((k, m) for k, m in answer.cookies.items() if m["httponly"])
    return name, morsel.value


async def _hello(headers: list[tuple[bytes, bytes]]) -> dict:
    comm = WebsocketCommunicator(application, "/ws/sim/demo/", headers=headers)
    connected, code = await comm.connect(timeout=5)
    assert connected, code
    while (message := json.loads(await comm.receive_from(timeout=5)))["type"] != "hello":
        pass
    await comm.disconnect()
    return message


async def test_a_copy_of_the_cookie_without_the_dashboards_origin_controls_nothing(running_host):
    """Every port of the host receives the cookie: a process that replays it from elsewhere (no
    Origin, as no browser sends it) gets a read-only websocket and cannot stop anything."""
    from asgiref.sync import sync_to_async

    name, value = await sync_to_async(_login)("127.0.0.1:8000")
    cookie = (b"cookie", f"{name}={value}".encode())
    assert (await _hello([(b"host", HOST), cookie]))["control"] is False
    assert (await _hello([(b"host", HOST), (b"origin", SELF), cookie]))["control"] is True
    # The same over HTTP (the test client's pages are at http://testserver).
    login = await AsyncClient().get(f"/sim/demo/?token={TOKEN}")
    (name, morsel), *_ = ((k, m) for k, m in login.cookies.items() if m["httponly"])
    for origin in ({}, {"origin": "http://127.0.0.1:3000"}, {"origin": "null"}):
        replayed = AsyncClient(**origin)
        replayed.cookies[name] = morsel.value
        assert (await replayed.post("/sim/demo/stop", {"confirm": "yes"})).status_code == 403, origin
    assert "demo" in running_host.sims
    own = AsyncClient(**OWN_ORIGIN)
    own.cookies[name] = morsel.value
    assert (await own.post("/sim/demo/stop", {"confirm": "yes"})).status_code == 302
    assert "demo" not in running_host.sims


async def test_two_instances_on_two_ports_keep_their_own_cookies(running_host):
    """The cookies' names carry the port the page was served from: logging in to the server on
    8001 neither overwrites the session of the one on 8000 nor opens it."""
    from asgiref.sync import sync_to_async

    name_8000, value_8000 = await sync_to_async(_login)("127.0.0.1:8000")
    name_8001, value_8001 = await sync_to_async(_login)("127.0.0.1:8001")
    assert name_8000 != name_8001 and "8000" in name_8000 and "8001" in name_8001
    page = await sync_to_async(Client(HTTP_HOST="127.0.0.1:8001").get)("/sim/demo/")
    csrf_names = [k for k, m in page.cookies.items() if not m["httponly"]]
    assert csrf_names and all(k.endswith("_8001") for k in csrf_names), page.cookies
    only_8001 = (b"cookie", f"{name_8001}={value_8001}".encode())
    assert (await _hello([(b"host", HOST), (b"origin", SELF), only_8001]))["control"] is False
    both = (b"cookie", f"{name_8001}={value_8001}; {name_8000}={value_8000}".encode())
    assert (await _hello([(b"host", HOST), (b"origin", SELF), both]))["control"] is True

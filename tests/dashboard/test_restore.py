"""A session survives `kill -9` of its server (issue 17): a real Daphne process is killed and
started again on the same SQLite file; the session answers again, same id, same time, same
report and scenario, paused, and its page says it was restored."""

from __future__ import annotations

import http.cookiejar
import json
import re
import signal
import sqlite3
import time
import urllib.parse
import urllib.request

from tests.patience import PATIENCE_S

from .test_instance import TOKEN, _serving, env  # noqa: F401 - `env` is a fixture

SCALE = {"spec": {"replicas": 6}}


def _browser(port: int) -> tuple[urllib.request.OpenerDirector, str]:
    """A client holding the dashboard's session (the token) and its CSRF token."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.addheaders.append(("Origin", f"http://127.0.0.1:{port}"))  # as the page's forms send it
    home = opener.open(f"http://127.0.0.1:{port}/?token={TOKEN}", timeout=10).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', home)
    assert csrf is not None
    return opener, csrf.group(1)


def _get(port: int, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
        return bytes(response.read())


def _scale(port: int, sim_id: str) -> None:
    """`kubectl scale` through the Kubernetes API: an action of the session's log."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/sim/{sim_id}/k8s/apis/apps/v1/namespaces/default/replicasets/web/scale",
        data=json.dumps(SCALE).encode(),
        method="PATCH",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/merge-patch+json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def _saved(db: str, sim_id: str) -> tuple[float, int, str]:
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT virtual_time, actions, state FROM dashboard_recording WHERE id = ?", (sim_id,)
        ).fetchone()
    return row[0], row[1], row[2]


def test_after_kill_9_the_session_is_back_paused_with_its_history_and_the_same_report(env, tmp_path):  # noqa: F811
    db = env["CTRLSCOPE_DB_PATH"]
    with _serving(env, tmp_path / "first.log", end=signal.SIGKILL) as port:
        opener, csrf = _browser(port)
        form = urllib.parse.urlencode(
            {"scenario": "scale-up-and-down", "seed": "9", "pause_before": "3", "csrfmiddlewaretoken": csrf}
        )
        opener.open(f"http://127.0.0.1:{port}/sim/new", data=form.encode(), timeout=30)
        sim_id = next(row[0] for row in sqlite3.connect(db).execute("SELECT id FROM dashboard_recording")
                      if row[0].startswith("scale-up-and-down-"))
        deadline = time.monotonic() + PATIENCE_S
        while json.loads(_get(port, f"/sim/{sim_id}/status.json"))["t"] < 2.999:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        _scale(port, sim_id)
        status = json.loads(_get(port, f"/sim/{sim_id}/status.json"))
        assert status["mode"] == "paused" and status["t"] == 2.999
        report = _get(port, f"/sim/{sim_id}/report.json")
        scenario = _get(port, f"/sim/{sim_id}/scenario.yaml")
        deadline = time.monotonic() + PATIENCE_S
        while _saved(db, sim_id)[:2] != (2.999, status["actions"]):  # written through, off the loop
            assert time.monotonic() < deadline, _saved(db, sim_id)
            time.sleep(0.05)
    # Killed (-9): nothing was flushed on the way out. A new server on the same file:
    with _serving(env, tmp_path / "again.log") as port:
        restored = json.loads(_get(port, f"/sim/{sim_id}/status.json"))
        assert restored["t"] == 2.999 and restored["mode"] == "paused"
        assert restored["actions"] == status["actions"]
        note = f"restored after a restart at t=2.999; replayed {status['actions']} actions"
        assert restored["restored"].startswith(note)
        assert _get(port, f"/sim/{sim_id}/report.json") == report
        assert _get(port, f"/sim/{sim_id}/scenario.yaml") == scenario
        page = _get(port, f"/sim/{sim_id}/").decode()
        assert "This session was restored after a restart at t=2.999" in page
        assert _saved(db, sim_id)[2] == "running"
    log = (tmp_path / "again.log").read_text()
    assert "Traceback" not in log


async def test_a_sessions_request_waits_for_the_restores_of_the_start_and_others_do_not(monkeypatch):
    # A page reloaded right after a restart must find its session, not a 404 for the second the
    # replay takes (seen: the kill -9 fork test asked for the fork's status before its restore).
    import asyncio

    import dashboard.host
    from dashboard.asgi_limits import StartHost

    start = asyncio.get_running_loop().create_future()
    monkeypatch.setattr(dashboard.host, "ensure_started", lambda: start)
    served = []

    async def app(scope, receive, send):
        served.append(scope["path"])

    wrapped = StartHost(app)
    await wrapped({"type": "http", "path": "/"}, None, None)
    assert served == ["/"]  # the home page does not wait
    waiting = [
        asyncio.ensure_future(wrapped({"type": kind, "path": path}, None, None))
        for kind, path in (("http", "/sim/web-1/status.json"), ("websocket", "/ws/sim/web-1/"))
    ]
    await asyncio.sleep(0.05)
    assert served == ["/"] and not any(w.done() for w in waiting)
    start.set_result(None)  # the start (its restores) ends: both go on
    await asyncio.wait_for(asyncio.gather(*waiting), 1)
    assert sorted(served) == ["/", "/sim/web-1/status.json", "/ws/sim/web-1/"]

"""A fork survives `kill -9` of its server from the moment the fork answers (issue 17 §5): its
recording holds its whole history with its time, so a new server on the same SQLite file brings
it back at T, paused, with the same report, scenario and origin."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
import urllib.parse

from tests.patience import PATIENCE_S

from .test_instance import _serving, env  # noqa: F401 - `env` is a fixture
from .test_restore import _browser, _get


def test_a_fork_is_back_after_kill_9_at_its_time_with_its_history(env, tmp_path):  # noqa: F811
    db = env["CTRLSCOPE_DB_PATH"]
    with _serving(env, tmp_path / "first.log", end=signal.SIGKILL) as port:
        opener, csrf = _browser(port)
        form = {"scenario": "scale-up-and-down", "seed": "9", "pause_before": "12", "csrfmiddlewaretoken": csrf}
        opener.open(f"http://127.0.0.1:{port}/sim/new", data=urllib.parse.urlencode(form).encode(), timeout=30)
        sim_id = next(row[0] for row in sqlite3.connect(db).execute("SELECT id FROM dashboard_recording")
                      if row[0].startswith("scale-up-and-down-"))
        deadline = time.monotonic() + PATIENCE_S
        while json.loads(_get(port, f"/sim/{sim_id}/status.json"))["t"] < 11.999:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        fork = {"at": "11", "change": "scale: {kind: ReplicaSet, name: web, replicas: 8}", "compare": "0",
                "csrfmiddlewaretoken": csrf}
        with opener.open(f"http://127.0.0.1:{port}/sim/{sim_id}/fork", data=urllib.parse.urlencode(fork).encode(),
                         timeout=60) as answer:
            fork_id = urllib.parse.urlsplit(answer.geturl()).path.strip("/").split("/")[1]
        assert fork_id.startswith("scale-up-and-down-fork-")
        status = json.loads(_get(port, f"/sim/{fork_id}/status.json"))
        assert status["t"] == 11.0 and status["mode"] == "paused"
        report = _get(port, f"/sim/{fork_id}/report.json")
        scenario = _get(port, f"/sim/{fork_id}/scenario.yaml")
        # Killed at once (-9): the fork's recording was written before its answer.
    with _serving(env, tmp_path / "again.log") as port:
        restored = json.loads(_get(port, f"/sim/{fork_id}/status.json"))
        assert (restored["t"], restored["mode"], restored["actions"]) == (11.0, "paused", status["actions"])
        assert restored["name"] == "fork of scale up and down at t=11.000"
        assert _get(port, f"/sim/{fork_id}/report.json") == report
        assert _get(port, f"/sim/{fork_id}/scenario.yaml") == scenario
        page = _get(port, f"/sim/{fork_id}/").decode()
        assert "A fork of" in page and f'href="/sim/{sim_id}/"' in page and "at t=11.000" in page
    assert "Traceback" not in (tmp_path / "again.log").read_text()

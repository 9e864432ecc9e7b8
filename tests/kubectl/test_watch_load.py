"""Watches under concurrent writes against a live Daphne server, with every core busy with other
work (a busy loop per core beside the test): 200 watchers, 1,000 creates from 20 threads, and
creates going on until past the watches' first lease renewal (`RENEW_EVERY`), so that 200
renewals meet the writes. Every watcher receives every ADDED event in resourceVersion order, or
its stream ends with an ERROR event (410 Expired: it fell behind, or its lease could not be
renewed in time; the client relists): never fewer events without an error, never a clean end
after a gap, never a stream left open and silent. The driver is the benchmark's
(bench/watch_load.py, `--busy 2 --span 35`), which prints the same figures as JSON."""

from __future__ import annotations

import sys

from dashboard.k8s.api import RENEW_EVERY

from .conftest import ROOT, TOKEN

sys.path.insert(0, str(ROOT / "bench"))
from watch_load import measure, summary

WATCHERS = 200
WRITERS = 20
CREATES = 1000
SPAN = RENEW_EVERY + 5.0  # seconds of creating, at least: the renewals come in the middle
# Seconds the watchers have, after the last create was answered, to receive every event: generous
# for a loaded machine. The test fails, rather than hangs, beyond it (a watcher still waiting
# then is one left silent).
DEADLINE = 120.0


def test_every_watcher_gets_every_event_in_order_or_an_error_with_the_cores_busy(server, busy_cores):
    sim = server.start()
    try:
        measured = measure(
            server.url, sim, TOKEN, watchers=WATCHERS, writers=WRITERS, creates=CREATES, span=SPAN, deadline=DEADLINE
        )
    finally:
        server.stop(sim)
    created = len(measured["codes"])
    assert created >= CREATES and measured["codes"] == [201] * created
    print("\n", {"busy_cores": busy_cores, **summary(measured)})
    expected = {f"load-{i}" for i in range(created)}
    for result in measured["results"]:
        assert result["status"] == 200
        assert result["rvs"] == sorted(result["rvs"]) and len(set(result["rvs"])) == len(result["rvs"])
        assert len(set(result["names"])) == len(result["names"]) and set(result["names"]) <= expected
        if result["error"] is not None:
            # Fell behind, or its lease could not be renewed: a Status the client relists on, then EOF.
            assert result["error"]["code"] == 410 and result["error"]["reason"] == "Expired", result["error"]
            assert result["eof"]
        else:
            received = len(result["names"])
            assert received == created, f"a watcher got {received} of {created} events and no error"

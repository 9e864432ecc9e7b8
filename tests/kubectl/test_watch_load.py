"""Watches under concurrent writes against a live Daphne server: 200 watchers, 1,000 creates from
20 threads. Every watcher receives every ADDED event in resourceVersion order, or its stream
ends with an ERROR event (410 Expired: it fell behind, the client relists): never fewer events
without an error, never a clean end after a gap. The driver is the benchmark's
(bench/watch_load.py), which prints the same figures as JSON."""

from __future__ import annotations

import sys

from .conftest import ROOT, TOKEN

sys.path.insert(0, str(ROOT / "bench"))
from watch_load import measure, summary

WATCHERS = 200
WRITERS = 20
CREATES = 1000
DEADLINE = 50.0  # seconds for the whole exchange (the test fails, rather than hangs, beyond it)


def test_every_watcher_gets_every_event_in_order_or_an_error(server):
    sim = server.start()
    try:
        measured = measure(server.url, sim, TOKEN, watchers=WATCHERS, writers=WRITERS, creates=CREATES,
                           deadline=DEADLINE)
    finally:
        server.stop(sim)
    assert measured["codes"] == [201] * CREATES
    print("\n", summary(measured, CREATES))
    expected = {f"load-{i}" for i in range(CREATES)}
    for result in measured["results"]:
        assert result["status"] == 200
        assert result["rvs"] == sorted(result["rvs"]) and len(set(result["rvs"])) == len(result["rvs"])
        assert len(set(result["names"])) == len(result["names"]) and set(result["names"]) <= expected
        if result["error"] is not None:
            # Fell behind: the stream ends with a Status the client relists on, then EOF.
            assert result["error"]["code"] == 410 and result["error"]["reason"] == "Expired", result["error"]
            assert result["eof"]
        else:
            received = len(result["names"])
            assert received == CREATES, f"a watcher got {received} of {CREATES} events and no error"

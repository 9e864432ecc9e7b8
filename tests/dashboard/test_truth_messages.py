"""Messages that say exactly what happened (issue #19 §4): cache vs truth does not flag a pod both
sides agree is not counted; `t` stops at the timer the status line names, even one due now."""

from __future__ import annotations

from dashboard.host import panels

from .test_hosted import drive, hosted, run_until


def test_a_failed_pod_both_sides_agree_on_is_not_a_difference():
    h = hosted()
    run_until(h, 5)
    names = [p["metadata"]["name"] for p in h.sim.server.objects("pods")]
    pods = sorted(n for n in names if n.startswith("web-"))
    h.command({"op": "act", "action": {"podFault": {"name": pods[0], "fault": "fail"}}})
    run_until(h, 20)  # the failure observed, the replacement created and counted
    truth = panels.truth(h, "replicaset", "default/web")
    row = next(r for r in truth["rows"] if r["name"] == pods[0])
    assert (row["server"], row["cache"], row["counted"]) == ("failed", "failed", False)
    assert row["differs"] is False
    assert truth["differing"] == 0


def test_a_pod_active_in_the_cache_but_not_counted_still_differs():
    h = hosted()
    run_until(h, 5)
    h.sim.controllers["replicaset"].last_syncs["default/web"].counted = []  # as if listed before it came
    truth = panels.truth(h, "replicaset", "default/web")
    assert truth["differing"] == truth["server_active"] > 0


def test_timer_due_at_this_instant_runs_alone():
    h = hosted()
    run_until(h, 1)
    for _ in range(10_000):  # stand where the next callback is due now (several share an instant)
        nxt = h.sim.next_event()
        if nxt is not None and nxt["time"] <= h.sim.now:
            break
        h.command({"op": "step", "what": "event"})
    else:
        raise AssertionError("no instant with two callbacks")
    now, events, named = h.sim.now, h.sim.kernel.events, h.sim.next_event()["what"]
    h.command({"op": "step", "what": "timer"})
    drive(h)
    assert (h.sim.now, h.sim.kernel.events) == (now, events + 1)
    assert h.hit is not None and h.hit["why"] == f"next timer: {named}"


def test_timer_in_the_future_runs_to_it():
    h = hosted()
    run_until(h, 1)
    h.sim.finish_instant()
    nxt = h.sim.next_event()
    assert nxt is not None and nxt["time"] > h.sim.now
    h.command({"op": "step", "what": "timer"})
    drive(h)
    assert h.sim.now == nxt["time"]

"""A session runs without the web layer: it steps to its goals, stops at breakpoints, and tells
its listeners what happened, in order (controlplane/session/session.py)."""

from __future__ import annotations

import math

from controlplane.scenario import load_file
from controlplane.session.session import Session, SessionListener
from controlplane.simulation import Simulation


class Heard(SessionListener):
    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.stops: list[dict] = []
        self.acts: list[dict] = []
        self.focus: list[set] = []

    def record(self, record):
        self.kinds.append(record["kind"])

    def stopped(self, hit):
        self.stops.append(hit)

    def acted(self, action, result):
        self.acts.append(action)

    def focused(self, keys):
        self.focus.append(keys)


def session() -> tuple[Session, Heard]:
    s = Session("t", Simulation(load_file("demo")), name="demo", source="demo")
    heard = Heard()
    s.subscribe(heard)
    s.start()
    return s, heard


def run(s: Session, limit: int = 10_000) -> None:
    """Drive the session as a pacer would, with no clock: each slice to its goal."""
    for _ in range(limit):
        if not s.busy:
            return
        s.advance(math.inf, lambda: False)
    raise AssertionError("the session never stopped")


def test_a_listener_subscribed_before_start_hears_every_record_from_the_first():
    s, heard = session()
    s.command({"op": "step", "what": "to", "t": 5})
    run(s)
    assert len(heard.kinds) == s.sim.trace.seq > 0


def test_a_step_to_the_next_sync_stage_stops_there_and_says_so():
    s, heard = session()
    assert s.command({"op": "step", "what": "stage"})["ok"]
    run(s)
    assert s.mode == "paused" and s.hit is not None
    assert heard.stops[-1] is s.hit
    assert heard.kinds[-1] in ("sync.start", "sync.stage", "sync.end")  # the record that reached it, heard first
    assert s.stepping in s.syncing or heard.kinds[-1] == "sync.end"


def test_a_breakpoint_stops_the_run_and_its_listeners_hear_the_hit():
    s, heard = session()
    s.command({"op": "breakpoint", "do": "add", "spec": {"kind": "stage", "stage": "manage"}})
    s.command({"op": "run", "speed": "max"})
    run(s)
    assert s.hit is not None and s.hit["breakpoint"] == 1
    assert heard.stops == [s.hit]


def test_an_action_and_a_focus_are_published():
    s, heard = session()
    s.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 1}}})
    assert heard.acts == [{"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 1}}]
    s.command({"op": "focus", "keys": [["replicaset", "default/web"]]}, viewer="v")
    assert heard.focus == [{("replicaset", "default/web")}]


def test_a_run_to_a_time_reaches_it_however_the_slices_fall():
    """Slices end when the host's time is up, which can be right after the last event before the
    goal's time: the run still ends at the time asked (it stopped at t=2.28 of a run to t=5 in
    the browser when a slice ended there, the next timer being at t=7)."""
    for slice_events in (1, 2, 3, 5, 16, 10_000):
        s = Session("t", Simulation(load_file("demo")), name="demo", source="demo")
        s.start()
        s.command({"op": "step", "what": "to", "t": 5})
        for _ in range(100_000):
            if not s.busy:
                break
            left = [slice_events]

            def out_of_time(left: list[int] = left) -> bool:
                left[0] -= 16  # asked every 16 events
                return left[0] <= 0

            s.advance(math.inf, out_of_time)
        assert s.sim.now == 5.0 and s.hit is not None and s.hit["why"] == "ran to the time asked", (slice_events, s.hit)

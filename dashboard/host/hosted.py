"""A session as this process hosts it: the session (`controlplane.session.session`), paced
against the wall clock, with the frame builder that renders what it publishes.

Guarantees
----------
* The host's driver (`host.py`) moves the kernel only through `run_slice`, in slices that hold
  the event loop for at most ~10 ms (`SLICE`): paused; running at a speed factor against the wall
  clock (targets rounded down to the millisecond, so live action times stay readable); or as fast
  as possible. The wall clock is read here, never in `controlplane/`.
* The frame builder (`frames`) subscribes before the session starts: it folds every record.
* An exception inside the simulation pauses the session with `error` set and is logged with its
  traceback; the process, the other simulations and the viewers carry on.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from controlplane.simulation import Session, Simulation
from dashboard.host.frames import FrameBuilder

log = logging.getLogger(__name__)

Obj = dict[str, Any]

SLICE = 0.010  # longest stretch of simulation work between two yields to the event loop


class HostedSimulation(Session):
    def __init__(self, sim_id: str, sim: Simulation, *, name: str, source: str, keep_records: bool = True) -> None:
        super().__init__(sim_id, sim, name=name, source=source, keep_records=keep_records)
        self._anchor = (0.0, 0.0)  # (virtual, wall) the speed pacing counts from
        self._rate_sample = (0.0, 0.0)
        self.frames = FrameBuilder(self)
        self.start()

    def run_slice(self) -> float:
        """Run one slice of simulation work; returns how long the driver may sleep (seconds)."""
        sim = self.sim
        wall = time.perf_counter()
        paced = math.inf
        if self.goal is None and self.mode != "fast":
            anchor_v, anchor_w = self._anchor
            paced = anchor_v + (wall - anchor_w) * self.speed
            paced = math.floor(paced * 1000.0 + 1e-6) / 1000.0  # whole ms, despite float noise
            if paced - sim.now > self.speed * 0.5:
                # More than half a wall second behind: drop the debt rather than sprint.
                self._anchor = (sim.now, wall)
                paced = sim.now
        deadline = wall + SLICE
        if not self.advance(paced, lambda: time.perf_counter() > deadline):
            return 0.05
        self._measure_rate()
        if self.mode == "running" and self.goal is None:
            nxt = self.next_event_time()
            if nxt is None:
                return 0.05
            return min(0.02, max(0.001, (nxt - sim.now) / self.speed))
        return 0.0

    def _measure_rate(self) -> None:
        wall = time.perf_counter()
        v0, w0 = self._rate_sample
        if wall - w0 >= 1.0:
            if self.mode != "paused" and w0 > 0:
                self.rate = round((self.sim.now - v0) / (wall - w0), 2)
            self._rate_sample = (self.sim.now, wall)

    # -- the commands that change the pace: the wall-clock anchor counts from now -----------------
    def _cmd_run(self, cmd: Obj, viewer: str | None) -> Obj:
        result = super()._cmd_run(cmd, viewer)
        self._anchor = (self.sim.now, time.perf_counter())
        self._rate_sample = (self.sim.now, time.perf_counter())
        return result

    def _cmd_speed(self, cmd: Obj, viewer: str | None) -> Obj:
        result = super()._cmd_speed(cmd, viewer)
        if result.get("speed") != "max":
            self._anchor = (self.sim.now, time.perf_counter())
        return result

    def _fail(self, exc: BaseException) -> None:
        log.error("simulation %s failed at t=%.3f", self.id, self.sim.now, exc_info=exc)
        super()._fail(exc)

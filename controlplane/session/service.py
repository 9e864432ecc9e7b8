"""The session service: the one interface through which the web layer drives the debugger
engine — start a session, command it, read its state, reach its past, fork it, export it, serve
the Kubernetes API of its world, subscribe to what it publishes.

(kube-scheduler-simulator's shape: the core and the UI are siblings, and the UI reaches the core
through one small service.) The dashboard's asyncio host (`dashboard/host/host.py`) owns one
`SessionService` per process and drives its sessions: pacing against the wall clock, transport,
persistence and rendering stay in the dashboard; nothing here knows of Django, Channels, asyncio
or the wall clock. `controlplane.simulation` (the facade) re-exports the service and its value
types; docs/architecture.md says which module of the web side calls which method.

Guarantees
----------
* Synchronous: every method returns when its work is done; the caller decides when to call it
  (the host, on its event loop, between slices of simulation work).
* A session is named by its id; an id the service does not hold is a `KeyError` (the host
  answers "no such simulation" before it asks).
* `start` builds the world from a scenario and applies its t=0 objects before it returns (a
  starting object the API server rejects is a `ScenarioError`, and nothing is held).
* `state`, `past`, `fork`, `export` and `kube` read (`fork` and `export` first finish the
  current instant, as a report does); only `start`, `command`, `adopt` and `stop` change what the
  service holds or what a session does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from controlplane.scenario import Scenario
from controlplane.session.kube import Kube
from controlplane.session.session import Session, SessionListener
from controlplane.world import Position, Simulation

Obj = dict[str, Any]

S = TypeVar("S", bound=Session)

# The config keys the What-ifs and knobs form shows (templates/dashboard/_inject.html), live in
# every state: the form shows the state it controls, whoever changed it.
FORM_CONFIG = (
    "whatIf",
    "featureGates",
    "workers",
    "burstReplicas",
    "kubeApiQPS",
    "kubeApiBurst",
    "watchLatency",
    "apiLatency",
)


class PastOrigin:
    """What the past of a live session is rebuilt from (the host's replay worker: the time
    travel machinery): where it is now, its kept records (None when the session keeps none),
    and its recording as it stands (`recording()`, made when asked: a copy of the session's
    scenario and live actions)."""

    def __init__(self, sim: Simulation) -> None:
        self._sim = sim
        self.position: Position = sim.position()
        self.records: Any = sim.record_log

    def recording(self) -> Obj:
        return self._sim.recording()


@dataclass(frozen=True)
class ForkOrigin:
    """A session's past up to `t`, to start a fork from: its recording up to `t`
    (`Simulation.recording()`: the scenario as it was loaded, named and described as the fork of
    the session, the seed, the live actions taken by `t`), which replays to the session's world
    at `t` (the one replay path), and its action log by then (the fork's log starts with it)."""

    t: float
    recording: Obj
    history: list[Obj]


class SessionService(Generic[S]):
    """The sessions of one process, by id. `make_session(sim_id, sim, name, source)` builds a
    session of the kind the caller drives (the dashboard's adds wall-clock pacing and its frame
    builder) and starts it (`Session.start`: t=0 objects applied), its listeners subscribed first."""

    def __init__(self, make_session: Callable[[str, Simulation, str, str], S]) -> None:
        self.make_session = make_session
        self.sessions: dict[str, S] = {}

    # -- what the service holds ---------------------------------------------------------------------
    def start(
        self,
        sim_id: str,
        scenario: Scenario,
        *,
        seed: int | None = None,
        source: str,
        running: bool = False,
        pause_before: float | None = None,
        mark: str = "",
    ) -> S:
        """Build and start (t=0 objects applied) a session of `scenario` under `sim_id`, held
        from now on. With `pause_before` (opening a swarm's violation, say) it runs to just
        before that time and pauses there, the time pinned on the timeline with `mark`; with
        `running`, it runs at speed 1. The caller checked `sim_id` is free."""
        session = self.make_session(sim_id, Simulation(scenario, seed=seed), scenario.name, source)
        if pause_before is not None:
            session.marks.append({"t": pause_before, "label": mark or f"t={pause_before:g}"})
            session.command({"op": "step", "what": "to", "t": round(pause_before - 0.001, 3)})
        elif running:
            session.command({"op": "run", "speed": 1.0})
        self.sessions[sim_id] = session
        return session

    def adopt(self, session: S) -> None:
        """Hold a session built elsewhere (restored from its recording, or a fork's replay)."""
        self.sessions[session.id] = session

    def stop(self, sim_id: str) -> S | None:
        """Hold the session no more (stopped); None when it was not held."""
        session = self.sessions.pop(sim_id, None)
        if session is not None:
            session.stopped = True
            session.sim.close()  # its embedded operators stop (controlplane.operators)
        return session

    def session(self, sim_id: str) -> S:
        return self.sessions[sim_id]

    # -- one session ----------------------------------------------------------------------------------
    def command(self, sim_id: str, cmd: Obj, *, viewer: str | None = None) -> Obj:
        """Apply one command of the session's vocabulary (run, pause, step, act, ...: see
        `Session.command`); CommandError when it is refused."""
        return self.sessions[sim_id].command(cmd, viewer=viewer)

    def state(self, sim_id: str) -> Obj:
        """What the page's status line and controls show of the session (`session_state`)."""
        return session_state(self.sessions[sim_id])

    def past(self, sim_id: str) -> PastOrigin:
        """What the session's past is rebuilt from, now (the replay worker's input)."""
        return PastOrigin(self.sessions[sim_id].sim)

    def fork(self, sim_id: str, at: Any) -> ForkOrigin:
        """The session's past up to `at` (a virtual time of its past; None: now), to start a
        fork from; ValueError naming `at` when it is not one."""
        session = self.sessions[sim_id]
        sim = session.sim
        if session.error is None:
            sim.finish_instant()
        t = sim.past_time(at)
        recording = sim.recording(until=t)
        scenario = recording["scenario"]
        scenario["name"] = f"fork of {session.name} at t={t:.3f}"[:200]
        scenario["description"] = f"{scenario['description']} Forked from session {session.id} at t={t:.3f} s.".strip()
        history = [dict(entry) for entry in sim.actions if entry["time"] <= t]  # the fork's first actions
        return ForkOrigin(t, recording, history)

    def export(self, sim_id: str, at: Any = None) -> Obj:
        """The session as scenario data (docs/scenarios.md); with `at`, cut at that time of
        its past (CommandError naming `at` when it is not one)."""
        return self.sessions[sim_id].export(at)

    def kube(self, sim_id: str) -> Kube:
        """The Kubernetes API of the session's world: reads, dry runs, watches, connected
        clients, metrics (`controlplane.session.kube`)."""
        return Kube.of(self.sessions[sim_id])

    def subscribe(self, sim_id: str, listener: SessionListener) -> None:
        """`listener` hears what the session publishes from now on (`SessionListener`)."""
        self.sessions[sim_id].subscribe(listener)


def session_state(session: Session) -> Obj:
    """The status view model of one session: its clock and kernel events, seed, mode and speed,
    goal, breakpoint hit, error, next event, the API server's revision, its actions, marks and
    exact position (the page's way back to where a step came from), each controller's version,
    and the config the What-ifs form shows."""
    sim = session.sim
    nxt = sim.next_event() if sim.started else None
    return {
        "id": session.id,
        "name": session.name,
        "t": round(sim.now, 3),
        "events": sim.kernel.events,
        "seed": sim.seed,
        "mode": session.mode,
        "speed": session.speed,
        "rate": session.rate,
        "goal": session.goal_label,
        "hit": session.hit,
        "error": session.error,
        "next": {"t": round(nxt["time"], 3), "what": nxt["what"]} if nxt else None,
        "revision": sim.server.revision,
        "actions": len(sim.actions),
        "marks": session.marks,
        "restored": session.restored_note,
        "position": sim.position().to_json(),
        "versions": {name: c.version for name, c in sim.controllers.items()},
        "garbageCollector": bool(sim.config["enableGarbageCollector"]),
        "config": {key: sim.config[key] for key in FORM_CONFIG},
    }

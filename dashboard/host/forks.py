"""Fork from here (issue 17 §5, docs/time-travel.md#fork-from-here): a new session with a running
session's past up to a moment T and a future of its own.

Guarantees
----------
* **The same past.** The fork is the original's recording up to T (`SessionService.fork`, taken
  on the event loop at one instant: the scenario as it was loaded, its seed, the live actions
  taken by T), replayed to T (the one replay path): every action the original applied by T, at
  its time and in its order, and the file's timeline actions still to come. The replay must
  reproduce the original's action log up to T entry for entry (who acted included), or there is
  no fork. So at any moment up to T the fork's report is the original's, byte for byte.
* **Its own future, from T.** The optional change — a `config` block or one action of the
  vocabulary (docs/scenarios.md) — is applied at T through the session's own `act` command, after
  everything the original did at T (actions run at the end of their instant). A change the
  world refuses (a scale of a ReplicaSet that does not exist) is not a fork: nothing is created.
* **A session like any other.** The fork is hosted by the process that hosts the original (so the
  compare page can drive the two in lock-step), paused at T, recorded with its whole history in
  one transaction (`recording.create`: it survives `kill -9` from the first answer on), with its
  parent and T (`Recording.parent`, `Recording.forked_at`). Limits as for any session: the
  host's `MAX_SIMULATIONS`, `recording.MAX_RECORDINGS`, `recording.MAX_ACTIONS`.
* **Off the event loop, one at a time.** The replay runs in a worker thread; one fork replays at
  a time per process (others wait their turn), and the original runs on meanwhile.
* **Bad input changes nothing**: a time outside 0…now, a change that is not YAML, not a mapping,
  or names a bad field (`Simulation.check_action`, which `check_config` backs) is one line
  naming the field (`change: config.workers: must be >= 1`).
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from controlplane.simulation import (
    ACTION_VERBS,
    MAX_RECORDED_ACTIONS,
    CommandError,
    ForkOrigin,
    Replay,
    ScenarioError,
    Simulation,
    safeyaml,
)
from dashboard.host import host as hosting
from dashboard.host import reads, recording
from dashboard.host.hosted import HostedSimulation

Obj = dict[str, Any]

MAX_CHANGE = 16 * 1024  # characters of the change typed in the form
FORK_TIMEOUT = 120.0  # seconds a view waits for a fork: the replay to T runs first
SOURCE = "fork"  # who applied the change, in the fork's action log
CHANGE_HELP = (
    "a config block (`whatIf: {slowStart: false}`) or one action (`scale: {kind: ReplicaSet, name: web, replicas: 5}`)"
)


class ForkError(ValueError):
    """A fork that cannot be made: the one-line message names the field (`at`, `change`) or says why."""


def parse_change(text: str) -> Obj | None:
    """The change typed in the fork form as one action of the vocabulary, or None for no change.
    A mapping whose key is a verb (`scale: {…}`, `config: {…}`, `podFault: {…}` …) is that action;
    any other mapping is a config block (`controllerVersion: {replicationcontroller: v1.5}`), i.e.
    `{config: block}`. ForkError naming `change` when it is not one."""
    if len(text) > MAX_CHANGE:
        raise ForkError(f"change: longer than {MAX_CHANGE // 1024} KiB")
    if not text.strip():
        return None
    try:
        data = safeyaml.load(text)
    except safeyaml.YAMLInputError as exc:
        raise ForkError(f"change: not YAML: {exc}") from None
    if data is None:
        return None
    if not isinstance(data, dict) or not data:
        raise ForkError(f"change: must be {CHANGE_HELP}")
    if "at" in data:
        raise ForkError("change.at: leave it out: the change is applied at the fork's time")
    action = data if any(key in ACTION_VERBS for key in data) else {"config": data}
    problem = Simulation.check_action(action)
    if problem is not None:
        raise ForkError(f"change: {problem}")
    return action


def _replay(
    origin: ForkOrigin, change: Obj | None, sim_id: str, source: str, parent: str
) -> HostedSimulation:
    """In a worker thread: host the original's recording up to T as a new session, replay it to
    T, check it reproduced the original's log up to T, then apply `change` at T."""
    at, history = origin.t, origin.history
    try:
        past = Replay.from_recording(origin.recording, index=False)  # the one replay path (timetravel/replay.py)
        sim = past.sim
        forked = HostedSimulation(sim_id, sim, name=sim.scenario.name, source=source)
        past.run_to_time(at)
    except ScenarioError as exc:
        raise ForkError(f"the session cannot be forked at t={at:.3f}: {exc}") from None
    if sim.halted is not None:
        raise ForkError(f"the replay to t={at:.3f} stopped: {sim.halted}")
    diverged = past.reproduces(history)  # who acted: as in the original
    if diverged is not None:
        raise ForkError(f"the replay to t={at:.3f} differs from {parent} from its action {diverged + 1} on: not forked")
    if len(sim.actions) != len(history):
        raise ForkError(f"the replay to t={at:.3f} applied more actions than {parent} had: not forked")
    if change is not None:
        try:
            result = forked.command({"op": "act", "action": change, "source": SOURCE})
        except CommandError as exc:
            raise ForkError(f"change: {exc}") from None
        if not result.get("ok"):
            raise ForkError(f"change: refused at t={at:.3f}: {result.get('error')}")
    forked.marks.append({"t": round(at, 3), "label": f"forked from {parent}"})
    return forked


async def fork(host: hosting.Host, hosted: HostedSimulation, at: Any, change: Any) -> HostedSimulation:
    """Fork `hosted` at `at` (None: now) with `change` (None, or an action), hosted by `host`,
    paused at T and recorded. ForkError (one line) when it cannot be; nothing is created then."""
    if change is not None:
        problem = Simulation.check_action(change)
        if problem is not None:
            raise ForkError(f"change: {problem}")
    if hosted.stopped:
        raise ForkError(f"simulation {hosted.id} has stopped: re-open it to fork it")
    if len(host.sims) >= hosting.MAX_SIMULATIONS:
        raise ForkError(f"this server runs at most {hosting.MAX_SIMULATIONS} simulations: stop one first")
    # The past up to T, at one instant on the loop (the original runs on afterwards).
    try:
        origin = host.service.fork(hosted.id, at)
    except ValueError as exc:
        raise ForkError(str(exc)) from None
    history, t = origin.history, origin.t
    if len(history) + (change is not None) > MAX_RECORDED_ACTIONS:
        raise ForkError(f"the fork would hold more than {MAX_RECORDED_ACTIONS} actions, the most a recording keeps")
    base = re.sub(r"[^a-z0-9-]+", "-", (hosted.source or "sim").lower()).strip("-")[:40] or "sim"
    async with host.fork_lock:
        stored = await recording.stored_ids()
        sim_id = f"{base}-fork-{secrets.token_hex(3)}"
        while sim_id in stored or sim_id in host.sims:
            sim_id = f"{base}-fork-{secrets.token_hex(3)}"
        forked = await sync_to_async(_replay, thread_sensitive=False)(origin, change, sim_id, hosted.source, hosted.id)
        if len(host.sims) >= hosting.MAX_SIMULATIONS:  # others started while it replayed
            raise ForkError(f"this server runs at most {hosting.MAX_SIMULATIONS} simulations: stop one first")
        try:
            await recording.create_async(forked, hosting.HOST_ID, parent=hosted.id, forked_at=t)
        except recording.RecordingError as exc:
            raise ForkError(str(exc)) from None
        host.host_simulation(forked, len(forked.sim.actions))
    await hosting.save_record(forked)
    return forked


def op(host: hosting.Host, hosted: HostedSimulation, cmd: Obj, message: Obj) -> None:
    """The host's `fork` op (`host.HOST_OPS`): fork in a task of its own, which replies once the
    fork is replayed (`answer`)."""
    hosting.spawn(answer(host, hosted, message), f"fork {hosted.id}")


async def answer(host: hosting.Host, hosted: HostedSimulation, message: Obj) -> None:
    """The `fork` command sent to the original's channel (`{"op": "fork", "at": T | None,
    "change": action | None}`, control right required): fork, then reply with the fork's id."""
    layer = get_channel_layer()
    reply_to = message.get("reply_to")
    cmd = message.get("cmd") or {}
    result: Obj
    if not message.get("control"):
        result = {"ok": False, "error": "read-only: open the dashboard with its access token to fork it"}
    else:
        try:
            forked = await fork(host, hosted, cmd.get("at"), cmd.get("change"))
            result = {"ok": True, "id": forked.id, "name": forked.name, "at": round(forked.sim.now, 3)}
        except ForkError as exc:
            result = {"ok": False, "error": str(exc)}
    if reply_to and not reads.abandoned(reply_to):  # (a requester that gave up: the fork stays, listed)
        await layer.send(reply_to, {"type": "sim.reply", "id": message.get("id"), "op": "fork", "result": result})
    reads.forget(layer, reply_to)

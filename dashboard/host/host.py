"""The host: the simulations this process runs, and their doors to the channel layer.

Guarantees
----------
* Started lazily on the running event loop (Daphne sends no ASGI lifespan): `ensure_started()`
  from the ASGI wrapper's first scope, or right after Daphne's reactor starts. Starting also
  starts the demo simulation, running at speed 1.
* Each simulation has one command channel (`ctrlscope.sim.<id>`) and one group
  (`ctrlscope.sim.<id>.viewers`). Consumers and views never hold a `Simulation`: they send
  commands to the channel (with a `reply_to` channel when they want an answer) and receive
  frames from the group. With the Redis layer, viewers in other Daphne processes work the same
  way; the simulation stays in the process that hosts it.
* The Kubernetes API's watch machinery (registering a watch, renewing its lease, ending it:
  `WATCH_OPS`) has a channel and a listener of its own (`ctrlscope.sim.<id>.watch`), so the
  limit on requests -- a full command channel is "busy" (429) -- never refuses or delays it, as
  kube-apiserver's max-in-flight limit leaves long-running requests out. On that channel a
  full channel is backpressure: the sender waits for room (`request_watch`), it is not refused.
* At most one frame per `FRAME_INTERVAL` per simulation, each rendered once for all viewers
  (pre-serialised JSON text); a viewer that cannot keep up is the consumer's business and never
  slows the simulation or other viewers.
* The running simulations are listed in the database (`SimulationRecord`) with a heartbeat, so
  any process can list them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import gc
import json
import logging
import math
import re
import secrets
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

import yaml
from asgiref.sync import sync_to_async
from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer, get_channel_layer

from controlplane.simulation import (
    RECORD_FILTERS,
    CommandError,
    GcHold,
    Kube,
    Scenario,
    SessionService,
    Simulation,
    edit_preview,
    library,
    load_file,
    open_edit,
    scoped_watch,
    simulation_gc,
)
from dashboard.host import k8s_ops, past, reads, recording, search
from dashboard.host.hosted import HostedSimulation

log = logging.getLogger(__name__)

Obj = dict[str, Any]

FRAME_INTERVAL = 0.05  # at most 20 frames per second per simulation ...
FRAME_BUDGET = 20.0  # ... and, while the simulation wants the CPU, one per 20x what a frame costs ...
SLOWEST_FRAMES = 0.5  # ... but at least one every half second, so that the page stays live
COMMAND_FRAME_INTERVAL = 0.005  # after a command, its frame goes out this soon after the last ...
AFTER_COMMAND = 0.3  # ... and so do the frames of the next 0.3 s (the command's consequences)
HEARTBEAT = 5.0
RECEIVE_RETRY = 0.5  # seconds before the listener receives again after the channel layer failed
MAX_SIMULATIONS = 20
HOST_ID = uuid.uuid4().hex[:12]
SIM_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def first_sim_id(path: str) -> str:
    """The id of the simulation started from `CTRLSCOPE_START=<file>`: its name, slugged."""
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
    return re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")[:40] or "start"


def command_channel(sim_id: str) -> str:
    return f"ctrlscope.sim.{sim_id}"


def viewers_group(sim_id: str) -> str:
    return f"ctrlscope.sim.{sim_id}.viewers"


RECLAIM_AFTER = 1.0  # seconds after a stop that its world's memory is reclaimed (Host._reclaim) ...
RECLAIM_TRIES = 10  # ... and again as long, so many times at most, while something still holds it


def watch_channel(sim_id: str) -> str:
    """The channel of the HTTP side's watch machinery (`WATCH_OPS`), beside the command channel."""
    return f"ctrlscope.sim.{sim_id}.watch"


# What the watch channel carries: an HTTP watch's registration, its lease renewals and its end.
WATCH_OPS = frozenset({"k8s_watch", "k8s_renew", "k8s_unwatch"})
WATCH_ROOM_POLL = 0.02  # seconds between two tries to send on a full watch channel


async def _receive(layer: Any, channel: str, hosted: HostedSimulation) -> Obj | None:
    """A listener's next message on `channel`, None once its simulation has stopped. The layer's
    own trouble (a Redis timeout) is logged and the receive tried again: a listener never ends
    on it."""
    while not hosted.stopped:
        try:
            message: Obj = await layer.receive(channel)
            return message
        except Exception:
            log.warning("receiving on %s failed; listening again", channel, exc_info=True)
            await asyncio.sleep(RECEIVE_RETRY)
    return None


class HostError(ValueError):
    """A request the host turns away (too many simulations, an id in use…)."""


class Damaged(HostError):
    """A recording that cannot be replayed: it is now listed as damaged, the message says why."""


class Host:
    def __init__(self) -> None:
        # The sessions this process hosts, by id: the session service holds them (the one
        # interface to the core, controlplane.session.service); the host drives them.
        self.service: SessionService[HostedSimulation] = SessionService(_hosted_session)
        self._tasks: dict[str, list[asyncio.Task[Any]]] = {}
        self._wake: dict[str, asyncio.Event] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._heartbeat: asyncio.Task[Any] | None = None
        # One GC hold per hosted simulation, from start to stop (controlplane.gcpolicy).
        self._gc_holds: dict[str, GcHold] = {}
        self._recorders: dict[str, recording.Recorder] = {}  # each hosted session's recording
        # The heartbeat's registry writes and a stop's delete, one at a time: the writes run in
        # worker threads, and a heartbeat landing after a stop's delete would list the stopped
        # session as running again for ALIVE_FOR.
        self._registry = asyncio.Lock()
        # Seconds every driving task of this process spent running slices and building frames:
        # what a task that yielded can subtract to learn what the rest (viewers) cost it.
        self.work = 0.0
        # The compare page's pairs of simulations, (A id, B id) -> Pair (dashboard.host.pairs).
        self.pairs: dict[tuple[str, str], Any] = {}
        # One fork replays at a time in this process (dashboard.host.forks); others wait their turn.
        self.fork_lock = asyncio.Lock()

    @property
    def sims(self) -> dict[str, HostedSimulation]:
        """The hosted sessions by id (the service's; read only: start, adopt and stop change it)."""
        return self.service.sessions

    # -- simulations ------------------------------------------------------------------------------
    async def start_simulation(
        self,
        scenario: Scenario,
        *,
        seed: int | None = None,
        source: str,
        sim_id: str | None = None,
        running: bool = False,
        pause_before: float | None = None,
        mark: str = "",
    ) -> HostedSimulation:
        """Build, start (t=0 objects applied) and host a simulation. ScenarioError if the API
        server rejects a starting object; HostError when the host is full. With `pause_before`
        (opening a swarm's violation, say) it runs to just before that time and pauses there,
        the time pinned on the timeline with `mark`."""
        if len(self.sims) >= MAX_SIMULATIONS:
            raise HostError(f"this server runs at most {MAX_SIMULATIONS} simulations: stop one first")
        if sim_id is None:
            stored = await recording.stored_ids()  # a stopped session's id stays its recording's
            base = re.sub(r"[^a-z0-9-]+", "-", (source or "sim").lower()).strip("-")[:40] or "sim"
            sim_id = f"{base}-{secrets.token_hex(3)}"
            while sim_id in stored or sim_id in self.sims:
                sim_id = f"{base}-{secrets.token_hex(3)}"
        if not SIM_ID.match(sim_id) or sim_id in self.sims:
            raise HostError(f"simulation id {sim_id!r} is not available")
        hosted = self.service.start(
            sim_id, scenario, seed=seed, source=source, running=running, pause_before=pause_before, mark=mark
        )
        try:
            await recording.create_async(hosted, HOST_ID)
        except recording.RecordingError as exc:
            self.service.stop(sim_id)
            raise HostError(str(exc)) from None
        self.host_simulation(hosted, len(hosted.sim.actions))
        await save_record(hosted)
        return hosted

    def host_simulation(self, hosted: HostedSimulation, recorded: int) -> None:
        """Take `hosted` in: its driving and listening tasks, its recorder (`recorded` log
        entries already stored)."""
        sim_id = hosted.id
        self.service.adopt(hosted)
        self._recorders[sim_id] = recording.Recorder(hosted, recorded)
        self._gc_holds[sim_id] = simulation_gc()
        self._wake[sim_id] = asyncio.Event()
        self._tasks[sim_id] = [
            spawn(self._drive(hosted), f"drive {sim_id}"),
            spawn(self._listen(hosted), f"listen {sim_id}"),
            spawn(self._listen_watches(hosted), f"watches {sim_id}"),
        ]

    async def restore_simulation(self, sim_id: str, *, reopened: bool = False) -> HostedSimulation:
        """Rebuild a session from its recording (recording.replay), paused at its last saved
        time, its page saying so; hosted again under its id. HostError when it cannot be;
        Damaged when the recording is what cannot be replayed (a row not JSON, an action
        missing, a scenario this version refuses): it is then marked damaged, with the reason."""
        if len(self.sims) >= MAX_SIMULATIONS:
            raise HostError(f"this server runs at most {MAX_SIMULATIONS} simulations: stop one first")
        if sim_id in self.sims:
            raise HostError(f"simulation {sim_id} is running already")
        started = time.monotonic()
        # The replay is a simulation running: under the GC policy (controlplane.gcpolicy), taken
        # here on the loop's thread, from before the replay until the session is hosted
        # (`host_simulation` then takes its own; the release comes first, as a release unfreezes
        # everything). Without it a restore at start -- nothing else hosted yet -- ran with CPython's default
        # thresholds: full collections over the growing world (bench/time_travel.py: 5.7 s, 3.5 s
        # with the policy).
        with simulation_gc():
            try:
                stored = await recording.load_async(sim_id)
                rec = stored.recording

                def build(sim: Simulation) -> HostedSimulation:
                    return HostedSimulation(sim_id, sim, name=rec.name, source=rec.source)

                replay = sync_to_async(recording.replay, thread_sensitive=False)
                hosted, replayed, diverged = await replay(stored, build)
            except recording.RecordingError as exc:
                if not await recording.stored_ids(only=sim_id):
                    raise HostError(str(exc)) from None
                await recording.mark_damaged(sim_id, str(exc))
                raise Damaged(str(exc)) from None
            seconds = time.monotonic() - started
            how = "re-opened from its recording" if reopened else "restored after a restart"
            note = f"{how} at t={hosted.sim.now:.3f}; replayed {replayed} actions in {seconds:.1f} s"
            if diverged is not None:
                note += f"; the replay differs from the recording from action {diverged + 1} on"
            hosted.restored(note)
            await recording.rebase_async(hosted, HOST_ID, note)
        self.host_simulation(hosted, len(hosted.sim.actions))
        await save_record(hosted)
        log.info("simulation %s %s", sim_id, note)
        return hosted

    async def stop_simulation(self, sim_id: str) -> None:
        hosted = self.service.stop(sim_id)
        if hosted is None:
            return
        recorder = self._recorders.pop(sim_id, None)
        if recorder is not None:
            await recorder.close()  # what the session did up to its stop, then: stopped, kept
            await recording.mark_stopped(sim_id)
        hold = self._gc_holds.pop(sim_id, None)
        if hold is not None:
            hold.release()
        current = asyncio.current_task()
        # (the listener stopping its own simulation ends by itself)
        stopping = [task for task in self._tasks.pop(sim_id, []) if task is not current]
        for task in stopping:
            task.cancel()
        self._wake.pop(sim_id, None)
        await k8s_ops.close_watches(hosted)
        await past.close(sim_id)
        layer = get_channel_layer()
        await layer.group_send(viewers_group(sim_id), {"type": "sim.stopped"})
        async with self._registry:
            await _delete_record(sim_id)
        if stopping:
            await asyncio.wait(stopping, timeout=5.0)  # their frames hold the world too
        # So does the frame of whoever asked for the stop (a command's handler), until it answered.
        asyncio.get_running_loop().call_later(RECLAIM_AFTER, self._reclaim, weakref.ref(hosted.sim))

    def _reclaim(self, world: weakref.ref[Simulation], tries: int = RECLAIM_TRIES) -> None:
        """Give a stopped world's memory back to the system. Its objects hold reference cycles,
        which only a full collection frees, and under the simulations' gc policy (raised
        thresholds, controlplane.gcpolicy) an idle process may run none for ever: 1.2 GB stayed
        in the process after its 10,000-pod simulations stopped. So: one full collection (a
        pause of the loop), the frozen generation included -- another simulation's hold, taken
        or renewed since the stop, froze the dead world with everything else -- then the
        survivors frozen again while other simulations run (as their holds did), and the heap's
        free pages trimmed (glibc's `malloc_trim`). Tried again while something still holds the
        world (a task that has not finished its last step), up to `tries` times."""
        if self._gc_holds:
            gc.unfreeze()
        gc.collect()
        if self._gc_holds:
            gc.freeze()
        reads.trim()
        if world() is not None and tries > 1:
            asyncio.get_running_loop().call_later(RECLAIM_AFTER, self._reclaim, world, tries - 1)

    def wake(self, sim_id: str) -> None:
        event = self._wake.get(sim_id)
        if event is not None:
            event.set()

    # -- the driving task -------------------------------------------------------------------------
    async def _drive(self, hosted: HostedSimulation) -> None:
        layer = get_channel_layer()
        group = viewers_group(hosted.id)
        wake = self._wake[hosted.id]
        last_frame = 0.0
        cost = 0.0  # moving average of what a frame costs: building it, then delivering it
        delivery = 0.0  # what the rest of the process did while this task yielded, since the last frame
        commanded = -math.inf  # when the last command woke the loop
        while not hosted.stopped:
            started = time.monotonic()
            pause = hosted.run_slice() if hosted.busy else None
            self.work += time.monotonic() - started  # (not the await below: others may run in it)
            await k8s_ops.publish(hosted)  # watch events as they happen, not on the frame tick
            recorder = self._recorders.get(hosted.id)
            if recorder is not None:
                recorder.note()  # actions applied, a pause, a second of running: written off-loop
            now = time.monotonic()
            # Frames of a huge world cost more to build, and each viewer costs its share of
            # sending them and reading its acknowledgements. While the simulation wants all the
            # CPU (as fast as possible, or behind its speed), space frames out so that building
            # and delivering them stays under a twentieth of the host's time -- except right after a
            # command, whose effect the user is waiting to see. A simulation that keeps up has
            # time to spare.
            responding = wake.is_set()
            if responding:
                interval = COMMAND_FRAME_INTERVAL  # the user is waiting for this one
                commanded = now
            elif now - commanded < AFTER_COMMAND:
                interval = COMMAND_FRAME_INTERVAL  # and for its consequences, a moment later
            elif hosted.saturated:
                interval = min(SLOWEST_FRAMES, max(FRAME_INTERVAL, FRAME_BUDGET * cost))
            else:
                interval = FRAME_INTERVAL
            if now - last_frame >= interval:
                last_frame = now
                wake.clear()
                # Once the command's first answer is out and the simulation holds still (a step
                # ended, a pause), the next frame is complete: every panel the step changed and
                # every age at the new clock, not a second later (issue #19 §4).
                complete = not responding and not hosted.busy and hosted.frames.owed
                urgent = now - commanded < AFTER_COMMAND and not complete
                frames = hosted.frames
                text = frames.frame(urgent=urgent, complete=complete) if hosted.viewers else frames.skip()
                built = time.monotonic() - now
                self.work += built
                cost = 0.8 * cost + 0.2 * (built + delivery)
                delivery = 0.0
                if text is not None:
                    await layer.group_send(group, {"type": "sim.frame", "seq": hosted.frames.seq, "text": text})
            if pause is None:
                # Paused: sleep until a command arrives (frames only change through commands),
                # then build a frame for its effect as soon as the interval allows.
                if not wake.is_set() and not (hosted.frames.owed and hosted.viewers):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), timeout=1.0)
                delay = COMMAND_FRAME_INTERVAL - (time.monotonic() - last_frame)
                if delay > 0 and not hosted.busy:
                    await asyncio.sleep(delay)
            elif wake.is_set():
                await asyncio.sleep(min(pause, max(0.0, last_frame + COMMAND_FRAME_INTERVAL - time.monotonic())))
            else:
                # Sleep until the simulation or a frame is due, or a command arrives.
                timeout = min(pause, max(0.0, last_frame + interval - time.monotonic()))
                if timeout <= 0:
                    # As fast as possible: only let the others run, and count what they took
                    # beyond other simulations' slices and frames -- consumers sending frames,
                    # Daphne reading acknowledgements: the cost of this simulation's viewers.
                    yielded, work = time.monotonic(), self.work
                    await asyncio.sleep(0)
                    delivery += max(0.0, time.monotonic() - yielded - (self.work - work))
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), timeout=timeout)

    # -- the command channel ------------------------------------------------------------------------
    async def _listen(self, hosted: HostedSimulation) -> None:
        """Commands, status and the viewers' state at once, one after another; expensive reads
        (`reads.STREAMED`) go to the reader's queue, which takes its share of the loop."""
        layer = get_channel_layer()
        channel = command_channel(hosted.id)
        queue: asyncio.Queue[Obj] = asyncio.Queue()
        waiting: collections.Counter[str] = collections.Counter()  # queued reads per requester
        reader = spawn(self._read(hosted, queue, waiting), f"read {hosted.id}")
        try:
            while (message := await _receive(layer, channel, hosted)) is not None:
                cmd = message.get("cmd")
                if isinstance(cmd, dict) and cmd.get("op") in reads.STREAMED:
                    requester = str(message.get("reply_to"))
                    if queue.qsize() < reads.MAX_QUEUED and waiting[requester] < reads.MAX_QUEUED_EACH:
                        waiting[requester] += 1
                        queue.put_nowait(message)
                    elif message.get("reply_to"):
                        busy = {"ok": False, "error": "too many reads waiting: try again later", "busy": 1}
                        reply = {"type": "sim.reply", "id": message.get("id"), "op": cmd.get("op"), "result": busy}
                        with contextlib.suppress(ChannelFull):
                            await layer.send(message["reply_to"], reply)
                    continue
                try:
                    await self._handle(hosted, message)
                except Exception:  # never let one bad message end the listener
                    log.exception("command for %s failed: %r", hosted.id, message)
                reads.forget(layer, message.get("reply_to"))
        finally:
            reader.cancel()

    async def _listen_watches(self, hosted: HostedSimulation) -> None:
        """The watch machinery's channel (`WATCH_OPS` only), beside the command listener: a
        renewal never waits behind the commands, and no command can take its place."""
        layer = get_channel_layer()
        channel = watch_channel(hosted.id)
        while (message := await _receive(layer, channel, hosted)) is not None:
            cmd = message.get("cmd")
            if not isinstance(cmd, dict) or cmd.get("op") not in WATCH_OPS:
                log.warning("not a watch command on %s: %r", channel, message)
                continue
            try:
                await self._handle(hosted, message)
            except Exception:  # never let one bad message end the listener
                log.exception("watch command for %s failed: %r", hosted.id, message)
            reads.forget(layer, message.get("reply_to"))

    async def _read(
        self, hosted: HostedSimulation, queue: asyncio.Queue[Obj], waiting: collections.Counter[str]
    ) -> None:
        """The expensive reads, one at a time, at most `reads.READ_SHARE` of the loop's time
        while anything else wants it (`reads.Pacer`)."""
        layer = get_channel_layer()
        pacer = reads.Pacer(self._count_work)
        big = False
        while not hosted.stopped:
            if queue.empty() and big:
                reads.trim()  # a burst of big answers is over: give the freed heap back
                big = False
            message = await queue.get()
            reply_to = message.get("reply_to")
            try:
                if not reads.abandoned(reply_to):
                    pacer.start()
                    if message.get("stream"):
                        await self._stream(layer, hosted, message, pacer)
                    else:  # a requester that wants the whole answer in one message (a viewer)
                        await self._handle(hosted, message)
                    big = big or message["cmd"].get("op") in ("report", "export")
            except Exception:  # never let one bad message end the reader
                log.exception("read for %s failed: %r", hosted.id, message)
            finally:
                reads.forget(layer, reply_to)
                waiting[str(reply_to)] -= 1
                if waiting[str(reply_to)] <= 0:
                    del waiting[str(reply_to)]
            await pacer.pause()
            await pacer.settle()

    def _count_work(self, seconds: float) -> None:
        self.work += seconds

    async def _stream(self, layer: Any, hosted: HostedSimulation, message: Obj, pacer: reads.Pacer) -> None:
        """Answer a read as text in parts: the answer's text is made at once (an atomic
        snapshot), then sent part by part (`reads.stream`)."""
        cmd: Obj = message["cmd"]
        op = cmd["op"]
        head: Obj = {"ok": True}
        pieces: Any
        try:
            if op == "report":
                hosted.finish_instant()  # on the loop: it moves the world
                pieces = reads.text_pieces(await reads.built_aside(hosted.report_json))
            elif op == "export" and (cmd.get("at") is not None or "form" in cmd) and not message.get("control"):
                # The past is cut from the recording: the token's, whichever door (views.PAST_NEEDS_TOKEN).
                head, pieces = {"ok": False, "error": "read-only: the past (at) needs the access token"}, []
            elif op == "export" and cmd.get("form") == "recording":
                # What replays the session up to `at` (report.json?at=T replays it in a child).
                pieces = [json.dumps(hosted.recording(cmd.get("at")), separators=(",", ":"), allow_nan=False)]
            elif op == "export":
                pieces = [yaml.safe_dump(hosted.export(cmd.get("at")), sort_keys=False, allow_unicode=True)]
            else:
                answer = dict(READS[op](hosted, cmd))
                body = answer.pop("body", None)
                head.update(answer)
                pieces = reads.text_pieces(body) if isinstance(body, str) else []
        except CommandError as exc:
            head, pieces = {"ok": False, "error": str(exc)}, []
        _note_client(hosted, cmd, head)
        await reads.stream(layer, message, head, pieces, pacer)

    async def _handle(self, hosted: HostedSimulation, message: Obj) -> None:
        layer = get_channel_layer()
        reply_to = message.get("reply_to")
        cmd = message.get("cmd") if isinstance(message.get("cmd"), dict) else {}
        op = cmd.get("op")
        viewer = message.get("viewer")
        read_only = "read-only: open the dashboard with its access token to control it"
        reply: Obj
        if op == "state":
            if isinstance(viewer, str):
                hosted.viewers.add(viewer)
                hosted.focus(viewer, [tuple(k) for k in cmd.get("focus") or [] if isinstance(k, list) and len(k) == 2])
                hosted.open_pod(viewer, cmd.get("pod"))
                hosted.focus_owner(viewer, cmd.get("owner"))
            text = hosted.frames.state(sorted(hosted.focused()))
            if reply_to:
                await layer.send(reply_to, {"type": "sim.state", "seq": hosted.frames.seq, "text": text})
            return
        if op == "catchup":
            # A viewer that skipped frames (it fell behind, or one was lost on the way): the
            # frames after the last one it has, merged; a full state only if they are gone.
            since = cmd.get("since")
            text = hosted.frames.catchup(since) if isinstance(since, int) and not isinstance(since, bool) else None
            if text is None:
                text = hosted.frames.state(sorted(hosted.focused()))
            if reply_to:
                await layer.send(reply_to, {"type": "sim.state", "seq": hosted.frames.seq, "text": text})
            return
        if op == "bye":
            if isinstance(viewer, str):
                hosted.unfocus(viewer)
                Kube.of(hosted).forget_viewer(viewer)
            return
        if op == "past":  # a moment of the past, for this viewer: a replay worker answers it later
            await past.handle(self.service, hosted, message)
            return
        host_op = HOST_OPS.get(op) if isinstance(op, str) else None
        if host_op is not None:  # `fork`, `pair`: ops that need the host itself
            try:
                maybe = host_op(self, hosted, cmd, message)
            except CommandError as exc:
                maybe = {"ok": False, "error": str(exc)}
            if maybe is None:  # it replies later, itself (a fork, once replayed)
                return
            reply = maybe
        elif op in k8s_ops.READS and not message.get("control"):
            # The Kubernetes API's verbs need the token, whichever door they come through.
            reply = {"ok": False, "error": read_only}
        elif op in READS:
            try:
                if op in k8s_ops.READS:
                    cmd = scoped_watch(cmd, viewer if isinstance(viewer, str) else None)
                reply = {"ok": True, **READS[op](hosted, cmd)}
            except CommandError as exc:
                reply = {"ok": False, "error": str(exc)}
        elif not message.get("control") and op != "focus":
            reply = {"ok": False, "error": read_only}
        elif op == "stop":
            await self.stop_simulation(hosted.id)
            reply = {"ok": True}
        else:
            try:
                reply = hosted.command(cmd, viewer=viewer if isinstance(viewer, str) else None)
            except CommandError as exc:
                reply = {"ok": False, "error": str(exc)}
            await k8s_ops.publish(hosted)
            self.wake(hosted.id)
            recorder = self._recorders.get(hosted.id)
            if recorder is not None:
                recorder.note(force=True)
        _note_client(hosted, cmd, reply)
        if reply_to:
            await layer.send(reply_to, {"type": "sim.reply", "id": message.get("id"), "op": op, "result": reply})

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> None:
        from django.conf import settings

        self._heartbeat = spawn(self._beat(), "heartbeat")
        if isinstance(get_channel_layer(), InMemoryChannelLayer):
            # One process serves everything: whatever the registry lists from another process
            # died with it (a restart within the heartbeat window).
            await _forget_other_hosts()
        # The sessions that were running when the server died, back by replay, paused.
        shared = not isinstance(get_channel_layer(), InMemoryChannelLayer)
        # Each on its own: one that cannot be restored never keeps the others from coming back.
        for orphan in await recording.orphans(HOST_ID, shared=shared):
            try:
                await self.restore_simulation(orphan)
            except Damaged as exc:
                log.warning("simulation %s could not be restored, its recording is damaged: %s", orphan, exc)
            except Exception as exc:  # the host full, the database busy, a bug: stopped, kept, re-openable
                log.warning("simulation %s could not be restored: %s", orphan, exc, exc_info=type(exc) is not HostError)
                try:
                    await recording.set_note(orphan, f"could not be restored: {exc}", stopped=True)
                except Exception:
                    log.exception("simulation %s: its recording could not be marked stopped", orphan)
        # The first simulation: the demo, or what the operator named (a library id or a file).
        first = settings.CTRLSCOPE_START
        if not first:
            return
        ids = {entry["id"] for entry in library()}
        sim_id: str | None = first if first in ids else first_sim_id(first)
        if sim_id not in self.sims and not await _record_alive(str(sim_id)):
            source = first if first in ids else "file"
            stored = await recording.stored_ids()
            if sim_id in stored:
                # Its id is a stopped session's recording (the demo of an earlier run): that
                # recording moves to an id of its own, and the new session gets the one its
                # URL promises. Not movable (not stopped): the new one gets a fresh id.
                moved = f"{sim_id}-{secrets.token_hex(3)}"
                while moved in stored or moved in self.sims:
                    moved = f"{sim_id}-{secrets.token_hex(3)}"
                if not await recording.move_stopped(sim_id, moved):
                    sim_id = None
            await self.start_simulation(load_file(first), source=source, sim_id=sim_id, running=True)

    async def shutdown(self) -> None:
        """Stop every simulation and the heartbeat (tests; a process exiting needs nothing)."""
        for sim_id in list(self.sims):
            await self.stop_simulation(sim_id)
        if self._heartbeat is not None:
            self._heartbeat.cancel()

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT)
            for hosted in list(self.sims.values()):
                async with self._registry:
                    if not hosted.stopped:  # stopped while an earlier one was written
                        await save_record(hosted)
            reads.trim(if_needed=True)  # what big answers used, once the server wrote them out


def _hosted_session(sim_id: str, sim: Simulation, name: str, source: str) -> HostedSimulation:
    """The sessions the service builds for this host: paced against the wall clock, rendered."""
    return HostedSimulation(sim_id, sim, name=name, source=source)


def spawn(coro: Any, name: str) -> asyncio.Task[Any]:
    """A host task in a fresh context: not the request's that started it (asgiref's
    thread-sensitive executor of a finished request must not be inherited)."""
    task = asyncio.get_running_loop().create_task(coro, name=name, context=contextvars.Context())
    task.add_done_callback(_log_crash)
    return task


def _log_crash(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("host task %s crashed", task.get_name(), exc_info=task.exception())


# -- reads: answers built from the simulation for one viewer or view ---------------------------------
def _read_pod(hosted: HostedSimulation, cmd: Obj) -> Obj:
    from dashboard.host import details

    return details.pod(hosted, cmd)


def _read_syncs(hosted: HostedSimulation, cmd: Obj) -> Obj:
    from dashboard.host import details

    return details.sync_history(hosted, cmd)


def _read_export(hosted: HostedSimulation, cmd: Obj) -> Obj:
    return {"scenario": hosted.export()}


def _read_report(hosted: HostedSimulation, cmd: Obj) -> Obj:
    return {"report": hosted.report()}


MAX_FILTER_CHARS = 100  # a trace-view filter value is a short string


def _read_why(hosted: HostedSimulation, cmd: Obj) -> Obj:
    """`{"op": "why", "seq": n}`: the chain of causes of record n (controlplane.causes)."""
    seq = cmd.get("seq")
    if type(seq) is not int or not 1 <= seq <= hosted.sim.trace.seq:
        raise CommandError(f"seq: must be the number of a trace record, 1 to {hosted.sim.trace.seq}")
    try:
        links = hosted.sim.why(seq)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    for link in links:
        link["time"] = None if link["time"] is None else round(link["time"], 6)
    return {"links": links}


def _read_records(hosted: HostedSimulation, cmd: Obj) -> Obj:
    """`{"op": "records", "filters": {...}, "offset": n, "limit": n}`: a page of the complete
    trace (controlplane.causes), as JSON text in `body` (a streamed read: filters scan)."""
    filters = cmd.get("filters") or {}
    if not isinstance(filters, dict):
        raise CommandError("filters: must be an object")
    clean: dict[str, str] = {}
    for key, value in filters.items():
        if key not in RECORD_FILTERS or not isinstance(value, str) or len(value) > MAX_FILTER_CHARS:
            raise CommandError(
                f"{key}: not a filter of the trace view (kind, controller, key, name or text, at most "
                f"{MAX_FILTER_CHARS} characters)"
            )
        if value.strip():
            clean[key] = value.strip()
    offset, limit = cmd.get("offset", 0), cmd.get("limit", 200)
    if type(offset) is not int or offset < 0 or type(limit) is not int or not 0 <= limit <= 1000:
        raise CommandError("offset, limit: must be whole numbers, offset >= 0 and 0 <= limit <= 1000")
    upto = cmd.get("upto")
    if upto is not None and (type(upto) is not int or upto < 0):
        raise CommandError("upto: must be the number of a trace record (a whole number >= 0)")
    page = hosted.sim.records(clean, offset, limit, upto)
    return {"body": json.dumps(page, separators=(",", ":"), allow_nan=False, default=str)}


def _read_status(hosted: HostedSimulation, cmd: Obj) -> Obj:
    from dashboard.host import panels

    return {"status": panels.status(hosted)}


UNCOUNTED = ("k8s_renew", "k8s_unwatch")  # the HTTP side's own upkeep of a watch, not a client's request


def _note_client(hosted: HostedSimulation, cmd: Any, reply: Obj) -> None:
    """Count a Kubernetes API request for the connected-clients panel (`k8s_ops.note_request`):
    only commands that name a `client` (the HTTP side adds its User-Agent)."""
    if not isinstance(cmd, dict):
        return
    op = cmd.get("op")
    if "client" not in cmd or op in UNCOUNTED or not (op == "act" or op in k8s_ops.READS):
        return
    response = reply.get("response")
    if isinstance(response, list | tuple) and response:
        code = int(response[0])
    elif isinstance(reply.get("code"), int):
        code = int(reply["code"])
    else:
        code = 200 if reply.get("ok") else 400
    k8s_ops.note_request(hosted, cmd, code)


READS = {
    "pod": _read_pod,
    "syncs": _read_syncs,
    "export": _read_export,
    "report": _read_report,
    "status": _read_status,
    "why": _read_why,
    "records": _read_records,
    "edit": open_edit,  # the object `kubectl edit` would open
    "edit_preview": edit_preview,  # a server dry run of the edit, and its diff
    "search": search.search,  # the page's search box (pods, owners, nodes by name or label selector)
    **k8s_ops.READS,  # the Kubernetes API's reads, dry runs and watches
}


# Ops that need the host itself (its simulations, its tasks), served by the modules above it
# (`forks.op`, `pairs.op`), which `dashboard/host/__init__.py` registers here: the host never
# imports them. Each gets the host, the simulation the command came to, the command and the whole
# message (its `reply_to`, `control`); it returns the reply, or None when it replies later itself.
HostOp = Callable[[Host, HostedSimulation, Obj, Obj], Obj | None]
HOST_OPS: dict[str, HostOp] = {}


# -- the registry in the database ----------------------------------------------------------------------
# In a worker thread, not asgiref's one "thread-sensitive" thread: a view awaiting the host holds
# that thread (sync middleware runs the async view through it), and the host must not wait for it.
@sync_to_async(thread_sensitive=False)
def save_record(hosted: HostedSimulation) -> None:
    from django.utils import timezone

    from dashboard.models import SimulationRecord

    SimulationRecord.objects.update_or_create(
        id=hosted.id,
        defaults={
            "name": hosted.name,
            "source": hosted.source,
            "seed": hosted.sim.seed,
            "host": HOST_ID,
            "heartbeat": timezone.now(),
            "virtual_time": hosted.sim.now,
            "mode": hosted.mode if hosted.error is None else "error",
            "pods": len(hosted.frames.pods),
        },
    )


@sync_to_async(thread_sensitive=False)
def _delete_record(sim_id: str) -> None:
    from dashboard.models import SimulationRecord

    SimulationRecord.objects.filter(id=sim_id).delete()


@sync_to_async(thread_sensitive=False)
def _forget_other_hosts() -> None:
    from dashboard.models import SimulationRecord

    SimulationRecord.objects.exclude(host=HOST_ID).delete()


@sync_to_async(thread_sensitive=False)
def _record_alive(sim_id: str) -> bool:
    from dashboard.models import SimulationRecord

    return SimulationRecord.alive().filter(id=sim_id).exclude(host=HOST_ID).exists()


# -- the process's host -------------------------------------------------------------------------------
_host: Host | None = None
_start: asyncio.Task[Any] | None = None


def get_host() -> Host:
    global _host
    if _host is None:
        _host = Host()
    return _host


async def reset_for_tests() -> None:
    """Forget this process's host (after shutting it down): the next scope starts a new one."""
    global _host, _start
    if _host is not None:
        await _host.shutdown()
    _host, _start = None, None


def ensure_started() -> asyncio.Task[Any]:
    """Start the host once per process on the running loop (again if the loop changed: tests)."""
    global _host, _start
    loop = asyncio.get_running_loop()
    if _start is None or _start.get_loop() is not loop:
        if _start is not None:
            _host = None  # a previous loop's host: its tasks died with that loop
        _start = spawn(get_host().start(), "host start")
    return _start


ANSWER_TIMEOUT = 10.0  # seconds a door waits for the host's answer (or for each part of a streamed one)


async def request(sim_id: str, cmd: Obj, *, control: bool = False, timeout: float | None = None) -> Obj:
    """Send one command to a simulation (whichever process hosts it) and wait for the answer.
    Raises `reads.NoAnswer` (a LookupError) when nobody answers within `timeout` seconds
    (`ANSWER_TIMEOUT` by default)."""
    timeout = ANSWER_TIMEOUT if timeout is None else timeout
    layer = get_channel_layer()
    reply_to = await layer.new_channel()
    await _send_command(layer, sim_id, cmd, reply_to, control)
    try:
        message = await asyncio.wait_for(layer.receive(reply_to), timeout)
    except TimeoutError:
        reads.abandon(layer, reply_to)  # the answer, when it comes, is dropped at once
        raise reads.NoAnswer(f"simulation {sim_id} did not answer within {timeout:g} s") from None
    result: Obj = message.get("result", {})
    return result


async def request_stream(sim_id: str, cmd: Obj, *, control: bool = False, timeout: float | None = None) -> reads.Answer:
    """An expensive read (`reads.STREAMED`): its answer's head and its text in parts, each part
    within `timeout` of the one before. Waits for one of this process's slots for such reads
    (`reads.gate`); raises `reads.Busy` when there is none soon, LookupError when nobody
    answers (`reads.NoAnswer`). Iterate or close the answer's `text()`: that frees the slot."""
    timeout = ANSWER_TIMEOUT if timeout is None else timeout
    slot = reads.gate(str(cmd.get("op")))
    if slot is not None:
        await slot.acquire()
    layer = get_channel_layer()
    reply_to = await layer.new_channel()
    done = False

    def close() -> None:
        if not done:
            reads.abandon(layer, reply_to)  # the host stops; what it sent is dropped
        if slot is not None:
            slot.release()

    async def parts(message: Obj) -> AsyncIterator[str]:
        nonlocal done
        while message.get("more"):
            message = await reads.receive(layer, reply_to, timeout)
            yield str(message.get("text", ""))
        done = True

    try:
        await _send_command(layer, sim_id, cmd, reply_to, control, stream=True)
        message = await reads.receive(layer, reply_to, timeout)
    except BaseException as exc:
        close()
        if isinstance(exc, reads.NoAnswer):
            raise reads.NoAnswer(f"simulation {sim_id} did not answer within {timeout:g} s") from None
        raise
    head: Obj = message.get("result", {})
    if not message.get("more"):  # the whole answer in one message: nothing more to wait for
        done = True
        close()
        if head.get("busy"):
            raise reads.Busy("read", 1)
        return reads.Answer(head, str(message.get("text", "")), False, _nothing())
    return reads.Answer(head, str(message.get("text", "")), True, parts(message), close)


async def _send_command(layer: Any, sim_id: str, cmd: Obj, reply_to: str, control: bool, **extra: Any) -> None:
    """One command of a view or the Kubernetes API to the simulation's channel; `reads.Busy`
    when that channel holds as many as it takes."""
    message = {"type": "sim.command", "cmd": cmd, "reply_to": reply_to, "id": 1, "control": control, "viewer": None}
    try:
        await layer.send(command_channel(sim_id), {**message, **extra})
    except ChannelFull:
        raise reads.Busy("commands", 1) from None


async def send_watch_command(sim_id: str, cmd: Obj, *, wait: float, reply_to: str | None = None) -> None:
    """One command of the watch machinery (`WATCH_OPS`) to the simulation's watch channel. A
    full channel is waited out (every `WATCH_ROOM_POLL` s) for up to `wait` seconds, then
    `reads.Busy`: the machinery is slowed by its own load only, never refused by the requests'."""
    if cmd.get("op") not in WATCH_OPS:
        raise ValueError(f"not a watch command: {cmd.get('op')!r}")
    layer = get_channel_layer()
    message = {"type": "sim.command", "cmd": cmd, "reply_to": reply_to, "id": 1, "control": True, "viewer": None}
    deadline = time.monotonic() + wait
    while True:
        try:
            await layer.send(watch_channel(sim_id), message)
            return
        except ChannelFull:
            if time.monotonic() >= deadline:
                raise reads.Busy("watch", 1) from None
        await asyncio.sleep(WATCH_ROOM_POLL)


async def request_watch(sim_id: str, cmd: Obj, *, timeout: float) -> Obj:
    """A command of the watch machinery and its answer, within `timeout` seconds in all (room on
    the watch channel, then the answer). `reads.Busy` when the channel stayed full, `reads.NoAnswer`
    when nobody answered."""
    layer = get_channel_layer()
    reply_to = await layer.new_channel()
    deadline = time.monotonic() + timeout
    await send_watch_command(sim_id, cmd, wait=timeout, reply_to=reply_to)
    try:
        message = await asyncio.wait_for(layer.receive(reply_to), max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        reads.abandon(layer, reply_to)
        raise reads.NoAnswer(f"simulation {sim_id} did not answer within {timeout:g} s") from None
    result: Obj = message.get("result", {})
    return result


async def _nothing() -> AsyncIterator[str]:
    return
    yield

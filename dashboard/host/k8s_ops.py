"""The Kubernetes API's side in the host: the session's API (`Kube`, the session service's
`kube`: reads, dry runs, watches, connected clients, metrics; controlplane/session/kube.py) with
what only the web side has — kubectl's Table printing (`dashboard.k8s.tables`), the wall clock
of watch leases and client rates, and the channel layer that carries watch events.

The HTTP side (`dashboard.k8s.api`) sends these ops through the channel layer like every other
command (`READS`); writes are not here: they are `request` actions (`op: act`).

Guarantees
----------
* `publish(hosted)` — called by the host after every slice of simulation work and every command
  — has the session's `Kube` queue on each watcher the events committed since (`Kube.collect`,
  one synchronous step); then one publish at a time hands each watcher's queue to its channel in
  order, in messages of at most `WATCH_MESSAGE_BYTES`. So every watcher gets every event once,
  in resourceVersion order, however publishes overlap.
* A watcher whose channel is full keeps its events queued (at most `WATCH_BACKLOG_BYTES`) and
  gets them when its reader has made room (every publish retries; a paused simulation publishes
  every second). Beyond that bound it is ended as kube-apiserver's cacher ends a watcher that
  cannot keep up (`cache_watcher.go`, `add`: "we couldn't send event to that watcher. Since we
  don't want to block on it infinitely, we simply terminate it"), but never silently: what was
  already in its channel, then an ERROR event with a 410 Expired Status ("the watcher fell
  behind"), then the end — client-go's reflector relists, `kubectl get -w` says why it stopped.
  A watcher that is not renewed within `WATCH_LEASE` seconds is dropped (nobody reads it).
* A channel layer drops a message that waited in its channel longer than its expiry (60 s in
  memory, 30 s on Redis): a reader that slow would miss events without knowing. So every message
  names the revision of the message before it (`after`: the watcher's `sent` when it was handed
  over), and the HTTP side ends the stream with 410 Expired at the first message whose `after`
  is not the revision it last received; every renewal of an HTTP watch with nothing queued
  queues an empty message (`HEARTBEAT`), so that events lost at the end of a burst are found
  out too, within a renewal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

from controlplane.simulation import Kube, Session, Watcher, WatchHub, resource_expired, watch_error_line
from dashboard.k8s import tables

Obj = dict[str, Any]
log = logging.getLogger(__name__)

WATCH_MESSAGE_BYTES = 64 * 1024  # event lines joined into one channel message, at most (one line may exceed it)
WATCH_BACKLOG_BYTES = 2 * 1024 * 1024  # per watcher, lines waiting for room in its full channel, at most
FELL_BEHIND = (
    "the watcher fell behind: more than {} bytes of events were waiting for it to read; "
    "list again and watch from the list's resourceVersion"
)


# -- the ops: the session's Kubernetes API, with the Table printer and the wall clock ------------------
def _get(hosted: Session, cmd: Obj) -> Obj:
    return Kube.of(hosted).get(cmd, tables.table)


def _list(hosted: Session, cmd: Obj) -> Obj:
    return Kube.of(hosted).list_page(cmd, tables.table)


def _dry_run(hosted: Session, cmd: Obj) -> Obj:
    return Kube.of(hosted).dry_run(cmd)


def _watch(hosted: Session, cmd: Obj) -> Obj:
    return Kube.of(hosted).watch(cmd, tables.table, time.monotonic())


def _unwatch(hosted: Session, cmd: Obj) -> Obj:
    return Kube.of(hosted).unwatch(cmd)


def _renew(hosted: Session, cmd: Obj) -> Obj:
    return Kube.of(hosted).renew(cmd, time.monotonic())


def _metrics(hosted: Session, cmd: Obj) -> Obj:
    return Kube.of(hosted).metrics(cmd)


def _log(hosted: Session, cmd: Obj) -> Obj:
    return Kube.of(hosted).log(cmd)


def _health(hosted: Session, cmd: Obj) -> Obj:
    return Kube.of(hosted).health(cmd)


READS: dict[str, Callable[[Session, Obj], Obj]] = {
    "k8s_get": _get,
    "k8s_list": _list,
    "k8s_dryrun": _dry_run,
    "k8s_watch": _watch,
    "k8s_unwatch": _unwatch,
    "k8s_renew": _renew,
    "k8s_metrics": _metrics,
    "k8s_log": _log,
    "k8s_health": _health,
}


def note_request(hosted: Session, cmd: Obj, code: int) -> None:
    """Count one Kubernetes API request for the connected-clients panel, now (`Kube.note_request`)."""
    Kube.of(hosted).note_request(cmd, code, time.monotonic())


def clients(hosted: Session) -> list[Obj]:
    """The connected clients, now (`Kube.clients`)."""
    return Kube.of(hosted).clients(time.monotonic())


# -- handing the events to the watchers' channels -------------------------------------------------------
async def publish(hosted: Session) -> None:
    """Send every watcher the events committed since the last publish (see the module doc).

    One publish at a time sends. A publish that finds another sending only queues its events:
    the sender goes round again for them. The caller waits for one round at most (what was
    queued when it came): if more came meanwhile, a task of its own carries on, so neither the
    drive loop nor the command listener waits on a stream of publishes."""
    kube = Kube.of(hosted)
    hub = kube.watching
    if hub is None:
        return
    kube.collect(hub)
    if hub.sending:
        hub.again = True
        return
    hub.sending = True
    try:
        hub.again = False
        await _send_all(hub)
    finally:
        if hub.again and not hub.closed:
            hub.task = asyncio.get_running_loop().create_task(_keep_sending(hub), name="watch sender")
            hub.task.add_done_callback(_log_crash)
        else:
            hub.sending = False


async def _keep_sending(hub: WatchHub) -> None:
    try:
        while hub.again and not hub.closed:
            hub.again = False
            await _send_all(hub)
    finally:
        hub.sending = False
        hub.task = None


def _log_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("watch sender crashed", exc_info=task.exception())


async def _send_all(hub: WatchHub) -> None:
    layer = get_channel_layer()
    wall = time.monotonic()
    shared: _Shared = {}  # this round's messages, built once for every watcher that gets the same
    for key, watcher in list(hub.watchers.items()):
        if hub.watchers.get(key) is not watcher:
            continue  # ended (or replaced) while an earlier watcher's send awaited
        if wall > watcher.expires:
            del hub.watchers[key]
            continue
        if not watcher.backlog and watcher.final is None:
            continue
        if await _drain(layer, watcher, hub, shared):
            if watcher.final is not None and hub.watchers.get(key) is watcher:
                del hub.watchers[key]  # its last message is in the channel
        elif watcher.backlog_bytes > WATCH_BACKLOG_BYTES:
            status = resource_expired(FELL_BEHIND.format(WATCH_BACKLOG_BYTES)).status()
            watcher.end(watch_error_line(status), watcher.backlog[-1][1])
            await _drain(layer, watcher, hub, shared)  # sent now if there is room, else on a later publish


# Messages of one round of sends, by the identity of their lines: watchers that print events
# alike share the lines' text objects (`Watcher.lines`), so those with the same backlog get one
# joined and encoded message instead of a copy each. The lines are kept with it: an id stays
# theirs for the round.
_Shared = dict[tuple[int, ...], tuple[list[str], bytes]]


def _encoded(texts: list[str], shared: _Shared | None) -> bytes:
    if shared is None:
        return "".join(texts).encode()
    key = tuple(map(id, texts))
    hit = shared.get(key)
    if hit is None:
        hit = shared[key] = (texts, "".join(texts).encode())
    return hit[1]


async def _drain(layer: Any, watcher: Watcher, hub: WatchHub | None, shared: _Shared | None = None) -> bool:
    """Hand the watcher's backlog (then its last message) to its channel, in order, in messages
    of at most WATCH_MESSAGE_BYTES; False when the channel is full before the end. The HTTP
    side's watches get their lines as bytes (built once per round for watchers that share them),
    a page's websocket watches as text."""
    backlog = watcher.backlog
    while backlog:
        if hub is not None and hub.watchers.get(watcher.key) is not watcher:
            return True  # ended meanwhile: nobody reads these any more
        parts: list[str] = []
        size = 0
        for text, _ in backlog:
            if parts and size + len(text) > WATCH_MESSAGE_BYTES:
                break
            parts.append(text)
            size += len(text)
        taken = [backlog.popleft() for _ in parts]
        watcher.backlog_bytes -= size
        sent = False
        try:
            if watcher.watch_id is None:  # the HTTP side: bytes for the response body as they are
                data = _encoded(parts, shared)
                sent = await _send(layer, watcher, "", taken[-1][1], data=data)
            else:
                sent = await _send(layer, watcher, "".join(parts), taken[-1][1])
        finally:  # (not sent, or cancelled as the simulation stops: its last round sends them)
            if not sent and (watcher.final is None or not watcher.final[0]):  # (not ended by an error meanwhile)
                backlog.extendleft(reversed(taken))
                watcher.backlog_bytes += size
        if not sent:
            return False
    if watcher.final is not None:
        text, revision = watcher.final
        return await _send(layer, watcher, text, revision, end=True, error=bool(text))
    return True


CLOSE_WAIT = 1.0  # seconds a stopping simulation keeps trying to hand watchers their last events


async def close_watches(hosted: Session) -> None:
    """The simulation stops: every watch stream ends, cleanly once it has every event (a stream
    whose channel stays full learns at its next renewal that the simulation is gone)."""
    kube = Kube.of(hosted)
    hub = kube.close()
    if hub is None:
        return
    hub.closed = True
    if hub.task is not None:
        hub.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await hub.task
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CLOSE_WAIT
    while hub.sending and loop.time() < deadline:  # a publish (of the cancelled drive task) ends
        await asyncio.sleep(0.01)
    kube.collect(hub)
    layer = get_channel_layer()
    pending = list(hub.watchers.values())
    for watcher in pending:
        watcher.end("", hub.published)
    while True:
        pending = [w for w in pending if not await _drain(layer, w, None)]
        if not pending or loop.time() >= deadline:
            return
        await asyncio.sleep(0.05)


async def _send(
    layer: Any,
    watcher: Watcher,
    text: str,
    revision: int,
    *,
    end: bool = False,
    error: bool = False,
    data: bytes | None = None,
) -> bool:
    # `after`: the revision of the message before it (what the reader must have had: module doc).
    message: Obj = {
        "type": "k8s.watch",
        "text": text,
        "revision": revision,
        "after": watcher.sent,
        "end": end,
        "error": error,
    }
    if data is not None:
        message["data"] = data
    if watcher.watch_id is not None:
        message["watch"] = watcher.watch_id
    try:
        await layer.send(watcher.channel, message)
    except ChannelFull:
        return False
    watcher.sent = max(watcher.sent, revision)
    return True

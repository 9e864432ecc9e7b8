"""The Kubernetes API's side in the host: reads, dry runs, watches and metrics of one simulation.

The HTTP side (`dashboard.k8s.api`) sends these ops through the channel layer like every other
command; writes are not here: they are `request` actions (`op: act`), recorded and replayed.

Guarantees
----------
* Reads change nothing: get and list use `APIServer.read` (no request log line, no trace record,
  no fault sees them), dry runs `APIServer.dry_run` (the seeded rng restored), watches the
  server's committed-event history. So a session read by kubectl replays to the same report as
  one nobody looked at.
* Answers are pre-serialised JSON text (`body`) with the HTTP `code`: the in-memory channel layer
  deep-copies every message, and copying a string costs nothing.
* Watches: `k8s_watch` answers the initial events (every matching object as ADDED when no
  resourceVersion or "0" is given; the retained events after it otherwise; an ERROR event with a
  410 Expired Status, `too old resource version: rv (N)`, when the history or the resource's
  watch cache window (controlplane/apiserver/watch_cache.py) no longer holds them) and
  registers the watcher in the same step, so no event falls between.
  `publish(hosted)` — called by the host after every slice
  of simulation work and every command — queues on each watcher, in one synchronous step, the
  events committed since, filtered as upstream's cacheWatcher filters (an object that stops
  matching a selector arrives as DELETED); then one publish at a time hands each watcher's queue
  to its channel in order, in messages of at most `WATCH_MESSAGE_BYTES`. So every watcher gets
  every event once, in resourceVersion order, however publishes overlap.
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
* Connected clients (issue #18 §6): every Kubernetes API request names its User-Agent (`client`);
  the host counts each client's requests and error answers over a sliding wall-clock window and
  knows its open watches, how many resourceVersions each is behind and for how long (`clients`).
  This is bookkeeping of the host, outside the simulation: it changes no report.
* `watchFault {client: …}` actions are applied by the core at their virtual instant and logged
  (`Simulation.client_watch_faults`); the next publish applies each to the watches whose
  User-Agent starts with the prefix and whose resource matches (or `*`): `drop` ends the watch
  with an ERROR 410 Expired Status (the client relists, as an informer whose watch was dropped
  does), `pause` holds its events (its view goes stale; watches it opens meanwhile start paused),
  `resume` sends what was held, in order — or a 410 if the history no longer holds it.
* From a websocket viewer, a watch is named by the viewer's `watch` id and sends to that
  viewer's own channel only (`scoped`); a viewer holds at most `MAX_VIEWER_WATCHES`, and they end
  when it leaves.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import re
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

from controlplane.apiserver import ApiError, Request, bad_request
from controlplane.apiserver.resources import ResourceInfo, lookup
from controlplane.apiserver.server import selection_predicate
from controlplane.session.commands import CommandError
from controlplane.session.keyindex import KeyIndex, key_of
from controlplane.session.session import Session
from controlplane.simulation import (
    request_of,
    resource_expired,
    too_large_resource_version,
    too_many_requests,
)
from dashboard.k8s import tables

Obj = dict[str, Any]
log = logging.getLogger(__name__)

WATCH_LEASE = 90.0  # seconds a watcher lives without a renewal from its HTTP side (or viewer)
WATCH_MESSAGE_BYTES = 64 * 1024  # event lines joined into one channel message, at most (one line may exceed it)
WATCH_BACKLOG_BYTES = 2 * 1024 * 1024  # per watcher, lines waiting for room in its full channel, at most
MAX_VIEWER_WATCHES = 4  # watches one websocket viewer may hold at once
MAX_WATCHERS = 1000  # watches of one simulation at once, from every door (each may hold ~3 MiB)
WATCH_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
READER = "kubectl"  # the client name of unrecorded reads (never logged)
CLIENT_WINDOW = 10.0  # wall seconds over which a connected client's request rate is measured
CLIENT_GONE = 60.0  # wall seconds after its last request and watch that a client is no longer listed
MAX_CLIENTS = 200  # clients remembered per simulation (the least recently seen is forgotten)
MAX_CLIENT_SAMPLES = 10_000  # request times kept per client (the rate saturates beyond)
DROPPED = (
    "the watch was dropped by an injected watchFault (client {}): "
    "list again and watch from the list's resourceVersion"
)


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _status_answer(err: ApiError) -> Obj:
    return {"code": err.code, "body": dumps(err.status())}


def _text(cmd: Obj, key: str) -> str | None:
    value = cmd.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 4096:
        raise CommandError(f"{key}: must be a string")
    return value


def _selector_options(cmd: Obj) -> Obj:
    options: Obj = {}
    for key in ("labelSelector", "fieldSelector"):
        value = _text(cmd, key)
        if value:
            options[key] = value
    return options


def _include_object(cmd: Obj) -> str:
    value = cmd.get("includeObject") or "Metadata"
    if value not in ("Metadata", "Object", "None"):
        raise bad_request(f"includeObject: must be Metadata, Object or None (got {value!r})")
    return str(value)


# -- get and list -----------------------------------------------------------------------------------
def _get(hosted: Session, cmd: Obj) -> Obj:
    sim = hosted.sim
    try:
        req = Request(
            READER,
            "get",
            str(cmd.get("resource")),
            _text(cmd, "subresource"),
            _text(cmd, "namespace"),
            _text(cmd, "name"),
        )
        obj = sim.server.read(req)
        if cmd.get("table") and req.subresource is None:
            rv = obj["metadata"].get("resourceVersion", "")
            body: Obj = tables.table(lookup(req.resource).plural, [obj], sim.now, rv, _include_object(cmd))
            return {"code": 200, "body": dumps(body)}
    except ApiError as err:
        return _status_answer(err)
    return {"code": 200, "body": dumps(obj)}


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        return str(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ) from None


def _encode_continue(rv: str, start: str) -> str:
    return (
        base64.urlsafe_b64encode(dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).encode()).decode().rstrip("=")
    )


_INDEXES: weakref.WeakKeyDictionary[Session, dict[str, KeyIndex]] = weakref.WeakKeyDictionary()


def key_index(hosted: Session, info: ResourceInfo) -> KeyIndex:
    """The simulation's sorted key index of one resource, up to date (see `keyindex`)."""
    indexes = _INDEXES.get(hosted)
    if indexes is None:
        indexes = _INDEXES[hosted] = {}
    index = indexes.get(info.plural)
    if index is None or index.server is not hosted.sim.server:
        index = indexes[info.plural] = KeyIndex(hosted.sim.server, info)
    index.refresh()
    return index


def _list(hosted: Session, cmd: Obj) -> Obj:
    """A list, as `APIServer.read` lists (key order, the current revision, the same errors), one
    page at a time: the sorted key index finds where a page starts, so a page costs its own rows,
    not a walk of every object."""
    sim = hosted.sim
    try:
        namespace = _text(cmd, "namespace")
        options = _selector_options(cmd)
        info = lookup(str(cmd.get("resource")))
        if not info.namespaced:
            namespace = None
        predicate = selection_predicate(info.plural, options)
        rv = str(sim.server.revision)
        token = _text(cmd, "continue")
        start = None
        if token:
            # An inconsistent continuation: the items after the last key, as they are now.
            rv, start = _decode_continue(token)
        limit = cmd.get("limit")
        page_size = limit if isinstance(limit, int) and limit > 0 else None
        items, more = key_index(hosted, info).page(namespace, start, predicate, page_size)
        cont = _encode_continue(rv, key_of(items[-1])) if more else ""
        if cmd.get("table"):
            body = tables.table(info.plural, items, sim.now, rv, _include_object(cmd), cont)
        else:
            meta: Obj = {"resourceVersion": rv}
            if cont:
                meta["continue"] = cont
            body = {"kind": info.list_kind, "apiVersion": info.api_version, "metadata": meta, "items": items}
    except ApiError as err:
        return _status_answer(err)
    return {"code": 200, "body": dumps(body)}


def _dry_run(hosted: Session, cmd: Obj) -> Obj:
    """A write with dryRun=All: answered, not recorded, nothing changed (not an action)."""
    request = cmd.get("request")
    problem = hosted.sim.check_action({"request": request})
    if problem is not None:
        raise CommandError(problem)
    assert isinstance(request, dict)
    req = request_of(request)
    try:
        answer, code = hosted.sim.server.dry_run(req)
    except ApiError as err:
        return _status_answer(err)
    return {"code": code, "body": dumps(answer), "warnings": req.warnings}


# -- watches ---------------------------------------------------------------------------------------
@dataclass
class Watcher:
    channel: str
    resource: str
    namespace: str | None
    predicate: Callable[[Obj], bool] | None
    table: bool
    include_object: str
    since: int
    expires: float = field(default_factory=lambda: time.monotonic() + WATCH_LEASE)
    key: str = ""  # its name in the hub: the HTTP side's channel, or "<viewer>|<watch id>"
    viewer: str | None = None  # the websocket viewer that opened it (None: the HTTP side)
    watch_id: str | None = None  # the viewer's name for it, on every message
    # Event lines committed but not yet in the channel (it was full), with the revision each
    # line's publish reached; at most WATCH_BACKLOG_BYTES of them.
    backlog: deque[tuple[str, int]] = field(default_factory=deque)
    backlog_bytes: int = 0
    # The last message once the watch must end (an ERROR line, or "" for a clean end): sent after
    # the backlog, with `end`; no event is queued after it.
    final: tuple[str, int] | None = None
    client: str = ""  # the User-Agent of the client that opened it
    paused: bool = False  # a `watchFault {client} pause` holds its events (`since` stays put)
    sent: int = 0  # the revision its channel has every event up to
    behind_since: float | None = None  # wall time it first fell behind the store (None: caught up)

    def line(self, event_type: str, obj: Obj, now: float) -> str:
        if self.table:
            obj = tables.table(
                self.resource, [obj], now, obj["metadata"].get("resourceVersion", ""), self.include_object
            )
        return dumps({"type": event_type, "object": obj}) + "\n"

    def _cached(self, cache: dict[tuple[Any, ...], str] | None, rv: int, event_type: str, obj: Obj, now: float) -> str:
        if cache is None:
            return self.line(event_type, obj, now)
        key = (rv, event_type, self.resource, self.table, self.include_object)
        text = cache.get(key)
        if text is None:
            text = cache[key] = self.line(event_type, obj, now)
        return text

    def lines(
        self,
        events: list[tuple[int, str, str, Obj, Obj | None]],
        now: float,
        cache: dict[tuple[Any, ...], str] | None = None,
    ) -> list[str]:
        """This watcher's lines of `events` (those after `since`). `cache` shares the text of one
        event between the watchers of one publish that print it the same way."""
        out: list[str] = []
        predicate, namespace = self.predicate, self.namespace
        for rv, event_type, resource, obj, old in events:
            if rv <= self.since or resource != self.resource:
                continue
            if namespace is not None and obj["metadata"].get("namespace") != namespace:
                continue
            if predicate is None:
                out.append(self._cached(cache, rv, event_type, obj, now))
            elif event_type == "MODIFIED":
                cur, was = predicate(obj), old is not None and predicate(old)
                if cur:
                    out.append(self._cached(cache, rv, "MODIFIED" if was else "ADDED", obj, now))
                elif was and old is not None:
                    gone = {
                        **old,
                        "metadata": {**old["metadata"], "resourceVersion": obj["metadata"]["resourceVersion"]},
                    }
                    out.append(self._cached(cache, rv, "DELETED", gone, now))
            elif predicate(obj):
                out.append(self._cached(cache, rv, event_type, obj, now))
        return out

    def queue(self, lines: list[str], revision: int) -> None:
        if self.final is None:
            for text in lines:
                self.backlog.append((text, revision))
                self.backlog_bytes += len(text)

    def end(self, text: str, revision: int) -> None:
        """End the watch with `text` (an ERROR line, or nothing): what is queued is dropped if the
        text is an error (the client relists), else sent first."""
        if self.final is not None:
            return
        if text:
            self.backlog.clear()
            self.backlog_bytes = 0
        self.final = (text, revision)


@dataclass
class ClientStats:
    """One connected client's requests, as the host saw them (wall clock)."""

    user_agent: str
    times: deque[float] = field(default_factory=deque)  # when each of the last requests came
    requests: int = 0
    errors: int = 0  # answers with a code >= 400
    last_seen: float = 0.0
    last_error: str = ""

    def note(self, code: int, what: str, wall: float) -> None:
        self.requests += 1
        self.last_seen = wall
        self.times.append(wall)
        while self.times and (self.times[0] < wall - CLIENT_WINDOW or len(self.times) > MAX_CLIENT_SAMPLES):
            self.times.popleft()
        if code >= 400:
            self.errors += 1
            self.last_error = f"{code} {what}"


class WatchHub:
    """The watchers of one simulation and how far their events have been published."""

    def __init__(self, revision: int) -> None:
        self.watchers: dict[str, Watcher] = {}
        self.clients: dict[str, ClientStats] = {}
        self.client_faults = 0  # entries of `Simulation.client_watch_faults` applied
        self.paused: set[tuple[str, str]] = set()  # (client prefix, resource or "*") held by a pause
        self.published = revision
        self.sending = False  # a publish is handing lines to the channels (one at a time, in order)
        self.again = False  # another publish queued lines meanwhile: the sender goes round again
        self.task: asyncio.Task[None] | None = None  # the sender, when it outlived its publish
        self.closed = False  # the simulation stopped: `close_watches` sends the last messages


_HUBS: weakref.WeakKeyDictionary[Session, WatchHub] = weakref.WeakKeyDictionary()


def _hub(hosted: Session) -> WatchHub:
    hub = _HUBS.get(hosted)
    if hub is None:
        hub = _HUBS[hosted] = WatchHub(hosted.sim.server.revision)
        # The client watch faults applied before any watch existed: a drop then ended nothing
        # (a watch opened later is not dropped by it), but a pause still in force holds it.
        for entry in hosted.sim.client_watch_faults():
            _note_pause(hub, entry)
        hub.client_faults = len(hosted.sim.client_watch_faults())
    return hub


def _bookmark(kind: str, api_version: str, rv: int, initial_end: bool = False) -> str:
    meta: Obj = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return dumps({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version, "metadata": meta}}) + "\n"


def _error_line(status: Obj) -> str:
    return dumps({"type": "ERROR", "object": status}) + "\n"


FELL_BEHIND = (
    "the watcher fell behind: more than {} bytes of events were waiting for it to read; "
    "list again and watch from the list's resourceVersion"
)


def scoped(cmd: Obj, viewer: str | None) -> Obj:
    """A watch command as the host takes it. From a websocket viewer: its own channel, named
    `<viewer>|<watch id>` (so it reaches no other channel and touches no other watch); from the
    HTTP side (no viewer): the channel it names, which is also the watch's name."""
    cmd = {k: v for k, v in cmd.items() if k not in ("key", "viewer", "watch_id")}
    if viewer is None:
        return cmd
    watch_id = cmd.get("watch", 0)
    if isinstance(watch_id, bool) or not isinstance(watch_id, int | str) or not WATCH_ID.match(str(watch_id)):
        raise CommandError("watch: a number or a name of at most 64 letters, digits, '-' or '_'")
    return {**cmd, "channel": viewer, "key": f"{viewer}|{watch_id}", "viewer": viewer, "watch_id": str(watch_id)}


def forget_viewer(hosted: Session, viewer: str) -> None:
    """The viewer left: its watches end (nobody reads their channel any more)."""
    hub = _HUBS.get(hosted)
    if hub is not None:
        for key in [key for key, w in hub.watchers.items() if w.viewer == viewer]:
            del hub.watchers[key]


def _key(cmd: Obj) -> str:
    return str(cmd.get("key") or cmd.get("channel"))


def _watch(hosted: Session, cmd: Obj) -> Obj:
    sim = hosted.sim
    server = sim.server
    channel = cmd.get("channel")
    if not isinstance(channel, str) or not channel:
        raise CommandError("channel: required")
    key = _key(cmd)
    viewer = cmd.get("viewer")
    hub = _hub(hosted)
    if isinstance(viewer, str):
        others = sum(1 for k, w in hub.watchers.items() if w.viewer == viewer and k != key)
        if others >= MAX_VIEWER_WATCHES:
            raise CommandError(f"a viewer may hold at most {MAX_VIEWER_WATCHES} watches: end one (k8s_unwatch) first")
    if key not in hub.watchers and len(hub.watchers) >= MAX_WATCHERS:
        busy = too_many_requests(f"this simulation serves {MAX_WATCHERS} watches already: try again later")
        return _status_answer(busy)
    try:
        info = lookup(str(cmd.get("resource")))
        namespace = _text(cmd, "namespace") if info.namespaced else None
        options = _selector_options(cmd)
        predicate = selection_predicate(info.plural, options)
        include = _include_object(cmd)
        rv_text = _text(cmd, "resourceVersion")
        watcher = Watcher(channel, info.plural, namespace, predicate, bool(cmd.get("table")), include, server.revision)
        watcher.key = key
        watcher.client = str(cmd.get("client") or "")
        watcher.paused = _paused(hub, watcher)
        if isinstance(viewer, str):
            watcher.viewer, watcher.watch_id = viewer, str(cmd.get("watch_id"))
        lines: list[str] = []
        now = sim.now
        if rv_text in (None, "0") or cmd.get("sendInitialEvents"):
            request = Request(READER, "list", info.plural, None, namespace, None, None, options)
            for obj in server.read(request)["items"]:
                lines.append(watcher.line("ADDED", obj, now))
            if cmd.get("sendInitialEvents") and cmd.get("bookmarks"):
                lines.append(_bookmark(info.kind, info.api_version, server.revision, initial_end=True))
        else:
            try:
                since = int(rv_text)
            except ValueError:
                raise bad_request(f'invalid resource version "{rv_text}"') from None
            try:
                if since > server.revision:  # a client that read from another (or a later) world
                    raise too_large_resource_version(since, server.revision)
                events = server.events_after(since, info.plural)  # 410 before its watch cache's window
            except ApiError as err:
                return {"code": 200, "lines": _error_line(err.status()), "end": True}
            watcher.since = since
            lines = watcher.lines(events, now)
            watcher.since = server.revision
    except ApiError as err:
        return _status_answer(err)
    # Events committed before this point and not yet published must not reach it twice: the
    # next publish starts from the hub's mark, and the watcher's `since` filters what it has.
    watcher.sent = server.revision
    hub.watchers[key] = watcher
    return {
        "code": 200,
        "lines": "".join(lines),
        "revision": server.revision,
        "kind": info.kind,
        "apiVersion": info.api_version,
    }


def _unwatch(hosted: Session, cmd: Obj) -> Obj:
    hub = _HUBS.get(hosted)
    if hub is not None:
        hub.watchers.pop(_key(cmd), None)
    return {}


def _renew(hosted: Session, cmd: Obj) -> Obj:
    hub = _HUBS.get(hosted)
    watcher = hub.watchers.get(_key(cmd)) if hub is not None else None
    if watcher is None:
        return {"alive": False}
    watcher.expires = time.monotonic() + WATCH_LEASE
    if watcher.viewer is None and not watcher.backlog:
        watcher.queue([HEARTBEAT], watcher.since)  # sent by the next publish (one a second at least)
    return {"alive": True, "revision": hosted.sim.server.revision}


HEARTBEAT = ""  # an empty message: the revision it follows (`after`) tells a stream what it missed


def _targets(entry: Obj, watcher: Watcher) -> bool:
    return watcher.client.startswith(entry["client"]) and entry["resource"] in ("*", watcher.resource)


def _paused(hub: WatchHub, watcher: Watcher) -> bool:
    return any(watcher.client.startswith(c) and r in ("*", watcher.resource) for c, r in hub.paused)


def _note_pause(hub: WatchHub, entry: Obj) -> None:
    """Keep `hub.paused` (the client pauses in force) up to date with one client watch fault."""
    key = (entry["client"], entry["resource"])
    if entry["fault"] == "pause":
        hub.paused.add(key)
    elif entry["fault"] == "resume":
        # A resume lifts the pauses it names: the same prefix, and the same resource (`*`: all).
        hub.paused = {(c, r) for c, r in hub.paused if not (c == key[0] and key[1] in ("*", r))}


def _apply_client_faults(hosted: Session, hub: WatchHub) -> None:
    """Apply the `watchFault {client}` entries logged since the last publish (module doc)."""
    entries = hosted.sim.client_watch_faults(hub.client_faults)
    if not entries:
        return
    hub.client_faults += len(entries)
    server = hosted.sim.server
    for entry in entries:
        _note_pause(hub, entry)
        for watcher in hub.watchers.values():
            if watcher.final is not None or not _targets(entry, watcher):
                continue
            if entry["fault"] == "drop":
                status = resource_expired(DROPPED.format(entry["client"])).status()
                watcher.end(_error_line(status), server.revision)
            elif entry["fault"] == "resume" and watcher.paused and not _paused(hub, watcher):
                watcher.paused = False
                try:
                    held = server.events_after(watcher.since)
                except ApiError as err:  # the history no longer holds what it missed: it relists
                    watcher.end(_error_line(err.status()), server.revision)
                    continue
                held = [event for event in held if event[0] <= hub.published]  # (the rest: this collect)
                watcher.queue(watcher.lines(held, hosted.sim.now), hub.published)
                watcher.since = hub.published
            elif entry["fault"] == "pause":
                watcher.paused = True


def collect(hosted: Session, hub: WatchHub) -> None:
    """Queue on every watcher the lines of the events committed since the last publish, in one
    step (no await): concurrent publishes cannot split or reorder a watcher's events. A paused
    watcher gets none: its `since` stays where the pause found it."""
    server = hosted.sim.server
    _apply_client_faults(hosted, hub)
    revision = server.revision
    if revision == hub.published:
        return
    if not hub.watchers:
        hub.published = revision
        return
    try:
        events = server.events_after(hub.published)
    except ApiError as err:  # more events than the history holds since the last publish
        hub.published = revision
        for watcher in hub.watchers.values():
            watcher.end(_error_line(err.status()), revision)
        return
    hub.published = revision
    now = hosted.sim.now
    cache: dict[tuple[Any, ...], str] = {}
    for watcher in hub.watchers.values():
        if watcher.final is None and not watcher.paused:
            watcher.queue(watcher.lines(events, now, cache), revision)
            watcher.since = revision


async def publish(hosted: Session) -> None:
    """Send every watcher the events committed since the last publish (see the module doc).

    One publish at a time sends. A publish that finds another sending only queues its events:
    the sender goes round again for them. The caller waits for one round at most (what was
    queued when it came): if more came meanwhile, a task of its own carries on, so neither the
    drive loop nor the command listener waits on a stream of publishes."""
    hub = _HUBS.get(hosted)
    if hub is None:
        return
    collect(hosted, hub)
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
            watcher.end(_error_line(status), watcher.backlog[-1][1])
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
    hub = _HUBS.pop(hosted, None)
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
    collect(hosted, hub)
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


# -- connected clients -----------------------------------------------------------------------------
def note_request(hosted: Session, cmd: Obj, code: int) -> None:
    """Count one Kubernetes API request of the client `cmd` names (its `client`, the User-Agent
    the HTTP side passes along): `code` is its answer's HTTP status."""
    client = cmd.get("client")
    if not isinstance(client, str) or not client:
        return
    hub = _hub(hosted)
    stats = hub.clients.pop(client, None)  # re-inserted last: the dict is least recently seen first
    if stats is None:
        stats = ClientStats(client)
        while len(hub.clients) >= MAX_CLIENTS:
            del hub.clients[next(iter(hub.clients))]
    hub.clients[client] = stats
    op = str(cmd.get("op") or "")
    if op == "act":
        request = (cmd.get("action") or {}).get("request") or {}
        what = f"{request.get('verb')} {request.get('resource')}"
    else:
        what = f"{op.removeprefix('k8s_')} {cmd.get('resource') or ''}".strip()
    stats.note(code, what, time.monotonic())


def paused_clients(hosted: Session) -> list[Obj]:
    """The `watchFault {client} pause`s in force: [{client, resource}], sorted."""
    hub = _HUBS.get(hosted)
    return [{"client": c, "resource": r} for c, r in sorted(hub.paused)] if hub is not None else []


def clients(hosted: Session) -> list[Obj]:
    """The connected clients, most recently seen first: each with its request rate (per second,
    over the last CLIENT_WINDOW seconds), requests and errors so far, and its open watches with
    how far each is behind the store (resourceVersions, and wall seconds since it fell behind)."""
    hub = _HUBS.get(hosted)
    if hub is None:
        return []
    wall = time.monotonic()
    revision = hosted.sim.server.revision
    watches: dict[str, list[Obj]] = {}
    for watcher in hub.watchers.values():
        if not watcher.client or watcher.viewer is not None:
            continue
        # Paused, or without a backlog: it has every event up to `since` (what publishes offered
        # it); with a backlog (a full channel), up to the revision of its last message sent.
        behind = max(0, revision - (watcher.sent if watcher.backlog and not watcher.paused else watcher.since))
        if behind == 0:
            watcher.behind_since = None
        elif watcher.behind_since is None:
            watcher.behind_since = wall
        since = watcher.behind_since
        watches.setdefault(watcher.client, []).append(
            {
                "resource": watcher.resource,
                "namespace": watcher.namespace or "",
                "lag": behind,
                "lagSeconds": 0.0 if since is None else round(wall - since, 1),
                "paused": watcher.paused,
            }
        )
    rows = []
    for agent, stats in reversed(hub.clients.items()):
        if wall - stats.last_seen > CLIENT_GONE and agent not in watches:
            continue
        recent = sum(1 for t in stats.times if t >= wall - CLIENT_WINDOW)
        rows.append(
            {
                "userAgent": agent,
                "rate": round(recent / CLIENT_WINDOW, 1),
                "requests": stats.requests,
                "errors": stats.errors,
                "lastError": stats.last_error,
                "watches": sorted(watches.pop(agent, []), key=lambda w: (w["resource"], w["namespace"])),
            }
        )
    for agent, open_watches in watches.items():  # watching, but no request counted (yet)
        rows.append(
            {"userAgent": agent, "rate": 0.0, "requests": 0, "errors": 0, "lastError": "", "watches": open_watches}
        )
    return rows


# -- metrics ---------------------------------------------------------------------------------------
def _histogram(h: Any) -> Obj:
    return {"buckets": [[bound, n] for bound, n in h.cumulative()], "sum": h.sum, "count": h.count}


_REQUEST_COUNTS: weakref.WeakKeyDictionary[Session, tuple[int, dict[tuple[str, str, str, int], int]]] = (
    weakref.WeakKeyDictionary()
)


def _metrics(hosted: Session, cmd: Obj) -> Obj:
    """The figures `/metrics` exposes, read from the simulation's own counters (nothing changes)."""
    sim = hosted.sim
    queues = []
    controllers = {}
    for name, controller in sim.controllers.items():
        m = controller.queue.metrics
        queues.append(
            {
                "name": controller.queue.name or name,
                "depth": m.depth,
                "adds": m.adds,
                "retries": m.retries,
                "queueDuration": _histogram(m.queue_duration),
                "workDuration": _histogram(m.work_duration),
                "unfinished": m.unfinished_work_seconds(),
                "longestRunning": m.longest_running_processor_seconds(),
            }
        )
        controllers[name] = controller.metrics.snapshot()
    counted, requests = _REQUEST_COUNTS.get(hosted, (0, {}))
    log = sim.server.requests
    for record in log[counted:]:  # the log only grows: count what is new since the last scrape
        key = (record["client"], record["verb"], record["resource"], int(record["code"]))
        requests[key] = requests.get(key, 0) + 1
    _REQUEST_COUNTS[hosted] = (len(log), requests)
    return {
        "metrics": {
            "time": sim.now,
            "events": sim.kernel.events,
            "queues": queues,
            "controllers": controllers,
            "requests": [[*key, n] for key, n in sorted(requests.items())],
        }
    }


def _log(hosted: Session, cmd: Obj) -> Obj:
    """A container's log (`Simulation.container_log`): `lines` of [virtual time, text], the
    instance's `containerID`, `finished` once it stopped, and the virtual `now`."""
    try:
        log = hosted.sim.container_log(
            str(_text(cmd, "namespace") or ""),
            str(_text(cmd, "name") or ""),
            _text(cmd, "container"),
            bool(cmd.get("previous")),
        )
    except ApiError as err:
        return _status_answer(err)
    return {
        "code": 200,
        "lines": [[t, text] for t, text in log.lines],
        "containerID": log.container_id,
        "finished": log.finished,
        "now": hosted.sim.now,
    }


def _health(hosted: Session, cmd: Obj) -> Obj:
    """The `etcd` health check: the simulation's store answers (this op reached its host)."""
    return {"code": 200, "now": hosted.sim.now}


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

"""The Kubernetes API of a session's world: reads, dry runs, watches, connected clients and
metrics (`Kube`: the session service's `kube`). The HTTP side (`dashboard.k8s.api`) sends these
ops through the host like every other command; writes are not here: they are `request` actions
(`op: act`), recorded and replayed.

Nothing here knows of Django, Channels, asyncio or the wall clock. What the web side supplies is
passed in: the Table printer (`TablePrinter`: kubectl's server-side printing, `dashboard.k8s.tables`)
and, for what is bookkeeping of the host rather than of the simulation (watch leases, clients'
request rates), the wall time (`wall`, seconds of a monotonic clock). Handing a watcher's queued
lines to its channel, in order, is the host's (`dashboard/host/k8s_ops.py`: `publish`).

Guarantees
----------
* Reads change nothing: get and list use `APIServer.read` (no request log line, no trace record,
  no fault sees them), dry runs `APIServer.dry_run` (the seeded rng restored), watches the
  server's committed-event history. So a session read by kubectl replays to the same report as
  one nobody looked at.
* Answers are pre-serialised JSON text (`body`) with the HTTP `code`: the in-memory channel layer
  deep-copies every message, and copying a string costs nothing.
* Watches: `watch` answers the initial events (every matching object as ADDED when no
  resourceVersion or "0" is given; the retained events after it otherwise; an ERROR event with a
  410 Expired Status, `too old resource version: rv (N)`, when the history or the resource's
  watch cache window (controlplane/apiserver/watch_cache.py) no longer holds them) and
  registers the watcher in the same step, so no event falls between. `collect` queues on each
  watcher, in one synchronous step, the events committed since the last collect, filtered as
  upstream's cacheWatcher filters (an object that stops matching a selector arrives as DELETED):
  so every watcher gets every event once, in resourceVersion order.
* A watcher that is not renewed within `WATCH_LEASE` seconds is dropped by the host's sender
  (nobody reads it); every renewal of an HTTP watch with nothing queued queues an empty message
  (`HEARTBEAT`), so that a stream finds out within a renewal that it missed events.
* Connected clients (issue #18 §6): every Kubernetes API request names its User-Agent (`client`);
  `note_request` counts each client's requests and error answers over a sliding wall-clock
  window, and `clients` lists its open watches, how many resourceVersions each is behind and for
  how long. This is bookkeeping of the host, outside the simulation: it changes no report.
* `watchFault {client: …}` actions are applied by the core at their virtual instant and logged
  (`Simulation.client_watch_faults`); the next collect applies each to the watches whose
  User-Agent starts with the prefix and whose resource matches (or `*`): `drop` ends the watch
  with an ERROR 410 Expired Status (the client relists, as an informer whose watch was dropped
  does), `pause` holds its events (its view goes stale; watches it opens meanwhile start paused),
  `resume` sends what was held, in order — or a 410 if the history no longer holds it.
* From a websocket viewer, a watch is named by the viewer's `watch` id and sends to that
  viewer's own channel only (`scoped_watch`); a viewer holds at most `MAX_VIEWER_WATCHES`, and they end
  when it leaves.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from controlplane.apiserver import ApiError, Request, bad_request
from controlplane.apiserver.errors import resource_expired, too_large_resource_version, too_many_requests
from controlplane.apiserver.resources import ResourceInfo, lookup
from controlplane.apiserver.server import selection_predicate
from controlplane.session.commands import CommandError
from controlplane.session.keyindex import KeyIndex, key_of
from controlplane.session.session import Session
from controlplane.world import request_of

Obj = dict[str, Any]

WATCH_LEASE = 90.0  # seconds a watcher lives without a renewal from its HTTP side (or viewer)
MAX_VIEWER_WATCHES = 4  # watches one websocket viewer may hold at once
MAX_WATCHERS = 1000  # watches of one simulation at once, from every door (each may hold ~3 MiB)
WATCH_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
READER = "kubectl"  # the client name of unrecorded reads (never logged)
CLIENT_WINDOW = 10.0  # wall seconds over which a connected client's request rate is measured
CLIENT_GONE = 60.0  # wall seconds after its last request and watch that a client is no longer listed
MAX_CLIENTS = 200  # clients remembered per simulation (the least recently seen is forgotten)
MAX_CLIENT_SAMPLES = 10_000  # request times kept per client (the rate saturates beyond)
DROPPED = (
    "the watch was dropped by an injected watchFault (client {}): list again and watch from the list's resourceVersion"
)
HEARTBEAT = ""  # an empty message: the revision it follows (`after`) tells a stream what it missed


class TablePrinter(Protocol):
    """kubectl's server-side printing (`Accept: ...;as=Table`): the Table of `objects` of one
    resource, at virtual time `now` (ages), with the list's resourceVersion and continue token."""

    def __call__(
        self,
        resource: str,
        objects: list[Obj],
        now: float,
        resource_version: str,
        include_object: str = "Metadata",
        cont: str = "",
    ) -> Obj: ...


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def status_answer(err: ApiError) -> Obj:
    """An error as the API answers it: its Status, with its code."""
    return {"code": err.code, "body": dumps(err.status())}


def watch_error_line(status: Obj) -> str:
    """A watch's ERROR event carrying `status`."""
    return dumps({"type": "ERROR", "object": status}) + "\n"


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


@dataclass
class Watcher:
    channel: str
    resource: str
    namespace: str | None
    predicate: Callable[[Obj], bool] | None
    table: bool
    include_object: str
    since: int
    expires: float = 0.0  # the wall time its lease ends (`WATCH_LEASE` after its last renewal)
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
    printer: TablePrinter | None = None  # prints its events as Table rows (`table`)

    def line(self, event_type: str, obj: Obj, now: float) -> str:
        if self.table and self.printer is not None:
            obj = self.printer(
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
    """The watchers of one simulation, how far their events have been collected, and the
    connected clients; `sending`, `again`, `task` and `closed` are the host's sender's state."""

    def __init__(self, revision: int) -> None:
        self.watchers: dict[str, Watcher] = {}
        self.clients: dict[str, ClientStats] = {}
        self.client_faults = 0  # entries of `Simulation.client_watch_faults` applied
        self.paused: set[tuple[str, str]] = set()  # (client prefix, resource or "*") held by a pause
        self.published = revision
        self.sending = False  # a publish is handing lines to the channels (one at a time, in order)
        self.again = False  # another publish queued lines meanwhile: the sender goes round again
        self.task: Any = None  # the host's sender (an asyncio task), when it outlived its publish
        self.closed = False  # the simulation stopped: `close_watches` sends the last messages


def _bookmark(kind: str, api_version: str, rv: int, initial_end: bool = False) -> str:
    meta: Obj = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return dumps({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version, "metadata": meta}}) + "\n"


def scoped_watch(cmd: Obj, viewer: str | None) -> Obj:
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


def _key(cmd: Obj) -> str:
    return str(cmd.get("key") or cmd.get("channel"))


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


def _histogram(h: Any) -> Obj:
    return {"buckets": [[bound, n] for bound, n in h.cumulative()], "sum": h.sum, "count": h.count}


class Kube:
    """The Kubernetes API of one session's world, and what serving it keeps: the sorted key
    indexes of lists, the watch hub (watchers and connected clients), the request counts of
    `/metrics`. One per session (`Kube.of`); it lives as long as the session."""

    def __init__(self, session: Session) -> None:
        # Weakly: `Kube.of` keeps a session's Kube while the session lives, not longer.
        self._session = weakref.ref(session)
        self._hub: WatchHub | None = None
        self._indexes: dict[str, KeyIndex] = {}
        self._counted = 0  # request log lines counted into `_requests` (the log only grows)
        self._requests: dict[tuple[str, str, str, int], int] = {}

    @property
    def session(self) -> Session:
        session = self._session()
        if session is None:
            raise LookupError("the session of this Kubernetes API is gone")
        return session

    @classmethod
    def of(cls, session: Session) -> Kube:
        """The session's Kubernetes API (made on first use)."""
        kube = _KUBES.get(session)
        if kube is None:
            kube = _KUBES[session] = cls(session)
        return kube

    # -- get and list -------------------------------------------------------------------------------
    def get(self, cmd: Obj, printer: TablePrinter) -> Obj:
        sim = self.session.sim
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
                body: Obj = printer(lookup(req.resource).plural, [obj], sim.now, rv, _include_object(cmd))
                return {"code": 200, "body": dumps(body)}
        except ApiError as err:
            return status_answer(err)
        return {"code": 200, "body": dumps(obj)}

    def key_index(self, info: ResourceInfo) -> KeyIndex:
        """The world's sorted key index of one resource, up to date (see `keyindex`)."""
        server = self.session.sim.server
        index = self._indexes.get(info.plural)
        if index is None or index.server is not server:
            index = self._indexes[info.plural] = KeyIndex(server, info)
        index.refresh()
        return index

    def list_page(self, cmd: Obj, printer: TablePrinter) -> Obj:
        """A list, as `APIServer.read` lists (key order, the current revision, the same errors),
        one page at a time: the sorted key index finds where a page starts, so a page costs its
        own rows, not a walk of every object."""
        sim = self.session.sim
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
            items, more = self.key_index(info).page(namespace, start, predicate, page_size)
            cont = _encode_continue(rv, key_of(items[-1])) if more else ""
            if cmd.get("table"):
                body = printer(info.plural, items, sim.now, rv, _include_object(cmd), cont)
            else:
                meta: Obj = {"resourceVersion": rv}
                if cont:
                    meta["continue"] = cont
                body = {"kind": info.list_kind, "apiVersion": info.api_version, "metadata": meta, "items": items}
        except ApiError as err:
            return status_answer(err)
        return {"code": 200, "body": dumps(body)}

    def dry_run(self, cmd: Obj) -> Obj:
        """A write with dryRun=All: answered, not recorded, nothing changed (not an action)."""
        sim = self.session.sim
        request = cmd.get("request")
        problem = sim.check_action({"request": request})
        if problem is not None:
            raise CommandError(problem)
        assert isinstance(request, dict)
        req = request_of(request)
        try:
            answer, code = sim.server.dry_run(req)
        except ApiError as err:
            return status_answer(err)
        return {"code": code, "body": dumps(answer), "warnings": req.warnings}

    # -- watches --------------------------------------------------------------------------------------
    @property
    def hub(self) -> WatchHub:
        """The watch hub (made on first use)."""
        if self._hub is None:
            sim = self.session.sim
            hub = self._hub = WatchHub(sim.server.revision)
            # The client watch faults applied before any watch existed: a drop then ended nothing
            # (a watch opened later is not dropped by it), but a pause still in force holds it.
            for entry in sim.client_watch_faults():
                _note_pause(hub, entry)
            hub.client_faults = len(sim.client_watch_faults())
        return self._hub

    @property
    def watching(self) -> WatchHub | None:
        """The watch hub if there is one (no watch, no client seen: None)."""
        return self._hub

    def close(self) -> WatchHub | None:
        """The session stops: the hub is handed over (its watchers' last messages are the
        host's to send), and a new one would start empty."""
        hub, self._hub = self._hub, None
        return hub

    def forget_viewer(self, viewer: str) -> None:
        """The viewer left: its watches end (nobody reads their channel any more)."""
        hub = self._hub
        if hub is not None:
            for key in [key for key, w in hub.watchers.items() if w.viewer == viewer]:
                del hub.watchers[key]

    def watch(self, cmd: Obj, printer: TablePrinter, wall: float) -> Obj:
        """Register a watch (its lease counted from `wall`) and answer its initial events."""
        sim = self.session.sim
        server = sim.server
        channel = cmd.get("channel")
        if not isinstance(channel, str) or not channel:
            raise CommandError("channel: required")
        key = _key(cmd)
        viewer = cmd.get("viewer")
        hub = self.hub
        if isinstance(viewer, str):
            others = sum(1 for k, w in hub.watchers.items() if w.viewer == viewer and k != key)
            if others >= MAX_VIEWER_WATCHES:
                raise CommandError(
                    f"a viewer may hold at most {MAX_VIEWER_WATCHES} watches: end one (k8s_unwatch) first"
                )
        if key not in hub.watchers and len(hub.watchers) >= MAX_WATCHERS:
            busy = too_many_requests(f"this simulation serves {MAX_WATCHERS} watches already: try again later")
            return status_answer(busy)
        try:
            info = lookup(str(cmd.get("resource")))
            namespace = _text(cmd, "namespace") if info.namespaced else None
            options = _selector_options(cmd)
            predicate = selection_predicate(info.plural, options)
            include = _include_object(cmd)
            rv_text = _text(cmd, "resourceVersion")
            table = bool(cmd.get("table"))
            watcher = Watcher(channel, info.plural, namespace, predicate, table, include, server.revision)
            watcher.expires = wall + WATCH_LEASE
            watcher.printer = printer if table else None
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
                    return {"code": 200, "lines": watch_error_line(err.status()), "end": True}
                watcher.since = since
                lines = watcher.lines(events, now)
                watcher.since = server.revision
        except ApiError as err:
            return status_answer(err)
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

    def unwatch(self, cmd: Obj) -> Obj:
        hub = self._hub
        if hub is not None:
            hub.watchers.pop(_key(cmd), None)
        return {}

    def renew(self, cmd: Obj, wall: float) -> Obj:
        """Renew a watch's lease from `wall` (its HTTP side still reads it)."""
        hub = self._hub
        watcher = hub.watchers.get(_key(cmd)) if hub is not None else None
        if watcher is None:
            return {"alive": False}
        watcher.expires = wall + WATCH_LEASE
        if watcher.viewer is None and not watcher.backlog:
            watcher.queue([HEARTBEAT], watcher.since)  # sent by the next publish (one a second at least)
        return {"alive": True, "revision": self.session.sim.server.revision}

    def _apply_client_faults(self, hub: WatchHub) -> None:
        """Apply the `watchFault {client}` entries logged since the last collect (module doc)."""
        sim = self.session.sim
        entries = sim.client_watch_faults(hub.client_faults)
        if not entries:
            return
        hub.client_faults += len(entries)
        server = sim.server
        for entry in entries:
            _note_pause(hub, entry)
            for watcher in hub.watchers.values():
                if watcher.final is not None or not _targets(entry, watcher):
                    continue
                if entry["fault"] == "drop":
                    status = resource_expired(DROPPED.format(entry["client"])).status()
                    watcher.end(watch_error_line(status), server.revision)
                elif entry["fault"] == "resume" and watcher.paused and not _paused(hub, watcher):
                    watcher.paused = False
                    try:
                        held = server.events_after(watcher.since)
                    except ApiError as err:  # the history no longer holds what it missed: it relists
                        watcher.end(watch_error_line(err.status()), server.revision)
                        continue
                    held = [event for event in held if event[0] <= hub.published]  # (the rest: this collect)
                    watcher.queue(watcher.lines(held, sim.now), hub.published)
                    watcher.since = hub.published
                elif entry["fault"] == "pause":
                    watcher.paused = True

    def collect(self, hub: WatchHub) -> None:
        """Queue on every watcher of `hub` the lines of the events committed since the last
        collect, in one step: concurrent publishes cannot split or reorder a watcher's events.
        A paused watcher gets none: its `since` stays where the pause found it."""
        sim = self.session.sim
        server = sim.server
        self._apply_client_faults(hub)
        revision = server.revision
        if revision == hub.published:
            return
        if not hub.watchers:
            hub.published = revision
            return
        try:
            events = server.events_after(hub.published)
        except ApiError as err:  # more events than the history holds since the last collect
            hub.published = revision
            for watcher in hub.watchers.values():
                watcher.end(watch_error_line(err.status()), revision)
            return
        hub.published = revision
        now = sim.now
        cache: dict[tuple[Any, ...], str] = {}
        for watcher in hub.watchers.values():
            if watcher.final is None and not watcher.paused:
                watcher.queue(watcher.lines(events, now, cache), revision)
                watcher.since = revision

    # -- connected clients ------------------------------------------------------------------------------
    def note_request(self, cmd: Obj, code: int, wall: float) -> None:
        """Count one Kubernetes API request of the client `cmd` names (its `client`, the
        User-Agent the HTTP side passes along), made at `wall`: `code` is its answer's status."""
        client = cmd.get("client")
        if not isinstance(client, str) or not client:
            return
        hub = self.hub
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
        stats.note(code, what, wall)

    def paused_clients(self) -> list[Obj]:
        """The `watchFault {client} pause`s in force: [{client, resource}], sorted."""
        hub = self._hub
        return [{"client": c, "resource": r} for c, r in sorted(hub.paused)] if hub is not None else []

    def clients(self, wall: float) -> list[Obj]:
        """The connected clients at `wall`, most recently seen first: each with its request rate
        (per second, over the last CLIENT_WINDOW seconds), requests and errors so far, and its
        open watches with how far each is behind the store (resourceVersions, and wall seconds
        since it fell behind)."""
        hub = self._hub
        if hub is None:
            return []
        revision = self.session.sim.server.revision
        watches: dict[str, list[Obj]] = {}
        for watcher in hub.watchers.values():
            if not watcher.client or watcher.viewer is not None:
                continue
            # Paused, or without a backlog: it has every event up to `since` (what publishes
            # offered it); with a backlog (a full channel), up to the revision of its last message sent.
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

    # -- metrics, logs, health ------------------------------------------------------------------------
    def metrics(self, cmd: Obj) -> Obj:
        """The figures `/metrics` exposes, read from the simulation's own counters (nothing changes)."""
        sim = self.session.sim
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
        requests = self._requests
        log = sim.server.requests
        for record in log[self._counted :]:  # the log only grows: count what is new since the last scrape
            key = (record["client"], record["verb"], record["resource"], int(record["code"]))
            requests[key] = requests.get(key, 0) + 1
        self._counted = len(log)
        return {
            "metrics": {
                "time": sim.now,
                "events": sim.kernel.events,
                "queues": queues,
                "controllers": controllers,
                "requests": [[*key, n] for key, n in sorted(requests.items())],
            }
        }

    def log(self, cmd: Obj) -> Obj:
        """A container's log (`Simulation.container_log`): `lines` of [virtual time, text], the
        instance's `containerID`, `finished` once it stopped, and the virtual `now`."""
        sim = self.session.sim
        try:
            log = sim.container_log(
                str(_text(cmd, "namespace") or ""),
                str(_text(cmd, "name") or ""),
                _text(cmd, "container"),
                bool(cmd.get("previous")),
            )
        except ApiError as err:
            return status_answer(err)
        return {
            "code": 200,
            "lines": [[t, text] for t, text in log.lines],
            "containerID": log.container_id,
            "finished": log.finished,
            "now": sim.now,
        }

    def health(self, cmd: Obj) -> Obj:
        """The `etcd` health check: the simulation's store answers (this op reached its host)."""
        return {"code": 200, "now": self.session.sim.now}


_KUBES: weakref.WeakKeyDictionary[Session, Kube] = weakref.WeakKeyDictionary()

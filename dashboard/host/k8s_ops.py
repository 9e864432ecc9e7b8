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
  410 Expired Status when the history no longer holds them) and registers the watcher in the
  same step, so no event falls between. `publish(hosted)` — called by the host after every slice
  of simulation work and every command — sends each watcher the events committed since, filtered
  as upstream's cacheWatcher filters (an object that stops matching a selector arrives as
  DELETED), in one message per publish. A watcher the HTTP side does not renew within
  `WATCH_LEASE` seconds, or whose channel is full, is dropped.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

from controlplane.apiserver import ApiError, Request, bad_request
from controlplane.apiserver.resources import ResourceInfo, lookup
from controlplane.apiserver.server import selection_predicate
from controlplane.simulation import request_of
from dashboard.host.hosted import CommandError, HostedSimulation
from dashboard.host.keyindex import KeyIndex, key_of
from dashboard.k8s import tables

Obj = dict[str, Any]

WATCH_LEASE = 90.0  # seconds a watcher lives without a renewal from its HTTP side
READER = "kubectl"  # the client name of unrecorded reads (never logged)


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
def _get(hosted: HostedSimulation, cmd: Obj) -> Obj:
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


_INDEXES: weakref.WeakKeyDictionary[HostedSimulation, dict[str, KeyIndex]] = weakref.WeakKeyDictionary()


def key_index(hosted: HostedSimulation, info: ResourceInfo) -> KeyIndex:
    """The simulation's sorted key index of one resource, up to date (see `keyindex`)."""
    indexes = _INDEXES.get(hosted)
    if indexes is None:
        indexes = _INDEXES[hosted] = {}
    index = indexes.get(info.plural)
    if index is None or index.server is not hosted.sim.server:
        index = indexes[info.plural] = KeyIndex(hosted.sim.server, info)
    index.refresh()
    return index


def _list(hosted: HostedSimulation, cmd: Obj) -> Obj:
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


def _dry_run(hosted: HostedSimulation, cmd: Obj) -> Obj:
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
    return {"code": code, "body": dumps(answer)}


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

    def line(self, event_type: str, obj: Obj, now: float) -> str:
        if self.table:
            obj = tables.table(
                self.resource, [obj], now, obj["metadata"].get("resourceVersion", ""), self.include_object
            )
        return dumps({"type": event_type, "object": obj}) + "\n"

    def lines(self, events: list[tuple[int, str, str, Obj, Obj | None]], now: float) -> list[str]:
        out: list[str] = []
        predicate, namespace = self.predicate, self.namespace
        for rv, event_type, resource, obj, old in events:
            if rv <= self.since or resource != self.resource:
                continue
            if namespace is not None and obj["metadata"].get("namespace") != namespace:
                continue
            if predicate is None:
                out.append(self.line(event_type, obj, now))
            elif event_type == "MODIFIED":
                cur, was = predicate(obj), old is not None and predicate(old)
                if cur:
                    out.append(self.line("MODIFIED" if was else "ADDED", obj, now))
                elif was and old is not None:
                    gone = {
                        **old,
                        "metadata": {**old["metadata"], "resourceVersion": obj["metadata"]["resourceVersion"]},
                    }
                    out.append(self.line("DELETED", gone, now))
            elif predicate(obj):
                out.append(self.line(event_type, obj, now))
        return out


class WatchHub:
    """The watchers of one simulation and how far their events have been published."""

    def __init__(self, revision: int) -> None:
        self.watchers: dict[str, Watcher] = {}
        self.published = revision


_HUBS: weakref.WeakKeyDictionary[HostedSimulation, WatchHub] = weakref.WeakKeyDictionary()


def _hub(hosted: HostedSimulation) -> WatchHub:
    hub = _HUBS.get(hosted)
    if hub is None:
        hub = _HUBS[hosted] = WatchHub(hosted.sim.server.revision)
    return hub


def _bookmark(kind: str, api_version: str, rv: int, initial_end: bool = False) -> str:
    meta: Obj = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return dumps({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version, "metadata": meta}}) + "\n"


def _watch(hosted: HostedSimulation, cmd: Obj) -> Obj:
    sim = hosted.sim
    server = sim.server
    channel = cmd.get("channel")
    if not isinstance(channel, str) or not channel:
        raise CommandError("channel: required")
    try:
        info = lookup(str(cmd.get("resource")))
        namespace = _text(cmd, "namespace") if info.namespaced else None
        options = _selector_options(cmd)
        predicate = selection_predicate(info.plural, options)
        include = _include_object(cmd)
        rv_text = _text(cmd, "resourceVersion")
        watcher = Watcher(channel, info.plural, namespace, predicate, bool(cmd.get("table")), include, server.revision)
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
                events = server.events_after(min(since, server.revision))
            except ApiError as err:
                return {"code": 200, "lines": dumps({"type": "ERROR", "object": err.status()}) + "\n", "end": True}
            watcher.since = since
            lines = watcher.lines(events, now)
            watcher.since = server.revision
    except ApiError as err:
        return _status_answer(err)
    _hub(hosted).watchers[channel] = watcher
    return {
        "code": 200,
        "lines": "".join(lines),
        "revision": server.revision,
        "kind": info.kind,
        "apiVersion": info.api_version,
    }


def _unwatch(hosted: HostedSimulation, cmd: Obj) -> Obj:
    hub = _HUBS.get(hosted)
    if hub is not None:
        hub.watchers.pop(str(cmd.get("channel")), None)
    return {}


def _renew(hosted: HostedSimulation, cmd: Obj) -> Obj:
    hub = _HUBS.get(hosted)
    watcher = hub.watchers.get(str(cmd.get("channel"))) if hub is not None else None
    if watcher is None:
        return {"alive": False}
    watcher.expires = time.monotonic() + WATCH_LEASE
    return {"alive": True, "revision": hosted.sim.server.revision}


async def publish(hosted: HostedSimulation) -> None:
    """Send every watcher the events committed since the last publish (see the module doc)."""
    hub = _HUBS.get(hosted)
    if hub is None:
        return
    server = hosted.sim.server
    revision = server.revision
    if not hub.watchers:
        hub.published = revision
        return
    if revision == hub.published:
        return
    layer = get_channel_layer()
    try:
        events = server.events_after(hub.published)
    except ApiError as err:  # more events than the history holds since the last publish
        doomed = list(hub.watchers.values())
        hub.watchers.clear()
        hub.published = revision
        for watcher in doomed:
            await _send(layer, watcher, dumps({"type": "ERROR", "object": err.status()}) + "\n", revision, end=True)
        return
    hub.published = revision
    now = hosted.sim.now
    wall = time.monotonic()
    for channel, watcher in list(hub.watchers.items()):
        if wall > watcher.expires:
            del hub.watchers[channel]
            continue
        lines = watcher.lines(events, now)
        watcher.since = revision
        if lines and not await _send(layer, watcher, "".join(lines), revision):
            hub.watchers.pop(channel, None)


async def close_watches(hosted: HostedSimulation) -> None:
    """The simulation stops: every watch stream ends."""
    hub = _HUBS.pop(hosted, None)
    if hub is None:
        return
    layer = get_channel_layer()
    for watcher in hub.watchers.values():
        await _send(layer, watcher, "", hub.published, end=True)


async def _send(layer: Any, watcher: Watcher, text: str, revision: int, *, end: bool = False) -> bool:
    try:
        await layer.send(watcher.channel, {"type": "k8s.watch", "text": text, "revision": revision, "end": end})
    except ChannelFull:
        return False
    return True


# -- metrics ---------------------------------------------------------------------------------------
def _histogram(h: Any) -> Obj:
    return {"buckets": [[bound, n] for bound, n in h.cumulative()], "sum": h.sum, "count": h.count}


_REQUEST_COUNTS: weakref.WeakKeyDictionary[HostedSimulation, tuple[int, dict[tuple[str, str, str, int], int]]] = (
    weakref.WeakKeyDictionary()
)


def _metrics(hosted: HostedSimulation, cmd: Obj) -> Obj:
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


READS: dict[str, Callable[[HostedSimulation, Obj], Obj]] = {
    "k8s_get": _get,
    "k8s_list": _list,
    "k8s_dryrun": _dry_run,
    "k8s_watch": _watch,
    "k8s_unwatch": _unwatch,
    "k8s_renew": _renew,
    "k8s_metrics": _metrics,
}

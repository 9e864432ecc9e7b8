"""Frames: what changed in a hosted session since the last frame, folded from what it publishes.

The builder subscribes to the session (`controlplane.session.session.SessionListener`: its trace
records, what its viewers focus on, its actions) and keeps, from records only, what the browser
needs that a panel snapshot cannot give cheaply:

* the pod table (id, owner, state, node) and every state transition, as compact arrays for the
  two canvas views (pod tiles, timeline);
* sync spans, queue depth samples, the sync narrations per key (the inspector);
* the marks of an owner of owners (a Deployment) on its own timeline lane: its Events
  (ScalingReplicaSet …), its revision changes and its conditions flipping, read from its writes;
* the new rows of the three logs (trace, API calls, Events), capped per frame with a count of the
  rows skipped.

`frame()` returns the changes since the previous frame: panels (HTML rendered once here, for
every viewer) whose rendering changed, new log rows, and the canvas deltas. `state()` returns
everything, for a viewer that connects or resynchronises. Building either is a pure read of the
simulation: it never changes what the simulation does.
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.template.loader import render_to_string

from controlplane.simulation import (
    CONTROLLER_OF_QUEUE,
    CONTROLLER_REGISTRY,
    POD_STATES,
    SessionListener,
    trace_row,
    views,
)
from dashboard.host import panels
from dashboard.host import rows as log_rows

if TYPE_CHECKING:
    from dashboard.host.panels import Hosted

Obj = dict[str, Any]

ROWS_PER_FRAME = 30  # newest rows of each log per frame; older ones are counted as skipped ...
NOTABLE_PER_FRAME = 30  # ... but for this many failed API calls and Warning Events
ROWS_IN_STATE = 300  # rows of each log a (re)connecting viewer gets
FOCUS_ROWS_PER_FRAME = 200  # rows of each log per frame for a page focused on one owner
TRANSITIONS_PER_FRAME = 1500  # canvas deltas per frame at 20 frames a second ...
TRANSITIONS_PER_SECOND = 30_000  # ... and more in a frame that comes later: the rest follow next
MAX_TRANSITIONS = 400_000  # timeline history kept (oldest dropped beyond, and the page says so)
MAX_SPANS = 100_000
MAX_DEPTH_SAMPLES = 100_000
MAX_MARKS = 5_000  # an owner of owners' marks kept for its lane (oldest dropped beyond)
FRAME_WORK = 0.004  # seconds of panel building per frame, beyond which panels wait
PANEL_SHARE = 10.0  # a panel is built again at the earliest PANEL_SHARE x its build time later
STARVE = 1.0  # seconds a dirty panel may wait for the budget before it is built regardless
STATUS_EVERY = 0.2  # seconds: a frame that would carry only a new status waits this long after the last
TICK_EVERY = 1.0  # seconds: a panel only the clock changes (ages, countdowns) is built at most this often
CATCHUP_FRAMES = 256  # recent frames kept to catch a lagging viewer up (13 s at 20 frames/s) ...
CATCHUP_BYTES = 8 * 1024 * 1024  # ... and at most this much of their JSON text
LOGS_KEPT = 5  # controller.log lines kept per controller (the lookup cache panel shows them)
STATUS_SAMPLES = 120  # status writes kept per key for the rollout panel's sparklines
MAX_NARRATED_REQUESTS = 50  # a sync's writes its narration lists (a 500-pod burst counts the rest)
HANDLER_CALLS_KEPT = 2000  # kopf handler invocations (and unanswered calls) whose calls are still collected
SYNCS_PER_KEY = 20  # narrated syncs kept per key (the inspector's history)
STATE_INDEX = {state: i for i, state in enumerate(POD_STATES)}
CONTROLLER_INDEX = {spec.name: i for i, spec in enumerate(CONTROLLER_REGISTRY)}  # the page's index of each
OWNER_RESOURCES = frozenset(spec.resource for spec in CONTROLLER_REGISTRY)  # the owners panel's objects
# Owners of owners (a Deployment: its children are ReplicaSets, not pods): their lane shows their
# own marks, resource -> kind.
PARENT_KINDS = {spec.resource: spec.kind for spec in CONTROLLER_REGISTRY if views.child_controllers(spec.name)}
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
OBJECT_KINDS = {"pods": "Pod", **{spec.resource: spec.kind for spec in CONTROLLER_REGISTRY}}  # what a focus can name


def ms(t: float) -> float:
    """Times leave the host rounded to the millisecond (the page shows milliseconds)."""
    return round(t, 3)


def pack_transitions(transitions: list[list[Any]]) -> list[int]:
    """Pod transitions as they go to the page: four integers each, in one flat list -- the time
    in milliseconds and the pod id as differences from the transition before (the first from 0),
    then owner and state. `[[12.5, 801, 3, 2], [12.5, 802, 3, 1]]` -> `[12500, 801, 3, 2, 0, 1, 3, 1]`.
    A transition is 8-12 characters of JSON instead of 20-25: they were the largest part of a
    busy frame and half of a 10,000-pod state (static/dashboard/pods.js,
    `CtrlscopeTransitions.each`, reads them back)."""
    out: list[int] = []
    t0 = id0 = 0
    for t, pod_id, owner, state in transitions:
        t_ms = round(t * 1000)
        out += (t_ms - t0, pod_id - id0, owner, state)
        t0, id0 = t_ms, pod_id
    return out


def _wire(message: Obj) -> str:
    """A frame, catch-up or state as JSON text, its transitions packed."""
    canvas = message.get("canvas")
    if canvas and "tr" in canvas:
        message = {**message, "canvas": {**canvas, "tr": pack_transitions(canvas["tr"])}}
    return json.dumps(message, separators=(",", ":"), allow_nan=False, default=_json_default)


@dataclass
class Narration:
    """One sync of one key, stage by stage, as the inspector tells it."""

    id: int
    controller: str
    key: str
    worker: Any
    start: float
    end: float | None = None
    error: str | None = None
    stages: list[Obj] = field(default_factory=list)
    creates: int = 0
    deletes: int = 0
    # The controller version that ran it (`sync.start`'s `version`; v1.36 records carry none):
    # the inspector tells each version's sync in that version's stages and words.
    version: str = "v1.36"
    # v1.5: whether the pods were listed with the garbage collector's ControllerRef handling
    # (the `list` stage's scope), which decides the create call the narration names.
    garbage_collector: bool | None = None
    start_seq: int = 0  # the seq of its sync.start record (the span's link to its moment and why?)
    # Its numbered writes (`sync.request`: verb, the object's name, n), in order, for a narration
    # whose writes are not pods (the Deployment controller's ReplicaSet creates and updates).
    requests: list[Obj] = field(default_factory=list)
    requeue: Obj | None = None  # `sync.end`'s requeue decision
    # An embedded kopf operator's handler invocation (version "kopf"; controller: the operator):
    # kopf's handler id, the retry, how it ended (success, temporary, permanent, error), a
    # TemporaryError's delay, an exception's traceback, and the API calls it caused (the
    # api.request records whose cause is its sync.start: id, seq, verb, resource, namespace,
    # name, code once answered).
    handler: str | None = None
    retry: int = 0
    outcome: str | None = None
    delay: float | None = None
    traceback: str | None = None
    calls: list[Obj] = field(default_factory=list)

    @property
    def duration(self) -> float | None:
        return None if self.end is None else self.end - self.start


class FrameBuilder(SessionListener):
    """Subscribes to `hosted` as it is built: build it before the session starts."""

    def __init__(self, hosted: Hosted) -> None:
        self.hosted = hosted
        self.sim = hosted.sim
        self.seq = 0
        # -- pods and owners (canvas) ------------------------------------------------------
        self.owners: list[str] = [""]  # index 0: no controller (orphans)
        self.owner_index: dict[str, int] = {"": 0}
        self.pods: dict[str, list[Any]] = {}  # "ns/name" -> [id, owner, state, node]
        self.tiles: dict[int, dict[int, int]] = {}  # owner index -> state index -> pods now
        self.node_pods: dict[int, dict[int, int]] = {}  # node index -> state index -> pods now
        self.node_states: dict[str, str] = {}  # node name -> Ready / NotReady / Unknown
        self.pod_ids: dict[str, int] = {}
        self.next_pod_id = 0
        self.new_names: list[list[Any]] = []  # [id, "ns/name"] of pods first seen since last frame
        self.nodes: list[str] = [""]
        self.node_index: dict[str, int] = {"": 0}
        self.node_changes: list[list[int]] = []  # [id, node index]
        self.owner_refresh: set[str] = set()  # pods written by someone: owner may have changed
        # -- timeline -----------------------------------------------------------------------
        self.transitions: list[list[Any]] = []  # [t, pod id, owner, state]
        self.transitions_dropped = 0
        self.sent_transitions = 0
        self.canvas_at = time.perf_counter()  # when the last canvas delta was taken
        self.keys: list[str] = []
        self.key_index: dict[str, int] = {}
        self.spans: list[list[Any]] = []  # [start, end, controller, key index, worker, error 0/1, start seq]
        self.sent_spans = 0
        self.depth: list[list[Any]] = []  # [t, controller, depth]
        self.sent_depth = 0
        self.last_depth: dict[int, int] = {}
        # An owner of owners' lane: [t, owner, kind, label, detail, seq], kind "rev" (its
        # revision annotation changed: label the revision), "cond" (a condition's status or reason
        # changed: label "Type=Status", detail "reason: message"), "ev" / "warn" (an Event on it,
        # Normal / Warning: label the reason, detail the message); seq: the record it came from.
        self.marks: list[list[Any]] = []
        self.sent_marks = 0
        self.parent_seen: dict[str, tuple[str, dict[str, tuple[Any, Any]]]] = {}  # label -> revision, conditions
        self.sent_sizes = (0, 0, 0)  # lengths of owners, nodes, keys the viewers have
        # -- narrations -----------------------------------------------------------------------
        self.narrations: dict[tuple[str, str], deque[Narration]] = {}
        # Each key's status as its syncs wrote it (`sync.stage` records carrying `status`):
        # [time, replicas, ready, available], the newest STATUS_SAMPLES (the rollout's sparklines).
        self.status_series: dict[tuple[str, str], deque[list[float]]] = {}
        self.running: dict[tuple[str, str], Narration] = {}
        self.latest: Narration | None = None
        self.narration_seq = 0
        # kopf handler invocations by their sync.start seq, and their calls not yet answered by
        # request id: an api.request caused by one is one of its calls (newest HANDLER_CALLS_KEPT).
        self.handler_starts: dict[int, Narration] = {}
        self.handler_calls: dict[int, tuple[Narration, Obj]] = {}
        self.logs: dict[str, deque[Obj]] = {}  # controller -> its newest controller.log lines
        # -- logs -----------------------------------------------------------------------------
        self.trace_rows: deque[Obj] = deque(maxlen=ROWS_IN_STATE)
        self.api_rows: deque[Obj] = deque(maxlen=ROWS_IN_STATE)
        self.event_rows: deque[Obj] = deque(maxlen=ROWS_IN_STATE)
        self.new_rows: dict[str, list[Obj]] = {"trace": [], "api": [], "events": []}
        # Pages focused on one owner (#19 §3) get that owner's Events and API calls apart from
        # everyone's, picked before the per-frame cap: "controller:ns/name" -> log -> records.
        self.focus_owners: dict[str, str] = {}  # owner label (panels.owner_label) -> focus key
        self.focus_rows: dict[str, dict[str, list[Obj]]] = {}
        self.skipped: dict[str, int] = {"trace": 0, "api": 0, "events": 0}
        # -- dirty panels -----------------------------------------------------------------------
        self.dirty: set[str] = set()
        self.rendered: dict[str, str] = {}  # panel id -> last HTML sent in a frame
        self.built_at: dict[str, float] = {}  # panel id -> wall time it was last built
        self._state_cache: tuple[Any, str] | None = None  # the last state() and what it was for
        self.cost: dict[str, float] = {}  # panel id -> seconds its last build took
        self.dirty_since: dict[str, float] = {}  # panel id -> when it became dirty (wall time)
        # -- catching up ----------------------------------------------------------------------------
        # The last frames (seq, frame, length of its text), so that a viewer that skipped some
        # gets them merged into one frame instead of a full state (`catchup`).
        self.recent: deque[tuple[int, Obj, int]] = deque()
        self.recent_bytes = 0
        self._catchup_cache: tuple[tuple[int, int], str] | None = None
        self._last_status: Obj | None = None  # the status of the last frame, and when it was built
        self._status_at = -math.inf
        self.skipped_through = -1  # seq when `skip` last dropped changes no frame carried
        # A frame left something out (an urgent frame's ages, a panel over the budget): the host
        # owes the viewers a complete frame once the simulation holds still (`frame(complete=True)`).
        self.owed = False
        hosted.subscribe(self)

    # -- what the session publishes -----------------------------------------------------------
    def record(self, record: Obj) -> None:
        self.fold(record)
        if record["kind"] == "sync.start":
            self.dirty.add("inspector-latest")

    def focused(self, keys: set[tuple[str, str]]) -> None:
        for controller, key in keys:
            self.dirty.update((panels.inspector_id(controller, key), panels.truth_id(controller, key)))

    def pod_opened(self, key: str) -> None:
        self.dirty.add(panels.pod_id(key))

    def owners_focused(self, owners: set[tuple[str, str]], new: tuple[str, str] | None) -> None:
        if new is not None:
            self.dirty.update(panels.owner_panel_ids(*new))
        self.set_owner_focus(owners)

    def acted(self, action: Obj, result: Obj) -> None:
        self.dirty.update(("actions", "faults", "owners"))

    def focused_panel_ids(self) -> list[str]:
        """The focused panels some viewer looks at now: the inspector and cache-vs-truth of each
        focused key, each open Pod tab's pod, the queue and expectations of each focused owner."""
        hosted = self.hosted
        ids = []
        for controller, key in sorted(hosted.focused()):
            ids += [panels.inspector_id(controller, key), panels.truth_id(controller, key)]
        ids += [panels.pod_id(key) for key in sorted(hosted.open_pods)]
        for controller, key in sorted(hosted.focused_owners()):
            ids += panels.owner_panel_ids(controller, key)
        return ids

    # -- folding records ----------------------------------------------------------------------
    def fold(self, record: Obj) -> None:
        kind = record["kind"]
        handler = _HANDLERS.get(kind.split(".", 1)[0])
        if handler is not None:
            handler(self, record)
        if kind != "api.request":
            self._log("trace", record)  # formatted only if it is among the rows a frame shows

    def set_owner_focus(self, owners: set[tuple[str, str]]) -> None:
        """The owners some page is focused on ([controller, "ns/name"]): their Events and API
        calls are kept apart from every frame's capped rows (`focusRows`)."""
        self.focus_owners = {}
        kinds = views.controller_kinds(self.hosted)
        for controller, key in owners:
            kind = kinds.get(controller)
            if kind is not None:
                namespace, name = key.split("/", 1)
                self.focus_owners[panels.owner_label(kind, namespace, name)] = f"{controller}:{key}"
        self.focus_rows = {k: v for k, v in self.focus_rows.items() if k in self.focus_owners.values()}

    def _focus_key(self, kind: str, namespace: str, name: str) -> str | None:
        """The focus key ("controller:ns/name") an object belongs to, if some page is focused on
        its owner: the owner itself, or one of its pods (by the pod table, else by its name)."""
        if kind != "Pod":
            return self.focus_owners.get(panels.owner_label(kind, namespace, name))
        entry = self.pods.get(f"{namespace}/{name}")
        if entry is not None and entry[1]:
            return self.focus_owners.get(self.owners[entry[1]])
        for owner, key in self.focus_owners.items():
            _, ns, owner_name = panels.owner_parts(owner)
            if ns == namespace and name.startswith(owner_name + "-"):
                return key
        return None

    def _log_focused(self, log: str, record: Obj) -> None:
        if log == "events":
            parts = str(record.get("object", "")).split("/", 2)
            if len(parts) != 3:
                return
            key = self._focus_key(*parts)
        else:
            request = views.request(self.hosted, record["id"])
            if not request["name"]:
                return
            base = (request["resource"] or "").split("/", 1)[0]
            kind = OBJECT_KINDS
            if base not in kind:
                return
            key = self._focus_key(kind[base], request["namespace"] or "", request["name"])
        if key is not None:
            rows = self.focus_rows.setdefault(key, {}).setdefault(log, [])
            rows.append(record)
            if len(rows) > 2 * FOCUS_ROWS_PER_FRAME:
                del rows[: len(rows) - FOCUS_ROWS_PER_FRAME]

    def _log(self, log: str, row: Obj) -> None:
        if self.focus_owners and log != "trace":
            self._log_focused(log, row)
        rows = self.new_rows[log]
        rows.append(row)
        if len(rows) > 2 * ROWS_PER_FRAME + NOTABLE_PER_FRAME:
            # Keep the newest, and of the older ones the failed API calls and Warning Events (at
            # most NOTABLE_PER_FRAME: what someone debugging looks for must not be crowded out
            # by a busy world's 2xx and Normal rows); count the rest as skipped.
            capped = _capped(log, rows, ROWS_PER_FRAME)
            self.skipped[log] += len(rows) - len(capped)
            rows[:] = capped

    def _on_queue(self, record: Obj) -> None:
        controller = CONTROLLER_OF_QUEUE.get(record["queue"])
        if controller is None:
            return
        depth = views.queue_depth(self.hosted, controller)
        # What the queue holds changed: its panel and the workers' are dirty (built before the
        # panels that only tick with the clock).
        self.dirty.update((panels.queue_id(controller), panels.workers_id(controller)))
        if depth is not None:
            index = CONTROLLER_INDEX[controller]
            if self.last_depth.get(index) != depth:
                self.last_depth[index] = depth
                t = ms(record["time"])
                if self.depth and self.depth[-1][0] == t and self.depth[-1][1] == index:
                    self.depth[-1][2] = depth
                else:
                    self.depth.append([t, index, depth])
                    if len(self.depth) > MAX_DEPTH_SAMPLES:
                        drop = len(self.depth) - MAX_DEPTH_SAMPLES
                        del self.depth[:drop]
                        self.sent_depth = max(0, self.sent_depth - drop)

    def _on_sync(self, record: Obj) -> None:
        controller, key = record["controller"], record["key"]
        ident = (controller, key)
        kind = record["kind"]
        if "handler" not in record:  # a kopf handler's sync: its operator has no worker panel
            self.dirty.add(panels.workers_id(controller))
        if kind == "sync.start":
            self.narration_seq += 1
            narration = Narration(
                self.narration_seq,
                controller,
                key,
                record["worker"],
                record["time"],
                version=record.get("version") or "v1.36",
                start_seq=record["seq"],
                handler=record.get("handler"),
                retry=int(record.get("retry") or 0),
            )
            if narration.handler is not None:
                self.handler_starts[record["seq"]] = narration
                if len(self.handler_starts) > HANDLER_CALLS_KEPT:
                    del self.handler_starts[next(iter(self.handler_starts))]
            self.running[ident] = narration
            history = self.narrations.setdefault(ident, deque(maxlen=SYNCS_PER_KEY))
            history.append(narration)
            self.latest = narration
            self.dirty.add(panels.inspector_id(controller, key))
            return
        narration = self.running.get(ident)
        if narration is None:
            return
        if kind == "sync.stage":
            fields = {k: v for k, v in record.items() if k not in ("kind", "seq", "controller", "key", "worker")}
            narration.stages.append(fields)
            status = fields.get("status")
            if isinstance(status, dict) and fields.get("written", True):
                series = self.status_series.setdefault(ident, deque(maxlen=STATUS_SAMPLES))
                sample = [
                    record["time"],
                    status.get("replicas") or 0,
                    status.get("readyReplicas") or 0,
                    status.get("availableReplicas") or 0,
                ]
                if series and series[-1][0] == sample[0]:
                    series[-1] = sample
                else:
                    series.append(sample)
            if fields["stage"] == "list" and "scope" in fields:
                narration.garbage_collector = fields["scope"] == "namespace"
        elif kind == "sync.request":
            if len(narration.requests) < MAX_NARRATED_REQUESTS:
                narration.requests.append({"verb": record["verb"], "name": record.get("pod"), "n": record.get("n")})
            if record["verb"] == "create":
                narration.creates += 1
            else:
                narration.deletes += 1
        elif kind == "sync.end":
            narration.end = record["time"]
            narration.error = record["error"]
            narration.requeue = record.get("requeue")
            if narration.handler is not None:
                narration.outcome = record.get("outcome")
                narration.delay = record.get("delay")
                narration.traceback = record.get("traceback")
            del self.running[ident]
            key_index = self.key_index.get(f"{controller}:{key}")
            if key_index is None:
                key_index = self.key_index[f"{controller}:{key}"] = len(self.keys)
                self.keys.append(f"{controller}:{key}")
            self.spans.append(
                [
                    ms(narration.start),
                    ms(narration.end),
                    CONTROLLER_INDEX.get(controller, 0),
                    key_index,
                    narration.worker,
                    0 if narration.error is None else 1,
                    narration.start_seq,  # the sync.start record: a click on the span goes to it
                ]
            )
            if len(self.spans) > MAX_SPANS:
                drop = len(self.spans) - MAX_SPANS
                del self.spans[:drop]
                self.sent_spans = max(0, self.sent_spans - drop)
            self.dirty.add(panels.truth_id(controller, key))
        self.dirty.add(panels.inspector_id(controller, key))
        if narration is self.latest:
            self.dirty.add("inspector-latest")  # "follow latest sync" shows this one, stage by stage

    def _on_pod(self, record: Obj) -> None:
        key = f"{record['namespace']}/{record['name']}"
        owner = self._owner(self._label(record.get("owner"), record["namespace"]))
        state = STATE_INDEX[record["to"]]
        entry = self.pods.get(key)
        is_new = entry is None
        if entry is None:
            if record["to"] == "Deleted":
                return
            pod_id = self.next_pod_id
            self.next_pod_id += 1
            self.pod_ids[key] = pod_id
            entry = self.pods[key] = [pod_id, owner, state, 0]
            self.new_names.append([pod_id, key])
        old_owner = entry[1]
        if not is_new:
            self._count(self.tiles, entry[1], entry[2], -1)
            self._count(self.node_pods, entry[3], entry[2], -1)
        node = self._node(record.get("node") or "")
        entry[1], entry[2] = owner, state
        if record["to"] != "Deleted":
            self._count(self.tiles, owner, state, 1)
            self._count(self.node_pods, node, state, 1)
        if node != entry[3]:
            entry[3] = node
            self.node_changes.append([entry[0], node])
        self._transition(record["time"], entry)
        if record["to"] == "Deleted":
            del self.pods[key]
        self.dirty.update(("owners", "nodes"))
        if key in self.hosted.open_pods:
            self.dirty.add(panels.pod_id(key))
        for index in {old_owner, owner}:
            self._truth_dirty(self.owners[index])

    @staticmethod
    def _count(table: dict[int, dict[int, int]], group: int, state: int, delta: int) -> None:
        counts = table.setdefault(group, {})
        counts[state] = counts.get(state, 0) + delta
        if not counts[state]:
            del counts[state]

    def _transition(self, t: float, entry: list[Any]) -> None:
        self.transitions.append([ms(t), entry[0], entry[1], entry[2]])
        if len(self.transitions) > MAX_TRANSITIONS:
            drop = len(self.transitions) // 10
            del self.transitions[:drop]
            self.transitions_dropped += drop
            self.sent_transitions = max(0, self.sent_transitions - drop)

    def _truth_dirty(self, owner: str) -> None:
        if not owner:
            return
        kind, namespace, name = panels.owner_parts(owner)
        for controller, owner_kind in views.controller_kinds(self.hosted).items():
            if owner_kind == kind:
                for ns_key in self.hosted.focused_keys(controller):
                    if ns_key == f"{namespace}/{name}":
                        self.dirty.add(panels.truth_id(controller, ns_key))

    @staticmethod
    def _label(owner: str | None, namespace: str) -> str:
        """The owner label of a pod in `namespace` whose controller is `owner` ("Kind/name", as
        the trace's pod records name it), or "" (no controller)."""
        if not owner:
            return ""
        kind, name = owner.split("/", 1)
        return panels.owner_label(kind, namespace, name)

    def _owner(self, owner: str) -> int:
        index = self.owner_index.get(owner)
        if index is None:
            index = self.owner_index[owner] = len(self.owners)
            self.owners.append(owner)
        return index

    def _node(self, node: str) -> int:
        index = self.node_index.get(node)
        if index is None:
            index = self.node_index[node] = len(self.nodes)
            self.nodes.append(node)
        return index

    def _on_api(self, record: Obj) -> None:
        if record["kind"] != "api.response":
            if self.handler_starts and record["kind"] == "api.request":
                self._handler_call(record)
            return
        if self.handler_calls:
            waiting = self.handler_calls.pop(record["id"], None)
            if waiting is not None:
                waiting[1]["code"] = record["code"]
                self.dirty.add(panels.inspector_id(waiting[0].controller, waiting[0].key))
                if waiting[0] is self.latest:
                    self.dirty.add("inspector-latest")
        self._log("api", record)
        request = views.request(self.hosted, record["id"])
        resource = request["resource"] or ""
        if self.hosted.open_pods and resource.startswith("pods") and request["name"]:
            # A call on a pod a Pod tab shows: its object and its call list changed.
            pod_key = f"{request['namespace']}/{request['name']}"
            if pod_key in self.hosted.open_pods:
                self.dirty.add(panels.pod_id(pod_key))
        if request["verb"] in ("create", "update", "patch", "delete") and record["code"] < 400:
            base = resource.split("/", 1)[0]
            if base in OWNER_RESOURCES:
                self.dirty.add("owners")
                if base in PARENT_KINDS and request["name"]:
                    self._on_parent_write(record, base, request["namespace"] or "", request["name"])
            elif base == "pods" and request["name"]:
                self.owner_refresh.add(f"{request['namespace']}/{request['name']}")
        if self.sim.faults.api_rules:
            self.dirty.add("faults")

    def _handler_call(self, record: Obj) -> None:
        """An api.request caused by a kopf handler invocation: one of its calls."""
        narration = self.handler_starts.get(record["cause"])
        if narration is None or len(narration.calls) >= MAX_NARRATED_REQUESTS:
            return
        call = {
            "id": record["id"],
            "seq": record["seq"],
            "time": record["time"],
            "verb": record["verb"],
            "resource": record["resource"],
            "namespace": record["namespace"],
            "name": record["name"],
            "code": None,
        }
        narration.calls.append(call)
        self.handler_calls[record["id"]] = (narration, call)
        if len(self.handler_calls) > HANDLER_CALLS_KEPT:
            del self.handler_calls[next(iter(self.handler_calls))]
        self.dirty.add(panels.inspector_id(narration.controller, narration.key))
        if narration is self.latest:
            self.dirty.add("inspector-latest")

    def _on_node(self, record: Obj) -> None:
        if record["kind"] == "node.transition":
            if record["to"] == "Deleted":
                self.node_states.pop(record["name"], None)
            else:
                self.node_states[record["name"]] = record["to"]
            self.dirty.add("nodes")

    def _on_expectations(self, record: Obj) -> None:
        self.dirty.add(panels.expectations_id(record["controller"]))

    def _on_event(self, record: Obj) -> None:
        self._log("events", record)
        parts = str(record.get("object", "")).split("/", 2)
        if len(parts) == 3 and parts[0] in PARENT_KINDS.values():
            kind = "warn" if record.get("type") == "Warning" else "ev"
            label = panels.owner_label(*parts)
            self._mark(record, label, kind, str(record.get("reason") or ""), str(record.get("message") or ""))

    def _mark(self, record: Obj, owner: str, kind: str, label: str, detail: str) -> None:
        self.marks.append([ms(record["time"]), self._owner(owner), kind, label, detail, record["seq"]])
        if len(self.marks) > MAX_MARKS:
            drop = len(self.marks) - MAX_MARKS
            del self.marks[:drop]
            self.sent_marks = max(0, self.sent_marks - drop)

    def _on_parent_write(self, record: Obj, base: str, namespace: str, name: str) -> None:
        """A write to an owner of owners: its revision and conditions as they now are, a mark
        for each that changed since the last write seen."""
        obj = views.peek(self.hosted, base, namespace, name)
        label = panels.owner_label(PARENT_KINDS[base], namespace, name)
        if obj is None:
            self.parent_seen.pop(label, None)
            return
        revision = str(((obj["metadata"].get("annotations") or {}).get(REVISION_ANNOTATION)) or "")
        conditions = {
            str(c.get("type")): (c.get("status"), c.get("reason"), c.get("message"))
            for c in (obj.get("status") or {}).get("conditions") or ()
        }
        before_revision, before = self.parent_seen.get(label, ("", {}))
        self.parent_seen[label] = (revision, conditions)
        if revision and revision != before_revision:
            self._mark(record, label, "rev", revision, f"revision {before_revision or '—'} → {revision}")
        for ctype, (status, reason, message) in conditions.items():
            if before.get(ctype, (None, None, None))[:2] != (status, reason):
                self._mark(record, label, "cond", f"{ctype}={status}", f"{reason or ''}: {message or ''}")

    def _on_action(self, record: Obj) -> None:
        self.dirty.update(("actions", "faults", "owners", "nodes"))

    def _on_controller(self, record: Obj) -> None:
        self.dirty.update(("owners", "faults"))
        if record["kind"] == "controller.log":
            # The lines a reader of upstream looks for (v1.5's "user error! more than one
            # replication controller is selecting pods"): the newest few, for the lookup cache.
            logs = self.logs.setdefault(record["controller"], deque(maxlen=LOGS_KEPT))
            logs.append({"time": record["time"], "level": record.get("level"), "message": record["message"]})
            self.dirty.add(panels.lookupcache_id(record["controller"]))

    def _on_informer(self, record: Obj) -> None:
        if record["kind"] == "informer.event" and record["informer"].endswith("/pods"):
            entry = self.pods.get(record["key"])
            if entry is not None:
                self._truth_dirty(self.owners[entry[1]])

    # -- building -------------------------------------------------------------------------------
    def _refresh_owners(self) -> None:
        """Pods written by anyone (adoption, release, a relabel): re-read their controller."""
        for key in self.owner_refresh:
            entry = self.pods.get(key)
            if entry is None:
                continue
            namespace, name = key.split("/", 1)
            pod = views.peek(self.hosted, "pods", namespace, name)
            if pod is None:
                continue
            owner = ""
            for ref in pod["metadata"].get("ownerReferences") or ():
                if ref.get("controller"):
                    owner = panels.owner_label(str(ref.get("kind")), namespace, str(ref.get("name")))
                    break
            index = self._owner(owner)
            if index != entry[1]:
                previous = entry[1]
                self._count(self.tiles, previous, entry[2], -1)
                self._count(self.tiles, index, entry[2], 1)
                entry[1] = index
                self._transition(self.sim.now, entry)
                self.dirty.add("owners")
                self._truth_dirty(self.owners[previous])
                self._truth_dirty(owner)
        self.owner_refresh.clear()

    def _panel_ids(self) -> list[str]:
        ids = list(panels.ALWAYS)
        if self.sim.operator_names:
            ids.append("operators")  # a world with embedded kopf operators: their pending handlings
        for controller in views.controller_names(self.hosted):
            ids += [panels.queue_id(controller), panels.workers_id(controller), panels.expectations_id(controller)]
            ids.append(panels.lookupcache_id(controller))
        return ids

    def _render(self, panel_id: str) -> str:
        return render_to_string(panels.template_of(panel_id), panels.context(self.hosted, panel_id))

    def frame(self, *, urgent: bool = False, complete: bool = False) -> str | None:
        """The next frame as JSON text (rendered once, sent to every viewer), or None when
        nothing changed since the last one. `urgent`: a user waits for a command's effect, so
        only what fits the budget is built, cheapest first, and no panel jumps the queue for
        having waited (an expensive one waits until the user's result is out). `complete`:
        the simulation holds still (paused after a step), so every dirty panel and every panel
        whose ages move with the clock is built, whatever the budget: the frame after a step
        carries everything the step changed (issue #19 §4)."""
        self._refresh_owners()
        changed: dict[str, str] = {}
        focused = set(self.focused_panel_ids())
        for panel_id in [p for p in self.dirty if panels.is_focused_panel(p) and p not in focused]:
            self.dirty.discard(panel_id)  # nobody looks at that key any more
        for panel_id in focused:
            if panel_id not in self.rendered or panel_id.split(":", 1)[0] in self.dirty:
                # just focused: build it now; a focused queue or expectations panel is dirty
                # with the panel it filters (`queue-replicaset:default/web`, `queue-replicaset`)
                self.dirty.add(panel_id)
        for panel_id in self.dirty:
            self.dirty_since.setdefault(panel_id, time.perf_counter())
        # The panels records made dirty (what a command or an event changed), then the small
        # panels whose ages and countdowns move with the clock, each group least recently built
        # first, within a time budget: what is left waits for a later frame (a dirty panel stays
        # dirty), so a huge world costs the host about FRAME_WORK per frame instead of slowing
        # the simulation. The first panel is always built, and one dirty for STARVE seconds is
        # built regardless, so nothing starves.
        # A panel that took c seconds to build waits PANEL_SHARE x c before it is built again,
        # so no single panel (cache-vs-truth of a 10,000-pod ReplicaSet, say) takes more than
        # a tenth of the host's time either.
        # Urgent frames (a user waits for the effect of a command): only what records made
        # dirty, cheapest first, nothing beyond the budget -- not even the first panel -- and
        # only a panel dirty for twice as long jumps in, so an expensive panel never stands
        # between a click and its result.
        start = time.perf_counter()
        # The focused queue and expectations panels tick like the ones they filter (countdowns).
        # So does a focused rollout (the progress deadline's countdown), and it is dirty with the
        # owner cards (a ReplicaSet's or Deployment's spec or status written).
        every = self._panel_ids() + [p for p in focused if p.startswith(("queue-", "expectations-", "rollout:"))]
        if "owners" in self.dirty:
            self.dirty.update(p for p in focused if p.startswith("rollout:"))
        starve = 2 * STARVE if urgent else STARVE

        def cost(p: str) -> float:
            # Panels of one kind cost alike: a key just focused inherits its kind's cost.
            return self.cost.get(p.split(":", 1)[0], 0.0)

        def eligible(p: str) -> bool:
            return complete or start >= self.built_at.get(p, 0.0) + PANEL_SHARE * cost(p)

        def stale(p: str) -> float:
            return self.built_at.get(p, 0.0)

        def starving(p: str) -> bool:
            return start - self.dirty_since.get(p, start) > starve

        def first(p: str) -> float:
            # What a user waits for after a click (the inspector, the queue) is cheap: cheap
            # panels first. A starving one goes first, or in an urgent frame last.
            if starving(p):
                return math.inf if urgent else -1.0
            return cost(p)

        dirty = sorted((p for p in self.dirty if eligible(p)), key=first)
        # Ages and countdowns wait out an urgent frame: they would only add work between the
        # click and its result (the page's too: a frame every 15 ms of new ages to swap in).
        # A panel no record touched changes only with the clock: once a wall second is enough
        # (a frame carries the clock itself). At 1x, rebuilding ages at every frame sent the
        # whole expectations table (16 KB at 100 ReplicaSets) ten times a second, and the page
        # laid it out and painted it as often.
        ticking = (
            []
            if urgent
            else sorted(
                (
                    p
                    for p in every
                    if p not in self.dirty and eligible(p) and (complete or start >= stale(p) + TICK_EVERY)
                ),
                key=stale,
            )
        )
        order = dirty + ticking
        left_out = urgent or len(order) < len(self.dirty) + len([p for p in every if p not in self.dirty])
        for panel_id in order:
            now = time.perf_counter()
            fits = complete or now - start + cost(panel_id) <= FRAME_WORK
            if not (fits or starving(panel_id) or (panel_id == order[0] and not urgent)):
                left_out = True
                continue  # it waits for a later frame, still dirty
            html = self._render(panel_id)
            self.built_at[panel_id] = now
            # The cost of its kind: a new measurement, or a spike (a collection, a busy core)
            # weighed in at a third, so one slow build does not bar a cheap panel for long.
            kind, took = panel_id.split(":", 1)[0], time.perf_counter() - now
            before = self.cost.get(kind)
            self.cost[kind] = took if before is None or took <= before else (2 * before + took) / 3
            self.dirty.discard(panel_id)
            self.dirty_since.pop(panel_id, None)
            if self.rendered.get(panel_id) != html:
                self.rendered[panel_id] = html
                changed[panel_id] = html
        rows = {}
        for log, new in self.new_rows.items():
            if new:
                shown = _capped(log, new, ROWS_PER_FRAME)
                self.skipped[log] += len(new) - len(shown)  # left out here, counted as skipped
                rows[log] = self._rows_html(log, shown)
        focus_rows = {
            key: {
                log: self._rows_html(log, _capped(log, records, FOCUS_ROWS_PER_FRAME))
                for log, records in logs.items()
                if records
            }
            for key, logs in self.focus_rows.items()
        }
        self.focus_rows = {}
        skipped = {log: n for log, n in self.skipped.items() if n}
        canvas = self._canvas_delta()
        for log in self.new_rows:
            for row in self.new_rows[log][-ROWS_IN_STATE:]:
                self._keep(log, row)
            self.new_rows[log] = []
            self.skipped[log] = 0
        status = panels.status(self.hosted)
        self.owed = left_out or bool(self.dirty)
        # Only the status line moved (the clock while running, nothing else changed): a few
        # times a second is enough for a clock, and each frame costs the page a rendering
        # (style, layout, paint: ~10 ms at 10,000 pods). A command's frame goes out at once; a
        # status held back is owed (the driver sends it once the simulation holds still).
        if not changed and not rows and not canvas:  # (focus rows are rows too: none without rows)
            if status == self._last_status:
                return None
            if not urgent and not complete and start - self._status_at < STATUS_EVERY:
                self.owed = True
                return None
        self._last_status = status
        self._status_at = start
        self.seq += 1
        frame = {"type": "frame", "seq": self.seq, "status": status, "panels": changed, "rows": rows}
        if skipped:
            frame["skipped"] = skipped
        if focus_rows:
            frame["focusRows"] = focus_rows
        if canvas:
            frame["canvas"] = canvas
        text = _wire(frame)
        self._remember(frame, len(text))
        return text

    def _remember(self, frame: Obj, size: int) -> None:
        self.recent.append((frame["seq"], frame, size))
        self.recent_bytes += size
        while len(self.recent) > CATCHUP_FRAMES or (self.recent_bytes > CATCHUP_BYTES and len(self.recent) > 1):
            self.recent_bytes -= self.recent.popleft()[2]

    def catchup(self, since: int) -> str | None:
        """One frame that takes a viewer which has every frame up to `since` to the current one:
        the frames after `since` merged (each panel's newest HTML, the log rows in order, the
        canvas deltas one after the other, the newest status), as JSON text with the current
        `seq`. None when those frames are no longer kept (the viewer needs a full state).
        A lagging viewer so gets what changed, not the world again: a full state carries every
        panel and the whole pod table and timeline (megabytes at 10,000 pods)."""
        if since > self.seq or since <= self.skipped_through:
            return None
        if since < self.seq and (not self.recent or self.recent[0][0] > since + 1):
            return None
        key = (since, self.seq)
        if self._catchup_cache is not None and self._catchup_cache[0] == key:
            return self._catchup_cache[1]  # several viewers behind by the same frames
        frames = [f for seq, f, _ in self.recent if seq > since]
        merged: Obj = {"type": "frame", "seq": self.seq, "status": panels.status(self.hosted), "panels": {}, "rows": {}}
        if frames:
            merged["status"] = frames[-1]["status"]
        skipped: dict[str, int] = {}
        rows: dict[str, list[str]] = {}
        focus_rows: dict[str, dict[str, list[str]]] = {}
        canvas: Obj = {}
        for f in frames:
            merged["panels"].update(f["panels"])
            for log, html in f["rows"].items():
                rows.setdefault(log, []).append(html)
            for focus, logs in f.get("focusRows", {}).items():  # a page focused on one owner
                for log, html in logs.items():
                    focus_rows.setdefault(focus, {}).setdefault(log, []).append(html)
            for log, n in f.get("skipped", {}).items():
                skipped[log] = skipped.get(log, 0) + n
            delta = f.get("canvas") or {}
            for part in ("tr", "names", "nodes", "spans", "depth", "marks"):
                if part in delta:
                    canvas.setdefault(part, []).extend(delta[part])
            for table in ("owners", "nodeNames", "keys"):  # whole tables, only ever growing
                if table in delta:
                    canvas[table] = delta[table]
            canvas.pop("behind", None)
            if "behind" in delta:
                canvas["behind"] = delta["behind"]
        # Each frame's rows are at most ROWS_PER_FRAME: the last frames' rows fill a log's
        # table; older ones are counted as skipped (as a single frame does).
        keep = max(1, ROWS_IN_STATE // ROWS_PER_FRAME)
        for log, parts in rows.items():
            merged["rows"][log] = "".join(parts[-keep:])
            if len(parts) > keep:
                skipped[log] = skipped.get(log, 0) + sum(html.count("<tr") for html in parts[:-keep])
        if skipped:
            merged["skipped"] = skipped
        if focus_rows:
            merged["focusRows"] = {
                k: {log: "".join(parts) for log, parts in logs.items()} for k, logs in focus_rows.items()
            }
        if canvas:
            merged["canvas"] = canvas
        text = _wire(merged)
        self._catchup_cache = (key, text)
        return text

    def skip(self) -> None:
        """Nobody watches: drop what a frame would carry (a viewer who comes later gets it all
        in its state), so nothing piles up and no time is spent rendering."""
        self.owed = False
        self.recent.clear()  # what was dropped here no catch-up could carry
        self.recent_bytes = 0
        self.skipped_through = self.seq
        self._refresh_owners()
        self.focus_rows = {}
        for log in self.new_rows:
            for row in self.new_rows[log][-ROWS_IN_STATE:]:
                self._keep(log, row)
            self.new_rows[log] = []
            self.skipped[log] = 0
        self.sent_transitions = len(self.transitions)
        self.sent_spans = len(self.spans)
        self.sent_depth = len(self.depth)
        self.sent_marks = len(self.marks)
        self.new_names = []
        self.node_changes = []

    def _keep(self, log: str, row: Obj) -> None:
        {"trace": self.trace_rows, "api": self.api_rows, "events": self.event_rows}[log].append(row)

    def _rows_html(self, log: str, records: list[Obj]) -> str:
        """The HTML of these rows (the callers choose which: `_capped`)."""
        if log == "trace":
            rows = [trace_row(r, text=False) for r in records]
        elif log == "api":
            rows = [self.api_row(r) for r in records]
        else:
            rows = records
        return log_rows.RENDER[log](rows)

    def api_row(self, response: Obj) -> Obj:
        request = views.request(self.hosted, response["id"])
        return {
            "time": request["time"],
            "client": request["client"],
            "verb": request["verb"],
            "resource": request["resource"],
            "namespace": request["namespace"],
            "name": request["name"],
            "code": response["code"],
            "reason": response.get("reason"),
            "latency": response["time"] - request["time"],
            "seq": response["seq"],  # the moment its answer came: where the row's link goes
            "at": response["time"],
        }

    def _canvas_delta(self) -> Obj:
        out: Obj = {}
        # Frames spaced out (a saturated simulation with many viewers) carry proportionally more,
        # so that the pods and the timeline keep up with the simulation instead of falling
        # further behind with every frame.
        now = time.perf_counter()
        elapsed, self.canvas_at = now - self.canvas_at, now
        cap = max(TRANSITIONS_PER_FRAME, int(TRANSITIONS_PER_SECOND * min(elapsed, 5.0)))
        end = min(len(self.transitions), self.sent_transitions + cap)
        if end > self.sent_transitions:
            out["tr"] = self.transitions[self.sent_transitions : end]
            self.sent_transitions = end
        if end < len(self.transitions):
            out["behind"] = len(self.transitions) - end
        if self.new_names:
            out["names"] = self.new_names
            self.new_names = []
        if self.node_changes:
            out["nodes"] = self.node_changes
            self.node_changes = []
        if len(self.spans) > self.sent_spans:
            out["spans"] = self.spans[self.sent_spans :]
            self.sent_spans = len(self.spans)
        if len(self.depth) > self.sent_depth:
            out["depth"] = self.depth[self.sent_depth :]
            self.sent_depth = len(self.depth)
        if len(self.marks) > self.sent_marks:
            out["marks"] = self.marks[self.sent_marks :]
            self.sent_marks = len(self.marks)
        # The name tables only grow: send them when they did.
        sizes = (len(self.owners), len(self.nodes), len(self.keys))
        if out and sizes != self.sent_sizes:
            out["owners"] = self.owners
            out["nodeNames"] = self.nodes
            out["keys"] = self.keys
            self.sent_sizes = sizes
        return out

    def state(
        self, focus: list[tuple[str, str]] | None = None, leave_out: tuple[str, ...] = (), timeline: bool = True
    ) -> str:
        """Everything, for a viewer that (re)connects: every panel (but those in `leave_out`),
        the last rows of each log, the whole pod table and (`timeline`) the timeline's history.
        The next frame continues from it (same `seq`)."""
        # The world's position too: a step between two frames moves it without a new frame.
        where = self.hosted.sim.position()
        key = (self.seq, where, tuple(sorted(focus or [])), tuple(self.focused_panel_ids()), leave_out, timeline)
        if self._state_cache is not None and self._state_cache[0] == key:
            return self._state_cache[1]  # several viewers (re)connecting between two frames
        rendered = {}
        for panel_id in self.state_panel_ids(focus):
            if panel_id in leave_out:
                continue
            html = self._render(panel_id)
            rendered[panel_id] = html
            if self.rendered.get(panel_id) != html:
                # This viewer now has a newer panel than the last frame carried: the next frame
                # sends it to everyone, so a later change back cannot be skipped as "unchanged".
                self.rendered.pop(panel_id, None)
                self.dirty.add(panel_id)
        pending = self.transitions[self.sent_transitions :]
        state = {
            "type": "state",
            "seq": self.seq,
            "status": panels.status(self.hosted),
            "panels": rendered,
            "rows": {
                "trace": self._rows_html("trace", list(self.trace_rows)),
                "api": self._rows_html("api", list(self.api_rows)),
                "events": self._rows_html("events", list(self.event_rows)),
            },
            "canvas": self.pod_table(pending=len(pending)),
        }
        if timeline:  # only what earlier frames carried: the next frame sends the rest
            state["canvas"].update(
                tr=self.transitions[: self.sent_transitions],
                dropped=self.transitions_dropped,
                spans=self.spans[: self.sent_spans],
                depth=self.depth[: self.sent_depth],
                marks=self.marks[: self.sent_marks],
            )
        text = _wire(state)
        self._state_cache = (key, text)
        return text


    def state_panel_ids(self, focus: list[tuple[str, str]] | None) -> list[str]:
        """The panels a state carries for a viewer focused on `focus` (the owners refreshed
        first): every panel, those shown on change, the focused ones, the inspector and truth
        panels of each focused key; each once, in that order."""
        self._refresh_owners()
        ids = self._panel_ids() + list(panels.ON_CHANGE) + self.focused_panel_ids()
        for controller, key in focus or []:
            ids += [panels.inspector_id(controller, key), panels.truth_id(controller, key)]
        return list(dict.fromkeys(ids))

    def pod_table(self, *, pending: int) -> Obj:
        """The state's canvas: the whole pod table (names, pods, owners, nodes, keys, states),
        `pending` transitions the next frame carries."""
        return {
            "names": [[pod_id, key] for key, pod_id in self.pod_ids.items() if key in self.pods],
            "pods": [[entry[0], entry[1], entry[2], entry[3]] for entry in self.pods.values()],
            "owners": self.owners,
            "nodeNames": self.nodes,
            "keys": self.keys,
            "states": list(POD_STATES),
            "pending": pending,
        }


def _capped(log: str, rows: list[Obj], limit: int) -> list[Obj]:
    """The rows a frame shows of `rows` (oldest first): the newest `limit`, and before them the
    newest NOTABLE_PER_FRAME notable ones of the rest, in their order."""
    if len(rows) <= limit:
        return rows
    older = rows[:-limit]
    return [r for r in older if _notable(log, r)][-NOTABLE_PER_FRAME:] + rows[-limit:]


def _notable(log: str, row: Obj) -> bool:
    """A row that survives a frame's cap: a failed API call, a Warning Event."""
    if log == "api":
        return bool(row.get("code", 0) >= 400)
    if log == "events":
        return row.get("type") == "Warning"
    return False


def _json_default(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


_HANDLERS = {
    "queue": FrameBuilder._on_queue,
    "sync": FrameBuilder._on_sync,
    "pod": FrameBuilder._on_pod,
    "node": FrameBuilder._on_node,
    "api": FrameBuilder._on_api,
    "event": FrameBuilder._on_event,
    "expectations": FrameBuilder._on_expectations,
    "action": FrameBuilder._on_action,
    "controller": FrameBuilder._on_controller,
    "informer": FrameBuilder._on_informer,
}

"""Breakpoints: pause a session after the event that matched, and say which and why.

A breakpoint is a spec (plain data, as the page sends it) matched against trace records — the
same records the panels draw from — except `informerLag`, which is a condition on the informers
checked after each event. Matching never changes the simulation.

Kinds (each may name a `controller`; where it is omitted any controller matches):
  dequeue {key}                       a worker takes `key` from the queue (queue.get)
  syncError {key?}                    a sync returns an error (sync.end with an error)
  expectationsExpired {key?}          a sync finds that key's unfulfilled expectations expired
  podWrite {verb: create|delete, n?}  a sync issues its n-th pod create (or, for delete, any delete
                                      unless n is given), before the API server answers it
  informerLag {resource?, above}      an informer's cache falls more than `above` changes behind
  podState {owner, state}             a pod owned by `owner` enters `state`: "ReplicaSet/web" in any
                                      namespace, "ReplicaSet/team-a/web" in that one
  stage {stage, key?}                 a sync reaches `stage` (a `sync.stage` record): one of the
                                      stages of a controller version (the registry's stage groups:
                                      the ReplicaSet's, the v1.5 ReplicationManager's, the
                                      Deployment's)
An embedded kopf operator's (`operators:`; its handler invocations are syncs whose controller is
the operator's name):
  handler {operator?, handler?, outcome?, key?}
                                      a handler invocation ends (its sync.end): of that operator
                                      (its module's name), that handler id (kopf's), with that
                                      outcome (success, temporary, permanent, error), on that
                                      object ("namespace/name"); at least one of them
The Deployment controller's (each may name the Deployment's `key`, "namespace/name"; a
`controller` other than deployment is refused):
  newReplicaSet {key?}                a sync created a new ReplicaSet (getNewReplicaSet: the create
                                      was answered 201)
  rolloutComplete {key?}              a sync wrote the Progressing condition with reason
                                      NewReplicaSetAvailable (syncRolloutStatus: the rollout is
                                      complete)
  progressDeadlineExceeded {key?}     a sync wrote the Progressing condition with reason
                                      ProgressDeadlineExceeded (syncRolloutStatus: timed out)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from controlplane.controllers.registry import REGISTRY
from controlplane.expectations import EXPECTATIONS_TIMEOUT
from controlplane.nodes import POD_STATES
from controlplane.scenario import CONTROLLERS
from controlplane.session.timefmt import vtime

Obj = dict[str, Any]

KINDS = (
    "dequeue",
    "syncError",
    "expectationsExpired",
    "podWrite",
    "informerLag",
    "podState",
    "stage",
    "newReplicaSet",
    "rolloutComplete",
    "progressDeadlineExceeded",
    "handler",
)
HANDLER_OUTCOMES = ("success", "temporary", "permanent", "error")  # a kopf handler's (operator.handler)
# The kinds about Deployments: the sync.stage record that fires each (stage, field, value). The
# controller that writes them is the registry's one whose children are other controllers' objects
# (the Deployment controller owns ReplicaSets), not a literal.
_DEPLOYMENT = next(
    (spec.name for spec in REGISTRY.specs if any(o.kind in REGISTRY.kinds() for o in spec.owns)), None
)
# podWrite is about pods: the controllers whose children are pods (the Deployment controller's
# ReplicaSet writes are `sync.request` records too, and do not fire it).
_POD_WRITERS = frozenset(spec.name for spec in REGISTRY.specs if any(o.resource == "pods" for o in spec.owns))
ROLLOUT_KINDS: dict[str, tuple[str, str, str]] = {
    "newReplicaSet": ("getNewReplicaSet", "action", "created"),
    "rolloutComplete": ("syncRolloutStatus", "progress", "complete"),
    "progressDeadlineExceeded": ("syncRolloutStatus", "progress", "timedOut"),
}
QUEUE_NAMES = {spec.name: spec.queue_name for spec in REGISTRY.specs}  # controller -> its workqueue's name
_RESOURCES = REGISTRY.managed_resources()  # what a write breakpoint may name: pods, replicasets, ...
_OWNER_KINDS = REGISTRY.kinds()
MAX_BREAKPOINTS = 50


def _either(words: list[str] | tuple[str, ...]) -> str:
    """"a", "a or b", "a, b or c"."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


class BreakpointError(ValueError):
    """A spec the page sent is not a breakpoint: the message names the field."""


def _text(spec: Obj, key: str, required: bool = True, limit: int = 253) -> str | None:
    value = spec.get(key)
    if value is None or value == "":
        if required:
            raise BreakpointError(f"{key}: required")
        return None
    if not isinstance(value, str):
        raise BreakpointError(f"{key}: must be a string")
    if len(value) > limit:
        raise BreakpointError(f"{key}: longer than {limit} characters")
    return value


def _count(spec: Obj, key: str, minimum: int, required: bool) -> int | None:
    value = spec.get(key)
    if value is None or value == "":
        if required:
            raise BreakpointError(f"{key}: required")
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise BreakpointError(f"{key}: must be a whole number")
    if not minimum <= value <= 1_000_000:
        raise BreakpointError(f"{key}: must be between {minimum} and 1000000")
    return value


@dataclass
class Breakpoint:
    id: int
    kind: str
    spec: Obj
    enabled: bool = True
    hits: int = 0

    def describe(self) -> str:
        s = self.spec
        who = f"{s['controller']} " if s.get("controller") else ""
        if self.kind == "dequeue":
            return f"{who}worker dequeues {s['key']}"
        if self.kind == "syncError":
            return f"{who}sync of {s.get('key') or 'any key'} returns an error"
        if self.kind == "expectationsExpired":
            return f"{who}expectations of {s.get('key') or 'any key'} expire unfulfilled"
        if self.kind == "podWrite":
            if s["verb"] == "create":
                return f"{who}sync issues its create #{s['n']}"
            return f"{who}sync issues delete #{s['n']}" if s.get("n") else f"{who}sync issues any delete"
        if self.kind == "informerLag":
            return f"{s.get('resource') or 'any'} informer more than {s['above']} changes behind"
        if self.kind == "stage":
            return f"{who}sync of {s.get('key') or 'any key'} reaches stage {s['stage']}"
        if self.kind == "handler":
            who = f"operator {s['operator']}'s " if s.get("operator") else "an operator's "
            what = f"handler {s['handler']}" if s.get("handler") else "handler"
            on = f" on {s['key']}" if s.get("key") else ""
            ends = f"ends with outcome {s['outcome']}" if s.get("outcome") else "ends"
            return f"{who}{what}{on} {ends}"
        deployment = f"Deployment {s['key']}" if s.get("key") else "any Deployment"
        if self.kind == "newReplicaSet":
            return f"{deployment}: a new ReplicaSet is created"
        if self.kind == "rolloutComplete":
            return f"{deployment}: rollout complete (NewReplicaSetAvailable)"
        if self.kind == "progressDeadlineExceeded":
            return f"{deployment}: progress deadline exceeded (ProgressDeadlineExceeded)"
        return f"a pod of {s['owner']} becomes {s['state']}"


def _owned_by(record: Obj, owner: str) -> bool:
    """A pod transition's pod is owned by `owner`: "Kind/name" in any namespace, or
    "Kind/namespace/name" in that one (the trace names the owner "Kind/name")."""
    if owner.count("/") == 1:
        return bool(record.get("owner") == owner)
    kind, namespace, name = owner.split("/", 2)
    return bool(record.get("owner") == f"{kind}/{name}" and record.get("namespace") == namespace)


def parse(spec: Any, next_id: int) -> Breakpoint:
    """A validated Breakpoint from the page's spec, or BreakpointError naming the field."""
    if not isinstance(spec, dict):
        raise BreakpointError("a breakpoint must be an object")
    kind = spec.get("kind")
    if kind not in KINDS:
        raise BreakpointError(f"kind: must be one of {', '.join(KINDS)}")
    clean: Obj = {}
    controller = _text(spec, "controller", required=False)
    if controller is not None:
        if controller not in CONTROLLERS:
            raise BreakpointError(f"controller: must be one of {', '.join(CONTROLLERS)}")
        clean["controller"] = controller
    if kind == "dequeue":
        clean["key"] = _text(spec, "key")
    elif kind in ("syncError", "expectationsExpired"):
        key = _text(spec, "key", required=False)
        if key is not None:
            clean["key"] = key
    elif kind == "podWrite":
        verb = spec.get("verb")
        if verb not in ("create", "delete"):
            raise BreakpointError("verb: must be create or delete")
        clean["verb"] = verb
        n = _count(spec, "n", 1, required=verb == "create")
        if n is not None:
            clean["n"] = n
    elif kind == "informerLag":
        resource = _text(spec, "resource", required=False)
        if resource is not None:
            if resource not in _RESOURCES:
                raise BreakpointError(f"resource: must be {_either(_RESOURCES)}")
            clean["resource"] = resource
        clean["above"] = _count(spec, "above", 0, required=True)
    elif kind in ROLLOUT_KINDS:
        if controller is not None and controller != _DEPLOYMENT:
            raise BreakpointError(f"controller: {kind} is a breakpoint of the {_DEPLOYMENT} controller")
        key = _text(spec, "key", required=False)
        if key is not None:
            clean["key"] = key
    elif kind == "handler":
        if controller is not None:
            raise BreakpointError("controller: a handler breakpoint names its operator, not a controller")
        for name in ("operator", "handler", "key"):
            value = _text(spec, name, required=False)
            if value is not None:
                clean[name] = value
        outcome = spec.get("outcome")
        if outcome not in (None, "", *HANDLER_OUTCOMES):
            raise BreakpointError(f"outcome: must be {_either(HANDLER_OUTCOMES)}")
        if outcome:
            clean["outcome"] = outcome
        if not clean:
            raise BreakpointError("a handler breakpoint names an operator, a handler, an outcome or a key")
    elif kind == "stage":
        stage = spec.get("stage")
        names = REGISTRY.stage_names()
        if stage not in names:
            raise BreakpointError(f"stage: must be one of {', '.join(names)}")
        clean["stage"] = stage
        key = _text(spec, "key", required=False)
        if key is not None:
            clean["key"] = key
    else:
        owner = _text(spec, "owner")
        assert owner is not None
        parts = owner.split("/")
        if len(parts) not in (2, 3) or not all(parts) or parts[0] not in _OWNER_KINDS:
            raise BreakpointError(
                f"owner: must be {_either([f'{kind}/NAME' for kind in _OWNER_KINDS])} (any namespace), "
                "or KIND/NAMESPACE/NAME (the page's name for an owner outside default)"
            )
        clean["owner"] = owner
        state = spec.get("state")
        if state not in POD_STATES:
            raise BreakpointError(f"state: must be one of {', '.join(POD_STATES)}")
        clean["state"] = state
    return Breakpoint(next_id, kind, clean)


@dataclass
class Hit:
    """Why the run paused: the breakpoint and the event that matched it."""

    breakpoint: int
    description: str
    time: float
    detail: str


@dataclass
class Breakpoints:
    items: list[Breakpoint] = field(default_factory=list)
    _next: int = 1

    def add(self, spec: Any) -> Breakpoint:
        if len(self.items) >= MAX_BREAKPOINTS:
            raise BreakpointError(f"at most {MAX_BREAKPOINTS} breakpoints")
        bp = parse(spec, self._next)
        self._next += 1
        self.items.append(bp)
        return bp

    def remove(self, bp_id: Any) -> None:
        doomed = self._find(bp_id)
        self.items = [bp for bp in self.items if bp is not doomed]

    def toggle(self, bp_id: Any) -> Breakpoint:
        bp = self._find(bp_id)
        bp.enabled = not bp.enabled
        return bp

    def _find(self, bp_id: Any) -> Breakpoint:
        for bp in self.items:
            if bp.id == bp_id:
                return bp
        raise BreakpointError(f"no breakpoint {bp_id}")

    @property
    def watches_lag(self) -> bool:
        return any(bp.enabled and bp.kind == "informerLag" for bp in self.items)

    def match_record(self, record: Obj) -> Hit | None:
        for bp in self.items:
            if bp.enabled and bp.kind != "informerLag":
                detail = _match(bp, record)
                if detail is not None:
                    bp.hits += 1
                    return Hit(bp.id, bp.describe(), record["time"], detail)
        return None

    def match_lag(self, informers: list[Obj], now: float) -> Hit | None:
        """`informers`: `{name, resource, lag}` for every informer of every controller."""
        for bp in self.items:
            if not (bp.enabled and bp.kind == "informerLag"):
                continue
            for informer in informers:
                controller = informer["name"].split("/")[0]
                if bp.spec.get("controller") not in (None, controller):
                    continue
                if bp.spec.get("resource") not in (None, informer["resource"]):
                    continue
                if informer["lag"] > bp.spec["above"]:
                    bp.hits += 1
                    detail = f"{informer['name']} is {informer['lag']} changes behind the API server"
                    return Hit(bp.id, bp.describe(), now, detail)
        return None


def _controller_of(record: Obj) -> str | None:
    if "controller" in record:
        return str(record["controller"])
    queue = record.get("queue")
    for controller, name in QUEUE_NAMES.items():
        if name == queue:
            return controller
    return None


def _match(bp: Breakpoint, record: Obj) -> str | None:
    """The detail line when `record` fires `bp`, else None."""
    s = bp.spec
    kind = record["kind"]
    if s.get("controller") is not None and kind != "pod.transition" and _controller_of(record) != s["controller"]:
        return None
    if bp.kind == "dequeue":
        if kind == "queue.get" and record["key"] == s["key"]:
            worker = record.get("worker")
            return f"worker {worker} took {record['key']} from the {record['queue']} queue"
    elif bp.kind == "handler":
        if (
            kind == "sync.end"
            and "outcome" in record
            and s.get("operator") in (None, record["controller"])
            and s.get("handler") in (None, record["handler"])
            and s.get("outcome") in (None, record["outcome"])
            and s.get("key") in (None, record["key"])
        ):
            delay = f" (retry in {vtime(record['delay'])})" if record.get("delay") is not None else ""
            error = f": {record['error']}" if record.get("error") else ""
            return (
                f"operator {record['controller']}'s handler {record['handler']} on {record['key']} "
                f"(retry {record['retry']}) ended {record['outcome']}{delay}{error}"
            )
    elif bp.kind == "syncError":
        if kind == "sync.end" and record["error"] is not None and s.get("key") in (None, record["key"]):
            return f"sync of {record['key']} returned: {record['error']}"
    elif bp.kind == "expectationsExpired":
        if kind == "expectations" and record["op"] == "expired" and s.get("key") in (None, record["key"]):
            age = record.get("age", math.nan)
            return (
                f"{record['key']}: add={record['add']} del={record['del']} still expected after {vtime(age)} "
                f"(timeout {vtime(EXPECTATIONS_TIMEOUT)}); the sync goes ahead"
            )
    elif bp.kind == "podWrite":
        if (
            kind == "sync.request"
            and record["verb"] == s["verb"]
            and s.get("n") in (None, record["n"])
            and record.get("controller") in _POD_WRITERS
        ):
            what = f"delete of pod {record['pod']}" if record["verb"] == "delete" else "create"
            return f"sync of {record['key']} issued its {record['verb']} #{record['n']} ({what}); not yet answered"
    elif bp.kind == "stage":
        if kind == "sync.stage" and record["stage"] == s["stage"] and s.get("key") in (None, record["key"]):
            return f"sync of {record['key']} reached {record['stage']} (worker {record.get('worker')})"
    elif bp.kind in ROLLOUT_KINDS:
        stage, field_name, value = ROLLOUT_KINDS[bp.kind]
        if (
            kind == "sync.stage"
            and record["stage"] == stage
            and record.get(field_name) == value
            and record.get("controller") == _DEPLOYMENT
            and s.get("key") in (None, record["key"])
            and (stage != "syncRolloutStatus" or record.get("written"))
        ):
            if bp.kind == "newReplicaSet":
                return (
                    f"sync of {record['key']} created ReplicaSet {record.get('replicaSet')} "
                    f"(revision {record.get('revision')})"
                )
            if bp.kind == "rolloutComplete":
                return f"sync of {record['key']} set Progressing=True, reason NewReplicaSetAvailable"
            return f"sync of {record['key']} set Progressing=False, reason ProgressDeadlineExceeded"
    elif bp.kind == "podState" and (
        kind == "pod.transition" and record["to"] == s["state"] and _owned_by(record, s["owner"])
    ):
        return f"pod {record['name']} went {record['from']} → {record['to']}"
    return None

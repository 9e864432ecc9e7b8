"""Checks: a scenario's `expect:` list, what must hold for the run to pass (docs/scenarios.md).

A check is a subject (what to look at), one or two comparators (what it must be) and a moment:

* `at: T`  — at the end of instant T: once every event due at T has run, the timeline's actions
  at T included (the point where a live action at T applies, `kernel.call_at_end_of_instant`);
* no `at`  — at the end of the run;
* `never: {subject…, comparator}` — the situation described must not hold at any instant of the
  run. It is re-judged after each change it can depend on (a write to the API resource it reads,
  an answered request, an expectations change, a finished sync), incrementally: counting checks
  keep their own tally, so a never check costs O(1) per change, not a scan of the world.

Guarantees
----------
* `parse_checks` either returns checks whose every field has the documented type, or raises
  `ScenarioError` with one line naming the field (`expect[2].path: ...`).
* Checking never changes the simulation: checks read the API server's store with `peek`/`objects`
  (no request is logged), the request log, the controllers' expectations and the run history,
  draw nothing from the rng, and emit no trace record. A run with checks gives the report of the
  same run without them, plus the `checks` section.
* Oracles (properties of a whole run, e.g. safety) are checks by name, `{oracle: NAME}`: a module
  registers them with `register_oracle` (defined in `controlplane.running`); this module imports
  `controlplane.oracles`, so the built-in ones are registered before a file's checks are validated.
* Checks read a simulation as a `controlplane.running.RunningWorld`: the world imports this module
  (through the scenario's validation), never the other way round.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import controlplane.oracles  # noqa: F401 - registers the built-in oracles
from controlplane import labels
from controlplane.controllers.registry import REGISTRY
from controlplane.podutil import controller_ref, is_pod_active
from controlplane.running import ORACLES, RunningWorld
from controlplane.running import OracleVerdict as OracleVerdict  # an oracle's author writes with
from controlplane.running import register_oracle as register_oracle  # these (docs/scenarios.md)
from controlplane.trace import Record
from controlplane.vocabulary import KIND_RESOURCES, KINDS, ScenarioError, type_name

Obj = dict[str, Any]

SUBJECTS = ("object", "count", "calls", "condition", "event", "sync", "syncs", "expectations", "oracle")
COMPARATORS = ("equals", "atLeast", "atMost", "matches", "absent", "present")
CLUSTER_KINDS = ("Node", "Namespace")
CONTROLLERS = REGISTRY.names()
COUNTING = ("count", "calls", "event", "syncs")  # subjects whose value is a number of things
WRITES = frozenset({"create", "update", "patch", "delete"})
_MISSING = object()  # a path that does not resolve


# -- the parsed form --------------------------------------------------------------------------


@dataclass
class Check:
    index: int
    subject: str  # one of SUBJECTS
    spec: Any  # the subject's body (a string for object/oracle, a mapping otherwise)
    compare: Obj  # comparator -> wanted
    at: float | None = None
    never: bool = False
    path: list[Any] | None = None
    path_text: str | None = None
    name: str | None = None
    args: Obj = field(default_factory=dict)
    written: Any = None  # the subject as the file wrote it (for `describe`)
    side: str | None = None  # `side: a|b` in a file with a compare block: holds for that side only

    @property
    def label(self) -> str:
        return f"expect[{self.index}]"

    def describe(self) -> str:
        """The check in a few words, for the report and the failure line."""
        if self.name:
            return self.name
        spec = self.spec if self.written is None else self.written
        if self.subject in ("object", "oracle"):
            text = f"{spec}" if self.subject == "object" else f"oracle {spec}"
        elif self.subject == "condition":
            text = f"condition {spec['type']} on {spec['object']}"
        elif self.subject == "event":
            rest = {k: v for k, v in spec.items() if k != "reason"}
            text = f"event {spec['reason']}" + (_braces(rest) if rest else "")
        else:
            text = f"{self.subject}{_braces(spec)}"
        if self.path_text:
            text += f" {self.path_text}"
        return text

    def wanted(self) -> str:
        parts = []
        for key, value in self.compare.items():
            if key == "equals":
                parts.append(f"== {_render(value)}")
            elif key == "atLeast":
                parts.append(f">= {_render(value)}")
            elif key == "atMost":
                parts.append(f"<= {_render(value)}")
            elif key == "matches":
                parts.append(f"~ /{value}/")
            elif key == "absent":
                parts.append("absent" if value else "present")
            elif key == "present":
                parts.append("present" if value else "absent")
        text = " and ".join(parts)
        return f"never {text}" if self.never else text


def _braces(spec: Obj) -> str:
    return "{" + ", ".join(f"{k}={v if isinstance(v, str) else _render(v)}" for k, v in spec.items()) + "}"


def _render(value: Any) -> str:
    if value is _MISSING:
        return "absent"
    return json.dumps(value, separators=(",", ":"), sort_keys=False, default=str)


# -- validation -------------------------------------------------------------------------------


def _fail(path: str, message: str) -> ScenarioError:
    return ScenarioError(f"{path}: {message}")


def _mapping(value: Any, path: str) -> Obj:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise _fail(path, f"must be a mapping, not {type_name(value)}")
    return value


def _keys(value: Obj, path: str, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
    for key in value:
        if key not in required and key not in optional:
            raise _fail(f"{path}.{key}", "unknown key")
    for key in required:
        if key not in value:
            raise _fail(f"{path}.{key}", "required")


def _string(value: Any, path: str, choices: Iterable[str] | None = None) -> str:
    if not isinstance(value, str):
        raise _fail(path, f"must be a string, not {type_name(value)}")
    if choices is not None and value not in tuple(choices):
        raise _fail(path, f"must be one of {', '.join(choices)} (got {value!r})")
    return value


def _number(value: Any, path: str, *, integer: bool = False, minimum: float | None = None) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(path, f"must be {'an integer' if integer else 'a number'}, not {type_name(value)}")
    if integer and not isinstance(value, int):
        raise _fail(path, "must be an integer")
    if minimum is not None and value < minimum:
        raise _fail(path, f"must be >= {minimum:g}")
    return value


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, f"must be true or false, not {type_name(value)}")
    return value


def object_ref(text: Any, path: str) -> tuple[str, str | None, str]:
    """`Kind/namespace/name`, or `Kind/name` (the default namespace; cluster-scoped kinds take
    only this form) -> (kind, namespace or None, name)."""
    value = _string(text, path)
    parts = value.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise _fail(path, f"must be Kind/namespace/name or Kind/name (got {value!r})")
    kind = parts[0]
    if kind not in KINDS:
        raise _fail(path, f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
    if kind in CLUSTER_KINDS:
        if len(parts) == 3:
            raise _fail(path, f"{kind} is cluster-scoped: write {kind}/name")
        return kind, None, parts[1]
    if len(parts) == 2:
        return kind, "default", parts[1]
    return kind, parts[1], parts[2]


def _window(value: Any, path: str) -> list[float]:
    if not isinstance(value, list) or len(value) != 2:
        raise _fail(path, "must be a list of two times [from, to]")
    start = _number(value[0], f"{path}[0]", minimum=0)
    end = _number(value[1], f"{path}[1]", minimum=0)
    if end < start:
        raise _fail(path, "the second time must not be before the first")
    return [float(start), float(end)]


_PATH_TOKEN = re.compile(r"""\[(?:(\*)|(-?\d+)|"([^"]*)"|([^\]=]+)=([^\]]*))\]""")


def parse_path(text: Any, where: str) -> list[Any]:
    """`status.conditions[type=Ready].status`, `spec.containers[0].image`, `batches[*].size`,
    `metadata.annotations["controller.kubernetes.io/pod-deletion-cost"]` -> tokens: a str is a
    key, an int an index, ("*",) every element, (field, value) the first element whose field
    equals value."""
    value = _string(text, where)
    tokens: list[Any] = []
    i = 0
    while i < len(value):
        if value[i] == "[":
            match = _PATH_TOKEN.match(value, i)
            if match is None:
                raise _fail(where, f"bad bracket at character {i + 1} of {value!r}")
            star, index, quoted, key, wanted = match.groups()
            if star:
                tokens.append(("*",))
            elif index is not None:
                tokens.append(int(index))
            elif quoted is not None:
                tokens.append(quoted)
            else:
                tokens.append((key.strip(), wanted.strip()))
            i = match.end()
            if i < len(value) and value[i] == ".":
                i += 1
            continue
        end = i
        while end < len(value) and value[end] not in ".[":
            end += 1
        if end == i:
            raise _fail(where, f"empty key at character {i + 1} of {value!r}")
        tokens.append(value[i:end])
        i = end + 1 if end < len(value) and value[end] == "." else end
    if not tokens or value.endswith("."):
        raise _fail(where, f"not a path: {value!r}")
    return tokens


def _check_subject(subject: str, raw: Any, where: str) -> Any:
    if subject == "object":
        object_ref(raw, where)
        return raw
    if subject == "oracle":
        name = _string(raw, where)
        if name not in ORACLES:
            known = ", ".join(sorted(ORACLES)) or "none are registered"
            raise _fail(where, f"unknown oracle {name!r} ({known})")
        return name
    spec = dict(_mapping(raw, where))
    if subject == "count":
        _keys(
            spec,
            where,
            (),
            ("kind", "namespace", "selector", "phase", "condition", "owner", "node", "active", "terminating"),
        )
        spec.setdefault("kind", "Pod")
        _string(spec["kind"], f"{where}.kind", KINDS)
        for key in ("namespace", "node"):
            if key in spec:
                _string(spec[key], f"{where}.{key}")
        if "selector" in spec:
            try:
                labels.parse(_string(spec["selector"], f"{where}.selector"))
            except ValueError as exc:
                raise _fail(f"{where}.selector", str(exc).splitlines()[0]) from None
        if "phase" in spec:
            _string(spec["phase"], f"{where}.phase", ("Pending", "Running", "Succeeded", "Failed", "Unknown"))
        if "condition" in spec:
            cond = spec["condition"]
            if isinstance(cond, str):
                spec["condition"] = {"type": cond, "status": "True"}
            else:
                cond = _mapping(cond, f"{where}.condition")
                _keys(cond, f"{where}.condition", ("type",), ("status",))
                _string(cond["type"], f"{where}.condition.type")
                _string(cond.get("status", "True"), f"{where}.condition.status", ("True", "False", "Unknown"))
                spec["condition"] = {"type": cond["type"], "status": cond.get("status", "True")}
        if "owner" in spec:
            object_ref(spec["owner"], f"{where}.owner")
        for key in ("active", "terminating"):
            if key in spec:
                _bool(spec[key], f"{where}.{key}")
    elif subject == "calls":
        _keys(spec, where, (), ("client", "verb", "resource", "namespace", "name", "code", "between"))
        for key in ("client", "resource", "namespace", "name"):
            if key in spec:
                _string(spec[key], f"{where}.{key}")
        if "verb" in spec:
            _string(spec["verb"], f"{where}.verb", ("get", "list", "watch", "create", "update", "patch", "delete"))
        if "code" in spec:
            _number(spec["code"], f"{where}.code", integer=True, minimum=100)
        if "between" in spec:
            spec["between"] = _window(spec["between"], f"{where}.between")
    elif subject == "condition":
        _keys(spec, where, ("object", "type"), ("status", "reason"))
        object_ref(spec["object"], f"{where}.object")
        _string(spec["type"], f"{where}.type")
        spec.setdefault("status", "True")
        _string(spec["status"], f"{where}.status", ("True", "False", "Unknown", "any"))
        if "reason" in spec:
            _string(spec["reason"], f"{where}.reason")
    elif subject == "event":
        _keys(spec, where, ("reason",), ("object", "type", "component"))
        _string(spec["reason"], f"{where}.reason")
        if "object" in spec:
            object_ref(spec["object"], f"{where}.object")
        if "type" in spec:
            _string(spec["type"], f"{where}.type", ("Normal", "Warning"))
        if "component" in spec:
            _string(spec["component"], f"{where}.component")
    elif subject in ("sync", "syncs"):
        extra = ("error", "consistency", "requeue", "manage", *(("index",) if subject == "sync" else ()))
        _keys(spec, where, (), ("controller", "key", "between", *extra))
        if "controller" in spec:
            _string(spec["controller"], f"{where}.controller", CONTROLLERS)
        if "key" in spec:
            _string(spec["key"], f"{where}.key")
        if "between" in spec:
            spec["between"] = _window(spec["between"], f"{where}.between")
        if "index" in spec:
            _number(spec["index"], f"{where}.index", integer=True)
        if "error" in spec:
            _bool(spec["error"], f"{where}.error")
        if "consistency" in spec:
            _string(spec["consistency"], f"{where}.consistency", ("ready", "stale", "off"))
        if "requeue" in spec:
            _string(spec["requeue"], f"{where}.requeue", ("rateLimited", "after", "none"))
        if "manage" in spec:
            _string(spec["manage"], f"{where}.manage", ("create", "delete", "none", "skipped"))
    elif subject == "expectations":
        _keys(spec, where, ("controller", "key"), ())
        _string(spec["controller"], f"{where}.controller", CONTROLLERS)
        _string(spec["key"], f"{where}.key")
    return spec


def _check_comparators(value: Obj, where: str) -> Obj:
    compare = {k: value[k] for k in COMPARATORS if k in value}
    if not compare:
        raise _fail(where, f"needs a comparator ({', '.join(COMPARATORS)})")
    ranged = set(compare) == {"atLeast", "atMost"}
    if len(compare) > 1 and not ranged:
        raise _fail(where, f"has more than one comparator: {', '.join(compare)} (only atLeast with atMost)")
    for key in ("atLeast", "atMost"):
        if key in compare:
            _number(compare[key], f"{where}.{key}")
    for key in ("absent", "present"):
        if key in compare:
            _bool(compare[key], f"{where}.{key}")
    if "matches" in compare:
        pattern = _string(compare["matches"], f"{where}.matches")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise _fail(f"{where}.matches", f"invalid regular expression: {exc}") from None
    return compare


def _parse_body(value: Obj, where: str, index: int, *, never: bool) -> Check:
    subjects = [k for k in SUBJECTS if k in value]
    if not subjects:
        raise _fail(where, f"needs one subject ({', '.join(SUBJECTS)})")
    if len(subjects) > 1:
        raise _fail(where, f"has more than one subject: {', '.join(subjects)}")
    subject = subjects[0]
    allowed = [subject, *COMPARATORS, "name"]
    if subject in ("object", "sync", "expectations"):
        allowed.append("path")
    if subject == "oracle":
        allowed.append("args")
    if not never:
        allowed.append("at")
    for key in value:
        if key not in allowed:
            if key == "path":
                raise _fail(f"{where}.path", f"not for a {subject} check (only object, sync, expectations)")
            raise _fail(f"{where}.{key}", "unknown key")
    spec = _check_subject(subject, value[subject], f"{where}.{subject}")
    if subject == "oracle" and never:
        raise _fail(f"{where}.oracle", "an oracle judges the whole run already: not inside never")
    if never and subject == "sync":
        raise _fail(f"{where}.sync", "one sync is not a situation: count them with syncs inside never")
    if subject == "oracle":
        compare: Obj = {}
        for key in COMPARATORS:
            if key in value:
                raise _fail(f"{where}.{key}", "an oracle has no comparator: it says what it wants")
    else:
        compare = _check_comparators(value, where)
    check = Check(index=index, subject=subject, spec=spec, compare=compare, never=never, written=value[subject])
    if "path" in value:
        check.path = parse_path(value["path"], f"{where}.path")
        check.path_text = value["path"]
    if "name" in value:
        check.name = _string(value["name"], f"{where}.name")
    if "args" in value:
        check.args = _mapping(value["args"], f"{where}.args")
    if "at" in value:
        check.at = float(_number(value["at"], f"{where}.at", minimum=0))
    return check


SIDES = ("a", "b")


def parse_checks(raw: Any, until: float | None = None, *, sided: bool = True) -> list[Check]:
    """Validate a scenario's `expect:` list (ScenarioError naming the field when invalid).
    `sided`: whether the file has a compare block, the only place a check's `side` means
    something."""
    if not isinstance(raw, list):
        raise _fail("expect", f"must be a list, not {type_name(raw)}")
    checks = []
    for i, item in enumerate(raw):
        where = f"expect[{i}]"
        value = _mapping(item, where)
        side = None
        if "side" in value:
            side = _string(value["side"], f"{where}.side", SIDES)
            if not sided:
                raise _fail(f"{where}.side", "only in a file with a compare block (compare: {a: ..., b: ...})")
            value = {k: v for k, v in value.items() if k != "side"}
        if "never" in value:
            extra = [k for k in value if k not in ("never", "name")]
            if extra:
                raise _fail(f"{where}.{extra[0]}", "not beside never (put the situation inside it)")
            check = _parse_body(_mapping(value["never"], f"{where}.never"), f"{where}.never", i, never=True)
            if "name" in value:
                check.name = _string(value["name"], f"{where}.name")
        else:
            check = _parse_body(value, where, i, never=False)
        if check.at is not None and until is not None and check.at > until:
            raise _fail(f"{where}.at", f"after the end of the run (until: {until:g})")
        check.side = side
        checks.append(check)
    return checks


# -- reading the simulation -------------------------------------------------------------------


def resolve_path(value: Any, tokens: list[Any]) -> Any:
    """The value at `tokens` in `value`, or _MISSING. `[*]` maps the rest over a list."""
    for n, token in enumerate(tokens):
        if value is None:
            return _MISSING
        if isinstance(token, tuple) and len(token) == 1:
            if not isinstance(value, list):
                return _MISSING
            rest = tokens[n + 1 :]
            found = [resolve_path(item, rest) for item in value]
            return [item for item in found if item is not _MISSING]
        if isinstance(token, tuple):
            key, wanted = token
            if not isinstance(value, list):
                return _MISSING
            value = next((item for item in value if isinstance(item, dict) and _text(item.get(key)) == wanted), None)
            if value is None:
                return _MISSING
        elif isinstance(token, int):
            if not isinstance(value, list) or not -len(value) <= token < len(value):
                return _MISSING
            value = value[token]
        else:
            if not isinstance(value, dict) or token not in value:
                return _MISSING
            value = value[token]
    return _MISSING if value is None else value


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _peek(sim: RunningWorld, ref: str) -> Obj | None:
    kind, namespace, name = object_ref(ref, "")
    obj: Obj | None = sim.server.peek(KIND_RESOURCES[kind], namespace, name)
    return obj


def _owner_matches(obj: Obj, owner: tuple[str, str | None, str]) -> bool:
    ref = controller_ref(obj)
    kind, namespace, name = owner
    return (
        ref is not None
        and ref.get("kind") == kind
        and ref.get("name") == name
        and (namespace is None or obj["metadata"].get("namespace") == namespace)
    )


class _ObjectFilter:
    """The `count` subject's filter over objects of one kind."""

    def __init__(self, spec: Obj) -> None:
        self.kind = spec["kind"]
        self.resource = KIND_RESOURCES[self.kind]
        self.namespace: str | None = spec.get("namespace")
        self.selector = labels.parse(spec["selector"]) if "selector" in spec else None
        self.phase: str | None = spec.get("phase")
        self.condition: Obj | None = spec.get("condition")
        self.owner = object_ref(spec["owner"], "") if "owner" in spec else None
        self.node: str | None = spec.get("node")
        self.active: bool | None = spec.get("active")
        self.terminating: bool | None = spec.get("terminating")

    def __call__(self, obj: Obj) -> bool:
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if self.selector is not None and not self.selector.matches(meta.get("labels") or {}):
            return False
        status = obj.get("status") or {}
        if self.phase is not None and status.get("phase") != self.phase:
            return False
        if self.condition is not None and not any(
            c.get("type") == self.condition["type"] and c.get("status") == self.condition["status"]
            for c in status.get("conditions") or ()
        ):
            return False
        if self.owner is not None and not _owner_matches(obj, self.owner):
            return False
        if self.node is not None and (obj.get("spec") or {}).get("nodeName") != self.node:
            return False
        if self.active is not None and is_pod_active(obj) != self.active:
            return False
        return self.terminating is None or bool(meta.get("deletionTimestamp")) == self.terminating


class _EventFilter:
    def __init__(self, spec: Obj) -> None:
        self.reason = spec["reason"]
        self.object = object_ref(spec["object"], "") if "object" in spec else None
        self.type: str | None = spec.get("type")
        self.component: str | None = spec.get("component")

    def weight(self, event: Obj) -> int:
        """How many times this Event object records a matching occurrence (0: not matching)."""
        if event.get("reason") != self.reason:
            return 0
        if self.type is not None and event.get("type") != self.type:
            return 0
        if self.component is not None and (event.get("source") or {}).get("component") != self.component:
            return 0
        if self.object is not None:
            involved = event.get("involvedObject") or {}
            kind, namespace, name = self.object
            if involved.get("kind") != kind or involved.get("name") != name:
                return 0
            if namespace is not None and involved.get("namespace") != namespace:
                return 0
        return int(event.get("count") or 1)


def _call_matches(spec: Obj, call: Any) -> bool:
    for key in ("client", "verb", "resource", "namespace", "name", "code"):
        if key in spec and call[key] != spec[key]:
            return False
    window = spec.get("between")
    return window is None or window[0] <= call["time"] <= window[1]


def _sync_matches(spec: Obj, entry: Obj) -> bool:
    if "controller" in spec and entry["controller"] != spec["controller"]:
        return False
    if "key" in spec and entry["key"] != spec["key"]:
        return False
    window = spec.get("between")
    if window is not None and not window[0] <= entry["start"] <= window[1]:
        return False
    if "error" in spec and (entry["error"] is not None) != spec["error"]:
        return False
    if "consistency" in spec and entry.get("consistency") != spec["consistency"]:
        return False
    if "requeue" in spec and (entry.get("requeue") or {}).get("decision") != spec["requeue"]:
        return False
    if "manage" in spec:
        manage = entry.get("manage")
        action = manage["action"] if manage else None
        if action != spec["manage"]:
            return False
    return True


def _condition(sim: RunningWorld, spec: Obj) -> Any:
    obj = _peek(sim, spec["object"])
    if obj is None:
        return _MISSING
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") != spec["type"]:
            continue
        if spec["status"] != "any" and cond.get("status") != spec["status"]:
            continue
        if "reason" in spec and cond.get("reason") != spec["reason"]:
            continue
        return cond
    return _MISSING


def _expectations(sim: RunningWorld, spec: Obj) -> Any:
    controller = sim.controllers.get(spec["controller"])
    if controller is None:
        return _MISSING
    record, _ = controller.expectations.get_expectations(spec["key"])
    if record is None:
        return _MISSING
    add, dele = record.get_expectations()
    return {"add": add, "del": dele}


def evaluate(sim: RunningWorld, check: Check) -> Any:
    """The subject's value now (before `path`), or _MISSING. Reads only (see the guarantees)."""
    subject, spec = check.subject, check.spec
    if subject == "object":
        obj = _peek(sim, spec)
        return _MISSING if obj is None else obj
    if subject == "count":
        match = _ObjectFilter(spec)
        return sum(1 for obj in sim.server.objects(match.resource) if match(obj))
    if subject == "calls":
        return sum(1 for call in sim.server.requests if _call_matches(spec, call))
    if subject == "condition":
        return _condition(sim, spec)
    if subject == "event":
        events = _EventFilter(spec)
        return sum(events.weight(e) for e in sim.server.objects("events"))
    if subject == "sync":
        found = [entry for entry in sim.syncs if _sync_matches(spec, entry)]
        index = spec.get("index", 0)
        return found[index] if -len(found) <= index < len(found) else _MISSING
    if subject == "syncs":
        return sum(1 for entry in sim.syncs if _sync_matches(spec, entry))
    if subject == "expectations":
        return _expectations(sim, spec)
    raise AssertionError(subject)


def judge(check: Check, value: Any) -> bool:
    """Whether `value` (after `path`; _MISSING when absent) satisfies the check's comparators."""
    if check.path is not None and value is not _MISSING:
        value = resolve_path(value, check.path)
    compare = check.compare
    if "absent" in compare or "present" in compare:
        # A count is present when there is something to count.
        present = value >= 1 if check.subject in COUNTING else value is not _MISSING
        wanted = compare["present"] if "present" in compare else not compare["absent"]
        return bool(present == wanted)
    if value is _MISSING:
        return False
    if "equals" in compare:
        return _same(value, compare["equals"])
    if "matches" in compare:
        return isinstance(value, str) and re.search(compare["matches"], value) is not None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if "atLeast" in compare and value < compare["atLeast"]:
        return False
    return not ("atMost" in compare and value > compare["atMost"])


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 3 is 3.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def shown(check: Check, value: Any) -> Any:
    """The `got` of a result: the value after `path` (JSON), or None when absent."""
    if check.path is not None and value is not _MISSING:
        value = resolve_path(value, check.path)
    if value is _MISSING:
        return None
    if check.subject == "object" and check.path is None:
        meta = value["metadata"]
        return "/".join(part for part in (value.get("kind"), meta.get("namespace"), meta["name"]) if part)
    return value


# -- running ------------------------------------------------------------------------------------


@dataclass
class CheckResult:
    check: Check
    ok: bool
    time: float | None  # when judged; for a never check, when it first held (None if it never did)
    got: Any
    reached: bool = True  # False for an `at` beyond the end of the run
    wanted: str | None = None  # an oracle says what it wants; other checks derive it

    @property
    def wanted_text(self) -> str:
        return self.wanted if self.wanted is not None else self.check.wanted()

    def to_json(self) -> Obj:
        check = self.check
        out = {
            "check": check.label,
            "name": check.describe(),
            "at": "never" if check.never else ("end" if check.at is None else check.at),
            "ok": self.ok,
            "time": self.time,
            "wanted": self.wanted_text,
            "got": self.got if self.reached else "not reached: the run ended first",
        }
        if check.side is not None:  # only compare files have sided checks: other reports keep their shape
            out["side"] = check.side
        return out

    def line(self) -> str:
        """One line for a failure: check (and its side), time, wanted, got."""
        label = self.check.label if self.check.side is None else f"{self.check.label} (side {self.check.side})"
        if not self.reached:
            return f"{label} {self.check.describe()} @ t={self.check.at:g}: not reached, the run ended first"
        when = "never held" if self.time is None else f"t={self.time:g}"
        got = _render(self.got)
        return f"{label} {self.check.describe()} @ {when}: wanted {self.wanted_text}, got {got}"


class Checker:
    """Judges a simulation's checks as it runs: `start()` (instead of `sim.start()`), run the
    simulation, then `finish()` for the end-of-run checks and every result.

    Needs a simulation that records (`Simulation(record=True)`, the default): sync checks read
    its history."""

    def __init__(self, sim: RunningWorld, checks: list[Check]) -> None:
        self.sim = sim
        self.checks = checks
        self.results: dict[int, CheckResult] = {}
        self._never = [_NeverWatch(sim, c) for c in checks if c.never]
        self._unsubscribe: Callable[[], None] | None = None

    def start(self) -> None:
        """Start the simulation with its checks: never checks listen from the first record, and
        `at` checks are scheduled after the timeline, so a check at T runs after T's actions
        and every event those bring about at T."""
        if self._never:
            self._unsubscribe = self.sim.subscribe(self._observe)
        for check in self.checks:
            # An oracle that watches the whole run (e.g. safety) attaches before anything happens.
            attach = getattr(ORACLES[check.spec], "attach", None) if check.subject == "oracle" else None
            if attach is not None:
                attach(self.sim)
        self.sim.start()
        for check in self.checks:
            if check.at is not None and not check.never:
                self.sim.kernel.call_at_end_of_instant(check.at, self._judge_now, check)
        for watch in self._never:
            watch.start()

    def _judge_now(self, check: Check) -> None:
        if check.subject == "oracle":
            self.results[check.index] = self._oracle(check)
            return
        value = evaluate(self.sim, check)
        self.results[check.index] = CheckResult(check, judge(check, value), self.sim.now, shown(check, value))

    def _oracle(self, check: Check) -> CheckResult:
        verdict = ORACLES[check.spec](self.sim, check.args)
        return CheckResult(check, verdict.ok, self.sim.now, verdict.got, wanted=verdict.wanted)

    def _observe(self, record: Record) -> None:
        for watch in self._never:
            watch.observe(record)

    def finish(self) -> list[CheckResult]:
        """Judge the end-of-run checks now; every check's result, in file order."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for check in self.checks:
            if check.never:
                watch = next(w for w in self._never if w.check is check)
                self.results[check.index] = watch.result()
            elif check.at is None:
                self._judge_now(check)
            elif check.index not in self.results:
                self.results[check.index] = CheckResult(check, False, None, None, reached=False)
        return [self.results[c.index] for c in self.checks]


class _NeverWatch:
    """One never check: re-judged after each change its subject depends on. Counting subjects
    keep a tally per object (or per call, per sync), so one change costs O(1)."""

    def __init__(self, sim: RunningWorld, check: Check) -> None:
        self.sim = sim
        self.check = check
        self.first: tuple[float, Any] | None = None
        subject, spec = check.subject, check.spec
        self.resource: str | None = None
        self.target: tuple[str | None, str] | None = None
        self.tally: dict[Any, int] = {}
        self.total = 0
        self.weigh: Callable[[Obj], int] | None = None
        self._sync_index: dict[tuple[str, str], int] = {}
        if subject in ("object", "condition"):
            kind, namespace, name = object_ref(spec if subject == "object" else spec["object"], "")
            self.resource, self.target = KIND_RESOURCES[kind], (namespace, name)
        elif subject == "count":
            match = _ObjectFilter(spec)
            self.resource = match.resource
            self.weigh = lambda obj: 1 if match(obj) else 0
        elif subject == "event":
            events = _EventFilter(spec)
            self.resource = "events"
            self.weigh = events.weight

    def start(self) -> None:
        if self.weigh is not None and self.resource is not None:
            for obj in self.sim.server.objects(self.resource):
                self._tally(obj["metadata"].get("namespace"), obj["metadata"]["name"], obj)
        self._judge()

    def observe(self, record: Record) -> None:
        kind = record["kind"]
        subject = self.check.subject
        if kind == "api.response":
            call = self.sim.server.requests[record["id"]]
            if subject == "calls":
                if _call_matches(self.check.spec, call):
                    self.total += 1
                    self._judge()
                return
            if self.resource is None or call["verb"] not in WRITES or record["code"] >= 400:
                return
            if call["resource"].split("/")[0] != self.resource:
                return
            namespace, name = call["namespace"], call["name"]
            if name is None:
                return
            if self.target is not None:
                if (namespace if self.target[0] is not None else None, name) == self.target:
                    self._judge()
                return
            self._tally(namespace, name, self.sim.server.peek(self.resource, namespace, name))
            self._judge()
        elif kind == "expectations" and subject == "expectations":
            if record["controller"] == self.check.spec["controller"] and record["key"] == self.check.spec["key"]:
                self._judge()
        elif kind in ("sync.end", "sync.requeue") and subject == "syncs":
            slot = (record["controller"], record["key"])
            if kind == "sync.end":
                self._sync_index[slot] = len(self.sim.syncs) - 1
            index = self._sync_index.get(slot)
            if index is None:
                return
            self.total -= self.tally.get(index, 0)
            self.tally[index] = 1 if _sync_matches(self.check.spec, self.sim.syncs[index]) else 0
            self.total += self.tally[index]
            self._judge()

    def _tally(self, namespace: str | None, name: str, obj: Obj | None) -> None:
        assert self.weigh is not None
        key = (namespace, name)
        weight = self.weigh(obj) if obj is not None else 0
        self.total += weight - self.tally.get(key, 0)
        if weight:
            self.tally[key] = weight
        else:
            self.tally.pop(key, None)

    def _judge(self) -> None:
        if self.first is not None:
            return
        check = self.check
        if check.subject in COUNTING:
            value: Any = self.total
        else:
            value = evaluate(self.sim, check)
        if judge(check, value):
            self.first = (self.sim.now, shown(check, value))

    def result(self) -> CheckResult:
        if self.first is None:
            return CheckResult(self.check, True, None, None)
        return CheckResult(self.check, False, self.first[0], self.first[1])

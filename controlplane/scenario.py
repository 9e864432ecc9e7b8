"""Scenario files (DESIGN §2.2): parsing and validation.

Guarantee: `load_scenario(text)` either returns a `Scenario` whose every field has the documented
type and range, or raises `ScenarioError` whose message is one line naming the field
(`actions[3].scale.replicas: must be >= 0`). Whether the API server accepts the starting objects is
checked when the simulation applies them (a rejection there is also a `ScenarioError`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"
# Shipped scenarios are `<id>.scenario.yaml` (the pytest plugin collects that suffix); a plain
# `<id>.yaml` there is found too.
SCENARIO_SUFFIXES = (".scenario.yaml", ".yaml")


def scenario_id(path: Path) -> str:
    """A shipped file's id: its name without the scenario suffix (`demo.scenario.yaml` -> `demo`)."""
    name = path.name
    suffix = next(s for s in (*SCENARIO_SUFFIXES, path.suffix) if name.endswith(s))
    return name[: -len(suffix)]


class ScenarioError(ValueError):
    """An invalid scenario: the message is one line naming the field."""


# -- the vocabulary -----------------------------------------------------------------------------

FEATURE_GATES = {
    "StaleControllerConsistencyReplicaSet": True,
    "DeploymentReplicaSetTerminatingReplicas": True,
    "PodDeletionCost": True,
}
WHAT_IF = {"expectations": True, "slowStart": True}

# key: (kind, default, minimum)  — kind "int", "number", "bool"
CONFIG_SCALARS: dict[str, tuple[str, Any, float | None]] = {
    "workers": ("int", 5, 1),
    "burstReplicas": ("int", 500, 1),
    "kubeApiQPS": ("number", 20.0, None),  # negative disables client-side rate limiting (client-go)
    "kubeApiBurst": ("int", 30, 1),
    "apiLatency": ("number", 0.005, 0),
    "watchLatency": ("number", 0.05, 0),
    "nodes": ("int", 3, 0),
    "podStartup": ("number", 2.0, 0),
    "podReadyDelay": ("number", 0.0, 0),
    "podShutdown": ("number", 1.0, 0),
    "nodeMonitorGracePeriod": ("number", 40.0, 0),
    "tolerationSeconds": ("number", 300.0, 0),
    "resyncPeriod": ("number", 0.0, 0),
    # The other components' clients (negative: no limit). Upstream defaults: kubelet and
    # kube-scheduler 50 QPS / burst 100.
    "kubeletQPS": ("number", 50.0, None),
    "kubeletBurst": ("int", 100, 1),
    "schedulerQPS": ("number", 50.0, None),
    "schedulerBurst": ("int", 100, 1),
}
CONTROLLERS = ("replicaset", "replicationcontroller")
KINDS = ("ReplicaSet", "ReplicationController", "Pod", "Node", "Namespace", "Event")
POD_FAULTS = ("crash", "fail", "succeed", "evict", "notReady", "ready", "delete")
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "*")
PROPAGATION = ("Background", "Foreground", "Orphan")


def default_config() -> dict[str, Any]:
    config: dict[str, Any] = {key: spec[1] for key, spec in CONFIG_SCALARS.items()}
    config["featureGates"] = dict(FEATURE_GATES)
    config["whatIf"] = dict(WHAT_IF)
    config["controllers"] = list(CONTROLLERS)
    config["manualWorkers"] = []
    return config


@dataclass
class Scenario:
    name: str = "empty"
    description: str = ""
    seed: int = 0
    config: dict[str, Any] = field(default_factory=default_config)
    objects: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    until: float = 60.0
    # The checks, as written (validated by `controlplane.checks.parse_checks`).
    expect: list[dict[str, Any]] = field(default_factory=list)


# -- checking helpers ---------------------------------------------------------------------------


def _fail(path: str, message: str) -> ScenarioError:
    return ScenarioError(f"{path}: {message}" if path else message)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"must be a mapping, not {_type_name(value)}")
    for key in value:
        if not isinstance(key, str):
            raise _fail(path, f"keys must be strings, not {_type_name(key)}")
    return value


def _keys(value: dict[str, Any], path: str, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
    for key in value:
        if key not in required and key not in optional:
            where = f"{path}.{key}" if path else key
            raise _fail(where, "unknown key")
    for key in required:
        if key not in value:
            where = f"{path}.{key}" if path else key
            raise _fail(where, "required")


def _string(value: Any, path: str, choices: tuple[str, ...] | None = None) -> str:
    if not isinstance(value, str):
        raise _fail(path, f"must be a string, not {_type_name(value)}")
    if choices is not None and value not in choices:
        raise _fail(path, f"must be one of {', '.join(choices)} (got {value!r})")
    return value


def _number(value: Any, path: str, minimum: float | None = None, integer: bool = False, exclusive: bool = False) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(path, f"must be {'an integer' if integer else 'a number'}, not {_type_name(value)}")
    if integer and not isinstance(value, int):
        raise _fail(path, "must be an integer")
    if minimum is not None:
        if exclusive and value <= minimum:
            raise _fail(path, f"must be > {minimum:g}")
        if not exclusive and value < minimum:
            raise _fail(path, f"must be >= {minimum:g}")
    return value


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, f"must be true or false, not {_type_name(value)}")
    return value


# -- sections -----------------------------------------------------------------------------------


def check_config(raw: Any, path: str = "config", *, partial: bool = False) -> dict[str, Any]:
    """Validate a config mapping; returns it normalised (numbers as floats where documented)."""
    value = _mapping(raw, path)
    out: dict[str, Any] = {}
    allowed = (*CONFIG_SCALARS, "featureGates", "whatIf", "controllers", "manualWorkers")
    _keys(value, path, (), allowed)
    for key, item in value.items():
        where = f"{path}.{key}"
        if key in CONFIG_SCALARS:
            kind, _, minimum = CONFIG_SCALARS[key]
            number = _number(item, where, minimum, integer=kind == "int")
            out[key] = float(number) if kind == "number" else number
        elif key == "featureGates":
            gates = _mapping(item, where)
            _keys(gates, where, (), tuple(FEATURE_GATES))
            out[key] = {gate: _bool(v, f"{where}.{gate}") for gate, v in gates.items()}
        elif key == "whatIf":
            knobs = _mapping(item, where)
            _keys(knobs, where, (), tuple(WHAT_IF))
            out[key] = {knob: _bool(v, f"{where}.{knob}") for knob, v in knobs.items()}
        elif key in ("controllers", "manualWorkers"):
            if not isinstance(item, list):
                raise _fail(where, f"must be a list, not {_type_name(item)}")
            names = [_string(c, f"{where}[{i}]", CONTROLLERS) for i, c in enumerate(item)]
            # manualWorkers is a set of names: canonical order, no repeats.
            out[key] = names if key == "controllers" else [c for c in CONTROLLERS if c in names]
    if partial:
        return out
    merged = default_config()
    for key, item in out.items():
        if key in ("featureGates", "whatIf"):
            merged[key] = {**merged[key], **item}
        else:
            merged[key] = item
    return merged


def check_manifest(raw: Any, path: str) -> dict[str, Any]:
    value = _mapping(raw, path)
    for key in ("apiVersion", "kind", "metadata"):
        if key not in value:
            raise _fail(f"{path}.{key}", "required")
    _string(value["apiVersion"], f"{path}.apiVersion")
    _string(value["kind"], f"{path}.kind", KINDS)
    meta = _mapping(value["metadata"], f"{path}.metadata")
    if "name" not in meta and "generateName" not in meta:
        raise _fail(f"{path}.metadata.name", "required")
    return value


def _target(value: dict[str, Any], path: str) -> None:
    _string(value["kind"], f"{path}.kind", KINDS)
    _string(value["name"], f"{path}.name")
    if "namespace" in value:
        _string(value["namespace"], f"{path}.namespace")


def check_action(raw: Any, path: str) -> dict[str, Any]:
    value = _mapping(raw, path)
    if "at" not in value:
        raise _fail(f"{path}.at", "required")
    _number(value["at"], f"{path}.at", 0)
    verbs = [k for k in value if k != "at"]
    if not verbs:
        raise _fail(path, f"needs one verb ({', '.join(ACTION_VERBS)})")
    if len(verbs) > 1:
        raise _fail(path, f"has more than one verb: {', '.join(verbs)}")
    verb = verbs[0]
    if verb not in ACTION_VERBS:
        raise _fail(f"{path}.{verb}", f"unknown verb (one of {', '.join(ACTION_VERBS)})")
    check_verb(verb, value[verb], f"{path}.{verb}")
    return value


def check_verb(verb: str, body: Any, path: str) -> None:
    """Validate one verb's body (also used for actions sent by the dashboard)."""
    if verb == "apply":
        check_manifest(body, path)
        return
    if verb == "config":
        check_config(body, path, partial=True)
        return
    value = _mapping(body, path)
    if verb == "delete":
        _keys(value, path, ("kind", "name"), ("namespace", "propagationPolicy"))
        _target(value, path)
        if "propagationPolicy" in value:
            _string(value["propagationPolicy"], f"{path}.propagationPolicy", PROPAGATION)
    elif verb == "scale":
        _keys(value, path, ("kind", "name", "replicas"), ("namespace",))
        _target(value, path)
        _number(value["replicas"], f"{path}.replicas", 0, integer=True)
    elif verb == "patch":
        _keys(value, path, ("kind", "name", "patch"), ("namespace",))
        _target(value, path)
        _mapping(value["patch"], f"{path}.patch")
    elif verb == "podFault":
        _keys(value, path, ("fault",), ("name", "selector", "namespace", "count"))
        if ("name" in value) == ("selector" in value):
            raise _fail(path, "needs exactly one of name or selector")
        if "name" in value:
            _string(value["name"], f"{path}.name")
        if "selector" in value:
            from controlplane import labels

            try:
                labels.parse(_string(value["selector"], f"{path}.selector"))
            except ValueError as exc:
                raise _fail(f"{path}.selector", str(exc).splitlines()[0]) from None
        if "namespace" in value:
            _string(value["namespace"], f"{path}.namespace")
        if "count" in value:
            _number(value["count"], f"{path}.count", 1, integer=True)
        _string(value["fault"], f"{path}.fault", POD_FAULTS)
    elif verb == "nodeFault":
        _keys(value, path, ("name", "fault"), ())
        _string(value["name"], f"{path}.name")
        _string(value["fault"], f"{path}.fault", ("down", "up"))
    elif verb == "apiFault":
        _keys(
            value,
            path,
            ("verb", "resource", "code"),
            ("after", "count", "rate", "reason", "message", "latency", "client"),
        )
        _string(value["verb"], f"{path}.verb", VERBS)
        _string(value["resource"], f"{path}.resource")
        code = _number(value["code"], f"{path}.code", 0, integer=True)
        if code != 0 and not 400 <= code <= 599:
            raise _fail(f"{path}.code", "must be an HTTP error code (400-599), or 0 for latency only")
        if "count" in value and "rate" in value:
            raise _fail(path, "count and rate exclude each other")
        if "after" in value:
            _number(value["after"], f"{path}.after", 0, integer=True)
        if "count" in value:
            _number(value["count"], f"{path}.count", 1, integer=True)
        if "rate" in value:
            rate = _number(value["rate"], f"{path}.rate", 0)
            if rate > 1:
                raise _fail(f"{path}.rate", "must be <= 1")
        for key in ("reason", "message", "client"):
            if key in value:
                _string(value[key], f"{path}.{key}")
        if "latency" in value:
            _number(value["latency"], f"{path}.latency", 0)
    elif verb == "watchFault":
        _keys(value, path, ("resource", "fault"), ("delay", "controller"))
        _string(value["resource"], f"{path}.resource", ("pods", "replicasets", "replicationcontrollers"))
        _string(value["fault"], f"{path}.fault", ("pause", "resume", "drop"))
        if "delay" in value:
            _number(value["delay"], f"{path}.delay", 0)
        if "controller" in value:
            _string(value["controller"], f"{path}.controller", CONTROLLERS)
    elif verb == "controllerFault":
        _keys(value, path, ("controller", "fault"), ())
        _string(value["controller"], f"{path}.controller", CONTROLLERS)
        _string(value["fault"], f"{path}.fault", ("restart",))
    elif verb == "sync":
        _keys(value, path, ("controller",), ("key",))
        _string(value["controller"], f"{path}.controller", CONTROLLERS)
        if "key" in value:
            key = _string(value["key"], f"{path}.key")
            if key.count("/") != 1 or not all(key.split("/")):
                raise _fail(f"{path}.key", f"must be namespace/name (got {key!r})")
    elif verb == "request":
        check_request(value, path)
    elif verb == "liftFault":
        _keys(value, path, ("apiFault",), ())
        target = value["apiFault"]
        if target != "all":
            _number(target, f"{path}.apiFault", 1, integer=True)


REQUEST_VERBS = ("create", "update", "patch", "delete", "deletecollection")
REQUEST_SUBRESOURCES = ("status", "scale", "binding")
REQUEST_PATCH_TYPES = ("merge", "strategic", "json", "apply")
# option: (type checker name, choices)
REQUEST_OPTIONS: dict[str, str] = {
    "propagationPolicy": "policy",
    "gracePeriodSeconds": "int",
    "orphanDependents": "bool",
    "preconditions": "preconditions",
    "fieldManager": "string",
    "fieldValidation": "string",
    "force": "bool",
    "labelSelector": "string",
    "fieldSelector": "string",
}


def check_request(value: dict[str, Any], path: str) -> None:
    """The body of a `request` action: one write to the API server, as an HTTP client sent it."""
    from controlplane.apiserver.resources import RESOURCES  # the served resources

    _keys(
        value,
        path,
        ("verb", "resource"),
        ("client", "subresource", "namespace", "name", "body", "patchType", "options"),
    )
    verb = _string(value["verb"], f"{path}.verb", REQUEST_VERBS)
    _string(value["resource"], f"{path}.resource", tuple(RESOURCES))
    for key in ("client", "namespace", "name"):
        if key in value:
            text = _string(value[key], f"{path}.{key}")
            if not text or len(text) > 512:
                raise _fail(f"{path}.{key}", "must be 1 to 512 characters")
    if "subresource" in value:
        _string(value["subresource"], f"{path}.subresource", REQUEST_SUBRESOURCES)
    if verb in ("update", "patch", "delete") and "name" not in value:
        raise _fail(f"{path}.name", f"required for {verb}")
    if verb in ("create", "update", "patch") and "body" not in value:
        raise _fail(f"{path}.body", f"required for {verb}")
    if verb == "patch":
        if "patchType" not in value:
            raise _fail(f"{path}.patchType", "required for patch")
        _string(value["patchType"], f"{path}.patchType", REQUEST_PATCH_TYPES)
    elif "patchType" in value:
        raise _fail(f"{path}.patchType", "only for patch")
    if "body" in value and not isinstance(value["body"], dict | list):
        raise _fail(f"{path}.body", f"must be a mapping or a list, not {_type_name(value['body'])}")
    options = _mapping(value.get("options", {}), f"{path}.options")
    _keys(options, f"{path}.options", (), tuple(REQUEST_OPTIONS))
    for key, item in options.items():
        where = f"{path}.options.{key}"
        kind = REQUEST_OPTIONS[key]
        if kind == "policy":
            _string(item, where, PROPAGATION)
        elif kind == "int":
            _number(item, where, integer=True)
        elif kind == "bool":
            _bool(item, where)
        elif kind == "string":
            _string(item, where)
        elif kind == "preconditions":
            _keys(_mapping(item, where), where, (), ("uid", "resourceVersion"))
            for sub, text in item.items():
                _string(text, f"{where}.{sub}")


ACTION_VERBS = (
    "apply",
    "delete",
    "scale",
    "patch",
    "podFault",
    "nodeFault",
    "apiFault",
    "watchFault",
    "controllerFault",
    "config",
    "sync",
    "liftFault",
    "request",
)


def parse_scenario(data: Any) -> Scenario:
    if data is None:
        data = {}
    value = _mapping(data, "")
    _keys(value, "", (), ("name", "description", "seed", "config", "objects", "actions", "until", "expect"))
    scenario = Scenario()
    if "name" in value:
        scenario.name = _string(value["name"], "name")
    if "description" in value:
        scenario.description = _string(value["description"], "description")
    if "seed" in value:
        scenario.seed = _number(value["seed"], "seed", 0, integer=True)
    scenario.config = check_config(value.get("config", {}))
    objects = value.get("objects", [])
    if not isinstance(objects, list):
        raise _fail("objects", f"must be a list, not {_type_name(objects)}")
    scenario.objects = [check_manifest(o, f"objects[{i}]") for i, o in enumerate(objects)]
    actions = value.get("actions", [])
    if not isinstance(actions, list):
        raise _fail("actions", f"must be a list, not {_type_name(actions)}")
    scenario.actions = [check_action(a, f"actions[{i}]") for i, a in enumerate(actions)]
    if "until" in value:
        scenario.until = float(_number(value["until"], "until", 0, exclusive=True))
    if "expect" in value:
        from controlplane.checks import parse_checks  # checks reads the vocabulary above

        parse_checks(value["expect"], scenario.until)
        scenario.expect = value["expect"]
    return scenario


def load_scenario(text: str) -> Scenario:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(f"not valid YAML{where}: {problem}") from None
    return parse_scenario(data)


def resolve(name_or_path: str) -> Path:
    """A path, or the name of a shipped scenario (`demo` → controlplane/scenarios/demo.scenario.yaml)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    for suffix in SCENARIO_SUFFIXES:
        shipped = SCENARIO_DIR / f"{name_or_path}{suffix}"
        if "/" not in name_or_path and shipped.is_file():
            return shipped
    raise ScenarioError(f"{name_or_path}: no such file, and no shipped scenario of that name")


def load_file(name_or_path: str) -> Scenario:
    path = resolve(name_or_path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"{path}: {exc.strerror}") from None
    return load_scenario(text)


def library() -> list[dict[str, str]]:
    """The shipped scenarios: id (file name without its suffix), title and description."""
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml"), key=scenario_id):
        scenario = load_scenario(path.read_text())
        out.append({"id": scenario_id(path), "name": scenario.name, "description": scenario.description})
    return out

"""Scenario files (docs/scenarios.md): parsing and validation.

Guarantee: `load_scenario(text)` either returns a `Scenario` whose every field has the documented
type and range, or raises `ScenarioError` whose message is one line naming the field
(`actions[3].scale.replicas: must be >= 0`). Every number is finite and within the ceilings of
controlplane.limits. The text is read with controlplane.safeyaml (bounded, no recursion). What can
be decided from the file alone is checked here too: duplicate starting objects, owner references
to objects the file does not list before, faults naming a node, controller or `apiFault` rule the
file never has. Whether the API server accepts the starting objects is checked when the
simulation applies them (a rejection there is also a `ScenarioError`), as are the run's ceilings
(`RunLimits`), which belong to whoever runs the file.
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from controlplane import limits, safeyaml
from controlplane.controllers.registry import OPERATOR, REGISTRY
from controlplane.duplicate_keys import collect_duplicates
from controlplane.kubelet import IMAGE_FAULTS
from controlplane.vocabulary import KINDS, type_name
from controlplane.vocabulary import ScenarioError as ScenarioError  # the error of an invalid file

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"
# Shipped scenarios are `<id>.scenario.yaml` (the pytest plugin collects that suffix); a plain
# `<id>.yaml` there is found too.
SCENARIO_SUFFIXES = (".scenario.yaml", ".yaml")


def scenario_id(path: Path) -> str:
    """A shipped file's id: its name without the scenario suffix (`demo.scenario.yaml` -> `demo`)."""
    name = path.name
    suffix = next(s for s in (*SCENARIO_SUFFIXES, path.suffix) if name.endswith(s))
    return name[: -len(suffix)]


# -- the vocabulary -----------------------------------------------------------------------------

FEATURE_GATES = {
    "StaleControllerConsistencyReplicaSet": True,
    "DeploymentReplicaSetTerminatingReplicas": True,
    "PodDeletionCost": True,
}
WHAT_IF = {"expectations": True, "slowStart": True}
# config.controllerVersion: the versions each controller can run (docs/versions.md), as the controller
# registry declares them (controlplane/controllers/registry.py).
CONTROLLER_VERSIONS: dict[str, tuple[str, ...]] = {spec.name: spec.version_names for spec in REGISTRY.specs}
# Today's version: every controller's default (its registry entry's versions[0]).
DEFAULT_CONTROLLER_VERSION = "v1.36"
# The versions that have a lookup cache (config.lookupCacheSize).
LOOKUP_CACHE_VERSIONS = REGISTRY.versions_reading("lookupCacheSize")

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
    # kube-apiserver --event-ttl: Events are deleted this long after their last write (whole
    # seconds, as the flag's duration is cut to; at least one).
    "eventTTL": ("number", 3600.0, 1),
    "resyncPeriod": ("number", 0.0, 0),
    # The other components' clients (negative: no limit). Upstream defaults: kubelet and
    # kube-scheduler 50 QPS / burst 100.
    "kubeletQPS": ("number", 50.0, None),
    "kubeletBurst": ("int", 100, 1),
    "schedulerQPS": ("number", 50.0, None),
    "schedulerBurst": ("int", 100, 1),
    # kube-controller-manager v1.5 --replication-controller-lookup-cache-size (v1.5 only).
    "lookupCacheSize": ("int", 4096, 1),
}
# Upper bounds of the config scalars (controlplane.limits holds the numbers). QPS keys also refuse
# a positive rate below limits.MIN_QPS; resyncPeriod is 0 or at least limits.MIN_RESYNC_PERIOD.
CONFIG_MAXIMA: dict[str, float] = {
    "workers": limits.MAX_WORKERS,
    "burstReplicas": limits.MAX_INT32,
    "kubeApiQPS": limits.MAX_QPS,
    "kubeApiBurst": limits.MAX_INT32,
    "apiLatency": limits.MAX_SECONDS,
    "watchLatency": limits.MAX_SECONDS,
    "nodes": limits.MAX_NODES,
    "podStartup": limits.MAX_SECONDS,
    "podReadyDelay": limits.MAX_SECONDS,
    "podShutdown": limits.MAX_SECONDS,
    "nodeMonitorGracePeriod": limits.MAX_SECONDS,
    "tolerationSeconds": limits.MAX_SECONDS,
    "eventTTL": limits.MAX_SECONDS,
    "resyncPeriod": limits.MAX_SECONDS,
    "kubeletQPS": limits.MAX_QPS,
    "kubeletBurst": limits.MAX_INT32,
    "schedulerQPS": limits.MAX_QPS,
    "schedulerBurst": limits.MAX_INT32,
    "lookupCacheSize": limits.MAX_LOOKUP_CACHE_SIZE,
}
QPS_KEYS = ("kubeApiQPS", "kubeletQPS", "schedulerQPS")
# Config keys a `config` action may not change: they shape what the simulation is built from.
STARTUP_ONLY_CONFIG = ("controllers",)
CONTROLLERS = REGISTRY.names()
# What an external client may watch (the served resources): a `watchFault {client}` names one.
WATCHED_RESOURCES = ("pods", *REGISTRY.resources(), "events", "nodes", "namespaces")
# What the controllers' informers watch (their children's and their own resources): a
# `watchFault` without a client names one.
INFORMER_RESOURCES = REGISTRY.managed_resources()
POD_FAULTS = ("crash", "fail", "succeed", "evict", "notReady", "ready", "delete")
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "*")
PROPAGATION = ("Background", "Foreground", "Orphan")


def default_config() -> dict[str, Any]:
    config: dict[str, Any] = {key: spec[1] for key, spec in CONFIG_SCALARS.items()}
    config["featureGates"] = dict(FEATURE_GATES)
    config["whatIf"] = dict(WHAT_IF)
    config["controllers"] = list(REGISTRY.default_names())  # the Deployment controller is opt-in
    config["manualWorkers"] = []
    config["controllerVersion"] = {spec.name: spec.default_version.version for spec in REGISTRY.specs}
    config["enableGarbageCollector"] = True  # --enable-garbage-collector
    config["imageFaults"] = {}  # image pattern -> ErrImagePull | NeverReady (the kubelets)
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
    # The two configurations the file is about (`compare:`), side -> {label, config}: `config`
    # is the partial block as written (validated), to merge over `config`; None without one.
    compare: dict[str, dict[str, Any]] | None = None
    # The user's operators the world hosts (`operators:`, controlplane.operators), as validated.
    operators: list[dict[str, Any]] = field(default_factory=list)
    # The side this Scenario runs (`for_side`): its config is that side's, and only the checks
    # without a side or with this one are judged. None: the file's own config, unsided checks.
    side: str | None = None


# -- checking helpers ---------------------------------------------------------------------------


def _fail(path: str, message: str) -> ScenarioError:
    return ScenarioError(f"{path}: {message}" if path else message)


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"must be a mapping, not {type_name(value)}")
    for key in value:
        if not isinstance(key, str):
            raise _fail(path, f"keys must be strings, not {type_name(key)}")
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
        raise _fail(path, f"must be a string, not {type_name(value)}")
    if choices is not None and value not in choices:
        raise _fail(path, f"must be one of {', '.join(choices)} (got {value!r})")
    return value


def _shown(number: float) -> str:
    """A bound as a reader writes it: 2147483647, 2592000, 0.01 (never 2.59e+06)."""
    if isinstance(number, int) or float(number).is_integer():
        return str(int(number))
    return f"{number:g}"


def _number(
    value: Any,
    path: str,
    minimum: float | None = None,
    integer: bool = False,
    exclusive: bool = False,
    maximum: float | None = None,
) -> Any:
    """`value` if it is a finite number (an int when `integer`) within the bounds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(path, f"must be {'an integer' if integer else 'a number'}, not {type_name(value)}")
    if integer and not isinstance(value, int):
        raise _fail(path, "must be an integer")
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(path, f"must be a finite number, not {value}")
    if minimum is not None:
        if exclusive and value <= minimum:
            raise _fail(path, f"must be > {_shown(minimum)}")
        if not exclusive and value < minimum:
            raise _fail(path, f"must be >= {_shown(minimum)}")
    if maximum is not None and value > maximum:
        raise _fail(path, f"must be <= {_shown(maximum)}")
    return value


def check_seed(value: object, path: str = "seed") -> int:
    """`value` as a seed: a whole number from 0 to `limits.MAX_SEED` (2^63-1, docs/scenarios.md's
    limits; the sessions' database column is a 64-bit integer), given as an int or, from a form,
    as its decimal text. ScenarioError (one line naming `path`) otherwise. The one check of a
    seed: the scenario file's `seed`, `--seed`, the dashboard's start and compare forms."""
    seed: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        seed = value
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            seed = int(value)
    if seed is None or not 0 <= seed <= limits.MAX_SEED:
        shown = repr(value[:40]) if isinstance(value, str) else seed if seed is not None else _value_shown(value)
        raise _fail(path, f"must be a whole number from 0 to {limits.MAX_SEED}, not {shown}")
    return seed


def _value_shown(value: object) -> str:
    return _shown(value) if isinstance(value, float) else type_name(value)


def _seconds(value: Any, path: str) -> Any:
    """A duration or a virtual time: finite, 0 to limits.MAX_SECONDS."""
    return _number(value, path, 0, maximum=limits.MAX_SECONDS)


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, f"must be true or false, not {type_name(value)}")
    return value


# -- sections -----------------------------------------------------------------------------------


def check_config(raw: Any, path: str = "config", *, partial: bool = False) -> dict[str, Any]:
    """Validate a config mapping; returns it normalised (numbers as floats where documented)."""
    value = _mapping(raw, path)
    out: dict[str, Any] = {}
    allowed = (
        *CONFIG_SCALARS,
        "featureGates",
        "whatIf",
        "controllers",
        "manualWorkers",
        "controllerVersion",
        "enableGarbageCollector",
        "imageFaults",
    )
    _keys(value, path, (), allowed)
    for key, item in value.items():
        where = f"{path}.{key}"
        if partial and key in STARTUP_ONLY_CONFIG:
            raise _fail(where, "cannot change at run time (set it in the scenario's config)")
        if key in CONFIG_SCALARS:
            kind, _, minimum = CONFIG_SCALARS[key]
            maximum = CONFIG_MAXIMA[key]
            if key in QPS_KEYS:
                minimum = -maximum
            number = _number(item, where, minimum, integer=kind == "int", maximum=maximum)
            if key in QPS_KEYS and 0 < number < limits.MIN_QPS:
                raise _fail(where, f"must be 0 (the default), negative (no limit) or >= {_shown(limits.MIN_QPS)}")
            if key == "resyncPeriod" and 0 < number < limits.MIN_RESYNC_PERIOD:
                raise _fail(
                    where, f"must be 0 (no resync) or >= {_shown(limits.MIN_RESYNC_PERIOD)} (client-go's minimum)"
                )
            out[key] = float(number) if kind == "number" else number
        elif key == "featureGates":
            gates = _mapping(item, where)
            _keys(gates, where, (), tuple(FEATURE_GATES))
            out[key] = {gate: _bool(v, f"{where}.{gate}") for gate, v in gates.items()}
        elif key == "whatIf":
            knobs = _mapping(item, where)
            _keys(knobs, where, (), tuple(WHAT_IF))
            out[key] = {knob: _bool(v, f"{where}.{knob}") for knob, v in knobs.items()}
        elif key == "controllerVersion":
            out[key] = _controller_versions(item, where)
        elif key == "enableGarbageCollector":
            out[key] = _bool(item, where)
        elif key == "imageFaults":
            out[key] = _image_faults(item, where)
        elif key in ("controllers", "manualWorkers"):
            if not isinstance(item, list):
                raise _fail(where, f"must be a list, not {type_name(item)}")
            names = [_string(c, f"{where}[{i}]", CONTROLLERS) for i, c in enumerate(item)]
            # manualWorkers is a set of names: canonical order, no repeats.
            out[key] = names if key == "controllers" else [c for c in CONTROLLERS if c in names]
    if partial:
        return out
    merged = merge_config(default_config(), out)
    check_config_versions(merged, path)
    return merged


# Config keys whose value is a mapping merged key by key (a partial change keeps the others).
MERGED_CONFIG = ("featureGates", "whatIf", "controllerVersion")


def merge_config(config: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`config` with the (validated) `changes` applied: a new dict; mappings merged key by key."""
    merged = dict(config)
    for key, item in changes.items():
        merged[key] = {**merged[key], **item} if key in MERGED_CONFIG else item
    return merged


def _image_faults(raw: Any, path: str) -> dict[str, str]:
    """config.imageFaults: image reference pattern (fnmatch) -> ErrImagePull | NeverReady."""
    faults = _mapping(raw, path)
    if len(faults) > limits.MAX_IMAGE_FAULTS:
        raise _fail(path, f"at most {limits.MAX_IMAGE_FAULTS} patterns (got {len(faults)})")
    for pattern, fault in faults.items():
        if not pattern:
            raise _fail(path, "a pattern must not be empty")
        if len(pattern) > limits.MAX_IMAGE_PATTERN:
            raise _fail(path, f"pattern {pattern[:40]!r}...: at most {limits.MAX_IMAGE_PATTERN} characters")
        _string(fault, f"{path}.{pattern}", IMAGE_FAULTS)
    return dict(faults)


def _controller_versions(raw: Any, path: str) -> dict[str, str]:
    versions = _mapping(raw, path)
    for name, version in versions.items():
        where = f"{path}.{name}"
        if name not in CONTROLLER_VERSIONS:
            raise _fail(where, f"unknown controller (one of {', '.join(CONTROLLER_VERSIONS)})")
        choices = CONTROLLER_VERSIONS[name]
        if isinstance(version, str) and version not in choices and len(choices) == 1:
            raise _fail(where, f"only {choices[0]} is implemented for this controller (got {version!r})")
        _string(version, where, choices)
    return dict(versions)


def check_config_versions(config: dict[str, Any], path: str = "config") -> None:
    """What one key cannot say alone: a v1.5-only key given a non-default value while no
    controller runs a version that reads it (ScenarioError naming the key and the version of the
    controller that has such versions: the ReplicationController)."""
    if config["lookupCacheSize"] == CONFIG_SCALARS["lookupCacheSize"][1]:
        return
    having = [spec.name for spec in REGISTRY.specs if set(spec.version_names) & set(LOOKUP_CACHE_VERSIONS)]
    versions = config["controllerVersion"]
    if not any(versions[name] in LOOKUP_CACHE_VERSIONS for name in having):
        raise _fail(
            f"{path}.lookupCacheSize",
            "only the v1.5 ReplicationManager has a lookup cache "
            f"({path}.controllerVersion.{having[0]} is {versions[having[0]]})",
        )


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
    _seconds(value["at"], f"{path}.at")
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
        _number(value["replicas"], f"{path}.replicas", 0, integer=True, maximum=limits.MAX_INT32)
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
            _number(value["count"], f"{path}.count", 1, integer=True, maximum=limits.MAX_INT32)
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
        code = _number(value["code"], f"{path}.code", 0, integer=True, maximum=599)
        if code != 0 and not 400 <= code <= 599:
            raise _fail(f"{path}.code", "must be an HTTP error code (400-599), or 0 for latency only")
        if "count" in value and "rate" in value:
            raise _fail(path, "count and rate exclude each other")
        if "after" in value:
            _number(value["after"], f"{path}.after", 0, integer=True, maximum=limits.MAX_INT32)
        if "count" in value:
            _number(value["count"], f"{path}.count", 1, integer=True, maximum=limits.MAX_INT32)
        if "rate" in value:
            _number(value["rate"], f"{path}.rate", 0, maximum=1)
        for key in ("reason", "message", "client"):
            if key in value:
                _string(value[key], f"{path}.{key}")
        if "client" in value and not 0 < len(value["client"]) <= limits.MAX_CLIENT:
            raise _fail(f"{path}.client", f"must be a User-Agent prefix of 1 to {limits.MAX_CLIENT} characters")
        if "latency" in value:
            _seconds(value["latency"], f"{path}.latency")
    elif verb == "watchFault":
        _keys(value, path, ("resource", "fault"), ("delay", "controller", "client"))
        if "client" in value:
            # An external client's watches (`client` a User-Agent prefix): any served resource, or
            # `*` for all of them; the controllers' informers are not touched.
            if "controller" in value:
                raise _fail(path, "client and controller exclude each other")
            if not _string(value["client"], f"{path}.client"):
                raise _fail(f"{path}.client", "must not be empty (a User-Agent prefix, e.g. kopf)")
            if len(value["client"]) > limits.MAX_CLIENT:
                raise _fail(f"{path}.client", f"must be at most {limits.MAX_CLIENT} characters")
            _string(value["resource"], f"{path}.resource", ("*", *WATCHED_RESOURCES))
        else:
            _string(value["resource"], f"{path}.resource", INFORMER_RESOURCES)
        _string(value["fault"], f"{path}.fault", ("pause", "resume", "drop"))
        if "delay" in value:
            _seconds(value["delay"], f"{path}.delay")
        if "controller" in value:
            _string(value["controller"], f"{path}.controller", CONTROLLERS)
    elif verb == "controllerFault":
        if OPERATOR.name in value:
            # An embedded operator (docs/operators.md), named as its module's file without .py:
            # it crashes (its memory and connections gone) and starts again at that instant.
            # Or its handlers become slow: each invocation is charged a seeded virtual duration
            # from 0 to `seconds` (0 lifts it).
            _keys(value, path, (OPERATOR.name, "fault"), ("seconds",))
            name = _string(value[OPERATOR.name], f"{path}.{OPERATOR.name}")
            if not _OPERATOR_NAME.match(name):
                raise _fail(f"{path}.{OPERATOR.name}", "must be an operator's name (its module's file without .py)")
            fault = _string(value["fault"], f"{path}.fault", ("restart", "slow"))
            if fault == "slow":
                if "seconds" not in value:
                    raise _fail(f"{path}.seconds", "is required with fault: slow (the most a handler is slowed by)")
                _number(value["seconds"], f"{path}.seconds", 0, maximum=limits.MAX_HANDLER_SLOWNESS)
            elif "seconds" in value:
                raise _fail(f"{path}.seconds", "only goes with fault: slow")
        else:
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
            _number(target, f"{path}.apiFault", 1, integer=True, maximum=limits.MAX_INT32)


REQUEST_VERBS = ("create", "update", "patch", "delete", "deletecollection")
REQUEST_SUBRESOURCES = ("status", "scale", "binding", "eviction")
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


def _check_duplicates(value: Any, path: str) -> None:
    """A request's `duplicates`: the objects of its body read with a repeated key
    (controlplane.duplicate_keys), each `{path: [key or index…], keys: [key…], lines?: [int…]}`."""
    from controlplane.duplicate_keys import MAX_KEYS, MAX_OBJECTS

    if not isinstance(value, list) or len(value) > MAX_OBJECTS:
        raise _fail(path, f"must be a list of at most {MAX_OBJECTS} objects")
    for i, entry in enumerate(value):
        where = f"{path}[{i}]"
        entry = _mapping(entry, where)
        _keys(entry, where, ("path", "keys"), ("lines",))
        steps, keys = entry["path"], entry["keys"]
        if not isinstance(steps, list) or len(steps) > limits.MAX_OBJECT_DEPTH:
            raise _fail(f"{where}.path", f"must be a list of at most {limits.MAX_OBJECT_DEPTH} keys and indexes")
        if not all(type(step) is str or (type(step) is int and step >= 0) for step in steps):
            raise _fail(f"{where}.path", "holds keys (strings) and list indexes (integers >= 0) only")
        if not isinstance(keys, list) or len(keys) > MAX_KEYS or not all(type(key) is str for key in keys):
            raise _fail(f"{where}.keys", f"must be a list of at most {MAX_KEYS} strings")
        lines = entry.get("lines")
        if lines is not None and (
            not isinstance(lines, list)
            or len(lines) != len(keys)
            or not all(type(line) is int and 0 <= line <= 10**7 for line in lines)
        ):
            raise _fail(f"{where}.lines", "must be a list of line numbers, one per key")


def check_request(value: dict[str, Any], path: str) -> None:
    """The body of a `request` action: one write to the API server, as an HTTP client sent it."""
    from controlplane.apiserver.resources import RESOURCES  # the served resources

    _keys(
        value,
        path,
        ("verb", "resource"),
        ("client", "subresource", "namespace", "name", "body", "patchType", "options", "duplicates"),
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
        raise _fail(f"{path}.body", f"must be a mapping or a list, not {type_name(value['body'])}")
    if "duplicates" in value:
        _check_duplicates(value["duplicates"], f"{path}.duplicates")
    options = _mapping(value.get("options", {}), f"{path}.options")
    _keys(options, f"{path}.options", (), tuple(REQUEST_OPTIONS))
    for key, item in options.items():
        where = f"{path}.options.{key}"
        kind = REQUEST_OPTIONS[key]
        if kind == "policy":
            _string(item, where, PROPAGATION)
        elif kind == "int":  # gracePeriodSeconds: a duration
            _number(item, where, -(2**63), integer=True, maximum=limits.MAX_SECONDS)
        elif kind == "bool":
            _bool(item, where)
        elif kind == "string":
            _string(item, where)
        elif kind == "preconditions":
            _keys(_mapping(item, where), where, (), ("uid", "resourceVersion"))
            for sub, text in item.items():
                _string(text, f"{where}.{sub}")


TOP_KEYS = ("name", "description", "seed", "config", "objects", "actions", "until", "expect", "compare")
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


@dataclass(frozen=True)
class OperatorSource:
    """Where a scenario's `operators[].module` may be read from: anywhere (a file its user runs:
    a path relative to the directory the run starts in), only under `root` (a server's operator
    directory: a path relative to it, never outside it), or nowhere (`allowed` False: a server
    that runs no user code). An operator's module is code the world imports and runs."""

    root: Path | None = None
    allowed: bool = True


ANYWHERE = OperatorSource()
NOWHERE = OperatorSource(allowed=False)


def parse_scenario(data: Any, operators: OperatorSource = ANYWHERE) -> Scenario:
    """The scenario of a parsed file (ScenarioError naming what is wrong); its operators'
    modules read from where `operators` allows."""
    if data is None:
        data = {}
    value = _mapping(data, "")
    _keys(value, "", (), (*TOP_KEYS, OPERATOR.scenario_key))
    scenario = Scenario()
    if "name" in value:
        scenario.name = _string(value["name"], "name")
    if "description" in value:
        scenario.description = _string(value["description"], "description")
    if "seed" in value:
        scenario.seed = check_seed(value["seed"])
    scenario.config = check_config(value.get("config", {}))
    objects = value.get("objects", [])
    if not isinstance(objects, list):
        raise _fail("objects", f"must be a list, not {type_name(objects)}")
    if len(objects) > limits.MAX_OBJECTS:
        raise _fail("objects", f"more than {limits.MAX_OBJECTS} starting objects")
    scenario.objects = [check_manifest(o, f"objects[{i}]") for i, o in enumerate(objects)]
    actions = value.get("actions", [])
    if not isinstance(actions, list):
        raise _fail("actions", f"must be a list, not {type_name(actions)}")
    if len(actions) > limits.MAX_ACTIONS:
        raise _fail("actions", f"more than {limits.MAX_ACTIONS} actions")
    scenario.actions = [check_action(a, f"actions[{i}]") for i, a in enumerate(actions)]
    if OPERATOR.scenario_key in value:
        scenario.operators = check_operators(value[OPERATOR.scenario_key], OPERATOR.scenario_key, operators)
    if "until" in value:
        # 0 is a run of the starting objects and the actions at t=0 only (a session exported
        # before its clock moved).
        scenario.until = float(_number(value["until"], "until", 0, maximum=limits.MAX_SECONDS))
    if "compare" in value:
        scenario.compare = _check_compare(value["compare"], scenario.config)
    if "expect" in value:
        from controlplane.checks import parse_checks  # checks reads the vocabulary above

        parse_checks(value["expect"], scenario.until, sided=scenario.compare is not None)
        scenario.expect = value["expect"]
    _check_objects(scenario.objects)
    _check_timeline(scenario)
    for side in SIDES if scenario.compare is not None else ():
        _check_timeline(for_side(scenario, side), f"compare.{side}.config")
    return scenario


SIDES = ("a", "b")

MAX_OPERATORS = 8  # operators one world hosts
MAX_OPERATOR_NAMESPACES = 100
MAX_SETTING_ITEMS = 100  # fields of one settings section, sections, items of a list value
MAX_SETTING_TEXT = 1024
_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_OPERATOR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,127}$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def check_operators(raw: Any, path: str, source: OperatorSource = ANYWHERE) -> list[dict[str, Any]]:
    """`operators: [{module, namespaces?, userAgent?, settings?}]` (docs/operators.md): each
    `module` a path to an existing .py file (relative to the directory the run starts in), each
    namespace a DNS label, `userAgent` a User-Agent of at most `limits.MAX_CLIENT` characters
    (default `kopf/<module name>`; two operators may not share one), `settings` kopf's
    OperatorSettings as `{section: {field: value}}` with scalar or list-of-scalar values (which
    sections and fields exist is checked when the operator starts, against kopf's own). Under a
    `source` with a root, `module` is relative to that root and stored resolved; a `source` that
    allows none refuses the key before any path is looked at."""
    if not source.allowed:
        raise _fail(
            path,
            "this server runs no operator's code: start it with CTRLSCOPE_OPERATOR_DIR=<directory> to run "
            "the operators whose modules are in that directory (docs/operators.md)",
        )
    if not isinstance(raw, list):
        raise _fail(path, f"must be a list, not {type_name(raw)}")
    if len(raw) > MAX_OPERATORS:
        raise _fail(path, f"at most {MAX_OPERATORS} operators")
    out: list[dict[str, Any]] = []
    agents: set[str] = set()
    names: set[str] = set()
    for i, item in enumerate(raw):
        where = f"{path}[{i}]"
        value = _mapping(item, where)
        _keys(value, where, ("module",), ("namespaces", "userAgent", "settings"))
        module = _string(value["module"], f"{where}.module")
        if not module.endswith(".py") or not 3 < len(module) <= 4096:
            raise _fail(f"{where}.module", f"must be the path of a Python file ending in .py (got {module[:200]!r})")
        if source.root is not None:
            root = source.root.resolve()
            if Path(module).is_absolute() or ".." in Path(module).parts:
                raise _fail(f"{where}.module", "must be a path relative to the server's operator directory")
            found = (root / module).resolve()
            if not found.is_relative_to(root) or not found.is_file():
                raise _fail(f"{where}.module", f"no such file {module[:200]!r} in the server's operator directory")
            module = str(found)
        elif not Path(module).expanduser().is_file():
            raise _fail(
                f"{where}.module", f"no such file {module[:200]!r} (a path relative to the directory the run starts in)"
            )
        entry: dict[str, Any] = {"module": module}
        if "namespaces" in value:
            spaces = value["namespaces"]
            if not isinstance(spaces, list) or len(spaces) > MAX_OPERATOR_NAMESPACES:
                raise _fail(f"{where}.namespaces", f"must be a list of at most {MAX_OPERATOR_NAMESPACES} namespaces")
            for j, name in enumerate(spaces):
                if not isinstance(name, str) or not _DNS_LABEL.match(name):
                    raise _fail(f"{where}.namespaces[{j}]", "must be a namespace name (a DNS label)")
            entry["namespaces"] = list(dict.fromkeys(spaces))
        agent = f"{OPERATOR.component}/{Path(module).stem}"
        if "userAgent" in value:
            agent = _string(value["userAgent"], f"{where}.userAgent")
            if not 0 < len(agent) <= limits.MAX_CLIENT or not agent.isprintable():
                raise _fail(f"{where}.userAgent", f"must be 1 to {limits.MAX_CLIENT} printable characters")
            entry["userAgent"] = agent
        if agent in agents:
            raise _fail(f"{where}.userAgent", f"{agent!r} is another operator's: give each its own")
        agents.add(agent)
        name = Path(module).stem  # what faults and the trace call it
        if name in names:
            raise _fail(f"{where}.module", f"another operator's module is also called {name}.py: rename one")
        names.add(name)
        if "settings" in value:
            entry["settings"] = _check_settings(value["settings"], f"{where}.settings")
        out.append(entry)
    return out


def _check_settings(raw: Any, path: str) -> dict[str, Any]:
    sections = _mapping(raw, path)
    if len(sections) > MAX_SETTING_ITEMS:
        raise _fail(path, f"at most {MAX_SETTING_ITEMS} sections")
    out: dict[str, Any] = {}
    for section, fields in sections.items():
        where = f"{path}.{section}"
        if not _IDENTIFIER.match(section):
            raise _fail(where, "must be the name of a section of kopf's settings (lower case)")
        fields = _mapping(fields, where)
        if len(fields) > MAX_SETTING_ITEMS:
            raise _fail(where, f"at most {MAX_SETTING_ITEMS} fields")
        for name, value in fields.items():
            if not _IDENTIFIER.match(name):
                raise _fail(f"{where}.{name}", "must be the name of a field of kopf's settings (lower case)")
            items = value if isinstance(value, list) else [value]
            if len(items) > MAX_SETTING_ITEMS:
                raise _fail(f"{where}.{name}", f"a list of at most {MAX_SETTING_ITEMS} values")
            for item in items:
                _setting_scalar(item, f"{where}.{name}")
        out[section] = dict(fields)
    return out


def _setting_scalar(value: Any, path: str) -> None:
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int | float):
        _number(value, path, -limits.MAX_SECONDS, maximum=limits.MAX_SECONDS)
        return
    if isinstance(value, str):
        if len(value) > MAX_SETTING_TEXT:
            raise _fail(path, f"must be at most {MAX_SETTING_TEXT} characters")
        return
    raise _fail(path, f"must be a boolean, a number, a string or null (or a list of them), not {type_name(value)}")


def _check_compare(raw: Any, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`compare: {a: {label, config}, b: {label, config}}`: each block is checked as a `config`
    action's body is (the same `check_config` path), then merged over the file's config and
    checked whole (a v1.5-only key under v1.36 names `compare.a.config.<key>`)."""
    value = _mapping(raw, "compare")
    _keys(value, "compare", SIDES, ())
    out: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        where = f"compare.{side}"
        body = _mapping(value[side], where)
        _keys(body, where, ("config",), ("label",))
        label = _string(body["label"], f"{where}.label") if "label" in body else side.upper()
        if not label.strip() or len(label) > MAX_LABEL:
            raise _fail(f"{where}.label", f"must be 1 to {MAX_LABEL} characters")
        block = check_config(body["config"], f"{where}.config", partial=True)
        check_config_versions(merge_config(config, block), f"{where}.config")
        out[side] = {"label": label, "config": block}
    return out


MAX_LABEL = 80  # characters of a side's label (shown in tables and on the page)


def for_side(scenario: Scenario, side: str) -> Scenario:
    """The scenario as side `side` of its `compare` block runs it: that side's config merged over
    the file's (as a `config` action merges), judging the unsided checks and that side's.
    ScenarioError (naming `--side`) when the file has no `compare` block or no such side."""
    if scenario.compare is None:
        raise ScenarioError(f"--side: {scenario.name!r} has no compare block (compare: {{a: ..., b: ...}})")
    if side not in scenario.compare:
        raise ScenarioError(f"--side: must be one of {', '.join(SIDES)} (got {side!r})")
    config = merge_config(scenario.config, scenario.compare[side]["config"])
    return replace(scenario, config=config, side=side)


CLUSTER_SCOPED_KINDS = ("Node", "Namespace")
OWNER_KINDS = REGISTRY.kinds()  # the controllers' kinds: a manifest of one asks for spec.replicas pods


def _object_key(manifest: dict[str, Any], namespace: Any = None) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of a manifest with a literal name; None when it has none (or
    a field of the wrong type, which the API server refuses)."""
    kind = manifest.get("kind")
    meta = manifest.get("metadata")
    if not isinstance(kind, str) or not isinstance(meta, dict):
        return None
    name = meta.get("name")
    if namespace is None:
        namespace = meta.get("namespace") or "default"
    if not isinstance(name, str) or not name or not isinstance(namespace, str):
        return None
    return kind, "" if kind in CLUSTER_SCOPED_KINDS else namespace, name


def _check_objects(objects: list[dict[str, Any]]) -> None:
    """Starting objects are created in order, so each names a distinct object, and an owner
    reference to a kind the simulation serves can only point at an object listed before it (its
    uid is filled in at start: uids are the API server's to assign, so the file cannot know
    them). A reference to another kind (a Job, a Deployment) is kept as written: its owner lives
    outside the simulated world, and the garbage collector leaves such pods alone."""
    seen: dict[tuple[str, str, str], int] = {}
    for i, manifest in enumerate(objects):
        key = _object_key(manifest)
        if key is not None:
            if key in seen:
                kind, namespace, name = key
                where = f" in namespace {namespace}" if namespace else ""
                raise _fail(
                    f"objects[{i}].metadata.name", f'duplicate: objects[{seen[key]}] is the same {kind} "{name}"{where}'
                )
            seen[key] = i
        refs = manifest["metadata"].get("ownerReferences")
        if not isinstance(refs, list):
            continue  # absent, or the API server refuses its type
        namespace = key[1] if key is not None else manifest["metadata"].get("namespace") or "default"
        for j, ref in enumerate(refs):
            where = f"objects[{i}].metadata.ownerReferences[{j}]"
            if (
                not isinstance(ref, dict)
                or not isinstance(ref.get("kind"), str)
                or not isinstance(ref.get("name"), str)
            ):
                continue  # the API server refuses it with the field named
            if ref["kind"] not in KINDS:
                continue  # a kind the simulation does not serve stands for an object outside it
            if "uid" in ref:
                raise _fail(
                    f"{where}.uid",
                    "cannot be known before the run (the API server assigns uids): leave it out, it is filled in "
                    "from the object named",
                )
            owner = (ref["kind"], "" if ref["kind"] in CLUSTER_SCOPED_KINDS else namespace, ref["name"])
            if owner not in seen or seen[owner] >= i:
                raise _fail(where, f'{ref["kind"]} "{ref["name"]}" is not among the objects listed before this one')


def _timeline_order(actions: list[dict[str, Any]]) -> list[int]:
    """Indexes of `actions` in the order a run applies them: by `at`, ties in file order."""
    return sorted(range(len(actions)), key=lambda i: (float(actions[i]["at"]), i))


def _verb(action: dict[str, Any]) -> str:
    return next(k for k in action if k != "at")


def _check_timeline(scenario: Scenario, under: str = "") -> None:
    """Faults that name what the file never has: a node beyond every node count it configures,
    a controller it does not run, an `apiFault` rule not injected before. (What depends on the
    run — a pod's name, an object deleted meanwhile — is a failed action at run time instead.)
    `under` names the compare side whose config is checked (`compare.a.config`), if any."""
    timeline = TimelineCheck(scenario.config, under)
    for i in _timeline_order(scenario.actions):
        timeline.check(scenario.actions[i], f"actions[{i}]")
        timeline.note(scenario.actions[i])


class TimelineCheck:
    """What `_check_timeline` knows at a point of a timeline — the most nodes configured by then,
    the `apiFault` rules injected by then, the controllers that run — and its check of the next
    action. A live session keeps one (`Simulation.check_replayable`), fed each action it logs,
    so that an action its replay would refuse is refused when it is taken."""

    VERBS = ("nodeFault", "liftFault", "watchFault", "controllerFault", "sync")  # the verbs it checks

    def __init__(self, config: dict[str, Any], under: str = "") -> None:
        self.nodes: int = config["nodes"]
        self.controllers: list[str] = config["controllers"]
        self.api_faults = 0
        self.under = under

    def copy(self) -> TimelineCheck:
        twin = TimelineCheck({"nodes": self.nodes, "controllers": self.controllers}, self.under)
        twin.api_faults = self.api_faults
        return twin

    def note(self, action: dict[str, Any]) -> None:
        """`action` is applied (or logged as failed: a replay applies it again)."""
        verb = _verb(action)
        body = action[verb]
        if verb == "config" and "nodes" in body:
            self.nodes = max(self.nodes, body["nodes"])
        elif verb == "apiFault":
            self.api_faults += 1

    def check(self, action: dict[str, Any], path: str = "") -> None:
        """ScenarioError (the field under `path`) if `action`, next, names what is not there."""
        verb = _verb(action)
        body = action[verb]
        where = f"{path}.{verb}" if path else verb
        if verb == "nodeFault":
            name = body["name"]
            number = name[5:] if name.startswith("node-") else ""
            if not (number.isdigit() and number == str(int(number)) and 1 <= int(number) <= self.nodes):
                have = f"the nodes are node-1 to node-{self.nodes}" if self.nodes else "this scenario has no nodes"
                under_text = f" under {self.under}" if self.under else ""
                raise _fail(f"{where}.name", f'no node "{name}" ({have} by then{under_text})')
        elif verb == "liftFault":
            target = body["apiFault"]
            if target != "all" and target > self.api_faults:
                raise _fail(f"{where}.apiFault", f"no apiFault rule {target} (only {self.api_faults} injected by then)")
        if verb in ("watchFault", "controllerFault", "sync"):
            controller = body.get("controller")
            if controller is not None and controller not in self.controllers:
                raise _fail(
                    f"{where}.controller",
                    f"the {controller} controller does not run in this scenario (config.controllers)",
                )


def _replicas(manifest: Any) -> int | None:
    """The replicas a ReplicaSet/RC manifest asks for (1 when unset, as defaulting gives), or
    None for other kinds; a value of the wrong type counts 0 (the API server refuses it)."""
    if not isinstance(manifest, dict) or manifest.get("kind") not in OWNER_KINDS:
        return None
    spec = manifest.get("spec")
    replicas = spec.get("replicas") if isinstance(spec, dict) else None
    if replicas is None:
        return 1
    if not isinstance(replicas, int) or isinstance(replicas, bool) or not 0 < replicas <= limits.MAX_INT32:
        return 0  # the API server refuses what is not an int32
    return replicas


@dataclass
class Demand:
    """The most pods and nodes a scenario asks for at once, and the field that asks for the
    most (where the running total first reached its peak)."""

    pods: int = 0
    pods_field: str = ""
    nodes: int = 0
    nodes_field: str = "config.nodes"


def demand(scenario: Scenario) -> Demand:
    """Pods: each ReplicaSet/RC counted at the largest `replicas` it is ever given (objects,
    `apply`, `scale`, a `patch` of spec.replicas), summed, plus every bare Pod manifest — an
    upper bound on the live pods the controllers aim for. Nodes: the largest `nodes` configured."""
    pods = PodDemand()
    out = Demand(nodes=scenario.config["nodes"])

    def peak(where: str) -> None:
        if pods.total > out.pods:
            out.pods, out.pods_field = pods.total, where

    for i, obj in enumerate(scenario.objects):
        peak(pods.manifest(obj, f"objects[{i}]"))
    for i in _timeline_order(scenario.actions):
        action = scenario.actions[i]
        peak(pods.action(action, f"actions[{i}]"))
        verb = _verb(action)
        if verb == "config" and action[verb].get("nodes", 0) > out.nodes:
            out.nodes, out.nodes_field = action[verb]["nodes"], f"actions[{i}].{verb}.nodes"
    return out


class PodDemand:
    """`demand`'s count of pods, one manifest or action at a time: `total` is the sum over
    ReplicaSets/RCs of the largest `replicas` each is given, plus the bare Pod manifests. It only
    grows, and in any order the same things give the same total. A live session keeps one
    (`Simulation.check_replayable`), so that a live action its replay would refuse (the replayed
    file asking for more pods than the run's ceiling) is refused when it is taken."""

    def __init__(self) -> None:
        self.owners: dict[tuple[str, str, str], int] = {}
        self.total = 0

    def manifest(self, body: Any, where: str) -> str:
        """Count a manifest (a starting object, an `apply`); the field that asks, for messages."""
        asks = _manifest_asks(body, where)
        if asks is not None:
            self.total = self.total_with(asks)
            if asks[0] is not None:
                self.owners[asks[0]] = max(asks[1], self.owners.get(asks[0], 0))
            return asks[2]
        return where

    def action(self, action: dict[str, Any], path: str = "") -> str:
        """Count an action (well formed: `check_action`); the field that asks, for messages."""
        verb = _verb(action)
        where = f"{path}.{verb}" if path else verb
        if verb == "apply":
            return self.manifest(action[verb], where)
        asks = _action_asks(action, where)
        if asks is None:
            return where
        self.total = self.total_with(asks)
        if asks[0] is not None:
            self.owners[asks[0]] = max(asks[1], self.owners.get(asks[0], 0))
        return asks[2]

    def total_with(self, asks: Asks) -> int:
        """The total once `asks` is counted too (nothing is counted)."""
        key, replicas, _ = asks
        if key is None:
            return self.total + 1
        return self.total + max(0, replicas - self.owners.get(key, 0))

    def asks(self, action: dict[str, Any]) -> Asks | None:
        """What the well-formed `action` asks for (an owner and its replicas, or a bare pod, and
        the field), or None when it asks for no pods."""
        verb = _verb(action)
        if verb == "apply":
            return _manifest_asks(action[verb], verb)
        return _action_asks(action, verb)


# What a manifest or an action asks for: (the ReplicaSet/RC, or None for a bare pod; replicas; the field).
Asks = tuple[tuple[str, str, str] | None, int, str]


def _manifest_asks(body: Any, where: str) -> Asks | None:
    replicas = _replicas(body)
    if replicas is not None:
        key = _object_key(body)
        return None if key is None else (key, replicas, f"{where}.spec.replicas")
    if isinstance(body, dict) and body.get("kind") == "Pod":
        return None, 1, where
    return None


def _action_asks(action: dict[str, Any], where: str) -> Asks | None:
    verb = _verb(action)
    body = action[verb]
    if verb not in ("scale", "patch") or body["kind"] not in OWNER_KINDS:
        return None
    key = (body["kind"], body.get("namespace", "default"), body["name"])
    if verb == "scale":
        return key, body["replicas"], f"{where}.replicas"
    spec = body["patch"].get("spec")
    replicas = spec.get("replicas") if isinstance(spec, dict) else None
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas <= limits.MAX_INT32:
        return key, replicas, f"{where}.patch.spec.replicas"
    return None


def load_scenario(text: str, operators: OperatorSource = ANYWHERE) -> Scenario:
    """The scenario of a YAML text (ScenarioError naming what is wrong); its operators' modules
    read from where `operators` allows (`parse_scenario`)."""
    try:
        data, duplicates = collect_duplicates(safeyaml.load(text, duplicates=True))
    except safeyaml.YAMLInputError as exc:
        raise ScenarioError(str(exc)) from None
    if duplicates:
        _refuse_duplicates(data, duplicates)
    if data is None:  # empty, or only comments: surely not what the author meant to run
        raise ScenarioError("the file is empty: a scenario is a YAML mapping (name, config, objects, actions, until)")
    return parse_scenario(data, operators)


def _refuse_duplicates(data: Any, duplicates: list[dict[str, Any]]) -> None:
    """A repeated key is a file error. In a starting object it is the API server's Strict
    refusal (`objects[0]: ReplicaSet … strict decoding error: yaml: unmarshal errors: line 12: key
    "replicas" already set in map`), as an unknown field there is; elsewhere it names the key."""
    from controlplane.apiserver.decode import duplicate_fields_error

    objects = data.get("objects") if isinstance(data, dict) else None
    for entry in duplicates:
        path = entry["path"]
        if len(path) >= 2 and path[0] == "objects" and isinstance(objects, list) and type(path[1]) is int:
            index = path[1]
            own = [{**e, "path": e["path"][2:]} for e in duplicates if e["path"][:2] == ["objects", index]]
            error = duplicate_fields_error(objects[index], own)
            if error is not None:
                raise ScenarioError(f"objects[{index}]: {error}".replace("\n  ", " "))  # one line
        keys, lines = entry["keys"], entry.get("lines") or []
        seen: set[str] = set()
        for i, key in enumerate(keys):
            if key in seen:
                where = "".join(f"[{step}]" if type(step) is int else f".{step}" for step in path).lstrip(".")
                line = f" (line {lines[i]})" if i < len(lines) else ""
                raise ScenarioError(
                    f'{where}: duplicate key "{key}"{line}' if where else f'duplicate key "{key}"{line}'
                )
            seen.add(key)


def resolve(name_or_path: str) -> Path:
    """A path, or the name of a shipped scenario (`demo` → controlplane/scenarios/demo.scenario.yaml)."""
    path = Path(name_or_path)
    shown = name_or_path if name_or_path.isprintable() else repr(name_or_path[:100])
    try:
        is_file, is_dir, exists = path.is_file(), path.is_dir(), path.exists()
        shipped = None
        if not exists and "/" not in name_or_path:
            shipped = next(
                (
                    candidate
                    for suffix in SCENARIO_SUFFIXES
                    if (candidate := SCENARIO_DIR / f"{name_or_path}{suffix}").is_file()
                ),
                None,
            )
    except (OSError, ValueError) as exc:  # a name the OS cannot take (too long, a NUL byte)
        raise ScenarioError(f"{name_or_path[:100]!r}: not a usable file name ({exc})") from None
    if is_file:
        return path
    if is_dir:
        raise ScenarioError(f"{shown}: is a directory, not a scenario file")
    if exists:
        raise ScenarioError(f"{shown}: not a regular file")
    if shipped is not None:
        return shipped
    raise ScenarioError(f"{shown}: no such file, and no shipped scenario of that name")


def read_text(path: Path) -> str:
    """A scenario file's text: at most limits.MAX_SCENARIO_BYTES of UTF-8 (a BOM is allowed)."""
    try:
        with path.open("rb") as f:
            data = f.read(limits.MAX_SCENARIO_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(f"{path}: {exc.strerror}") from None
    if len(data) > limits.MAX_SCENARIO_BYTES:
        raise ScenarioError(f"{path}: larger than {limits.MAX_SCENARIO_BYTES // (1024 * 1024)} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            f"{path}: not a UTF-8 text file (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def load_file(name_or_path: str) -> Scenario:
    return load_scenario(read_text(resolve(name_or_path)))


def library() -> list[dict[str, str]]:
    """The shipped scenarios: id (file name without its suffix), title, description, and for a
    file with a `compare` block its two labels (`compare_a`, `compare_b`; empty otherwise)."""
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml"), key=scenario_id):
        scenario = load_scenario(read_text(path))
        pair = scenario.compare or {}
        out.append(
            {
                "id": scenario_id(path),
                "name": scenario.name,
                "description": scenario.description,
                "compare_a": pair["a"]["label"] if pair else "",
                "compare_b": pair["b"]["label"] if pair else "",
            }
        )
    return out

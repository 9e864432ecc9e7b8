"""Decoding request bodies into the served kinds' Go types: the type check that comes before
anything else reads a body (upstream: the JSON serializer decoding into the versioned struct).

Guarantees
----------
* `check_body(info, body)` raises `ApiError` unless `body` would decode into the kind's Go type:
  a field typed int32 holds an integer in int32's range (not 1.5, not "three", not true), a
  string field a string, a struct field an object, a list field a list, map values their type,
  timestamps RFC 3339 strings, quantities strings or numbers in Quantity's syntax. JSON null
  is accepted for a struct field (Go leaves the zero value) but refused as the value of a typed
  map or the element of a typed list (Go would store "" or an empty struct; refusing it keeps a
  None out of every label set and container list). The answer is upstream's 400 BadRequest,
  `ReplicaSet in version "v1" cannot be handled as a ReplicaSet: json: cannot unmarshal string
  into Go struct field ReplicaSetSpec.spec.replicas of type int32`, with one cause per field
  (`reason: FieldValueTypeInvalid`, `field: spec.replicas` with list indexes) — upstream's
  decode errors carry no causes; ctrlscope adds them so a UI can point at every bad field.
* Unknown and duplicate fields (strict decoding, sigs.k8s.io/json): a key that is not a field of
  its Go struct is not a cause; `check_body` / `check_patched` return upstream's strict errors in
  document order (`unknown field "spec.replcas"`, `duplicate field "spec.replicas"` for a field
  met twice in a body read with repeated keys — duplicate_keys.py —, `line 12: key "replicas"
  already set in map` for a YAML body's repeats) for the API server to refuse, warn about or
  drop (`fieldValidation`), and `prune` returns the body without the unknown ones, so an
  unknown field is never stored (of a repeated key the last value is kept, as Go does). Inside
  a struct the simulator does not model (`map[string]interface {}`: probes, affinity, …) every
  key is kept as sent.
* Every value, typed or not, is JSON: string keys, finite numbers,
  integers within 64 bits, nesting of at most `MAX_OBJECT_DEPTH`, and about
  `MAX_REQUEST_BYTES` of JSON at most (413 RequestEntityTooLarge beyond, as kube-apiserver's
  body limit). The walk is iterative and stops at the first limit, so a body that is deep,
  cyclic or an alias bomb costs no more than the limit to refuse.
* `check_patch_body(body)` applies the JSON rules (not the types) to a patch before it is
  applied; `check_patched(info, obj)` types the patched object and answers as upstream's patch
  handler does: 422 with a single `patch` cause holding the patched object and the decode error.
* Cheap on the hot path: a pod spec (shared by every pod of a template) is checked once per
  spec object, remembered by identity and guarded by a snapshot, as strategy.py's spec memo.
  `check_body` first tries a recursive fast path (`_accept`) that accepts only well-typed bodies
  and counts the walk's size by the walk's rules; anything else goes through the walk, which
  alone builds answers and causes (tests/controlplane/test_decode_fast_path.py holds them to it).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from controlplane.apiserver.errors import REASON_BAD_REQUEST, ApiError, invalid
from controlplane.apiserver.resources import ResourceInfo, for_kind
from controlplane.apiserver.validation import (
    DNS_POLICIES,
    PORT_PROTOCOLS,
    PULL_POLICIES,
    RESTART_POLICIES,
    TERMINATION_MESSAGE_POLICIES,
)
from controlplane.apiserver.validation import invalid as invalid_cause
from controlplane.duplicate_keys import DuplicateKeys, mark
from controlplane.kernel import parse_rfc3339
from controlplane.limits import MAX_OBJECT_DEPTH, MAX_REQUEST_BYTES

Obj = dict[str, Any]

FIELD_VALUE_TYPE_INVALID: Final = "FieldValueTypeInvalid"
MAX_CAUSES: Final = 20

# Kinds of type (the `code` of a `GoType`).
_ANY, _OBJECT, _STRING, _BOOL, _INT, _TIME, _QUANTITY, _LIST, _MAP, _STRUCT = range(10)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT_LIMIT = 2**64  # an untyped integer beyond 64 bits is not a JSON number Go could read
# resource.Quantity's serialisation regex (quantity.go splitREString), anchored.
_QUANTITY_RE: Final = re.compile(r"[+-]?[0-9.]+[eEinumkKMGTP]*[-+]?[0-9]*")
_QUANTITY_ERROR: Final = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


class GoType:
    """One Go type as the decoder sees it: its kind, its name in messages and, for lists,
    maps and structs, the element type or the fields. The same table is the OpenAPI schema
    (controlplane/apiserver/openapi.py): a struct's `package` and `name` make its upstream
    schema name (`io.k8s.api.core.v1.Pod`), `required` lists the fields upstream's schema
    requires, `enum` the values a string field may take (the ones validation.py enforces)."""

    __slots__ = ("bits", "code", "enum", "fields", "item", "memo", "name", "package", "required")

    def __init__(
        self,
        code: int,
        name: str,
        *,
        item: GoType | None = None,
        fields: dict[str, GoType] | None = None,
        bits: int = 0,
        memo: bool = False,
        package: str = "",
        required: tuple[str, ...] = (),
        enum: tuple[str, ...] = (),
    ) -> None:
        self.code = code
        self.name = name
        self.item = item
        self.fields = fields or {}
        self.bits = bits
        self.memo = memo  # check values by identity once (see _Memo)
        self.package = package
        self.required = required
        self.enum = enum


# Upstream's Go packages, as OpenAPI names them.
CORE_V1: Final = "io.k8s.api.core.v1"
APPS_V1: Final = "io.k8s.api.apps.v1"
AUTOSCALING_V1: Final = "io.k8s.api.autoscaling.v1"
POLICY_V1: Final = "io.k8s.api.policy.v1"
META_V1: Final = "io.k8s.apimachinery.pkg.apis.meta.v1"


def _struct(
    name: str,
    fields: dict[str, GoType],
    *,
    memo: bool = False,
    package: str = CORE_V1,
    required: tuple[str, ...] = (),
) -> GoType:
    assert all(field in fields for field in required), (name, required)
    return GoType(_STRUCT, name, fields=fields, memo=memo, package=package, required=required)


def _enum(values: list[str]) -> GoType:
    """A string field whose values validation.py checks against `values` (decoding takes any string)."""
    return GoType(_STRING, "string", enum=tuple(values))


def _list(item: GoType) -> GoType:
    name = f"v1.{item.name}" if item.code == _STRUCT else item.name
    return GoType(_LIST, f"[]{name}", item=item)


def _map(item: GoType, name: str | None = None) -> GoType:
    return GoType(_MAP, name or f"map[string]{item.name}", item=item)


ANY = GoType(_ANY, "interface {}")
# intstr.IntOrString (maxSurge, maxUnavailable): an int or a string; validation.py checks it.
INT_OR_STRING = GoType(_ANY, "intstr.IntOrString")
OBJECT = GoType(_OBJECT, "map[string]interface {}")  # a struct the simulator does not model
STRING = GoType(_STRING, "string")
BOOL = GoType(_BOOL, "bool")
INT32 = GoType(_INT, "int32", bits=32)
INT64 = GoType(_INT, "int64", bits=64)
TIME = GoType(_TIME, "v1.Time")
MICRO_TIME = STRING  # metav1.MicroTime: a string (its format is not checked)
QUANTITY = GoType(_QUANTITY, "resource.Quantity")
STRINGS = _list(STRING)
STRING_MAP = _map(STRING)
RESOURCE_LIST = _map(QUANTITY, "v1.ResourceList")
ANY_LIST = _list(ANY)

# -- the served kinds (k8s.io/api core/v1, apps/v1, autoscaling/v1, meta/v1) -------------------

OWNER_REFERENCE = _struct(
    "OwnerReference",
    {
        "apiVersion": STRING,
        "kind": STRING,
        "name": STRING,
        "uid": STRING,
        "controller": BOOL,
        "blockOwnerDeletion": BOOL,
    },
    package=META_V1,
    required=("apiVersion", "kind", "name", "uid"),
    memo=True,  # a controller's creates of one sync share one reference
)
OBJECT_META = _struct(
    "ObjectMeta",
    {
        "name": STRING,
        "generateName": STRING,
        "namespace": STRING,
        "selfLink": STRING,
        "uid": STRING,
        "resourceVersion": STRING,
        "generation": INT64,
        "creationTimestamp": TIME,
        "deletionTimestamp": TIME,
        "deletionGracePeriodSeconds": INT64,
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
        "ownerReferences": _list(OWNER_REFERENCE),
        "finalizers": STRINGS,
        "managedFields": ANY_LIST,
    },
    package=META_V1,
)
OBJECT_REFERENCE = _struct(
    "ObjectReference",
    {
        "kind": STRING,
        "namespace": STRING,
        "name": STRING,
        "uid": STRING,
        "apiVersion": STRING,
        "resourceVersion": STRING,
        "fieldPath": STRING,
    },
)
LABEL_SELECTOR = _struct(
    "LabelSelector",
    {
        "matchLabels": STRING_MAP,
        "matchExpressions": _list(
            _struct(
                "LabelSelectorRequirement",
                {"key": STRING, "operator": STRING, "values": STRINGS},
                package=META_V1,
                required=("key", "operator"),
            )
        ),
    },
    package=META_V1,
)
CONTAINER = _struct(
    "Container",
    {
        "name": STRING,
        "image": STRING,
        "command": STRINGS,
        "args": STRINGS,
        "workingDir": STRING,
        "ports": _list(
            _struct(
                "ContainerPort",
                {
                    "name": STRING,
                    "hostPort": INT32,
                    "containerPort": INT32,
                    "protocol": _enum(PORT_PROTOCOLS),
                    "hostIP": STRING,
                },
                required=("containerPort",),
            )
        ),
        "envFrom": ANY_LIST,
        "env": _list(_struct("EnvVar", {"name": STRING, "value": STRING, "valueFrom": OBJECT}, required=("name",))),
        "resources": _struct(
            "ResourceRequirements", {"limits": RESOURCE_LIST, "requests": RESOURCE_LIST, "claims": ANY_LIST}
        ),
        "resizePolicy": ANY_LIST,
        "restartPolicy": STRING,
        "volumeMounts": ANY_LIST,
        "volumeDevices": ANY_LIST,
        "livenessProbe": OBJECT,
        "readinessProbe": OBJECT,
        "startupProbe": OBJECT,
        "lifecycle": OBJECT,
        "terminationMessagePath": STRING,
        "terminationMessagePolicy": _enum(TERMINATION_MESSAGE_POLICIES),
        "imagePullPolicy": _enum(PULL_POLICIES),
        "securityContext": OBJECT,
        "stdin": BOOL,
        "stdinOnce": BOOL,
        "tty": BOOL,
    },
    required=("name",),
)
TOLERATION = _struct(
    "Toleration",
    {"key": STRING, "operator": STRING, "value": STRING, "effect": STRING, "tolerationSeconds": INT64},
)
POD_SPEC = _struct(
    "PodSpec",
    {
        "volumes": ANY_LIST,
        "initContainers": _list(CONTAINER),
        "containers": _list(CONTAINER),
        "ephemeralContainers": ANY_LIST,
        "restartPolicy": _enum(RESTART_POLICIES),
        "terminationGracePeriodSeconds": INT64,
        "activeDeadlineSeconds": INT64,
        "dnsPolicy": _enum(DNS_POLICIES),
        "nodeSelector": STRING_MAP,
        "serviceAccountName": STRING,
        "serviceAccount": STRING,
        "automountServiceAccountToken": BOOL,
        "nodeName": STRING,
        "hostNetwork": BOOL,
        "hostPID": BOOL,
        "hostIPC": BOOL,
        "shareProcessNamespace": BOOL,
        "securityContext": OBJECT,
        "imagePullSecrets": ANY_LIST,
        "hostname": STRING,
        "subdomain": STRING,
        "affinity": OBJECT,
        "schedulerName": STRING,
        "tolerations": _list(TOLERATION),
        "hostAliases": ANY_LIST,
        "priorityClassName": STRING,
        "priority": INT32,
        "dnsConfig": OBJECT,
        "readinessGates": ANY_LIST,
        "runtimeClassName": STRING,
        "enableServiceLinks": BOOL,
        "preemptionPolicy": STRING,
        "overhead": RESOURCE_LIST,
        "topologySpreadConstraints": ANY_LIST,
        "setHostnameAsFQDN": BOOL,
        "os": OBJECT,
        "hostUsers": BOOL,
        "schedulingGates": _list(_struct("PodSchedulingGate", {"name": STRING}, required=("name",))),
        "resourceClaims": ANY_LIST,
        "resources": OBJECT,
    },
    required=("containers",),
    memo=True,
)
POD_TEMPLATE_SPEC = _struct("PodTemplateSpec", {"metadata": OBJECT_META, "spec": POD_SPEC})


def _condition(
    name: str, *times: str, memo: bool = False, package: str = CORE_V1, required: tuple[str, ...] = ("type", "status")
) -> GoType:
    fields = {"type": STRING, "status": STRING, "reason": STRING, "message": STRING, "observedGeneration": INT64}
    fields.update({key: TIME for key in times})
    return _list(_struct(name, fields, memo=memo, package=package, required=required))


CONTAINER_STATE = _struct(
    "ContainerState",
    {
        "waiting": _struct("ContainerStateWaiting", {"reason": STRING, "message": STRING}),
        "running": _struct("ContainerStateRunning", {"startedAt": TIME}),
        "terminated": _struct(
            "ContainerStateTerminated",
            {
                "exitCode": INT32,
                "signal": INT32,
                "reason": STRING,
                "message": STRING,
                "startedAt": TIME,
                "finishedAt": TIME,
                "containerID": STRING,
            },
            required=("exitCode",),
        ),
    },
    memo=True,  # the kubelet shares one state dict among the containers started in one second
)
CONTAINER_STATUS = _struct(
    "ContainerStatus",
    {
        "name": STRING,
        "state": CONTAINER_STATE,
        "lastState": CONTAINER_STATE,
        "ready": BOOL,
        "restartCount": INT32,
        "image": STRING,
        "imageID": STRING,
        "containerID": STRING,
        "started": BOOL,
    },
    required=("name", "ready", "restartCount", "image", "imageID"),
)
POD_STATUS = _struct(
    "PodStatus",
    {
        "observedGeneration": INT64,
        "phase": STRING,
        # Memoised: a status write sends the kubelet's shared condition dicts again and again.
        "conditions": _condition("PodCondition", "lastProbeTime", "lastTransitionTime", memo=True),
        "message": STRING,
        "reason": STRING,
        "nominatedNodeName": STRING,
        "hostIP": STRING,
        "hostIPs": _list(_struct("HostIP", {"ip": STRING}, memo=True, required=("ip",))),  # one list per node
        "podIP": STRING,
        "podIPs": _list(_struct("PodIP", {"ip": STRING}, required=("ip",))),
        "startTime": TIME,
        "initContainerStatuses": _list(CONTAINER_STATUS),
        "containerStatuses": _list(CONTAINER_STATUS),
        "qosClass": STRING,
        "ephemeralContainerStatuses": ANY_LIST,
        "resize": STRING,
    },
)


def _kind(name: str, fields: dict[str, GoType], *, package: str = CORE_V1, required: tuple[str, ...] = ()) -> GoType:
    meta = {"apiVersion": STRING, "kind": STRING, "metadata": OBJECT_META}
    return _struct(name, {**meta, **fields}, package=package, required=required)


def _replicas_status(name: str, condition: str, package: str, condition_required: tuple[str, ...]) -> GoType:
    return _struct(
        name,
        {
            "replicas": INT32,
            "fullyLabeledReplicas": INT32,
            "readyReplicas": INT32,
            "availableReplicas": INT32,
            "terminatingReplicas": INT32,
            "observedGeneration": INT64,
            "conditions": _condition(condition, "lastTransitionTime", package=package, required=condition_required),
        },
        package=package,
        required=("replicas",),
    )


KINDS: dict[str, GoType] = {
    "pods": _kind("Pod", {"spec": POD_SPEC, "status": POD_STATUS}),
    "replicasets": _kind(
        "ReplicaSet",
        {
            "spec": _struct(
                "ReplicaSetSpec",
                {
                    "replicas": INT32,
                    "minReadySeconds": INT32,
                    "selector": LABEL_SELECTOR,
                    "template": POD_TEMPLATE_SPEC,
                },
                package=APPS_V1,
                required=("selector",),
            ),
            "status": _replicas_status("ReplicaSetStatus", "ReplicaSetCondition", APPS_V1, ()),
        },
        package=APPS_V1,
        required=("spec",),
    ),
    "deployments": _kind(
        "Deployment",
        {
            "spec": _struct(
                "DeploymentSpec",
                {
                    "replicas": INT32,
                    "selector": LABEL_SELECTOR,
                    "template": POD_TEMPLATE_SPEC,
                    "strategy": _struct(
                        "DeploymentStrategy",
                        {
                            "type": STRING,
                            "rollingUpdate": _struct(
                                "RollingUpdateDeployment",
                                {"maxUnavailable": INT_OR_STRING, "maxSurge": INT_OR_STRING},
                                package=APPS_V1,
                            ),
                        },
                        package=APPS_V1,
                    ),
                    "minReadySeconds": INT32,
                    "revisionHistoryLimit": INT32,
                    "paused": BOOL,
                    "progressDeadlineSeconds": INT32,
                },
                package=APPS_V1,
                required=("selector", "template"),
            ),
            "status": _struct(
                "DeploymentStatus",
                {
                    "observedGeneration": INT64,
                    "replicas": INT32,
                    "updatedReplicas": INT32,
                    "readyReplicas": INT32,
                    "availableReplicas": INT32,
                    "unavailableReplicas": INT32,
                    "terminatingReplicas": INT32,
                    "conditions": _list(
                        _struct(
                            "DeploymentCondition",
                            {
                                "type": STRING,
                                "status": STRING,
                                "lastUpdateTime": TIME,
                                "lastTransitionTime": TIME,
                                "reason": STRING,
                                "message": STRING,
                            },
                            package=APPS_V1,
                        )
                    ),
                    "collisionCount": INT32,
                },
                package=APPS_V1,
            ),
        },
        package=APPS_V1,
        required=("spec",),
    ),
    "replicationcontrollers": _kind(
        "ReplicationController",
        {
            "spec": _struct(
                "ReplicationControllerSpec",
                {"replicas": INT32, "minReadySeconds": INT32, "selector": STRING_MAP, "template": POD_TEMPLATE_SPEC},
            ),
            "status": _replicas_status(
                "ReplicationControllerStatus", "ReplicationControllerCondition", CORE_V1, ("type", "status")
            ),
        },
    ),
    "nodes": _kind(
        "Node",
        {
            "spec": _struct(
                "NodeSpec",
                {
                    "podCIDR": STRING,
                    "podCIDRs": STRINGS,
                    "providerID": STRING,
                    "unschedulable": BOOL,
                    "taints": _list(
                        _struct(
                            "Taint",
                            {"key": STRING, "value": STRING, "effect": STRING, "timeAdded": TIME},
                            required=("key", "effect"),
                        )
                    ),
                    "configSource": OBJECT,
                    "externalID": STRING,
                },
            ),
            "status": _struct(
                "NodeStatus",
                {
                    "capacity": RESOURCE_LIST,
                    "allocatable": RESOURCE_LIST,
                    "phase": STRING,
                    "conditions": _condition("NodeCondition", "lastHeartbeatTime", "lastTransitionTime"),
                    "addresses": _list(
                        _struct("NodeAddress", {"type": STRING, "address": STRING}, required=("type", "address"))
                    ),
                    "daemonEndpoints": OBJECT,
                    "nodeInfo": OBJECT,
                    "images": ANY_LIST,
                    "volumesInUse": STRINGS,
                    "volumesAttached": ANY_LIST,
                    "config": OBJECT,
                    "runtimeHandlers": ANY_LIST,
                    "features": OBJECT,
                },
            ),
        },
    ),
    "namespaces": _kind(
        "Namespace",
        {
            "spec": _struct("NamespaceSpec", {"finalizers": STRINGS}),
            "status": _struct("NamespaceStatus", {"phase": STRING, "conditions": ANY_LIST}),
        },
    ),
    "events": _kind(
        "Event",
        {
            "involvedObject": OBJECT_REFERENCE,
            "reason": STRING,
            "message": STRING,
            "source": _struct("EventSource", {"component": STRING, "host": STRING}),
            "firstTimestamp": TIME,
            "lastTimestamp": TIME,
            "count": INT32,
            "type": STRING,
            "eventTime": MICRO_TIME,
            "series": _struct("EventSeries", {"count": INT32, "lastObservedTime": MICRO_TIME}),
            "action": STRING,
            "related": OBJECT_REFERENCE,
            "reportingComponent": STRING,
            "reportingInstance": STRING,
        },
        required=("metadata", "involvedObject"),
    ),
}
SCALE = _kind(
    "Scale",
    {
        "spec": _struct("ScaleSpec", {"replicas": INT32}, package=AUTOSCALING_V1),
        "status": _struct(
            "ScaleStatus", {"replicas": INT32, "selector": STRING}, package=AUTOSCALING_V1, required=("replicas",)
        ),
    },
    package=AUTOSCALING_V1,
)
BINDING = _kind("Binding", {"target": OBJECT_REFERENCE}, required=("target",))
DELETE_OPTIONS = _struct(
    "DeleteOptions",
    {
        "apiVersion": STRING,
        "kind": STRING,
        "gracePeriodSeconds": INT64,
        "preconditions": _struct("Preconditions", {"uid": STRING, "resourceVersion": STRING}, package=META_V1),
        "orphanDependents": BOOL,
        "propagationPolicy": STRING,
        "dryRun": STRINGS,
        "ignoreStoreReadErrorWithClusterBreakingPotential": BOOL,
    },
    package=META_V1,
)
EVICTION = _kind("Eviction", {"deleteOptions": DELETE_OPTIONS}, package=POLICY_V1)


# -- checking ------------------------------------------------------------------------------


class _Memo:
    """Values of `memo` types found well-typed, by identity, each with a snapshot: an entry
    counts only while the value still equals its snapshot (a caller may mutate what it sent).
    Holding the value keeps its id from being reused. Bounded in entries and in size."""

    __slots__ = ("_entries", "_limit")
    MAX_SIZE = 64 * 1024  # larger values are not remembered (the snapshot would cost too much)

    def __init__(self, limit: int = 4096) -> None:
        self._entries: dict[int, tuple[Any, Any, int]] = {}
        self._limit = limit

    def size(self, value: Any) -> int | None:
        """The remembered size of a well-typed `value`, or None if not remembered."""
        entry = self._entries.get(id(value))
        if entry is not None and entry[0] is value and entry[1] == value:
            return entry[2]
        return None

    def remember(self, value: Any, size: int) -> None:
        if size > self.MAX_SIZE:
            return
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[id(value)] = (value, _copy(value), size)


def _copy(value: Any) -> Any:
    # JSON-shaped values (checked already, so bounded and acyclic); faster than copy.deepcopy.
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


_memo = _Memo()
_memo_entries = _memo._entries  # read directly by the fast path (see _accept)
_valid_times: set[str] = set()
_VALID_TIMES_LIMIT = 4096


def _json_name(value: Any, into_int: bool = False) -> str:
    """How Go's UnmarshalTypeError names the JSON value it met (`number 1.5` when the target is
    an integer type, whose parse of the literal failed; `number` otherwise)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {_number_text(value)}" if into_int else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _number_text(value: int | float) -> str:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e16:
        return f"{value:.1f}"
    return str(value)


class _Problem(Exception):
    """A limit hit: the walk stops at once (an ApiError is built from it)."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


_MEMO_END = GoType(-1, "")
# A value under a key its struct does not have: its path is noted, then it is checked as JSON.
_UNKNOWN_CODE = -3
_UNKNOWN = GoType(_UNKNOWN_CODE, "")  # a frame popped once a memoised value's whole subtree is checked
# A null map value or list element of a typed map or list. Go would store the zero value ("",
# an empty struct); ctrlscope refuses it instead (400), so no code meets a None there.
_NOT_NULL_CODE = -2
_NOT_NULL = GoType(_NOT_NULL_CODE, "")
# A later occurrence of a key its object holds more than once (a `_Repeat` as the frame's value;
# the frame's `old` says whether the key is a field its Go type has).
_REPEAT_CODE = -4
_REPEAT = GoType(_REPEAT_CODE, "")


class _Repeat:
    """A key met again in a `DuplicateKeys` object, with its line (YAML; 0 for JSON)."""

    __slots__ = ("key", "line")

    def __init__(self, key: str, line: int) -> None:
        self.key = key
        self.line = line


def _keys_reversed(value: DuplicateKeys) -> list[Any]:
    """The keys of `value` in reverse document order: each key once, at its first occurrence
    (its value is the last one, as Go keeps it), and a `_Repeat` for each later occurrence."""
    seen: set[str] = set()
    keys: list[Any] = []
    lines = value.lines
    for i, key in enumerate(value.order):
        if key in seen:
            keys.append(_Repeat(key, lines[i] if lines else 0))
        else:
            seen.add(key)
            keys.append(key)
    keys.reverse()
    return keys


# Where a value sits, kept cheap until an error needs it: None for the root, else
# (parent trail, key or list index, the enclosing Go struct's name — None for a map's key).
Trail = tuple[Any, str | int, str | None] | None


def _paths(trail: Trail) -> tuple[str, str, str]:
    """(Go's field path `spec.containers.name`, the path with indexes
    `spec.containers[0].name`, the enclosing struct) of a trail."""
    steps: list[tuple[str | int, str | None]] = []
    struct = ""
    node = trail
    while node is not None:
        if not struct and node[2] is not None and isinstance(node[1], str):
            struct = node[2]
        steps.append((node[1], node[2]))
        node = node[0]
    steps.reverse()
    go_parts = [key for key, owner in steps if isinstance(key, str) and owner is not None]
    path = ""
    for key, owner in steps:
        index = isinstance(key, int) or owner is None  # field.Path's Index and Key
        path = f"{path}[{key}]" if index else (f"{path}.{key}" if path else str(key))
    return ".".join(go_parts), path, struct


class _Walk:
    """One body's check: an explicit stack (no recursion), causes in document order."""

    __slots__ = ("causes", "size", "strict")

    def __init__(self) -> None:
        self.causes: list[Obj] = []
        # Strict decoding errors in document order: `unknown field "spec.replcas"`, `duplicate
        # field "spec.replicas"`, a YAML body's `line 12: key "replicas" already set in map`.
        self.strict: list[str] = []
        self.size = 0  # JSON bytes, roughly

    def mismatch(self, trail: Trail, value: Any, type_name: str) -> None:
        go_path, path, struct = _paths(trail)
        where = f"Go struct field {struct}.{go_path}" if struct else "Go value"
        into_int = type_name in ("int32", "int64")
        self.problem(path, f"json: cannot unmarshal {_json_name(value, into_int)} into {where} of type {type_name}")

    def problem(self, path: str, message: str) -> None:
        if len(self.causes) < MAX_CAUSES:
            self.causes.append({"reason": FIELD_VALUE_TYPE_INVALID, "message": message, "field": path})

    def limit(self, trail: Trail, depth: int) -> None:
        if depth > MAX_OBJECT_DEPTH:
            path = _paths(trail)[1]
            shown = path if len(path) <= 120 else f"{path[:60]}…{path[-40:]}"
            raise _Problem(_bad_request(f"json: exceeded max depth {MAX_OBJECT_DEPTH} at {shown}"))
        raise _Problem(_too_large())

    def run(self, root: Any, root_type: GoType, stored: Obj | None = None) -> None:
        """Check `root`. Parts that are the very objects found at the same place in `stored`
        (the object an update replaces: checked when it was stored, and stored objects are
        never mutated) are not walked again — a status write walks only what it changed.

        Hot path (every write): scalar fields of a struct are checked in the struct's loop, and
        only containers and bad values become frames. Children are pushed in reverse, so they
        pop — and report — in document order."""
        # Frames: (value, type, trail, depth, what `stored` holds at the same place or None).
        stack: list[tuple[Any, GoType, Trail, int, Any]] = [(root, root_type, None, 1, stored)]
        pop, push = stack.pop, stack.append
        remembered, valid_times = _memo.size, _valid_times
        size = 0
        try:
            while stack:
                value, go_type, trail, depth, old = pop()
                code = go_type.code
                if code == _UNKNOWN_CODE:
                    if len(self.strict) < MAX_CAUSES:
                        self.strict.append(f'unknown field "{_paths(trail)[1]}"')
                    go_type, code = ANY, ANY.code
                elif code == _REPEAT_CODE:
                    self.repeat(value, trail, old)
                    continue
                if depth > MAX_OBJECT_DEPTH or size > MAX_REQUEST_BYTES:
                    self.limit(trail, depth)
                if value is None:
                    if code == _NOT_NULL_CODE:  # `old` holds the element type
                        self.mismatch(trail, None, old.name if old.code != _STRUCT else f"v1.{old.name}")
                    size += 4
                    continue
                kind = type(value)
                if code == _STRUCT:
                    if kind is not dict and kind is not DuplicateKeys:
                        self.mismatch(trail, value, f"v1.{go_type.name}")
                        continue
                    if go_type.memo and kind is dict:
                        known = remembered(value)
                        if known is not None:
                            size += known
                            continue
                        push(((value, len(self.causes) + len(self.strict), size), _MEMO_END, trail, depth, None))
                    fields = go_type.fields
                    name = go_type.name
                    old_fields = old if type(old) is dict else None
                    size += 2
                    for key in reversed(value) if kind is dict else _keys_reversed(value):
                        if type(key) is not str:
                            if type(key) is _Repeat:
                                push((key, _REPEAT, (trail, key.key, name), depth + 1, key.key in fields))
                            else:
                                push((_BadKey(key), ANY, trail, depth, None))
                            continue
                        item = value[key]
                        size += len(key) + 4
                        field_type = fields.get(key, _UNKNOWN)
                        if field_type is _UNKNOWN:
                            push((item, _UNKNOWN, (trail, key, name), depth + 1, None))
                            continue
                        item_kind = type(item)
                        field_code = field_type.code
                        # Inline: the well-typed scalars that make up most of an object.
                        if field_code == _STRING and item_kind is str:
                            size += len(item) + 2
                            continue
                        if field_code == _INT and item_kind is int and -(1 << 31) <= item < (1 << 31):
                            size += 12
                            continue
                        if field_code == _BOOL and item_kind is bool:
                            size += 5
                            continue
                        if item is None:
                            size += 4
                            continue
                        if field_code == _TIME and item_kind is str and item in valid_times:
                            size += 24
                            continue
                        old_item = old_fields.get(key) if old_fields is not None else None
                        if old_item is item:
                            continue
                        if field_code == _LIST and item_kind is list and field_type.item.memo:  # type: ignore[union-attr]
                            known_total = 0
                            for element in item:
                                known = remembered(element)
                                if known is None:
                                    break
                                known_total += known
                            else:
                                size += known_total + 2 + len(item)
                                continue
                        elif field_type.memo and item_kind is dict:
                            known = remembered(item)
                            if known is not None:
                                size += known
                                continue
                        push((item, field_type, (trail, key, name), depth + 1, old_item))
                elif code == _LIST or (code == _ANY and kind is list):
                    if kind is not list:
                        self.mismatch(trail, value, go_type.name)
                        continue
                    size += 2 + len(value)
                    item_type = go_type.item if code == _LIST else ANY
                    assert item_type is not None
                    if (item_type is STRING or item_type is ANY) and all(type(item) is str for item in value):
                        size += sum(map(len, value))
                        continue
                    old_items = old if type(old) is list else ()
                    for i in range(len(value) - 1, -1, -1):
                        item = value[i]
                        old_item = old_items[i] if i < len(old_items) else None
                        if item is None and item_type is not ANY:
                            push((None, _NOT_NULL, (trail, i, ""), depth + 1, item_type))
                        elif old_item is not item:
                            push((item, item_type, (trail, i, ""), depth + 1, old_item))
                elif code in (_MAP, _OBJECT) or (code == _ANY and (kind is dict or kind is DuplicateKeys)):
                    if kind is not dict and kind is not DuplicateKeys:
                        self.mismatch(trail, value, go_type.name)
                        continue
                    size += 2
                    item_type = go_type.item if code == _MAP else ANY
                    assert item_type is not None
                    old_fields = old if type(old) is dict else None
                    owner = None if code == _MAP else ""
                    for key in reversed(value) if kind is dict else _keys_reversed(value):
                        if type(key) is not str:
                            if type(key) is _Repeat:  # every key of a map is known
                                push((key, _REPEAT, (trail, key.key, owner), depth + 1, True))
                            else:
                                push((_BadKey(key), ANY, trail, depth, None))
                            continue
                        item = value[key]
                        size += len(key) + 4
                        if item_type is STRING and type(item) is str:
                            size += len(item) + 2
                            continue
                        old_item = old_fields.get(key) if old_fields is not None else None
                        if item is None and item_type is not ANY:
                            push((None, _NOT_NULL, (trail, key, None), depth + 1, item_type))
                        elif old_item is not item:
                            # A typed map's key is a Key in the path (`labels[app]`); an
                            # untyped object's key a field (`affinity.deep`).
                            push((item, item_type, (trail, key, owner), depth + 1, old_item))
                elif code == _STRING:
                    if kind is str:
                        size += len(value) + 2
                    else:
                        self.mismatch(trail, value, "string")
                elif code == _INT:
                    limit = 1 << (go_type.bits - 1)
                    if kind is not int or not -limit <= value < limit:
                        self.mismatch(trail, value, go_type.name)
                    size += 12
                elif code == _BOOL:
                    if kind is not bool:
                        self.mismatch(trail, value, "bool")
                    size += 5
                elif code == _TIME:
                    size += 24
                    self._time(value, trail)
                elif code == _QUANTITY:
                    size += 12
                    self._quantity(value, trail)
                elif code < 0:  # _MEMO_END: `value` is (the value, causes before, size before)
                    memoised, causes_before, size_before = value
                    if len(self.causes) + len(self.strict) == causes_before:
                        _memo.remember(memoised, size - size_before)
                else:  # _ANY (or _OBJECT given a scalar): a scalar
                    if code == _OBJECT:
                        self.mismatch(trail, value, go_type.name)
                        continue
                    size += self._scalar(value, trail)
            if size > MAX_REQUEST_BYTES:
                raise _Problem(_too_large())
        finally:
            self.size = size

    def repeat(self, repeat: _Repeat, trail: Trail, known: bool) -> None:
        """A key met again: a YAML body's every repeat is sigs.k8s.io/yaml's error (its YAML to
        JSON conversion, before any type); a JSON body's repeat of a field its Go type has is
        sigs.k8s.io/json's `duplicate field` (an unknown one is reported once, as unknown)."""
        if len(self.strict) >= MAX_CAUSES:
            return
        if repeat.line:
            self.strict.append(f'line {repeat.line}: key "{repeat.key}" already set in map')
        elif known:
            self.strict.append(f'duplicate field "{_paths(trail)[1]}"')

    def _time(self, value: Any, trail: Trail) -> None:
        # metav1.Time.UnmarshalJSON: a JSON string, then time.Parse(RFC3339).
        if type(value) is not str:
            self.problem(_paths(trail)[1], f"json: cannot unmarshal {_json_name(value)} into Go value of type string")
            return
        if value in _valid_times:
            return
        try:
            parse_rfc3339(value)
        except (ValueError, OverflowError):
            shown = value[:64]
            self.problem(
                _paths(trail)[1], f'parsing time "{shown}" as "2006-01-02T15:04:05Z07:00": cannot parse "{shown}"'
            )
            return
        if len(_valid_times) >= _VALID_TIMES_LIMIT:
            _valid_times.clear()
        _valid_times.add(value)

    def _quantity(self, value: Any, trail: Trail) -> None:
        kind = type(value)
        if kind is str:
            text = value.strip()
        elif kind is int or (kind is float and math.isfinite(value)):
            text = str(value)
        else:
            text = ""
        if _QUANTITY_RE.fullmatch(text) is None:
            self.problem(_paths(trail)[1], _QUANTITY_ERROR)

    def _scalar(self, value: Any, trail: Trail) -> int:
        """An untyped JSON scalar: a string, a finite number within 64 bits, a boolean; its size."""
        kind = type(value)
        if kind is str:
            return len(value) + 2
        if kind is int:
            if not -_INT_LIMIT < value < _INT_LIMIT:
                self.problem(_paths(trail)[1], "json: number out of range (more than 64 bits)")
            return 12
        if kind is float:
            if not math.isfinite(value):
                self.problem(_paths(trail)[1], f"json: unsupported value: {value}")
            return 12
        if kind is bool:
            return 5
        if kind is _BadKey:
            self.problem(_paths(trail)[1], f"json: unsupported map key {value.key!r}: object keys must be strings")
            return 0
        self.problem(_paths(trail)[1], f"json: unsupported type: {kind.__name__}")
        return 0


class _BadKey:
    """A non-string key met in a mapping, reported in document order as a frame."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key


def _bad_request(message: str, causes: list[Obj] | None = None) -> ApiError:
    details: Obj | None = {"causes": causes} if causes else None
    return ApiError(400, REASON_BAD_REQUEST, message, details)


def _too_large() -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BYTES}")


def _walk(value: Any, go_type: GoType, stored: Obj | None = None) -> _Walk:
    walk = _Walk()
    try:
        walk.run(value, go_type, stored)
    except _Problem as problem:
        raise problem.error from None
    return walk


# -- the fast path -------------------------------------------------------------------------
#
# Most bodies are well-typed. `_accept` checks a value against its type with plain recursion
# (no frames, no trails) and answers its size, or -1 at the first thing it does not accept at
# once: anything ill-typed, a non-string key, a null where the walk would refuse one, an untyped
# (`interface {}`) container. It accepts only what `_Walk.run` accepts without a cause or a
# limit, counting the same size by the same rules (the same skips of parts shared with `stored`,
# the same memo), so `check_*` answers a body it accepts exactly as the walk would: nothing; for
# everything else the walk runs from the root and gives the answer and its causes. Its recursion
# follows the Go types, which nest a dozen levels at most, far below MAX_OBJECT_DEPTH.

_SCALAR_CODES: Final = frozenset({_STRING, _BOOL, _INT, _TIME, _QUANTITY})


def _accept(value: Any, go_type: GoType, old: Any) -> int:
    """The walk's size of a well-typed `value` of `go_type`, or -1 (see above)."""
    code = go_type.code
    if value is None:
        return 4
    kind = type(value)
    memo_get = _memo_entries.get
    if code == _STRUCT:
        if kind is not dict:
            return -1
        if go_type.memo:
            entry = memo_get(id(value))
            if entry is not None and entry[0] is value and entry[1] == value:
                return entry[2]
        fields = go_type.fields
        old_fields = old if type(old) is dict else None
        size = 2
        for key, item in value.items():
            if type(key) is not str:
                return -1
            size += len(key) + 4
            field_type = fields.get(key)
            if field_type is None:
                return -1  # an unknown field: the walk notes it
            item_kind = type(item)
            field_code = field_type.code
            if field_code == _STRING and item_kind is str:
                size += len(item) + 2
            elif field_code == _INT and item_kind is int and -(1 << 31) <= item < (1 << 31):
                size += 12
            elif field_code == _BOOL and item_kind is bool:
                size += 5
            elif item is None:
                size += 4
            elif field_code == _TIME and item_kind is str and item in _valid_times:
                size += 24
            else:
                old_item = old_fields.get(key) if old_fields is not None else None
                if old_item is item:
                    continue
                if field_type.memo and item_kind is dict:
                    entry = memo_get(id(item))
                    if entry is not None and entry[0] is item and entry[1] == item:
                        size += entry[2]
                        continue
                item_size = _accept(item, field_type, old_item)
                if item_size < 0:
                    return -1
                size += item_size
        if go_type.memo:
            _memo.remember(value, size)
        return size
    if code == _LIST:
        if kind is not list:
            return -1
        size = 2 + len(value)
        item_type = go_type.item
        assert item_type is not None
        if item_type is STRING and all(type(item) is str for item in value):
            return size + sum(map(len, value))
        if item_type.memo:
            # As the walk: a list of remembered values counts their remembered sizes (no skips).
            known_total = 0
            for item in value:
                entry = memo_get(id(item))
                if entry is None or entry[0] is not item or entry[1] != item:
                    break
                known_total += entry[2]
            else:
                return size + known_total
        old_items = old if type(old) is list else ()
        count = len(old_items)
        for i, item in enumerate(value):
            if item is None:
                return -1  # the walk refuses a null element of a typed list
            if i < count and old_items[i] is item:
                continue
            item_size = _accept(item, item_type, old_items[i] if i < count else None)
            if item_size < 0:
                return -1
            size += item_size
        return size
    if code == _MAP:
        if kind is not dict:
            return -1
        size = 2
        item_type = go_type.item
        assert item_type is not None
        old_fields = old if type(old) is dict else None
        for key, item in value.items():
            if type(key) is not str:
                return -1
            size += len(key) + 4
            if item_type is STRING and type(item) is str:
                size += len(item) + 2
                continue
            if item is None:
                return -1  # the walk refuses a null value of a typed map
            old_item = old_fields.get(key) if old_fields is not None else None
            if old_item is item:
                continue
            item_size = _accept(item, item_type, old_item)
            if item_size < 0:
                return -1
            size += item_size
        return size
    if code == _STRING:
        return len(value) + 2 if kind is str else -1
    if code == _INT:
        limit = 1 << (go_type.bits - 1)
        return 12 if kind is int and -limit <= value < limit else -1
    if code == _BOOL:
        return 5 if kind is bool else -1
    if code == _TIME:
        if kind is not str:
            return -1
        if value not in _valid_times:
            try:
                parse_rfc3339(value)
            except (ValueError, OverflowError):
                return -1
            if len(_valid_times) >= _VALID_TIMES_LIMIT:
                _valid_times.clear()
            _valid_times.add(value)
        return 24
    if code == _OBJECT:
        return 2 if kind is dict and not value else -1  # a non-empty one: the walk checks it
    if code == _ANY:
        if kind is str:
            return len(value) + 2
        if kind is bool:
            return 5
        if kind is int and -_INT_LIMIT < value < _INT_LIMIT:
            return 12
        if kind is list and all(type(item) is str for item in value):
            return 2 + len(value) + sum(map(len, value))
        return -1  # a float, a container or anything else: the walk checks it
    if code == _QUANTITY:
        if kind is str:
            text = value.strip()
        elif kind is int or (kind is float and math.isfinite(value)):
            text = str(value)
        else:
            return -1
        return 12 if _QUANTITY_RE.fullmatch(text) is not None else -1
    return -1


def _accepted(value: Any, go_type: GoType, stored: Obj | None) -> bool:
    """True if `_accept` accepts `value` within the size limit (then the walk would too)."""
    size = _accept(value, go_type, stored)
    return 0 <= size <= MAX_REQUEST_BYTES


def type_of(info: ResourceInfo, subresource: str | None = None) -> GoType:
    """The Go type a body sent to `info` (and `subresource`) decodes into."""
    if subresource == "scale":
        return SCALE
    if subresource == "binding":
        return BINDING
    if subresource == "eviction":
        return EVICTION
    return KINDS[info.plural]


def check_body(
    info: ResourceInfo,
    body: Any,
    subresource: str | None = None,
    stored: Obj | None = None,
    duplicates: list[Obj] | None = None,
) -> list[str]:
    """400 unless `body` decodes into the Go type (413 if too large); see the module docstring.
    `stored`: the object an update replaces (its parts the body shares are not checked again).
    `duplicates`: the objects the body was read with a repeated key in (duplicate_keys.py).
    Returns the body's strict decoding errors (empty for most bodies)."""
    go_type = type_of(info, subresource)
    if duplicates:
        body = mark(body, duplicates)
    elif _accepted(body, go_type, stored):
        return []
    walk = _walk(body, go_type, stored)
    if walk.causes:
        kind = go_type.name
        version = info.version if subresource is None else "v1"
        first = walk.causes[0]["message"]
        raise _bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {first}', walk.causes)
    return walk.strict


def strict_error(messages: list[str], info: ResourceInfo, go_type: GoType | None = None) -> str:
    """The message of a Strict refusal of `messages` (check_body's strict decoding errors): a
    YAML body's repeated keys first, as one `yaml: unmarshal errors:` (sigs.k8s.io/yaml converts
    YAML to JSON before anything decodes it), then the rest in document order. `go_type`: the
    type the body decodes into (the kind's by default); None for a patch, whose handler names none."""
    yaml_lines = [text for text in messages if text.startswith("line ")]
    found = [text for text in messages if not text.startswith("line ")]
    if yaml_lines:
        found.insert(0, "yaml: unmarshal errors:\n  " + "\n  ".join(yaml_lines))
    text = "strict decoding error: " + ", ".join(found)
    if go_type is None:
        return text
    kind = go_type.name
    version = info.version if go_type is type_of(info) else "v1"
    return f'{kind} in version "{version}" cannot be handled as a {kind}: {text}'


def duplicate_fields_error(manifest: Any, duplicates: list[Obj]) -> str | None:
    """The Strict refusal of a manifest read with repeated keys (the YAML editor and scenario
    files apply with fieldValidation=Strict); None when it has none, or is not a served kind or
    not well-typed (the API server answers those as any other body)."""
    if not duplicates or not isinstance(manifest, dict):
        return None
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    info = for_kind(api_version, kind) if isinstance(api_version, str) and isinstance(kind, str) else None
    if info is None:
        return None
    try:
        messages = check_body(info, manifest, duplicates=duplicates)
    except ApiError:
        return None
    return strict_error(messages, info, type_of(info)) if messages else None


def check_json(value: Any, what: str = "body") -> None:
    """400 unless `value` is JSON (413 if too large, 400 if too deep): after it, recursive code
    (a deep copy, a merge patch, json.dumps) is safe on it."""
    try:
        walk = _walk(value, ANY)
    except ApiError as err:
        if err.code == 400:
            err.message = f"invalid {what}: {err.message}"
        raise
    if walk.causes:
        raise _bad_request(f"invalid {what}: {walk.causes[0]['message']}", walk.causes)


def check_patch_body(body: Any) -> None:
    """A patch must be JSON (see check_json) before it is applied."""
    check_json(body, "patch")


def patch_duplicates(body: Any, duplicates: list[Obj]) -> list[str]:
    """The strict decoding errors of a merge, strategic merge or apply patch read with repeated
    keys (upstream decodes such a patch strictly into an untyped map before applying it): every
    repeated key is a `duplicate field "spec.replicas"` (JSON) or a YAML line's error. Call it on
    a body check_patch_body accepted."""
    if not duplicates:
        return []
    return _walk(mark(body, duplicates), ANY).strict


def check_patched(info: ResourceInfo, obj: Any, subresource: str | None = None, stored: Obj | None = None) -> list[str]:
    """The patched object must decode too: upstream's patch handler answers 422 with one cause
    on the field `patch`, the patched JSON as its value (kind and name left empty, as upstream).
    Returns its strict decoding errors (a stored object has no unknown field: they came with the patch)."""
    walk = _walk(obj, type_of(info, subresource), stored)
    if walk.causes:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        raise invalid("", "", [invalid_cause("patch", text, walk.causes[0]["message"])])
    return walk.strict


def prune(value: Any, go_type: GoType) -> Any:
    """`value` without the fields its Go types do not have (what a typed decode keeps); parts
    with nothing to drop are the very same objects. Call it on a checked body: the recursion
    follows the Go types, a dozen levels at most."""
    code = go_type.code
    kind = type(value)
    if code == _STRUCT and kind is dict:
        fields = go_type.fields
        out: Obj = {}
        changed = False
        for key, item in value.items():
            field_type = fields.get(key)
            if field_type is None:
                changed = True
                continue
            kept = prune(item, field_type)
            changed = changed or kept is not item
            out[key] = kept
        return out if changed else value
    if code == _LIST and kind is list and go_type.item is not None:
        items = [prune(item, go_type.item) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if code == _MAP and kind is dict and go_type.item is not None:
        entries = {key: prune(item, go_type.item) for key, item in value.items()}
        return entries if any(entries[key] is not item for key, item in value.items()) else value
    return value

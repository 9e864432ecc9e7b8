"""Protobuf request bodies (`application/vnd.kubernetes.protobuf`) decoded into the JSON dicts the
simulated API server takes.

kubectl's typed clients send protobuf for a few writes: `kubectl create namespace` (a Namespace),
`kubectl create deployment` (an apps/v1 Deployment: its pod template's modelled fields),
`kubectl drain` (the DeleteOptions of each pod's DELETE, and the policy/v1 Eviction it POSTs),
`kubectl auth can-i` (a SelfSubjectAccessReview).
Upstream's envelope (apimachinery `runtime/serializer/protobuf`): the 4 bytes `k8s\\0`, then a
`runtime.Unknown` {typeMeta {apiVersion, kind}, raw, contentEncoding, contentType} whose `raw` is
the message of the kind the type meta names.

Guarantees
----------
* The messages are the upstream `generated.proto` definitions (field numbers and types) of the
  fields ctrlscope serves, built with `descriptor_pb2` at first use and parsed by the `protobuf`
  library: no hand-written wire parser. Fields the subset leaves out are unknown to the parser
  and dropped, as an older server drops a newer client's fields, except in a controller's kind:
  there a field left out is dropped only when it holds its zero value (Go's protobuf writes every
  non-pointer field, empty or not), and one that holds a value (a probe, a volume) raises
  `UnsupportedKind` naming it, so nothing of a workload is lost silently: the client is told to
  send JSON, which keeps every field.
* The workload kinds are the controllers' (the registry's `CONTROLLER_REGISTRY`): a kind whose
  `<Kind>Spec` message is defined here is decoded (`metadata` 1, `spec` 2, `status` 3, as every
  upstream kind).
* `decode(raw, expected)` returns `(apiVersion, kind, object)` with the object in Kubernetes JSON
  shape: zero values omitted as Go's `omitempty` does, pointers (`gracePeriodSeconds`,
  `propagationPolicy`, …) present only when set, timestamps RFC 3339. It raises `ProtobufError`
  (a one-line reason, answered 400) for a body that is not the envelope, is not valid protobuf,
  or names another kind than the ones in `expected`; `UnsupportedKind` (answered 415) for a kind
  this module cannot decode.
* The `protobuf` package is imported on first use, so the rest of the API works without it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from controlplane.simulation import CONTROLLER_REGISTRY

Obj = dict[str, Any]

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# (apiVersion, kind) → message name; the kinds kubectl 1.32 sends as protobuf to the served resources
# (the controllers' kinds are added below, from the registry).
KINDS = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "DeleteOptions"): "DeleteOptions",
    ("meta.k8s.io/v1", "DeleteOptions"): "DeleteOptions",
    ("policy/v1", "Eviction"): "Eviction",
    ("policy/v1", "DeleteOptions"): "DeleteOptions",
    # `kubectl auth can-i`: its review's spec says what is asked (impersonate is refused).
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "SelfSubjectAccessReview",
}


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf message (400 BadRequest)."""


class UnsupportedKind(ValueError):
    """A well-formed envelope of a kind ctrlscope does not decode from protobuf (415)."""


# -- message definitions (upstream generated.proto, the served subset) --------------------------------
_STRING, _BYTES, _INT64, _INT32, _BOOL, _MESSAGE = "string", "bytes", "int64", "int32", "bool", "message"
# message → [(json name, number, type, repeated, message type or None)]
_FIELDS: dict[str, list[tuple[str, int, str, bool, str | None]]] = {
    # k8s.io/apimachinery/pkg/runtime
    "TypeMeta": [("apiVersion", 1, _STRING, False, None), ("kind", 2, _STRING, False, None)],
    "Unknown": [
        ("typeMeta", 1, _MESSAGE, False, "TypeMeta"),
        ("raw", 2, _BYTES, False, None),
        ("contentEncoding", 3, _STRING, False, None),
        ("contentType", 4, _STRING, False, None),
    ],
    # k8s.io/apimachinery/pkg/apis/meta/v1
    "Time": [("seconds", 1, _INT64, False, None), ("nanos", 2, _INT32, False, None)],
    "OwnerReference": [
        ("kind", 1, _STRING, False, None),
        ("name", 3, _STRING, False, None),
        ("uid", 4, _STRING, False, None),
        ("apiVersion", 5, _STRING, False, None),
        ("controller", 6, _BOOL, False, None),
        ("blockOwnerDeletion", 7, _BOOL, False, None),
    ],
    "ObjectMeta": [
        ("name", 1, _STRING, False, None),
        ("generateName", 2, _STRING, False, None),
        ("namespace", 3, _STRING, False, None),
        ("selfLink", 4, _STRING, False, None),
        ("uid", 5, _STRING, False, None),
        ("resourceVersion", 6, _STRING, False, None),
        ("generation", 7, _INT64, False, None),
        ("creationTimestamp", 8, _MESSAGE, False, "Time"),
        ("deletionTimestamp", 9, _MESSAGE, False, "Time"),
        ("deletionGracePeriodSeconds", 10, _INT64, False, None),
        ("labels", 11, "map", False, None),
        ("annotations", 12, "map", False, None),
        ("ownerReferences", 13, _MESSAGE, True, "OwnerReference"),
        ("finalizers", 14, _STRING, True, None),
    ],
    "Preconditions": [("uid", 1, _STRING, False, None), ("resourceVersion", 2, _STRING, False, None)],
    "DeleteOptions": [
        ("gracePeriodSeconds", 1, _INT64, False, None),
        ("preconditions", 2, _MESSAGE, False, "Preconditions"),
        ("orphanDependents", 3, _BOOL, False, None),
        ("propagationPolicy", 4, _STRING, False, None),
        ("dryRun", 5, _STRING, True, None),
        ("ignoreStoreReadErrorWithClusterBreakingPotential", 6, _BOOL, False, None),
    ],
    # k8s.io/api/core/v1
    "NamespaceSpec": [("finalizers", 1, _STRING, True, None)],
    "NamespaceCondition": [
        ("type", 1, _STRING, False, None),
        ("status", 2, _STRING, False, None),
        ("lastTransitionTime", 4, _MESSAGE, False, "Time"),
        ("reason", 5, _STRING, False, None),
        ("message", 6, _STRING, False, None),
    ],
    "NamespaceStatus": [
        ("phase", 1, _STRING, False, None),
        ("conditions", 2, _MESSAGE, True, "NamespaceCondition"),
    ],
    "Namespace": [
        ("metadata", 1, _MESSAGE, False, "ObjectMeta"),
        ("spec", 2, _MESSAGE, False, "NamespaceSpec"),
        ("status", 3, _MESSAGE, False, "NamespaceStatus"),
    ],
    # k8s.io/api/authorization/v1 (the spec only: a review's status is the server's answer)
    "ResourceAttributes": [
        ("namespace", 1, _STRING, False, None),
        ("verb", 2, _STRING, False, None),
        ("group", 3, _STRING, False, None),
        ("version", 4, _STRING, False, None),
        ("resource", 5, _STRING, False, None),
        ("subresource", 6, _STRING, False, None),
        ("name", 7, _STRING, False, None),
    ],
    "NonResourceAttributes": [("path", 1, _STRING, False, None), ("verb", 2, _STRING, False, None)],
    "SelfSubjectAccessReviewSpec": [
        ("resourceAttributes", 1, _MESSAGE, False, "ResourceAttributes"),
        ("nonResourceAttributes", 2, _MESSAGE, False, "NonResourceAttributes"),
    ],
    "SelfSubjectAccessReview": [
        ("metadata", 1, _MESSAGE, False, "ObjectMeta"),
        ("spec", 2, _MESSAGE, False, "SelfSubjectAccessReviewSpec"),
    ],
    # k8s.io/api/policy/v1
    "Eviction": [
        ("metadata", 1, _MESSAGE, False, "ObjectMeta"),
        ("deleteOptions", 2, _MESSAGE, False, "DeleteOptions"),
    ],
    # k8s.io/apimachinery/pkg/util/intstr and pkg/api/resource: JSON is an int or string, a string
    "IntOrString": [
        ("type", 1, _INT64, False, None),
        ("intVal", 2, _INT32, False, None),
        ("strVal", 3, _STRING, False, None),
    ],
    "Quantity": [("string", 1, _STRING, False, None)],
    "LabelSelectorRequirement": [
        ("key", 1, _STRING, False, None),
        ("operator", 2, _STRING, False, None),
        ("values", 3, _STRING, True, None),
    ],
    "LabelSelector": [
        ("matchLabels", 1, "map", False, None),
        ("matchExpressions", 2, _MESSAGE, True, "LabelSelectorRequirement"),
    ],
    # k8s.io/api/core/v1: the pod template, the fields the type table (decode.py) models
    "ContainerPort": [
        ("name", 1, _STRING, False, None),
        ("hostPort", 2, _INT32, False, None),
        ("containerPort", 3, _INT32, False, None),
        ("protocol", 4, _STRING, False, None),
        ("hostIP", 5, _STRING, False, None),
    ],
    "EnvVar": [("name", 1, _STRING, False, None), ("value", 2, _STRING, False, None)],
    "ResourceRequirements": [("limits", 1, "map", False, "Quantity"), ("requests", 2, "map", False, "Quantity")],
    "Container": [
        ("name", 1, _STRING, False, None),
        ("image", 2, _STRING, False, None),
        ("command", 3, _STRING, True, None),
        ("args", 4, _STRING, True, None),
        ("workingDir", 5, _STRING, False, None),
        ("ports", 6, _MESSAGE, True, "ContainerPort"),
        ("env", 7, _MESSAGE, True, "EnvVar"),
        ("resources", 8, _MESSAGE, False, "ResourceRequirements"),
        ("terminationMessagePath", 13, _STRING, False, None),
        ("imagePullPolicy", 14, _STRING, False, None),
        ("stdin", 16, _BOOL, False, None),
        ("stdinOnce", 17, _BOOL, False, None),
        ("tty", 18, _BOOL, False, None),
        ("terminationMessagePolicy", 20, _STRING, False, None),
        ("restartPolicy", 24, _STRING, False, None),
    ],
    "Toleration": [
        ("key", 1, _STRING, False, None),
        ("operator", 2, _STRING, False, None),
        ("value", 3, _STRING, False, None),
        ("effect", 4, _STRING, False, None),
        ("tolerationSeconds", 5, _INT64, False, None),
    ],
    "PodSchedulingGate": [("name", 1, _STRING, False, None)],
    "PodSpec": [
        ("containers", 2, _MESSAGE, True, "Container"),
        ("restartPolicy", 3, _STRING, False, None),
        ("terminationGracePeriodSeconds", 4, _INT64, False, None),
        ("activeDeadlineSeconds", 5, _INT64, False, None),
        ("dnsPolicy", 6, _STRING, False, None),
        ("nodeSelector", 7, "map", False, None),
        ("serviceAccountName", 8, _STRING, False, None),
        ("serviceAccount", 9, _STRING, False, None),
        ("nodeName", 10, _STRING, False, None),
        ("hostNetwork", 11, _BOOL, False, None),
        ("hostPID", 12, _BOOL, False, None),
        ("hostIPC", 13, _BOOL, False, None),
        ("hostname", 16, _STRING, False, None),
        ("subdomain", 17, _STRING, False, None),
        ("schedulerName", 19, _STRING, False, None),
        ("initContainers", 20, _MESSAGE, True, "Container"),
        ("automountServiceAccountToken", 21, _BOOL, False, None),
        ("tolerations", 22, _MESSAGE, True, "Toleration"),
        ("priorityClassName", 24, _STRING, False, None),
        ("priority", 25, _INT32, False, None),
        ("shareProcessNamespace", 27, _BOOL, False, None),
        ("runtimeClassName", 29, _STRING, False, None),
        ("enableServiceLinks", 30, _BOOL, False, None),
        ("preemptionPolicy", 31, _STRING, False, None),
        ("overhead", 32, "map", False, "Quantity"),
        ("setHostnameAsFQDN", 35, _BOOL, False, None),
        ("hostUsers", 37, _BOOL, False, None),
        ("schedulingGates", 38, _MESSAGE, True, "PodSchedulingGate"),
    ],
    "PodTemplateSpec": [("metadata", 1, _MESSAGE, False, "ObjectMeta"), ("spec", 2, _MESSAGE, False, "PodSpec")],
    # k8s.io/api/apps/v1
    "RollingUpdateDeployment": [
        ("maxUnavailable", 1, _MESSAGE, False, "IntOrString"),
        ("maxSurge", 2, _MESSAGE, False, "IntOrString"),
    ],
    "DeploymentStrategy": [
        ("type", 1, _STRING, False, None),
        ("rollingUpdate", 2, _MESSAGE, False, "RollingUpdateDeployment"),
    ],
    "DeploymentSpec": [
        ("replicas", 1, _INT32, False, None),
        ("selector", 2, _MESSAGE, False, "LabelSelector"),
        ("template", 3, _MESSAGE, False, "PodTemplateSpec"),
        ("strategy", 4, _MESSAGE, False, "DeploymentStrategy"),
        ("minReadySeconds", 5, _INT32, False, None),
        ("revisionHistoryLimit", 6, _INT32, False, None),
        ("paused", 7, _BOOL, False, None),
        ("progressDeadlineSeconds", 9, _INT32, False, None),
    ],
    "DeploymentCondition": [
        ("type", 1, _STRING, False, None),
        ("status", 2, _STRING, False, None),
        ("reason", 4, _STRING, False, None),
        ("message", 5, _STRING, False, None),
        ("lastUpdateTime", 6, _MESSAGE, False, "Time"),
        ("lastTransitionTime", 7, _MESSAGE, False, "Time"),
    ],
    "DeploymentStatus": [
        ("observedGeneration", 1, _INT64, False, None),
        ("replicas", 2, _INT32, False, None),
        ("updatedReplicas", 3, _INT32, False, None),
        ("availableReplicas", 4, _INT32, False, None),
        ("unavailableReplicas", 5, _INT32, False, None),
        ("conditions", 6, _MESSAGE, True, "DeploymentCondition"),
        ("readyReplicas", 7, _INT32, False, None),
        ("collisionCount", 8, _INT32, False, None),
        ("terminatingReplicas", 9, _INT32, False, None),
    ],
}
# Each controller's kind whose spec message is defined above: `kubectl create deployment` POSTs one.
# Its messages are decoded strictly: a field left out here that holds a value is refused (415).
_CONTROLLER_KINDS: set[str] = set()
for _spec in CONTROLLER_REGISTRY:
    if f"{_spec.kind}Spec" in _FIELDS:
        _FIELDS[_spec.kind] = [
            ("metadata", 1, _MESSAGE, False, "ObjectMeta"),
            ("spec", 2, _MESSAGE, False, f"{_spec.kind}Spec"),
            ("status", 3, _MESSAGE, False, f"{_spec.kind}Status"),
        ]
        KINDS[(_spec.api_version, _spec.kind)] = _spec.kind
        _CONTROLLER_KINDS.add(_spec.kind)
# Go pointers (*int64, *string, *bool, *Preconditions): present in JSON only when set, even when
# zero (gracePeriodSeconds: 0 means "now"). Every other scalar is omitempty.
_POINTERS = {
    ("DeleteOptions", "gracePeriodSeconds"),
    ("DeleteOptions", "orphanDependents"),
    ("DeleteOptions", "propagationPolicy"),
    ("DeleteOptions", "preconditions"),
    ("ObjectMeta", "deletionGracePeriodSeconds"),
    ("ObjectMeta", "deletionTimestamp"),
    ("OwnerReference", "controller"),
    ("OwnerReference", "blockOwnerDeletion"),
    ("Preconditions", "uid"),
    ("Preconditions", "resourceVersion"),
    ("Container", "restartPolicy"),
    ("Toleration", "tolerationSeconds"),
    ("PodSpec", "terminationGracePeriodSeconds"),
    ("PodSpec", "activeDeadlineSeconds"),
    ("PodSpec", "automountServiceAccountToken"),
    ("PodSpec", "priority"),
    ("PodSpec", "shareProcessNamespace"),
    ("PodSpec", "enableServiceLinks"),
    ("PodSpec", "preemptionPolicy"),
    ("PodSpec", "setHostnameAsFQDN"),
    ("PodSpec", "hostUsers"),
    ("DeploymentSpec", "replicas"),
    ("DeploymentSpec", "selector"),
    ("DeploymentSpec", "revisionHistoryLimit"),
    ("DeploymentSpec", "progressDeadlineSeconds"),
    ("DeploymentStrategy", "rollingUpdate"),
    ("RollingUpdateDeployment", "maxUnavailable"),
    ("RollingUpdateDeployment", "maxSurge"),
    ("DeploymentStatus", "terminatingReplicas"),
}
_PACKAGE = "ctrlscope.k8s"

_classes: dict[str, Any] = {}


def _message_classes() -> dict[str, Any]:
    """The message classes, built once (proto2, as upstream's generated.proto)."""
    if _classes:
        return _classes
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto(name="ctrlscope_k8s.proto", package=_PACKAGE, syntax="proto2")
    label = descriptor_pb2.FieldDescriptorProto
    types = {
        _STRING: label.TYPE_STRING,
        _BYTES: label.TYPE_BYTES,
        _INT64: label.TYPE_INT64,
        _INT32: label.TYPE_INT32,
        _BOOL: label.TYPE_BOOL,
        _MESSAGE: label.TYPE_MESSAGE,
    }
    for name, fields in _FIELDS.items():
        message = proto.message_type.add(name=name)
        for json_name, number, kind, repeated, type_name in fields:
            field = message.field.add(name=json_name, number=number, json_name=json_name)
            if kind == "map":  # map<string, string or type_name>: a repeated nested entry message
                entry_name = json_name[0].upper() + json_name[1:] + "Entry"
                entry = message.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, type=label.TYPE_STRING, label=label.LABEL_OPTIONAL)
                value = entry.field.add(name="value", number=2, label=label.LABEL_OPTIONAL)
                if type_name is None:
                    value.type = label.TYPE_STRING
                else:
                    value.type, value.type_name = label.TYPE_MESSAGE, f".{_PACKAGE}.{type_name}"
                field.type = label.TYPE_MESSAGE
                field.type_name = f".{_PACKAGE}.{name}.{entry_name}"
                field.label = label.LABEL_REPEATED
                continue
            field.type = types[kind]
            field.label = label.LABEL_REPEATED if repeated else label.LABEL_OPTIONAL
            if type_name is not None:
                field.type_name = f".{_PACKAGE}.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    for name in _FIELDS:
        _classes[name] = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
    return _classes


def decode(raw: bytes, expected: tuple[str, ...]) -> tuple[str, str, Obj]:
    """`(apiVersion, kind, object)` of a protobuf body whose kind is one of `expected`; see above."""
    if not raw.startswith(MAGIC):
        raise ProtobufError("the protobuf body does not start with the Kubernetes envelope's magic bytes k8s\\0")
    from google.protobuf.message import DecodeError

    classes = _message_classes()
    unknown = classes["Unknown"]()
    try:
        unknown.ParseFromString(raw[len(MAGIC) :])
    except DecodeError as exc:
        raise ProtobufError(f"the protobuf envelope (runtime.Unknown) could not be decoded: {exc}") from None
    api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
    if unknown.contentEncoding:
        raise ProtobufError(f"unsupported protobuf content encoding {unknown.contentEncoding[:40]!r}")
    message_name = KINDS.get((api_version, kind))
    if message_name is None:
        raise UnsupportedKind(f'{kind[:60] or "<no kind>"} in version "{api_version[:60]}"')
    if kind not in expected:
        raise ProtobufError(f"expected a body of kind {' or '.join(expected)}, got {kind} ({api_version})")
    message = classes[message_name]()
    try:
        message.ParseFromString(unknown.raw)
    except DecodeError as exc:
        raise ProtobufError(f"the {kind} in the protobuf body could not be decoded: {exc}") from None
    obj = _to_json(message, message_name, strict=message_name in _CONTROLLER_KINDS)
    if message_name != "DeleteOptions":
        obj = {"apiVersion": api_version, "kind": kind, **obj}
    return api_version, kind, obj


def _time(message: Any) -> str | None:
    if not message.seconds:
        return None  # the zero Time: JSON null, dropped as omitempty
    moment = datetime.datetime.fromtimestamp(message.seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _refuse_unknown(message: Any, name: str) -> None:
    """`UnsupportedKind` when `message` carries a field this subset does not define with a value
    other than its zero value (an empty string, 0, an empty message: what Go writes for an unset
    non-pointer field)."""
    from google.protobuf.unknown_fields import UnknownFieldSet

    for field in UnknownFieldSet(message):
        if field.data not in (0, b""):
            raise UnsupportedKind(f"field number {field.field_number} of {name} (not modelled)")


def _to_json(message: Any, name: str, strict: bool = False) -> Obj:
    """The JSON of `message`; `strict` (a controller's kind and everything in it): a field this
    subset lacks that holds a value is refused (`_refuse_unknown`), not dropped."""
    if strict:
        _refuse_unknown(message, name)
    if name == "IntOrString":  # the JSON is the int or the string its type names
        return {"value": message.strVal if message.type == 1 else message.intVal}
    out: Obj = {}
    for json_name, _number, kind, repeated, type_name in _FIELDS[name]:
        value = getattr(message, json_name)
        pointer = (name, json_name) in _POINTERS
        if kind == "map":
            if value:
                out[json_name] = {
                    key: (item if type_name is None else _value(item, type_name, strict))
                    for key, item in sorted(value.items())
                }
            continue
        if repeated:
            if value:
                convert: Callable[[Any], Any] = (
                    (lambda item, t=type_name: _to_json(item, t, strict))
                    if type_name is not None
                    else (lambda item: item)
                )
                out[json_name] = [convert(item) for item in value]
            continue
        if kind == _MESSAGE:
            if not message.HasField(json_name):
                continue
            if type_name == "Time":
                text = _time(value)
                if text is not None:
                    out[json_name] = text
                continue
            assert type_name is not None
            if type_name in _SCALAR_MESSAGES:
                out[json_name] = _value(value, type_name, strict)
                continue
            inner = _to_json(value, type_name, strict)
            if inner or pointer:
                out[json_name] = inner
            continue
        if pointer:
            if message.HasField(json_name):
                out[json_name] = value
        elif value:
            out[json_name] = value
    return out


_SCALAR_MESSAGES = ("IntOrString", "Quantity")  # messages whose JSON is a scalar


def _value(message: Any, name: str, strict: bool) -> Any:
    """The JSON of a message that is a scalar in JSON: an IntOrString's int or string, a Quantity's string."""
    if name == "Quantity":
        if strict:
            _refuse_unknown(message, name)
        return message.string
    return _to_json(message, name, strict)["value"]

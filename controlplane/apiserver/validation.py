"""Object validation: the 422 Invalid answers of the API server, with upstream's field paths
and messages (pkg/apis/core/validation, pkg/apis/apps/validation, apimachinery
pkg/api/validation for ObjectMeta).

Guarantees
----------
* Every validator returns a list of StatusCause dicts `{"reason", "message", "field"}` in
  upstream's order (ObjectMeta first, then spec top-down); an empty list means valid.
* Messages are `field.Error.ErrorBody()` of the Kubernetes version simulated (v1.34+): simple
  bad values print as Go does (`-1`, `"Never"`), complex ones (maps, selectors, lists of owner
  references) as compact JSON (`{"app":"web"}`), e.g.
  `spec.template.metadata.labels: Invalid value: {"app":"x"}: \\`selector\\` does not match
  template \\`labels\\``.
* Generic name and label checks come from controlplane.validation (upstream's
  pkg/util/validation); this module only composes them.
* Only what the simulator's kinds need is checked; a rule not reproduced here is simply not
  enforced (the report lists them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from controlplane import labels as labels_mod
from controlplane import validation as names
from controlplane.validation import go_quote

Obj = dict[str, Any]
Cause = dict[str, str]

FIELD_VALUE_REQUIRED = "FieldValueRequired"
FIELD_VALUE_INVALID = "FieldValueInvalid"
FIELD_VALUE_NOT_SUPPORTED = "FieldValueNotSupported"
FIELD_VALUE_FORBIDDEN = "FieldValueForbidden"
FIELD_VALUE_DUPLICATE = "FieldValueDuplicate"
FIELD_VALUE_TOO_LONG = "FieldValueTooLong"

IS_NEGATIVE_ERROR_MSG = "must be greater than or equal to 0"
FIELD_IMMUTABLE_ERROR_MSG = "field is immutable"
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * 1024

FINALIZER_ORPHAN_DEPENDENTS = "orphan"
FINALIZER_DELETE_DEPENDENTS = "foregroundDeletion"

# Struct field order of the Go types whose values show up in messages as JSON.
_OWNER_REFERENCE_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
_LABEL_SELECTOR_FIELDS = ("matchLabels", "matchExpressions")
_REQUIREMENT_FIELDS = ("key", "operator", "values")


# -- rendering bad values ------------------------------------------------------------------


def go_json(value: Any) -> str:
    """Compact JSON as Go's encoding/json writes it (map keys sorted, HTML characters escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _ordered(value: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {key: value[key] for key in fields if value.get(key) is not None}


def _sorted_map(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else {key: value[key] for key in sorted(value)}


def owner_references_json(refs: list[Obj]) -> str:
    return go_json([_ordered(ref, _OWNER_REFERENCE_FIELDS) for ref in refs])


def label_selector_json(selector: Mapping[str, Any]) -> str:
    shaped: dict[str, Any] = {}
    if selector.get("matchLabels"):
        shaped["matchLabels"] = _sorted_map(selector["matchLabels"])
    if selector.get("matchExpressions"):
        shaped["matchExpressions"] = [_ordered(r, _REQUIREMENT_FIELDS) for r in selector["matchExpressions"]]
    return go_json(shaped)


def render(value: Any) -> str:
    """How `field.Error.ErrorBody` prints a bad value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, dict):
        return go_json(_sorted_map(value))
    return go_json(value)


class _Raw:
    """A bad value already rendered (JSON of a Go struct with its own field order)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _body(type_text: str, value: Any, detail: str) -> str:
    shown = value.text if isinstance(value, _Raw) else render(value)
    message = f"{type_text}: {shown}"
    return f"{message}: {detail}" if detail else message


# -- field.Error constructors ----------------------------------------------------------------


def required(field: str, detail: str = "") -> Cause:
    message = f"Required value: {detail}" if detail else "Required value"
    return {"reason": FIELD_VALUE_REQUIRED, "message": message, "field": field}


def invalid(field: str, value: Any, detail: str) -> Cause:
    return {"reason": FIELD_VALUE_INVALID, "message": _body("Invalid value", value, detail), "field": field}


def not_supported(field: str, value: Any, valid_values: list[str]) -> Cause:
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid_values) if valid_values else ""
    return {"reason": FIELD_VALUE_NOT_SUPPORTED, "message": _body("Unsupported value", value, detail), "field": field}


def forbidden(field: str, detail: str) -> Cause:
    message = f"Forbidden: {detail}" if detail else "Forbidden"
    return {"reason": FIELD_VALUE_FORBIDDEN, "message": message, "field": field}


def duplicate(field: str, value: Any) -> Cause:
    return {"reason": FIELD_VALUE_DUPLICATE, "message": _body("Duplicate value", value, ""), "field": field}


def too_long(field: str, max_length: int) -> Cause:
    return {
        "reason": FIELD_VALUE_TOO_LONG,
        "message": f"Too long: must have at most {max_length} bytes",
        "field": field,
    }


def _from_names(causes: list[Any]) -> list[Cause]:
    # controlplane.validation spells the cause type "type"; a Status cause calls it "reason".
    return [{"reason": c["type"], "message": c["message"], "field": c["field"]} for c in causes]


def validate_nonnegative(value: Any, field: str) -> list[Cause]:
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        return [invalid(field, value, IS_NEGATIVE_ERROR_MSG)]
    return []


def validate_immutable(new: Any, old: Any, field: str, shown: Any = None) -> list[Cause]:
    if new != old:
        return [invalid(field, new if shown is None else shown, FIELD_IMMUTABLE_ERROR_MSG)]
    return []


# -- ObjectMeta --------------------------------------------------------------------------


NameFunc = Callable[[str, bool], list[str]]


def validate_owner_references(refs: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    if not refs:
        return causes
    if not isinstance(refs, list):
        return [invalid(field, refs, "must be a list")]
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            causes.append(invalid(field, ref, "must be an object"))
            continue
        api_version = ref.get("apiVersion") or ""
        version = api_version.rpartition("/")[2]
        if not version:
            causes.append(invalid(f"{field}.apiVersion", api_version, "version must not be empty"))
        if not ref.get("kind"):
            causes.append(invalid(f"{field}.kind", ref.get("kind") or "", "kind must not be empty"))
        if not ref.get("name"):
            causes.append(invalid(f"{field}.name", ref.get("name") or "", "name must not be empty"))
        if not ref.get("uid"):
            causes.append(invalid(f"{field}.uid", ref.get("uid") or "", "uid must not be empty"))
        if ref.get("controller") is True:
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                causes.append(
                    invalid(
                        field,
                        _Raw(owner_references_json(refs)),
                        'Only one reference can have Controller set to true. Found "true" in references for '
                        f"{first_controller} and {current}",
                    )
                )
            else:
                first_controller = current
    return causes


def validate_finalizers(finalizers: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    if not finalizers:
        return causes
    for finalizer in finalizers:
        for msg in names.is_qualified_name(str(finalizer)):
            causes.append(invalid(field, finalizer, msg))
    if FINALIZER_ORPHAN_DEPENDENTS in finalizers and FINALIZER_DELETE_DEPENDENTS in finalizers:
        causes.append(
            invalid(
                field,
                _Raw(go_json(list(finalizers))),
                f"finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set",
            )
        )
    return causes


def validate_annotations(annotations: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    if not annotations:
        return causes
    total = 0
    for key, value in annotations.items():
        for msg in names.is_qualified_name(key.lower()):
            causes.append(invalid(field, key, msg))
        total += len(key) + len(str(value))
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        causes.append(too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT_B))
    return causes


# (name function, value, prefix) found valid before: generateNames and namespaces recur on
# every create; bounded.
_valid_names: set[tuple[NameFunc, str, bool]] = set()
_VALID_NAMES_LIMIT = 4096


def _recurring_name_errors(name_fn: NameFunc, value: str, prefix: bool) -> list[str]:
    """`name_fn(value, prefix)`, remembering the values found valid."""
    if not isinstance(value, str):
        return name_fn(value, prefix)
    key = (name_fn, value, prefix)
    if key in _valid_names:
        return []
    errors = name_fn(value, prefix)
    if not errors:
        if len(_valid_names) >= _VALID_NAMES_LIMIT:
            _valid_names.clear()
        _valid_names.add(key)
    return errors


def validate_object_meta(meta: Obj, namespaced: bool, name_fn: NameFunc) -> list[Cause]:
    """ValidateObjectMeta (+ the accessor checks of BeforeCreate), field path `metadata`."""
    causes: list[Cause] = []
    name = meta.get("name") or ""
    generate_name = meta.get("generateName") or ""
    if generate_name:
        for msg in _recurring_name_errors(name_fn, generate_name, True):
            causes.append(invalid("metadata.generateName", generate_name, msg))
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    else:
        for msg in name_fn(name, False):
            causes.append(invalid("metadata.name", name, msg))
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            causes.append(required("metadata.namespace"))
        else:
            for msg in _recurring_name_errors(names.name_is_dns_label, namespace, False):
                causes.append(invalid("metadata.namespace", namespace, msg))
    elif namespace:
        causes.append(forbidden("metadata.namespace", "not allowed on this type"))
    causes.extend(_from_names(names.validate_labels(meta.get("labels"), "metadata.labels")))
    causes.extend(validate_annotations(meta.get("annotations"), "metadata.annotations"))
    causes.extend(validate_owner_references(meta.get("ownerReferences"), "metadata.ownerReferences"))
    causes.extend(validate_finalizers(meta.get("finalizers"), "metadata.finalizers"))
    return causes


def validate_object_meta_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateObjectMetaUpdate + ValidateObjectMetaAccessorUpdate, field path `metadata`."""
    causes: list[Cause] = []
    causes.extend(_from_names(names.validate_labels(new.get("labels"), "metadata.labels")))
    causes.extend(validate_annotations(new.get("annotations"), "metadata.annotations"))
    causes.extend(validate_owner_references(new.get("ownerReferences"), "metadata.ownerReferences"))
    causes.extend(validate_finalizers(new.get("finalizers"), "metadata.finalizers"))
    if old.get("deletionTimestamp"):
        old_finalizers = set(old.get("finalizers") or ())
        extra = sorted(f for f in new.get("finalizers") or () if f not in old_finalizers)
        if extra:
            shown = "[]string{" + ", ".join(go_quote(f) for f in extra) + "}"
            causes.append(
                forbidden(
                    "metadata.finalizers",
                    f"no new finalizers can be added if the object is being deleted, found new finalizers {shown}",
                )
            )
    if not new.get("resourceVersion"):
        causes.append(invalid("metadata.resourceVersion", 0, "must be specified for an update"))
    if (new.get("generation") or 0) < (old.get("generation") or 0):
        causes.append(invalid("metadata.generation", new.get("generation") or 0, "must not be decremented"))
    for key in _IMMUTABLE_META:
        value = new.get(key)
        if value != old.get(key):
            causes.append(invalid(f"metadata.{key}", value, FIELD_IMMUTABLE_ERROR_MSG))
    return causes


_IMMUTABLE_META = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")


# -- label selectors -----------------------------------------------------------------------


def validate_label_selector(selector: Any, field: str) -> list[Cause]:
    """ValidateLabelSelector (strict: label values in expressions must be valid)."""
    causes: list[Cause] = []
    if selector is None:
        return causes
    if not isinstance(selector, dict):
        return [invalid(field, selector, "must be an object")]
    causes.extend(_from_names(names.validate_labels(selector.get("matchLabels"), f"{field}.matchLabels")))
    for i, expr in enumerate(selector.get("matchExpressions") or ()):
        path = f"{field}.matchExpressions[{i}]"
        operator = expr.get("operator") or ""
        values = expr.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                causes.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append(
                    forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
                )
        else:
            causes.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
        key = expr.get("key") or ""
        for msg in names.is_qualified_name(key):
            causes.append(invalid(f"{path}.key", key, msg))
        for j, value in enumerate(values):
            for msg in names.is_valid_label_value(str(value)):
                causes.append(invalid(f"{path}.values[{j}]", value, msg))
    return causes


# -- pods ----------------------------------------------------------------------------------

RESTART_POLICIES = ["Always", "OnFailure", "Never"]
DNS_POLICIES = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]
MAX_INT32 = 2147483647


def _validate_containers(containers: Any, path: str, seen: set[str], required_list: bool) -> list[Cause]:
    causes: list[Cause] = []
    if not containers:
        if required_list:
            causes.append(required(path))
        return causes
    for i, container in enumerate(containers):
        idx = f"{path}[{i}]"
        if not isinstance(container, dict):
            causes.append(invalid(idx, container, "must be an object"))
            continue
        name = container.get("name") or ""
        if not name:
            causes.append(required(f"{idx}.name"))
        else:
            for msg in names.is_dns1123_label(name):
                causes.append(invalid(f"{idx}.name", name, msg))
            if name in seen:
                causes.append(duplicate(f"{idx}.name", name))
            seen.add(name)
        if not container.get("image"):
            causes.append(required(f"{idx}.image"))
        causes.extend(_validate_container_enums(container, idx))
    return causes


# validatePullPolicy, validateContainerPorts, the terminationMessagePolicy switch of
# validateContainers (pkg/apis/core/validation/validation.go). Defaulting (strategy.py) fills
# the enums first, so an empty one never reaches here from a create or an update.
PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
PORT_PROTOCOLS = ["SCTP", "TCP", "UDP"]
TERMINATION_MESSAGE_POLICIES = ["FallbackToLogsOnError", "File"]
PORT_RANGE = "must be between 1 and 65535, inclusive"  # validation.IsValidPortNum


def _validate_container_enums(container: Obj, idx: str) -> list[Cause]:
    causes: list[Cause] = []
    pull = container.get("imagePullPolicy")
    if pull and pull not in PULL_POLICIES:
        causes.append(not_supported(f"{idx}.imagePullPolicy", pull, PULL_POLICIES))
    message_policy = container.get("terminationMessagePolicy")
    if message_policy and message_policy not in TERMINATION_MESSAGE_POLICIES:
        causes.append(not_supported(f"{idx}.terminationMessagePolicy", message_policy, TERMINATION_MESSAGE_POLICIES))
    ports = container.get("ports") or []
    for j, port in enumerate(ports if isinstance(ports, list) else ()):
        if not isinstance(port, dict):
            continue
        where = f"{idx}.ports[{j}]"
        container_port = port.get("containerPort") or 0
        if not container_port:
            causes.append(required(f"{where}.containerPort"))
        elif not 1 <= container_port <= 65535:
            causes.append(invalid(f"{where}.containerPort", container_port, PORT_RANGE))
        host_port = port.get("hostPort") or 0
        if host_port and not 1 <= host_port <= 65535:
            causes.append(invalid(f"{where}.hostPort", host_port, PORT_RANGE))
        protocol = port.get("protocol")
        if protocol and protocol not in PORT_PROTOCOLS:
            causes.append(not_supported(f"{where}.protocol", protocol, PORT_PROTOCOLS))
    return causes


def validate_pod_spec(spec: Any, path: str) -> list[Cause]:
    """The parts of ValidatePodSpec the simulator relies on."""
    if not isinstance(spec, dict):
        return [required(path)]
    causes: list[Cause] = []
    seen: set[str] = set()
    causes.extend(_validate_containers(spec.get("initContainers"), f"{path}.initContainers", seen, False))
    causes.extend(_validate_containers(spec.get("containers"), f"{path}.containers", seen, True))
    restart = spec.get("restartPolicy") or ""
    if not restart:
        causes.append(required(f"{path}.restartPolicy"))
    elif restart not in RESTART_POLICIES:
        causes.append(not_supported(f"{path}.restartPolicy", restart, RESTART_POLICIES))
    dns = spec.get("dnsPolicy") or ""
    if dns and dns not in DNS_POLICIES:
        causes.append(not_supported(f"{path}.dnsPolicy", dns, DNS_POLICIES))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not (1 <= deadline <= MAX_INT32):
        causes.append(
            invalid(f"{path}.activeDeadlineSeconds", deadline, f"must be between 1 and {MAX_INT32}, inclusive")
        )
    node_name = spec.get("nodeName") or ""
    if node_name:
        for msg in names.is_dns1123_subdomain(node_name):
            causes.append(invalid(f"{path}.nodeName", node_name, msg))
    return causes


def validate_pod(pod: Obj) -> list[Cause]:
    causes = validate_object_meta(pod["metadata"], True, names.name_is_dns_subdomain)
    causes.extend(validate_pod_spec(pod.get("spec"), "spec"))
    return causes


POD_UPDATABLE_FIELDS_MESSAGE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _without_mutable_pod_fields(spec: Obj) -> Obj:
    trimmed = dict(spec)
    for key in ("containers", "initContainers"):
        if isinstance(trimmed.get(key), list):
            trimmed[key] = [{**c, "image": ""} if isinstance(c, dict) else c for c in trimmed[key]]
    trimmed.pop("activeDeadlineSeconds", None)
    trimmed.pop("tolerations", None)
    trimmed.pop("terminationGracePeriodSeconds", None)
    return trimmed


def validate_pod_update(new: Obj, old: Obj) -> list[Cause]:
    causes = validate_object_meta_update(new["metadata"], old["metadata"])
    new_spec = new.get("spec") or {}
    old_spec = old.get("spec") or {}
    if new_spec != old_spec:
        causes.extend(validate_pod_spec(new_spec, "spec"))
        if _without_mutable_pod_fields(new_spec) != _without_mutable_pod_fields(old_spec):
            causes.append(forbidden("spec", POD_UPDATABLE_FIELDS_MESSAGE))
        old_tolerations = old_spec.get("tolerations") or []
        new_tolerations = new_spec.get("tolerations") or []
        if any(t not in new_tolerations for t in old_tolerations):
            causes.append(forbidden("spec", POD_UPDATABLE_FIELDS_MESSAGE))
    return causes


def validate_pod_status_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_object_meta_update(new["metadata"], old["metadata"])


# -- pod templates, ReplicaSets, ReplicationControllers ------------------------------------


def validate_pod_template(template: Any, path: str) -> list[Cause]:
    """ValidatePodTemplateSpec: template labels and annotations, then the pod spec."""
    if not isinstance(template, dict):
        return [required(path)]
    meta = template.get("metadata") or {}
    causes = _from_names(names.validate_labels(meta.get("labels"), f"{path}.metadata.labels"))
    causes.extend(validate_annotations(meta.get("annotations"), f"{path}.metadata.annotations"))
    causes.extend(validate_pod_spec(template.get("spec"), f"{path}.spec"))
    return causes


def _validate_template_for_controller(
    template: Any, selector: labels_mod.Selector, path: str, controller_kind: str
) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(template, dict):
        return [required(path)]
    template_labels = (template.get("metadata") or {}).get("labels")
    if not selector.empty() and not selector.matches(template_labels or {}):
        causes.append(
            invalid(f"{path}.metadata.labels", template_labels, "`selector` does not match template `labels`")
        )
    causes.extend(validate_pod_template(template, path))
    spec = template.get("spec") or {}
    restart = spec.get("restartPolicy") or ""
    if restart != "Always":
        causes.append(not_supported(f"{path}.spec.restartPolicy", restart, ["Always"]))
    if spec.get("activeDeadlineSeconds") is not None:
        causes.append(
            forbidden(
                f"{path}.spec.activeDeadlineSeconds", f"activeDeadlineSeconds in {controller_kind} is not Supported"
            )
        )
    return causes


def _validate_selector_and_template(spec: Obj) -> list[Cause]:
    """The selector (required, non-empty: upstream's message says "deployment" for both kinds)
    and the pod template it must select, as ValidateReplicaSetSpec and ValidateDeploymentSpec
    both check them (ValidatePodTemplateSpecForReplicaSet)."""
    causes: list[Cause] = []
    selector = spec.get("selector")
    if selector is None:
        causes.append(required("spec.selector"))
    else:
        causes.extend(validate_label_selector(selector, "spec.selector"))
        if isinstance(selector, dict) and not selector.get("matchLabels") and not selector.get("matchExpressions"):
            causes.append(
                invalid(
                    "spec.selector", _Raw(label_selector_json(selector)), "empty selector is invalid for deployment"
                )
            )
    try:
        parsed = labels_mod.selector_from_label_selector(selector)
    except (ValueError, TypeError, AttributeError):
        shown = _Raw(label_selector_json(selector)) if isinstance(selector, dict) else selector
        causes.append(invalid("spec.selector", shown, "invalid label selector"))
    else:
        causes.extend(_validate_template_for_controller(spec.get("template"), parsed, "spec.template", "ReplicaSet"))
    return causes


def validate_replica_set_spec(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return [required("spec")]
    causes = validate_nonnegative(spec.get("replicas", 0), "spec.replicas")
    causes.extend(validate_nonnegative(spec.get("minReadySeconds", 0), "spec.minReadySeconds"))
    causes.extend(_validate_selector_and_template(spec))
    return causes


def validate_replica_set(rs: Obj) -> list[Cause]:
    causes = validate_object_meta(rs["metadata"], True, names.name_is_dns_subdomain)
    causes.extend(validate_replica_set_spec(rs.get("spec")))
    return causes


def validate_replica_set_update(new: Obj, old: Obj) -> list[Cause]:
    # rsStrategy.ValidateUpdate: ValidateReplicaSet + ValidateReplicaSetUpdate, then (apps/v1)
    # the immutable selector.
    causes = validate_replica_set(new)
    causes.extend(validate_object_meta_update(new["metadata"], old["metadata"]))
    causes.extend(validate_replica_set_spec(new.get("spec")))
    new_selector = (new.get("spec") or {}).get("selector")
    old_selector = (old.get("spec") or {}).get("selector")
    if new_selector != old_selector:
        shown = _Raw(label_selector_json(new_selector)) if isinstance(new_selector, dict) else new_selector
        causes.append(invalid("spec.selector", shown, FIELD_IMMUTABLE_ERROR_MSG))
    return _dedupe(causes)


def _validate_replicas_status(status: Any) -> list[Cause]:
    status = status if isinstance(status, dict) else {}
    replicas = status.get("replicas") or 0
    causes: list[Cause] = []
    for key in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"):
        causes.extend(validate_nonnegative(status.get(key) or 0, f"status.{key}"))
    msg = "cannot be greater than status.replicas"
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        value = status.get(key) or 0
        if value > replicas:
            causes.append(invalid(f"status.{key}", value, msg))
    available = status.get("availableReplicas") or 0
    ready = status.get("readyReplicas") or 0
    if available > ready:
        causes.append(invalid("status.availableReplicas", available, "cannot be greater than readyReplicas"))
    return causes


def validate_replica_set_status_update(new: Obj, old: Obj) -> list[Cause]:
    causes = validate_object_meta_update(new["metadata"], old["metadata"])
    causes.extend(_validate_replicas_status(new.get("status")))
    terminating = (new.get("status") or {}).get("terminatingReplicas")
    if terminating is not None:
        causes.extend(validate_nonnegative(terminating, "status.terminatingReplicas"))
    return causes


# -- Deployments (pkg/apis/apps/validation ValidateDeployment*, deployment spec D15.6) ---------------
_PERCENT = re.compile(r"[0-9]+%")  # IsValidPercent's `^[0-9]+%$`: Go's `$` is the end of the text (fullmatch)
_GO_ATOI_RANGE = 2**63 - 1  # strconv.Atoi's value on ErrRange, which getPercentValue ignores
DEPLOYMENT_STRATEGY_TYPES = ["Recreate", "RollingUpdate"]


def _int_or_percent(value: Any, field: str) -> tuple[list[Cause], int | None, bool]:
    """ValidatePositiveIntOrPercent: (causes, the number, whether it is a percentage)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return [invalid(field, value, "must be an integer or percentage (e.g '5%')")], None, False
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            detail = (
                "a valid percent string must be a numeric string followed by an ending '%' "
                "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
            )
            return [invalid(field, value, detail)], None, True
        digits = value[:-1].lstrip("0") or "0"
        return [], int(digits) if len(digits) <= 19 else _GO_ATOI_RANGE, True
    if value < 0:
        return [invalid(field, value, "must be greater than or equal to 0")], value, False
    return [], value, False


def _validate_rolling_update(rolling: Any, path: str) -> list[Cause]:
    if not isinstance(rolling, dict):
        return [required(path, "this should be defaulted and never be nil")]
    causes, unavailable, unavailable_percent = _int_or_percent(rolling.get("maxUnavailable"), f"{path}.maxUnavailable")
    more, surge, _ = _int_or_percent(rolling.get("maxSurge"), f"{path}.maxSurge")
    causes.extend(more)
    if unavailable_percent and unavailable is not None and unavailable > 100:
        causes.append(invalid(f"{path}.maxUnavailable", rolling.get("maxUnavailable"), "must not be greater than 100%"))
    if unavailable == 0 and surge == 0:
        causes.append(
            invalid(f"{path}.maxUnavailable", rolling.get("maxUnavailable"), "may not be 0 when `maxSurge` is 0")
        )
    return causes


def validate_deployment_spec(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return [required("spec")]
    causes = validate_nonnegative(spec.get("replicas", 0), "spec.replicas")
    causes.extend(_validate_selector_and_template(spec))
    strategy: Obj = spec["strategy"] if isinstance(spec.get("strategy"), dict) else {}
    kind = strategy.get("type") or ""
    if not kind:
        causes.append(required("spec.strategy.type"))
    elif kind not in DEPLOYMENT_STRATEGY_TYPES:
        causes.append(not_supported("spec.strategy.type", kind, DEPLOYMENT_STRATEGY_TYPES))
    elif kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            causes.append(
                forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")
            )
    else:
        causes.extend(_validate_rolling_update(strategy.get("rollingUpdate"), "spec.strategy.rollingUpdate"))
    if spec.get("revisionHistoryLimit") is not None:
        causes.extend(validate_nonnegative(spec["revisionHistoryLimit"], "spec.revisionHistoryLimit"))
    min_ready = spec.get("minReadySeconds", 0) or 0
    causes.extend(validate_nonnegative(min_ready, "spec.minReadySeconds"))
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None:
        causes.extend(validate_nonnegative(deadline, "spec.progressDeadlineSeconds"))
        if isinstance(deadline, int) and isinstance(min_ready, int) and deadline <= min_ready:
            causes.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return causes


def validate_deployment(d: Obj) -> list[Cause]:
    causes = validate_object_meta(d["metadata"], True, names.name_is_dns_subdomain)
    causes.extend(validate_deployment_spec(d.get("spec")))
    return causes


def validate_deployment_update(new: Obj, old: Obj) -> list[Cause]:
    causes = validate_deployment(new)
    causes.extend(validate_object_meta_update(new["metadata"], old["metadata"]))
    new_selector = (new.get("spec") or {}).get("selector")
    if new_selector != (old.get("spec") or {}).get("selector"):
        shown = _Raw(label_selector_json(new_selector)) if isinstance(new_selector, dict) else new_selector
        causes.append(invalid("spec.selector", shown, FIELD_IMMUTABLE_ERROR_MSG))
    return _dedupe(causes)


def validate_deployment_status_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateDeploymentStatusUpdate: non-negative counters; collisionCount never decreases."""
    causes = validate_object_meta_update(new["metadata"], old["metadata"])
    status: Obj = new["status"] if isinstance(new.get("status"), dict) else {}
    for key in (
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
        "terminatingReplicas",
        "collisionCount",
    ):
        if status.get(key) is not None:
            causes.extend(validate_nonnegative(status[key], f"status.{key}"))
    old_count = (old.get("status") or {}).get("collisionCount")
    new_count = status.get("collisionCount")
    if old_count is not None and (new_count is None or new_count < old_count):
        causes.append(invalid("status.collisionCount", new_count, "cannot be decremented"))
    return causes


def validate_replication_controller_spec(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return [required("spec")]
    causes = validate_nonnegative(spec.get("minReadySeconds", 0), "spec.minReadySeconds")
    selector_map = spec.get("selector") or {}
    selector = labels_mod.selector_from_set(selector_map) if isinstance(selector_map, dict) else labels_mod.nothing()
    if not selector_map:
        causes.append(required("spec.selector"))
    causes.extend(validate_nonnegative(spec.get("replicas", 0), "spec.replicas"))
    causes.extend(
        _validate_template_for_controller(spec.get("template"), selector, "spec.template", "ReplicationController")
    )
    return causes


def validate_replication_controller(rc: Obj) -> list[Cause]:
    causes = validate_object_meta(rc["metadata"], True, names.name_is_dns_subdomain)
    causes.extend(validate_replication_controller_spec(rc.get("spec")))
    return causes


def validate_replication_controller_update(new: Obj, old: Obj) -> list[Cause]:
    causes = validate_replication_controller(new)
    causes.extend(validate_object_meta_update(new["metadata"], old["metadata"]))
    causes.extend(validate_replication_controller_spec(new.get("spec")))
    return _dedupe(causes)


def validate_replication_controller_status_update(new: Obj, old: Obj) -> list[Cause]:
    causes = validate_object_meta_update(new["metadata"], old["metadata"])
    causes.extend(_validate_replicas_status(new.get("status")))
    return causes


# -- other kinds ---------------------------------------------------------------------------


def validate_node(node: Obj) -> list[Cause]:
    return validate_object_meta(node["metadata"], False, names.name_is_dns_subdomain)


def validate_namespace(namespace: Obj) -> list[Cause]:
    return validate_object_meta(namespace["metadata"], False, names.name_is_dns_label)


def validate_event(event: Obj) -> list[Cause]:
    causes = validate_object_meta(event["metadata"], True, names.name_is_dns_subdomain)
    involved = event.get("involvedObject")
    if not isinstance(involved, dict):
        causes.append(required("involvedObject"))
    else:
        namespace = event["metadata"].get("namespace") or ""
        involved_ns = involved.get("namespace") or ""
        if involved_ns and namespace and involved_ns != namespace:
            causes.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    return causes


def validate_scale(scale: Obj) -> list[Cause]:
    """autoscaling ValidateScale (kind `Scale.autoscaling`)."""
    causes = validate_object_meta(scale.get("metadata") or {}, True, names.name_is_dns_subdomain)
    replicas = (scale.get("spec") or {}).get("replicas") or 0
    if replicas < 0:
        causes.append(invalid("spec.replicas", replicas, IS_NEGATIVE_ERROR_MSG))
    return causes


def validate_binding(binding: Obj) -> list[Cause]:
    """ValidatePodBinding (kind `Binding`)."""
    causes: list[Cause] = []
    target = binding.get("target") or {}
    kind = target.get("kind") or ""
    if kind and kind != "Node":
        causes.append(not_supported("target.kind", kind, ["Node", "<empty>"]))
    if not target.get("name"):
        causes.append(required("target.name"))
    return causes


def _dedupe(causes: list[Cause]) -> list[Cause]:
    # Validating the spec twice (create rules + update rules, as upstream's ValidateUpdate does)
    # would list each spec problem twice; the aggregate message drops duplicates anyway.
    out: list[Cause] = []
    for cause in causes:
        if cause not in out:
            out.append(cause)
    return out

"""Field selectors (`?fieldSelector=spec.nodeName=node-1,status.phase!=Failed`).

Counterpart of apimachinery `pkg/fields` (`ParseSelector`) and of each registry's
`ToSelectableFields` / field-label conversion: only the fields upstream lets a client select on
are accepted; any other is a 400 `field label not supported: <label>`.

Guarantees
----------
* Syntax as upstream: comma-separated terms `key=value`, `key==value` or `key!=value`; a
  backslash escapes `,`, `=`, `!` and `\\`; the empty string selects everything.
* A compiled selector is a plain predicate over one object: one getter call and one string
  comparison per term, nothing allocated per object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.apiserver.errors import bad_request

Obj = dict[str, Any]
Getter = Callable[[Obj], str]


def _path(*keys: str) -> Getter:
    def get(obj: Obj) -> str:
        value: Any = obj
        for key in keys:
            if not isinstance(value, dict):
                return ""
            value = value.get(key)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return get


def _pod_ip(obj: Obj) -> str:
    ips = (obj.get("status") or {}).get("podIPs") or ()
    if ips:
        return str(ips[0].get("ip", ""))
    return str((obj.get("status") or {}).get("podIP", "") or "")


def _host_network(obj: Obj) -> str:
    return "true" if (obj.get("spec") or {}).get("hostNetwork") else "false"


def _replicas(obj: Obj) -> str:
    return str(int((obj.get("status") or {}).get("replicas") or 0))


def _unschedulable(obj: Obj) -> str:
    return "true" if (obj.get("spec") or {}).get("unschedulable") else "false"


_META = {"metadata.name": _path("metadata", "name"), "metadata.namespace": _path("metadata", "namespace")}

SELECTABLE_FIELDS: dict[str, dict[str, Getter]] = {
    "pods": {
        **_META,
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": _host_network,
        "status.phase": _path("status", "phase"),
        "status.podIP": _pod_ip,
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "replicasets": {**_META, "status.replicas": _replicas},
    "deployments": dict(_META),
    "replicationcontrollers": {**_META, "status.replicas": _replicas},
    "events": {
        **_META,
        "involvedObject.kind": _path("involvedObject", "kind"),
        "involvedObject.namespace": _path("involvedObject", "namespace"),
        "involvedObject.name": _path("involvedObject", "name"),
        "involvedObject.uid": _path("involvedObject", "uid"),
        "involvedObject.apiVersion": _path("involvedObject", "apiVersion"),
        "involvedObject.resourceVersion": _path("involvedObject", "resourceVersion"),
        "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _path("source", "component"),
        "type": _path("type"),
    },
    "nodes": {"metadata.name": _path("metadata", "name"), "spec.unschedulable": _unschedulable},
    "namespaces": {"metadata.name": _path("metadata", "name"), "status.phase": _path("status", "phase")},
}


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            current.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    if escaped:
        current.append("\\")
    terms.append("".join(current))
    return terms


def _unescape(text: str, selector: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 >= len(text) or text[i + 1] not in "\\,=!":
                raise bad_request(f"invalid field selector: '{selector}'; invalid escape sequence")
            out.append(text[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _find_operator(term: str) -> tuple[int, str]:
    # The first unescaped `!=`, `==` or `=` (upstream splitTerm checks in that order per position).
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return i, op
        i += 1
    return -1, ""


def parse(resource: str, selector: str | None) -> list[tuple[str, str, str]]:
    """The terms `(field, operator, value)` of `selector`; 400 BadRequest if it is malformed or
    names a field `resource` cannot be selected on. Operators are normalised to `=` / `!=`."""
    if not selector:
        return []
    allowed = SELECTABLE_FIELDS.get(resource, _META)
    terms: list[tuple[str, str, str]] = []
    for term in _split_terms(selector):
        if not term:
            continue
        index, op = _find_operator(term)
        if index < 0:
            raise bad_request(f"invalid selector: '{selector}'; can't understand '{term}'")
        field = _unescape(term[:index], selector)
        value = _unescape(term[index + len(op) :], selector)
        if field not in allowed:
            raise bad_request(f"field label not supported: {field}")
        terms.append((field, "!=" if op == "!=" else "=", value))
    return terms


def compile_selector(resource: str, selector: str | None) -> Callable[[Obj], bool] | None:
    """A predicate for `selector` on `resource` objects, or None when it selects everything."""
    terms = parse(resource, selector)
    if not terms:
        return None
    allowed = SELECTABLE_FIELDS.get(resource, _META)
    checks = tuple((allowed[field], op == "=", value) for field, op, value in terms)

    def matches(obj: Obj) -> bool:
        # A plain loop: this runs per object per watch on the commit path; all(<genexpr>) is slower.
        for getter, equal, value in checks:  # noqa: SIM110
            if (getter(obj) == value) is not equal:
                return False
        return True

    return matches

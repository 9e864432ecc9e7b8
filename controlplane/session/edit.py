"""Edit an object as `kubectl edit` does, with a server dry run that shows the diff first.

Three steps, each a command of the session (`controlplane.session.session`):

* `edit` (a read): the object as the API server stores it now, as YAML (without
  `metadata.managedFields`, as `kubectl edit` shows it), with the resourceVersion it was read at.
* `edit_preview` (a read: a dry run changes nothing and is not an action): the edited text is
  sent as an update (`PUT`, `dryRun=All`, `fieldValidation=Strict`) through the API server's one
  write path — decoding, strict field validation, the resource's validation, admission — and the
  answer is the unified diff between the stored object and what the update would store (or the
  API server's error, word for word).
* `edit_apply` (a command: it becomes an action of the recording): the same update for real, as a
  `request` action. Like `kubectl edit`, it carries the resourceVersion the object was read at,
  so an object that changed meanwhile is a 409 Conflict and nothing is written.

Before the API server sees anything, the edit is checked as kubectl checks it: one object, the
same apiVersion, kind, name and namespace ("At least one of apiVersion, kind and name was
changed"), and a text that differs from what was opened ("Edit cancelled, no changes made.").
"""

from __future__ import annotations

import difflib
from typing import Any, Protocol

import yaml

from controlplane.apiserver import ApiError
from controlplane.session.commands import CommandError, parse_manifests
from controlplane.vocabulary import KIND_RESOURCES
from controlplane.world import CLUSTER_SCOPED, Simulation, request_of

Obj = dict[str, Any]


class Hosted(Protocol):
    """What an edit reads of a session (`controlplane.session.session.Session`): its world."""

    sim: Simulation


EDIT_CLIENT = "ctrlscope-dashboard (edit)"
MAX_DIFF_LINES = 2000  # a diff longer than this is cut, and says how many lines it left out


def _target(cmd: Obj) -> tuple[str, str, str | None, str]:
    """(kind, resource, namespace, name) of the object a command names."""
    kind = cmd.get("kind")
    if not isinstance(kind, str) or kind not in KIND_RESOURCES or kind == "Event":
        editable = ", ".join(k for k in KIND_RESOURCES if k != "Event")
        raise CommandError(f"kind: one of {editable}")
    resource = KIND_RESOURCES[kind]
    name = cmd.get("name")
    if not isinstance(name, str) or not name or len(name) > 253:
        raise CommandError("name: the object's name (1 to 253 characters)")
    namespace: str | None = None
    if resource not in CLUSTER_SCOPED:
        namespace = cmd.get("namespace") or "default"
        if not isinstance(namespace, str) or len(namespace) > 63:
            raise CommandError("namespace: at most 63 characters")
    return kind, resource, namespace, name


def _shown(obj: Obj) -> Obj:
    """The object as `kubectl edit` shows it: managedFields left out."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def _yaml(obj: Obj) -> str:
    return yaml.safe_dump(_shown(obj), sort_keys=False, default_flow_style=False, allow_unicode=True)


def _stored(hosted: Hosted, resource: str, namespace: str | None, name: str) -> Obj:
    obj = hosted.sim.server.peek(resource, namespace, name)
    if obj is None:
        where = f' in namespace "{namespace}"' if namespace else ""
        raise CommandError(f'{resource} "{name}" not found{where}')
    return obj


def open_edit(hosted: Hosted, cmd: Obj) -> Obj:
    """The `edit` read: the stored object as YAML, and what the edit is of."""
    kind, resource, namespace, name = _target(cmd)
    obj = _stored(hosted, resource, namespace, name)
    return {
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "resourceVersion": obj["metadata"].get("resourceVersion", ""),
        "yaml": _yaml(obj),
    }


def _edited(cmd: Obj) -> tuple[str, str, str | None, str, Obj]:
    """The edited object of an `edit_preview` / `edit_apply`, checked as kubectl checks it."""
    kind, resource, namespace, name = _target(cmd)
    original = cmd.get("original")
    text = cmd.get("text")
    if isinstance(original, str) and isinstance(text, str) and original.strip() == text.strip():
        raise CommandError("Edit cancelled, no changes made.")
    docs = parse_manifests(text)
    if len(docs) != 1:
        raise CommandError(f"yaml: an edit is of one object ({len(docs)} documents in the text)")
    obj = docs[0]
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise CommandError("metadata: required (the object's name and namespace)")
    changed = obj.get("kind") != kind or meta.get("name") != name
    if namespace is not None and meta.get("namespace", namespace) != namespace:
        changed = True
    if changed:
        raise CommandError(
            "At least one of apiVersion, kind and name was changed "
            f"(this edit is of {kind} {namespace + '/' if namespace else ''}{name})"
        )
    version = cmd.get("resourceVersion")
    if isinstance(version, str) and version and "resourceVersion" not in meta:
        obj = {**obj, "metadata": {**meta, "resourceVersion": version}}
    return kind, resource, namespace, name, obj


def _request(resource: str, namespace: str | None, name: str, body: Obj) -> Obj:
    request: Obj = {
        "verb": "update",
        "resource": resource,
        "name": name,
        "body": body,
        "client": EDIT_CLIENT,
        "options": {"fieldValidation": "Strict"},
    }
    if namespace is not None:
        request["namespace"] = namespace
    return request


def preview(hosted: Hosted, cmd: Obj) -> Obj:
    """The `edit_preview` read: the update as a server dry run, and the diff it would make."""
    kind, resource, namespace, name, obj = _edited(cmd)
    current = _stored(hosted, resource, namespace, name)
    request = _request(resource, namespace, name, obj)
    problem = hosted.sim.check_action({"request": request})
    if problem is not None:
        raise CommandError(problem)
    req = request_of(request)  # as the `request` action edit_apply sends would be, dry
    try:
        answer, _code = hosted.sim.server.dry_run(req)
    except ApiError as err:
        return {"valid": False, "code": err.code, "error": err.message, "diff": ""}
    before, after = _yaml(current).splitlines(), _yaml(answer).splitlines()
    where = f"{namespace}/{name}" if namespace else name
    lines = list(difflib.unified_diff(before, after, f"live {kind} {where}", "after the edit (dry run)", lineterm=""))
    left_out = max(0, len(lines) - MAX_DIFF_LINES)
    diff = "\n".join(lines[:MAX_DIFF_LINES])
    if left_out:
        diff += f"\n… {left_out} more lines of diff not shown"
    warnings = list(req.warnings)
    return {"valid": True, "code": 200, "diff": diff, "changes": bool(lines), "warnings": warnings}


def request_of_edit(cmd: Obj) -> Obj:
    """The `request` action an `edit_apply` becomes (checked as kubectl checks an edit)."""
    _kind, resource, namespace, name, obj = _edited(cmd)
    return _request(resource, namespace, name, obj)

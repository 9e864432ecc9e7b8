"""The Kubernetes API's HTTP mapping, shared by every door that speaks HTTP to a simulated API
server: an HTTP request (method, path, query, headers, body) -> the API server's `Request`, the
`request` action of a write, a watch's options, or a Status failure; and the lines of a watch
stream. The dashboard's ASGI app (`dashboard.k8s.api`) and the in-kernel transport of an
embedded operator (`controlplane.operators.transport`) both use these functions, so that a
request means the same thing whichever door it came through.

Nothing here knows of Django, Channels, asyncio or the wall clock: these are pure functions of
their arguments.

Guarantees
----------
* Every refusal is an `HttpFailure`, which carries the `metav1.Status` the API answers (kind
  Status, apiVersion v1, status Failure, reason, code), as kube-apiserver words it.
* Paths: `/api/v1/...` is the core group, `/apis/<group>/<version>/...` any served group;
  `namespaces/<ns>/<plural>[/<name>[/<sub>]]` and `<plural>[/<name>[/<sub>]]`, as upstream's
  route table. A resource of another group, a namespaced path of a cluster-scoped resource, or a
  deeper path is 404.
* Patch types by Content-Type (`PATCH_CONTENT_TYPES`); any other is 415, naming the accepted ones.
* Write options from the query (and a DELETE's DeleteOptions body): dryRun (All only),
  fieldManager, force, fieldValidation, propagationPolicy, gracePeriodSeconds (an integer),
  orphanDependents, preconditions, and a deletecollection's selectors; strings are cut to the
  lengths kube-apiserver accepts.
* Watch lines: one JSON object per line, compact separators (`watch_line`, `bookmark_line`,
  `error_line`), as kube-apiserver streams them.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from controlplane import safeyaml
from controlplane.apiserver.resources import RESOURCES, VERBS, ResourceInfo
from controlplane.apiserver.server import Request
from controlplane.duplicate_keys import collect_duplicates, read_json
from controlplane.limits import MAX_OBJECT_DEPTH, MAX_REQUEST_BYTES, nested_deeper_than

Obj = dict[str, Any]

PATCH_CONTENT_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": None,
}
MAX_FIELD_MANAGER = 128  # characters of a fieldManager kept
MAX_FIELD_VALIDATION = 64


class HttpFailure(Exception):
    """An answer that is a Status: raised anywhere while mapping or handling a request."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> Obj:
        body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message}
        body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def not_found(message: str = "the server could not find the requested resource") -> HttpFailure:
    return HttpFailure(404, "NotFound", message)


def expired(message: str) -> Obj:
    """The Status of a watch the server ended (410 Expired: the client relists)."""
    return HttpFailure(410, "Expired", message).status()


# -- paths --------------------------------------------------------------------------------------------
def served_group(segs: list[str]) -> tuple[str, list[str]] | None:
    """(API group, the segments below its version) of a path to a served group's resources:
    `/api/v1/<…>` is the core group ""; `/apis/<group>/v1/<…>` a group of `RESOURCES`. None for
    any other path (discovery, a group not served)."""
    if segs[:2] == ["api", "v1"] and len(segs) > 2:
        return "", segs[2:]
    if len(segs) > 3 and segs[0] == "apis" and segs[2] == "v1" and segs[1] in GROUPS and segs[1]:
        return segs[1], segs[3:]
    return None


@dataclass(frozen=True)
class Target:
    """What a resource path names: the resource, and its namespace, name and subresource if any."""

    info: ResourceInfo
    namespace: str | None
    name: str | None
    subresource: str | None


def resource_target(group: str, segs: list[str]) -> Target:
    """The target of the path segments below `/api/v1` or `/apis/<group>/v1` (module doc); 404
    `HttpFailure` for a path that names no served resource."""
    namespace = None
    if segs[0] == "namespaces" and len(segs) >= 3 and segs[2] not in ("status", "finalize"):
        namespace, segs = segs[1], segs[2:]
    if len(segs) > 3:
        raise not_found()
    plural = segs[0]
    name = segs[1] if len(segs) > 1 else None
    subresource = segs[2] if len(segs) > 2 else None
    info = RESOURCES.get(plural)
    if info is None or info.group != group or (namespace is not None and not info.namespaced):
        raise not_found()
    return Target(info, namespace, name, subresource)


def named(target: Target) -> str:
    """The target's name; 405 when a verb that needs one was sent to the collection."""
    if not target.name:
        raise HttpFailure(
            405,
            "MethodNotAllowed",
            f'the server does not allow this method on the requested resource "{target.info.plural}"',
        )
    return target.name


def header_media_type(headers: dict[str, str]) -> str:
    """The request's Content-Type without parameters (headers keyed in lower case)."""
    return headers.get("content-type", "").split(";")[0].strip().lower()


def patch_type(headers: dict[str, str]) -> str:
    """The patch type a PATCH's Content-Type names (merge, strategic, json, apply); 415 otherwise."""
    found = PATCH_CONTENT_TYPES.get(header_media_type(headers))
    if found is None:
        accepted = ", ".join(t for t, p in PATCH_CONTENT_TYPES.items() if p)
        raise HttpFailure(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: {accepted}",
        )
    return found


def write_verb(method: str, target: Target) -> str:
    """The API verb of a write (POST, PUT, PATCH, DELETE) to `target`; 405 where the API has none."""
    if method == "POST":
        if target.name is not None and target.subresource is None:
            raise HttpFailure(
                405, "MethodNotAllowed", f'create is not supported on resources of kind "{target.info.plural}"'
            )
        return "create"
    if method == "PUT":
        return "update"  # (its name is checked once the body is read: `named`, as upstream orders it)
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        if target.subresource is not None:
            raise HttpFailure(
                405,
                "MethodNotAllowed",
                f'delete is not supported on resources of kind "{target.info.plural}/{target.subresource}"',
            )
        return "delete" if target.name else "deletecollection"
    raise HttpFailure(405, "MethodNotAllowed", f"{method} is not supported")


def write_options(verb: str, query: dict[str, str], delete_options: Obj) -> tuple[Obj, bool]:
    """(the request's options, whether it is a dry run) from the query and a DELETE's
    DeleteOptions; 400 for a value the API refuses."""
    q = query
    options: Obj = {}
    dry_run = q.get("dryRun") == "All" or "All" in (delete_options.get("dryRun") or ())
    if q.get("dryRun") not in (None, "", "All"):
        raise HttpFailure(400, "BadRequest", f'dryRun: Unsupported value: {q["dryRun"]!r}: supported values: "All"')
    if verb in ("create", "update", "patch"):
        if q.get("fieldManager"):
            options["fieldManager"] = q["fieldManager"][:MAX_FIELD_MANAGER]
        if q.get("force"):
            options["force"] = q["force"].lower() == "true"
        if q.get("fieldValidation"):
            options["fieldValidation"] = q["fieldValidation"][:MAX_FIELD_VALIDATION]
    if verb in ("delete", "deletecollection"):
        policy = q.get("propagationPolicy") or delete_options.get("propagationPolicy")
        if policy:
            options["propagationPolicy"] = policy
        grace = q.get("gracePeriodSeconds", delete_options.get("gracePeriodSeconds"))
        if grace is not None and grace != "":
            try:
                options["gracePeriodSeconds"] = int(grace)
            except (TypeError, ValueError):
                raise HttpFailure(400, "BadRequest", f"gracePeriodSeconds: invalid value {grace!r}") from None
        orphan: Any = q.get("orphanDependents", delete_options.get("orphanDependents"))
        if orphan is not None and orphan != "":
            options["orphanDependents"] = orphan is True or str(orphan).lower() == "true"
        preconditions = delete_options.get("preconditions")
        if isinstance(preconditions, dict):
            options["preconditions"] = {k: v for k, v in preconditions.items() if v is not None}
        if verb == "deletecollection":
            for key in ("labelSelector", "fieldSelector"):
                if q.get(key):
                    options[key] = q[key]
    return options, dry_run


def write_request(
    client: str,
    verb: str,
    target: Target,
    body: Any,
    *,
    patch_kind: str | None = None,
    options: Obj | None = None,
    duplicates: list[Obj] | None = None,
) -> Obj:
    """The body of the `request` action a write is (controlplane.world.request_of reads it back)."""
    request: Obj = {"client": client, "verb": verb, "resource": target.info.plural}
    if target.subresource is not None and verb not in ("delete", "deletecollection"):
        request["subresource"] = target.subresource
    if target.namespace is not None:
        request["namespace"] = target.namespace
    if target.name is not None:
        request["name"] = target.name
    if body is not None:
        request["body"] = body
    if duplicates and verb in ("create", "update", "patch"):
        # Strict decoding reports them (duplicate fields); the request carries them as data,
        # so that its recording replays to the same answer.
        request["duplicates"] = duplicates
    if patch_kind is not None:
        request["patchType"] = patch_kind
    if options:
        request["options"] = options
    return request


def request_of(body: Obj) -> Request:
    """The API server `Request` a `request` action's body describes (a copy of its body)."""
    options = dict(body.get("options") or {})
    if "patchType" in body:
        options["patchType"] = body["patchType"]
    return Request(
        str(body.get("client") or "user"),
        body["verb"],
        body["resource"],
        body.get("subresource"),
        body.get("namespace"),
        body.get("name"),
        copy.deepcopy(body.get("body")),
        options,
        duplicates=list(body.get("duplicates") or ()),
    )


def list_limit(query: dict[str, str]) -> int | None:
    """A list's `limit` (None when absent); 400 when it is not an integer."""
    if not query.get("limit"):
        return None
    try:
        return int(query["limit"])
    except ValueError:
        raise HttpFailure(400, "BadRequest", f"limit: invalid value {query['limit']!r}") from None


def watch_timeout(query: dict[str, str]) -> float | None:
    """A watch's `timeoutSeconds` (None when absent); 400 when it is not a number."""
    if not query.get("timeoutSeconds"):
        return None
    try:
        value = float(query["timeoutSeconds"])
    except ValueError:
        raise HttpFailure(400, "BadRequest", "timeoutSeconds: must be a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise HttpFailure(400, "BadRequest", "timeoutSeconds: must be a finite number")
    return max(0.0, value)


def is_watch(query: dict[str, str]) -> bool:
    return query.get("watch") in ("true", "1")


def wants_bookmarks(query: dict[str, str]) -> bool:
    return query.get("allowWatchBookmarks") == "true"


# -- bodies -------------------------------------------------------------------------------------------
def limited(raw: bytes) -> bytes:
    """`raw`, or 413 when it is longer than kube-apiserver reads (3 MiB)."""
    if len(raw) > MAX_REQUEST_BYTES:
        raise HttpFailure(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BYTES}")
    return raw


def decode(raw: bytes, *, yaml_ok: bool, duplicates: list[Obj] | None = None) -> Any:
    """JSON (or YAML when `yaml_ok`) data; the objects read with a repeated key are added to
    `duplicates` (the last value of a repeated key is the one kept)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HttpFailure(400, "BadRequest", "the body of the request is not UTF-8") from None
    found: list[Obj]
    try:
        # NaN and Infinity are not JSON (Python's parser takes them unless told not to).
        value, found = read_json(text, parse_constant=_not_json)
    except RecursionError:
        raise HttpFailure(400, "BadRequest", TOO_DEEP) from None
    except ValueError as exc:
        if not yaml_ok:
            raise HttpFailure(400, "BadRequest", f"the body of the request was in an unknown format: {exc}") from None
    else:
        if nested_deeper_than(value):
            raise HttpFailure(400, "BadRequest", TOO_DEEP)
        if duplicates is not None:
            duplicates.extend(found)
        return value
    try:
        # Within limits and iteratively: libyaml's composer recurses in C (deep nesting crashes
        # the process) and alias expansion is counted before anything expands.
        value, found = collect_duplicates(safeyaml.load(text, duplicates=True))
    except safeyaml.YAMLInputError as exc:
        raise HttpFailure(400, "BadRequest", f"error decoding YAML: {exc}") from None
    if duplicates is not None:
        duplicates.extend(found)
    return value


TOO_DEEP = f"the body of the request is nested deeper than {MAX_OBJECT_DEPTH} levels"


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


# -- watch lines --------------------------------------------------------------------------------------
def _line(value: Obj) -> str:
    return json.dumps(value, separators=(",", ":")) + "\n"


def watch_line(event_type: str, obj: Obj) -> str:
    return _line({"type": event_type, "object": obj})


def error_line(status: Obj) -> str:
    return _line({"type": "ERROR", "object": status})


def bookmark_line(info: ResourceInfo, revision: int) -> str:
    obj = {"kind": info.kind, "apiVersion": info.api_version, "metadata": {"resourceVersion": str(revision)}}
    return _line({"type": "BOOKMARK", "object": obj})


# -- legacy discovery ----------------------------------------------------------------------------------
GROUPS = tuple(dict.fromkeys(info.group for info in RESOURCES.values()))  # "" (core), then "apps"
SUBRESOURCE_VERBS = ["get", "patch", "update"]
# Subresources whose kind is another group's (upstream discovery names it); `kubectl drain` looks
# for `pods/eviction` with a group and version before it evicts instead of deleting.
SUBRESOURCE_KINDS = {
    "scale": ({"group": "autoscaling", "version": "v1", "kind": "Scale"}, SUBRESOURCE_VERBS),
    "eviction": ({"group": "policy", "version": "v1", "kind": "Eviction"}, ["create"]),
}


def group_resources(group: str) -> list[ResourceInfo]:
    """A group's resources in upstream's discovery order: by name (kube-apiserver installs a
    group's routes sorted by path), so `kubectl get all` prints deployments before replicasets."""
    return sorted((info for info in RESOURCES.values() if info.group == group), key=lambda info: info.plural)


def resource_verbs(info: ResourceInfo) -> list[str]:
    if info.plural == "namespaces":
        return ["create", "delete", "get", "list", "patch", "update", "watch"]
    return list(VERBS)


def discovered_subresources(info: ResourceInfo) -> list[str]:
    return [s for s in info.subresources if s in ("status", "scale", "eviction")]


def resource_list(group: str) -> Obj:
    """The legacy APIResourceList of a served group (`""` core or `apps`)."""
    group_version = f"{group}/v1" if group else "v1"
    resources: list[Obj] = []
    for info in group_resources(group):
        entry: Obj = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": resource_verbs(info),
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        resources.append(entry)
        for sub in discovered_subresources(info):
            sub_entry: Obj = {"name": f"{info.plural}/{sub}", "singularName": "", "namespaced": info.namespaced}
            other, verbs = SUBRESOURCE_KINDS.get(sub, (None, SUBRESOURCE_VERBS))
            if other is not None:
                sub_entry.update(other)
            else:
                sub_entry["kind"] = info.kind
            sub_entry["verbs"] = verbs
            resources.append(sub_entry)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def group_version(name: str, version: str = "v1") -> Obj:
    """An APIGroup entry of an APIGroupList: one version, preferred."""
    gv = {"groupVersion": f"{name}/{version}", "version": version}
    return {"name": name, "versions": [gv], "preferredVersion": gv}


def api_group_list(extra: tuple[Obj, ...] = ()) -> Obj:
    """`/apis`: the served named groups (apps), then `extra` entries (`group_version`)."""
    groups = [group_version(group) for group in GROUPS if group]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [*groups, *extra]}


def api_group(name: str) -> Obj:
    """`/apis/<group>`: the APIGroup of a served group (one version, v1)."""
    return {"kind": "APIGroup", "apiVersion": "v1", **group_version(name)}

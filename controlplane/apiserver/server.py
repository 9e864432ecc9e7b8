"""The simulated API server: kube-apiserver and etcd in one synchronous, deterministic object.

Guarantees
----------
* One global revision. Every committed write (create, update, patch, delete, and each step of a
  graceful deletion) bumps `revision` by exactly one, stamps it as the object's
  `metadata.resourceVersion` (a string), appends one event `(rv, type, resource, object, old)` to
  the bounded history and hands it, at once, to every open watch that selects it. A write that
  changes nothing is not committed (no revision, no event), as etcd3's GuaranteedUpdate.
* `handle(req)` is the only entry point. It records the request in `requests` (`time` is when
  the client sent it, else now; `code` is the HTTP status answered), emits `api.request` /
  `api.response` trace records (`id` = the record's index), runs `interceptors` before the
  operation (an `ApiError` returned by one becomes the answer), then performs the operation and
  returns the object / List / Watch, or raises `ApiError`. The convenience methods (`create`,
  `get`, `list`, `update`, `patch`, `delete`, `watch`) build a `Request` and call `handle`.
* Names, uids and timestamps are deterministic: uids are uuid4-shaped from 128 bits of
  `kernel.rng`, `generateName` appends 5 characters drawn from `kernel.rng` out of upstream's
  alphabet (retried up to 8 times on a name collision, as RetryGenerateName), timestamps are
  RFC 3339 of the virtual clock.
* Semantics follow upstream's generic registry (staging/src/k8s.io/apiserver/pkg/registry/
  generic/registry/store.go) and the per-kind strategies (strategy.py): optimistic concurrency
  (409 on a stale `metadata.resourceVersion`, unconditional when empty), status and scale
  subresources, pods/binding, graceful pod deletion (`deletionTimestamp` + grace, shortened
  never lengthened), finalizers (an update that empties the finalizers of a marked object with
  no grace period left deletes it), propagation policies (`orphan` / `foregroundDeletion`
  finalizers; Background deletes at once and leaves dependents to the garbage collector; v1
  ReplicationControllers orphan by default), delete preconditions, validation (422 with causes),
  namespace lifecycle (404 in a missing namespace, 403 in a terminating one).
* Field validation (`fieldValidation` of a create, update or patch; KEP-2885): a body's fields
  that its kind's Go type (decode.py) does not have are refused under `Strict` (400 `strict
  decoding error: unknown field "spec.replcas"`), reported in `Request.warnings` under `Warn`
  (the default, as upstream's) and dropped silently under `Ignore`. Whatever the directive, an
  unknown field is never stored: the body is pruned before anything reads it. A create's or
  update's body read with a repeated key (`Request.duplicates`) is handled the same way, and so is
  a merge, strategic merge or apply patch's (every repeated key of the patch, before it applies):
  `duplicate field "spec.replicas"` (JSON) or `yaml: unmarshal errors: line 12: key "replicas"
  already set in map` (YAML); the last value is the one kept.
* Lists are in key order (`namespace/name`, as etcd keys sort), carry the current revision as
  `metadata.resourceVersion`, and never scan other namespaces when one is given.
* Stored objects are shared with every reader (lists, watches, clients): nobody may mutate
  them. The server itself never mutates an object after storing it; writes replace objects,
  copying only the parts they change.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import hashlib
import json
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from controlplane import labels
from controlplane.apiserver import apply as server_side_apply
from controlplane.apiserver import decode, errors, fields
from controlplane.apiserver import patch as patches
from controlplane.apiserver import validation as v
from controlplane.apiserver.errors import ApiError
from controlplane.apiserver.request_log import RequestLog
from controlplane.apiserver.resources import RESOURCES, ResourceInfo, lookup
from controlplane.apiserver.strategy import (
    DEFAULT_TOLERATION_SECONDS,
    ORPHAN_DEPENDENTS,
    Strategy,
    strategy_for,
)
from controlplane.apiserver.watch import ADDED, DELETED, MODIFIED, Watch
from controlplane.apiserver.watch_cache import WatchCache
from controlplane.kernel import Kernel, parse_rfc3339, rfc3339, vtime
from controlplane.limits import MAX_SECONDS
from controlplane.trace import NULL_TRACE, Trace

Obj = dict[str, Any]
Interceptor = Callable[["Request"], "ApiError | None"]
LatencyHook = Callable[["Request"], float]

# names.SimpleNameGenerator: 5 random characters from utilrand's alphabet, base cut to 58.
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
RANDOM_NAME_LENGTH = 5  # _generate_name draws exactly this many characters
_NAME_ALPHABET_SIZE = float(len(NAME_ALPHABET))
MAX_GENERATED_NAME_LENGTH = 63 - RANDOM_NAME_LENGTH
# Version 4 and the RFC 4122 variant, as uuid.UUID(version=4) sets them.
_UUID_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_UUID_SET = (0x4000 << 64) | (0x8000 << 48)
# store.go maxNameGenerationCreateAttempts.
MAX_NAME_GENERATION_ATTEMPTS = 8
DEFAULT_HISTORY_LIMIT = 100_000
# kube-apiserver --event-ttl (1 h): every Event write attaches it to an etcd lease of that many whole
# seconds, and etcd deletes it when the lease expires. The lease manager
# (storage/etcd3/lease_manager.go) reuses its previous lease for a write that fits it: granted
# with `ttl + reuse` seconds, reuse = min(5 % of ttl, 60 s), at most 1,000 objects each.
DEFAULT_EVENT_TTL = 3600
LEASE_REUSE_DURATION_SECONDS = 60
LEASE_REUSE_DURATION_PERCENT = 0.05
LEASE_MAX_OBJECT_COUNT = 1000
SCHEDULED_STATUS_CACHE_SIZE = 1024
BOUND_SPEC_CACHE_SIZE = 16384  # (spec content, node) pairs; see _bound_spec
SPEC_CACHE_SIZE = 1024  # spec contents remembered by _bound_spec
MAX_SHARED_SPEC_CHARS = 8192  # a larger spec is not shared (its content would be the key)
SHARED_LABEL_SETS = 4096
# The resources stored as compact records (see _pack): Events, written once and then only
# patched by the correlator, are the bulk of a large run's store and no controller reads them.
COMPACT_RESOURCES = frozenset({"events"})
# A ceiling on each of the compact store's intern tables (key tuples, nested records).
COMPACT_INTERNED = 4096
BOOTSTRAP_NAMESPACES = ("default", "kube-system")
# NamespaceLifecycle refuses to delete these.
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})

PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
POD_CEILING_QUOTA = "ctrlscope-pod-ceiling"  # the quota named when RunLimits.pods refuses a pod
FINALIZER_ORPHAN = v.FINALIZER_ORPHAN_DEPENDENTS
FINALIZER_FOREGROUND = v.FINALIZER_DELETE_DEPENDENTS

PATCH_TYPES = {
    "merge": "merge",
    "application/merge-patch+json": "merge",
    "strategic": "strategic",
    "application/strategic-merge-patch+json": "strategic",
    "json": "json",
    "application/json-patch+json": "json",
    "apply": "apply",
    "application/apply-patch+yaml": "apply",
}

# etcd key prefixes (storage errors name the key).
_REGISTRY_PREFIX = {
    "pods": "pods",
    "replicasets": "replicasets",
    "deployments": "deployments",
    "replicationcontrollers": "controllers",
    "nodes": "minions",
    "namespaces": "namespaces",
    "events": "events",
}


@dataclass(slots=True)
class Request:
    """One API request as the server sees it.

    `options` holds the query parameters / DeleteOptions: labelSelector, fieldSelector,
    resourceVersion, propagationPolicy, gracePeriodSeconds, preconditions ({uid,
    resourceVersion}), patchType (merge, strategic, json, apply or the content type), dryRun,
    and for watches `latency` (seconds of delivery delay).
    """

    client: str
    verb: str
    resource: str
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None
    body: Any = None
    options: dict[str, Any] = field(default_factory=dict)
    sent_at: float | None = None
    # Trace seqs of its api.request and api.response records (None while nobody traces).
    request_seq: int | None = None
    answer_seq: int | None = None
    # Filled by the server: the `Warning` headers of the answer (`unknown field "spec.replcas"`).
    warnings: builtins.list[str] = field(default_factory=builtins.list)
    # The objects of `body` that were read with a repeated key (controlplane.duplicate_keys): a
    # create's, update's or (merge, strategic, apply) patch's strict decoding reports them.
    duplicates: builtins.list[Obj] = field(default_factory=builtins.list)


def query_options(**params: Any) -> dict[str, Any]:
    """Request options from keyword arguments, leaving out the unset ones:
    `query_options(label_selector="app=web")` → `{"labelSelector": "app=web"}`. The one place the
    Python argument names meet the API's query parameter names (server methods and Client)."""
    return {_OPTION_NAMES[key]: value for key, value in params.items() if value is not None}


_OPTION_NAMES = {
    "label_selector": "labelSelector",
    "field_selector": "fieldSelector",
    "resource_version": "resourceVersion",
    "propagation_policy": "propagationPolicy",
    "grace_period_seconds": "gracePeriodSeconds",
    "preconditions": "preconditions",
    "latency": "latency",
    "field_validation": "fieldValidation",
}
FIELD_VALIDATION = ("Ignore", "Strict", "Warn")  # metav1.FieldValidation*
_OPTIONS_KIND = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}


def _pack(obj: Obj, shapes: dict[Any, Any], parts: dict[Any, Any]) -> tuple[Any, ...] | None:
    """`obj` as a compact record: its key tuple (interned in `shapes`) then its values, each
    nested dict packed the same way (interned in `parts` when hashable: an Event's `source` and
    `involvedObject` are shared by many Events). None if a value is a tuple (a record could not
    tell it from a nested one): such an object is stored as it is. `_unpack` gives an equal
    dict back, keys in the same order."""
    values: builtins.list[Any] = []
    for key, value in obj.items():
        kind = type(value)
        if kind is dict:
            value = _pack(value, shapes, parts)
            if value is None:
                return None
            if key == "metadata":  # every object's own: not worth a place in `parts`
                values.append(value)
                continue
            try:
                shared = parts.get(value)
            except TypeError:  # a list inside: not hashable, kept as it is
                shared = None
            else:
                if shared is None:
                    if len(parts) >= COMPACT_INTERNED:
                        parts.clear()
                    shared = parts[value] = value
            if shared is not None:
                value = shared
        elif kind is tuple:
            return None
        values.append(value)
    keys = tuple(obj)
    shape = shapes.get(keys)
    if shape is None:
        if len(shapes) >= COMPACT_INTERNED:
            shapes.clear()
        shape = shapes[keys] = keys
    return (shape, *values)


def _unpack(record: tuple[Any, ...]) -> Obj:
    """The dict a compact record stands for (see _pack); a new dict at every call, nested dicts
    too; lists and strings are the stored ones (objects are immutable by convention)."""
    values = [_unpack(value) if type(value) is tuple else value for value in record[1:]]
    return dict(zip(record[0], values, strict=True))


def _as_obj(stored: Any) -> Obj:
    """A stored object as a dict: a compact record unpacked, a dict as it is."""
    return _unpack(stored) if type(stored) is tuple else stored


class _ResourceHistory:
    """One resource's retained events, as columns (a tuple per event would be one more object for
    Python's GC to traverse on every collection), oldest first, at most `limit`. `floor`: every
    event of the resource after this resourceVersion is held."""

    __slots__ = ("_objects", "_olds", "_rvs", "_types", "floor")

    def __init__(self, limit: int, floor: int) -> None:
        self.floor = floor
        self._rvs: deque[int] = deque(maxlen=limit)
        self._types: deque[str] = deque(maxlen=limit)
        # A compact resource's versions are held as records (see _pack), others as dicts.
        self._objects: deque[Any] = deque(maxlen=limit)
        self._olds: deque[Any] = deque(maxlen=limit)

    def __len__(self) -> int:
        return len(self._rvs)

    def append(self, rv: int, event_type: str, obj: Any, old: Any) -> None:
        rvs = self._rvs
        if len(rvs) == rvs.maxlen:
            self.floor = rvs[0]  # the oldest is dropped
        rvs.append(rv)
        self._types.append(event_type)
        self._objects.append(obj)
        self._olds.append(old)

    def after(self, resource: str, rv: int) -> list[tuple[int, str, str, Obj, Obj | None]]:
        """The held events after `rv` `(rv, type, resource, object, old)`, newest first."""
        events: list[tuple[int, str, str, Obj, Obj | None]] = []
        columns = zip(
            reversed(self._rvs), reversed(self._types), reversed(self._objects), reversed(self._olds), strict=True
        )
        for at, event_type, obj, old in columns:
            if at <= rv:
                break
            events.append((at, event_type, resource, _as_obj(obj), None if old is None else _as_obj(old)))
        return events


class _History:
    """The retained events, one bounded history per resource, as kube-apiserver keeps one watch
    cache per resource (storage/cacher: each resource's cacher has its own window), so that one
    resource's writes (a burst of Events) never push another's out. Events have no watch cache
    upstream (DefaultWatchCacheSizes: events 0; their watches are served by etcd); the bound here
    stands for etcd's compacted history. `limit` events per resource."""

    __slots__ = ("_limit", "_resources", "_start")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._resources: dict[str, _ResourceHistory] = {}
        self._start: int | None = None  # the revision before the first event this history held

    def __len__(self) -> int:
        return sum(len(column) for column in self._resources.values())

    def append(self, rv: int, event_type: str, resource: str, obj: Any, old: Any) -> None:
        column = self._resources.get(resource)
        if column is None:
            if self._start is None:
                self._start = rv - 1
            # Every event since the history started is held: this resource had none before.
            column = self._resources[resource] = _ResourceHistory(self._limit, self._start)
        column.append(rv, event_type, obj, old)

    def floor(self, revision: int, resource: str | None = None) -> int:
        """Every event after the resourceVersion returned is held (of `resource`, or of every
        resource), when the newest revision is `revision`."""
        if self._start is None:
            return revision  # nothing held yet (a history put in place at `revision`)
        if resource is not None:
            column = self._resources.get(resource)
            return column.floor if column is not None else self._start
        return max((column.floor for column in self._resources.values()), default=self._start)

    def after(self, rv: int, resource: str | None = None) -> list[tuple[int, str, str, Obj, Obj | None]]:
        """The held events after `rv` `(rv, type, resource, object, old)` (of `resource`, or of
        every resource), oldest first."""
        if resource is not None:
            column = self._resources.get(resource)
            events = column.after(resource, rv) if column is not None else []
        else:
            events = [event for plural, column in self._resources.items() for event in column.after(plural, rv)]
            events.sort(key=_revision_of, reverse=True)  # newest first, as one column's
        events.reverse()
        return events


def _revision_of(event: tuple[int, str, str, Obj, Obj | None]) -> int:
    return event[0]


class _Lease:
    """An etcd lease of one resource's store (Events): when it expires, the objects whose current
    version was written under it are deleted (a key written again moves to the newer write's
    lease). `attached`: the writes that asked the lease manager for a lease since it granted this
    one (it grants a new one after 1,000)."""

    __slots__ = ("attached", "expires", "info", "objects")

    def __init__(self, info: ResourceInfo, expires: float) -> None:
        self.info = info
        self.expires = expires
        self.attached = 1
        # The versions written under it, in commit order, as stored (records or dicts).
        self.objects: builtins.list[Any] = []


def selection_predicate(resource: str, options: dict[str, Any]) -> Callable[[Obj], bool] | None:
    """The test a list or watch of `resource` applies for its `labelSelector` and
    `fieldSelector` options (None: everything matches); BadRequest for a malformed selector."""
    field_predicate = fields.compile_selector(resource, options.get("fieldSelector"))
    label_text = options.get("labelSelector")
    label_selector = None
    if label_text:
        try:
            label_selector = labels.parse(label_text)
        except ValueError as exc:
            raise errors.bad_request(str(exc)) from exc
        if label_selector.empty():
            label_selector = None
    if label_selector is None:
        return field_predicate
    matches = label_selector.matches
    if field_predicate is None:
        return lambda obj: matches(obj["metadata"].get("labels"))
    return lambda obj: matches(obj["metadata"].get("labels")) and field_predicate(obj)


class APIServer:
    """The store, the request handler and the watch hub. See the module docstring."""

    def __init__(
        self, kernel: Kernel, trace: Trace | None = None, *, history_limit: int = DEFAULT_HISTORY_LIMIT
    ) -> None:
        self.kernel = kernel
        self.trace = trace if trace is not None else NULL_TRACE
        self.revision = 0
        # One record per handled request, in handle order (see handle()).
        self.requests = RequestLog()
        # Run before every operation; the first ApiError returned is the answer (fault injection).
        self.interceptors: list[Interceptor] = []
        # Extra seconds of latency a Client adds to a request (fault injection).
        self.latency_hooks: list[LatencyHook] = []
        # A ceiling on live pods (RunLimits.pods): creates beyond it are refused with 403, as an
        # exhausted ResourceQuota refuses them. None: no ceiling.
        self.max_pods: int | None = None
        # The DefaultTolerationSeconds admission plugin's flags (--default-not-ready- and
        # --default-unreachable-toleration-seconds), one value for both.
        self.default_toleration_seconds = DEFAULT_TOLERATION_SECONDS
        # resource -> namespace ("" for cluster-scoped) -> name -> object.
        # A resource of COMPACT_RESOURCES stores compact records (see _pack), read as dicts
        # through _lookup and _iter only; `_shapes` and `_parts` are their intern tables.
        self._store: dict[str, dict[str, dict[str, Any]]] = {plural: {} for plural in RESOURCES}
        self._shapes: dict[Any, Any] = {}
        self._parts: dict[Any, Any] = {}
        self._history = _History(history_limit)
        # What kube-apiserver's watch cache of each resource would still hold: a watch from an
        # older resourceVersion is 410 Gone (watch_cache.py), as on a cluster.
        self._watch_caches: dict[str, WatchCache] = {plural: WatchCache() for plural in RESOURCES}
        self._watches: dict[str, list[Watch]] = {plural: [] for plural in RESOURCES}
        self._watch_seq = 0
        self._strategies: dict[str, Strategy] = {plural: strategy_for(info) for plural, info in RESOURCES.items()}
        self._stamp_from = -1.0
        self._scheduled: dict[tuple[int, str], tuple[Obj, Obj]] = {}  # see _scheduled_status
        self._label_sets: dict[tuple[tuple[str, str], ...], Obj] = {}  # see _shared_labels
        # See _bound_spec: spec id -> (spec, its shared copy); repr -> shared copy;
        # (id of a shared copy, node) -> (the shared copy, the bound spec).
        self._spec_content: dict[int, tuple[Obj, Obj]] = {}
        self._canonical_specs: dict[str, Obj] = {}
        self._bound_specs: dict[tuple[int, str], tuple[Obj, Obj]] = {}
        self._stamp = ""
        # --event-ttl in whole seconds (config.eventTTL), and each `ttl` resource's lease
        # manager's previous lease (one lease manager per resource store, as upstream's).
        self.event_ttl = DEFAULT_EVENT_TTL
        self._leases: dict[str, _Lease] = {}
        self._handlers: dict[str, Callable[[Request], tuple[Any, int]]] = {
            "get": self._handle_get,
            "list": self._handle_list,
            "watch": self._handle_watch,
            "create": self._handle_create,
            "update": self._handle_update,
            "patch": self._handle_patch,
            "delete": self._handle_delete,
            "deletecollection": self._handle_deletecollection,
        }
        for name in BOOTSTRAP_NAMESPACES:
            self._create_object(
                RESOURCES["namespaces"], "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )

    # -- the entry point --------------------------------------------------------------------
    def handle(self, req: Request) -> Any:
        """Record, intercept and perform one request; returns the answer or raises ApiError."""
        index = len(self.requests)
        resource = _resource_path(req.resource, req.subresource) if req.subresource else req.resource
        # A namespace and a name are parts of a URL: strings. Anything else is refused (and
        # logged without it), before it can reach a dict lookup.
        malformed = not isinstance(req.namespace, str | None) or not isinstance(req.name, str | None)
        if malformed:
            req.namespace = req.namespace if isinstance(req.namespace, str) else None
            req.name = req.name if isinstance(req.name, str) else None
        record = self.requests.append(
            float(req.sent_at if req.sent_at is not None else self.kernel.now),
            req.client,
            req.verb,
            resource,
            req.namespace,
            req.name,
        )
        trace = self.trace
        outer = None
        if trace.enabled:
            # The request is the cause of everything it does: its writes (and so their watch
            # events), its answer, and what the sender does on hearing it (`answer_seq`).
            outer = trace.cause
            req.request_seq = trace.begin(
                "api.request",
                id=index,
                client=req.client,
                verb=req.verb,
                resource=resource,
                namespace=req.namespace,
                name=req.name,
            )
        try:
            try:
                if malformed:
                    raise errors.bad_request("the namespace and the name of a request must be strings")
                for interceptor in self.interceptors:
                    refusal = interceptor(req)
                    if refusal is not None:
                        raise refusal
                handler = self._handlers.get(req.verb)
                if handler is None:
                    raise errors.method_not_allowed(resource, req.verb)
                result, code = handler(req)
            except ApiError as err:
                record["code"] = err.code
                if trace.enabled:
                    if err.fault is not None:
                        req.answer_seq = trace.emit(
                            "api.response",
                            req.request_seq,
                            id=index,
                            code=err.code,
                            reason=err.reason,
                            fault=err.fault,
                        )
                    else:
                        req.answer_seq = trace.emit(
                            "api.response", req.request_seq, id=index, code=err.code, reason=err.reason
                        )
                raise
            record["code"] = code
            if req.verb == "create" and isinstance(result, dict) and req.subresource is None:
                # generateName: the record names the object the server created.
                meta = result.get("metadata") or {}
                record["name"] = meta.get("name")
                if record["namespace"] is None and meta.get("namespace"):
                    record["namespace"] = meta["namespace"]
            if trace.enabled:
                req.answer_seq = trace.emit("api.response", req.request_seq, id=index, code=code)
            return result
        finally:
            if req.request_seq is not None:
                trace.cause = outer

    # -- convenience methods ----------------------------------------------------------------
    def create(
        self,
        resource: str,
        namespace: str | None,
        body: Obj,
        *,
        subresource: str | None = None,
        client: str = "user",
        field_validation: str | None = None,
    ) -> Any:
        name = None
        if isinstance(body, dict) and isinstance(body.get("metadata"), dict):
            found = body["metadata"].get("name")
            name = found if isinstance(found, str) and found else None  # a bad name: the body's to refuse
        options = query_options(field_validation=field_validation)
        return self.handle(Request(client, "create", resource, subresource, namespace, name, body, options))

    def get(
        self, resource: str, namespace: str | None, name: str, *, subresource: str | None = None, client: str = "user"
    ) -> Any:
        return self.handle(Request(client, "get", resource, subresource, namespace, name))

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        client: str = "user",
    ) -> Obj:
        options = query_options(label_selector=label_selector or None, field_selector=field_selector or None)
        result: Obj = self.handle(Request(client, "list", resource, None, namespace, None, None, options))
        return result

    def update(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        body: Obj,
        *,
        subresource: str | None = None,
        client: str = "user",
        field_validation: str | None = None,
    ) -> Any:
        options = query_options(field_validation=field_validation)
        return self.handle(Request(client, "update", resource, subresource, namespace, name, body, options))

    def patch(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        client: str = "user",
        field_manager: str | None = None,
    ) -> Any:
        """A patch; an apply patch's field manager defaults to the client."""
        options: dict[str, Any] = {"patchType": patch_type}
        if field_manager is not None or PATCH_TYPES.get(patch_type) == "apply":
            options["fieldManager"] = field_manager or client
        return self.handle(Request(client, "patch", resource, subresource, namespace, name, patch, options))

    def delete(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, str] | None = None,
        client: str = "user",
    ) -> Any:
        options = query_options(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
        )
        return self.handle(Request(client, "delete", resource, None, namespace, name, None, options))

    def watch(
        self,
        resource: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        latency: float = 0.0,
        client: str = "user",
    ) -> Watch:
        """Open a watch (see watch.py). `resource_version` None or "0": every current object as
        a synthetic ADDED, then live; an older number than the history or the resource's watch
        cache keeps (`too_old_below`): 410 Expired; otherwise the retained events after it, then
        live."""
        options: dict[str, Any] = {"latency": latency}
        if resource_version is not None:
            options["resourceVersion"] = resource_version
        if label_selector:
            options["labelSelector"] = label_selector
        if field_selector:
            options["fieldSelector"] = field_selector
        result: Watch = self.handle(Request(client, "watch", resource, None, namespace, None, None, options))
        return result

    # -- read access without a request (report, UI, faults) ---------------------------------
    def objects(self, resource: str) -> Iterator[Obj]:
        """The live objects of `resource`, in key order. Not recorded as a request."""
        return self._iter(lookup(resource), None)

    def peek(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        """The stored object, or None. Not recorded as a request."""
        info = lookup(resource)
        return self._lookup(info.plural, (namespace or "") if info.namespaced else "", name)

    def count(self, resource: str, namespace: str | None = None) -> int:
        return self._size(lookup(resource).plural, namespace)

    def watches_for(self, resource: str) -> builtins.list[Watch]:
        """The open watches on `resource`, oldest first."""
        return list(self._watches[lookup(resource).plural])

    def history_oldest_rv(self) -> int:
        """The oldest resourceVersion from which the history holds every event (of every
        resource; revision + 1 if it holds none)."""
        return self._history.floor(self.revision) + 1

    def read(self, req: Request) -> Any:
        """Answer a `get` or `list` request without recording it: no request log line, no
        trace record, no interceptor (fault) sees it. The Kubernetes API's reads use this, so that
        looking at a simulation never changes its report."""
        if req.verb not in ("get", "list"):
            raise errors.method_not_allowed(req.resource, req.verb)
        return self._handlers[req.verb](req)[0]

    def dry_run(self, req: Request) -> tuple[Any, int]:
        """Answer a write as `dryRun=All` would, without recording it or changing anything: the
        seeded rng is restored afterwards (a dry-run create draws a uid), nothing is committed, no
        interceptor sees it. Returns `(answer, code)`; raises ApiError as `handle` would."""
        handler = self._handlers.get(req.verb)
        if handler is None or req.verb in ("watch", "get", "list"):
            raise errors.method_not_allowed(req.resource, req.verb)
        if req.resource == "namespaces" and req.verb in ("delete", "deletecollection"):
            raise errors.method_not_allowed("namespaces", "dry-run delete")
        options = {**req.options, "dryRun": "All"}
        state = self.kernel.rng.getstate()
        try:
            # The same request (its repeated keys too: strict decoding refuses them as for the
            # real write), dry; its Warning headers land in `req.warnings`, the list it shares.
            result: tuple[Any, int] = handler(dataclasses.replace(req, options=options))
            return result
        finally:
            self.kernel.rng.setstate(state)

    def too_old_below(self, resource: str) -> int:
        """The resourceVersion below which a watch of `resource` is 410 Gone: older than the
        history, or than what kube-apiserver's watch cache of it would still hold."""
        plural = lookup(resource).plural
        return max(self._history.floor(self.revision, plural), self._watch_caches[plural].too_old_below())

    def events_after(
        self, rv: int, resource: str | None = None
    ) -> builtins.list[tuple[int, str, str, Obj, Obj | None]]:
        """The committed events after `rv` `(rv, type, resource, object, old)`, oldest first;
        410 Expired if the history no longer holds them all (`events_since` returns what is
        left instead), or, for the start of a watch of `resource`, if its watch cache would not
        (`too_old_below`). A pure read: the Kubernetes API's watches are served from it."""
        floor = self._history.floor(self.revision) if resource is None else self.too_old_below(resource)
        if rv < floor:
            raise errors.resource_expired(f"too old resource version: {rv} ({floor})")
        return self._history.after(rv)

    def history(self) -> builtins.list[tuple[int, str, str, Obj, Obj | None]]:
        """A copy of the retained events `(rv, type, resource, object, old)`, oldest first."""
        return self._history.after(-1)

    def events_since(self, revision: int) -> builtins.list[tuple[int, str, str, Obj, Obj | None]]:
        """The retained events `(rv, type, resource, object, old)` after `revision`, oldest first
        (the oracles read the store's history incrementally with it)."""
        if revision >= self.revision:
            return []
        return self._history.after(revision)

    # -- handlers -----------------------------------------------------------------------------
    def _handle_get(self, req: Request) -> tuple[Any, int]:
        info = lookup(req.resource)
        self._check_subresource(info, req.subresource, "get")
        namespace = self._namespace(info, req.namespace, named=True)
        existing = self._existing(info, namespace, _required_name(req))
        if req.subresource == "scale":
            return self._scale_of(info, existing), 200
        return existing, 200

    def _handle_list(self, req: Request) -> tuple[Any, int]:
        info = lookup(req.resource)
        namespace = req.namespace if info.namespaced and req.namespace else None
        predicate = selection_predicate(info.plural, req.options)
        items = [obj for obj in self._iter(info, namespace) if predicate is None or predicate(obj)]
        return (
            {
                "kind": info.list_kind,
                "apiVersion": info.api_version,
                "metadata": {"resourceVersion": str(self.revision)},
                "items": items,
            },
            200,
        )

    def _handle_watch(self, req: Request) -> tuple[Any, int]:
        info = lookup(req.resource)
        namespace = req.namespace if info.namespaced and req.namespace else None
        options = req.options
        predicate = selection_predicate(info.plural, options)
        rv_option = options.get("resourceVersion")
        replay: list[tuple[int, str, Obj, Obj | None]] = []
        initial: list[Obj] = []
        if rv_option in (None, "", "0"):
            initial = [obj for obj in self._iter(info, namespace) if predicate is None or predicate(obj)]
        else:
            try:
                since = int(rv_option)
            except (TypeError, ValueError) as exc:
                raise errors.bad_request(f'invalid resource version "{rv_option}"') from exc
            if since > self.revision:
                # The watch cache waits up to 3 s for the revision, then gives up with this;
                # here nothing can commit while the request is handled, so at once.
                raise errors.too_large_resource_version(since, self.revision)
            floor = self.too_old_below(info.plural)
            if since < floor:
                # watchCache.getAllEventsSinceLocked: older than the oldest retained event - 1.
                raise errors.resource_expired(f"too old resource version: {since} ({floor})")
            for rv, event_type, _, obj, old in self._history.after(since, info.plural):
                replay.append((rv, event_type, obj, old))
        self._watch_seq += 1
        watch = Watch(
            self.kernel,
            info.plural,
            namespace,
            predicate,
            float(options.get("latency") or 0.0),
            req.client,
            self._unregister_watch,
            self._watch_seq,
        )
        self._watches[info.plural].append(watch)
        for obj in initial:
            watch.push(self.revision, ADDED, obj)
        for rv, event_type, obj, old in replay:
            if namespace is None or obj["metadata"].get("namespace") == namespace:
                watch.offer(rv, event_type, obj, old)
        return watch, 200

    def _handle_create(self, req: Request) -> tuple[Any, int]:
        info = lookup(req.resource)
        if req.subresource == "binding" and info.plural == "pods":
            return self._bind(req), 201
        if req.subresource == "eviction" and info.plural == "pods":
            return self._evict(req), 201
        if req.subresource is not None:
            self._check_subresource(info, req.subresource, "create")
            raise errors.method_not_allowed(info.subresource_group_resource(req.subresource), "create")
        body = req.body
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request was in an unknown format")
        directive = _field_validation(req)
        unknown = decode.check_body(info, body, duplicates=req.duplicates)
        if unknown:
            body = self._unknown_fields(req, directive, info, body, unknown, decode.type_of(info))
        namespace = self._namespace(info, req.namespace, body=body)
        return self._create_object(info, namespace, body, dry_run=_dry_run(req.options)), 201

    def _handle_update(self, req: Request) -> tuple[Any, int]:
        info = lookup(req.resource)
        self._check_subresource(info, req.subresource, "update")
        namespace = self._namespace(info, req.namespace, named=True)
        name = _required_name(req)
        existing = self._existing(info, namespace, name)
        body = req.body
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request was in an unknown format")
        directive = _field_validation(req)
        body_type = req.subresource if req.subresource == "scale" else None
        unknown = decode.check_body(info, body, body_type, existing, req.duplicates)
        if unknown:
            body = self._unknown_fields(req, directive, info, body, unknown, decode.type_of(info, body_type))
        dry_run = _dry_run(req.options)
        if req.subresource == "scale":
            return self._update_scale(info, existing, body, dry_run), 200
        if req.subresource == "finalize":
            return self._finalize(existing, body, dry_run), 200
        uid = (body.get("metadata") or {}).get("uid")
        if uid and uid != existing["metadata"].get("uid"):
            # DefaultUpdatedObjectInfo.Preconditions: a uid in the body is a storage precondition.
            raise errors.conflict(
                info.group_resource,
                name,
                self._storage_error(
                    info,
                    namespace,
                    name,
                    f"Precondition failed: UID in precondition: {uid}, "
                    f"UID in object meta: {existing['metadata'].get('uid')}",
                ),
            )
        status = req.subresource == "status"
        new = self._decode(info, body, namespace, name, status)
        self._check_resource_version(info, existing, new)
        return self._update_existing(info, existing, new, status, dry_run), 200

    def _handle_patch(self, req: Request) -> tuple[Any, int]:
        info = lookup(req.resource)
        self._check_subresource(info, req.subresource, "patch")
        namespace = self._namespace(info, req.namespace, named=True)
        name = _required_name(req)
        raw_type = req.options.get("patchType", "merge")
        patch_type = PATCH_TYPES.get(raw_type)
        if patch_type is None:
            raise errors.unsupported_media_type()
        decode.check_patch_body(req.body)
        directive = _field_validation(req)
        if req.duplicates and patch_type != "json":
            repeated = decode.patch_duplicates(req.body, req.duplicates)
            if repeated and directive == "Strict":
                raise errors.bad_request(decode.strict_error(repeated, info))
            if repeated and directive == "Warn":
                req.warnings.extend(repeated)
        dry_run = _dry_run(req.options)
        existing = self._lookup(info.plural, namespace, name)
        if existing is None:
            if patch_type == "apply" and req.subresource is None and isinstance(req.body, dict):
                # Server-side apply on a missing object creates it (201).
                body = patches.strip_directives(req.body)
                meta = dict(body.get("metadata") or {})
                if meta.get("name") and meta["name"] != name:
                    raise errors.bad_request(
                        f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
                    )
                meta["name"] = name
                unknown = decode.check_body(info, {**body, "metadata": meta})
                if unknown:
                    body = self._unknown_fields(req, directive, info, body, unknown, decode.type_of(info))
                manager = _field_manager(req.options)
                applied = server_side_apply.apply(None, body, manager, info.api_version, self._timestamp(), force=True)
                managed = applied["metadata"]["managedFields"]
                created = self._create_object(
                    info, namespace, {**body, "metadata": meta}, dry_run=dry_run, managed_fields=managed
                )
                return created, 201
            raise errors.not_found(info.group_resource, name)
        if req.subresource == "scale":
            patched_scale = self._apply_patch(patch_type, self._scale_of(info, existing), req.body)
            unknown = decode.check_patched(info, patched_scale, "scale")
            if unknown:
                patched_scale = self._unknown_fields(
                    req, directive, info, patched_scale, unknown, decode.SCALE, patched=True
                )
            return self._update_scale(info, existing, patched_scale, dry_run), 200
        if patch_type == "apply" and req.subresource is None:
            if not isinstance(req.body, dict):
                raise errors.bad_request("the body of the request was in an unknown format")
            patched = server_side_apply.apply(
                existing,
                req.body,
                _field_manager(req.options),
                info.api_version,
                self._timestamp(),
                force=str(req.options.get("force", "")).lower() == "true",
            )
        else:
            patched = self._apply_patch(patch_type, existing, req.body)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patched object is not a JSON object")
        unknown = decode.check_patched(info, patched, None, existing)
        if unknown:
            patched = self._unknown_fields(req, directive, info, patched, unknown, decode.type_of(info), patched=True)
        status = req.subresource == "status"
        new = self._decode(info, patched, namespace, name, status)
        self._check_resource_version(info, existing, new)
        return self._update_existing(info, existing, new, status, dry_run), 200

    def _handle_delete(self, req: Request) -> tuple[Any, int]:
        info = lookup(req.resource)
        if req.subresource is not None:
            raise errors.method_not_allowed(info.subresource_group_resource(req.subresource), "delete")
        namespace = self._namespace(info, req.namespace, named=True)
        name = _required_name(req)
        existing = self._existing(info, namespace, name)
        if info.plural == "namespaces":
            return self._delete_namespace(existing), 200
        return self._delete_object(info, existing, req.options), 200

    def _handle_deletecollection(self, req: Request) -> tuple[Any, int]:
        # Store.DeleteCollection: list with the selectors, then delete each (one request).
        info = lookup(req.resource)
        if req.subresource is not None or info.plural == "namespaces":
            raise errors.method_not_allowed(info.group_resource, "deletecollection")
        namespace = req.namespace if info.namespaced and req.namespace else None
        predicate = selection_predicate(info.plural, req.options)
        doomed = [obj for obj in self._iter(info, namespace) if predicate is None or predicate(obj)]
        deleted = []
        for obj in doomed:
            meta = obj["metadata"]
            current = self._lookup(info.plural, meta.get("namespace") or "", meta["name"])
            if current is not None:
                deleted.append(self._delete_object(info, current, req.options))
        return (
            {
                "kind": info.list_kind,
                "apiVersion": info.api_version,
                "metadata": {"resourceVersion": str(self.revision)},
                "items": deleted,
            },
            200,
        )

    def _unknown_fields(
        self,
        req: Request,
        directive: str,
        info: ResourceInfo,
        body: Obj,
        unknown: builtins.list[str],
        go_type: decode.GoType,
        *,
        patched: bool = False,
    ) -> Obj:
        """The body without its unknown fields, after refusing it (Strict) or noting a warning per
        strict error (Warn), as upstream's strict decoding and KEP-2885's fieldValidation do.
        `unknown` holds decode's strict errors (decode.strict_error words the refusal)."""
        if directive == "Strict":
            raise errors.bad_request(decode.strict_error(unknown, info, None if patched else go_type))
        if directive == "Warn":
            req.warnings.extend(unknown)
        pruned: Obj = decode.prune(body, go_type)
        return pruned

    # -- create ---------------------------------------------------------------------------
    def _create_object(
        self,
        info: ResourceInfo,
        namespace: str,
        body: Obj,
        *,
        dry_run: bool = False,
        managed_fields: builtins.list[Obj] | None = None,
    ) -> Obj:
        strategy = self._strategies[info.plural]
        self._check_kind(info, body)
        meta_in = body.get("metadata") or {}
        if not isinstance(meta_in, dict):
            raise errors.bad_request("metadata must be an object")
        if meta_in.get("resourceVersion"):
            raise errors.internal_error("resourceVersion should not be set on objects to be created")
        if info.namespaced:
            if meta_in.get("namespace") and meta_in["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            self._admit_namespace(info, namespace, meta_in.get("name") or "")
        generate = bool(meta_in.get("generateName")) and not meta_in.get("name")
        attempts = MAX_NAME_GENERATION_ATTEMPTS if generate else 1
        name = ""
        for _ in range(attempts):
            # apiVersion, kind, metadata first, as the API serialises them.
            obj: Obj = {"apiVersion": info.api_version, "kind": info.kind, "metadata": None}
            obj.update(body)
            meta = dict(meta_in)
            obj["metadata"] = meta
            obj["apiVersion"] = info.api_version
            obj["kind"] = info.kind
            for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields", "generation"):
                meta.pop(key, None)
            if info.namespaced:
                meta["namespace"] = namespace
            else:
                meta.pop("namespace", None)
            _drop_empty_meta(meta)
            if "labels" in meta:
                meta["labels"] = self._shared_labels(meta["labels"])
            if managed_fields:
                meta["managedFields"] = managed_fields
            # rest.FillObjectMetaSystemFields, then the generated name (store.create order).
            meta["uid"] = self._new_uid()
            meta["creationTimestamp"] = self._timestamp()
            if generate:
                meta["name"] = self._generate_name(meta["generateName"])
            strategy.default_for_create(obj)
            refused = strategy.admit_for_create(obj, self.default_toleration_seconds)
            if refused is not None:
                raise errors.forbidden(info.group_resource, meta.get("name") or "", refused)
            strategy.prepare_for_create(obj)
            causes = strategy.validate(obj)
            if causes:
                raise errors.invalid(info.group_kind, meta.get("name") or "", causes)
            name = meta["name"]
            if self.max_pods is not None and info.plural == "pods":
                self._admit_pod_ceiling(info, name)
            existing = self._lookup(info.plural, namespace, name)
            if existing is None:
                if dry_run:
                    return obj
                self._commit(info, ADDED, obj, None)
                return obj
            if not generate:
                err = errors.already_exists(info.group_resource, name)
                if existing["metadata"].get("deletionTimestamp"):
                    err.message = f"object is being deleted: {err.message}"
                raise err
        raise errors.generate_name_conflict(info.group_resource, name)

    def _admit_pod_ceiling(self, info: ResourceInfo, name: str) -> None:
        # The run's pod ceiling, in the words of the ResourceQuota admission plugin (which, like
        # this check, runs after validation, so the generated name is known).
        used = self.count("pods")
        limit = self.max_pods
        if limit is not None and used >= limit:
            raise errors.forbidden(
                info.group_resource,
                name,
                f"exceeded quota: {POD_CEILING_QUOTA}, requested: pods=1, used: pods={used}, limited: pods={limit}",
            )

    def digest(self) -> str:
        """A fingerprint of the store: the revision and every stored object, in key order. Equal
        digests mean nothing was written (tests assert a refused request changed nothing)."""
        hasher = hashlib.sha256(str(self.revision).encode())
        for plural in sorted(RESOURCES):
            for obj in self._iter(RESOURCES[plural], None):
                hasher.update(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode())
        return hasher.hexdigest()

    def _shared_labels(self, labels: Any) -> Any:
        """An equal, server-owned labels dict, one per distinct label set: every pod of a
        ReplicaSet has the same labels (objects are immutable by convention). Bounded."""
        try:
            key = tuple(labels.items())
            shared = self._label_sets.get(key)
        except (AttributeError, TypeError):  # not a dict of strings: validation will say so
            return labels
        if shared is None:
            if len(self._label_sets) >= SHARED_LABEL_SETS:
                self._label_sets.clear()
            shared = self._label_sets[key] = dict(labels)
        return shared

    def _new_uid(self) -> str:
        # uuid4 layout (version 4, RFC 4122 variant) over 128 bits of the seeded rng; formatted
        # by hand because uuid.UUID() costs more than the rest of a create's metadata.
        bits = (self.kernel.rng.getrandbits(128) & _UUID_CLEAR) | _UUID_SET
        h = f"{bits:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def _generate_name(self, base: str) -> str:
        # `"".join(rng.choices(NAME_ALPHABET, k=5))` without the list: Random.choices without
        # weights draws `population[floor(random() * n)]` k times, n as a float; so does this,
        # with the same draws in the same order (int() is floor() for these non-negative values).
        random = self.kernel.rng.random
        n = _NAME_ALPHABET_SIZE
        alphabet = NAME_ALPHABET
        suffix = (
            alphabet[int(random() * n)]
            + alphabet[int(random() * n)]
            + alphabet[int(random() * n)]
            + alphabet[int(random() * n)]
            + alphabet[int(random() * n)]
        )
        return base[:MAX_GENERATED_NAME_LENGTH] + suffix

    def _timestamp(self) -> str:
        # rfc3339 has whole seconds: reuse the string while the second does not change.
        now = self.kernel.now
        if not (self._stamp_from <= now < self._stamp_from + 1.0):
            self._stamp_from = float(int(now // 1))
            self._stamp = rfc3339(now)
        return self._stamp

    def _admit_namespace(self, info: ResourceInfo, namespace: str, name: str) -> None:
        # NamespaceLifecycle admission.
        ns = self._lookup("namespaces", "", namespace)
        if ns is None:
            raise errors.not_found("namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            message = f"unable to create new content in namespace {namespace} because it is being terminated"
            raise errors.forbidden(
                info.group_resource,
                name,
                message,
                [{"reason": "NamespaceTerminating", "message": message, "field": "metadata.namespace"}],
            )

    # -- update ---------------------------------------------------------------------------
    def _decode(self, info: ResourceInfo, body: Obj, namespace: str, name: str, status: bool) -> Obj:
        """The object a PUT body / patched object decodes to (checkName, namespace, defaults);
        `status`: the write is to the status subresource."""
        self._check_kind(info, body)
        meta_in = body.get("metadata") or {}
        if not isinstance(meta_in, dict):
            raise errors.bad_request("metadata must be an object")
        if meta_in.get("name") and meta_in["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta_in['name']}) does not match the name on the URL ({name})"
            )
        obj_ns = meta_in.get("namespace") or ""
        if info.namespaced and obj_ns and obj_ns != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        obj = dict(body)
        meta = dict(meta_in)
        obj["metadata"] = meta
        obj["apiVersion"] = info.api_version
        obj["kind"] = info.kind
        meta["name"] = name
        if info.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        _drop_empty_meta(meta)
        strategy = self._strategies[info.plural]
        if status:
            strategy.default_for_status_update(obj)
        else:
            strategy.default(obj)
        return obj

    def _check_resource_version(self, info: ResourceInfo, existing: Obj, new: Obj) -> None:
        rv = new["metadata"].get("resourceVersion")
        current = existing["metadata"]["resourceVersion"]
        if not rv:
            new["metadata"]["resourceVersion"] = current  # AllowUnconditionalUpdate
        elif rv != current:
            raise errors.conflict(info.group_resource, existing["metadata"]["name"])

    def _update_existing(self, info: ResourceInfo, existing: Obj, new: Obj, status: bool, dry_run: bool = False) -> Obj:
        """rest.BeforeUpdate + validation + commit (or delete, or nothing for a no-op)."""
        strategy = self._strategies[info.plural]
        old_meta = existing["metadata"]
        meta = new["metadata"]
        if "generation" in old_meta:
            meta["generation"] = old_meta["generation"]
        else:
            meta.pop("generation", None)
        if status:
            strategy.prepare_for_status_update(new, existing)
        else:
            strategy.prepare_for_update(new, existing)
        if not meta.get("uid"):
            meta["uid"] = old_meta.get("uid")
        for key in ("creationTimestamp", "deletionTimestamp"):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        if "deletionGracePeriodSeconds" in old_meta and meta.get("deletionGracePeriodSeconds") is None:
            meta["deletionGracePeriodSeconds"] = old_meta["deletionGracePeriodSeconds"]
        causes = strategy.validate_status_update(new, existing) if status else strategy.validate_update(new, existing)
        if causes:
            raise errors.invalid(info.group_kind, meta.get("name") or "", causes)
        if new == existing or dry_run:
            return existing if new == existing else new
        if (
            old_meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not old_meta.get("deletionGracePeriodSeconds")
            and not (info.plural == "namespaces" and (new.get("spec") or {}).get("finalizers"))
        ):
            # ShouldDeleteDuringUpdate: the last finalizer of a marked object is gone.
            return self._commit_delete(info, new, existing)
        self._commit(info, MODIFIED, new, existing)
        return new

    # -- scale ----------------------------------------------------------------------------
    def _scale_of(self, info: ResourceInfo, obj: Obj) -> Obj:
        meta = obj["metadata"]
        spec = obj.get("spec") or {}
        if info.group == "apps":  # a LabelSelector (ReplicaSets, Deployments); an RC's is a map
            try:
                selector = str(labels.selector_from_label_selector(spec.get("selector")))
            except ValueError:
                selector = ""
        else:
            selector = str(labels.selector_from_set(spec.get("selector") or {}))
        replicas = spec.get("replicas") or 0
        status: Obj = {"replicas": (obj.get("status") or {}).get("replicas") or 0}
        if selector:
            status["selector"] = selector
        scale_meta = {
            key: meta[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in meta
        }
        # autoscaling/v1 ScaleSpec.replicas is omitempty: 0 replicas serialise as an empty spec.
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": scale_meta,
            "spec": {"replicas": replicas} if replicas else {},
            "status": status,
        }

    def _update_scale(self, info: ResourceInfo, existing: Obj, scale: Any, dry_run: bool) -> Obj:
        if not isinstance(scale, dict):
            raise errors.bad_request("the body of the request was in an unknown format")
        old_meta = existing["metadata"]
        name = old_meta["name"]
        scale_meta = dict(scale.get("metadata") or {})
        scale_meta.setdefault("name", name)
        scale_meta.setdefault("namespace", old_meta.get("namespace"))
        scale = {**scale, "metadata": scale_meta}
        causes = v.validate_scale(scale)
        if causes:
            raise errors.invalid("Scale.autoscaling", name, causes)
        uid = scale_meta.get("uid")
        if uid and uid != old_meta.get("uid"):
            raise errors.conflict(
                info.subresource_group_resource("scale"),
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {old_meta.get('uid')}",
            )
        replicas = (scale.get("spec") or {}).get("replicas") or 0
        new = dict(existing)
        new["metadata"] = {**old_meta, "resourceVersion": scale_meta.get("resourceVersion") or ""}
        new["spec"] = {**(existing.get("spec") or {}), "replicas": replicas}
        self._check_resource_version(info, existing, new)
        return self._scale_of(info, self._update_existing(info, existing, new, False, dry_run))

    # -- pods/binding ---------------------------------------------------------------------
    def _evict(self, req: Request) -> Obj:
        """pods/eviction (pkg/registry/core/pod/storage/eviction.go): with no
        PodDisruptionBudget served, every eviction is allowed and is the pod's graceful deletion
        with the Eviction's DeleteOptions; the answer is a Success Status (201, as upstream's
        create handler fills the code in)."""
        info = RESOURCES["pods"]
        eviction = req.body if isinstance(req.body, dict) else {}
        decode.check_body(info, eviction, "eviction")
        kind, api_version = eviction.get("kind"), eviction.get("apiVersion")
        if kind and kind != "Eviction":
            raise errors.bad_request(
                f"the kind of the object ({kind}) does not match the kind served at this endpoint (Eviction)"
            )
        if api_version and api_version not in ("policy/v1", "policy/v1beta1"):
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version (policy/v1)"
            )
        meta = eviction.get("metadata") or {}
        namespace = self._namespace(info, req.namespace, named=True, body=eviction)
        name = _required_name(req)
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request("name in URL does not match name in Eviction object")
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        delete_options = eviction.get("deleteOptions") or {}
        options: dict[str, Any] = {
            key: delete_options[key]
            for key in ("gracePeriodSeconds", "preconditions", "propagationPolicy")
            if delete_options.get(key) is not None
        }
        if "All" in (delete_options.get("dryRun") or ()) or _dry_run(req.options):
            options["dryRun"] = "All"
        existing = self._existing(info, namespace, name)
        self._delete_object(info, existing, options)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _bind(self, req: Request) -> Obj:
        info = RESOURCES["pods"]
        binding = req.body if isinstance(req.body, dict) else {}
        decode.check_body(info, binding, "binding")
        binding_meta = binding.get("metadata") or {}
        namespace = self._namespace(info, req.namespace, body=binding)
        name = req.name or binding_meta.get("name") or ""
        if binding_meta.get("name") and binding_meta["name"] != name:
            raise errors.bad_request("name in URL does not match name in Binding object")
        causes = v.validate_binding(binding)
        if causes:
            raise errors.invalid("Binding", name, causes)
        existing = self._existing(info, namespace, name)
        meta = existing["metadata"]
        uid = binding_meta.get("uid")
        if uid and uid != meta.get("uid"):
            raise errors.conflict(
                info.group_resource,
                name,
                self._storage_error(
                    info,
                    namespace,
                    name,
                    f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}",
                ),
            )
        rv = binding_meta.get("resourceVersion")
        if rv and rv != meta.get("resourceVersion"):
            raise errors.conflict(info.group_resource, name)
        spec = existing.get("spec") or {}
        binding_group_resource = info.subresource_group_resource("binding")
        if meta.get("deletionTimestamp"):
            raise errors.conflict(
                binding_group_resource, name, f"pod {name} is being deleted, cannot be assigned to a host"
            )
        if spec.get("nodeName"):
            raise errors.conflict(
                binding_group_resource, name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
            )
        if spec.get("schedulingGates"):
            raise errors.conflict(binding_group_resource, name, f"pod {name} has non-empty .spec.schedulingGates")
        new = dict(existing)
        new_meta = dict(meta)
        new["metadata"] = new_meta
        annotations = binding_meta.get("annotations")
        if annotations:
            new_meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
        new["spec"] = self._bound_spec(spec, binding["target"]["name"])
        status = existing.get("status") or {}
        new["status"] = self._scheduled_status(status)
        if not _dry_run(req.options):
            self._commit(info, MODIFIED, new, existing)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _bound_spec(self, spec: Obj, node_name: Any) -> Obj:
        """`{**spec, "nodeName": node_name}`, one shared dict per (spec content, node): the pods
        of every template with the same spec that land on one node share their spec (immutable
        by convention; 0.27 KB per pod at 100,000 pods). Specs are shared by content: `repr`
        keeps key order and tells 1, 1.0 and True apart, so pods share a spec only when it
        serialises byte for byte the same, and the shared one is the server's own deep copy.
        A spec is looked up by identity first (the entry holds it, so its id cannot be reused
        meanwhile) and the entry used only while the spec still equals it, as the strategy's
        spec memo does. The tables are bounded."""
        if not isinstance(node_name, str):
            return {**spec, "nodeName": node_name}
        entry = self._spec_content.get(id(spec))
        if entry is None or entry[0] is not spec or entry[1] != spec:
            content = repr(spec)
            if len(content) > MAX_SHARED_SPEC_CHARS:
                return {**spec, "nodeName": node_name}
            canonical = self._canonical_specs.get(content)
            if canonical is None:
                if len(self._canonical_specs) >= SPEC_CACHE_SIZE:
                    self._canonical_specs.clear()
                canonical = self._canonical_specs[content] = _copy_json(spec)
            if len(self._spec_content) >= BOUND_SPEC_CACHE_SIZE:
                self._spec_content.clear()
            entry = self._spec_content[id(spec)] = (spec, canonical)
        canonical = entry[1]
        key = (id(canonical), node_name)
        hit = self._bound_specs.get(key)
        if hit is not None and hit[0] is canonical:
            return hit[1]
        if len(self._bound_specs) >= BOUND_SPEC_CACHE_SIZE:
            self._bound_specs.clear()
        bound = {**canonical, "nodeName": node_name}
        self._bound_specs[key] = (canonical, bound)  # holds `canonical`: its id stays its own
        return bound

    def _scheduled_status(self, status: Obj) -> Obj:
        """`status` with PodScheduled True as of now. Pods bound in the same second from the same
        status object (the shared initial one) share the result: immutable by convention, and
        one dict, list and condition fewer per pod for the GC and the watch history to hold.
        Keyed by identity; the entry holds `status`, so the id cannot be reused meanwhile."""
        now = rfc3339(self.kernel.now)
        key = (id(status), now)
        entry = self._scheduled.get(key)
        if entry is not None and entry[0] is status:
            return entry[1]
        scheduled = {**status, "conditions": _set_pod_scheduled(status.get("conditions"), now)}
        if len(self._scheduled) >= SCHEDULED_STATUS_CACHE_SIZE:
            self._scheduled.clear()
        self._scheduled[key] = (status, scheduled)
        return scheduled

    # -- delete ---------------------------------------------------------------------------
    def _delete_object(self, info: ResourceInfo, existing: Obj, options: dict[str, Any]) -> Obj:
        """Store.Delete: preconditions, graceful deletion, GC finalizers, then mark or remove."""
        strategy = self._strategies[info.plural]
        meta = existing["metadata"]
        name = meta["name"]
        policy = options.get("propagationPolicy")
        if policy is not None and policy not in PROPAGATION_POLICIES:
            raise errors.invalid(
                "DeleteOptions.meta.k8s.io",
                "",
                [v.not_supported("propagationPolicy", policy, [*PROPAGATION_POLICIES, "nil"])],
            )
        preconditions = options.get("preconditions") or {}
        kind_resource = info.group_kind  # BeforeDelete names the resource by its Kind.
        if preconditions.get("uid") is not None and preconditions["uid"] != meta.get("uid"):
            raise errors.conflict(
                kind_resource,
                name,
                f"the UID in the precondition ({preconditions['uid']}) does not match the UID in record "
                f"({meta.get('uid')}). The object might have been deleted and then recreated",
            )
        if preconditions.get("resourceVersion") is not None and preconditions["resourceVersion"] != meta.get(
            "resourceVersion"
        ):
            raise errors.conflict(
                kind_resource,
                name,
                f"the ResourceVersion in the precondition ({preconditions['resourceVersion']}) does not match the "
                f"ResourceVersion in record ({meta.get('resourceVersion')}). The object might have been modified",
            )
        grace = options.get("gracePeriodSeconds")
        if grace is not None:
            if isinstance(grace, bool) or not isinstance(grace, int) or grace > MAX_SECONDS:
                # A *int64 upstream; beyond ctrlscope's ceiling on durations a deletion timestamp
                # would not even be a date.
                raise errors.bad_request(
                    f"gracePeriodSeconds: must be an integer of at most {int(MAX_SECONDS)} seconds (got {grace!r:.40})"
                )
            if grace < 0:
                grace = 1
        dry_run = _dry_run(options)

        # rest.BeforeDelete: the graceful part.
        graceful = False
        changes: dict[str, Any] = {}
        grace_used = 0
        if strategy.graceful:
            if meta.get("deletionTimestamp"):
                current = meta.get("deletionGracePeriodSeconds")
                if current:
                    if grace is None or grace >= current:
                        return existing  # graceful deletion pending: only a shorter period counts
                    when = parse_rfc3339(meta["deletionTimestamp"]) - current + grace
                    changes = {"deletionTimestamp": rfc3339(when), "deletionGracePeriodSeconds": grace}
                    graceful = True
                    grace_used = grace
            else:
                grace_used = strategy.check_graceful_delete(existing, grace)
                changes = {
                    "deletionTimestamp": rfc3339(self.kernel.now + grace_used) if grace_used else self._timestamp(),
                    "deletionGracePeriodSeconds": grace_used,
                }
                if (meta.get("generation") or 0) > 0:
                    changes["generation"] = meta["generation"] + 1
                graceful = True

        finalizers = list(meta.get("finalizers") or ())
        new_finalizers = self._gc_finalizers(strategy, finalizers, options)
        finalizers_changed = set(new_finalizers) != set(finalizers)
        if graceful or finalizers or finalizers_changed:
            if finalizers_changed:
                finalizers = new_finalizers
            pending_finalizers = bool(finalizers)
            if not graceful:
                if not pending_finalizers:
                    return self._commit_delete(info, existing, None, dry_run)
                # markAsDeleting: no graceful deletion, finalizers pending.
                changes = {"deletionGracePeriodSeconds": 0}
                if not meta.get("deletionTimestamp"):
                    changes["deletionTimestamp"] = rfc3339(self.kernel.now)
                    if (meta.get("generation") or 0) > 0:
                        changes["generation"] = meta["generation"] + 1
                elif parse_rfc3339(meta["deletionTimestamp"]) > self.kernel.now:
                    changes["deletionTimestamp"] = rfc3339(self.kernel.now)
            marked = dict(existing)
            marked["metadata"] = {**meta, **changes}
            if finalizers_changed:
                marked["metadata"]["finalizers"] = finalizers
            if marked != existing and not dry_run:
                self._commit(info, MODIFIED, marked, existing)
            if pending_finalizers or grace_used > 0:
                return marked if marked != existing else existing
            return self._commit_delete(info, marked, None, dry_run)
        return self._commit_delete(info, existing, None, dry_run)

    def _gc_finalizers(
        self, strategy: Strategy, finalizers: builtins.list[str], options: dict[str, Any]
    ) -> builtins.list[str]:
        """deletionFinalizersForGarbageCollection: the finalizer list the delete options ask for."""
        policy = options.get("propagationPolicy")
        orphan_dependents = options.get("orphanDependents")

        def decide(wanted: str, opposite: str, default: bool) -> bool:
            if orphan_dependents is not None:
                return bool(orphan_dependents) if wanted == FINALIZER_ORPHAN else False
            if policy is not None:
                return bool(policy == "Orphan") if wanted == FINALIZER_ORPHAN else bool(policy == "Foreground")
            for finalizer in finalizers:
                if finalizer == wanted:
                    return True
                if finalizer == opposite:
                    return False
            return default

        orphan = decide(FINALIZER_ORPHAN, FINALIZER_FOREGROUND, strategy.gc_policy == ORPHAN_DEPENDENTS)
        foreground = decide(FINALIZER_FOREGROUND, FINALIZER_ORPHAN, False)
        kept = [f for f in finalizers if f not in (FINALIZER_ORPHAN, FINALIZER_FOREGROUND)]
        if orphan:
            kept.append(FINALIZER_ORPHAN)
        if foreground:
            kept.append(FINALIZER_FOREGROUND)
        return kept

    def _delete_namespace(self, existing: Obj) -> Obj:
        """The namespace REST's Delete: mark it Terminating (deletionTimestamp, phase) and leave
        its content to the namespace controller, which removes the `kubernetes` finalizer from
        `spec.finalizers` (`namespaces/{name}/finalize`) once the namespace is empty; a namespace
        with no finalizer left at all goes at once."""
        info = RESOURCES["namespaces"]
        name = existing["metadata"]["name"]
        if name in IMMORTAL_NAMESPACES:
            raise errors.forbidden(info.group_resource, name, "this namespace may not be deleted")
        if existing["metadata"].get("deletionTimestamp"):
            return existing
        marked = dict(existing)
        marked["metadata"] = {
            **existing["metadata"],
            "deletionTimestamp": rfc3339(self.kernel.now),
            "deletionGracePeriodSeconds": 0,
        }
        marked["status"] = {**(existing.get("status") or {}), "phase": "Terminating"}
        if not (existing.get("spec") or {}).get("finalizers") and not existing["metadata"].get("finalizers"):
            return self._commit_delete(info, marked, existing)
        self._commit(info, MODIFIED, marked, existing)
        return marked

    def _finalize(self, existing: Obj, body: Obj, dry_run: bool) -> Obj:
        """PUT namespaces/{name}/finalize: only `spec.finalizers` changes; a namespace being
        deleted that has no finalizer left is deleted (ShouldDeleteNamespaceDuringUpdate)."""
        info = RESOURCES["namespaces"]
        name = existing["metadata"]["name"]
        finalizers = (body.get("spec") or {}).get("finalizers") or []
        if not isinstance(finalizers, builtins.list) or not all(isinstance(f, str) and f for f in finalizers):
            raise errors.invalid(
                info.group_kind, name, [v.invalid("spec.finalizers", finalizers, "must be a list of names")]
            )
        rv = (body.get("metadata") or {}).get("resourceVersion")
        if rv and rv != existing["metadata"].get("resourceVersion"):
            raise errors.conflict(info.group_resource, name)
        new = dict(existing)
        new["metadata"] = dict(existing["metadata"])
        new["spec"] = {**(existing.get("spec") or {}), "finalizers": list(finalizers)}
        if not finalizers:
            del new["spec"]["finalizers"]
        if new == existing or dry_run:
            return existing if new == existing else new
        if existing["metadata"].get("deletionTimestamp") and not finalizers and not new["metadata"].get("finalizers"):
            return self._commit_delete(info, new, existing)
        self._commit(info, MODIFIED, new, existing)
        return new

    # -- commits ----------------------------------------------------------------------------
    def _commit(self, info: ResourceInfo, event_type: str, obj: Obj, old: Obj | None) -> None:
        """Write `obj` (whose metadata dict the server owns) at the next revision and fan the
        event out to the watches. This is the hot path."""
        self.revision = rv = self.revision + 1
        if self.trace.enabled:
            self.trace.note_revision(rv)
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rv)
        namespace = meta.get("namespace") or ""
        stored: Any = obj
        held_old: Any = old
        if info.plural in COMPACT_RESOURCES:
            stored = self._compact(obj)
            if old is not None:
                held_old = self._compact(old)
        if event_type == DELETED:
            self._drop(info.plural, namespace, meta["name"])
        else:
            self._put(info.plural, namespace, meta["name"], stored)
        self._history.append(rv, event_type, info.plural, stored, held_old)
        self._watch_caches[info.plural].update(rv, self.kernel.now)
        if info.ttl and event_type != DELETED:
            self._attach_lease(info, stored)
        watches = self._watches[info.plural]
        if watches:
            for watch in watches:
                watch_ns = watch.namespace
                if watch_ns is not None and watch_ns != namespace:
                    continue
                if watch.predicate is None:
                    watch.push(rv, event_type, obj)
                else:
                    watch.offer(rv, event_type, obj, old)

    def _attach_lease(self, info: ResourceInfo, obj: Any) -> None:
        """Attach a committed write to a lease of `event_ttl` seconds (leaseManager.GetLease): the
        previous lease if it expires late enough but not too late (`valid` and `sufficient`) and
        holds fewer than 1,000 objects, else a new one, whose expiry a kernel timer waits for.
        On the virtual clock several writes share an instant, so `sufficient` allows a lease
        granted at this very instant (upstream's clock has always moved on by then)."""
        now = self.kernel.now
        ttl = self.event_ttl
        reuse = min(int(LEASE_REUSE_DURATION_PERCENT * ttl), LEASE_REUSE_DURATION_SECONDS)
        lease = self._leases.get(info.plural)
        if lease is not None:
            lease.attached += 1
            if now + ttl < lease.expires <= now + ttl + reuse and lease.attached <= LEASE_MAX_OBJECT_COUNT:
                lease.objects.append(obj)
                return
        lease = self._leases[info.plural] = _Lease(info, vtime(now + ttl + reuse))
        lease.objects.append(obj)
        self.kernel.call_at(lease.expires, self._revoke, lease)

    def _revoke(self, lease: _Lease) -> None:
        """A lease expired: etcd deletes its keys in key order (lessor.Revoke sorts them), each
        one a DELETED event for the watches, as any delete. A key written again since belongs to
        its newer write's lease and stays."""
        info = lease.info
        if self._leases.get(info.plural) is lease:
            del self._leases[info.plural]
        current = []
        for stored in lease.objects:
            obj = _as_obj(stored)
            meta = obj["metadata"]
            if self._stored(info.plural, meta.get("namespace") or "", meta["name"]) is stored:
                current.append(obj)
        current.sort(key=lambda obj: (obj["metadata"].get("namespace") or "") + "/" + obj["metadata"]["name"])
        lease.objects = []
        for obj in current:
            self._commit_delete(info, obj, None)

    def _commit_delete(self, info: ResourceInfo, last: Obj, old: Obj | None, dry_run: bool = False) -> Obj:
        """Remove the object; the DELETED event carries its last state at the new revision."""
        if dry_run:
            return last
        deleted = dict(last)
        deleted["metadata"] = dict(last["metadata"])
        self._commit(info, DELETED, deleted, old if old is not None else last)
        return deleted

    # -- the store: every read and write of `_store` is one of these (readers that need a dict
    # use _lookup and _iter; _stored and _iter_stored give the stored form) ------------------
    def _lookup(self, plural: str, namespace: str, name: str) -> Obj | None:
        """The stored object at `namespace`/`name` ("" for cluster-scoped), or None. A compact
        resource's object is a new dict at every call."""
        stored = self._stored(plural, namespace, name)
        return None if stored is None else _as_obj(stored)

    def _stored(self, plural: str, namespace: str, name: str) -> Any:
        """What the store keeps at `namespace`/`name`: a dict, a compact record, or None."""
        bucket = self._store[plural].get(namespace)
        return None if bucket is None else bucket.get(name)

    def _compact(self, obj: Obj) -> Any:
        """What the store keeps of `obj` for a compact resource: its record, or `obj` itself if
        it cannot be packed (see _pack)."""
        record = _pack(obj, self._shapes, self._parts)
        return obj if record is None else record

    def _size(self, plural: str, namespace: str | None) -> int:
        """How many objects of `plural` are stored (in `namespace`, if given)."""
        buckets = self._store[plural]
        if namespace is not None:
            return len(buckets.get(namespace, ()))
        return sum(len(bucket) for bucket in buckets.values())

    def _put(self, plural: str, namespace: str, name: str, obj: Any) -> None:
        buckets = self._store[plural]
        bucket = buckets.get(namespace)
        if bucket is None:
            bucket = buckets[namespace] = {}
        bucket[name] = obj

    def _drop(self, plural: str, namespace: str, name: str) -> None:
        buckets = self._store[plural]
        bucket = buckets.get(namespace)
        if bucket is not None:
            bucket.pop(name, None)
            if not bucket:
                del buckets[namespace]

    def _iter(self, info: ResourceInfo, namespace: str | None) -> Iterator[Obj]:
        """The stored objects of `info` (in `namespace`, if given and namespaced), in etcd key
        order."""
        buckets = self._store[info.plural]
        if info.plural in COMPACT_RESOURCES:
            for stored in self._iter_stored(buckets, namespace if info.namespaced else None):
                yield _as_obj(stored)
        else:
            yield from self._iter_stored(buckets, namespace if info.namespaced else None)

    @staticmethod
    def _iter_stored(buckets: dict[str, dict[str, Any]], namespace: str | None) -> Iterator[Any]:
        if namespace is not None:
            bucket = buckets.get(namespace, {})
            for name in sorted(bucket):
                yield bucket[name]
            return
        # etcd key order: "<namespace>/<name>" compared as strings.
        for ns in sorted(buckets, key=lambda n: n + "/"):
            bucket = buckets[ns]
            for name in sorted(bucket):
                yield bucket[name]

    def _existing(self, info: ResourceInfo, namespace: str, name: str) -> Obj:
        obj = self._lookup(info.plural, namespace, name)
        if obj is None:
            raise errors.not_found(info.group_resource, name)
        return obj

    def _namespace(self, info: ResourceInfo, namespace: str | None, *, named: bool = False, body: Any = None) -> str:
        if not info.namespaced:
            return ""
        if namespace:
            return namespace
        if isinstance(body, dict):
            from_body = (body.get("metadata") or {}).get("namespace")
            if from_body:
                return str(from_body)
        if named:
            raise errors.bad_request("an empty namespace may not be set when a resource name is provided")
        raise errors.bad_request("an empty namespace may not be set during creation")

    def _check_subresource(self, info: ResourceInfo, subresource: str | None, verb: str) -> None:
        if subresource is None:
            return
        if subresource not in info.subresources:
            raise ApiError(404, errors.REASON_NOT_FOUND, "the server could not find the requested resource")
        if subresource in ("binding", "eviction"):
            allowed: tuple[str, ...] = ("create",)
        elif subresource == "finalize":
            allowed = ("update",)
        else:
            allowed = ("get", "update", "patch")
        if verb not in allowed:
            raise errors.method_not_allowed(info.subresource_group_resource(subresource), verb)

    def _check_kind(self, info: ResourceInfo, body: Obj) -> None:
        kind = body.get("kind")
        if kind and kind != info.kind:
            raise errors.bad_request(
                f"the kind of the object ({kind}) does not match the kind served at this endpoint ({info.kind})"
            )
        api_version = body.get("apiVersion")
        if api_version and api_version != info.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({info.api_version})"
            )

    def _storage_error(self, info: ResourceInfo, namespace: str, name: str, message: str) -> str:
        key = f"/registry/{_REGISTRY_PREFIX[info.plural]}/" + (f"{namespace}/{name}" if info.namespaced else name)
        return f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: {message}"

    def _apply_patch(self, patch_type: str, current: Obj, body: Any) -> Any:
        if patch_type == "merge":
            if not isinstance(body, dict):
                raise errors.bad_request("Invalid JSON Patch")
            return patches.merge_patch(current, body)
        if patch_type == "json":
            return patches.json_patch(current, body)
        return patches.strategic_merge_patch(current, body)

    def _unregister_watch(self, watch: Watch) -> None:
        watches = self._watches[watch.resource]
        if watch in watches:
            watches.remove(watch)


@functools.lru_cache(maxsize=64)
def _resource_path(resource: str, subresource: str) -> str:
    # "pods/status": one shared string per path, not one per logged request.
    return f"{resource}/{subresource}"


def _drop_empty_meta(meta: Obj) -> None:
    # Go's omitempty: an emptied list or map in ObjectMeta is not serialised at all.
    for key in ("ownerReferences", "finalizers", "labels", "annotations"):
        if key in meta and not meta[key]:
            del meta[key]


def _required_name(req: Request) -> str:
    if not req.name:
        raise errors.bad_request("resource name may not be empty")
    return req.name


def _field_manager(options: dict[str, Any]) -> str:
    manager = options.get("fieldManager")
    if not manager or not isinstance(manager, str):
        raise errors.invalid(
            "PatchOptions.meta.k8s.io",
            "",
            [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: is required for apply patch",
                    "field": "fieldManager",
                }
            ],
        )
    return manager


def _field_validation(req: Request) -> str:
    """The request's fieldValidation directive (Warn when absent, as upstream); 422 naming the
    option when it is none of them (ValidateFieldValidation)."""
    value = req.options.get("fieldValidation")
    if value is None or value == "":
        return "Warn"
    if value not in FIELD_VALIDATION:
        kind = f"{_OPTIONS_KIND.get(req.verb, 'CreateOptions')}.meta.k8s.io"
        raise errors.invalid(kind, "", [v.not_supported("fieldValidation", value, ["", *FIELD_VALIDATION])])
    return str(value)


def _dry_run(options: dict[str, Any]) -> bool:
    value = options.get("dryRun")
    return bool(value) and value != "None"


def _copy_json(value: Any) -> Any:
    # A deep copy of a JSON-shaped value (dicts, lists, scalars).
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_json(item) for item in value]
    return value


def _set_pod_scheduled(current: Any, now: str) -> list[Obj]:
    # podutil.UpdatePodCondition(PodScheduled=True): keep lastTransitionTime if already True.
    conditions: list[Obj] = list(current or ())
    new: Obj = {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
    for i, condition in enumerate(conditions):
        if condition.get("type") == "PodScheduled":
            if condition.get("status") == "True":
                new["lastTransitionTime"] = condition.get("lastTransitionTime")
            conditions[i] = new
            return conditions
    conditions.append(new)
    return conditions

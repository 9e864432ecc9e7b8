"""The garbage collector: ownerReference cascades (Background, Foreground, Orphan).

A simplified but honest counterpart of kube-controller-manager's pkg/controller/
garbagecollector (garbagecollector.go + graph_builder.go).

Guarantees
----------
* It sees the world only through watches on the owner-bearing resources (pods, replicasets,
  replicationcontrollers), delivered `delay` seconds after each commit, and acts only through its
  `Client` (user agent `garbage-collector`), so every call it makes is recorded and rate limited.
* The dependency graph (uid → node; owner uid → dependents, in the order first seen) is built
  from those events, as GraphBuilder does: an owner named by a dependent but not (yet) observed is
  a *virtual* node, queued once to be verified with a live GET.
* Background: when an owner is deleted, or a dependent's owner turns out not to exist, each
  dependent is examined with a live GET; one whose owners are all gone is deleted (with uid and
  resourceVersion preconditions, propagation Background unless its own finalizers say
  otherwise); one that still has a live owner only loses its dangling references (strategic merge
  `$patch: delete` by uid).
* Foreground: an owner marked with `foregroundDeletion` has its blocking dependents
  (`blockOwnerDeletion: true`) deleted; once none is left the finalizer is removed (a merge
  patch carrying the owner's resourceVersion) and the server deletes the owner.
* Orphan: an owner marked with `orphan` has its reference removed from each dependent, then the
  `orphan` finalizer removed.
* Work items are processed by `workers` coroutines (upstream --concurrent-gc-syncs, 20) from a
  de-duplicating FIFO; a failed item is retried with exponential back-off (5 ms doubling, capped
  at 1000 s). An ownerReference to a kind the server does not serve is never considered dangling.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from functools import partial
from typing import TYPE_CHECKING, Any

from controlplane.apiserver import resources
from controlplane.apiserver.errors import ApiError, is_conflict, is_gone, is_not_found
from controlplane.apiserver.watch import DELETED
from controlplane.controllers.registry import REGISTRY
from controlplane.kernel import Cancelled, Future, NotQuiescent, resumable
from controlplane.trace import NULL_TRACE, Trace

if TYPE_CHECKING:
    from controlplane.apiserver.client import Client
    from controlplane.apiserver.server import APIServer
    from controlplane.apiserver.watch import Watch
    from controlplane.kernel import Future, Kernel, Task

Obj = dict[str, Any]

# The owner graph: every kind a controller owns or controls (controlplane.controllers), in the
# registry's order (the informers start in it). A world passes its own (`resources`): the
# resources of the controllers it runs or runs by default (`Registry.in_world`), so a controller
# that is off by default adds no watch to a world that does not run it.
WATCHED_RESOURCES = REGISTRY.managed_resources()
FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"
DEFAULT_WORKERS = 20
ABSENT_OWNER_CACHE_SIZE = 500
RETRY_BASE_DELAY = 0.005
RETRY_MAX_DELAY = 1000.0
REMOVE_FINALIZER_ATTEMPTS = 5

_DELETE = "delete"
_ORPHAN = "orphan"


class _NoDependents(dict[str, None]):
    """The type of `_NO_DEPENDENTS`: a snapshot keeps it the one shared object (pickled by name)."""

    __slots__ = ()

    def __reduce__(self) -> str:
        return "_NO_DEPENDENTS"


_NO_DEPENDENTS: dict[str, None] = _NoDependents()  # shared, never written: see _Node.dependents


class _Node:
    """One object of the dependency graph (observed, or virtual: only named by a dependent)."""

    __slots__ = (
        "api_version",
        "being_deleted",
        "deleting_dependents",
        "dependents",
        "has_foreground",
        "has_orphan",
        "kind",
        "name",
        "namespace",
        "owners",
        "resource",
        "uid",
        "virtual",
    )

    def __init__(self, uid: str, api_version: str, kind: str, namespace: str | None, name: str) -> None:
        self.uid = uid
        self.api_version = api_version
        self.kind = kind
        self.namespace = namespace
        self.name = name
        info = resources.for_kind(api_version, kind)
        self.resource = info.plural if info is not None else None
        self.owners: list[Obj] = []
        # Insertion-ordered set of dependent uids: processing order follows first sight. Starts
        # as the shared empty _NO_DEPENDENTS (most nodes are pods, which own nothing): add with
        # `add_dependent`, never by item assignment.
        self.dependents: dict[str, None] = _NO_DEPENDENTS
        self.virtual = True
        self.being_deleted = False
        self.deleting_dependents = False
        self.has_orphan = False
        self.has_foreground = False

    def add_dependent(self, uid: str) -> None:
        if self.dependents is _NO_DEPENDENTS:
            self.dependents = {}
        self.dependents[uid] = None


class GarbageCollector:
    """Watch the owner-bearing resources and cascade deletions. Call `start()` once."""

    def __init__(
        self,
        server: APIServer,
        kernel: Kernel,
        client: Client,
        trace: Trace | None = None,
        *,
        delay: float = 0.0,
        workers: int = DEFAULT_WORKERS,
        resources: tuple[str, ...] = WATCHED_RESOURCES,
    ) -> None:
        self.resources = resources
        self.server = server
        self.kernel = kernel
        self.client = client
        self.trace = trace if trace is not None else NULL_TRACE
        self.delay = delay
        self.workers = workers
        self._nodes: dict[str, _Node] = {}
        self._absent: OrderedDict[str, None] = OrderedDict()
        self._watches: dict[str, Watch] = {}
        # A full (re)listing in progress, per resource: [events still to come, uids seen].
        self._listing: dict[str, list[Any]] = {}
        self._queue: deque[tuple[str, str]] = deque()
        self._queued: set[tuple[str, str]] = set()
        self._processing: set[tuple[str, str]] = set()
        self._again: set[tuple[str, str]] = set()
        self._failures: dict[tuple[str, str], int] = {}
        self._waiters: deque[Future] = deque()
        self._tasks: list[Task] = []
        self._running = False

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        if self._running:
            return
        self._running = True
        for resource in self.resources:
            self._open_watch(resource, None)
        for i in range(self.workers):
            self._tasks.append(self.kernel.spawn(self._worker(), f"garbage-collector/worker-{i}"))

    def stop(self) -> None:
        self._running = False
        for watch in self._watches.values():
            watch.stop()
        self._watches.clear()
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()

    def pending(self) -> int:
        """Work items queued or being processed (for display)."""
        return len(self._queue) + len(self._processing)

    def dependents_of(self, uid: str) -> list[str]:
        """The uids the graph currently records as dependents of `uid` (for display and tests)."""
        node = self._nodes.get(uid)
        return list(node.dependents) if node is not None else []

    # -- watches (the graph builder's informers) --------------------------------------------
    def _open_watch(self, resource: str, resource_version: str | None) -> None:
        try:
            watch = self.client.watch(resource, resource_version=resource_version, latency=self.delay)
        except ApiError as err:
            if is_gone(err) and resource_version is not None:
                self._open_watch(resource, None)
                return
            raise
        self._watches[resource] = watch
        if resource_version is None:
            # A full listing: whatever it does not mention has been deleted meanwhile.
            if watch.pending():
                self._listing[resource] = [watch.pending(), set()]
            else:
                self._end_listing(resource, set())
        watch.start(partial(self._on_events, resource), partial(self._on_close, resource, watch))

    def _on_close(self, resource: str, watch: Watch, reason: str) -> None:
        if not self._running or self._watches.get(resource) is not watch:
            return
        rv = watch.last_delivered_rv
        self._open_watch(resource, str(rv) if rv else None)

    def _on_events(self, resource: str, events: list[tuple[str, Obj]]) -> None:
        listing = self._listing.get(resource)
        trace = self.trace
        traced = trace.enabled
        outer = trace.cause if traced else None
        for event_type, obj in events:
            if traced:
                # What the collector does about this change is caused by the request that made it.
                trace.cause = trace.revision_cause(obj["metadata"].get("resourceVersion"))
            uid = obj["metadata"]["uid"]
            if event_type == DELETED:
                self._observe_deleted(uid)
            else:
                self._observe(resource, obj)
            if listing is not None:
                listing[1].add(uid)
                listing[0] -= 1
                if listing[0] <= 0:
                    self._end_listing(resource, listing[1])
                    listing = None
        if traced:
            trace.cause = outer

    def _end_listing(self, resource: str, seen: set[str]) -> None:
        self._listing.pop(resource, None)
        gone = [
            uid
            for uid, node in self._nodes.items()
            if node.resource == resource and not node.virtual and uid not in seen
        ]
        for uid in gone:
            self._observe_deleted(uid)

    # -- the graph ----------------------------------------------------------------------------
    def _observe(self, resource: str, obj: Obj) -> None:
        meta = obj["metadata"]
        uid = meta["uid"]
        refs: list[Obj] = meta.get("ownerReferences") or []
        node = self._nodes.get(uid)
        if node is None:
            info = resources.RESOURCES[resource]
            node = _Node(uid, info.api_version, info.kind, meta.get("namespace"), meta["name"])
            self._nodes[uid] = node
            node.virtual = False
            node.owners = refs
            for ref in refs:
                self._add_dependent(ref, node)
        else:
            if refs is node.owners and not node.virtual and not node.being_deleted and "deletionTimestamp" not in meta:
                return  # a write that changed neither owners nor deletion (a status update): no-op
            if node.virtual:
                node.virtual = False
                info = resources.RESOURCES[resource]
                node.api_version, node.kind, node.resource = info.api_version, info.kind, info.plural
                node.namespace, node.name = meta.get("namespace"), meta["name"]
            if refs is not node.owners and refs != node.owners:
                self._update_owners(node, refs)
        finalizers = meta.get("finalizers") or ()
        being_deleted = bool(meta.get("deletionTimestamp"))
        has_orphan = being_deleted and FINALIZER_ORPHAN in finalizers
        has_foreground = being_deleted and FINALIZER_FOREGROUND in finalizers
        starts_orphaning = has_orphan and not node.has_orphan
        starts_foreground = has_foreground and not node.has_foreground
        node.being_deleted = being_deleted
        node.has_orphan = has_orphan
        node.has_foreground = has_foreground
        # processTransitions.
        if starts_orphaning:
            self._add((_ORPHAN, uid))
        elif starts_foreground:
            node.deleting_dependents = True
            for dep in node.dependents:
                self._add((_DELETE, dep))
            self._add((_DELETE, uid))

    def _add_dependent(self, ref: Obj, dependent: _Node) -> None:
        owner_uid = ref.get("uid")
        if not owner_uid:
            return
        owner = self._nodes.get(owner_uid)
        if owner is None:
            owner = _Node(
                owner_uid, ref.get("apiVersion", ""), ref.get("kind", ""), dependent.namespace, ref.get("name", "")
            )
            self._nodes[owner_uid] = owner
            owner.add_dependent(dependent.uid)
            # Verify the virtual owner with a live lookup.
            self._add((_DELETE, owner_uid))
        else:
            owner.add_dependent(dependent.uid)

    def _update_owners(self, node: _Node, refs: list[Obj]) -> None:
        old = {ref.get("uid"): ref for ref in node.owners}
        new = {ref.get("uid"): ref for ref in refs}
        for uid, ref in new.items():
            if uid not in old:
                self._add_dependent(ref, node)
        for uid, ref in old.items():
            owner = self._nodes.get(uid) if uid else None
            if owner is None:
                continue
            if uid not in new:
                owner.dependents.pop(node.uid, None)
                if owner.deleting_dependents:
                    self._add((_DELETE, owner.uid))
            elif ref.get("blockOwnerDeletion") and not new[uid].get("blockOwnerDeletion") and owner.deleting_dependents:
                self._add((_DELETE, owner.uid))
        node.owners = refs

    def _observe_deleted(self, uid: str) -> None:
        node = self._nodes.pop(uid, None)
        if node is None:
            return
        for ref in node.owners:
            owner = self._nodes.get(str(ref.get("uid", "")))
            if owner is None:
                continue
            owner.dependents.pop(uid, None)
            if owner.deleting_dependents:
                self._add((_DELETE, owner.uid))
        if node.dependents:
            self._mark_absent(uid)
        for dep in node.dependents:
            self._add((_DELETE, dep))

    def _mark_absent(self, uid: str) -> None:
        self._absent[uid] = None
        self._absent.move_to_end(uid)
        while len(self._absent) > ABSENT_OWNER_CACHE_SIZE:
            self._absent.popitem(last=False)

    # -- the work queue -----------------------------------------------------------------------
    def _add(self, item: tuple[str, str]) -> None:
        if item in self._queued:
            return
        if item in self._processing:
            self._again.add(item)
            return
        self._queued.add(item)
        self._queue.append(item)
        if self._waiters:
            self._waiters.popleft().set_result(None)

    async def _get(self, parked: Future | None = None) -> tuple[str, str]:
        """The next item, waiting while there is none. `parked`: the wake-up a worker restored
        from a snapshot was waiting for (in `_waiters` already; see `kernel.resumable`)."""
        waiter = parked
        while waiter is not None or not self._queue:
            if waiter is None:
                waiter = self.kernel.create_future()
                self._waiters.append(waiter)
            await waiter
            waiter = None
        item = self._queue.popleft()
        self._queued.discard(item)
        self._processing.add(item)
        return item

    def _done(self, item: tuple[str, str]) -> None:
        self._processing.discard(item)
        if item in self._again:
            self._again.discard(item)
            self._add(item)

    async def _worker(self, parked: Future | None = None) -> None:
        try:
            while True:
                item = await self._get(parked)
                parked = None
                try:
                    retry = await self._process(item)
                except ApiError:
                    retry = True
                finally:
                    self._done(item)
                if retry and self._running:
                    failures = self._failures.get(item, 0)
                    self._failures[item] = failures + 1
                    delay = min(RETRY_BASE_DELAY * 2**failures, RETRY_MAX_DELAY)
                    self.kernel.call_later(delay, self._add, item)
                else:
                    self._failures.pop(item, None)
        except Cancelled:
            return

    async def _process(self, item: tuple[str, str]) -> bool:
        kind, uid = item
        node = self._nodes.get(uid)
        if node is None:
            return False
        if kind == _ORPHAN:
            return await self._attempt_to_orphan(node)
        return await self._attempt_to_delete(node)

    # -- attemptToDeleteItem ------------------------------------------------------------------
    async def _attempt_to_delete(self, node: _Node) -> bool:
        if node.being_deleted and not node.deleting_dependents:
            return False
        if node.resource is None:
            return False  # a kind the server does not serve: cannot be looked up
        try:
            latest = await self.client.get(node.resource, node.namespace, node.name)
        except ApiError as err:
            if is_not_found(err):
                self._virtual_delete(node)
                return False
            raise
        if latest["metadata"].get("uid") != node.uid:
            self._virtual_delete(node)
            return False
        if node.deleting_dependents:
            return await self._process_deleting_dependents(node)
        refs = latest["metadata"].get("ownerReferences") or []
        if not refs:
            return False
        solid: list[Obj] = []
        dangling: list[Obj] = []
        waiting: list[Obj] = []
        for ref in refs:
            state = await self._classify(ref, node)
            (solid if state == "solid" else dangling if state == "dangling" else waiting).append(ref)
        if solid:
            if not dangling and not waiting:
                return False
            doomed = [ref["uid"] for ref in (*dangling, *waiting)]
            patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": u} for u in doomed], "uid": node.uid}}
            try:
                await self.client.patch(node.resource, node.namespace, node.name, patch, patch_type="strategic")
            except ApiError as err:
                if not is_not_found(err):
                    raise
            return False
        if waiting and node.dependents:
            policy = "Foreground"
        else:
            finalizers = latest["metadata"].get("finalizers") or ()
            if FINALIZER_ORPHAN in finalizers:
                policy = "Orphan"
            elif FINALIZER_FOREGROUND in finalizers:
                policy = "Foreground"
            else:
                policy = "Background"
        return await self._delete(node, latest, policy)

    async def _classify(self, ref: Obj, dependent: _Node) -> str:
        owner_uid = ref.get("uid", "")
        if owner_uid in self._absent:
            return "dangling"
        info = resources.for_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
        if info is None:
            return "solid"
        namespace = dependent.namespace if info.namespaced else None
        try:
            owner = await self.client.get(info.plural, namespace, ref.get("name", ""))
        except ApiError as err:
            if is_not_found(err):
                self._mark_absent(owner_uid)
                return "dangling"
            raise
        meta = owner["metadata"]
        if meta.get("uid") != owner_uid:
            self._mark_absent(owner_uid)
            return "dangling"
        if meta.get("deletionTimestamp") and FINALIZER_FOREGROUND in (meta.get("finalizers") or ()):
            return "waiting"
        return "solid"

    async def _delete(self, node: _Node, latest: Obj, policy: str) -> bool:
        assert node.resource is not None
        meta = latest["metadata"]
        preconditions = {"uid": node.uid, "resourceVersion": meta["resourceVersion"]}
        try:
            await self.client.delete(
                node.resource, node.namespace, node.name, propagation_policy=policy, preconditions=preconditions
            )
        except ApiError as err:
            if is_not_found(err):
                return False
            if not is_conflict(err):
                raise
            # The object changed since the GET: retry without the resourceVersion only if its
            # owners are still the ones the decision was made on.
            try:
                live = await self.client.get(node.resource, node.namespace, node.name)
            except ApiError as get_err:
                if is_not_found(get_err):
                    return False
                raise
            if live["metadata"].get("uid") != node.uid:
                return False
            if (live["metadata"].get("ownerReferences") or []) != (meta.get("ownerReferences") or []):
                return True
            try:
                await self.client.delete(
                    node.resource, node.namespace, node.name, propagation_policy=policy, preconditions={"uid": node.uid}
                )
            except ApiError as retry_err:
                if not is_not_found(retry_err):
                    raise
        return False

    def _virtual_delete(self, node: _Node) -> None:
        # enqueueVirtualDeleteEvent: the object does not exist; process it as deleted.
        if node.virtual or self._nodes.get(node.uid) is node:
            self._observe_deleted(node.uid)

    async def _process_deleting_dependents(self, node: _Node) -> bool:
        blocking = []
        for dep_uid in node.dependents:
            dep = self._nodes.get(dep_uid)
            if dep is None:
                continue
            for ref in dep.owners:
                if ref.get("uid") == node.uid and ref.get("blockOwnerDeletion"):
                    blocking.append(dep)
                    break
        if not blocking:
            return await self._remove_finalizer(node, FINALIZER_FOREGROUND)
        for dep in blocking:
            if not dep.deleting_dependents:
                self._add((_DELETE, dep.uid))
        return False

    # -- attemptToOrphan ----------------------------------------------------------------------
    async def _attempt_to_orphan(self, node: _Node) -> bool:
        failed = False
        for dep_uid in list(node.dependents):
            dep = self._nodes.get(dep_uid)
            if dep is None or dep.resource is None:
                continue
            patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": node.uid}], "uid": dep.uid}}
            try:
                await self.client.patch(dep.resource, dep.namespace, dep.name, patch, patch_type="strategic")
            except ApiError as err:
                if not is_not_found(err):
                    failed = True
        if failed:
            return True
        return await self._remove_finalizer(node, FINALIZER_ORPHAN)

    async def _remove_finalizer(self, node: _Node, finalizer: str) -> bool:
        if node.resource is None:
            return False
        for _ in range(REMOVE_FINALIZER_ATTEMPTS):
            try:
                owner = await self.client.get(node.resource, node.namespace, node.name)
            except ApiError as err:
                if is_not_found(err):
                    return False
                raise
            meta = owner["metadata"]
            finalizers = list(meta.get("finalizers") or ())
            if finalizer not in finalizers:
                return False
            remaining = [f for f in finalizers if f != finalizer]
            patch = {"metadata": {"resourceVersion": meta["resourceVersion"], "finalizers": remaining or None}}
            try:
                await self.client.patch(node.resource, node.namespace, node.name, patch, patch_type="merge")
                return False
            except ApiError as err:
                if is_not_found(err):
                    return False
                if not is_conflict(err):
                    raise
        return True


def _resume_worker(frames: list[dict[str, Any]], fut: Future | None) -> Any:
    worker, get = frames
    if fut is not get["waiter"]:
        raise NotQuiescent("a garbage collector worker awaits something other than its wake-up")
    return partial(worker["self"]._worker, parked=fut)


# A worker waiting for work is parked (a snapshot can hold it): see kernel.resumable.
resumable(GarbageCollector._worker, GarbageCollector._get, resume=_resume_worker)

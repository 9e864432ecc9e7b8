"""The namespace controller: empties a namespace being deleted, then lets it go.

kube-controller-manager's pkg/controller/namespace (namespace_controller.go and
deletion/namespaced_resources_deleter.go), simplified but honest.

Guarantees
----------
* It sees namespaces through its own watch (list, then watch; relisting when the watch ends) and
  acts only through its `Client` (user agent "namespace-controller"), so each step is a recorded,
  rate-limited request.
* A namespace with a deletionTimestamp and the `kubernetes` finalizer in `spec.finalizers` is
  synced, one sync per namespace at a time: for each namespaced resource the server serves, in
  the server's order, the estimate of how long its pods may take to terminate (the largest
  `terminationGracePeriodSeconds` of its non-terminal pods) is taken, the whole collection is
  deleted (`deletecollection`, propagation Background) and the resource listed again. When
  nothing is left, the `kubernetes` finalizer is removed with a PUT of `namespaces/{name}/finalize`
  and the API server deletes the namespace. When something is left the sync is retried after
  `estimate / 2 + 1` seconds if pods were still terminating (ResourcesRemainingError), else with
  the controller's rate limiter (5 ms doubling, at most 1000 s).
* Creating in a Terminating namespace is refused by the API server's NamespaceLifecycle
  admission (403, cause NamespaceTerminating), not here.

Not modelled: the namespace's status conditions (NamespaceContentRemaining …), the 5-minute
resync, discovery failures, and the 10 parallel workers (one sync per namespace is enough: each
namespace is synced on its own here too).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from controlplane.apiserver.errors import ApiError, is_conflict, is_gone, is_not_found
from controlplane.apiserver.resources import RESOURCES
from controlplane.apiserver.server import Request, query_options
from controlplane.apiserver.watch import DELETED
from controlplane.trace import NULL_TRACE, Trace

if TYPE_CHECKING:
    from controlplane.apiserver.client import Client
    from controlplane.apiserver.watch import Watch
    from controlplane.kernel import Kernel, Timer

Obj = dict[str, Any]

FINALIZER_KUBERNETES = "kubernetes"
RETRY_BASE_DELAY = 0.005  # workqueue.DefaultControllerRateLimiter's per-item part
RETRY_MAX_DELAY = 1000.0


class NamespaceController:
    """See the module docstring. `start()` opens the watch; `stop()` ends it and the syncs."""

    def __init__(self, kernel: Kernel, client: Client, trace: Trace | None = None, delay: float = 0.0) -> None:
        self.kernel = kernel
        self.client = client
        self.trace = trace or NULL_TRACE
        self.delay = delay
        self._watch: Watch | None = None
        self._running = False
        self._syncing: set[str] = set()  # namespaces with a sync running
        self._again: set[str] = set()  # ... that changed meanwhile: sync once more
        self._retries: dict[str, int] = {}
        self._timers: dict[str, Timer] = {}

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        if self._running:
            return
        self._running = True
        self._open_watch(None)

    def stop(self) -> None:
        self._running = False
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _open_watch(self, resource_version: str | None) -> None:
        try:
            watch = self.client.watch("namespaces", resource_version=resource_version, latency=self.delay)
        except ApiError as err:
            if is_gone(err) and resource_version is not None:
                self._open_watch(None)
                return
            raise
        self._watch = watch
        watch.start(self._on_events, partial(self._on_close, watch))

    def _on_close(self, watch: Watch, reason: str) -> None:
        if not self._running or self._watch is not watch:
            return
        rv = watch.last_delivered_rv
        self._open_watch(str(rv) if rv else None)

    def _on_events(self, events: list[tuple[str, Obj]]) -> None:
        for event_type, ns in events:
            if event_type == DELETED:
                continue
            meta = ns["metadata"]
            if meta.get("deletionTimestamp") and FINALIZER_KUBERNETES in (
                (ns.get("spec") or {}).get("finalizers") or ()
            ):
                self._enqueue(meta["name"])

    # -- queue --------------------------------------------------------------------------------
    def _enqueue(self, name: str) -> None:
        if not self._running:
            return
        if name in self._syncing:
            self._again.add(name)
            return
        if name in self._timers:
            return  # a retry is already due
        self._syncing.add(name)
        self.kernel.spawn(self._sync(name), f"namespace-controller/{name}")

    def _retry_after(self, name: str, seconds: float) -> None:
        self._timers[name] = self.kernel.call_later(seconds, self._retry_due, name)

    def _retry_due(self, name: str) -> None:
        self._timers.pop(name, None)
        self._enqueue(name)

    # -- sync ---------------------------------------------------------------------------------
    async def _sync(self, name: str) -> None:
        try:
            remaining, estimate = await self._delete_content(name)
        except ApiError as err:
            remaining, estimate = (not is_not_found(err)), 0
        finally:
            self._syncing.discard(name)
        if not self._running:
            return
        if remaining:
            if estimate > 0:
                self._retries.pop(name, None)
                self._retry_after(name, estimate // 2 + 1)  # ResourcesRemainingError
            else:
                attempts = self._retries.get(name, 0)
                self._retries[name] = attempts + 1
                self._retry_after(name, min(RETRY_BASE_DELAY * 2**attempts, RETRY_MAX_DELAY))
            return
        self._retries.pop(name, None)
        if name in self._again:
            self._again.discard(name)
            self._enqueue(name)

    async def _delete_content(self, name: str) -> tuple[bool, int]:
        """(something is left, the pods' termination estimate); finalizes an empty namespace."""
        ns = await self.client.get("namespaces", None, name)
        finalizers = (ns.get("spec") or {}).get("finalizers") or []
        if not ns["metadata"].get("deletionTimestamp") or FINALIZER_KUBERNETES not in finalizers:
            return False, 0
        remaining = False
        estimate = 0
        for plural, info in RESOURCES.items():
            if not info.namespaced:
                continue
            if plural == "pods":
                estimate = max(estimate, await self._estimate_pods(name))
            options = query_options(propagation_policy="Background")
            await self.client.request(Request("", "deletecollection", plural, None, name, None, None, options))
            left = await self.client.list(plural, name)
            if left["items"]:
                remaining = True
        if remaining:
            return True, estimate
        body = {
            **ns,
            "spec": {**(ns.get("spec") or {}), "finalizers": [f for f in finalizers if f != FINALIZER_KUBERNETES]},
        }
        try:
            await self.client.update("namespaces", None, name, body, subresource="finalize")
        except ApiError as err:
            if is_conflict(err):
                return True, 0  # changed meanwhile: read it again
            if not is_not_found(err):
                raise
        return False, 0

    async def _estimate_pods(self, name: str) -> int:
        """estimateGracefulTerminationForPods: the largest grace period of non-terminal pods."""
        estimate = 0
        for pod in (await self.client.list("pods", name))["items"]:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
            if isinstance(grace, int) and grace > estimate:
                estimate = grace
        return estimate

"""taint-eviction-controller of kube-controller-manager (pkg/controller/tainteviction, v1.36): pods
on a node with a `NoExecute` taint they do not tolerate are deleted.

Guarantees
----------
* Fed by the node simulator's shared informers (`on_node_event`, `on_pod_event`); acts through
  its own `Client` (user agent "taint-eviction-controller") and records its Events as component
  `taint-eviction-controller`.
* A node's NoExecute taints are those of `spec.taints` with effect `NoExecute`, except the node
  lifecycle controller's own (`node.kubernetes.io/unreachable`, `…/not-ready`): nodes.py evicts
  for those, from the instant it adds them, as it always has.
* `processPodOnNode`, for each pod bound to a tainted node when the node's NoExecute taints
  change, and for a pod of a tainted node when it changes: a taint no toleration of the pod
  tolerates → the pod is deleted at once; every taint tolerated → deleted after the least
  `tolerationSeconds` of the tolerations used (the first that tolerates each taint;
  `getMinTolerationTime`: ≤ 0 is at once), counted from when its eviction was first scheduled;
  tolerated without `tolerationSeconds` → left alone, and a pending eviction is cancelled. The
  taints removed, the node deleted, or the pod deleted cancel a pending eviction; a cancelled one
  is recorded as the Event `TaintManagerEviction` "Cancelling deletion of Pod ns/name".
* An eviction (`deletePodHandler`) records `TaintManagerEviction` "Marking for deletion Pod
  ns/name", writes the pod's `DisruptionTarget` condition (reason `DeletionByTaintManager`) and
  deletes it (`addConditionAndDeletePod`); a pod already terminating, gone, or moved is skipped.
* Virtual time only: evictions are kernel timers, one per pod, fired in due time then key order.
  Upstream's 10 ms retries of a failed delete are not modelled (the next change retries).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controlplane.apiserver import ApiError, Client
from controlplane.events import EventRecorder
from controlplane.kernel import Kernel, Timer
from controlplane.kubelet import pod_key, timestamp
from controlplane.scheduler import toleration_tolerates
from controlplane.trace import NULL_TRACE, Trace

Obj = dict[str, Any]

CONTROLLER_NAME = "taint-eviction-controller"
NO_EXECUTE = "NoExecute"
# The node lifecycle controller's taints: it evicts for them itself (nodes.py).
LIFECYCLE_TAINTS = ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")


def no_execute_taints(node: Obj) -> list[Obj]:
    """getNoExecuteTaints, less the node lifecycle controller's own."""
    taints = (node.get("spec") or {}).get("taints") or []
    return [t for t in taints if t.get("effect") == NO_EXECUTE and t.get("key") not in LIFECYCLE_TAINTS]


def get_matching_tolerations(taints: list[Obj], tolerations: list[Obj]) -> tuple[bool, list[Obj]]:
    """v1helper.GetMatchingTolerations: whether every taint is tolerated, and for each the first
    toleration that tolerates it."""
    used: list[Obj] = []
    for taint in taints:
        match = next((t for t in tolerations if toleration_tolerates(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def get_min_toleration_time(tolerations: list[Obj]) -> float | None:
    """Seconds until eviction: the least tolerationSeconds (≤ 0 is 0, none used is 0); None when
    none of them has tolerationSeconds (tolerated forever)."""
    if not tolerations:
        return 0.0
    least: float | None = None
    for toleration in tolerations:
        seconds = toleration.get("tolerationSeconds")
        if seconds is None:
            continue
        if seconds <= 0:
            return 0.0
        least = float(seconds) if least is None else min(least, float(seconds))
    return least


async def add_disruption_condition(client: Client, kernel: Kernel, pod: Obj | None) -> Obj | None:
    """The pod with the DisruptionTarget condition the taint eviction writes before it deletes
    (re-read once on a 409), or None when it cannot be written."""
    for _ in range(2):
        if pod is None:
            return None
        status = pod.get("status") or {}
        conditions = status.get("conditions") or []
        if any(c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in conditions):
            return pod
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": timestamp(kernel.now),
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
        }
        others = [c for c in conditions if c.get("type") != "DisruptionTarget"]
        meta = pod["metadata"]
        body = {**pod, "status": {**status, "conditions": [*others, condition]}}
        try:
            written: Obj = await client.update("pods", meta.get("namespace"), meta["name"], body, subresource="status")
            return written
        except ApiError as err:
            if err.code != 409:
                return None
        try:
            fresh: Obj = await client.get("pods", meta.get("namespace"), meta["name"])
        except ApiError:
            return None
        pod = fresh if fresh["metadata"].get("uid") == meta.get("uid") else None
    return None


@dataclass
class _Work:
    """One scheduled eviction of TimedWorkerQueue: when it was first scheduled and its timer."""

    created_at: float
    fire_at: float
    timer: Timer


class TaintEvictionController:
    """See the module docstring. `pods_on_node(name)` and `get_pod(key)` read the shared cache."""

    def __init__(
        self,
        kernel: Kernel,
        client: Client,
        pods_on_node: Callable[[str], list[Obj]],
        get_pod: Callable[[str], Obj | None],
        trace: Trace | None = None,
        event_client: Client | None = None,
    ) -> None:
        self.kernel = kernel
        self.client = client
        self.trace = trace or NULL_TRACE
        self.recorder = EventRecorder(kernel, event_client or client, CONTROLLER_NAME, trace=self.trace)
        self._pods_on_node = pods_on_node
        self._get_pod = get_pod
        # Node → its NoExecute taints (non-empty), as last seen (taintedNodes).
        self.tainted_nodes: dict[str, list[Obj]] = {}
        # Pod key → its scheduled eviction (taintEvictionQueue), None once it has fired: a fired
        # key stays until cancelled (the pod deleted, its node untainted), so that AddWork skips it
        # as TimedWorkerQueue does.
        self._work: dict[str, _Work | None] = {}

    def scheduled(self) -> dict[str, float]:
        """Pod key → when its eviction is due, for the pods with one pending."""
        return {key: work.fire_at for key, work in sorted(self._work.items()) if work is not None}

    # -- informer feed (NodeUpdated / PodUpdated) -----------------------------------------------
    def on_node_event(self, kind: str, node: Obj) -> None:
        name = node["metadata"]["name"]
        taints = [] if kind == "DELETED" else no_execute_taints(node)
        if taints == self.tainted_nodes.get(name, []):
            return  # its NoExecute taints did not change
        if taints:
            self.tainted_nodes[name] = taints
        else:
            self.tainted_nodes.pop(name, None)
        now = self.kernel.now
        for pod in self._pods_on_node(name):
            if taints:
                self._process_pod_on_node(pod, taints, now)
            else:
                self._cancel_work_with_event(pod_key(pod), pod)

    def on_pod_event(self, kind: str, pod: Obj, old: Obj | None) -> None:
        """`old`: the pod as the cache held it before (None if new)."""
        if kind == "DELETED":
            self._cancel_work_with_event(pod_key(pod), pod)
            return
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        if old is not None:  # PodUpdated: only a new node or new tolerations matter
            old_spec = old.get("spec") or {}
            if old_spec.get("nodeName") == node and old_spec.get("tolerations") == spec.get("tolerations"):
                return
        taints = self.tainted_nodes.get(node) if node else None
        if taints:  # an untainted node: any eviction was cancelled when its taints went
            self._process_pod_on_node(pod, taints, self.kernel.now)

    # -- processPodOnNode ---------------------------------------------------------------------
    def _process_pod_on_node(self, pod: Obj, taints: list[Obj], now: float) -> None:
        key = pod_key(pod)
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        all_tolerated, used = get_matching_tolerations(taints, tolerations)
        if not all_tolerated:
            self._cancel_work_with_event(key, pod)
            self._add_work(key, now, now)
            return
        delay = get_min_toleration_time(used)
        if delay is None:
            self._cancel_work_with_event(key, pod)
            return
        start = now
        existing = self._work.get(key)
        if key in self._work and existing is None:
            return  # fired already: AddWork would skip it
        if existing is not None:
            start = existing.created_at
            if start + delay < now + delay:
                return  # the eviction first scheduled stands
            self._cancel_work_with_event(key, pod)
        self._add_work(key, start, start + delay)

    def _add_work(self, key: str, created_at: float, fire_at: float) -> None:
        if key in self._work:
            return  # AddWork keeps the one already queued
        timer = self.kernel.call_at(max(fire_at, self.kernel.now), self._fire, key)
        self._work[key] = _Work(created_at, fire_at, timer)

    def _cancel_work_with_event(self, key: str, pod: Obj) -> None:
        work = self._work.pop(key, None)
        if work is None:  # none, or fired: CancelWork reports nothing cancelled
            return
        work.timer.cancel()
        self.recorder.event(pod, "Normal", "TaintManagerEviction", f"Cancelling deletion of Pod {key}")

    # -- deletePodHandler ---------------------------------------------------------------------
    def _fire(self, key: str) -> None:
        if self._work.get(key) is not None:
            self._work[key] = None
            self.kernel.spawn(self._delete_pod(key), f"{CONTROLLER_NAME}/{key}")

    async def _delete_pod(self, key: str) -> None:
        pod = self._get_pod(key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or node not in self.tainted_nodes:
            return
        self.recorder.event(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key}")
        written = await add_disruption_condition(self.client, self.kernel, pod)
        if written is None:
            return
        meta = written["metadata"]
        try:
            await self.client.delete("pods", meta.get("namespace"), meta["name"])
        except ApiError:
            return

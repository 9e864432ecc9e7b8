"""The scheduler: binds pending pods to nodes (kube-scheduler, simplified but honest).

Guarantees
----------
* Pods without `spec.nodeName`, without a deletionTimestamp, not in a terminal phase and meant
  for "default-scheduler" are scheduled one at a time in arrival order (upstream's activeQ with
  equal priorities is FIFO), each scheduling cycle taking `schedulerLatency` seconds (0: all
  queued pods in one kernel callback).
* Filter (the default plugins that matter here, in upstream order, first failure wins):
  NodeUnschedulable ("node(s) were unschedulable"), TaintToleration on NoSchedule/NoExecute
  taints ("node(s) had untolerated taint(s)", the v1.35+ wording), NodeResourcesFit on the pod
  count ("Too many pods"). A node must also report Ready True unless the pod tolerates its
  taints (upstream checks readiness only through the not-ready/unreachable taints). CPU and
  memory requests are not modelled.
* Score: the feasible node with the fewest bound non-terminal pods wins, ties by node name —
  "spreading", standing in for the default score plugins. The choice is found from a heap, not
  a scan of every node.
* The decision is *assumed* at once (the node's count goes up before the API answers, as the
  scheduler cache's AssumePod does), then bound asynchronously with
  `POST pods/{name}/binding` through the scheduler's own `Client` (user agent
  "default-scheduler"). A failed binding forgets the assumption and retries the pod after the
  pod back-off (1 s doubling to 10 s).
* A pod that fits nowhere gets ONE status write — PodScheduled False, reason Unschedulable, with
  upstream's FitError message — unless that exact condition is already there, and waits among
  the unschedulable pods until a node event could make it fit (a node added, becoming Ready or
  untainted, or a full node losing a pod); then every waiting pod is retried in arrival order.
  Upstream's 5-minute flush of the unschedulable queue is not modelled.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

from controlplane.apiserver import ApiError, Client
from controlplane.informers.store import namespaced_key
from controlplane.kernel import Kernel, Timer, rfc3339
from controlplane.trace import NULL_TRACE, Trace

Obj = dict[str, Any]

SCHEDULER_NAME = "default-scheduler"
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
POD_INITIAL_BACKOFF = 1.0  # podInitialBackoffSeconds
POD_MAX_BACKOFF = 10.0  # podMaxBackoffSeconds

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_TAINT = "node(s) had untolerated taint(s)"
REASON_TOO_MANY_PODS = "Too many pods"
# What DefaultPreemption says per node: UnschedulableAndUnresolvable filters cannot be helped
# by evicting anyone; "Too many pods" could be, but with equal priorities there is no victim.
_PREEMPTION = {
    REASON_UNSCHEDULABLE: "Preemption is not helpful for scheduling",
    REASON_TAINT: "Preemption is not helpful for scheduling",
    REASON_TOO_MANY_PODS: "No preemption victims found for incoming pod",
}


# -- taints and tolerations (component-helpers/scheduling/corev1) -------------------------------
def toleration_tolerates(toleration: Obj, taint: Obj) -> bool:
    """`Toleration.ToleratesTaint`: effect, key and operator/value must all match."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return bool(key) and (toleration.get("value") or "") == (taint.get("value") or "")


def find_untolerated_taint(
    taints: list[Obj], tolerations: list[Obj], effects: tuple[str, ...] = BLOCKING_EFFECTS
) -> Obj | None:
    """The first taint with one of `effects` that no toleration tolerates, or None."""
    for taint in taints:
        if taint.get("effect") not in effects:
            continue
        if not any(toleration_tolerates(t, taint) for t in tolerations):
            return taint
    return None


class _NodeInfo:
    """The scheduler's view of one node. `count` = bound (or assumed) non-terminal pods."""

    __slots__ = ("count", "max_pods", "name", "node", "ready", "taints", "unschedulable")

    def __init__(self, name: str) -> None:
        self.name = name
        self.node: Obj = {}
        self.count = 0
        self.max_pods = 110
        self.ready = False
        self.unschedulable = False
        self.taints: list[Obj] = []

    def update(self, node: Obj) -> None:
        self.node = node
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        self.unschedulable = bool(spec.get("unschedulable"))
        self.taints = [t for t in spec.get("taints") or [] if t.get("effect") in BLOCKING_EFFECTS]
        self.ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
        )
        try:
            self.max_pods = int((status.get("allocatable") or {}).get("pods", 110))
        except (TypeError, ValueError):
            self.max_pods = 110

    @property
    def open(self) -> bool:
        """Fits any pod: Ready, schedulable, no blocking taint, room for one more pod."""
        return self.ready and not self.unschedulable and not self.taints and self.count < self.max_pods


class Scheduler:
    """kube-scheduler for the simulation. Feed it with `on_node_event` and `on_pod_event`."""

    def __init__(
        self, kernel: Kernel, client: Client, config: dict[str, Any], trace: Trace | None = None
    ) -> None:
        self.kernel = kernel
        self.client = client
        self.config = config
        self.trace = trace or NULL_TRACE
        self.nodes: dict[str, _NodeInfo] = {}
        # Min-heap of (count, name) for open nodes; an entry is live iff the node is open and
        # its count still equals the entry's (lazy deletion).
        self._heap: list[tuple[int, str]] = []
        # Nodes whose only obstacle may be tolerated by some pods (tainted but schedulable).
        self._tainted: dict[str, None] = {}
        self._queue: deque[str] = deque()  # activeQ: pod keys in arrival order
        self._pending: dict[str, Obj] = {}  # key → latest pod, for every key in _queue
        self.unschedulable: dict[str, Obj] = {}  # unschedulablePods, in arrival order
        self.assigned: dict[str, str] = {}  # pod key → node (bound or assumed)
        self._binding: set[str] = set()  # keys with a binding request in flight
        self._attempts: dict[str, int] = {}
        self._backoff_timers: dict[str, Timer] = {}
        self._cycle: Timer | None = None
        self._node_version = 0
        self._message_cache: dict[tuple[int, str], str] = {}

    # -- informer feed ------------------------------------------------------------------------
    def on_node_event(self, kind: str, node: Obj) -> None:
        name = node["metadata"]["name"]
        self._node_version += 1
        if kind == "DELETED":
            self.nodes.pop(name, None)
            self._tainted.pop(name, None)
            return
        info = self.nodes.get(name)
        was_open = info is not None and info.open
        if info is None:
            info = self.nodes[name] = _NodeInfo(name)
        info.update(node)
        self._classify(info)
        if info.open and not was_open:
            # Queueing hint: only a node that stopped rejecting pods can help the waiting ones.
            self._retry_unschedulable()

    def on_pod_event(self, kind: str, pod: Obj, key: str | None = None) -> None:
        """`key`: the pod's "namespace/name" when the caller has it already."""
        meta = pod["metadata"]
        if key is None:
            key = namespaced_key(meta.get("namespace", ""), meta["name"])  # shared with the other caches
        if kind == "DELETED":
            self._drop_pending(key)
            self._release(key)
            return
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        terminal = phase in ("Succeeded", "Failed")
        if node:
            self._drop_pending(key)
            if terminal:
                self._release(key)
            elif self.assigned.get(key) != node:
                self._release(key)
                self._assign(key, node)
            return
        if terminal or meta.get("deletionTimestamp") or spec.get("schedulerName", SCHEDULER_NAME) != SCHEDULER_NAME:
            self._drop_pending(key)
            return
        if key in self._binding or key in self._backoff_timers:
            return  # an assumed pod, or one waiting out its back-off
        if key in self._pending:
            self._pending[key] = pod
            return
        if key in self.unschedulable:
            old = self.unschedulable[key]
            self.unschedulable[key] = pod
            if (old.get("spec") or {}).get("tolerations") != spec.get("tolerations"):
                del self.unschedulable[key]
                self._enqueue(key, pod)  # a toleration change may make it schedulable
            return
        self._enqueue(key, pod)

    # -- queue --------------------------------------------------------------------------------
    def _enqueue(self, key: str, pod: Obj) -> None:
        self._pending[key] = pod
        self._queue.append(key)
        if self._cycle is None:
            self._cycle = self.kernel.call_soon(self._schedule_cycle)

    def _drop_pending(self, key: str) -> None:
        self._pending.pop(key, None)  # its stale entry in _queue is skipped
        self.unschedulable.pop(key, None)
        timer = self._backoff_timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _retry_unschedulable(self) -> None:
        waiting, self.unschedulable = self.unschedulable, {}
        for key, pod in waiting.items():
            self._enqueue(key, pod)

    def _schedule_cycle(self) -> None:
        self._cycle = None
        latency = float(self.config.get("schedulerLatency", 0.0))
        while self._queue:
            key = self._queue.popleft()
            pod = self._pending.pop(key, None)
            if pod is None:
                continue
            self._schedule_one(key, pod)
            if latency > 0:
                break
        if self._queue:
            self._cycle = self.kernel.call_later(latency, self._schedule_cycle)

    def _schedule_one(self, key: str, pod: Obj) -> None:
        node = self._select_node(pod)
        if node is None:
            self.unschedulable[key] = pod
            self._report_unschedulable(key, pod)
            return
        self._assign(key, node)
        self._binding.add(key)
        self.kernel.spawn(self._bind(key, pod, node), f"scheduler/bind/{key}")

    # -- node selection -----------------------------------------------------------------------
    def _select_node(self, pod: Obj) -> str | None:
        heap = self._heap
        nodes = self.nodes
        best: tuple[int, str] | None = None
        while heap:
            count, name = heap[0]
            info = nodes.get(name)
            if info is not None and info.count == count and info.open:
                best = (count, name)
                break
            heapq.heappop(heap)
        tolerations = (pod.get("spec") or {}).get("tolerations")
        if tolerations and self._tainted:
            for name in self._tainted:
                info = nodes[name]
                if info.count >= info.max_pods or find_untolerated_taint(info.taints, tolerations):
                    continue
                candidate = (info.count, name)
                if best is None or candidate < best:
                    best = candidate
        return best[1] if best is not None else None

    def _classify(self, info: _NodeInfo) -> None:
        if info.open:
            heapq.heappush(self._heap, (info.count, info.name))
        if info.taints and not info.unschedulable:
            self._tainted[info.name] = None
        else:
            self._tainted.pop(info.name, None)

    def _assign(self, key: str, node: str) -> None:
        self.assigned[key] = node
        info = self.nodes.get(node)
        if info is not None:
            info.count += 1
            self._node_version += 1
            if info.open:
                heapq.heappush(self._heap, (info.count, node))

    def _release(self, key: str) -> None:
        node = self.assigned.pop(key, None)
        if node is None:
            return
        info = self.nodes.get(node)
        if info is None:
            return
        was_full = info.count >= info.max_pods
        info.count -= 1
        self._node_version += 1
        if info.open:
            heapq.heappush(self._heap, (info.count, node))
            if was_full:
                self._retry_unschedulable()

    # -- binding ------------------------------------------------------------------------------
    async def _bind(self, key: str, pod: Obj, node: str) -> None:
        meta = pod["metadata"]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta.get("namespace"), "uid": meta.get("uid")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await self.client.create("pods", meta.get("namespace"), binding, subresource="binding")
        except ApiError as err:
            self._binding.discard(key)
            if self.assigned.get(key) == node:
                self._release(key)  # ForgetPod: undo the assumption
            if err.code != 404:
                self._back_off(key, pod)
            return
        self._binding.discard(key)
        self._attempts.pop(key, None)

    def _back_off(self, key: str, pod: Obj) -> None:
        attempts = self._attempts.get(key, 0) + 1
        self._attempts[key] = attempts
        delay = min(POD_INITIAL_BACKOFF * 2 ** (attempts - 1), POD_MAX_BACKOFF)
        self._backoff_timers[key] = self.kernel.call_later(delay, self._backoff_done, key, pod)

    def _backoff_done(self, key: str, pod: Obj) -> None:
        if self._backoff_timers.pop(key, None) is None:
            return
        if key not in self.assigned:
            self._enqueue(key, pod)

    # -- unschedulable ------------------------------------------------------------------------
    def fit_error(self, pod: Obj) -> str:
        """Upstream's FitError message for `pod` against the current nodes."""
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        cache_key = (self._node_version, repr(tolerations))
        cached = self._message_cache.get(cache_key)
        if cached is not None:
            return cached
        total = len(self.nodes)
        if total == 0:
            message = "no nodes available to schedule pods"
        else:
            reasons: dict[str, int] = {}
            for name in sorted(self.nodes):
                reason = self._filter_reason(self.nodes[name], tolerations)
                if reason is not None:
                    reasons[reason] = reasons.get(reason, 0) + 1
            preemption: dict[str, int] = {}
            for reason, n in reasons.items():
                preemption[_PREEMPTION[reason]] = preemption.get(_PREEMPTION[reason], 0) + n
            filters = ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))
            victims = ", ".join(sorted(f"{n} {r}" for r, n in preemption.items()))
            # FitError.Error(): "0/N nodes are available: <filter>." then the PostFilter
            # messages (DynamicResources, then DefaultPreemption) joined by ", ".
            message = (
                f"0/{total} nodes are available: {filters}. no new claims to deallocate, "
                f"preemption: 0/{total} nodes are available: {victims}."
            )
        if len(self._message_cache) > 64:
            self._message_cache.clear()
        self._message_cache[cache_key] = message
        return message

    def _filter_reason(self, info: _NodeInfo, tolerations: list[Obj]) -> str | None:
        if info.unschedulable and not any(
            toleration_tolerates(t, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
            for t in tolerations
        ):
            return REASON_UNSCHEDULABLE
        if find_untolerated_taint(info.taints, tolerations) is not None:
            return REASON_TAINT
        if not info.ready and not info.taints:
            return REASON_TAINT  # upstream taints a not-ready node; we have not yet
        if info.count >= info.max_pods:
            return REASON_TOO_MANY_PODS
        return None

    def _report_unschedulable(self, key: str, pod: Obj) -> None:
        message = self.fit_error(pod)
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if (
                cond.get("type") == "PodScheduled"
                and cond.get("status") == "False"
                and cond.get("reason") == "Unschedulable"
                and cond.get("message") == message
            ):
                return  # UpdatePodCondition would change nothing: no write
        self.kernel.spawn(self._write_unschedulable(key, pod, message), f"scheduler/status/{key}")

    async def _write_unschedulable(self, key: str, pod: Obj, message: str) -> None:
        while True:
            meta = pod["metadata"]
            status = pod.get("status") or {}
            old = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
            since = rfc3339(self.kernel.now)
            if old and old[0].get("status") == "False" and old[0].get("lastTransitionTime"):
                since = old[0]["lastTransitionTime"]
            condition = {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": since,
                "reason": "Unschedulable",
                "message": message,
            }
            others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            body = {**pod, "status": {**status, "conditions": [*others, condition]}}
            try:
                await self.client.update("pods", meta.get("namespace"), meta["name"], body, subresource="status")
                return
            except ApiError as err:
                if err.code != 409:
                    return
            try:
                pod = await self.client.get("pods", meta.get("namespace"), meta["name"])
            except ApiError:
                return
            if (pod.get("spec") or {}).get("nodeName") or key not in self.unschedulable:
                return

    # -- introspection ------------------------------------------------------------------------
    def in_flight(self) -> int:
        """Pods about to be placed: in the active queue or with a binding request out (not the
        unschedulable ones, nor those backing off)."""
        return len(self._pending) + len(self._binding)

    def pending_count(self) -> int:
        """Pods waiting to be scheduled (active, backing off or unschedulable)."""
        return len(self._pending) + len(self.unschedulable) + len(self._backoff_timers)

"""The scheduler: binds pending pods to nodes (kube-scheduler, simplified but honest).

Guarantees
----------
* Pods without `spec.nodeName`, without a deletionTimestamp, not in a terminal phase and meant
  for "default-scheduler" are scheduled one at a time in arrival order (upstream's activeQ with
  equal priorities is FIFO), each scheduling cycle taking `schedulerLatency` seconds (0: all
  queued pods in one kernel callback).
* Filter (the default plugins that matter here, in upstream order, first failing plugin wins):
  NodeUnschedulable ("node(s) were unschedulable"), TaintToleration on NoSchedule/NoExecute
  taints ("node(s) had untolerated taint(s)", the v1.35+ wording), NodeResourcesFit: the pod
  count ("Too many pods"), then — only for a pod that requests cpu or memory — its requests
  against the node's allocatable minus the requests of the pods bound (or assumed) there
  ("Insufficient cpu", "Insufficient memory"; every insufficient resource is a reason, as
  `fitsRequest` collects them; a request beyond the node's whole allocatable is unresolvable:
  preemption "is not helpful" there). A pod's request is the sum over its containers and sidecars,
  or its largest regular init container if that is more (`resourcehelper.PodRequests`), plus
  `spec.overhead`. A node must also report Ready True unless the pod tolerates its taints
  (upstream checks readiness only through the not-ready/unreachable taints).
* Score: the feasible node with the fewest bound non-terminal pods wins, ties by node name —
  "spreading", standing in for the default score plugins. For a pod that requests nothing the
  choice is found from a heap, not a scan of every node; a pod with requests scans the nodes.
* The decision is *assumed* at once (the node's count goes up before the API answers, as the
  scheduler cache's AssumePod does), then bound asynchronously with
  `POST pods/{name}/binding` through the scheduler's own `Client` (user agent
  "default-scheduler"). A failed binding forgets the assumption and retries the pod after the
  pod back-off (1 s doubling to 10 s).
* A pod that fits nowhere gets ONE status write — PodScheduled False, reason Unschedulable, with
  upstream's FitError message — unless that exact condition is already there, and a
  `FailedScheduling` Warning Event with that message on every failed attempt (the Event
  correlator turns repeats into a count). It waits among the unschedulable pods until a
  cluster event could make it fit (a node added, becoming Ready or untainted, a full node
  losing a pod, a pod with requests leaving a node); then every waiting pod is retried in
  arrival order — at once if its back-off (1 s doubling to 10 s per failed attempt) is over,
  else when it is. A pod that has waited more than 5 minutes is retried anyway at the next
  30-second tick (`flushUnschedulablePodsLeftover`, podMaxInUnschedulablePodsDuration).
* A successful binding records a `Scheduled` Event ("Successfully assigned default/web-x to
  node-1"). Events go through the scheduler's own event client (user agent
  "default-scheduler", its own token bucket, as kube-scheduler's separate event clientset) and
  name `default-scheduler` as their source.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Any

from controlplane import quantity
from controlplane.apiserver import ApiError, Client
from controlplane.events import EventRecorder
from controlplane.informers.store import namespaced_key
from controlplane.kernel import Kernel, Timer, rfc3339
from controlplane.trace import NULL_TRACE, Trace

Obj = dict[str, Any]

SCHEDULER_NAME = "default-scheduler"
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
POD_INITIAL_BACKOFF = 1.0  # podInitialBackoffSeconds
POD_MAX_BACKOFF = 10.0  # podMaxBackoffSeconds
# scheduling_queue.go: unschedulable pods are flushed every 30 s once they waited this long.
POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_TAINT = "node(s) had untolerated taint(s)"
REASON_TOO_MANY_PODS = "Too many pods"
REASON_INSUFFICIENT_CPU = "Insufficient cpu"
REASON_INSUFFICIENT_MEMORY = "Insufficient memory"
# What DefaultPreemption says per node: UnschedulableAndUnresolvable filters cannot be helped
# by evicting anyone; NodeResourcesFit's reasons could be, but with equal priorities (every pod
# has priority 0 here) SelectVictimsOnNode finds no victim.
_NOT_HELPFUL = "Preemption is not helpful for scheduling"
_NO_VICTIMS = "No preemption victims found for incoming pod"
_PREEMPTION = {
    REASON_UNSCHEDULABLE: _NOT_HELPFUL,
    REASON_TAINT: _NOT_HELPFUL,
    REASON_TOO_MANY_PODS: _NO_VICTIMS,
    REASON_INSUFFICIENT_CPU: _NO_VICTIMS,
    REASON_INSUFFICIENT_MEMORY: _NO_VICTIMS,
}
NO_REQUESTS = (0, 0)


# -- resource requests (component-helpers/resource PodRequests) -------------------------------------
def _quantity_of(requests: Obj, name: str, parse: Any) -> int:
    text = requests.get(name)
    if text is None:
        return 0
    try:
        return int(parse(str(text)))
    except ValueError:
        return 0  # the decoder checked the shape; an unparsable value requests nothing


def _container_requests(container: Any) -> tuple[int, int]:
    resources = container.get("resources") if isinstance(container, dict) else None
    requests = resources.get("requests") if isinstance(resources, dict) else None
    if not requests or not isinstance(requests, dict):
        return NO_REQUESTS
    return _quantity_of(requests, "cpu", quantity.milli_value), _quantity_of(requests, "memory", quantity.value)


def pod_requests(pod: Obj) -> tuple[int, int]:
    """(millicores, bytes) the pod requests: containers and sidecars summed, the largest
    regular init container (plus the sidecars started before it) if more, plus overhead."""
    spec = pod.get("spec") or {}
    cpu = mem = 0
    for container in spec.get("containers") or ():
        c, m = _container_requests(container)
        cpu += c
        mem += m
    init_cpu = init_mem = side_cpu = side_mem = 0
    for container in spec.get("initContainers") or ():
        c, m = _container_requests(container)
        if isinstance(container, dict) and container.get("restartPolicy") == "Always":
            side_cpu += c
            side_mem += m
            cpu += c
            mem += m
        else:
            init_cpu = max(init_cpu, c + side_cpu)
            init_mem = max(init_mem, m + side_mem)
    cpu, mem = max(cpu, init_cpu), max(mem, init_mem)
    overhead = spec.get("overhead")
    if isinstance(overhead, dict):
        cpu += _quantity_of(overhead, "cpu", quantity.milli_value)
        mem += _quantity_of(overhead, "memory", quantity.value)
    return cpu, mem


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
    """The scheduler's view of one node. `count` = bound (or assumed) non-terminal pods;
    `cpu` / `memory` = the sum of their requests (millicores, bytes)."""

    __slots__ = (
        "alloc_cpu",
        "alloc_memory",
        "count",
        "cpu",
        "max_pods",
        "memory",
        "name",
        "node",
        "ready",
        "taints",
        "unschedulable",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.node: Obj = {}
        self.count = 0
        self.cpu = 0
        self.memory = 0
        self.max_pods = 110
        self.alloc_cpu = 0
        self.alloc_memory = 0
        self.ready = False
        self.unschedulable = False
        self.taints: list[Obj] = []

    def update(self, node: Obj) -> None:
        self.node = node
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        self.unschedulable = bool(spec.get("unschedulable"))
        self.taints = [t for t in spec.get("taints") or [] if t.get("effect") in BLOCKING_EFFECTS]
        self.ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        allocatable = status.get("allocatable") or {}
        self.max_pods = _quantity_of(allocatable, "pods", quantity.value) if "pods" in allocatable else 110
        self.alloc_cpu = _quantity_of(allocatable, "cpu", quantity.milli_value)
        self.alloc_memory = _quantity_of(allocatable, "memory", quantity.value)

    @property
    def open(self) -> bool:
        """Fits a pod that requests nothing: Ready, schedulable, no blocking taint, room for one
        more pod."""
        return self.ready and not self.unschedulable and not self.taints and self.count < self.max_pods

    def insufficient(self, requests: tuple[int, int]) -> list[str]:
        """NodeResourcesFit's reasons against this node (`fitsRequest`, in its order)."""
        reasons = []
        if self.count >= self.max_pods:
            reasons.append(REASON_TOO_MANY_PODS)
        cpu, memory = requests
        if cpu and cpu > self.alloc_cpu - self.cpu:
            reasons.append(REASON_INSUFFICIENT_CPU)
        if memory and memory > self.alloc_memory - self.memory:
            reasons.append(REASON_INSUFFICIENT_MEMORY)
        return reasons

    def beyond_allocatable(self, requests: tuple[int, int]) -> bool:
        """The pod asks more than the whole node has: NodeResourcesFit's `Unresolvable`, which
        makes its status UnschedulableAndUnresolvable (evicting every pod would not help)."""
        cpu, memory = requests
        return (cpu > 0 and cpu > self.alloc_cpu) or (memory > 0 and memory > self.alloc_memory)


class Scheduler:
    """kube-scheduler for the simulation. Feed it with `on_node_event` and `on_pod_event`."""

    def __init__(
        self,
        kernel: Kernel,
        client: Client,
        config: dict[str, Any],
        trace: Trace | None = None,
        event_client: Client | None = None,
    ) -> None:
        """`event_client`: the client Events are posted with (default: `client`)."""
        self.kernel = kernel
        self.client = client
        self.config = config
        self.trace = trace or NULL_TRACE
        self.recorder = EventRecorder(kernel, event_client or client, SCHEDULER_NAME, trace=self.trace)
        self.nodes: dict[str, _NodeInfo] = {}
        # Min-heap of (count, name) for open nodes; an entry is live iff the node is open and
        # its count still equals the entry's (lazy deletion).
        self._heap: list[tuple[int, str]] = []
        # Nodes whose only obstacle may be tolerated by some pods (tainted but schedulable).
        self._tainted: dict[str, None] = {}
        self._queue: deque[str] = deque()  # activeQ: pod keys in arrival order
        self._pending: dict[str, Obj] = {}  # key → latest pod, for every key in _queue
        self.unschedulable: dict[str, Obj] = {}  # unschedulablePods, in arrival order
        # When each key of `unschedulable` entered it (same keys, same order).
        self._unschedulable_at: dict[str, float] = {}
        self._flush: Timer | None = None
        self._started_at = kernel.now  # the 30 s flush ticks count from here
        self.assigned: dict[str, str] = {}  # pod key → node (bound or assumed)
        self._requests: dict[str, tuple[int, int]] = {}  # assigned keys that request cpu or memory
        self._binding: set[str] = set()  # keys with a binding request in flight
        self._attempts: dict[str, int] = {}  # failed scheduling attempts (and bindings) per key
        self._last_attempt: dict[str, float] = {}
        self._backoff_timers: dict[str, Timer] = {}
        self._cycle: Timer | None = None
        self._node_version = 0
        self._message_cache: dict[tuple[int, str, tuple[int, int]], str] = {}

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
        before = (info.alloc_cpu, info.alloc_memory)
        info.update(node)
        self._classify(info)
        grew = info.alloc_cpu > before[0] or info.alloc_memory > before[1]
        if info.open and (not was_open or grew):
            # Queueing hint: only a node that stopped rejecting pods (or has more room) can help
            # the waiting ones.
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
                self._assign(key, node, pod_requests(pod))
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
                del self._unschedulable_at[key]
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
        if self.unschedulable.pop(key, None) is not None:
            del self._unschedulable_at[key]
        self._attempts.pop(key, None)
        self._last_attempt.pop(key, None)
        timer = self._backoff_timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _retry_unschedulable(self) -> None:
        """MoveAllToActiveOrBackoffQueue: every waiting pod goes back, in arrival order — to the
        active queue if its back-off is over, else to wait out the rest of it."""
        waiting, self.unschedulable = self.unschedulable, {}
        self._unschedulable_at = {}
        for key, pod in waiting.items():
            self._requeue(key, pod)

    def _requeue(self, key: str, pod: Obj) -> None:
        attempts = self._attempts.get(key, 0)
        remaining = 0.0
        if attempts:
            remaining = self._last_attempt.get(key, 0.0) + _backoff(attempts) - self.kernel.now
        if remaining > 0:
            self._backoff_timers[key] = self.kernel.call_later(remaining, self._backoff_done, key, pod)
        else:
            self._enqueue(key, pod)

    def _wait_unschedulable(self, key: str, pod: Obj) -> None:
        self.unschedulable[key] = pod
        self._unschedulable_at[key] = self.kernel.now
        self._arm_flush()

    def _arm_flush(self) -> None:
        """One timer: the first 30 s tick at which the oldest waiting pod has waited more than
        5 minutes (the flush runs every 30 s upstream; ticks with nothing to move are skipped)."""
        if self._flush is not None or not self._unschedulable_at:
            return
        oldest = next(iter(self._unschedulable_at.values()))
        ticks = (
            math.floor(
                (oldest + POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION - self._started_at) / UNSCHEDULABLE_FLUSH_PERIOD
            )
            + 1
        )
        due = self._started_at + ticks * UNSCHEDULABLE_FLUSH_PERIOD
        self._flush = self.kernel.call_later(max(due - self.kernel.now, 0.0), self._flush_leftover)

    def _flush_leftover(self) -> None:
        """flushUnschedulablePodsLeftover: pods that waited longer than 5 minutes are retried."""
        self._flush = None
        now = self.kernel.now
        moved = [
            key for key, since in self._unschedulable_at.items() if now - since > POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION
        ]
        for key in moved:
            pod = self.unschedulable.pop(key)
            del self._unschedulable_at[key]
            self._requeue(key, pod)
        self._arm_flush()

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
        requests = pod_requests(pod)
        node = self._select_node(pod, requests)
        if node is None:
            self._attempts[key] = self._attempts.get(key, 0) + 1
            self._last_attempt[key] = self.kernel.now
            self._wait_unschedulable(key, pod)
            self._report_unschedulable(key, pod, requests)
            return
        self._assign(key, node, requests)
        self._binding.add(key)
        self.kernel.spawn(self._bind(key, pod, node), f"scheduler/bind/{key}")

    # -- node selection -----------------------------------------------------------------------
    def _select_node(self, pod: Obj, requests: tuple[int, int] = NO_REQUESTS) -> str | None:
        if requests != NO_REQUESTS:
            return self._select_node_by_scan(pod, requests)
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

    def _select_node_by_scan(self, pod: Obj, requests: tuple[int, int]) -> str | None:
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        best: tuple[int, str] | None = None
        for name, info in self.nodes.items():
            if best is not None and (info.count, name) > best:
                continue
            if not self._filter_reasons(info, tolerations, requests):
                best = (info.count, name)
        return best[1] if best is not None else None

    def _classify(self, info: _NodeInfo) -> None:
        if info.open:
            heapq.heappush(self._heap, (info.count, info.name))
        if info.taints and not info.unschedulable:
            self._tainted[info.name] = None
        else:
            self._tainted.pop(info.name, None)

    def _assign(self, key: str, node: str, requests: tuple[int, int] = NO_REQUESTS) -> None:
        self.assigned[key] = node
        if requests != NO_REQUESTS:
            self._requests[key] = requests
        info = self.nodes.get(node)
        if info is not None:
            info.count += 1
            info.cpu += requests[0]
            info.memory += requests[1]
            self._node_version += 1
            if info.open:
                heapq.heappush(self._heap, (info.count, node))

    def _release(self, key: str) -> None:
        node = self.assigned.pop(key, None)
        if node is None:
            return
        requests = self._requests.pop(key, NO_REQUESTS)
        info = self.nodes.get(node)
        if info is None:
            return
        was_full = info.count >= info.max_pods
        info.count -= 1
        info.cpu -= requests[0]
        info.memory -= requests[1]
        self._node_version += 1
        if info.open:
            heapq.heappush(self._heap, (info.count, node))
            # Queueing hint of NodeResourcesFit: a pod leaving helps if it freed a pod slot on a
            # full node, or cpu or memory.
            if was_full or requests != NO_REQUESTS:
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
        self._last_attempt.pop(key, None)
        assigned = f"Successfully assigned {meta.get('namespace')}/{meta['name']} to {node}"
        self.recorder.event(pod, "Normal", "Scheduled", assigned)

    def _back_off(self, key: str, pod: Obj) -> None:
        attempts = self._attempts.get(key, 0) + 1
        self._attempts[key] = attempts
        self._last_attempt[key] = self.kernel.now
        self._backoff_timers[key] = self.kernel.call_later(_backoff(attempts), self._backoff_done, key, pod)

    def _backoff_done(self, key: str, pod: Obj) -> None:
        if self._backoff_timers.pop(key, None) is None:
            return
        if key not in self.assigned:
            self._enqueue(key, pod)

    # -- unschedulable ------------------------------------------------------------------------
    def fit_error(self, pod: Obj, requests: tuple[int, int] | None = None) -> str:
        """Upstream's FitError message for `pod` against the current nodes."""
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        if requests is None:
            requests = pod_requests(pod)
        cache_key = (self._node_version, repr(tolerations), requests)
        cached = self._message_cache.get(cache_key)
        if cached is not None:
            return cached
        total = len(self.nodes)
        if total == 0:
            message = "no nodes available to schedule pods"
        else:
            reasons: dict[str, int] = {}
            preemption: dict[str, int] = {}
            for name in sorted(self.nodes):
                info = self.nodes[name]
                failed = self._filter_reasons(info, tolerations, requests)
                for reason in failed:
                    reasons[reason] = reasons.get(reason, 0) + 1
                if failed:
                    # One preemption verdict per node: not helpful if its status is
                    # UnschedulableAndUnresolvable (an unresolvable plugin, or requests beyond
                    # the node's allocatable), else no victims (equal priorities).
                    unresolvable = _NOT_HELPFUL in (_PREEMPTION[r] for r in failed) or (
                        failed[-1] in (REASON_INSUFFICIENT_CPU, REASON_INSUFFICIENT_MEMORY)
                        and info.beyond_allocatable(requests)
                    )
                    verdict = _NOT_HELPFUL if unresolvable else _NO_VICTIMS
                    preemption[verdict] = preemption.get(verdict, 0) + 1
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

    def _filter_reasons(self, info: _NodeInfo, tolerations: list[Obj], requests: tuple[int, int]) -> list[str]:
        """Why `info` cannot take the pod (empty: it can); the first failing plugin's reasons."""
        if info.unschedulable and not any(
            toleration_tolerates(t, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
            for t in tolerations
        ):
            return [REASON_UNSCHEDULABLE]
        if find_untolerated_taint(info.taints, tolerations) is not None:
            return [REASON_TAINT]
        if not info.ready and not info.taints:
            return [REASON_TAINT]  # upstream taints a not-ready node; we have not yet
        return info.insufficient(requests)

    def _report_unschedulable(self, key: str, pod: Obj, requests: tuple[int, int]) -> None:
        message = self.fit_error(pod, requests)
        # handleSchedulingFailure: an Event on every failed attempt, the condition only if new.
        self.recorder.event(pod, "Warning", "FailedScheduling", message)
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


def _backoff(attempts: int) -> float:
    """The pod back-off after `attempts` failed attempts: 1 s doubling up to 10 s."""
    return float(min(POD_INITIAL_BACKOFF * 2.0 ** (attempts - 1), POD_MAX_BACKOFF))

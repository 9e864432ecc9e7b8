"""Nodes: the Node objects, the node lifecycle controller, and the simulator that runs them.

Guarantees
----------
* `NodeSimulator(server, kernel, trace, config)` owns N `Kubelet`s (kubelet.py), the `Scheduler`
  (scheduler.py) and the `NodeLifecycleController`. `start()` registers `node-1` … `node-N`
  through the API (user agent "kubelet", as kubelets self-register), Ready, with
  capacity/allocatable cpu "4", memory "16Gi", pods "110", InternalIP 10.0.0.N.
* Plumbing shared for speed, behaviour per node: upstream every kubelet runs its own pods watch
  with `fieldSelector=spec.nodeName=<node>` and the scheduler its own informers. Here ONE pods
  watch (all namespaces) and ONE nodes watch (list, then watch from the list's
  resourceVersion, relisting if the server drops the watch) feed the scheduler, the lifecycle
  controller and the kubelet named by each pod's `spec.nodeName`. Each component still acts
  only through its own `Client` (user agents "kubelet", "default-scheduler", "node-controller").
* Every change of a pod's display state (Pending, Scheduled, ErrImagePull, ImagePullBackOff,
  Running, Ready, NotReady, CrashLoopBackOff, Terminating, Failed, Succeeded, Unknown, Deleted) is traced as
  `pod.transition` {namespace, name, node, from, to}; every change of a node's Ready condition
  as `node.transition` {name, from, to}. Both are derived from committed objects as the watch
  delivers them, so the trace shows what the API shows.
* Node loss (`node_down`): the kubelet stops. Missed heartbeats are modelled with ONE timer per
  lost node, not a stream of heartbeat/Lease events: `nodeMonitorGracePeriod` seconds later the
  controller sets the node's conditions Unknown ("Kubelet stopped posting node status."), taints
  it `node.kubernetes.io/unreachable` NoSchedule + NoExecute, and marks each of its pods Ready
  False (MarkPodsNotReady). After each pod's toleration of the NoExecute taint (the
  `tolerationSeconds` default that the DefaultTolerationSeconds admission plugin gives every
  pod, or the pod's own toleration) the taint-eviction controller writes the DisruptionTarget
  condition and deletes the pod; with its kubelet down the pod stays Terminating. Upstream's
  5-second monitor period and the per-zone eviction rate limiter are not modelled. Every other
  NoExecute taint (a user's) is the `TaintEvictionController`'s (tainteviction.py), fed by the
  same shared informers.
* `node_up`: the kubelet re-lists and posts Ready True; the controller removes its taints as soon
  as it sees that status, cancelling evictions not yet done; the kubelet finishes the pending
  deletions and re-posts statuses that changed while it was away.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

from controlplane.apiserver import ApiError, APIServer, Client
from controlplane.kernel import Kernel, Timer
from controlplane.kubelet import Kubelet, node_host_ip, pod_cidr, pod_key, ready_node_conditions, timestamp
from controlplane.scheduler import Scheduler, toleration_tolerates
from controlplane.tainteviction import TaintEvictionController, add_disruption_condition, get_min_toleration_time
from controlplane.trace import NULL_TRACE, Trace
from controlplane.version import GIT_VERSION

Obj = dict[str, Any]

TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
NODE_STATUS_UNKNOWN_MESSAGE = "Kubelet stopped posting node status."

DEFAULT_CONFIG: dict[str, Any] = {
    "nodes": 3,
    "podStartup": 2.0,  # seconds from bound to Running
    "podReadyDelay": 0.0,  # seconds from Running to Ready (0: one status write with both)
    "podShutdown": 1.0,  # seconds a terminating pod's containers take to stop (capped by grace)
    "schedulerLatency": 0.0,  # seconds per scheduling cycle
    "nodeMonitorGracePeriod": 40.0,  # --node-monitor-grace-period
    "tolerationSeconds": 300.0,  # --default-not-ready/unreachable-toleration-seconds
    "crashLoopBackOff": {"initial": 10.0, "max": 300.0},
    "maxPods": 110,  # kubelet --max-pods → allocatable pods
    "kubeletQPS": 50.0,  # KubeletConfiguration kubeAPIQPS
    "kubeletBurst": 100,
    "kubeletEventQPS": 50.0,  # KubeletConfiguration eventRecordQPS
    "kubeletEventBurst": 100,  # KubeletConfiguration eventBurst
    "schedulerQPS": 50.0,  # KubeSchedulerConfiguration clientConnection
    "schedulerBurst": 100,
    "nodeControllerQPS": 20.0,  # kube-controller-manager --kube-api-qps
    "nodeControllerBurst": 30,
    "apiLatency": 0.005,  # seconds per request of these clients
    "imageFaults": {},  # image pattern -> ErrImagePull | NeverReady (kubelet.py)
}

POD_STATES = (
    "Pending",
    "Scheduled",
    "ErrImagePull",
    "ImagePullBackOff",
    "Running",
    "Ready",
    "NotReady",
    "CrashLoopBackOff",
    "Terminating",
    "Failed",
    "Succeeded",
    "Unknown",
    "Deleted",
)


# -- display states -------------------------------------------------------------------------------
IMAGE_PULL_STATES = ("ErrImagePull", "ImagePullBackOff")  # a container's waiting reasons shown as states


def pod_display_state(pod: Obj, previous: str | None = None) -> str:
    """The state the UI shows for `pod`; `previous` separates NotReady (was Ready) from Running."""
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    status = pod.get("status") or {}
    phase = status.get("phase")
    if phase in ("Failed", "Succeeded", "Unknown"):
        return str(phase)
    if not (pod.get("spec") or {}).get("nodeName"):
        return "Pending"
    if phase != "Running":
        # Waiting for an image that cannot be pulled: the container's waiting reason, as
        # kubectl's STATUS column shows it (ErrImagePull, then ImagePullBackOff).
        for cs in status.get("containerStatuses") or []:
            reason = ((cs.get("state") or {}).get("waiting") or {}).get("reason")
            if reason in IMAGE_PULL_STATES:
                return str(reason)
        return "Scheduled"
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason") == "CrashLoopBackOff":
            return "CrashLoopBackOff"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            if cond.get("status") == "True":
                return "Ready"
            break
    return "NotReady" if previous in ("Ready", "NotReady") else "Running"


def node_display_state(node: Obj) -> str:
    """Ready, NotReady or Unknown: the node's Ready condition as `kubectl get nodes` shows it."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return {"True": "Ready", "False": "NotReady"}.get(cond.get("status", ""), "Unknown")
    return "Unknown"


# -- node objects ---------------------------------------------------------------------------------
def node_object(index: int, now: float, max_pods: int = 110) -> Obj:
    """The Node `node-<index>` as a freshly registered kubelet reports it."""
    name = f"node-{index}"
    now_s = timestamp(now)
    resources = {"cpu": "4", "memory": "16Gi", "pods": str(max_pods)}
    cidr = pod_cidr(index)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": ready_node_conditions(now_s),
            "addresses": [
                {"type": "InternalIP", "address": node_host_ip(index)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{index:032x}",
                "systemUUID": f"00000000-0000-0000-0000-{index:012x}",
                "bootID": f"00000000-0000-0000-0001-{index:012x}",
                "kernelVersion": "6.12.0-1-amd64",
                "osImage": "Debian GNU/Linux 13 (trixie)",
                "containerRuntimeVersion": "containerd://2.1.4",
                # The version the API server reports too (controlplane/version.py); a v1.32
                # kubelet still sets the deprecated kubeProxyVersion to its own.
                "kubeletVersion": GIT_VERSION,
                "kubeProxyVersion": GIT_VERSION,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def eviction_delay(pod: Obj, default_seconds: float) -> float | None:
    """Seconds `pod` tolerates the unreachable NoExecute taint; None = forever, 0 = at once.

    The DefaultTolerationSeconds admission plugin adds `tolerationSeconds: default` unless the
    pod already tolerates the key; then the taint-eviction controller takes the smallest
    tolerationSeconds of the matching tolerations (getMinTolerationTime).
    """
    taint = {"key": TAINT_UNREACHABLE, "effect": "NoExecute"}
    tolerations: list[Obj] = list((pod.get("spec") or {}).get("tolerations") or [])
    if not any(
        (t.get("key") or "") in (TAINT_UNREACHABLE, "") and (t.get("effect") or "") in ("NoExecute", "")
        for t in tolerations
    ):
        tolerations.append(
            {
                "key": TAINT_UNREACHABLE,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": default_seconds,
            }
        )
    return get_min_toleration_time([t for t in tolerations if toleration_tolerates(t, taint)])


# -- the node lifecycle controller ----------------------------------------------------------------
class NodeLifecycleController:
    """node-lifecycle-controller + taint-eviction-controller of kube-controller-manager.

    The simulator tells it when a kubelet stops and starts (`kubelet_stopped`,
    `kubelet_started`): that stands for the heartbeats it would otherwise watch. It learns
    node and pod objects from `on_node_event` / `on_pod_event` and acts through `client`.
    """

    def __init__(
        self,
        kernel: Kernel,
        client: Client,
        config: dict[str, Any],
        pods_on_node: Callable[[str], list[Obj]],
        get_node: Callable[[str], Obj | None],
        get_pod: Callable[[str], Obj | None],
        trace: Trace | None = None,
    ) -> None:
        self.kernel = kernel
        self.client = client
        self.config = config
        self.trace = trace or NULL_TRACE
        self._pods_on_node = pods_on_node
        self._get_node = get_node
        self._get_pod = get_pod
        self.silent: dict[str, Timer] = {}  # node → grace timer, while its kubelet is silent
        self.lost: set[str] = set()  # nodes whose kubelet is not posting status
        self.tainted_at: dict[str, float] = {}  # node → when our NoExecute taint was added
        self._eviction_timers: dict[str, list[Timer]] = {}
        self._scheduled: dict[str, set[str]] = {}  # node → pod keys with an eviction pending
        self._untainting: set[str] = set()

    # -- heartbeats ---------------------------------------------------------------------------
    def kubelet_stopped(self, name: str) -> None:
        if name in self.lost:
            return
        self.lost.add(name)
        grace = float(self.config["nodeMonitorGracePeriod"])
        self.silent[name] = self.kernel.call_later(grace, self._grace_expired, name)

    def kubelet_started(self, name: str) -> None:
        self.lost.discard(name)
        timer = self.silent.pop(name, None)
        if timer is not None:
            timer.cancel()

    def _grace_expired(self, name: str) -> None:
        self.silent.pop(name, None)
        if name in self.lost:
            self.kernel.spawn(self._mark_unreachable(name), f"node-controller/{name}")

    # -- informer feed ------------------------------------------------------------------------
    def on_node_event(self, kind: str, node: Obj) -> None:
        name = node["metadata"]["name"]
        if kind == "DELETED":
            self._cancel_evictions(name)
            return
        taints = (node.get("spec") or {}).get("taints") or []
        if not any(t.get("key") == TAINT_UNREACHABLE and t.get("effect") == "NoExecute" for t in taints):
            self._cancel_evictions(name)
        ours = [t for t in taints if t.get("key") in (TAINT_UNREACHABLE, TAINT_NOT_READY)]
        if ours and name not in self.lost and name not in self._untainting and node_display_state(node) == "Ready":
            self._untainting.add(name)
            self.kernel.spawn(self._remove_taints(name), f"node-controller/{name}/untaint")

    def on_pod_event(self, kind: str, pod: Obj) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if kind == "DELETED" or not node or node not in self.tainted_at:
            return
        key = pod_key(pod)
        if key not in self._scheduled.get(node, ()):
            self._schedule_evictions(node, [pod])

    # -- node goes Unknown --------------------------------------------------------------------
    async def _mark_unreachable(self, name: str) -> None:
        if not await self._write_node_unknown(name):
            return
        if name not in self.lost:
            return
        if await self._add_taints(name) and name in self.lost:
            self.tainted_at[name] = self.kernel.now
            self._schedule_evictions(name, self._pods_on_node(name))
        for pod in self._pods_on_node(name):
            if name not in self.lost:
                return
            await self._mark_pod_not_ready(pod)

    async def _write_node_unknown(self, name: str) -> bool:
        node = self._get_node(name)
        while node is not None:
            now_s = timestamp(self.kernel.now)
            conditions = []
            changed = False
            for cond in node.get("status", {}).get("conditions") or []:
                if cond.get("type") in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure") and (
                    cond.get("status") != "Unknown"
                ):
                    cond = {
                        **cond,
                        "status": "Unknown",
                        "lastTransitionTime": now_s,
                        "reason": "NodeStatusUnknown",
                        "message": NODE_STATUS_UNKNOWN_MESSAGE,
                    }
                    changed = True
                conditions.append(cond)
            if not changed:
                return True
            body = {**node, "status": {**node["status"], "conditions": conditions}}
            try:
                await self.client.update("nodes", None, name, body, subresource="status")
                return True
            except ApiError as err:
                if err.code != 409:
                    return False
            node = await self._reget_node(name)
        return False

    async def _add_taints(self, name: str) -> bool:
        node = self._get_node(name)
        while node is not None:
            taints = list((node.get("spec") or {}).get("taints") or [])
            now_s = timestamp(self.kernel.now)
            present = {(t.get("key"), t.get("effect")) for t in taints}
            for effect in ("NoExecute", "NoSchedule"):
                if (TAINT_UNREACHABLE, effect) not in present:
                    taints.append({"key": TAINT_UNREACHABLE, "effect": effect, "timeAdded": now_s})
            body = {**node, "spec": {**node.get("spec", {}), "taints": taints}}
            try:
                await self.client.update("nodes", None, name, body)
                return True
            except ApiError as err:
                if err.code != 409:
                    return False
            node = await self._reget_node(name)
        return False

    async def _remove_taints(self, name: str) -> None:
        try:
            node = self._get_node(name)
            while node is not None and name not in self.lost:
                spec = node.get("spec") or {}
                current = spec.get("taints") or []
                taints = [t for t in current if t.get("key") not in (TAINT_UNREACHABLE, TAINT_NOT_READY)]
                if len(taints) == len(current):
                    return
                new_spec = {k: v for k, v in spec.items() if k != "taints"}
                if taints:
                    new_spec["taints"] = taints
                try:
                    await self.client.update("nodes", None, name, {**node, "spec": new_spec})
                    return
                except ApiError as err:
                    if err.code != 409:
                        return
                node = await self._reget_node(name)
        finally:
            self._untainting.discard(name)

    async def _reget_node(self, name: str) -> Obj | None:
        try:
            node: Obj = await self.client.get("nodes", None, name)
            return node
        except ApiError:
            return None

    async def _mark_pod_not_ready(self, pod: Obj | None) -> None:
        """MarkPodsNotReady for one pod: Ready → False, lastTransitionTime now, phase unchanged."""
        for _ in range(2):  # upstream retries on its next monitor pass; we re-read once
            if pod is None:
                return
            conditions = (pod.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "Ready" and c.get("status") != "False" for c in conditions):
                return
            now_s = timestamp(self.kernel.now)
            new = [
                {**c, "status": "False", "lastTransitionTime": now_s} if c.get("type") == "Ready" else c
                for c in conditions
            ]
            meta = pod["metadata"]
            body = {**pod, "status": {**pod["status"], "conditions": new}}
            try:
                await self.client.update("pods", meta.get("namespace"), meta["name"], body, subresource="status")
                return
            except ApiError as err:
                if err.code != 409:
                    return
            pod = await self._reget_pod(pod)

    async def _reget_pod(self, pod: Obj) -> Obj | None:
        meta = pod["metadata"]
        try:
            fresh: Obj = await self.client.get("pods", meta.get("namespace"), meta["name"])
        except ApiError:
            return None
        return fresh if fresh["metadata"].get("uid") == meta.get("uid") else None

    # -- taint-based eviction -----------------------------------------------------------------
    def _schedule_evictions(self, name: str, pods: list[Obj]) -> None:
        taint_time = self.tainted_at[name]
        default = float(self.config["tolerationSeconds"])
        due: dict[float, list[str]] = {}
        scheduled = self._scheduled.setdefault(name, set())
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            delay = eviction_delay(pod, default)
            if delay is None:
                continue
            key = pod_key(pod)
            scheduled.add(key)
            due.setdefault(max(taint_time + delay, self.kernel.now), []).append(key)
        timers = self._eviction_timers.setdefault(name, [])
        for when in sorted(due):
            timers.append(self.kernel.call_at(when, self._evictions_due, name, due[when]))

    def _cancel_evictions(self, name: str) -> None:
        for timer in self._eviction_timers.pop(name, []):
            timer.cancel()
        self._scheduled.pop(name, None)
        self.tainted_at.pop(name, None)

    def _evictions_due(self, name: str, keys: list[str]) -> None:
        if name in self.tainted_at:
            self.kernel.spawn(self._evict(name, keys), f"taint-eviction/{name}")

    async def _evict(self, name: str, keys: list[str]) -> None:
        for key in keys:
            if name not in self.tainted_at:
                return
            pod = self._get_pod(key)
            if pod is None or pod["metadata"].get("deletionTimestamp") or pod["spec"].get("nodeName") != name:
                continue
            pod = await self._add_disruption_condition(pod)
            if pod is None:
                continue
            meta = pod["metadata"]
            try:
                await self.client.delete("pods", meta.get("namespace"), meta["name"])
            except ApiError:
                continue

    async def _add_disruption_condition(self, pod: Obj | None) -> Obj | None:
        """The DisruptionTarget condition the taint-eviction controller writes before deleting."""
        return await add_disruption_condition(self.client, self.kernel, pod)


# -- the simulator --------------------------------------------------------------------------------
class NodeSimulator:
    """Nodes, kubelets, scheduler and node lifecycle controller over one API server.

    Call `start()` once, at the instant the world begins, then drive the kernel. `config` keys
    are those of `DEFAULT_CONFIG`; other keys are ignored (the simulation shares one config
    dict between its components).
    """

    def __init__(
        self,
        server: APIServer,
        kernel: Kernel,
        trace: Trace | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.server = server
        self.kernel = kernel
        self.trace = trace or NULL_TRACE
        self.config: dict[str, Any] = {**DEFAULT_CONFIG, "crashLoopBackOff": dict(DEFAULT_CONFIG["crashLoopBackOff"])}
        self._merge_config(config or {})
        # The shared informer caches: key "ns/name" → pod, node name → node.
        self.pods: dict[str, Obj] = {}
        self.nodes: dict[str, Obj] = {}
        self._by_node: dict[str, dict[str, None]] = {}  # node → pod keys bound to it
        self._pod_states: dict[str, str] = {}  # pod key → display state
        self._node_states: dict[str, str] = {}
        self.kubelets: dict[str, Kubelet] = {}
        self.scheduler = Scheduler(
            kernel,
            self._client("default-scheduler", "scheduler"),
            self.config,
            self.trace,
            event_client=self._client("default-scheduler", "scheduler"),  # its own event clientset
        )
        self.lifecycle = NodeLifecycleController(
            kernel,
            self._client("node-controller", "nodeController"),
            self.config,
            self.pods_on_node,
            self.nodes.get,
            self.pods.get,
            self.trace,
        )
        # NoExecute taints other than the lifecycle controller's own (tainteviction.py).
        self.taint_eviction = TaintEvictionController(
            kernel,
            self._client("taint-eviction-controller", "nodeController"),
            self.pods_on_node,
            self.pods.get,
            self.trace,
            event_client=self._client("taint-eviction-controller", "nodeController"),
        )
        self._pod_watch: Any = None
        self._node_watch: Any = None
        self.started = False

    # -- setup --------------------------------------------------------------------------------
    def start(self) -> None:
        """Register the nodes and open the shared watches (synchronously, at `kernel.now`)."""
        if self.started:
            return
        self.started = True
        self._add_nodes(int(self.config["nodes"]))
        self._list_and_watch_nodes()
        self._list_and_watch_pods()

    def settling(self) -> tuple[int, int]:
        """(pods whose start, readiness or stop is still to come on a running kubelet, pods the
        scheduler is placing or binding). Pods that cannot be placed, or crash-loop, are at rest."""
        on_nodes = sum(k.settling for k in self.kubelets.values() if k.running)
        return on_nodes, self.scheduler.in_flight()

    def _client(self, user_agent: str, prefix: str) -> Client:
        return Client(
            self.server,
            self.kernel,
            user_agent,
            qps=float(self.config[f"{prefix}QPS"]),
            burst=int(self.config[f"{prefix}Burst"]),
            latency=float(self.config["apiLatency"]),
        )

    def _add_nodes(self, count: int) -> None:
        for index in range(len(self.kubelets) + 1, count + 1):
            name = f"node-{index}"
            kubelet = Kubelet(
                name,
                index,
                self.kernel,
                self._client("kubelet", "kubelet"),
                self.config,
                self.trace,
                get_node=partial(self.nodes.get, name),
                event_client=self._client("kubelet", "kubeletEvent"),
            )
            self.kubelets[name] = kubelet
            body = node_object(index, self.kernel.now, int(self.config["maxPods"]))
            try:
                self.server.create("nodes", None, body, client="kubelet")
            except ApiError as err:
                if err.code != 409:  # already registered (a restarted simulator): keep it
                    raise

    def _list_and_watch_nodes(self) -> None:
        listed = self.server.list("nodes", client="node-controller")
        self._replace(listed["items"], self.nodes, self._handle_node, lambda n: n["metadata"]["name"])
        self._node_watch = self.server.watch(
            "nodes", resource_version=listed["metadata"]["resourceVersion"], client="node-controller"
        )
        self._node_watch.start(self._on_node_events, self._on_node_watch_closed)

    def _list_and_watch_pods(self) -> None:
        listed = self.server.list("pods", client="kubelet")
        self._replace(listed["items"], self.pods, self._handle_pod, pod_key)
        self._pod_watch = self.server.watch(
            "pods", resource_version=listed["metadata"]["resourceVersion"], client="kubelet"
        )
        self._pod_watch.start(self._on_pod_events, self._on_pod_watch_closed)

    def _replace(
        self,
        items: list[Obj],
        cache: dict[str, Obj],
        handle: Callable[[str, Obj], None],
        key_of: Callable[[Obj], str],
    ) -> None:
        # A relist: objects new or changed since the cache last saw them arrive as ADDED or
        # MODIFIED, and those gone as DELETED with their last known state (Reflector.Replace).
        seen: set[str] = set()
        for obj in items:
            key = key_of(obj)
            seen.add(key)
            old = cache.get(key)
            if old is None:
                handle("ADDED", obj)
            elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                handle("MODIFIED", obj)
        for key in [k for k in cache if k not in seen]:
            handle("DELETED", cache[key])

    def _on_pod_watch_closed(self, reason: Any = None) -> None:
        self.kernel.call_soon(self._list_and_watch_pods)

    def _on_node_watch_closed(self, reason: Any = None) -> None:
        self.kernel.call_soon(self._list_and_watch_nodes)

    # -- event dispatch -----------------------------------------------------------------------
    def _on_pod_events(self, events: list[tuple[str, Obj]]) -> None:
        handle = self._handle_pod
        trace = self.trace
        if trace.enabled:
            # Each event's handling (the pod.transition, the kubelet's and the scheduler's steps
            # it starts) is caused by the request that wrote it (controlplane.trace).
            outer = trace.cause
            for kind, pod in events:
                trace.cause = trace.revision_cause(pod["metadata"].get("resourceVersion"))
                handle(kind, pod)
            trace.cause = outer
            return
        for kind, pod in events:
            handle(kind, pod)

    def _on_node_events(self, events: list[tuple[str, Obj]]) -> None:
        handle = self._handle_node
        trace = self.trace
        if not trace.enabled:
            for kind, node in events:
                handle(kind, node)
            return
        outer = trace.cause
        for kind, node in events:
            trace.cause = trace.revision_cause(node["metadata"].get("resourceVersion"))
            handle(kind, node)
        trace.cause = outer

    def _handle_pod(self, kind: str, pod: Obj) -> None:
        key = pod_key(pod)
        old = self.pods.get(key)
        old_node = (old.get("spec") or {}).get("nodeName") if old is not None else None
        node = (pod.get("spec") or {}).get("nodeName")
        if kind == "DELETED":
            self.pods.pop(key, None)
            for name in (old_node, node):
                if name:
                    self._by_node.get(name, {}).pop(key, None)
        else:
            self.pods[key] = pod
            if old_node != node and old_node:
                self._by_node.get(old_node, {}).pop(key, None)
            if node:
                self._by_node.setdefault(node, {})[key] = None
        self._pod_transition(key, kind, pod, node)
        self.scheduler.on_pod_event(kind, pod, key)
        self.lifecycle.on_pod_event(kind, pod)
        self.taint_eviction.on_pod_event(kind, pod, old)
        if node:
            kubelet = self.kubelets.get(node)
            if kubelet is not None:
                kubelet.on_pod_event(kind, pod, key)

    def _handle_node(self, kind: str, node: Obj) -> None:
        name = node["metadata"]["name"]
        if kind == "DELETED":
            self.nodes.pop(name, None)
            new_state = "Deleted"
        else:
            self.nodes[name] = node
            new_state = node_display_state(node)
        old_state = self._node_states.get(name)
        if new_state != old_state:
            if kind == "DELETED":
                self._node_states.pop(name, None)
            else:
                self._node_states[name] = new_state
            if self.trace.enabled:
                self.trace.emit("node.transition", name=name, **{"from": old_state, "to": new_state})
        self.scheduler.on_node_event(kind, node)
        self.lifecycle.on_node_event(kind, node)
        self.taint_eviction.on_node_event(kind, node)

    def _pod_transition(self, key: str, kind: str, pod: Obj, node: str | None) -> None:
        previous = self._pod_states.get(key)
        if kind == "DELETED":
            state = "Deleted"
            self._pod_states.pop(key, None)
        else:
            state = pod_display_state(pod, previous)
            if state == previous:
                return
            self._pod_states[key] = state
        if self.trace.enabled:
            meta = pod["metadata"]
            owner = None
            for ref in meta.get("ownerReferences") or ():
                if ref.get("controller"):
                    owner = f"{ref.get('kind')}/{ref.get('name')}"
                    break
            self.trace.emit(
                "pod.transition",
                namespace=meta.get("namespace"),
                name=meta["name"],
                node=node,
                owner=owner,
                **{"from": previous, "to": state},
            )

    # -- queries --------------------------------------------------------------------------------
    def pods_on_node(self, name: str) -> list[Obj]:
        """Every pod bound to node `name` (from the shared cache), in key order."""
        keys = self._by_node.get(name, {})
        return [self.pods[k] for k in sorted(keys) if k in self.pods]

    def kubelet_for(self, pod: Obj) -> Kubelet | None:
        """The kubelet running `pod` (by its spec.nodeName), or None for an unbound pod."""
        return self.kubelets.get((pod.get("spec") or {}).get("nodeName") or "")

    def pod_state(self, namespace: str, name: str) -> str | None:
        """The display state of pod `namespace/name`, or None if it does not exist."""
        return self._pod_states.get(f"{namespace}/{name}")

    # -- faults ---------------------------------------------------------------------------------
    def node_down(self, name: str) -> None:
        """The node's kubelet stops; the node controller notices after the grace period."""
        kubelet = self.kubelets[name]
        if kubelet.running:
            kubelet.stop()
            self.lifecycle.kubelet_stopped(name)

    def node_up(self, name: str) -> None:
        """The node's kubelet comes back, posts Ready and reconciles its pods."""
        kubelet = self.kubelets[name]
        if not kubelet.running:
            self.lifecycle.kubelet_started(name)
            kubelet.start(self.pods_on_node(name))

    # -- configuration --------------------------------------------------------------------------
    def apply_config(self, changes: dict[str, Any]) -> None:
        """Change configuration at run time. Timings apply to what is scheduled from now on;
        client rates at once; `nodes` may only grow (new nodes register at once)."""
        nodes = changes.get("nodes")
        if nodes is not None and int(nodes) < len(self.kubelets):
            raise ValueError(f"nodes: cannot shrink from {len(self.kubelets)} to {nodes} at run time")
        image_faults = self.config["imageFaults"]
        self._merge_config(changes)
        if self.config["imageFaults"] != image_faults:
            for kubelet in self.kubelets.values():
                kubelet.image_faults_changed()
        latency = float(self.config["apiLatency"])
        clients = [(self.scheduler.client, "scheduler"), (self.lifecycle.client, "nodeController")]
        clients += [(self.scheduler.recorder.client, "scheduler")]
        clients += [(k.client, "kubelet") for k in self.kubelets.values()]
        clients += [(k.recorder.client, "kubeletEvent") for k in self.kubelets.values()]
        for client, prefix in clients:
            client.qps = float(self.config[f"{prefix}QPS"])
            client.burst = int(self.config[f"{prefix}Burst"])
            client.latency = latency
        if self.started and nodes is not None and int(nodes) > len(self.kubelets):
            self._add_nodes(int(nodes))

    def _merge_config(self, changes: dict[str, Any]) -> None:
        for key, value in changes.items():
            if key not in DEFAULT_CONFIG:
                continue
            if key == "crashLoopBackOff":
                self.config[key] = {**self.config[key], **value}
            else:
                self.config[key] = value
        # --default-not-ready/unreachable-toleration-seconds are kube-apiserver flags: the
        # DefaultTolerationSeconds admission plugin writes them into every pod it admits.
        self.server.default_toleration_seconds = math.ceil(float(self.config["tolerationSeconds"]))

    # -- UI ---------------------------------------------------------------------------------------
    def snapshot(self, pods: bool = True) -> dict[str, Any]:
        """Nodes (ready state, kubelet, taints, pod counts by state) and, unless `pods` is False,
        every pod's state."""
        nodes = []
        for name in sorted(self.kubelets, key=lambda n: int(n.rsplit("-", 1)[1])):
            node = self.nodes.get(name) or {}
            counts: dict[str, int] = {}
            for key in self._by_node.get(name, {}):
                state = self._pod_states.get(key, "Pending")
                counts[state] = counts.get(state, 0) + 1
            active = sum(n for s, n in counts.items() if s not in ("Failed", "Succeeded"))
            nodes.append(
                {
                    "name": name,
                    "state": self._node_states.get(name, "Unknown"),
                    "kubelet": "running" if self.kubelets[name].running else "stopped",
                    "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
                    "taints": [
                        f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
                        for t in (node.get("spec") or {}).get("taints") or []
                    ],
                    "pods": active,
                    "podStates": counts,
                }
            )
        if not pods:
            return {"nodes": nodes, "pending": self.scheduler.pending_count()}
        pod_list = []
        for key in sorted(self._pod_states):
            pod = self.pods.get(key)
            if pod is None:
                continue
            pod_list.append(
                {
                    "namespace": pod["metadata"].get("namespace"),
                    "name": pod["metadata"]["name"],
                    "node": (pod.get("spec") or {}).get("nodeName"),
                    "state": self._pod_states[key],
                }
            )
        return {"nodes": nodes, "pods": pod_list, "pending": self.scheduler.pending_count()}

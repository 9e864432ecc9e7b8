"""The kubelet: runs the pods bound to one node and reports their status (simplified, honest).

Guarantees
----------
* One `Kubelet` per node. It learns about its pods from `on_pod_event` (the NodeSimulator feeds
  it from a shared pods watch) and acts only through its own `Client` (user agent "kubelet"), so
  every status write and deletion is a recorded API request.
* A bound pod is first reported Pending with its containers waiting, reason ContainerCreating
  (one status write as soon as the kubelet admits it); it becomes Running `podStartup` seconds
  after the kubelet first saw it, and Ready `podReadyDelay` seconds later; with
  `podReadyDelay == 0` both arrive in ONE status write.
  Each status write is an update of `pods/status` with the resourceVersion the kubelet last saw;
  on 409 Conflict it re-reads the pod and writes again (client-go's usual retry-on-conflict).
  Writes for one pod are serialised (upstream's status manager syncs one pod at a time) and a
  write is skipped when the generated status equals the stored one.
* A pod with a deletionTimestamp: its containers stop after `min(podShutdown, grace period)`
  (exit 0 "Completed" when they stop within the grace period, 137 "Error" when killed at its
  end); the kubelet writes the final status, then deletes the pod with grace 0 and a uid
  precondition (upstream status manager `canBeDeleted` → Delete(gracePeriod 0, Preconditions{UID})).
  The final status carries a terminal phase (Succeeded when every container exited 0, else
  Failed), as upstream's `getPhase(..., podIsTerminal=true)` has done since v1.27.
* `evict` also adds the DisruptionTarget condition (reason TerminationByKubelet) the eviction
  manager sets since PodDisruptionConditions went GA.
* Faults (`crash`, `fail`, `succeed`, `evict`, `set_ready`) each cause exactly one status write.
  A crash follows the kubelet's container back-off: 10 s doubling to 300 s, reset once the
  container ran 10 minutes (`2 * max`, upstream `flowcontrol.Backoff` expiry). Faults need a
  running container and a running kubelet; otherwise they return False and change nothing.
* `stop()` models a dead kubelet (or a partitioned node): pod events are ignored, no status is
  written, pending timers do nothing. Containers keep running. `start(pods)` re-lists: it
  re-arms whatever came due while stopped, finishes pending deletions and re-posts statuses that
  others changed meanwhile (the node controller's MarkPodsNotReady).

* Events, as the v1.32 kubelet records them (pkg/kubelet/events reasons, source
  `{component: kubelet, host: <node>}`, `involvedObject.fieldPath: spec.containers{<name>}`),
  through the kubelet's own event client (its own token bucket: eventRecordQPS 50, burst 100):
  at admission `Pulling` ("Pulling image \"nginx\"") for each container whose image must be
  pulled — imagePullPolicy Always, or IfNotPresent with the image not yet on the node; when the
  containers start, per container `Pulled` ("Successfully pulled image \"nginx\" in 2s (2s
  including waiting). Image size: N bytes." or "Container image \"nginx:1.27\" already present
  on machine"), `Created` ("Created container: web"), `Started` ("Started container web"); on
  a crash `BackOff` (Warning, "Back-off restarting failed container web in pod
  web-x_default(uid)"); when running containers are stopped for a deletion `Killing` ("Stopping
  container web"); on an eviction `Evicted` (Warning, on the pod) before the `Killing`s. The
  Event correlator (events.py) aggregates repeats into counts, so a crash loop is a few Events
  with growing counts, not one per restart.

* Image faults (`config.imageFaults`: fnmatch pattern of the spec's image reference ->
  `ErrImagePull` or `NeverReady`; the first pattern that matches wins), as upstream's image
  manager (pkg/kubelet/images/image_manager.go `pullImage`) and kuberuntime `startContainer`
  report them:
  - `ErrImagePull`: a pull the pod has to make (policy Always, or the image not on the node)
    fails when it would have finished: Warning `Failed` "Failed to pull image \"X\": <err>" and
    Warning `Failed` "Error: ErrImagePull"; the container waits with reason ErrImagePull. The
    pull's back-off (`flowcontrol.Backoff` keyed by pod UID and image: 10 s doubling to 300 s,
    reset after 2 x max without a failure) starts; the next pod sync (1 s later, the PLEG relist)
    finds it backing off: Normal `BackOff` "Back-off pulling image \"X\"" and Warning `Failed`
    "Error: ImagePullBackOff"; the container waits with reason ImagePullBackOff, message
    "Back-off pulling image \"X\": ErrImagePull: <err>" (v1.32+). When the back-off ends the
    kubelet pulls again (`Pulling`), reading the faults anew: a lifted fault lets the pull succeed.
    The pod stays Pending and never Ready meanwhile.
  - `NeverReady`: the containers start and run, but the readiness probe never passes: one Warning
    `Unhealthy` "Readiness probe failed: HTTP probe failed with statuscode: 503" when readiness
    would have come. Lifting the fault (a `config` action) makes those pods Ready at once; a
    `ready` pod fault does too (the probe passes).
  A fault applies to pulls and container starts from then on; pods already running are not
  touched by a new fault.

Simplifications (said here so nobody mistakes them for upstream): all containers of a pod share
one lifecycle; an image pull takes the whole `podStartup` (a restart's pull with policy Always
takes no time); `imagePullPolicy: Never` counts the image as present; `BackOff` is recorded once
per crash (upstream repeats it on each pod sync during the back-off); readiness comes from
`podReadyDelay`, `set_ready` and the `NeverReady` image fault, not from probes; a failing pull
holds every container of the pod (upstream starts the others); the ImagePullBackOff `BackOff`
Event is recorded once per back-off (upstream repeats it on every pod sync in the back-off) and
`Unhealthy` once (upstream repeats it every probe period); the pull error is containerd's
"not found" for every failing image.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

from controlplane.apiserver import ApiError, Client
from controlplane.events import EventRecorder
from controlplane.informers.store import namespaced_key
from controlplane.interning import intern, keep
from controlplane.kernel import Kernel, parse_rfc3339, rfc3339, vtime
from controlplane.trace import NULL_TRACE, Trace

Obj = dict[str, Any]

# PodConditionsByKubelet (pkg/kubelet/types/pod_status.go): the kubelet regenerates these on
# every status sync and preserves every other condition (DisruptionTarget, readiness gates).
KUBELET_CONDITIONS = frozenset({"PodScheduled", "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"})
EVICTION_MESSAGE = "The node was low on resource: memory."

# Container lifecycle of a pod record.
STARTING = "starting"  # admitted, containers not started yet
RUNNING = "running"  # containers running (ready or not)
BACKOFF = "backoff"  # crashed, waiting out CrashLoopBackOff
STOPPING = "stopping"  # deletion seen, containers being stopped
TERMINATED = "terminated"  # containers stopped for good (terminal phase or deleted)
IMAGE_PULL = "imagepull"  # a failed image pull: waiting out ErrImagePull / ImagePullBackOff

# config.imageFaults values.
ERR_IMAGE_PULL = "ErrImagePull"
NEVER_READY = "NeverReady"
IMAGE_FAULTS = (ERR_IMAGE_PULL, NEVER_READY)
# The image pull back-off (kubelet.go: backOffPeriod 10 s, MaxContainerBackOff 300 s).
IMAGE_BACKOFF_INITIAL = 10.0
IMAGE_BACKOFF_MAX = 300.0
# The pod sync that finds a failed pull backing off: the PLEG relist period (1 s).
PLEG_RELIST_PERIOD = 1.0
READINESS_FAILURE = "HTTP probe failed with statuscode: 503"


Action = Callable[["Kubelet", "_PodRecord"], None]


class _ImageFault:
    """The image fault of one pod (most pods have none): which containers' pulls fail, with
    what, the pull back-off; or that readiness never passes."""

    __slots__ = ("backoff", "containers", "error", "failed_at", "image", "kind", "pull_started", "reason")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.containers: tuple[str, ...] = ()
        self.image = ""
        self.error = ""
        self.reason = ERR_IMAGE_PULL  # the waiting reason the containers show
        self.backoff: float | None = None
        self.failed_at = 0.0
        self.pull_started: float | None = None


class _PodRecord:
    """What the kubelet knows about one pod: the latest object and its runtime state.

    Invariant: `timer` is the one pending action (`action` at time `due`) or None.
    """

    __slots__ = (
        "action",
        "admitted_at",
        "backoff",
        "container_id",
        "deleting",
        "dirty",
        "due",
        "exit_code",
        "fault",
        "finished_at",
        "key",
        "last_state",
        "message",
        "phase",
        "pod",
        "pod_ip",
        "pulling",
        "ready",
        "reason",
        "removed",
        "restart_count",
        "rv",
        "started_at",
        "state",
        "syncing",
        "term_reason",
        "timer",
        "uid",
    )

    def __init__(self, key: str, pod: Obj, now: float) -> None:
        self.key = key
        self.pod = pod
        self.uid: str = pod["metadata"].get("uid", "")
        self.rv = _rv(pod)
        self.state = STARTING
        self.admitted_at = now
        self.started_at = now
        self.finished_at = now
        self.ready = False
        self.restart_count = 0
        self.backoff: float | None = None
        self.container_id = ""
        self.last_state: Obj | None = None
        self.exit_code = 0
        self.term_reason = ""
        self.phase: str | None = None  # terminal phase once TERMINATED
        self.reason: str | None = None  # pod-level status.reason (Evicted)
        self.message: str | None = None
        self.pod_ip: int | None = None
        # Names of the containers whose image pull began at admission; None once they started.
        self.pulling: tuple[str, ...] | None = None
        self.fault: _ImageFault | None = None  # config.imageFaults at work on this pod
        self.deleting = False
        self.removed = False
        self.syncing = False
        self.dirty = False
        self.timer: Any = None
        self.action: Action | None = None
        self.due = 0.0

    def observe(self, pod: Obj) -> None:
        """Keep `pod` if it is at least as new as the one we hold."""
        rv = _rv(pod)
        if rv >= self.rv:
            self.pod = pod
            self.rv = rv


def _rv(obj: Obj) -> int:
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except ValueError:
        return 0


def pod_key(pod: Obj) -> str:
    # Interned: the kubelet, the node simulator, the scheduler and the informers all keep a key
    # per pod; one shared string instead of one each (~70 bytes a copy at 100k pods).
    meta = pod["metadata"]
    return namespaced_key(meta.get("namespace", ""), meta["name"])


def timestamp(t: float) -> str:
    """`rfc3339(t)`, memoised per whole second (strftime dominates a status write otherwise)."""
    return _timestamp(math.floor(t))


@lru_cache(maxsize=4096)
def _timestamp(second: int) -> str:
    return rfc3339(second)


@lru_cache(maxsize=1024)
def image_refs(image: str) -> tuple[str, str]:
    """(status.image, status.imageID) as containerd reports them for a spec image reference."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = "" if ":" not in last else name.rsplit(":", 1)[1]
    repo = name[: len(name) - len(tag) - 1] if tag else name
    first = repo.split("/", 1)[0]
    if "/" not in repo:
        repo = f"docker.io/library/{repo}"
    elif "." not in first and ":" not in first and first != "localhost":
        repo = f"docker.io/{repo}"
    full = f"{repo}@{digest}" if digest else f"{repo}:{tag or 'latest'}"
    image_id = f"{repo}@{digest or 'sha256:' + hashlib.sha256(image.encode()).hexdigest()}"
    return full, image_id


class Kubelet:
    """The kubelet of node `node_name`. See the module docstring for the guarantees.

    `node_index` (1-based) fixes the node's addresses: hostIP 10.0.x.y and pod IPs from the
    node's /24 pod CIDR, handed out round-robin like the host-local IPAM plugin.
    `get_node` returns the current Node object (the shared nodes cache), for node status posts.
    """

    def __init__(
        self,
        node_name: str,
        node_index: int,
        kernel: Kernel,
        client: Client,
        config: dict[str, Any],
        trace: Trace | None = None,
        get_node: Callable[[], Obj | None] | None = None,
        event_client: Client | None = None,
    ) -> None:
        """`event_client`: the client Events are posted with (default: `client`)."""
        self.node_name = node_name
        self.node_index = node_index
        self.kernel = kernel
        self.client = client
        self.config = config
        self.trace = trace or NULL_TRACE
        self.get_node = get_node or (lambda: None)
        self.recorder = EventRecorder(kernel, event_client or client, "kubelet", host=node_name, trace=self.trace)
        # Images on the node: pulled ones stay (no image garbage collection modelled).
        self.images: set[str] = set()
        self.running = True
        # pod key → record, in admission order.
        self.pods: dict[str, _PodRecord] = {}
        self.host_ip = node_host_ip(node_index)
        self.host_ips = [{"ip": self.host_ip}]  # shared by every pod status of this node
        self._pod_net = pod_cidr_base(node_index)
        # Host part of each pod address (2..254) → 1 while a pod holds it; a bitmap, not a set:
        # 300 bytes per node instead of ~40 per pod.
        self._ips_in_use = bytearray(256)
        self._fire_callback = self._fire  # see _arm
        # Pods whose start, readiness, stop or status write is still to come (a SETTLING action
        # armed, or a status sync running): the world is not at rest while any is
        # (`NodeSimulator.settling`, the dashboard's "idle").
        self.settling = 0
        self._next_ip = 2

    # -- feed from the shared pods watch ------------------------------------------------------
    def on_pod_event(self, kind: str, pod: Obj, key: str | None = None) -> None:
        """A pod bound to this node was ADDED, MODIFIED or DELETED (ignored while stopped);
        `key` is its `pod_key` when the caller has it already."""
        if not self.running:
            return
        if key is None:
            key = pod_key(pod)
        rec = self.pods.get(key)
        if kind == "DELETED":
            if rec is not None and rec.uid == pod["metadata"].get("uid", ""):
                self._forget(rec)
            return
        if rec is not None and rec.uid != pod["metadata"].get("uid", ""):
            self._forget(rec)  # same name, new pod: the old one is gone
            rec = None
        if rec is None:
            self._admit(key, pod)
            return
        rec.observe(pod)
        if rec.pod["metadata"].get("deletionTimestamp") and not rec.deleting:
            self._begin_termination(rec)

    # -- kubelet process up / down ----------------------------------------------------------
    def stop(self) -> None:
        """The kubelet dies: no more events, writes or timers (containers keep running)."""
        if not self.running:
            return
        self.running = False
        for rec in self.pods.values():
            if rec.timer is not None:
                rec.timer.cancel()
                rec.timer = None  # `action`/`due` stay: start() re-arms them

    def start(self, pods: Iterable[Obj]) -> None:
        """The kubelet comes back and re-lists its pods (`pods`: every pod bound to the node)."""
        if self.running:
            return
        self.running = True
        self._post_node_ready()
        seen: set[str] = set()
        for pod in pods:
            key = pod_key(pod)
            seen.add(key)
            rec = self.pods.get(key)
            if rec is not None and rec.uid != pod["metadata"].get("uid", ""):
                self._forget(rec)
                rec = None
            if rec is None:
                self._admit(key, pod)
                continue
            rec.observe(pod)
            if rec.pod["metadata"].get("deletionTimestamp") and not rec.deleting:
                self._begin_termination(rec)
            elif rec.action is not None:
                self._arm(rec, rec.action, rec.due - self.kernel.now)
            else:
                self._sync(rec)  # re-post what others changed while we were away
        for key in [k for k in self.pods if k not in seen]:
            self._forget(self.pods[key])

    # -- faults (each one real status write) --------------------------------------------------
    def crash(self, pod: Obj) -> bool:
        """The container exits 1; restart after the crash-loop back-off (restartPolicy Never: Failed)."""
        rec = self._faultable(pod)
        if rec is None or rec.state != RUNNING:
            return False
        if rec.pod["spec"].get("restartPolicy", "Always") == "Never":
            return self._terminate(rec, "Failed", 1, "Error")
        now = self.kernel.now
        backoff_cfg = self.config["crashLoopBackOff"]
        initial, cap = float(backoff_cfg["initial"]), float(backoff_cfg["max"])
        # flowcontrol.Backoff: the entry expires 2 * max after its last update, i.e. after the
        # container has run that long; otherwise the delay doubles up to max.
        if rec.backoff is None or now - rec.started_at > 2 * cap:
            rec.backoff = initial
        else:
            rec.backoff = min(rec.backoff * 2, cap)
        rec.last_state = {
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": timestamp(rec.started_at),
                "finishedAt": timestamp(now),
                "containerID": rec.container_id,
            }
        }
        rec.restart_count += 1
        rec.state = BACKOFF
        rec.ready = False
        meta = rec.pod["metadata"]
        for container in rec.pod["spec"].get("containers") or []:
            self._container_event(
                rec,
                container,
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {container['name']} in pod "
                f"{meta['name']}_{meta.get('namespace', '')}({rec.uid})",
            )
        self._arm(rec, Kubelet._restart_container, rec.backoff)
        self._sync(rec)
        return True

    def fail(self, pod: Obj) -> bool:
        """Every container exits 1 and is not restarted: phase Failed."""
        rec = self._faultable(pod)
        return rec is not None and self._terminate(rec, "Failed", 1, "Error")

    def succeed(self, pod: Obj) -> bool:
        """Every container exits 0 and is not restarted: phase Succeeded."""
        rec = self._faultable(pod)
        return rec is not None and self._terminate(rec, "Succeeded", 0, "Completed")

    def evict(self, pod: Obj) -> bool:
        """Kubelet eviction under memory pressure: phase Failed, reason Evicted (eviction manager)."""
        rec = self._faultable(pod)
        if rec is None:
            return False
        rec.reason = "Evicted"
        rec.message = EVICTION_MESSAGE
        self.recorder.event(rec.pod, "Warning", "Evicted", EVICTION_MESSAGE)
        if rec.state == RUNNING:
            self._killing_events(rec)
        return self._terminate(rec, "Failed", 137, "Error")

    def set_ready(self, pod: Obj, ready: bool) -> bool:
        """The readiness probe starts passing (True) or failing (False)."""
        rec = self._faultable(pod)
        if rec is None or rec.state != RUNNING:
            return False
        if rec.action is Kubelet._become_ready:
            self._disarm(rec)  # the probe result overrides the pending initial readiness
        if ready and rec.fault is not None:
            rec.fault = None  # the probe passes: a NeverReady fault is over for this pod
        if rec.ready != ready:
            rec.ready = ready
            self._sync(rec)
        return True

    # -- lifecycle ----------------------------------------------------------------------------
    def _admit(self, key: str, pod: Obj) -> None:
        rec = _PodRecord(key, pod, self.kernel.now)
        self.pods[key] = rec
        status = pod.get("status") or {}
        phase = status.get("phase")
        if phase in ("Succeeded", "Failed"):
            rec.state = TERMINATED
            rec.phase = phase
            if pod["metadata"].get("deletionTimestamp"):
                self._begin_termination(rec)
            return
        if phase == "Running":
            # Re-listed after a restart of ours: the containers are still running.
            rec.state = RUNNING
            rec.ready = True
            self._restore_from_status(rec, status)
        if pod["metadata"].get("deletionTimestamp"):
            self._begin_termination(rec)
        elif rec.state == STARTING:
            self._arm(rec, Kubelet._start_containers, float(self.config["podStartup"]))
            self._pull_images(rec)
            self._sync(rec)  # Pending, containers waiting: ContainerCreating

    def _restore_from_status(self, rec: _PodRecord, status: Obj) -> None:
        statuses = status.get("containerStatuses") or []
        if statuses:
            first = statuses[0]
            rec.restart_count = int(first.get("restartCount", 0))
            rec.container_id = first.get("containerID", "")
            rec.ready = bool(first.get("ready", True))
            started_at = ((first.get("state") or {}).get("running") or {}).get("startedAt")
            if started_at:
                rec.started_at = parse_rfc3339(started_at)

    # -- container runtime events -------------------------------------------------------------
    def _must_pull(self, container: Obj) -> bool:
        policy = container.get("imagePullPolicy") or "IfNotPresent"
        return policy == "Always" or (policy == "IfNotPresent" and container.get("image", "") not in self.images)

    def _pull_images(self, rec: _PodRecord) -> None:
        """EnsureImageExists, first half: a `Pulling` Event for each image to pull; `rec.pulling`
        remembers which containers' images are being pulled."""
        pulling = []
        for container in rec.pod["spec"].get("containers") or []:
            if self._must_pull(container):
                pulling.append(container["name"])
                image = container.get("image", "")
                self._container_event(rec, container, "Normal", "Pulling", f'Pulling image "{image}"')
        rec.pulling = _shared_names(tuple(pulling))

    def _container_event(self, rec: _PodRecord, container: Obj, event_type: str, reason: str, message: str) -> None:
        self.recorder.event(rec.pod, event_type, reason, message, field_path=f"spec.containers{{{container['name']}}}")

    def _containers_started_events(self, rec: _PodRecord) -> None:
        """Pulled, Created, Started for each container. A first start ends the pulls begun at
        admission; a restart pulls again (policy Always) in no time."""
        restart = rec.pulling is None
        began = rec.admitted_at
        if rec.fault is not None and rec.fault.pull_started is not None:
            began = rec.fault.pull_started  # the retry of a failed pull
        duration = _go_ms_duration(0.0 if restart else self.kernel.now - began)
        for container in rec.pod["spec"].get("containers") or []:
            image = container.get("image", "")
            if restart:
                pulled = self._must_pull(container)
                if pulled:
                    self._container_event(rec, container, "Normal", "Pulling", f'Pulling image "{image}"')
            else:
                pulled = container["name"] in (rec.pulling or ())
            if pulled:
                message = (
                    f'Successfully pulled image "{image}" in {duration} ({duration} including waiting). '
                    f"Image size: {image_size(image)} bytes."
                )
            else:
                message = f'Container image "{image}" already present on machine'
            self._container_event(rec, container, "Normal", "Pulled", message)
            self.images.add(image)
            self._container_event(rec, container, "Normal", "Created", f"Created container: {container['name']}")
            self._container_event(rec, container, "Normal", "Started", f"Started container {container['name']}")
        rec.pulling = None

    def _killing_events(self, rec: _PodRecord) -> None:
        for container in rec.pod["spec"].get("containers") or []:
            self._container_event(rec, container, "Normal", "Killing", f"Stopping container {container['name']}")

    def _start_containers(self, rec: _PodRecord) -> None:
        now = self.kernel.now
        faults = self.config.get("imageFaults")
        if faults and rec.pulling is not None and self._pull_failed(rec, faults):
            return
        self._containers_started_events(rec)
        rec.state = RUNNING
        rec.started_at = now
        rec.container_id = self._container_id(rec)
        if rec.pod_ip is None:
            rec.pod_ip = self._allocate_ip()
        rec.fault = None
        if faults and any(
            image_fault(faults, c.get("image", "")) == NEVER_READY for c in rec.pod["spec"].get("containers") or []
        ):
            rec.fault = _ImageFault(NEVER_READY)
        delay = float(self.config["podReadyDelay"])
        if delay > 0:
            rec.ready = False
            self._arm(rec, Kubelet._become_ready, delay)
        elif rec.fault is not None:
            rec.ready = False
            self._readiness_failed(rec)
        else:
            rec.ready = True
        self._sync(rec)

    def _become_ready(self, rec: _PodRecord) -> None:
        if rec.fault is not None and rec.fault.kind == NEVER_READY:
            self._readiness_failed(rec)
            return
        rec.ready = True
        self._sync(rec)

    def _readiness_failed(self, rec: _PodRecord) -> None:
        """The readiness probe fails (prober.go: Warning `Unhealthy` "Readiness probe failed: ...")."""
        for container in rec.pod["spec"].get("containers") or []:
            self._container_event(
                rec, container, "Warning", "Unhealthy", f"Readiness probe failed: {READINESS_FAILURE}"
            )

    # -- image faults ---------------------------------------------------------------------------
    def _pull_failed(self, rec: _PodRecord, faults: Obj) -> bool:
        """The pulls begun for `rec` end now: when one of them fails (an ErrImagePull image the
        pod must pull), record the failure, start the pull back-off and return True."""
        failing = [
            c
            for c in rec.pod["spec"].get("containers") or []
            if c["name"] in (rec.pulling or ()) and image_fault(faults, c.get("image", "")) == ERR_IMAGE_PULL
        ]
        if not failing:
            return False
        now = self.kernel.now
        fault = rec.fault if rec.fault is not None and rec.fault.kind == ERR_IMAGE_PULL else _ImageFault(ERR_IMAGE_PULL)
        # flowcontrol.Backoff.Next: initial, or doubled up to max; the entry expires 2 x max after
        # its last update.
        if fault.backoff is None or now - fault.failed_at > 2 * IMAGE_BACKOFF_MAX:
            fault.backoff = IMAGE_BACKOFF_INITIAL
        else:
            fault.backoff = min(fault.backoff * 2, IMAGE_BACKOFF_MAX)
        fault.failed_at = now
        fault.containers = _shared_names(tuple(c["name"] for c in failing))
        fault.image = failing[0].get("image", "")
        fault.error = pull_error(fault.image)
        fault.reason = ERR_IMAGE_PULL
        fault.pull_started = None
        rec.fault = fault
        rec.state = IMAGE_PULL
        rec.ready = False
        for container in failing:
            image = container.get("image", "")
            self._container_event(
                rec, container, "Warning", "Failed", f'Failed to pull image "{image}": {pull_error(image)}'
            )
            self._container_event(rec, container, "Warning", "Failed", f"Error: {ERR_IMAGE_PULL}")
        self._arm(rec, Kubelet._image_pull_backoff, min(PLEG_RELIST_PERIOD, fault.backoff))
        self._sync(rec)
        return True

    def _image_pull_backoff(self, rec: _PodRecord) -> None:
        """The next pod sync finds the pull backing off: ImagePullBackOff until it ends."""
        fault = rec.fault
        if fault is None or rec.state != IMAGE_PULL:
            return
        fault.reason = "ImagePullBackOff"
        for container in rec.pod["spec"].get("containers") or []:
            if container["name"] in fault.containers:
                image = container.get("image", "")
                self._container_event(rec, container, "Normal", "BackOff", f'Back-off pulling image "{image}"')
                self._container_event(rec, container, "Warning", "Failed", "Error: ImagePullBackOff")
        self._arm(rec, Kubelet._retry_pull, fault.failed_at + (fault.backoff or 0.0) - self.kernel.now)
        self._sync(rec)

    def _retry_pull(self, rec: _PodRecord) -> None:
        """The back-off is over: pull the images again (the faults are read when it ends)."""
        fault = rec.fault
        if fault is None or rec.state != IMAGE_PULL:
            return
        fault.pull_started = self.kernel.now
        self._pull_images(rec)
        self._arm(rec, Kubelet._start_containers, float(self.config["podStartup"]))

    def image_faults_changed(self) -> None:
        """`config.imageFaults` changed: pods held unready by a NeverReady fault that no longer
        matches become Ready (their probe passes). Failed pulls retry when their back-off ends."""
        if not self.running:
            return
        faults = self.config.get("imageFaults") or {}
        for rec in self.pods.values():
            fault = rec.fault
            if fault is None or fault.kind != NEVER_READY or rec.state != RUNNING or rec.deleting:
                continue
            containers = rec.pod["spec"].get("containers") or []
            if any(image_fault(faults, c.get("image", "")) == NEVER_READY for c in containers):
                continue
            rec.fault = None
            if rec.action is Kubelet._become_ready:
                continue  # the pending initial readiness now passes
            if not rec.ready:
                rec.ready = True
                self._sync(rec)

    def _restart_container(self, rec: _PodRecord) -> None:
        self._start_containers(rec)

    def _terminate(self, rec: _PodRecord, phase: str, exit_code: int, reason: str) -> bool:
        self._disarm(rec)
        rec.state = TERMINATED
        rec.phase = phase
        rec.exit_code = exit_code
        rec.term_reason = reason
        rec.finished_at = self.kernel.now
        rec.ready = False
        self._release_ip(rec)
        self._sync(rec)
        return True

    def _begin_termination(self, rec: _PodRecord) -> None:
        rec.deleting = True
        self._disarm(rec)
        if rec.state == TERMINATED:
            self._sync(rec)  # nothing left to stop: straight to the deletion
            return
        grace = _grace_period(rec.pod)
        delay = min(float(self.config["podShutdown"]), grace) if rec.state == RUNNING else 0.0
        was = rec.state
        rec.state = STOPPING
        rec.ready = False
        if was == RUNNING:
            self._killing_events(rec)
            # SIGTERM handled within the grace period → exit 0; otherwise SIGKILL at its end.
            in_time = float(self.config["podShutdown"]) <= grace
            rec.exit_code, rec.term_reason = (0, "Completed") if in_time else (137, "Error")
        elif was == BACKOFF:
            rec.exit_code, rec.term_reason = 1, "Error"
        else:
            rec.exit_code, rec.term_reason = 137, "ContainerStatusUnknown"
        self._arm(rec, Kubelet._containers_stopped, delay)

    def _containers_stopped(self, rec: _PodRecord) -> None:
        never_ran = not rec.container_id
        rec.state = TERMINATED
        rec.finished_at = self.kernel.now
        rec.phase = "Succeeded" if rec.exit_code == 0 else "Failed"
        self._release_ip(rec)
        if never_ran:
            rec.phase = None  # nothing ran: no status to report, only the deletion
        self._sync(rec)

    def _forget(self, rec: _PodRecord) -> None:
        rec.removed = True
        self._disarm(rec)
        self._release_ip(rec)
        if self.pods.get(rec.key) is rec:
            del self.pods[rec.key]

    # -- timers ---------------------------------------------------------------------------------
    def _arm(self, rec: _PodRecord, action: Action, delay: float) -> None:
        # `action` is a plain function of the class, called with this kubelet, and `_fire_callback`
        # is bound once: a bound method per armed pod would live until its timer fires.
        if rec.timer is not None:
            rec.timer.cancel()
        self.settling += (action in SETTLING) - (rec.action in SETTLING)
        rec.action = action
        rec.due = vtime(self.kernel.now + max(delay, 0.0))
        # call_later, not call_at(rec.due): the same instant, and the kernel keeps the timers of
        # one delay (the start-up delay of every pod) in a FIFO lane instead of its heap.
        rec.timer = self.kernel.call_later(max(delay, 0.0), self._fire_callback, rec)

    def _disarm(self, rec: _PodRecord) -> None:
        if rec.timer is not None:
            rec.timer.cancel()
        self.settling -= rec.action in SETTLING
        rec.timer = None
        rec.action = None

    def _fire(self, rec: _PodRecord) -> None:
        action = rec.action
        self.settling -= action in SETTLING
        rec.timer = None
        rec.action = None
        if action is not None and self.running and not rec.removed:
            action(self, rec)

    # -- status sync ----------------------------------------------------------------------------
    def _sync(self, rec: _PodRecord) -> None:
        """Bring the API status (and, once terminated, the deletion) in line with the runtime."""
        if rec.syncing:
            rec.dirty = True
            return
        rec.syncing = True
        self.settling += 1  # until its status (or deletion) is written
        self.kernel.spawn(self._sync_pod(rec), f"kubelet/{self.node_name}/{rec.key}")

    async def _sync_pod(self, rec: _PodRecord) -> None:
        try:
            while True:
                rec.dirty = False
                if not self.running or rec.removed:
                    return
                if not await self._write_status(rec) or not self.running:
                    return
                if rec.deleting and rec.state == TERMINATED and not rec.dirty:
                    await self._delete(rec)
                    return
                if not rec.dirty:
                    return
        finally:
            rec.syncing = False
            self.settling -= 1

    async def _write_status(self, rec: _PodRecord) -> bool:
        """Write the generated status if it differs; False when the pod is gone."""
        while True:
            pod = rec.pod
            if rec.phase is None and rec.state == TERMINATED:
                return True  # a pod whose containers never ran: nothing to report
            status = self.generate_status(rec, pod)
            if status == pod.get("status"):
                return True
            meta = pod["metadata"]
            try:
                written = await self.client.update(
                    "pods",
                    meta.get("namespace"),
                    meta["name"],
                    {**pod, "status": status},
                    subresource="status",
                )
            except ApiError as err:
                if err.code == 404:
                    self._forget(rec)
                    return False
                if err.code != 409:
                    return self._retry_later(rec)
                try:
                    fresh = await self.client.get("pods", meta.get("namespace"), meta["name"])
                except ApiError as get_err:
                    if get_err.code == 404:
                        self._forget(rec)
                        return False
                    return self._retry_later(rec)
                if fresh["metadata"].get("uid") != rec.uid:
                    self._forget(rec)
                    return False
                rec.observe(fresh)
                if not self.running or rec.removed:
                    return False
                continue
            rec.observe(written)
            return True

    def _retry_later(self, rec: _PodRecord) -> bool:
        # The status manager retries failed syncs on its 10 s batch sync (syncPeriod).
        if rec.action is None:
            self._arm(rec, Kubelet._sync, 10.0)
        return False

    async def _delete(self, rec: _PodRecord) -> None:
        meta = rec.pod["metadata"]
        try:
            await self.client.delete(
                "pods",
                meta.get("namespace"),
                meta["name"],
                grace_period_seconds=0,
                preconditions={"uid": rec.uid},
            )
        except ApiError as err:
            if err.code not in (404, 409):
                self._retry_later(rec)

    # -- status generation ----------------------------------------------------------------------
    def generate_status(self, rec: _PodRecord, pod: Obj) -> Obj:
        """The pod status the kubelet would report now (generateAPIPodStatus, simplified)."""
        now_s = timestamp(self.kernel.now)
        old: Obj = pod.get("status") or {}
        generation = pod["metadata"].get("generation")
        containers = pod["spec"].get("containers") or []
        # Sized exactly (a list comprehension over-allocates): every stored pod keeps this list.
        statuses = list(tuple(self._container_status(rec, c) for c in containers))
        creating = rec.state == STARTING
        pending = creating or rec.state == IMAGE_PULL
        phase = rec.phase if rec.state == TERMINATED else "Pending" if pending else "Running"
        all_ready = rec.ready and rec.state == RUNNING

        if phase in ("Succeeded", "Failed"):
            reason = "PodCompleted" if phase == "Succeeded" else "PodFailed"
            ready_cond: Obj = {"status": "False", "reason": reason}
            init_cond: Obj = {"status": "True", "reason": "PodCompleted"} if phase == "Succeeded" else _TRUE
            sandbox_cond = _FALSE
        elif all_ready:
            ready_cond = init_cond = sandbox_cond = _TRUE
        else:
            names = [c["name"] for c in containers]
            ready_cond = {
                "status": "False",
                "reason": "ContainersNotReady",
                "message": f"containers with unready status: [{' '.join(names)}]",
            }
            init_cond = _TRUE
            sandbox_cond = _FALSE if creating else _TRUE

        old_conditions: list[Obj] = old.get("conditions") or []
        by_type = {c.get("type"): c for c in old_conditions}
        conditions = [c for c in old_conditions if c.get("type") not in KUBELET_CONDITIONS]
        if rec.reason == "Evicted" and "DisruptionTarget" not in by_type:
            # PodDisruptionConditions (GA 1.31): the eviction manager marks the pod it evicts.
            conditions.append(
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": now_s,
                    "reason": "TerminationByKubelet",
                    "message": rec.message,
                }
            )
        for ctype, fields in (
            ("PodReadyToStartContainers", sandbox_cond),
            ("Initialized", init_cond),
            ("Ready", ready_cond),
            ("ContainersReady", ready_cond),
        ):
            conditions.append(_shared_condition(ctype, fields, by_type.get(ctype), generation, now_s))
        scheduled = by_type.get("PodScheduled")
        if scheduled is None or scheduled.get("status") != "True":
            scheduled = _shared_condition("PodScheduled", _TRUE, scheduled, generation, now_s)
        conditions.append(scheduled)
        conditions = shared_list(conditions)

        status: Obj = {}
        if generation is not None:
            status["observedGeneration"] = generation
        status["phase"] = phase
        status["conditions"] = conditions
        if rec.reason:
            status["message"] = rec.message
            status["reason"] = rec.reason
        status["hostIP"] = self.host_ip
        status["hostIPs"] = self.host_ips
        pod_ip = old.get("podIP")
        if rec.pod_ip is not None:
            pod_ip = self._format_ip(rec.pod_ip)
        if pod_ip:
            status["podIP"] = pod_ip
            status["podIPs"] = [{"ip": pod_ip}]
        status["startTime"] = old.get("startTime") or timestamp(rec.admitted_at)
        status["containerStatuses"] = statuses
        for key, value in old.items():
            if key not in status and key not in ("message", "reason", "podIP", "podIPs"):
                status[key] = value  # qosClass and anything else the server or others own
        return status

    def _container_status(self, rec: _PodRecord, container: Obj) -> Obj:
        if rec.state == STARTING:
            return _creating_status(container["name"], container.get("image", ""))
        if rec.state == IMAGE_PULL:
            return self._image_pull_status(rec, container)
        image, image_id = image_refs(container.get("image", ""))
        state: Obj
        last: Obj = _EMPTY
        ready = False
        started = False
        if rec.state == RUNNING or (rec.state == STOPPING and rec.container_id):
            state = _running_state(timestamp(rec.started_at))
            ready = rec.ready and rec.state == RUNNING
            started = True
            if rec.last_state is not None:
                last = rec.last_state
        elif rec.state == BACKOFF:
            state = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": (
                        f"back-off {_go_duration(rec.backoff or 0.0)} restarting failed container="
                        f"{container['name']} pod={rec.pod['metadata']['name']}_"
                        f"{rec.pod['metadata'].get('namespace', '')}({rec.uid})"
                    ),
                }
            }
            last = rec.last_state or {}
        else:
            state = {
                "terminated": {
                    "exitCode": rec.exit_code,
                    "reason": rec.term_reason,
                    "startedAt": timestamp(rec.started_at),
                    "finishedAt": timestamp(rec.finished_at),
                    "containerID": rec.container_id,
                }
            }
            if rec.last_state is not None:
                last = rec.last_state
        return {
            "name": container["name"],
            "state": state,
            "lastState": last,
            "ready": ready,
            "restartCount": rec.restart_count,
            "image": image,
            "imageID": image_id,
            "containerID": rec.container_id,
            "started": started,
        }

    def _image_pull_status(self, rec: _PodRecord, container: Obj) -> Obj:
        """A container that waits for its image: ErrImagePull / ImagePullBackOff with the pull's
        message, or ContainerCreating for the others of the pod."""
        fault = rec.fault
        name, image = container["name"], container.get("image", "")
        if fault is None or name not in fault.containers:
            return _creating_status(name, image)
        if fault.reason == ERR_IMAGE_PULL:
            message = pull_error(image)
        else:
            message = f'Back-off pulling image "{image}": {ERR_IMAGE_PULL}: {pull_error(image)}'
        return {
            "name": name,
            "state": {"waiting": {"reason": fault.reason, "message": message}},
            "lastState": _EMPTY,
            "ready": False,
            "restartCount": 0,
            "image": image,
            "imageID": "",
            "started": False,
        }

    def _container_id(self, rec: _PodRecord) -> str:
        seed = f"{rec.uid}/{rec.restart_count}".encode()
        return "containerd://" + hashlib.sha256(seed).hexdigest()

    # -- node status ----------------------------------------------------------------------------
    def _post_node_ready(self) -> None:
        node = self.get_node()
        if node is None:
            return
        ready = _node_condition(node, "Ready")
        if ready is not None and ready.get("status") == "True":
            return
        self.kernel.spawn(self._write_node_ready(), f"kubelet/{self.node_name}/node-status")

    async def _write_node_ready(self) -> None:
        node = self.get_node()
        while node is not None and self.running:
            now_s = timestamp(self.kernel.now)
            status = {**node.get("status", {}), "conditions": ready_node_conditions(now_s, node)}
            try:
                await self.client.update(
                    "nodes", None, self.node_name, {**node, "status": status}, subresource="status"
                )
                return
            except ApiError as err:
                if err.code != 409:
                    return
            try:
                node = await self.client.get("nodes", None, self.node_name)
            except ApiError:
                return

    # -- pod IPs (host-local IPAM: next free address after the last one handed out) -----------
    def _allocate_ip(self) -> int:
        for _ in range(253):
            ip = self._next_ip
            self._next_ip = ip + 1 if ip < 254 else 2
            if not self._ips_in_use[ip]:
                self._ips_in_use[ip] = 1
                return ip
        return 254  # /24 exhausted (more than 253 pods on one node): share the last address

    def _release_ip(self, rec: _PodRecord) -> None:
        if rec.pod_ip is not None:
            self._ips_in_use[rec.pod_ip] = 0

    def _format_ip(self, host: int) -> str:
        return _ip(self._pod_net + host)

    def _faultable(self, pod: Obj) -> _PodRecord | None:
        if not self.running:
            return None
        rec = self.pods.get(pod_key(pod))
        if rec is None or rec.removed or rec.deleting:
            return None
        uid = pod["metadata"].get("uid")
        if uid and uid != rec.uid:
            return None
        if rec.state not in (RUNNING, BACKOFF):
            return None
        return rec


# -- helpers shared with nodes.py ---------------------------------------------------------------
# The kubelet steps that bring a pod to rest: containers start, readiness, containers stop, a
# status write retried. A crash-loop restart is not one (a pod in CrashLoopBackOff is as settled
# as it will get).
SETTLING: frozenset[Action] = frozenset(
    {Kubelet._start_containers, Kubelet._become_ready, Kubelet._containers_stopped, Kubelet._sync}
)


def image_fault(faults: Obj, image: str) -> str | None:
    """The fault `config.imageFaults` sets for `image`: the value of the first pattern (fnmatch,
    case-sensitive) that matches the spec's image reference, or None."""
    for pattern, fault in faults.items():
        if fnmatchcase(image, pattern):
            return str(fault)
    return None


@lru_cache(maxsize=1024)
def pull_error(image: str) -> str:
    """What containerd answers for an image that is not in its registry (the CRI error text)."""
    ref, _ = image_refs(image)
    return (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
        f'failed to resolve reference "{ref}": {ref}: not found'
    )


def node_host_ip(index: int) -> str:
    """InternalIP of node `index` (1-based): 10.0.0.N for the first 255 nodes."""
    return _ip((10 << 24) + index)


def pod_cidr_base(index: int) -> int:
    """Network address (as an int) of node `index`'s /24 pod CIDR inside 10.244.0.0/14."""
    return (10 << 24) + (244 << 16) + (index << 8)


def pod_cidr(index: int) -> str:
    return f"{_ip(pod_cidr_base(index))}/24"


def ready_node_conditions(now_s: str, node: Obj | None = None) -> list[Obj]:
    """The conditions a healthy kubelet posts (setNodeStatus condition setters)."""
    old = {c.get("type"): c for c in ((node or {}).get("status", {}).get("conditions") or [])}
    wanted = (
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    )
    conditions = []
    for ctype, status, reason, message in wanted:
        prev = old.get(ctype)
        since = prev["lastTransitionTime"] if prev and prev.get("status") == status else now_s
        conditions.append(
            {
                "type": ctype,
                "status": status,
                "lastHeartbeatTime": now_s,
                "lastTransitionTime": since,
                "reason": reason,
                "message": message,
            }
        )
    return conditions


def _node_condition(node: Obj, ctype: str) -> Obj | None:
    conditions: list[Obj] = node.get("status", {}).get("conditions") or []
    for cond in conditions:
        if cond.get("type") == ctype:
            return cond
    return None


def _ip(value: int) -> str:
    return f"{(value >> 24) & 255}.{(value >> 16) & 255}.{(value >> 8) & 255}.{value & 255}"


def _grace_period(pod: Obj) -> float:
    meta = pod["metadata"]
    grace = meta.get("deletionGracePeriodSeconds")
    if grace is None:
        grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    return float(grace)


_EMPTY: Obj = {}
_SHARED: dict[tuple[Any, ...], Obj] = {}
_SHARED_LIMIT = 50_000


def shared(obj: Obj) -> Obj:
    """One dict for every equal flat status fragment (a condition, a container state).

    Objects are immutable by convention (nobody mutates what it did not create), so thousands of
    pods that became Ready in the same second can share their identical condition dicts: it is
    what keeps 100k pods within a few KB each. Only flat dicts of hashable values are shared.
    """
    try:
        key = tuple(obj.items())
        hit = _SHARED.get(key)
    except TypeError:
        return obj
    return hit if hit is not None else keep(_SHARED, key, obj, _SHARED_LIMIT)


@lru_cache(maxsize=4096)
def _running_state(started_at: str) -> Obj:
    """`{"running": {"startedAt": ...}}`, one dict per second shared by every container started
    in it (objects are immutable by convention; see `shared`)."""
    return {"running": {"startedAt": started_at}}


_CONTAINER_CREATING: Obj = {"waiting": {"reason": "ContainerCreating"}}


@lru_cache(maxsize=1024)
def _creating_status(name: str, image: str) -> Obj:
    """The status of a container that never ran: the spec's image, no imageID or containerID
    yet (toContainerStatus of a container the runtime does not know). One dict per name and
    image, shared by every pod starting it (immutable by convention; see `shared`)."""
    return {
        "name": name,
        "state": _CONTAINER_CREATING,
        "lastState": _EMPTY,
        "ready": False,
        "restartCount": 0,
        "image": image,
        "imageID": "",
        "started": False,
    }


_TRUE: Obj = {"status": "True"}
_FALSE: Obj = {"status": "False"}
_CONDITIONS: dict[tuple[Any, ...], Obj] = {}
_SHARED_LISTS: dict[tuple[int, ...], list[Obj]] = {}


def _shared_condition(ctype: str, fields: Obj, old: Obj | None, generation: Any, now_s: str) -> Obj:
    """`shared(_condition(...))`, looked up by what decides the condition before building it."""
    since = now_s
    if old is not None and old.get("status") == fields["status"] and old.get("lastTransitionTime"):
        since = old["lastTransitionTime"]
    key = (ctype, generation, fields["status"], since, fields.get("reason"), fields.get("message"))
    cond = _CONDITIONS.get(key)
    if cond is None:
        cond = keep(_CONDITIONS, key, shared(_condition(ctype, fields, old, generation, now_s)), _SHARED_LIMIT)
    return cond


def shared_list(items: list[Obj]) -> list[Obj]:
    """One list for every list of the same objects (by identity, in order): pods whose
    conditions are all shared fragments share the list too. The stored list holds its items, so
    their ids cannot be reused while it is in the table."""
    return intern(_SHARED_LISTS, tuple(map(id, items)), items, _SHARED_LIMIT)


def _condition(ctype: str, fields: Obj, old: Obj | None, generation: Any, now_s: str) -> Obj:
    """A pod condition in API field order; lastTransitionTime moves only when status changes."""
    cond: Obj = {"type": ctype}
    if generation is not None:
        cond["observedGeneration"] = generation
    cond["status"] = fields["status"]
    cond["lastProbeTime"] = None
    if old is not None and old.get("status") == fields["status"] and old.get("lastTransitionTime"):
        cond["lastTransitionTime"] = old["lastTransitionTime"]
    else:
        cond["lastTransitionTime"] = now_s
    if "reason" in fields:
        cond["reason"] = fields["reason"]
    if "message" in fields:
        cond["message"] = fields["message"]
    return cond


def _go_duration(seconds: float) -> str:
    """Go's time.Duration.String() for whole seconds (10s, 1m20s, 5m0s)."""
    total = int(seconds)
    minutes, secs = divmod(total, 60)
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {}


def _shared_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple for every equal tuple of container names (every pod of a template has one)."""
    return intern(_NAMES, names, names, 4096)


@lru_cache(maxsize=1024)
def image_size(image: str) -> int:
    """The size in bytes an image pull reports: 10-100 MB, fixed per image reference."""
    digest = hashlib.sha256(image.encode()).digest()
    return 10_000_000 + int.from_bytes(digest[:4], "big") % 90_000_000


def _go_ms_duration(seconds: float) -> str:
    """Go's time.Duration.String() of a duration truncated to milliseconds ("2s", "1.5s",
    "250ms", "1m5.25s", "0s") — the pull durations of the Pulled Event."""
    ms = int(max(seconds, 0.0) * 1000 + 1e-6)
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    text = f"{secs}.{millis:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    if minutes:
        return f"{minutes}m{text}"
    return text

"""`meta.k8s.io/v1` Tables: what `kubectl get` prints, computed as the real API server's printers
(kubernetes `pkg/printers/internalversion/printers.go`) compute it, ages from the virtual clock.

Guarantees
----------
* Columns, their order, `format: name` on Name and `priority: 1` on the `-o wide` columns are
  upstream's for pods, replicasets, replicationcontrollers, deployments, nodes, events and
  namespaces.
* Cells are final strings or integers: kubectl prints them verbatim. Ages are
  `duration.HumanDuration(now - timestamp)` with `now` the simulation's virtual time.
* `include_object` is `Metadata` (a `PartialObjectMetadata`, the default), `Object` (the whole
  object) or `None` (no object), as the `includeObject` query parameter asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from controlplane.simulation import CONTROLLER_REGISTRY, parse_rfc3339, selector_from_label_selector

Obj = dict[str, Any]
Printer = Callable[[Obj, float], list[Any]]


def human_duration(seconds: float) -> str:
    """apimachinery `duration.HumanDuration`."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def since(timestamp: Any, now: float) -> str:
    """`translateTimestampSince`: `<unknown>` for a missing timestamp."""
    if not timestamp or not isinstance(timestamp, str):
        return "<unknown>"
    try:
        then = parse_rfc3339(timestamp)
    except ValueError:
        return "<unknown>"
    return human_duration(now - then)


def _col(name: str, type_: str = "string", *, priority: int = 0, fmt: str = "", description: str = "") -> Obj:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


NAME = _col("Name", fmt="name", description="Name must be unique within a namespace.")
AGE = _col(
    "Age", description="CreationTimestamp is a timestamp representing the server time when this object was created."
)


# -- pods ------------------------------------------------------------------------------------------
POD_COLUMNS = [
    NAME,
    _col("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", description="The aggregate status of the containers in this pod."),
    _col(
        "Restarts",
        description="How often the containers in this pod have been restarted, and when last.",
    ),
    AGE,
    _col(
        "IP",
        priority=1,
        description="IP address allocated to the pod.",
    ),
    _col("Node", priority=1, description="NodeName is a request to schedule this pod onto a specific node."),
    _col(
        "Nominated Node",
        priority=1,
        description="nominatedNodeName is set only when this pod preempts other pods on the node.",
    ),
    _col(
        "Readiness Gates",
        priority=1,
        description="If specified, all readiness gates will be evaluated for pod readiness.",
    ),
]


def print_pod(pod: Obj, now: float) -> list[Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod["metadata"]
    restarts = 0
    total = len(spec.get("containers") or ())
    ready = 0
    last_restart = ""
    reason = status.get("reason") or status.get("phase") or ""
    has_running = False
    for container in reversed(status.get("containerStatuses") or ()):
        restarts += int(container.get("restartCount") or 0)
        terminated_before = ((container.get("lastState") or {}).get("terminated")) or {}
        finished = terminated_before.get("finishedAt")
        if finished and finished > last_restart:
            last_restart = finished
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting is not None and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated is not None and terminated.get("reason"):
            reason = terminated["reason"]
        elif terminated is not None:
            signal = terminated.get("signal")
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
        elif container.get("ready") and state.get("running") is not None:
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        ready_condition = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
        )
        reason = "Running" if ready_condition else "NotReady"
    if meta.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif status.get("phase") not in ("Succeeded", "Failed"):
            reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart:
        restarts_text = f"{restarts} ({since(last_restart, now)} ago)"
    ips = status.get("podIPs") or ()
    ip = (ips[0].get("ip") if ips else "") or "<none>"
    gates = spec.get("readinessGates") or ()
    gates_text = "<none>"
    if gates:
        true = {c.get("type") for c in status.get("conditions") or () if c.get("status") == "True"}
        gates_text = f"{sum(1 for g in gates if g.get('conditionType') in true)}/{len(gates)}"
    return [
        meta["name"],
        f"{ready}/{total}",
        reason,
        restarts_text,
        since(meta.get("creationTimestamp"), now),
        ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_text,
    ]


# -- replicasets and replicationcontrollers --------------------------------------------------------
def _controller_columns(kind: str) -> list[Obj]:
    return [
        NAME,
        _col("Desired", "integer", description=f"Replicas is the number of desired replicas of this {kind}."),
        _col("Current", "integer", description="Replicas is the most recently observed number of replicas."),
        _col("Ready", "integer", description="The number of ready replicas for this replica set."),
        AGE,
        _col("Containers", priority=1, description="Names of each container in the template."),
        _col("Images", priority=1, description="Images referenced by each container in the template."),
        _col(
            "Selector",
            priority=1,
            description="Selector is a label query over pods that should match the replica count.",
        ),
    ]


def _controller_cells(obj: Obj, now: float, selector: str) -> list[Any]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or ()
    return [
        obj["metadata"]["name"],
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        since(obj["metadata"].get("creationTimestamp"), now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        selector or "<none>",
    ]


def print_replicaset(rs: Obj, now: float) -> list[Any]:
    try:
        selector = str(selector_from_label_selector((rs.get("spec") or {}).get("selector")))
    except ValueError:
        selector = "<error>"
    return _controller_cells(rs, now, selector)


def print_replication_controller(rc: Obj, now: float) -> list[Any]:
    selector = (rc.get("spec") or {}).get("selector") or {}
    return _controller_cells(rc, now, ",".join(f"{k}={selector[k]}" for k in sorted(selector)))


# -- deployments (a controller whose children are ReplicaSets) -------------------------------------
ROLLOUT_COLUMNS = [
    NAME,
    _col("Ready", description="Number of the pod with ready state"),
    _col(
        "Up-to-date",
        description="Total number of non-terminated pods targeted by this deployment that have the desired template "
        "spec.",
    ),
    _col(
        "Available",
        description="Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    _col("Containers", priority=1, description="Names of each container in the template."),
    _col("Images", priority=1, description="Images referenced by each container in the template."),
    _col(
        "Selector",
        priority=1,
        description="Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones "
        "affected by this deployment. It must match the pod template's labels.",
    ),
]


def print_rollout(obj: Obj, now: float) -> list[Any]:
    """printDeployment: READY is ready/desired, UP-TO-DATE and AVAILABLE the status's counts."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or ()
    try:
        selector = str(selector_from_label_selector(spec.get("selector")))
    except ValueError:
        selector = "<invalid>"
    return [
        obj["metadata"]["name"],
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        since(obj["metadata"].get("creationTimestamp"), now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        selector,
    ]


# -- nodes -------------------------------------------------------------------------------------------
NODE_COLUMNS = [
    NAME,
    _col("Status", description="The status of the node"),
    _col("Roles", description="The roles of the node"),
    AGE,
    _col("Version", description="Kubelet Version reported by the node."),
    _col(
        "Internal-IP",
        priority=1,
        description="List of addresses reachable to the node. Queried from cloud provider, if available.",
    ),
    _col(
        "External-IP",
        priority=1,
        description="List of addresses reachable to the node. Queried from cloud provider, if available.",
    ),
    _col(
        "OS-Image",
        priority=1,
        description="OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    ),
    _col(
        "Kernel-Version",
        priority=1,
        description="Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    ),
    _col(
        "Container-Runtime",
        priority=1,
        description="ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    ),
]


def print_node(node: Obj, now: float) -> list[Any]:
    meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
    states = []
    ready = conditions.get("Ready")
    states.append("Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown")
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = sorted(
        key.split("/", 1)[1]
        for key in (meta.get("labels") or {})
        if key.startswith("node-role.kubernetes.io/") and key.split("/", 1)[1]
    )
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in reversed(status.get("addresses") or ())}
    return [
        meta["name"],
        ",".join(states),
        ",".join(roles) or "<none>",
        since(meta.get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP") or "<none>",
        addresses.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


# -- events -----------------------------------------------------------------------------------------
EVENT_COLUMNS = [
    _col("Last Seen", description="The last time this event was seen"),
    _col("Type", description="Type of this event (Normal, Warning), new types could be added in the future"),
    _col(
        "Reason",
        description="A short, machine understandable reason for the transition.",
    ),
    _col("Object", description="The object that this event is about."),
    _col("Subobject", priority=1, description="The subobject that this event is about."),
    _col("Source", priority=1, description="The component reporting this event."),
    _col("Message", description="A human-readable description of the status of this operation."),
    _col("First Seen", priority=1, description="The time at which the event was first recorded."),
    _col("Count", priority=1, description="The number of times this event has occurred."),
    _col("Name", priority=1, fmt="name", description="Name must be unique within a namespace."),
]


def print_event(event: Obj, now: float) -> list[Any]:
    first = (
        since(event.get("firstTimestamp"), now) if event.get("firstTimestamp") else since(event.get("eventTime"), now)
    )
    last = since(event.get("lastTimestamp"), now) if event.get("lastTimestamp") else first
    count = int(event.get("count") or 0)
    series = event.get("series") or {}
    if series:
        last = f"{since(series.get('lastObservedTime'), now)} (x{series.get('count')} over {first})"
    elif count > 1:
        last = f"{last} (x{count} over {first})"
    involved = event.get("involvedObject") or {}
    source = event.get("source") or {}
    source_text = source.get("component", "")
    if source.get("host"):
        source_text += ", " + source["host"]
    return [
        last,
        event.get("type", ""),
        event.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        source_text,
        str(event.get("message", "")).strip(),
        first,
        str(count),
        event["metadata"]["name"],
    ]


# -- namespaces ----------------------------------------------------------------------------------------
NAMESPACE_COLUMNS = [NAME, _col("Status", description="The status of the namespace"), AGE]


def print_namespace(ns: Obj, now: float) -> list[Any]:
    return [
        ns["metadata"]["name"],
        (ns.get("status") or {}).get("phase", ""),
        since(ns["metadata"].get("creationTimestamp"), now),
    ]


def _controller_printer(spec: Any) -> tuple[list[Obj], Printer]:
    """kubectl's printer of a controller's resource (a spec of the controller registry): a
    controller of pods prints its replica counts (an apps/v1 kind's selector is a LabelSelector,
    the core group's, the RC's, a map of labels); one whose children are ReplicaSets prints its
    rollout (printDeployment)."""
    if all(owned.resource != "pods" for owned in spec.owns):
        return ROLLOUT_COLUMNS, print_rollout
    return _controller_columns(spec.kind), print_replicaset if spec.group else print_replication_controller


PRINTERS: dict[str, tuple[list[Obj], Printer]] = {
    "pods": (POD_COLUMNS, print_pod),
    **{spec.resource: _controller_printer(spec) for spec in CONTROLLER_REGISTRY},
    "nodes": (NODE_COLUMNS, print_node),
    "events": (EVENT_COLUMNS, print_event),
    "namespaces": (NAMESPACE_COLUMNS, print_namespace),
}


def _row_object(obj: Obj, include_object: str) -> Obj | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def table(
    resource: str,
    objects: Iterable[Obj],
    now: float,
    resource_version: str,
    include_object: str = "Metadata",
    cont: str = "",
) -> Obj:
    """The Table of `objects` (rows in the given order)."""
    columns, printer = PRINTERS[resource]
    rows = []
    for obj in objects:
        row: Obj = {"cells": printer(obj, now)}
        inner = _row_object(obj, include_object)
        if inner is not None:
            row["object"] = inner
        rows.append(row)
    meta: Obj = {"resourceVersion": resource_version}
    if cont:
        meta["continue"] = cont
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": columns,
        "rows": rows,
    }

"""Status of a ReplicaSet (pkg/controller/replicaset/replica_set_utils.go, spec §11).

Guarantees
----------
* `calculate_status` counts only what the sync saw: `replicas` is the number of active claimed pods
  BEFORE this sync's creates and deletes (spec §6 note).
* The ReplicaFailure condition is set on the first failing sync and left untouched while failures
  continue; any sync without a manage error removes it, including syncs that skipped
  manageReplicas (spec §11.1).
* `update_replica_set_status` makes no API call when nothing changed, otherwise at most two
  UpdateStatus calls and one GET (statusUpdateRetries = 1, spec §11.2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.apiserver import ApiError
from controlplane.kernel import rfc3339
from controlplane.podutil import get_pod_ready_condition, is_ready_condition_available

Obj = dict[str, Any]
REPLICA_FAILURE = "ReplicaFailure"
STATUS_UPDATE_RETRIES = 1


def get_condition(status: Obj, cond_type: str) -> Obj | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == cond_type:
            return dict(cond)
    return None


def set_condition(status: Obj, condition: Obj) -> None:
    """No-op if a condition of that type with the same status and reason exists; otherwise drop
    conditions of that type and append the new one."""
    current = get_condition(status, condition["type"])
    if (
        current is not None
        and current.get("status") == condition["status"]
        and current.get("reason") == condition.get("reason")
    ):
        return
    others = [c for c in status.get("conditions") or () if c.get("type") != condition["type"]]
    status["conditions"] = [*others, condition]


def remove_condition(status: Obj, cond_type: str) -> None:
    remaining = [c for c in status.get("conditions") or () if c.get("type") != cond_type]
    if remaining:
        status["conditions"] = remaining
    else:
        status.pop("conditions", None)


def calculate_status(
    rs: Obj,
    active_pods: list[Obj],
    terminating_pods: list[Obj] | None,
    manage_replicas_err: Exception | None,
    enable_status_terminating_replicas: bool,
    now: float,
    template_selector: Any,
    *,
    is_available: Callable[[Obj, float, float], bool] = is_ready_condition_available,
) -> Obj:
    """`template_selector` matches the template's labels (fullyLabeledReplicas).
    `is_available(ready_condition, min_ready_seconds, now)` decides availability: [M]'s `<=`
    by default; the v1.5 ReplicationManager passes its strict `<`."""
    status: Obj = dict(rs.get("status") or {})
    if "conditions" in status:
        status["conditions"] = [dict(c) for c in status["conditions"]]
    spec = rs["spec"]
    min_ready = spec.get("minReadySeconds", 0) or 0
    fully = ready = available = 0
    for pod in active_pods:
        if template_selector.matches(pod["metadata"].get("labels")):
            fully += 1
        # is_pod_ready, then is_pod_available, on the one Ready condition (found once per pod).
        condition = get_pod_ready_condition(pod)
        if condition is not None and condition.get("status") == "True":
            ready += 1
            if is_available(condition, min_ready, now):
                available += 1
    failure = get_condition(status, REPLICA_FAILURE)
    if manage_replicas_err is not None and failure is None:
        diff = len(active_pods) - spec.get("replicas", 1)
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        set_condition(
            status,
            {
                "type": REPLICA_FAILURE,
                "status": "True",
                "lastTransitionTime": rfc3339(now),
                "reason": reason,
                "message": str(manage_replicas_err),
            },
        )
    elif manage_replicas_err is None and failure is not None:
        remove_condition(status, REPLICA_FAILURE)
    status["replicas"] = len(active_pods)
    status["fullyLabeledReplicas"] = fully
    status["readyReplicas"] = ready
    status["availableReplicas"] = available
    if enable_status_terminating_replicas and terminating_pods is not None:
        status["terminatingReplicas"] = len(terminating_pods)
    else:
        status.pop("terminatingReplicas", None)
    return status


_COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")


def status_unchanged(rs: Obj, new_status: Obj) -> bool:
    old = rs.get("status") or {}
    return (
        all((old.get(k) or 0) == (new_status.get(k) or 0) for k in _COUNTS)
        and old.get("terminatingReplicas") == new_status.get("terminatingReplicas")
        and rs["metadata"].get("generation") == old.get("observedGeneration")
        and (old.get("conditions") or []) == (new_status.get("conditions") or [])
    )


def status_changes(old: Obj, new: Obj) -> Obj:
    """The top-level status fields a status write changed, `{field: new value}` (None for a
    field the write removed), in the new status's key order then the removed ones."""
    before, after = old.get("status") or {}, new.get("status") or {}
    changed: Obj = {k: v for k, v in after.items() if before.get(k) != v or k not in before}
    changed.update({k: None for k in before if k not in after})
    return changed


async def update_replica_set_status(client: Any, resource: str, rs: Obj, new_status: Obj) -> Obj:
    """Write `new_status` unless nothing changed; one retry after a fresh GET. Raises ApiError."""
    if status_unchanged(rs, new_status):
        return rs
    new_status = {**new_status, "observedGeneration": rs["metadata"].get("generation")}
    meta = rs["metadata"]
    err: ApiError | None = None
    for attempt in range(STATUS_UPDATE_RETRIES + 1):
        body = {**rs, "status": new_status}
        try:
            updated: Obj = await client.update(resource, meta["namespace"], meta["name"], body, subresource="status")
            return updated
        except ApiError as exc:
            err = exc
        if attempt >= STATUS_UPDATE_RETRIES:
            break
        rs = await client.get(resource, meta["namespace"], meta["name"])
    assert err is not None
    raise err

"""Pod helpers of the ReplicaSet controller: filters, readiness, availability, pods from a
template, controller references, and the ranking that picks which pods a scale-down deletes.

Counterparts: upstream `pkg/controller/controller_utils.go` (filters, `GetPodFromTemplate`,
`ActivePodsWithRanks`, the availability requeue helpers) and `pkg/api/v1/pod/util.go`
(`IsPodReady`, `IsPodAvailable`). Spec sections §6 (steps 8, 10), §8, §9, §11.1, §11.3.

Guarantees
----------
* Pure functions over Kubernetes-shaped pod dicts. Nothing here mutates an argument; results
  are new lists and dicts (which may share nested objects with the inputs, as everything in
  controlplane is immutable by convention).
* Times are virtual seconds (`controlplane.kernel`); object timestamps are RFC 3339 strings. A
  missing timestamp, or Go's zero time "0001-01-01T00:00:00Z", is the *zero time* of upstream's
  `metav1.Time.IsZero()`.
* `get_pods_to_delete` orders pods exactly as upstream's `ActivePodsWithRanks.Less` with the
  default feature gates (PodDeletionCost on, LogarithmicScaleDown on) wherever that order is
  defined, and deterministically where upstream's unstable sort leaves it open (spec §9, §18):
  see `get_pods_to_delete` for the tie rules.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from controlplane.kernel import parse_rfc3339, vtime

Pod = dict[str, Any]

POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_TERMINAL_PHASES = ("Succeeded", "Failed")
_NS_PER_SECOND = 1_000_000_000
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1

# Upstream's validFirstDigit + strconv.ParseInt(value, 10, 32): an optional "-", ASCII digits, no
# "+" and no leading zero (other than "0" itself, or after a minus sign).
_DELETION_COST = re.compile(r"0|-[0-9]+|[1-9][0-9]*")


# -- timestamps ---------------------------------------------------------------------------------

_GO_ZERO_TIME = "0001-01-01T00:00:00Z"
_GO_ZERO_SECONDS = parse_rfc3339(_GO_ZERO_TIME)
_timestamp_cache: dict[str, int | None] = {_GO_ZERO_TIME: None}
_TIMESTAMP_CACHE_LIMIT = 1 << 16


def _timestamp_ns(value: Any) -> int | None:
    """Nanoseconds of virtual time of an RFC 3339 timestamp; None for the zero time.

    Parsed values are cached per string: a scale-down ranks every pod of the ReplicaSet and the
    pods share few distinct timestamps (whole seconds).
    """
    if not value:
        return None
    try:
        return _timestamp_cache[value]
    except KeyError:
        pass
    seconds = parse_rfc3339(value)
    ns: int | None = round(seconds * _NS_PER_SECOND)
    if seconds == _GO_ZERO_SECONDS:
        ns = None
    if len(_timestamp_cache) >= _TIMESTAMP_CACHE_LIMIT:
        _timestamp_cache.clear()
        _timestamp_cache[_GO_ZERO_TIME] = None
    _timestamp_cache[value] = ns
    return ns


def _timestamp(value: Any) -> float | None:
    """Virtual seconds of an RFC 3339 timestamp; None for the zero time."""
    ns = _timestamp_ns(value)
    return None if ns is None else ns / _NS_PER_SECOND


# -- keys, filters, readiness -------------------------------------------------------------------

def pod_key(pod: Pod) -> str:
    """"namespace/name", the key expectations track deletions by (upstream `PodKey`)."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def is_pod_active(pod: Pod) -> bool:
    """Neither terminal (Succeeded/Failed) nor being deleted."""
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    return status.get("phase") not in _TERMINAL_PHASES and not meta.get("deletionTimestamp")


def is_pod_terminating(pod: Pod) -> bool:
    """Being deleted (deletionTimestamp set) but not yet terminal."""
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and status.get("phase") not in _TERMINAL_PHASES


def filter_active_pods(pods: Iterable[Pod]) -> list[Pod]:
    return [p for p in pods if is_pod_active(p)]


def filter_terminating_pods(pods: Iterable[Pod]) -> list[Pod]:
    return [p for p in pods if is_pod_terminating(p)]


def get_pod_ready_condition(pod: Pod) -> dict[str, Any] | None:
    """The first condition of type Ready, or None."""
    status = pod.get("status") or {}
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Ready":
            return condition  # type: ignore[no-any-return]
    return None


def is_pod_ready(pod: Pod) -> bool:
    condition = get_pod_ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def is_pod_available(pod: Pod, min_ready_seconds: float, now: float) -> bool:
    """Ready for at least `min_ready_seconds` at `now`.

    [M] semantics: available once ``lastTransitionTime + minReadySeconds <= now`` (releases up
    to v1.31 required ``<``). A ready pod with a zero transition time is available only when
    `min_ready_seconds` is 0.
    """
    condition = get_pod_ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return False
    return is_ready_condition_available(condition, min_ready_seconds, now)


def is_ready_condition_available(condition: dict[str, Any], min_ready_seconds: float, now: float) -> bool:
    """`is_pod_available` for a pod whose Ready condition, `condition`, is True."""
    if min_ready_seconds == 0:
        return True
    since = _timestamp(condition.get("lastTransitionTime"))
    return since is not None and since + min_ready_seconds <= now


def max_container_restarts(pod: Pod) -> int:
    """The highest restartCount among the pod's (regular) container statuses, 0 if none."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return max((s.get("restartCount") or 0 for s in statuses), default=0)


def max_sidecar_restarts(pod: Pod) -> int:
    """The highest restartCount among restartable init containers (sidecars), 0 if none."""
    init_containers = (pod.get("spec") or {}).get("initContainers")
    if not init_containers:
        return 0
    sidecars = {c.get("name") for c in init_containers if c.get("restartPolicy") == "Always"}
    if not sidecars:
        return 0
    statuses = (pod.get("status") or {}).get("initContainerStatuses") or ()
    return max((s.get("restartCount") or 0 for s in statuses if s.get("name") in sidecars), default=0)


def pod_deletion_cost(pod: Pod) -> int:
    """The pod's `controller.kubernetes.io/pod-deletion-cost` annotation; 0 if absent or invalid.

    Valid values are int32 decimals with an optional minus sign; "+10" and "008" are invalid
    (upstream `GetDeletionCostFromPodAnnotations`), and invalid means 0.
    """
    annotations = (pod.get("metadata") or {}).get("annotations")
    if not annotations:
        return 0
    value = annotations.get(POD_DELETION_COST)
    if not isinstance(value, str) or _DELETION_COST.fullmatch(value) is None:
        return 0
    cost = int(value)
    return cost if _INT32_MIN <= cost <= _INT32_MAX else 0


# -- owner references and pods from templates ---------------------------------------------------

def controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The first ownerReference with ``controller: true`` (upstream `GetControllerOf`), or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") is True:
            return ref  # type: ignore[no-any-return]
    return None


def new_controller_ref(owner: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """An ownerReference naming `owner` as controller, blocking its foreground deletion."""
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


@functools.lru_cache(maxsize=4096)
def _pods_prefix(controller_name: str) -> str:
    # Memoised: every pod of a controller then shares one generateName string.
    # Upstream uses "<name>-" to make pod names prettier, unless that is not a valid pod name
    # prefix (e.g. the name is already at the length limit).
    from controlplane.validation import name_is_dns_subdomain

    prefix = f"{controller_name}-"
    if name_is_dns_subdomain(prefix, True):
        return controller_name
    return prefix


def get_pod_from_template(
    template: dict[str, Any], parent: dict[str, Any], controller_ref: dict[str, Any] | None
) -> Pod:
    """The pod a controller creates from its `template` (upstream `GetPodFromTemplate`).

    Labels, annotations and finalizers are copied from the template's metadata, `generateName`
    derives from the parent's name, `ownerReferences` is ``[controller_ref]`` (one list shared by
    the pods created with the same ref) and the spec is the template's spec itself (shared, not
    copied). Raises ValueError("unable to create pods, no labels") when the template has no
    labels, as upstream's `createPods` does before any request.
    """
    template_meta = template.get("metadata") or {}
    labels = template_meta.get("labels")
    if not labels:
        raise ValueError("unable to create pods, no labels")
    parent_meta = parent.get("metadata") or {}
    name = parent_meta.get("name")
    if not name:
        raise ValueError("parentObject does not have ObjectMeta")
    # Keys in the order of Go's ObjectMeta fields, so the object prints like upstream's.
    metadata: dict[str, Any] = {"generateName": _pods_prefix(name)}
    if parent_meta.get("namespace"):
        metadata["namespace"] = parent_meta["namespace"]
    metadata["labels"] = dict(labels)
    annotations = template_meta.get("annotations")
    if annotations:
        metadata["annotations"] = dict(annotations)
    if controller_ref is not None:
        metadata["ownerReferences"] = _owner_references(controller_ref)
    finalizers = template_meta.get("finalizers")
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.get("spec") or {}}


_owner_reference_lists: dict[int, list[dict[str, Any]]] = {}
_OWNER_REFERENCE_LISTS_LIMIT = 1024


def _owner_references(controller_ref: dict[str, Any]) -> list[dict[str, Any]]:
    """``[controller_ref]``, one list shared by every pod created with this same ref object (a
    sync creates its whole batch with one ref). Keyed by identity; the list holds the ref, so
    the id cannot be reused while the entry exists."""
    refs = _owner_reference_lists.get(id(controller_ref))
    if refs is None or refs[0] is not controller_ref:
        if len(_owner_reference_lists) >= _OWNER_REFERENCE_LISTS_LIMIT:
            _owner_reference_lists.clear()
        refs = _owner_reference_lists[id(controller_ref)] = [controller_ref]
    return refs


# -- availability requeue helpers ([M], spec §11.3) ----------------------------------------------

def next_pod_availability_check(pod: Pod, min_ready_seconds: float, now: float) -> float | None:
    """Seconds from `now` until a ready pod becomes available; None if it never will by waiting
    (not ready, no minReadySeconds, zero transition time) or already is."""
    if min_ready_seconds <= 0:
        return None
    condition = get_pod_ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    since = _timestamp(condition.get("lastTransitionTime"))
    if since is None:
        return None
    delay = vtime(since + min_ready_seconds - now)  # an exact virtual duration
    return delay if delay > 0 else None


def find_min_next_pod_availability_simple_check(
    pods: Iterable[Pod], min_ready_seconds: float, now: float
) -> tuple[float | None, Pod | None]:
    """The smallest `next_pod_availability_check` among `pods` and the pod giving it (the first
    such pod on ties); ``(None, None)`` when no pod is waiting to become available."""
    best: float | None = None
    best_pod: Pod | None = None
    for pod in pods:
        delay = next_pod_availability_check(pod, min_ready_seconds, now)
        if delay is not None and (best is None or delay < best):
            best, best_pod = delay, pod
    return best, best_pod


def find_min_next_pod_availability_check(
    pods: Iterable[Pod], min_ready_seconds: float, last_status_eval: float, now: float
) -> float | None:
    """When to requeue so the status catches the next pod becoming available.

    The pod is chosen as of `last_status_eval` (when the status was computed), then its delay is
    recomputed at `now` (upstream's `clock.Now()`); 0 (requeue immediately) if it has become
    available in between. None when no pod was waiting.
    """
    _, pod = find_min_next_pod_availability_simple_check(pods, min_ready_seconds, last_status_eval)
    if pod is None:
        return None
    delay = next_pod_availability_check(pod, min_ready_seconds, now)
    return delay if delay is not None else 0.0


# -- choosing pods to delete (spec §9) -----------------------------------------------------------

def _node_name(pod: Pod) -> str:
    name: str = (pod.get("spec") or {}).get("nodeName") or ""
    return name


def get_pods_ranked_by_related_pods_on_same_node(pods: Sequence[Pod], related: Iterable[Pod]) -> list[int]:
    """For each pod, how many active `related` pods share its node (unscheduled pods share "")."""
    on_node = _active_pods_per_node(related)
    return [on_node.get(_node_name(pod), 0) for pod in pods]


def _active_pods_per_node(pods: Iterable[Pod]) -> dict[str, int]:
    # `is_pod_active` and `_node_name` inlined: this runs over every related pod per scale-down.
    on_node: dict[str, int] = {}
    empty: dict[str, Any] = {}
    for pod in pods:
        if (pod.get("status") or empty).get("phase") in _TERMINAL_PHASES:
            continue
        if (pod.get("metadata") or empty).get("deletionTimestamp"):
            continue
        node = (pod.get("spec") or empty).get("nodeName") or ""
        on_node[node] = on_node.get(node, 0) + 1
    return on_node


def get_pods_to_delete(
    active_pods: Sequence[Pod],
    related_pods: Iterable[Pod],
    count: int,
    now: float | None,
    *,
    deletion_cost_enabled: bool = True,
) -> list[Pod]:
    """The `count` pods of `active_pods` that a scale-down deletes, best victims first.

    Upstream's ranking (spec §9.1), "i before j" when, in turn: i is unscheduled and j is not;
    i's phase is earlier (Pending < Unknown < Running); i is not ready and j is; i has the lower
    pod-deletion-cost (unless `deletion_cost_enabled` is False, the PodDeletionCost gate off);
    more active related pods share i's node; both are ready and i became ready later; i has more
    container restarts (then more sidecar restarts); i was created later. Ready and creation
    times compare on log2 buckets of their age in nanoseconds at `now`, with the UID deciding
    within a bucket; a zero time comes first. `now=None` plays Go's zero `Now` (and the
    LogarithmicScaleDown gate off): plain time comparisons.

    With `count >= len(active_pods)` every pod goes, in input order, unsorted (as upstream).
    Returns a new list; `active_pods` is not reordered (upstream sorts its slice in place).

    Ties: Go's sort is unstable, so upstream leaves the order of pods it deems equal open; here
    they keep their input order (Python's sort is stable). Upstream's comparison is not always a
    consistent order, though, and there this module decides: (1) within one creation-time bucket
    the UID decides even between pods created at the same instant; (2) within one ready-time
    bucket, pods are in UID order except that each run of consecutive pods with the same ready
    time is ordered by the later keys (upstream compares equal ready times by those keys, and
    different ones by UID). With unique UIDs the result respects every pair upstream's
    comparison orders whenever some order can.
    """
    if count <= 0:
        return []
    if count >= len(active_pods):
        return list(active_pods)
    on_node = _active_pods_per_node(related_pods)
    ordered = _sort_active_pods_with_ranks(active_pods, on_node, now, deletion_cost_enabled, count)
    return ordered[:count]


def _log2_bucket(now_ns: int, t_ns: int) -> int:
    # Upstream: int64(math.Log2(float64(now.Sub(t)))) on the duration in nanoseconds; -1 when the
    # time is not in the past. 2 h -> 42, 5 h -> 44, 8 h -> 44.
    age = now_ns - t_ns
    return int(math.log2(age)) if age > 0 else -1


# A pod while it is ranked: (pod, ready since in ns or None, uid). `_Ordered` adds, first, the
# tuple of keys 7 and 8: (-restarts, -sidecar restarts, then the creation-time key).
_Entry = tuple[Pod, int | None, str]
_Ordered = tuple[tuple[Any, ...], Pod, int | None, str]


def _sort_active_pods_with_ranks(
    pods: Sequence[Pod], on_node: dict[str, int], now: float | None, deletion_cost_enabled: bool, count: int
) -> list[Pod]:
    """At least the first `count` pods of the ranking (all of them if groups end past it)."""
    # The hot path of a large scale-down (every pod of the ReplicaSet, every sync): one pass
    # reading each pod once with the helpers above inlined; log2 buckets computed once per
    # distinct timestamp; keys 7-8 computed only for the groups that reach the result.
    now_ns = None if now is None else round(now * _NS_PER_SECOND)
    buckets: dict[int, int] = {}
    timestamp_ns = _timestamp_ns
    empty: dict[str, Any] = {}
    # Keys 1-6 (up to the ready-time bucket) form a plain tuple, smaller first; pods sharing it
    # form a group (members in input order) that keys 6 (within a bucket), 7 and 8 then order.
    groups: dict[tuple[int, ...], list[_Entry]] = {}
    for pod in pods:
        meta = pod.get("metadata") or empty
        spec = pod.get("spec") or empty
        status = pod.get("status") or empty
        node = spec.get("nodeName") or ""
        ready = False
        rt = None
        for condition in status.get("conditions") or ():
            if condition.get("type") == "Ready":
                ready = condition.get("status") == "True"
                if ready:
                    rt = timestamp_ns(condition.get("lastTransitionTime"))
                break
        if not ready:
            ready_key = ready_order = 0
        elif rt is None:
            ready_key = ready_order = 0  # zero time first
        elif now_ns is None:
            ready_key, ready_order = 1, -rt  # later first
        else:
            bucket = buckets.get(rt)
            if bucket is None:
                bucket = buckets[rt] = _log2_bucket(now_ns, rt)
            ready_key, ready_order = 1, bucket  # younger bucket first
        prefix: tuple[int, ...] = (
            1 if node else 0,
            _PHASE_ORDINAL.get(status.get("phase") or "", 0),
            1 if ready else 0,
            pod_deletion_cost(pod) if deletion_cost_enabled and meta.get("annotations") else 0,
            -on_node.get(node, 0),
            ready_key,
            ready_order,
        )
        entry = (pod, rt, meta.get("uid") or "")
        group = groups.get(prefix)
        if group is None:
            groups[prefix] = [entry]
        else:
            group.append(entry)

    result: list[Pod] = []
    for prefix in sorted(groups):
        group = groups[prefix]
        if len(group) == 1:
            result.append(group[0][0])
        else:
            ordered = [(_later_keys(pod, uid, now_ns, buckets), pod, rt, uid) for pod, rt, uid in group]
            if now_ns is not None and prefix[2] == 1 and prefix[5] == 1:
                ordered = _order_ready_time_bucket(ordered)
            else:
                ordered.sort(key=_first)  # stable: pods equal under keys 7-8 keep input order
            result.extend(item[1] for item in ordered)
        if len(result) >= count:
            break
    return result


def _later_keys(pod: Pod, uid: str, now_ns: int | None, buckets: dict[int, int]) -> tuple[Any, ...]:
    """Keys 7 and 8 as one tuple, smaller first."""
    ct = _timestamp_ns((pod.get("metadata") or {}).get("creationTimestamp"))
    if ct is None:
        created: tuple[Any, ...] = (0, 0, "")
    elif now_ns is None:
        created = (1, -ct, "")
    else:
        bucket = buckets.get(ct)
        if bucket is None:
            bucket = buckets[ct] = _log2_bucket(now_ns, ct)
        created = (1, bucket, uid)
    return (-max_container_restarts(pod), -max_sidecar_restarts(pod), *created)


def _first(item: _Ordered) -> tuple[Any, ...]:
    return item[0]


def _uid_then_later_keys(item: _Ordered) -> tuple[Any, ...]:
    return (item[3], item[0])


def _order_ready_time_bucket(group: list[_Ordered]) -> list[_Ordered]:
    """Order ready pods whose ready times fall in one log2 bucket (keys 6 to 8).

    Upstream: different ready times -> UID order; equal ready times -> keys 7 and 8. So: UID
    order, then each run of consecutive pods with the same ready time sorted by keys 7-8. With
    unique UIDs this respects every pair upstream orders whenever any order can: two pods of one
    ready time that keys 7-8 order against their UIDs can only both be satisfied if no pod of
    another ready time has a UID between theirs, i.e. if they sit in one run.
    """
    first = group[0][2]
    if all(item[2] == first for item in group):
        return sorted(group, key=_first)
    by_uid = sorted(group, key=_uid_then_later_keys)
    ordered: list[_Ordered] = []
    start = 0
    for end in range(1, len(by_uid) + 1):
        if end == len(by_uid) or by_uid[end][2] != by_uid[start][2]:
            run = by_uid[start:end]
            ordered.extend(sorted(run, key=_first) if len(run) > 1 else run)
            start = end
    return ordered

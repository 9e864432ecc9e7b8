"""pkg/controller/deployment/util/deployment_util.go, and the ReplicaSet helpers of
pkg/controller/controller_utils.go the Deployment controller uses (spec
shared/spec/deployment-controller.md, D-rules cited per function).

Pure functions over Kubernetes-shaped dicts: none writes to the API server, none mutates its
arguments unless its name says so (`set_*`, which mutate the dict they are given, as the Go
functions mutate the pointer they are given). "now" is passed in (virtual seconds).

Deliberate choices where upstream is nondeterministic or not reproducible:
* `compute_hash` is FNV-1a 32 over a canonical JSON dump of the template (Go hashes a spew
  dump, which Python cannot reproduce byte for byte): stable, template-sensitive, same alphabet,
  collisionCount mixed in as upstream does (D1, ComputeHash).
* `ReplicaSetsBySizeOlder/Newer` break the tie Go's unstable sort leaves (equal size and equal
  second-resolution timestamps) by name (D1).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any, Final

from controlplane.kernel import parse_rfc3339, rfc3339
from controlplane.labels import selector_from_label_selector
from controlplane.podutil import controller_ref

Obj = dict[str, Any]

# -- constants (D1) ---------------------------------------------------------------------------
DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY = "pod-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
DEPRECATED_ROLLBACK_TO = "deprecated.deployment.rollback.to"
LAST_APPLIED_CONFIG_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
MAX_REV_HISTORY_LENGTH_IN_CHARS = 2000  # sync.go maxRevHistoryLengthInChars
MAX_INT32 = 2**31 - 1

# Condition types and reasons (deployment_util.go).
DEPLOYMENT_AVAILABLE = "Available"
DEPLOYMENT_PROGRESSING = "Progressing"
DEPLOYMENT_REPLICA_FAILURE = "ReplicaFailure"
REPLICA_SET_UPDATED_REASON = "ReplicaSetUpdated"
FAILED_RS_CREATE_REASON = "ReplicaSetCreateError"
NEW_REPLICA_SET_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
PAUSED_DEPLOY_REASON = "DeploymentPaused"
RESUMED_DEPLOY_REASON = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"
ROLLBACK_REVISION_NOT_FOUND = "DeploymentRollbackRevisionNotFound"
ROLLBACK_TEMPLATE_UNCHANGED = "DeploymentRollbackTemplateUnchanged"
ROLLBACK_DONE = "DeploymentRollback"

RECREATE = "Recreate"
ROLLING_UPDATE = "RollingUpdate"

# Annotations never copied from a Deployment to its ReplicaSets (annotationsToSkip, D6.7).
ANNOTATIONS_TO_SKIP = frozenset(
    {
        LAST_APPLIED_CONFIG_ANNOTATION,
        REVISION_ANNOTATION,
        REVISION_HISTORY_ANNOTATION,
        DESIRED_REPLICAS_ANNOTATION,
        MAX_REPLICAS_ANNOTATION,
        DEPRECATED_ROLLBACK_TO,
    }
)


# -- small accessors --------------------------------------------------------------------------
def replicas(obj: Obj | None) -> int:
    """`*spec.replicas` (defaulting makes it non-nil; 1 if a test object lacks it)."""
    if obj is None:
        return 0
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def status_of(obj: Obj | None, field: str) -> int:
    if obj is None:
        return 0
    return int((obj.get("status") or {}).get(field) or 0)


def annotations_of(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def creation_key(rs: Obj) -> tuple[float, str]:
    """ReplicaSetsByCreationTimestamp: older first, ties by name."""
    meta = rs["metadata"]
    stamp = meta.get("creationTimestamp")
    return (parse_rfc3339(stamp) if stamp else 0.0, meta.get("name", ""))


def sort_by_creation_timestamp(rss: list[Obj]) -> None:
    rss.sort(key=creation_key)


def sort_by_size_older(rss: list[Obj]) -> None:
    """ReplicaSetsBySizeOlder: larger first; equal size older first (then name, see docstring)."""
    rss.sort(key=lambda rs: (-replicas(rs), *creation_key(rs)))


def sort_by_size_newer(rss: list[Obj]) -> None:
    """ReplicaSetsBySizeNewer: larger first; equal size newer first (then name descending)."""
    rss.sort(key=lambda rs: (replicas(rs), *creation_key(rs)), reverse=True)


_GO_INT: Final = re.compile(r"[+-]?[0-9]+")


def parse_int64(value: str) -> int:
    """`strconv.ParseInt(value, 10, 64)` (and `strconv.Atoi` on 64-bit): an optional sign and
    ASCII decimal digits, nothing else (no spaces, no "_", no other scripts' digits, which
    Python's int() takes), within int64. ValueError otherwise."""
    if _GO_INT.fullmatch(value) is None:
        raise ValueError(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise ValueError(f'strconv.ParseInt: parsing "{value}": value out of range')
    return number


def revision(obj: Obj) -> int:
    """`Revision(obj)`: the revision annotation as an int; 0 when missing. ValueError when
    unparsable (the caller logs and skips it)."""
    value = annotations_of(obj).get(REVISION_ANNOTATION)
    if value is None:
        return 0
    return parse_int64(value)


def sort_by_revision(rss: list[Obj]) -> None:
    """ReplicaSetsByRevision: revision ascending; unparsable or equal revisions fall back to the
    creation timestamp (D11.3)."""

    def key(rs: Obj) -> tuple[int, float, str]:
        try:
            rev = revision(rs)
        except ValueError:
            rev = -1
        return (rev, *creation_key(rs))

    rss.sort(key=key)


def filter_active_replica_sets(rss: Iterable[Obj | None]) -> list[Obj]:
    """controller.FilterActiveReplicaSets: non-nil with spec.replicas > 0."""
    return [rs for rs in rss if rs is not None and replicas(rs) > 0]


def max_revision(all_rss: Iterable[Obj | None]) -> int:
    """MaxRevision (D6.4): unparsable revisions are skipped."""
    best = 0
    for rs in all_rss:
        if rs is None:
            continue
        try:
            best = max(best, revision(rs))
        except ValueError:
            continue
    return best


def last_revision(all_rss: Iterable[Obj | None]) -> int:
    """LastRevision: the second-highest revision (D13.2)."""
    highest = second = 0
    for rs in all_rss:
        if rs is None:
            continue
        try:
            v = revision(rs)
        except ValueError:
            continue
        if v >= highest:
            second, highest = highest, v
        elif v > second:
            second = v
    return second


# -- int-or-percent, surge and unavailability (D7) --------------------------------------------
def get_scaled_value_from_int_or_percent(value: Any, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent (D7.1)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError("invalid value for IntOrString: invalid type: bool")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if not value.endswith("%"):
            raise ValueError(f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}")
        try:
            percent = int(value[:-1])
        except ValueError:
            raise ValueError(f"invalid value {value!r}: not an integer percentage") from None
        scaled = percent * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    raise ValueError(f"invalid value for IntOrString: invalid type: {type(value).__name__}")


def resolve_fenceposts(max_surge: Any, max_unavailable: Any, desired: int) -> tuple[int, int]:
    """ResolveFenceposts (D7.2): surge rounds up, unavailable down; both 0 → unavailable 1."""
    surge = get_scaled_value_from_int_or_percent(max_surge if max_surge is not None else 0, desired, True)
    unavailable = get_scaled_value_from_int_or_percent(
        max_unavailable if max_unavailable is not None else 0, desired, False
    )
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def strategy_type(d: Obj) -> str:
    return ((d.get("spec") or {}).get("strategy") or {}).get("type") or ""


def is_rolling_update(d: Obj) -> bool:
    return strategy_type(d) == ROLLING_UPDATE


def _rolling(d: Obj) -> Obj:
    return ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}


def max_surge(d: Obj) -> int:
    """MaxSurge (D7.3): 0 unless RollingUpdate."""
    if not is_rolling_update(d):
        return 0
    surge, _ = resolve_fenceposts(_rolling(d).get("maxSurge"), _rolling(d).get("maxUnavailable"), replicas(d))
    return surge


def max_unavailable(d: Obj) -> int:
    """MaxUnavailable (D7.3): 0 unless RollingUpdate with replicas > 0; capped at replicas."""
    if not is_rolling_update(d) or replicas(d) == 0:
        return 0
    _, unavailable = resolve_fenceposts(_rolling(d).get("maxSurge"), _rolling(d).get("maxUnavailable"), replicas(d))
    return min(unavailable, replicas(d))


def new_rs_new_replicas(d: Obj, all_rss: Iterable[Obj | None], new_rs: Obj) -> int:
    """NewRSNewReplicas (D7.4)."""
    kind = strategy_type(d)
    if kind == ROLLING_UPDATE:
        surge = get_scaled_value_from_int_or_percent(_rolling(d).get("maxSurge"), replicas(d), True)
        current = get_replica_count_for_replica_sets(all_rss)
        max_total = replicas(d) + surge
        if current >= max_total:
            return replicas(new_rs)
        scale_up = min(max_total - current, replicas(d) - replicas(new_rs))
        return replicas(new_rs) + scale_up
    if kind == RECREATE:
        return replicas(d)
    raise ValueError(f"deployment type {kind} isn't supported")


# -- counts ------------------------------------------------------------------------------------
def get_replica_count_for_replica_sets(rss: Iterable[Obj | None]) -> int:
    return sum(replicas(rs) for rs in rss if rs is not None)


def get_actual_replica_count_for_replica_sets(rss: Iterable[Obj | None]) -> int:
    return sum(status_of(rs, "replicas") for rs in rss if rs is not None)


def get_ready_replica_count_for_replica_sets(rss: Iterable[Obj | None]) -> int:
    return sum(status_of(rs, "readyReplicas") for rs in rss if rs is not None)


def get_available_replica_count_for_replica_sets(rss: Iterable[Obj | None]) -> int:
    return sum(status_of(rs, "availableReplicas") for rs in rss if rs is not None)


def get_terminating_replica_count_for_replica_sets(rss: Iterable[Obj | None]) -> int | None:
    """GetTerminatingReplicaCountForReplicaSets (D12.3): RSs never synced (observedGeneration 0,
    no terminatingReplicas) are skipped; any other RS without the field makes the sum unknown."""
    total = 0
    for rs in rss:
        if rs is None:
            continue
        status = rs.get("status") or {}
        value = status.get("terminatingReplicas")
        if value is None:
            if not status.get("observedGeneration"):
                continue
            return None
        total += int(value)
    return total


# -- annotations (D6.7, D10.5) ------------------------------------------------------------------
def _set_annotation(rs: Obj, key: str, value: str) -> None:
    meta = rs["metadata"]
    meta["annotations"] = {**(meta.get("annotations") or {}), key: value}


def set_new_replica_set_annotations(d: Obj, rs: Obj, new_revision: str, exists: bool, limit: int) -> bool:
    """SetNewReplicaSetAnnotations (D6.7); mutates `rs["metadata"]` (give it a copy)."""
    changed = copy_deployment_annotations_to_replica_set(d, rs)
    rs_annotations = annotations_of(rs)
    old_revision = rs_annotations.get(REVISION_ANNOTATION, "")
    try:
        old_revision_int = parse_int64(old_revision) if old_revision else 0
    except ValueError:
        return False
    new_revision_int = parse_int64(new_revision)
    if old_revision_int < new_revision_int:
        _set_annotation(rs, REVISION_ANNOTATION, new_revision)
        changed = True
    if old_revision and old_revision_int < new_revision_int:
        history = annotations_of(rs).get(REVISION_HISTORY_ANNOTATION, "")
        old_revisions = history.split(",")
        if not old_revisions[0]:
            _set_annotation(rs, REVISION_HISTORY_ANNOTATION, old_revision)
        else:
            total = len(history) + len(old_revision) + 1
            start = 0
            while total > limit and start < len(old_revisions):
                total -= len(old_revisions[start]) + 1
                start += 1
            if total <= limit:  # else upstream logs "not appending revision": history unchanged
                _set_annotation(rs, REVISION_HISTORY_ANNOTATION, ",".join([*old_revisions[start:], old_revision]))
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


def copy_deployment_annotations_to_replica_set(d: Obj, rs: Obj) -> bool:
    """copyDeploymentAnnotationsToReplicaSet: every annotation but the skip list; never removes."""
    rs_annotations = dict(annotations_of(rs))
    changed = False
    for key, value in annotations_of(d).items():
        if key in ANNOTATIONS_TO_SKIP or rs_annotations.get(key) == value:
            continue
        rs_annotations[key] = value
        changed = True
    if changed:
        rs["metadata"]["annotations"] = rs_annotations
    return changed


def set_deployment_annotations_to(d: Obj, rollback_to_rs: Obj) -> None:
    """SetDeploymentAnnotationsTo (D13.3): the Deployment's skip-list annotations kept, every
    other one replaced by the ReplicaSet's."""
    kept = {k: v for k, v in annotations_of(d).items() if k in ANNOTATIONS_TO_SKIP}
    kept.update({k: v for k, v in annotations_of(rollback_to_rs).items() if k not in ANNOTATIONS_TO_SKIP})
    d["metadata"]["annotations"] = kept


def set_deployment_revision(d: Obj, new_revision: str) -> bool:
    """SetDeploymentRevision: copy `new_revision` onto the Deployment's annotation if different."""
    if annotations_of(d).get(REVISION_ANNOTATION) == new_revision:
        return False
    _set_annotation(d, REVISION_ANNOTATION, new_revision)
    return True


def _int32_annotation(rs: Obj, key: str) -> int | None:
    value = annotations_of(rs).get(key)
    if value is None:
        return None
    try:
        parsed = parse_int64(value)  # getNonNegativeIntFromAnnotation: strconv.Atoi
    except ValueError:
        return None
    return parsed if 0 <= parsed <= MAX_INT32 else None


def get_desired_replicas_annotation(rs: Obj) -> int | None:
    return _int32_annotation(rs, DESIRED_REPLICAS_ANNOTATION)


def get_max_replicas_annotation(rs: Obj) -> int | None:
    return _int32_annotation(rs, MAX_REPLICAS_ANNOTATION)


def set_replicas_annotations(rs: Obj, desired: int, max_replicas: int) -> bool:
    """SetReplicasAnnotations: desired-replicas and max-replicas; True when either changed."""
    updated = False
    current = annotations_of(rs)
    if current.get(DESIRED_REPLICAS_ANNOTATION) != str(desired):
        _set_annotation(rs, DESIRED_REPLICAS_ANNOTATION, str(desired))
        updated = True
    if annotations_of(rs).get(MAX_REPLICAS_ANNOTATION) != str(max_replicas):
        _set_annotation(rs, MAX_REPLICAS_ANNOTATION, str(max_replicas))
        updated = True
    return updated


def replicas_annotations_need_update(rs: Obj, desired: int, max_replicas: int) -> bool:
    current = (rs.get("metadata") or {}).get("annotations")
    if current is None:
        return True
    return bool(
        current.get(DESIRED_REPLICAS_ANNOTATION) != str(desired)
        or current.get(MAX_REPLICAS_ANNOTATION) != str(max_replicas)
    )


# -- proportional scaling (D10.3, D10.4) ------------------------------------------------------------
def go_round(x: float) -> int:
    """Go's math.Round: halves away from zero (operands here are non-negative)."""
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def get_replica_set_fraction(rs: Obj, d: Obj) -> int:
    """getReplicaSetFraction (D10.4)."""
    if replicas(d) == 0:
        return -replicas(rs)
    deployment_max_replicas = replicas(d) + max_surge(d)
    deployment_max_replicas_before_scale = get_max_replicas_annotation(rs)
    if not deployment_max_replicas_before_scale:
        deployment_max_replicas_before_scale = status_of(d, "replicas")
        if deployment_max_replicas_before_scale == 0:
            return 0
    new_rs_size = replicas(rs) * deployment_max_replicas / deployment_max_replicas_before_scale
    return go_round(new_rs_size) - replicas(rs)


def get_replica_set_proportion(rs: Obj | None, d: Obj, deployment_replicas_to_add: int, added: int) -> int:
    """GetReplicaSetProportion (D10.4)."""
    if rs is None or replicas(rs) == 0 or deployment_replicas_to_add == 0 or deployment_replicas_to_add == added:
        return 0
    fraction = get_replica_set_fraction(rs, d)
    allowed = deployment_replicas_to_add - added
    if deployment_replicas_to_add > 0:
        return min(fraction, allowed)
    return max(fraction, allowed)


def is_saturated(d: Obj, rs: Obj | None) -> bool:
    """IsSaturated (D10.3)."""
    if rs is None:
        return False
    desired = get_desired_replicas_annotation(rs)
    if desired is None:
        return False
    return replicas(rs) == replicas(d) and desired == replicas(d) and status_of(rs, "availableReplicas") == replicas(d)


def find_active_or_latest(new_rs: Obj | None, old_rss: list[Obj]) -> Obj | None:
    """FindActiveOrLatest (D10.3)."""
    if new_rs is None and not old_rss:
        return None
    old_sorted = sorted(old_rss, key=creation_key, reverse=True)  # newest first
    all_rss = filter_active_replica_sets([*old_sorted, new_rs])
    if not all_rss:
        return new_rs if new_rs is not None else old_sorted[0]
    if len(all_rss) == 1:
        return all_rss[0]
    return None


# -- templates, hash, new and old ReplicaSets (D6) --------------------------------------------------
def _without_hash(template: Obj | None) -> Obj:
    template = dict(template or {})
    meta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY}
    if labels or "labels" in meta:
        meta["labels"] = labels
    if not meta.get("labels"):
        meta.pop("labels", None)
    template["metadata"] = meta
    return template


def _without_nulls(value: Any) -> Any:
    """`value` without its JSON nulls: a null decodes into Go's zero value, as an absent field does,
    so the typed templates upstream compares cannot tell them apart (`kubectl rollout undo` sends
    the ReplicaSet's template with `creationTimestamp: null`)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def equal_ignore_hash(template1: Obj | None, template2: Obj | None) -> bool:
    """EqualIgnoreHash: semantic equality after dropping the pod-template-hash label (and nulls,
    which Go's decoding leaves as zero values)."""
    a, b = _without_hash(template1), _without_hash(template2)
    return a == b or _without_nulls(a) == _without_nulls(b)


_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def safe_encode_string(s: str) -> str:
    """rand.SafeEncodeString: each character mapped into the vowel-free alphabet."""
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in s)


def compute_hash(template: Obj, collision_count: int | None) -> str:
    """controller.ComputeHash (see the module docstring for the one deliberate difference)."""
    h = 0x811C9DC5
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(4, "little") + b"\0\0\0\0"
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return safe_encode_string(str(h))


def find_new_replica_set(d: Obj, rs_list: list[Obj]) -> Obj | None:
    """FindNewReplicaSet (D6.1): sorts `rs_list` in place, oldest first; the oldest match wins."""
    sort_by_creation_timestamp(rs_list)
    template = (d.get("spec") or {}).get("template")
    for rs in rs_list:
        if equal_ignore_hash((rs.get("spec") or {}).get("template"), template):
            return rs
    return None


def find_old_replica_sets(d: Obj, rs_list: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """FindOldReplicaSets (D6.2) → (requiredRSs, allOldRSs)."""
    new_rs = find_new_replica_set(d, rs_list)
    new_uid = None if new_rs is None else new_rs["metadata"].get("uid")
    required, all_old = [], []
    for rs in rs_list:
        if new_uid is not None and rs["metadata"].get("uid") == new_uid:
            continue
        all_old.append(rs)
        if (rs.get("spec") or {}).get("replicas") != 0:
            required.append(rs)
    return required, all_old


def get_deployments_for_replica_set(deployments: Iterable[Obj], rs: Obj) -> list[Obj]:
    """util.GetDeploymentsForReplicaSet (D2.5): same namespace, non-empty selector matching."""
    labels = (rs.get("metadata") or {}).get("labels")
    if not labels:
        return []
    namespace = rs["metadata"].get("namespace", "")
    found = []
    for d in deployments:
        if d["metadata"].get("namespace", "") != namespace:
            continue
        raw = (d.get("spec") or {}).get("selector")
        try:
            selector = selector_from_label_selector(raw)
        except ValueError:
            continue
        if not raw or (not raw.get("matchLabels") and not raw.get("matchExpressions")):
            continue
        if selector.matches(labels):
            found.append(d)
    return found


def is_controlled_by(obj: Obj, owner: Obj) -> bool:
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == owner["metadata"].get("uid")


# -- conditions (D12.4-D12.6) ----------------------------------------------------------------------
def new_deployment_condition(cond_type: str, status: str, reason: str, message: str, now: float) -> Obj:
    stamp = rfc3339(now)
    return {
        "type": cond_type,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def get_deployment_condition(status: Obj, cond_type: str) -> Obj | None:
    for c in status.get("conditions") or ():
        if c.get("type") == cond_type:
            found: Obj = c
            return found
    return None


def set_deployment_condition(status: Obj, condition: Obj) -> None:
    """SetDeploymentCondition (D12.5): same status and reason → nothing; same status → keep the
    transition time; the new condition is appended after the others."""
    current = get_deployment_condition(status, condition["type"])
    if (
        current is not None
        and current.get("status") == condition["status"]
        and current.get("reason") == condition["reason"]
    ):
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    others = [c for c in status.get("conditions") or () if c.get("type") != condition["type"]]
    status["conditions"] = [*others, condition]


def remove_deployment_condition(status: Obj, cond_type: str) -> None:
    conditions = [c for c in status.get("conditions") or () if c.get("type") != cond_type]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


def replica_set_to_deployment_condition(cond: Obj) -> Obj:
    return {
        "type": cond.get("type"),
        "status": cond.get("status"),
        "lastUpdateTime": cond.get("lastTransitionTime"),
        "lastTransitionTime": cond.get("lastTransitionTime"),
        "reason": cond.get("reason"),
        "message": cond.get("message"),
    }


def has_progress_deadline(d: Obj) -> bool:
    value = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return value is not None and value != MAX_INT32


def has_revision_history_limit(d: Obj) -> bool:
    value = (d.get("spec") or {}).get("revisionHistoryLimit")
    return value is not None and value != MAX_INT32


def deployment_complete(d: Obj, new_status: Obj) -> bool:
    """DeploymentComplete (D12.6)."""
    want = replicas(d)
    return (
        int(new_status.get("updatedReplicas") or 0) == want
        and int(new_status.get("replicas") or 0) == want
        and int(new_status.get("availableReplicas") or 0) == want
        and int(new_status.get("observedGeneration") or 0) >= int(d["metadata"].get("generation") or 0)
    )


def deployment_progressing(d: Obj, new_status: Obj) -> bool:
    """DeploymentProgressing (D12.6): compared with the Deployment's stored status."""
    old = d.get("status") or {}
    old_status_old_replicas = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
    new_status_old_replicas = int(new_status.get("replicas") or 0) - int(new_status.get("updatedReplicas") or 0)
    return (
        int(new_status.get("updatedReplicas") or 0) > int(old.get("updatedReplicas") or 0)
        or new_status_old_replicas < old_status_old_replicas
        or int(new_status.get("readyReplicas") or 0) > int(old.get("readyReplicas") or 0)
        or int(new_status.get("availableReplicas") or 0) > int(old.get("availableReplicas") or 0)
    )


def deployment_timed_out(d: Obj, new_status: Obj, now: float) -> bool:
    """DeploymentTimedOut (D12.6): strictly after lastUpdateTime + deadline."""
    if not has_progress_deadline(d):
        return False
    condition = get_deployment_condition(new_status, DEPLOYMENT_PROGRESSING)
    if condition is None:
        return False
    if condition.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if condition.get("reason") == TIMED_OUT_REASON:
        return True
    deadline = int(d["spec"]["progressDeadlineSeconds"])
    return parse_rfc3339(condition["lastUpdateTime"]) + deadline < now

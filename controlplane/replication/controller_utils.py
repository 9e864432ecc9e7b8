"""The v1.5 pieces of `pkg/controller/controller_utils.go` (and `pkg/api/resource_helpers.go`) that
differ from v1.36: the 6-key `ActivePods` order, pods from a template with the
`kubernetes.io/created-by` annotation, the ControllerRef without `blockOwnerDeletion`, the strict
availability boundary, and `RealPodControl` as it was (spec v1.5 §9, §10, §11.1, §12, R8.5).

Guarantees
----------
* Pure functions over Kubernetes-shaped dicts; nothing mutates an argument.
* `sort_active_pods` is a *stable* sort by the 6 keys of spec §10: pods v1.5 deems equal keep the
  order they were given (the lister's), where Go's unstable `sort.Sort` leaves it open (spec
  §15.3; a decision of this simulator).
* What is the same as v1.36 is imported, not copied: `is_pod_active`, `is_pod_ready`, the
  Events and the POST of `controlplane.pod_control.RealPodControl`, `podutil.get_pod_from_template`.
"""

from __future__ import annotations

import json
from typing import Any

from controlplane.apiserver import ApiError
from controlplane.controllers.registry import REPLICATION_CONTROLLER
from controlplane.kernel import parse_rfc3339
from controlplane.pod_control import PodControlError
from controlplane.pod_control import RealPodControl as _RealPodControl
from controlplane.podutil import get_pod_from_template as _get_pod_from_template
from controlplane.podutil import get_pod_ready_condition, max_container_restarts

Obj = dict[str, Any]

CREATED_BY_ANNOTATION = "kubernetes.io/created-by"
RC_API_VERSION = REPLICATION_CONTROLLER.api_version
RC_KIND = REPLICATION_CONTROLLER.kind

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}  # any other phase, "" too: 0
_ZERO_TIME = "0001-01-01T00:00:00Z"


# -- ActivePods.Less (spec §10) -----------------------------------------------------------------


def _after_or_zero_key(timestamp: Any) -> tuple[int, float]:
    """`afterOrZero`: a zero time sorts first, then the later time first."""
    if not timestamp or timestamp == _ZERO_TIME:
        return (0, 0.0)
    return (1, -parse_rfc3339(timestamp))


def active_pods_key(pod: Obj) -> tuple[Any, ...]:
    """The sort key of v1.5 `ActivePods.Less` (smaller = deleted first): unassigned before
    assigned; Pending < Unknown < Running; not ready before ready; (both ready) more recently
    ready first; more restarts first; newer first. No deletion cost, no co-location rank, no
    log2 buckets, no UID tie-break, no sidecar restarts (D9)."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    condition = get_pod_ready_condition(pod)
    ready = condition is not None and condition.get("status") == "True"
    # Key 4 compares ready times only between two ready pods: a constant for the not ready.
    ready_time = _after_or_zero_key(condition.get("lastTransitionTime")) if ready and condition else (0, 0.0)
    return (
        1 if spec.get("nodeName") else 0,
        _PHASE_ORDINAL.get(status.get("phase") or "", 0),
        1 if ready else 0,
        ready_time,
        -max_container_restarts(pod),
        _after_or_zero_key((pod.get("metadata") or {}).get("creationTimestamp")),
    )


def sort_active_pods(pods: list[Obj]) -> list[Obj]:
    """`sort.Sort(controller.ActivePods(pods))` as a new list, stable on the input order."""
    return sorted(pods, key=active_pods_key)


# -- availability (pkg/api/resource_helpers.go at K15) ------------------------------------------


def is_ready_condition_available(condition: Obj, min_ready_seconds: float, now: float) -> bool:
    """v1.5 `IsPodAvailable` for a pod whose Ready condition is True: available iff
    `minReadySeconds == 0` or `lastTransitionTime + minReadySeconds` is strictly before `now`
    (D14: v1.36 accepts equality)."""
    if min_ready_seconds == 0:
        return True
    since = condition.get("lastTransitionTime")
    if not since or since == _ZERO_TIME:
        return False
    return parse_rfc3339(since) + min_ready_seconds < now


# -- ControllerRef and the pod from the template (R8.5, §12) -----------------------------------


def new_controller_ref(rc: Obj) -> Obj:
    """The v1.5 ControllerRef of a pod of `rc`: no `blockOwnerDeletion` (D7)."""
    meta = rc.get("metadata") or {}
    return {
        "apiVersion": RC_API_VERSION,
        "kind": RC_KIND,
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
    }


def created_by_annotation(rc: Obj) -> str:
    """`kubernetes.io/created-by`: a v1 `SerializedReference` to `rc` as Go's JSON encoder
    writes it (compact, fields in struct order, a trailing newline; spec §12, the byte layout
    is [I])."""
    meta = rc.get("metadata") or {}
    reference = {
        "kind": RC_KIND,
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": RC_API_VERSION,
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    body = {"kind": "SerializedReference", "apiVersion": "v1", "reference": reference}
    return json.dumps(body, separators=(",", ":")) + "\n"


def get_pod_from_template(template: Obj, rc: Obj, controller_ref: Obj | None) -> Obj:
    """v1.5 `GetPodFromTemplate`: v1.36's pod (same labels, finalizers, generateName, spec),
    with the template's annotations plus `kubernetes.io/created-by`, and ownerReferences only
    when a ControllerRef is given (GC enabled, R8.6). ValueError as v1.36 (no labels)."""
    pod = _get_pod_from_template(template, rc, controller_ref)
    built = pod["metadata"]
    annotations = {**(built.get("annotations") or {}), CREATED_BY_ANNOTATION: created_by_annotation(rc)}
    # Keys in the order of Go's ObjectMeta fields (annotations after labels), as v1.36 builds them.
    metadata: Obj = {}
    for key in ("generateName", "namespace", "labels"):
        if key in built:
            metadata[key] = built[key]
    metadata["annotations"] = annotations
    for key in ("ownerReferences", "finalizers"):
        if key in built:
            metadata[key] = built[key]
    return {**pod, "metadata": metadata}


def validate_controller_ref(ref: Obj) -> None:
    """v1.5 `validateControllerRef`: no check of `blockOwnerDeletion` (which did not exist)."""
    if not ref.get("apiVersion"):
        raise PodControlError("controllerRef has empty APIVersion")
    if not ref.get("kind"):
        raise PodControlError("controllerRef has empty Kind")
    if ref.get("controller") is not True:
        raise PodControlError("controllerRef.Controller is not set")


class RealPodControl(_RealPodControl):
    """v1.5 `RealPodControl`: creates with or without a ControllerRef (`CreatePodsWithControllerRef`
    / `CreatePods`), errors wrapped as `unable to create pods: <err>`; every failed create is a
    FailedCreate Event (no NamespaceTerminating case, R9.5); every failed delete, NotFound too,
    is a FailedDelete Event and an error (R9.4, D11). Patches are v1.36's."""

    async def create_pods(
        self, namespace: str, template: Obj, controller_obj: Obj, controller_ref: Obj | None = None
    ) -> Obj:
        if controller_ref is not None:
            validate_controller_ref(controller_ref)
        try:
            pod = get_pod_from_template(template, controller_obj, controller_ref)
        except ValueError as exc:
            raise PodControlError(str(exc)) from None
        try:
            return await self.create_pod(namespace, pod, controller_obj, controller_ref)
        except ApiError as exc:
            raise PodControlError(f"unable to create pods: {exc.message}", exc) from None

    def records_failed_create(self, exc: ApiError) -> bool:
        return True

    def passes_failed_delete(self, exc: ApiError) -> bool:
        return False

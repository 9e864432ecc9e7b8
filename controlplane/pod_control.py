"""Pod control: how a controller creates, deletes and patches pods (controller_utils.go
`RealPodControl`, spec §8 and §15).

Guarantees
----------
* Every outcome is recorded as an Event on the controller object, as upstream: SuccessfulCreate
  ("Created pod: <name>"), FailedCreate ("Error creating: <err>", not for a NamespaceTerminating
  failure), SuccessfulDelete ("Deleted pod: <name>"), FailedDelete ("Error deleting: <err>", not for
  NotFound).
* A failed delete other than NotFound raises `PodControlError("unable to delete pods: <err>")`;
  NotFound is raised unchanged (the caller ignores it).
* The two version-dependent choices are methods (`records_failed_create`,
  `passes_failed_delete`) so an older controller's pod control overrides just them
  (controlplane.replication.controller_utils).
* `on_write(controller_ref, pod)` is called after every successful create or patch: the consistency
  store's hook (spec §14).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.apiserver import ApiError
from controlplane.apiserver.errors import has_status_cause, is_not_found
from controlplane.events import EventRecorder
from controlplane.podutil import controller_ref, get_pod_from_template

Obj = dict[str, Any]


class PodControlError(Exception):
    """A pod operation failed; `cause` is the API error behind it when there is one."""

    def __init__(self, message: str, cause: ApiError | None = None) -> None:
        super().__init__(message)
        self.cause = cause


def validate_controller_ref(ref: Obj | None) -> None:
    if ref is None:
        raise PodControlError("controllerRef is nil")
    if not ref.get("apiVersion"):
        raise PodControlError("controllerRef has empty APIVersion")
    if not ref.get("kind"):
        raise PodControlError("controllerRef has empty Kind")
    if ref.get("controller") is not True:
        raise PodControlError("controllerRef.Controller is not set to true")
    if ref.get("blockOwnerDeletion") is not True:
        raise PodControlError("controllerRef.BlockOwnerDeletion is not set")


class RealPodControl:
    def __init__(
        self,
        client: Any,
        recorder: EventRecorder,
        on_write: Callable[[Obj, Obj], None] | None = None,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.on_write = on_write

    async def create_pods(self, namespace: str, template: Obj, controller_obj: Obj, controller_ref: Obj) -> Obj:
        validate_controller_ref(controller_ref)
        try:
            pod = get_pod_from_template(template, controller_obj, controller_ref)
        except ValueError as exc:
            raise PodControlError(str(exc)) from None
        return await self.create_pod(namespace, pod, controller_obj, controller_ref)

    async def create_pod(self, namespace: str, pod: Obj, controller_obj: Obj, controller_ref: Obj | None) -> Obj:
        """POST `pod` (already built from the template) and record the outcome as an Event;
        the API error is raised unchanged."""
        try:
            created: Obj = await self.client.create("pods", namespace, pod)
        except ApiError as exc:
            if self.records_failed_create(exc):
                self.recorder.event(controller_obj, "Warning", "FailedCreate", f"Error creating: {exc.message}")
            raise
        self.recorder.event(controller_obj, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
        if self.on_write is not None and controller_ref is not None:
            self.on_write(controller_ref, created)
        return created

    def records_failed_create(self, exc: ApiError) -> bool:
        """Whether a failed create is a FailedCreate Event: not when the namespace is being
        terminated ([M]; older versions override this)."""
        return not has_status_cause(exc, "NamespaceTerminating")

    def passes_failed_delete(self, exc: ApiError) -> bool:
        """Whether a failed delete is raised unchanged, without an Event: NotFound, which the
        caller takes as "already gone" ([M]; older versions override this)."""
        return is_not_found(exc)

    async def delete_pod(self, namespace: str, name: str, controller_obj: Obj) -> None:
        try:
            await self.client.delete("pods", namespace, name)
        except ApiError as exc:
            if self.passes_failed_delete(exc):
                raise
            self.recorder.event(controller_obj, "Warning", "FailedDelete", f"Error deleting: {exc.message}")
            raise PodControlError(f"unable to delete pods: {exc.message}", exc) from None
        self.recorder.event(controller_obj, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")

    async def patch_pod(self, namespace: str, name: str, patch: Obj) -> Obj:
        patched: Obj = await self.client.patch("pods", namespace, name, patch, patch_type="strategic")
        # The port records the write under the patched pod's controllerRef (spec §14): an adopted
        # pod counts for its new owner, a released one for nobody.
        ref = controller_ref(patched)
        if self.on_write is not None and ref is not None:
            self.on_write(ref, patched)
        return patched

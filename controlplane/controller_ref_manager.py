"""Claiming pods: adopt orphans that match, release owned pods that no longer match
(pkg/controller/controller_ref_manager.go, spec §7).

Guarantees
----------
* A pod owned by another controller is never touched.
* An adoption is only attempted after an uncached GET of the controller confirms it still exists
  with the same UID and is not being deleted (`RecheckDeletionTimestamp`), at most once per claim.
* Errors are collected per pod and returned together; NotFound on a patch means the pod is gone and
  is not an error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from controlplane.apiserver import ApiError
from controlplane.apiserver.errors import is_invalid, is_not_found
from controlplane.kernel import EPOCH, parse_rfc3339
from controlplane.labels import Selector
from controlplane.pod_control import RealPodControl
from controlplane.podutil import controller_ref

Obj = dict[str, Any]


class ClaimError(Exception):
    """One or more claims failed (an aggregate, as upstream `utilerrors.NewAggregate`)."""

    def __init__(self, errors: list[Exception]) -> None:
        self.errors = errors
        # aggregate.Error(): identical messages once each; brackets only for several.
        messages = list(dict.fromkeys(str(e) for e in errors))
        super().__init__(messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]")


class PodControllerRefManager:
    """ClaimPods; `ReplicaSetControllerRefManager` below claims ReplicaSets with the same
    `ClaimObject` rules (upstream's BaseControllerRefManager, shared by both)."""

    object_kind = "Pod"  # what adopt/release errors call the claimed object

    def __init__(
        self,
        pod_control: RealPodControl,
        controller: Obj,
        selector: Selector,
        api_version: str,
        kind: str,
        can_adopt: Callable[[], Awaitable[Exception | None]],
    ) -> None:
        self.pod_control = pod_control
        self.controller = controller
        self.selector = selector
        self.api_version = api_version
        self.kind = kind
        self._can_adopt = can_adopt
        self._can_adopt_result: tuple[Exception | None] | None = None
        self.adopted: list[str] = []
        self.released: list[str] = []

    async def can_adopt(self) -> Exception | None:
        # sync.Once: the uncached GET happens at most once per claim, and only if needed.
        if self._can_adopt_result is None:
            self._can_adopt_result = (await self._can_adopt(),)
        return self._can_adopt_result[0]

    async def claim_pods(self, pods: list[Obj]) -> tuple[list[Obj], ClaimError | None]:
        claimed: list[Obj] = []
        errors: list[Exception] = []
        uid = self.controller["metadata"]["uid"]
        matches = self.selector.matches
        for pod in pods:
            # claim_object's first cases inline (no coroutine per pod): the common case of a
            # sync is a pod we own that still matches, or one another controller owns.
            ref = controller_ref(pod)
            if ref is not None:
                if ref.get("uid") != uid:
                    continue
                if matches(pod["metadata"].get("labels")):
                    claimed.append(pod)
                    continue
            ok, err = await self.claim_object(pod)
            if err is not None:
                errors.append(err)
                continue
            if ok:
                claimed.append(pod)
        return claimed, (ClaimError(errors) if errors else None)

    async def claim_object(self, pod: Obj) -> tuple[bool, Exception | None]:
        controller_meta = self.controller["metadata"]
        ref = controller_ref(pod)
        matches = self.selector.matches(pod["metadata"].get("labels"))
        if ref is not None:
            if ref.get("uid") != controller_meta["uid"]:
                return False, None
            if matches:
                return True, None
            if controller_meta.get("deletionTimestamp"):
                return False, None
            try:
                await self.release_pod(pod)
            except ApiError as exc:
                return False, (None if is_not_found(exc) else exc)
            return False, None
        if controller_meta.get("deletionTimestamp") or not matches:
            return False, None
        if pod["metadata"].get("deletionTimestamp"):
            return False, None
        namespace = controller_meta.get("namespace", "")
        if namespace and namespace != pod["metadata"].get("namespace"):
            return False, None
        try:
            await self.adopt_pod(pod)
        except ApiError as exc:
            return False, (None if is_not_found(exc) else exc)
        except AdoptError as exc:
            return False, exc
        return True, None

    async def adopt_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        err = await self.can_adopt()
        if err is not None:
            what = f"{self.object_kind} {meta['namespace']}/{meta['name']} ({meta['uid']})"
            raise AdoptError(f"can't adopt {what}: {err}")
        controller_meta = self.controller["metadata"]
        patch = {
            "metadata": {
                "ownerReferences": [
                    {
                        "apiVersion": self.api_version,
                        "kind": self.kind,
                        "name": controller_meta["name"],
                        "uid": controller_meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
                "uid": meta["uid"],
            }
        }
        await self._patch_object(meta["namespace"], meta["name"], patch)
        self.adopted.append(meta["name"])

    async def release_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        patch = {
            "metadata": {
                "uid": meta["uid"],
                "ownerReferences": [{"$patch": "delete", "uid": self.controller["metadata"]["uid"]}],
            }
        }
        try:
            await self._patch_object(meta["namespace"], meta["name"], patch)
        except ApiError as exc:
            # The pod is gone, or no longer ours (422): either way, nothing to release.
            if is_not_found(exc) or is_invalid(exc):
                return
            raise
        self.released.append(meta["name"])


    async def _patch_object(self, namespace: str, name: str, patch: Obj) -> Obj:
        """The strategic merge PATCH of an adoption or release (RealPodControl.PatchPod)."""
        return await self.pod_control.patch_pod(namespace, name, patch)


class ReplicaSetControllerRefManager(PodControllerRefManager):
    """`NewReplicaSetControllerRefManager(...).ClaimReplicaSets`: the same claim rules over
    ReplicaSets, adopting and releasing them by a strategic merge PATCH on `replicasets`
    (RealRSControl.PatchReplicaSet; deployment spec D5.2). `rs_control` is the controller's
    client, `resource` the ReplicaSets' API resource."""

    object_kind = "ReplicaSet"

    def __init__(
        self,
        rs_control: Any,
        controller: Obj,
        selector: Selector,
        api_version: str,
        kind: str,
        can_adopt: Callable[[], Awaitable[Exception | None]],
        resource: str,
    ) -> None:
        super().__init__(rs_control, controller, selector, api_version, kind, can_adopt)
        self.rs_control = rs_control
        self.resource = resource

    async def claim_replica_sets(self, sets: list[Obj]) -> tuple[list[Obj], ClaimError | None]:
        return await self.claim_pods(sets)

    async def _patch_object(self, namespace: str, name: str, patch: Obj) -> Obj:
        patched: Obj = await self.rs_control.patch(self.resource, namespace, name, patch, patch_type="strategic")
        return patched


class AdoptError(Exception):
    pass


def recheck_deletion_timestamp(
    get_object: Callable[[], Awaitable[Obj]], original: Obj
) -> Callable[[], Awaitable[Exception | None]]:
    """`RecheckDeletionTimestamp(getObject)`: an uncached GET; fails if the object was replaced
    (other UID) or is being deleted."""

    async def can_adopt() -> Exception | None:
        meta = original["metadata"]
        try:
            fresh = await get_object()
        except ApiError as exc:
            return Exception(f"can't recheck DeletionTimestamp: {exc}")
        fresh_meta = fresh["metadata"]
        if fresh_meta["uid"] != meta["uid"]:
            # The controller's getFresh returns this as an error, so it carries the same prefix.
            return Exception(
                f"can't recheck DeletionTimestamp: original {original.get('kind', 'ReplicaSet')} "
                f"{meta['namespace']}/{meta['name']} is gone: got uid {fresh_meta['uid']}, wanted {meta['uid']}"
            )
        if fresh_meta.get("deletionTimestamp"):
            return Exception(
                f"{meta['namespace']}/{meta['name']} has just been deleted at "
                f"{go_time(fresh_meta['deletionTimestamp'])}"
            )
        return None

    return can_adopt


def go_time(timestamp: str) -> str:
    """A metav1.Time as Go's `%v` prints it: "2026-01-01 00:00:10 +0000 UTC"."""
    from datetime import timedelta

    return (EPOCH + timedelta(seconds=parse_rfc3339(timestamp))).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")

"""ControllerRef handling as v1.5 did it (`pkg/controller/controller_ref_manager.go` at K15, spec
v1.5 §8): `Classify`, `AdoptPod`, `ReleasePod`. Used only while the garbage collector is enabled.

Guarantees
----------
* `classify` is one pass in the given (lister) order; inactive pods are dropped; a pod controlled
  by someone else (compared by UID only) is ignored (R8.2).
* `adopt_pod` refuses without an API call when the *cached* controller has a deletionTimestamp
  (no uncached re-check, D5); otherwise one strategic-merge PATCH whose ownerReference has no
  `blockOwnerDeletion` (R8.3, D7).
* `release_pod` is v1.36's (same patch; NotFound and Invalid swallowed), reused, and runs even
  while the controller is being deleted: the caller does not check (R8.4, D6).
"""

from __future__ import annotations

from typing import Any

from controlplane.controller_ref_manager import AdoptError
from controlplane.controller_ref_manager import PodControllerRefManager as _PodControllerRefManager
from controlplane.labels import Selector
from controlplane.pod_control import RealPodControl
from controlplane.podutil import controller_ref, is_pod_active
from controlplane.replication.controller_utils import RC_API_VERSION, RC_KIND, new_controller_ref

Obj = dict[str, Any]


async def _never_asked() -> Exception | None:  # v1.5 has no RecheckDeletionTimestamp
    return None


class PodControllerRefManager(_PodControllerRefManager):
    def __init__(self, pod_control: RealPodControl, controller: Obj, selector: Selector) -> None:
        super().__init__(pod_control, controller, selector, RC_API_VERSION, RC_KIND, _never_asked)

    def classify(self, pods: list[Obj]) -> tuple[list[Obj], list[Obj], list[Obj]]:
        """`Classify`: (controlled and matching, orphans that match, controlled but not matching)."""
        uid = self.controller["metadata"]["uid"]
        matches = self.selector.matches
        controlled: list[Obj] = []
        orphans: list[Obj] = []
        not_matching: list[Obj] = []
        for pod in pods:
            if not is_pod_active(pod):
                continue
            labels = pod["metadata"].get("labels")
            ref = controller_ref(pod)
            if ref is not None:
                if ref.get("uid") == uid:
                    (controlled if matches(labels) else not_matching).append(pod)
            elif matches(labels):
                orphans.append(pod)
        return controlled, orphans, not_matching

    async def adopt_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        if self.controller["metadata"].get("deletionTimestamp"):
            # Upstream's message, typo included.
            raise AdoptError(
                f"cancel the adopt attempt for pod {meta['namespace']}_{meta['name']}_{meta['uid']} "
                "because the controlller is being deleted"
            )
        patch = {"metadata": {"ownerReferences": [new_controller_ref(self.controller)], "uid": meta["uid"]}}
        await self.pod_control.patch_pod(meta["namespace"], meta["name"], patch)
        self.adopted.append(meta["name"])

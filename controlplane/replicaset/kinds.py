"""What differs between the ReplicaSet controller and the ReplicationController controller.

Upstream runs one controller for both, "as if ReplicationController were just an older API
version of ReplicaSet" (pkg/controller/replication/conversion.go, spec §16), converting RC objects
to RS objects at the informer, lister and client boundaries. Our objects are plain dicts of the same
shape for both kinds except the selector and `status.terminatingReplicas`, so the adapter reduces to
this description of the kind: the controller code never branches on the kind itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controlplane import labels
from controlplane.labels import Selector

Obj = dict[str, Any]


@dataclass(frozen=True)
class ControllerKind:
    name: str  # controller name in reports and faults: "replicaset", "replicationcontroller"
    kind: str  # "ReplicaSet"
    api_version: str  # ownerReferences apiVersion
    resource: str  # API resource (plural)
    group_resource: str  # GroupResource.String(): "replicasets.apps" (consistency store, metrics)
    queue_name: str
    component: str  # Event source and client user agent
    enable_status_terminating_replicas: bool
    selector: Callable[[Obj], Selector]  # spec.selector for syncing; ValueError if invalid
    lister_selector: Callable[[Obj], Selector | None]  # None: never matches a pod (GetPodControllers)

    def __reduce__(self) -> str | tuple[Any, ...]:
        # The kinds below are compared by identity (`kind is REPLICA_SET`): a snapshot
        # (controlplane.snapshot) keeps them the module's objects.
        for name in ("REPLICA_SET", "REPLICATION_CONTROLLER"):
            if globals().get(name) is self:
                return name
        return (ControllerKind, tuple(getattr(self, f) for f in self.__dataclass_fields__))


def _rs_selector(rs: Obj) -> Selector:
    return labels.selector_from_label_selector(rs["spec"].get("selector"))


def _rs_lister_selector(rs: Obj) -> Selector | None:
    # GetPodReplicaSets: skip RSs whose selector does not convert or is empty.
    try:
        selector = _rs_selector(rs)
    except ValueError:
        return None
    return None if selector.empty() else selector


def _rc_selector(rc: Obj) -> Selector:
    # conversion.go: a non-nil map becomes LabelSelector{matchLabels: map}; nil matches nothing.
    selector = rc["spec"].get("selector")
    return labels.selector_from_label_selector(None if selector is None else {"matchLabels": selector})


def _rc_lister_selector(rc: Obj) -> Selector | None:
    # GetPodControllers: labels.Set(selector), RCs with an empty selector are skipped.
    selector = rc["spec"].get("selector") or {}
    return labels.selector_from_set(selector) if selector else None


REPLICA_SET = ControllerKind(
    name="replicaset",
    kind="ReplicaSet",
    api_version="apps/v1",
    resource="replicasets",
    group_resource="replicasets.apps",
    queue_name="replicaset",
    component="replicaset-controller",
    enable_status_terminating_replicas=True,
    selector=_rs_selector,
    lister_selector=_rs_lister_selector,
)

REPLICATION_CONTROLLER = ControllerKind(
    name="replicationcontroller",
    kind="ReplicationController",
    api_version="v1",
    resource="replicationcontrollers",
    group_resource="replicationcontrollers",
    queue_name="replicationmanager",
    component="replication-controller",
    # "because the RC API has no .status.terminatingReplicas field" (spec §16)
    enable_status_terminating_replicas=False,
    selector=_rc_selector,
    lister_selector=_rc_lister_selector,
)

"""What differs between the ReplicaSet controller and the ReplicationController controller.

Upstream runs one controller for both, "as if ReplicationController were just an older API
version of ReplicaSet" (pkg/controller/replication/conversion.go, spec §16), converting RC objects
to RS objects at the informer, lister and client boundaries. Our objects are plain dicts of the same
shape for both kinds except the selector and `status.terminatingReplicas`, so the adapter reduces to
this description of the kind: the controller code never branches on the kind itself. The
kind's identity (name, resource, queue, component) is its entry in the controller registry
(controlplane.controllers.registry); the adapter adds what the shared code must do differently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controlplane import labels
from controlplane.controllers import registry
from controlplane.controllers.registry import ControllerSpec
from controlplane.labels import Selector

Obj = dict[str, Any]


@dataclass(frozen=True)
class ControllerKind:
    """The adapter of one kind: its registry entry (`spec`: name, kind, resource, queue name,
    component, read through the properties below) and what the controller's code must do
    differently for it."""

    spec: ControllerSpec
    enable_status_terminating_replicas: bool
    selector: Callable[[Obj], Selector]  # spec.selector for syncing; ValueError if invalid
    lister_selector: Callable[[Obj], Selector | None]  # None: never matches a pod (GetPodControllers)

    @property
    def name(self) -> str:
        """The controller's name in reports and faults: "replicaset", "replicationcontroller"."""
        return self.spec.name

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def api_version(self) -> str:
        """The ownerReferences apiVersion."""
        return self.spec.api_version

    @property
    def resource(self) -> str:
        return self.spec.resource

    @property
    def group_resource(self) -> str:
        """GroupResource.String(): "replicasets.apps" (consistency store, metrics)."""
        return self.spec.group_resource

    @property
    def queue_name(self) -> str:
        return self.spec.queue_name

    @property
    def component(self) -> str:
        """The Event source and client user agent."""
        return self.spec.component

    def __reduce__(self) -> str | tuple[Any, ...]:
        # The kinds below are compared by identity (`kind is REPLICA_SET`): a snapshot
        # (controlplane.session.timetravel.snapshot) keeps them the module's objects.
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
    spec=registry.REPLICA_SET,
    enable_status_terminating_replicas=True,
    selector=_rs_selector,
    lister_selector=_rs_lister_selector,
)

REPLICATION_CONTROLLER = ControllerKind(
    spec=registry.REPLICATION_CONTROLLER,
    # "because the RC API has no .status.terminatingReplicas field" (spec §16)
    enable_status_terminating_replicas=False,
    selector=_rc_selector,
    lister_selector=_rc_lister_selector,
)

"""The controllers the simulation runs: their registry (`registry`: one `ControllerSpec` per
controller, with its versions, sync stages and factory), the stage tables (`stages`), and the
runtime every controller is built on (`runtime`). docs/architecture.md, "How to add a
controller", says how they fit."""

from controlplane.controllers.registry import (
    CONTROLLERS,
    REGISTRY,
    ControllerSpec,
    ControllerVersion,
    OwnedKind,
    Registry,
    by_kind,
    by_name,
    by_queue,
    by_resource,
)
from controlplane.controllers.stages import SyncStage

__all__ = [
    "CONTROLLERS",
    "REGISTRY",
    "ControllerSpec",
    "ControllerVersion",
    "OwnedKind",
    "Registry",
    "SyncStage",
    "by_kind",
    "by_name",
    "by_queue",
    "by_resource",
]

"""The controller registry: every controller the simulation can run, declared once.

A `ControllerSpec` says what a controller is called (`name`, the word reports, faults and
`config.controllers` / `config.controllerVersion` use), which API kind it controls (`kind`,
`resource`, `group`, `api_version`), how it shows itself (`queue_name`, `component`: the Event
source and the client's user agent), which kinds it creates and owns (`owns`), and which versions
of it exist (`versions`: each with its factory and the stages of its sync). Every other module
that needs to know "which controllers are there" reads `CONTROLLERS` or one of the lookups below
instead of spelling a kind.

Nothing in a spec assumes pods: `owns` lists the children's kinds, so a controller that owns
ReplicaSets (the Deployment controller) is declared like the two below::

    DEPLOYMENT = ControllerSpec(
        name="deployment",
        kind="Deployment",
        resource="deployments",
        group="apps",
        api_version="apps/v1",
        queue_name="deployment",
        component="deployment-controller",
        owns=(OwnedKind("ReplicaSet", "replicasets", "apps/v1"),),
        versions=(ControllerVersion("v1.36", "controlplane.deployment.deployment_controller:new_controller",
                                    DEPLOYMENT_STAGES, DEPLOYMENT_WORKER),),
    )

and appended to `CONTROLLERS` (docs/architecture.md, "How to add a controller").

Guarantees
----------
* `CONTROLLERS` is ordered, and every list derived from it keeps that order (the garbage
  collector's informers start in it, the fault swarm draws from it): a new controller goes at the
  end, so the worlds of today's scenarios stay byte-identical.
* Names, kinds, resources and queue names are unique across `CONTROLLERS` (the lookups are maps).
* A spec is pure data: this module imports no controller. A version's factory is named by
  `"module:attribute"` and imported when first called, so a controller's own modules may read
  the registry without an import circle.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controlplane.controllers.stages import (
    DEPLOYMENT_STAGES,
    DEPLOYMENT_WORKER,
    REPLICA_SET_STAGES,
    REPLICA_SET_WORKER,
    REPLICATION_MANAGER_STAGES,
    REPLICATION_MANAGER_WORKER,
    SyncStage,
)


@dataclass(frozen=True)
class OwnedKind:
    """A kind of object a controller creates and owns (its ControllerRef points at the owner)."""

    kind: str  # "Pod"
    resource: str  # "pods"
    api_version: str  # "v1"


@dataclass(frozen=True)
class ControllerVersion:
    """One `config.controllerVersion` choice of a controller.

    `factory` names (`"module:attribute"`) a callable
    `(kernel, client, config, *, trace, flags) -> controller`: `config` is the controller's
    knobs (`controlplane.controllers.config.ControllerConfig`), `flags` the scenario's config mapping
    (for the flags of that version, e.g. v1.5's `enableGarbageCollector`). The controller it
    returns is built on `controlplane.controllers.runtime.ControllerRuntime`."""

    version: str  # "v1.36"
    factory: str  # "controlplane.replicaset.replica_set:new_replica_set_controller"
    stages: tuple[SyncStage, ...]  # the stages of its sync, in upstream's order
    worker_source: str  # the upstream line of its worker loop (processNextWorkItem)
    # The scenario config keys its factory reads as flags of that version (v1.5's
    # kube-controller-manager flags): a scenario may set them only while a version reading them runs.
    flags: tuple[str, ...] = ()
    # The words the sync inspector tells its stages in (the page's narration of a sync): "v1.36"
    # (the ReplicaSet controller's sync), "v1.5" (the v1.5 ReplicationManager's), "rollout" (the
    # Deployment controller's). Two versions share one when their stages are told alike.
    narration: str = "v1.36"

    def new(self, kernel: Any, client: Any, config: Any, *, trace: Any, flags: Mapping[str, Any]) -> Any:
        """A new controller of this version (not started)."""
        module, _, attribute = self.factory.partition(":")
        build = getattr(importlib.import_module(module), attribute)
        return build(kernel, client, config, trace=trace, flags=flags)

    @property
    def stage_names(self) -> tuple[str, ...]:
        return tuple(stage.name for stage in self.stages)


@dataclass(frozen=True)
class ControllerSpec:
    """One controller, declared once (see the module docstring). `versions[0]` is the default."""

    name: str  # in reports, faults and config: "replicaset"
    kind: str  # the kind it controls: "ReplicaSet"
    resource: str  # its API resource (plural): "replicasets"
    group: str  # its API group, "" for the core group
    api_version: str  # ownerReferences apiVersion of its objects: "apps/v1"
    queue_name: str  # its workqueue's name (trace records, metrics): "replicaset"
    component: str  # Event source and client user agent: "replicaset-controller"
    owns: tuple[OwnedKind, ...]  # the kinds of its children
    versions: tuple[ControllerVersion, ...]
    # On in a scenario that does not say `config.controllers`. A controller added later is off
    # by default, so that today's scenarios keep their reports byte for byte: the report's
    # `objects`, the garbage collector's informers and the fault swarm's draws read the
    # controllers a world runs or runs by default (`Registry.in_world`), not every spec.
    enabled_by_default: bool = True

    @property
    def group_resource(self) -> str:
        """`GroupResource.String()`: "replicasets.apps", "replicationcontrollers"."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def default_version(self) -> ControllerVersion:
        return self.versions[0]

    @property
    def version_names(self) -> tuple[str, ...]:
        return tuple(v.version for v in self.versions)

    def version(self, name: str) -> ControllerVersion:
        """The version called `name`; KeyError when this controller has none."""
        for version in self.versions:
            if version.version == name:
                return version
        raise KeyError(f"{self.name} has no version {name}")

    def __reduce__(self) -> str | tuple[Any, ...]:
        # A registered spec stays the registry's object through a snapshot (controlplane.session.timetravel.snapshot).
        if any(spec is self for spec in CONTROLLERS):
            return (by_name, (self.name,))
        return (ControllerSpec, tuple(getattr(self, f) for f in self.__dataclass_fields__))


_PODS = OwnedKind("Pod", "pods", "v1")
_V1_36_REPLICA_SET = ControllerVersion(
    "v1.36", "controlplane.replicaset.replica_set:new_replica_set_controller", REPLICA_SET_STAGES, REPLICA_SET_WORKER
)

# kube-controller-manager v1.5's --enable-garbage-collector and
# --replication-controller-lookup-cache-size, as the scenario's config spells them.
_V1_5_FLAGS = ("enableGarbageCollector", "lookupCacheSize")

REPLICA_SET = ControllerSpec(
    name="replicaset",
    kind="ReplicaSet",
    resource="replicasets",
    group="apps",
    api_version="apps/v1",
    queue_name="replicaset",
    component="replicaset-controller",
    owns=(_PODS,),
    versions=(_V1_36_REPLICA_SET,),
)

REPLICATION_CONTROLLER = ControllerSpec(
    name="replicationcontroller",
    kind="ReplicationController",
    resource="replicationcontrollers",
    group="",
    api_version="v1",
    queue_name="replicationmanager",  # upstream's name for the RC queue
    component="replication-controller",
    owns=(_PODS,),
    versions=(
        # v1.36: the ReplicaSet controller through its RC adapter (controlplane.replicaset.kinds).
        ControllerVersion(
            "v1.36",
            "controlplane.replicaset.replica_set:new_replication_controller_adapter",
            REPLICA_SET_STAGES,
            REPLICA_SET_WORKER,
        ),
        # v1.5: the standalone ReplicationManager; v1.5-late its late-1.5 master variant.
        ControllerVersion(
            "v1.5",
            "controlplane.replication.replication_controller:new_replication_manager",
            REPLICATION_MANAGER_STAGES,
            REPLICATION_MANAGER_WORKER,
            _V1_5_FLAGS,
            narration="v1.5",
        ),
        ControllerVersion(
            "v1.5-late",
            "controlplane.replication.replication_controller:new_late_replication_manager",
            REPLICATION_MANAGER_STAGES,
            REPLICATION_MANAGER_WORKER,
            _V1_5_FLAGS,
            narration="v1.5",
        ),
    ),
)

DEPLOYMENT = ControllerSpec(
    name="deployment",
    kind="Deployment",
    resource="deployments",
    group="apps",
    api_version="apps/v1",
    queue_name="deployment",
    component="deployment-controller",
    owns=(OwnedKind("ReplicaSet", "replicasets", "apps/v1"),),
    versions=(
        ControllerVersion(
            "v1.36",
            "controlplane.deployment.deployment_controller:new_controller",
            DEPLOYMENT_STAGES,
            DEPLOYMENT_WORKER,
            narration="rollout",
        ),
    ),
    enabled_by_default=False,  # `config.controllers: [..., deployment]` turns it on
)

CONTROLLERS: tuple[ControllerSpec, ...] = (REPLICA_SET, REPLICATION_CONTROLLER, DEPLOYMENT)


@dataclass(frozen=True)
class HostedSpec:
    """A controller the world hosts that is not ctrlscope's own: a user's code, declared by a
    scenario key (`scenario_key`) rather than by a kind. It controls whatever the user's code
    watches, so it has no kind, resource or stages of its own; its requests carry the User-Agent
    its scenario entry gives (`component` is the default's prefix). `factory` names
    (`"module:attribute"`) the class that hosts every entry of the key in one world (imported
    only for a world that has one)."""

    name: str  # "operator": in error records and docs
    scenario_key: str  # "operators": the scenario's key
    component: str  # "kopf": the default User-Agent's prefix (`kopf/<module name>`)
    factory: str  # "controlplane.operators.host:OperatorHost"

    def host_class(self) -> Any:
        module, _, attribute = self.factory.partition(":")
        return getattr(importlib.import_module(module), attribute)


# A user's kopf operator run inside the world (docs/operators.md): `operators: [{module, ...}]`.
OPERATOR = HostedSpec(
    name="operator",
    scenario_key="operators",
    component="kopf",
    factory="controlplane.operators.host:OperatorHost",
)
HOSTED: tuple[HostedSpec, ...] = (OPERATOR,)


class Registry:
    """Lookups over an ordered set of specs; ValueError when two share a name, kind, resource
    or queue name. `REGISTRY` is the simulation's; a test may build another with a spec of its own."""

    def __init__(self, specs: tuple[ControllerSpec, ...]) -> None:
        self.specs = specs
        self._by_name = _unique(specs, "name")
        self._by_kind = _unique(specs, "kind")
        self._by_resource = _unique(specs, "resource")
        self._by_queue = _unique(specs, "queue_name")

    def by_name(self, name: str) -> ControllerSpec:
        """The controller called `name` ("replicaset"); KeyError when none is."""
        return self._by_name[name]

    def by_kind(self, kind: str) -> ControllerSpec:
        """The controller of the kind `kind` ("ReplicaSet"); KeyError when none is."""
        return self._by_kind[kind]

    def by_resource(self, resource: str) -> ControllerSpec:
        """The controller of the API resource `resource` ("replicasets"); KeyError when none is."""
        return self._by_resource[resource]

    def by_queue(self, queue_name: str) -> ControllerSpec:
        """The controller whose workqueue is called `queue_name` ("replicationmanager"); KeyError
        when none is."""
        return self._by_queue[queue_name]

    def names(self) -> tuple[str, ...]:
        """Every controller's name, in registry order."""
        return tuple(self._by_name)

    def default_names(self) -> tuple[str, ...]:
        """The controllers a scenario runs when its config does not name them, in registry order."""
        return tuple(spec.name for spec in self.specs if spec.enabled_by_default)

    def defaults(self) -> Registry:
        """The registry of the controllers on by default (what the fault swarm draws from)."""
        return Registry(tuple(spec for spec in self.specs if spec.enabled_by_default))

    def in_world(self, running: Iterable[str]) -> Registry:
        """The registry of a world running the controllers `running`: those, and those on by
        default (a world that turns a default one off still reports its kind and still has the
        garbage collector watch its resources, as before the registry had an off-by-default
        controller), in registry order."""
        names = set(running)
        return Registry(tuple(spec for spec in self.specs if spec.enabled_by_default or spec.name in names))

    def stage_groups(self) -> list[dict[str, Any]]:
        """The sync stages of every controller version, grouped by stage table (the breakpoint
        form shows the groups of the versions that run): `controllers` and `versions`
        (space-separated, in registry order: the controllers and versions that share one stage
        table), `stages` [(name, function)]."""
        groups: list[tuple[Any, list[str], list[str]]] = []
        for spec in self.specs:
            for version in spec.versions:
                for stages, controllers, versions in groups:
                    if stages is version.stages:
                        if spec.name not in controllers:
                            controllers.append(spec.name)
                        if version.version not in versions:
                            versions.append(version.version)
                        break
                else:
                    groups.append((version.stages, [spec.name], [version.version]))
        return [
            {
                "controllers": " ".join(controllers),
                "versions": " ".join(versions),
                "stages": [(stage.name, stage.function) for stage in stages],
            }
            for stages, controllers, versions in groups
        ]

    def stage_names(self) -> tuple[str, ...]:
        """Every stage name a `sync.stage` record may carry, in the versions' order, once each."""
        return tuple(dict.fromkeys(name for group in self.stage_groups() for name, _ in group["stages"]))

    def kinds(self) -> tuple[str, ...]:
        """Every controller's kind, in registry order."""
        return tuple(self._by_kind)

    def resources(self) -> tuple[str, ...]:
        """Every controller's API resource, in registry order."""
        return tuple(self._by_resource)

    def versions_reading(self, flag: str) -> tuple[str, ...]:
        """The versions (of any controller, once each, in registry order) whose factory reads the
        scenario config key `flag` (`ControllerVersion.flags`)."""
        return tuple(dict.fromkeys(v.version for spec in self.specs for v in spec.versions if flag in v.flags))

    def sync_stages(self) -> dict[str, tuple[SyncStage, ...]]:
        """The stages of each version's sync by its `config.controllerVersion` value, in registry
        order; a version name two controllers share (v1.36: the ReplicaSet controller and its RC
        adapter) maps to the first's stages."""
        stages: dict[str, tuple[SyncStage, ...]] = {}
        for spec in self.specs:
            for version in spec.versions:
                stages.setdefault(version.version, version.stages)
        return stages

    def sync_versions(self) -> dict[tuple[str, str], ControllerVersion]:
        """Every controller version by (controller name, version name), in registry order: the
        stage table a `sync.start` record's controller and version name (the sync inspector's
        key: one version name, v1.36, is two controllers' with two stage tables)."""
        return {(spec.name, version.version): version for spec in self.specs for version in spec.versions}

    def children_of(self, name: str) -> tuple[ControllerSpec, ...]:
        """The controllers whose kind controller `name` owns (a Deployment's ReplicaSets' controller),
        in registry order; () for a controller whose children are pods."""
        owned = {kind.kind for kind in self.by_name(name).owns}
        return tuple(spec for spec in self.specs if spec.kind in owned)

    def managed_resources(self) -> tuple[str, ...]:
        """Every resource a controller owns objects of or controls, once each, in registry order
        (each controller's children first, then its own): the owner graph's resources."""
        return tuple(
            dict.fromkeys(r for spec in self.specs for r in (*(owned.resource for owned in spec.owns), spec.resource))
        )


def _unique(specs: tuple[ControllerSpec, ...], field: str) -> dict[str, ControllerSpec]:
    found: dict[str, ControllerSpec] = {}
    for spec in specs:
        value = getattr(spec, field)
        if value in found:
            raise ValueError(f"controllers {found[value].name} and {spec.name} have the same {field} {value!r}")
        found[value] = spec
    return found


REGISTRY = Registry(CONTROLLERS)
# The stages of each version's sync, as its `sync.stage` records name them (the sync inspector's
# and the breakpoint form's table): upstream function, file at the pinned commit, spec rule.
SYNC_STAGES: dict[str, tuple[SyncStage, ...]] = REGISTRY.sync_stages()
# The same, keyed by (controller, version): what the sync inspector links a sync's stages to.
SYNC_VERSIONS: dict[tuple[str, str], ControllerVersion] = REGISTRY.sync_versions()


def by_name(name: str) -> ControllerSpec:
    """The registered controller called `name` ("replicaset"); KeyError when none is."""
    return REGISTRY.by_name(name)


def by_kind(kind: str) -> ControllerSpec:
    """The registered controller of the kind `kind` ("ReplicaSet"); KeyError when none is."""
    return REGISTRY.by_kind(kind)


def by_resource(resource: str) -> ControllerSpec:
    """The registered controller of the API resource `resource` ("replicasets"); KeyError when
    none is."""
    return REGISTRY.by_resource(resource)


def by_queue(queue_name: str) -> ControllerSpec:
    """The registered controller whose workqueue is `queue_name` ("replicationmanager"); KeyError
    when none is."""
    return REGISTRY.by_queue(queue_name)

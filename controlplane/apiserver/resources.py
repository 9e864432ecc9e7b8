"""The resources the simulated API server serves: plural name → kind, group, version, scope.

This is the registry that discovery (`/api/v1`, `/apis/apps/v1`) is built from, and the place
every other module looks up how a resource is spelled: `pods` is the v1 `Pod`, listed as
`PodList`, short name `po`; `replicasets` is the apps/v1 `ReplicaSet`, whose errors say
`replicasets.apps` and `ReplicaSet.apps`.

Guarantees
----------
* `RESOURCES` is ordered as upstream discovery lists them (core group, then apps).
* `lookup(plural)` raises a 404 `ApiError` for a resource the server does not serve, as the
  real server answers "the server could not find the requested resource".
* `for_kind(api_version, kind)` maps an object's `apiVersion`/`kind` (an ownerReference, a
  manifest) back to its resource, or None.
"""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.apiserver.errors import REASON_NOT_FOUND, ApiError


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """How one resource is named and scoped (an APIResource of discovery)."""

    plural: str
    singular: str
    kind: str
    group: str
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    # Written under an etcd lease of the server's --event-ttl (the registry's TTLFunc): Events.
    ttl: bool = False

    @property
    def api_version(self) -> str:
        """`v1` for the core group, `apps/v1` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def group_resource(self) -> str:
        """`schema.GroupResource.String()`: `pods`, `replicasets.apps` (NotFound, Conflict)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def group_kind(self) -> str:
        """`schema.GroupKind.String()`: `Pod`, `ReplicaSet.apps` (Invalid)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def subresource_group_resource(self, subresource: str) -> str:
        """`replicasets/scale.apps`: how upstream names a subresource in a Conflict."""
        name = f"{self.plural}/{subresource}"
        return f"{name}.{self.group}" if self.group else name


VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

RESOURCES: dict[str, ResourceInfo] = {
    info.plural: info
    for info in (
        ResourceInfo("pods", "pod", "Pod", "", "v1", True, ("po",), ("all",), ("status", "binding", "eviction")),
        ResourceInfo(
            "replicationcontrollers",
            "replicationcontroller",
            "ReplicationController",
            "",
            "v1",
            True,
            ("rc",),
            ("all",),
            ("status", "scale"),
        ),
        ResourceInfo("events", "event", "Event", "", "v1", True, ("ev",), ttl=True),
        ResourceInfo("nodes", "node", "Node", "", "v1", False, ("no",), (), ("status",)),
        ResourceInfo("namespaces", "namespace", "Namespace", "", "v1", False, ("ns",), (), ("status", "finalize")),
        ResourceInfo(
            "replicasets", "replicaset", "ReplicaSet", "apps", "v1", True, ("rs",), ("all",), ("status", "scale")
        ),
        ResourceInfo(
            "deployments", "deployment", "Deployment", "apps", "v1", True, ("deploy",), ("all",), ("status", "scale")
        ),
    )
}

_BY_KIND: dict[tuple[str, str], ResourceInfo] = {(info.group, info.kind): info for info in RESOURCES.values()}


def lookup(plural: str) -> ResourceInfo:
    """The resource served under `plural`; 404 NotFound if the server does not serve it."""
    info = RESOURCES.get(plural)
    if info is None:
        raise ApiError(404, REASON_NOT_FOUND, "the server could not find the requested resource")
    return info


def for_kind(api_version: str, kind: str) -> ResourceInfo | None:
    """The resource of objects with this `apiVersion` and `kind`, or None if not served."""
    group, _, version = api_version.rpartition("/")
    info = _BY_KIND.get((group, kind))
    if info is None or info.version != version:
        return None
    return info

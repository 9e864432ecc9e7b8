"""Per-resource REST strategies: defaulting, create/update preparation, validation, deletion.

Counterpart of upstream's `pkg/apis/*/v1/defaults.go` and `pkg/registry/<group>/<resource>/
strategy.go`: what the API server does to an object of each kind beyond generic storage.

Guarantees
----------
* Defaulting is upstream's `SetDefaults_*` for the fields the simulator uses: pods get
  `restartPolicy: Always`, `terminationGracePeriodSeconds: 30`, `dnsPolicy: ClusterFirst`,
  `schedulerName: default-scheduler`, `securityContext: {}`, `enableServiceLinks: true` and
  container defaults (`imagePullPolicy`, `terminationMessagePath/Policy`, `resources`); pod
  templates get the same spec defaults; ReplicaSets and ReplicationControllers get
  `spec.replicas: 1`; RCs copy template labels into an empty selector and empty labels.
  Fields admission plugins would add (service account volume, default tolerations, priority)
  are not added.
* Strategies only ever mutate the top-level dict and the `metadata` dict the server built for
  the write; nested parts (spec, status, containers) are replaced copy-on-write, never changed
  in place, because they may be shared with the caller or with stored objects.
* `prepare_for_create` resets status (Pod: `phase: Pending` and its QoS class; RS/RC:
  `replicas: 0`) and sets `generation: 1` on kinds that have one (Pod, ReplicaSet,
  ReplicationController). `prepare_for_update` keeps the stored status and bumps `generation`
  when the spec changed; `prepare_for_status_update` keeps the stored spec (and, for pods, the
  ownerReferences: pods/status must not touch them).
"""

from __future__ import annotations

from typing import Any

from controlplane import validation as names
from controlplane.apiserver import validation as v
from controlplane.apiserver.resources import ResourceInfo

Obj = dict[str, Any]
Cause = dict[str, str]

DELETE_DEPENDENTS = "DeleteDependents"
ORPHAN_DEPENDENTS = "OrphanDependents"

DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
DEFAULT_SCHEDULER_NAME = "default-scheduler"


# -- defaulting (copy-on-write) --------------------------------------------------------------


def _image_tag_is_latest(image: str) -> bool:
    # parsers.ParseImageName: no tag and no digest means "latest".
    if "@" in image:
        return False
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1] == "latest"
    return True


def _default_container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    missing: Obj = {}
    if not container.get("imagePullPolicy"):
        missing["imagePullPolicy"] = (
            "Always" if _image_tag_is_latest(str(container.get("image") or "")) else "IfNotPresent"
        )
    if not container.get("terminationMessagePath"):
        missing["terminationMessagePath"] = "/dev/termination-log"
    if not container.get("terminationMessagePolicy"):
        missing["terminationMessagePolicy"] = "File"
    if "resources" not in container:
        missing["resources"] = {}
    ports = container.get("ports")
    if isinstance(ports, list) and any(isinstance(p, dict) and not p.get("protocol") for p in ports):
        missing["ports"] = [
            {**p, "protocol": "TCP"} if isinstance(p, dict) and not p.get("protocol") else p for p in ports
        ]
    if not missing:
        return container
    return {**container, **missing}


def _default_containers(containers: Any) -> Any:
    if not isinstance(containers, list):
        return containers
    defaulted = [_default_container(c) for c in containers]
    if all(a is b for a, b in zip(defaulted, containers, strict=True)):
        return containers
    return defaulted


def default_pod_spec(spec: Any, *, is_pod: bool) -> Any:
    """SetDefaults_PodSpec + SetDefaults_Container (+ SetDefaults_Pod's enableServiceLinks)."""
    if not isinstance(spec, dict):
        return spec
    missing: Obj = {}
    if not spec.get("dnsPolicy"):
        missing["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        missing["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        missing["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        missing["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    if not spec.get("schedulerName"):
        missing["schedulerName"] = DEFAULT_SCHEDULER_NAME
    if is_pod and spec.get("enableServiceLinks") is None:
        missing["enableServiceLinks"] = True
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        defaulted = _default_containers(containers)
        if defaulted is not containers:
            missing[key] = defaulted
    if is_pod:
        for key in ("containers", "initContainers"):
            containers = missing.get(key, spec.get(key))
            with_requests = _default_requests(containers)
            if with_requests is not containers:
                missing[key] = with_requests
    if not missing:
        return spec
    return {**spec, **missing}


def _default_requests(containers: Any) -> Any:
    # SetDefaults_Pod: a resource with a limit but no request gets request = limit.
    if not isinstance(containers, list):
        return containers
    out = []
    changed = False
    for c in containers:
        resources = c.get("resources") if isinstance(c, dict) else None
        limits = resources.get("limits") if isinstance(resources, dict) else None
        if limits:
            requests = resources.get("requests") or {}  # type: ignore[union-attr]
            absent = {k: val for k, val in limits.items() if k not in requests}
            if absent:
                c = {**c, "resources": {**resources, "requests": {**requests, **absent}}}  # type: ignore[dict-item]
                changed = True
        out.append(c)
    return out if changed else containers


def _default_template(template: Any) -> Any:
    if not isinstance(template, dict):
        return template
    spec = template.get("spec")
    defaulted = default_pod_spec(spec, is_pod=False)
    if defaulted is spec:
        return template
    return {**template, "spec": defaulted}


def qos_class(pod: Obj) -> str:
    """GetPodQOS for cpu and memory: BestEffort, Guaranteed or Burstable."""
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or ()) + list(spec.get("initContainers") or ())
    requests_seen = limits_seen = False
    guaranteed = True
    for c in containers:
        resources = (c.get("resources") if isinstance(c, dict) else None) or {}
        requests = {k: val for k, val in (resources.get("requests") or {}).items() if k in ("cpu", "memory")}
        limits = {k: val for k, val in (resources.get("limits") or {}).items() if k in ("cpu", "memory")}
        requests_seen = requests_seen or bool(requests)
        limits_seen = limits_seen or bool(limits)
        if set(limits) != {"cpu", "memory"} or any(str(requests.get(k, limits[k])) != str(limits[k]) for k in limits):
            guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    if guaranteed and limits_seen:
        return "Guaranteed"
    return "Burstable"


# -- strategies ----------------------------------------------------------------------------


class Strategy:
    """The generic strategy: no defaults, no status, metadata-only validation."""

    graceful = False
    # DefaultGarbageCollectionPolicy; None when the registry does not declare one.
    gc_policy: str | None = None
    has_generation = False
    has_status = False

    def __init__(self, info: ResourceInfo) -> None:
        self.info = info

    def default(self, obj: Obj) -> None:
        """Apply SetDefaults_* to an object whose top-level dict the server owns."""

    def prepare_for_create(self, obj: Obj) -> None:
        if self.has_generation:
            obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if self.has_status:
            _keep(new, old, "status")
        if self.has_generation and new.get("spec") != old.get("spec"):
            new["metadata"]["generation"] = (old["metadata"].get("generation") or 0) + 1

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        _keep(new, old, "spec")

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_object_meta(obj["metadata"], self.info.namespaced, names.name_is_dns_subdomain)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_object_meta_update(new["metadata"], old["metadata"])

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_object_meta_update(new["metadata"], old["metadata"])

    def check_graceful_delete(self, obj: Obj, grace: int | None) -> int:
        """The grace period of a first graceful delete (graceful strategies only)."""
        return 0


def _keep(new: Obj, old: Obj, key: str) -> None:
    if key in old:
        new[key] = old[key]
    else:
        new.pop(key, None)


class PodStrategy(Strategy):
    graceful = True
    has_generation = True
    has_status = True

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        defaulted = default_pod_spec(spec, is_pod=True)
        if defaulted is not spec:
            obj["spec"] = defaulted

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj)}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        _keep(new, old, "spec")
        # pods/status must not touch ownerReferences (old kubelets corrupted them).
        refs = old["metadata"].get("ownerReferences")
        if refs is None:
            new["metadata"].pop("ownerReferences", None)
        else:
            new["metadata"]["ownerReferences"] = refs
        status = new.get("status")
        old_qos = (old.get("status") or {}).get("qosClass")
        if isinstance(status, dict) and not status.get("qosClass") and old_qos:
            new["status"] = {**status, "qosClass": old_qos}

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_pod(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_pod_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_pod_status_update(new, old)

    def check_graceful_delete(self, obj: Obj, grace: int | None) -> int:
        # podStrategy.CheckGracefulDelete.
        spec = obj.get("spec") or {}
        period = grace if grace is not None else spec.get("terminationGracePeriodSeconds") or 0
        if not spec.get("nodeName"):
            period = 0
        if (obj.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
            period = 0
        if period < 0:
            period = 1
        return int(period)


class ReplicaSetStrategy(Strategy):
    gc_policy = DELETE_DEPENDENTS
    has_generation = True
    has_status = True

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        missing: Obj = {}
        if spec.get("replicas") is None:
            missing["replicas"] = 1
        template = spec.get("template")
        defaulted = _default_template(template)
        if defaulted is not template:
            missing["template"] = defaulted
        if missing:
            obj["spec"] = {**spec, **missing}

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1
        obj["status"] = {"replicas": 0}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        _keep(new, old, "spec")
        # status.replicas has no omitempty: it is always serialised, 0 included.
        status = new.get("status")
        if not isinstance(status, dict):
            new["status"] = {"replicas": 0}
        elif "replicas" not in status:
            new["status"] = {"replicas": 0, **status}

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_replica_set(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_replica_set_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_replica_set_status_update(new, old)


class ReplicationControllerStrategy(ReplicaSetStrategy):
    # v1 ReplicationControllers orphan their pods unless told otherwise (rcStrategy, back compat).
    gc_policy = ORPHAN_DEPENDENTS

    def default(self, obj: Obj) -> None:
        # SetDefaults_ReplicationController.
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        missing: Obj = {}
        template = spec.get("template")
        template_labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
        if template_labels is not None:
            if not spec.get("selector"):
                missing["selector"] = template_labels
            if not obj["metadata"].get("labels"):
                obj["metadata"]["labels"] = template_labels
        if spec.get("replicas") is None:
            missing["replicas"] = 1
        defaulted = _default_template(template)
        if defaulted is not template:
            missing["template"] = defaulted
        if missing:
            obj["spec"] = {**spec, **missing}

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_replication_controller(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_replication_controller_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_replication_controller_status_update(new, old)


class NodeStrategy(Strategy):
    has_status = True

    def default(self, obj: Obj) -> None:
        # SetDefaults_NodeStatus: allocatable defaults to capacity.
        status = obj.get("status")
        if isinstance(status, dict) and status.get("capacity") and status.get("allocatable") is None:
            obj["status"] = {**status, "allocatable": status["capacity"]}

    def prepare_for_create(self, obj: Obj) -> None:
        pass  # a node registers with its status

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_node(obj)


class NamespaceStrategy(Strategy):
    has_status = True

    def default(self, obj: Obj) -> None:
        meta = obj["metadata"]
        name = meta.get("name")
        label = "kubernetes.io/metadata.name"
        if name and (meta.get("labels") or {}).get(label) != name:
            meta["labels"] = {**(meta.get("labels") or {}), label: name}

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Active"}
        found = obj.get("spec")
        spec: Obj = found if isinstance(found, dict) else {}
        finalizers = list(spec.get("finalizers") or ())
        if "kubernetes" not in finalizers:
            obj["spec"] = {**spec, "finalizers": [*finalizers, "kubernetes"]}

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_namespace(obj)


class EventStrategy(Strategy):
    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_event(obj)


_STRATEGIES: dict[str, type[Strategy]] = {
    "pods": PodStrategy,
    "replicasets": ReplicaSetStrategy,
    "replicationcontrollers": ReplicationControllerStrategy,
    "nodes": NodeStrategy,
    "namespaces": NamespaceStrategy,
    "events": EventStrategy,
}


def strategy_for(info: ResourceInfo) -> Strategy:
    return _STRATEGIES.get(info.plural, Strategy)(info)

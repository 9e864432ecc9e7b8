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
* Admission (the mutating plugins a cluster runs on pod create, after defaulting, before
  validation): ServiceAccount sets `serviceAccountName: default` (and the deprecated
  `serviceAccount`) when none is named; DefaultTolerationSeconds adds the
  `node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable` NoExecute tolerations
  (operator Exists, `tolerationSeconds` from the server's flag, 300 by default) unless the pod
  already tolerates that key; Priority sets `priority` from `priorityClassName` (none: 0; the two
  built-in `system-*` classes; any other name is refused with 403 as no such PriorityClass
  exists here) and `preemptionPolicy: PreemptLowerPriority`, and refuses a `priority` that
  differs from it. Not modelled: the service account's token volume
  (`kube-api-access-*`) and the lookup of the ServiceAccount object.
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
DEFAULT_TOLERATION_SECONDS = 300  # --default-not-ready/unreachable-toleration-seconds
DEFAULT_SERVICE_ACCOUNT = "default"
# scheduling.SystemPriorityClasses(): the PriorityClasses every cluster has.
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"


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
    defaulted: list[Any] | None = None  # a copy only once some container changes
    for i, container in enumerate(containers):
        changed = _default_container(container)
        if changed is not container:
            if defaulted is None:
                defaulted = list(containers)
            defaulted[i] = changed
    return containers if defaulted is None else defaulted


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


def _tolerates_key(tolerations: list[Any], key: str) -> bool:
    # DefaultTolerationSeconds: an existing toleration of the key (or of every key) with effect
    # NoExecute (or every effect) keeps the plugin from adding its own.
    return any(
        isinstance(t, dict) and t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None)
        for t in tolerations
    )


def admit_pod_spec(spec: Obj, toleration_seconds: int) -> tuple[Obj, str | None]:
    """The pod spec after the ServiceAccount, DefaultTolerationSeconds and Priority admission
    plugins (copy-on-write), or the reason Priority refuses it."""
    missing: Obj = {}
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
    if spec.get("serviceAccountName") != account:
        missing["serviceAccountName"] = account
    if spec.get("serviceAccount") != account:
        missing["serviceAccount"] = account
    tolerations = spec.get("tolerations")
    if tolerations is None or isinstance(tolerations, list):
        added = [
            {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": toleration_seconds}
            for key in (TAINT_NOT_READY, TAINT_UNREACHABLE)
            if not _tolerates_key(tolerations or [], key)
        ]
        if added:
            missing["tolerations"] = [*(tolerations or []), *added]
    class_name = spec.get("priorityClassName") or ""
    if class_name and class_name not in SYSTEM_PRIORITY_CLASSES:
        return spec, f"no PriorityClass with name {class_name} was found"
    priority = SYSTEM_PRIORITY_CLASSES.get(class_name, 0)
    given = spec.get("priority")
    if given is not None and given != priority:
        return spec, (
            f"the integer value of priority ({given}) must not be provided in pod spec; "
            f"priority admission controller computed {priority} from the given PriorityClass name"
        )
    if given is None:
        missing["priority"] = priority
    if not spec.get("preemptionPolicy"):
        missing["preemptionPolicy"] = "PreemptLowerPriority"
    if not missing:
        return spec, None
    return {**spec, **missing}, None


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


# -- pod specs seen before -------------------------------------------------------------------


class _SpecFacts:
    """What the pod strategy derives from one spec object: its defaulted form and, for a
    defaulted spec, its QoS class and validation causes (computed on first use)."""

    __slots__ = ("causes", "defaulted", "qos", "snapshot", "spec")

    def __init__(self, spec: Obj, snapshot: Obj | None) -> None:
        self.spec = spec
        self.snapshot = snapshot
        self.defaulted: Obj = spec
        self.qos: str | None = None
        self.causes: list[Cause] | None = None


class _SpecMemo:
    """Facts about the pod specs created recently, keyed by the spec object's identity.

    Every pod a controller creates carries its template's spec object, so defaulting, the QoS
    class and spec validation run once per template, not once per pod. An entry holds its spec,
    so the id cannot be reused while the entry exists. A spec the caller handed in is also kept
    as a deep copy and its entry used only while the two are equal: a caller that mutated a spec
    after sending it gets fresh results, never a stale verdict. The defaulted spec the memo builds
    itself is the server's own object (stored, never mutated) and needs no copy.
    """

    __slots__ = ("_entries", "_limit")

    def __init__(self, limit: int = 4096) -> None:
        self._entries: dict[int, _SpecFacts] = {}
        self._limit = limit

    def facts(self, spec: Obj) -> _SpecFacts:
        facts = self._entries.get(id(spec))
        if facts is not None and facts.spec is spec and (facts.snapshot is None or facts.snapshot == spec):
            return facts
        if len(self._entries) + 2 > self._limit:
            self._entries.clear()
        facts = self._entries[id(spec)] = _SpecFacts(spec, _deep_copy(spec))
        defaulted = default_pod_spec(spec, is_pod=True)
        if defaulted is not spec:
            facts.defaulted = defaulted
            if default_pod_spec(defaulted, is_pod=True) is defaulted:
                self._entries[id(defaulted)] = _SpecFacts(defaulted, None)
        return facts

    def owns(self, spec: Obj) -> bool:
        """Whether `spec` is an object this memo built (stored, never mutated)."""
        facts = self._entries.get(id(spec))
        return facts is not None and facts.spec is spec and facts.snapshot is None

    def adopt(self, spec: Obj) -> None:
        """Remember `spec`, built by the server from one this memo owns, as owned too."""
        if len(self._entries) + 1 > self._limit:
            self._entries.clear()
        self._entries[id(spec)] = _SpecFacts(spec, None)

    def qos(self, spec: Obj) -> str:
        facts = self.facts(spec)
        if facts.qos is None:
            facts.qos = qos_class({"spec": spec})
        return facts.qos

    def causes(self, spec: Obj) -> list[Cause]:
        facts = self.facts(spec)
        if facts.causes is None:
            facts.causes = v.validate_pod_spec(spec, "spec")
        return list(facts.causes)


def _deep_copy(value: Any) -> Any:
    # JSON-shaped values only (dicts, lists, scalars); copy.deepcopy is several times slower.
    if isinstance(value, dict):
        return {key: _deep_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_deep_copy(item) for item in value]
    return value


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

    def default_for_create(self, obj: Obj) -> None:
        """`default` on the body of a create (a strategy may remember results per template)."""
        self.default(obj)

    def admit_for_create(self, obj: Obj, toleration_seconds: int) -> str | None:
        """The mutating admission plugins on a create of a defaulted object whose top-level
        dict the server owns; a message when admission refuses it (403 Forbidden)."""
        return None

    def default_for_status_update(self, obj: Obj) -> None:
        """`default` on the body of a status update. A strategy whose defaults touch only the
        spec skips it: `prepare_for_status_update` puts the stored spec back anyway."""
        self.default(obj)

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

    def __init__(self, info: ResourceInfo) -> None:
        super().__init__(info)
        self._specs = _SpecMemo()
        # One initial status per QoS class, shared by every pod created (immutable by convention).
        self._pending: dict[str, Obj] = {}
        # (id of a defaulted template spec, toleration seconds) -> (that spec, its admitted copy).
        self._admitted: dict[tuple[int, int], tuple[Obj, Obj]] = {}

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        defaulted = default_pod_spec(spec, is_pod=True)
        if defaulted is not spec:
            obj["spec"] = defaulted

    def default_for_create(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            obj["spec"] = self._specs.facts(spec).defaulted
        else:
            self.default(obj)

    def default_for_status_update(self, obj: Obj) -> None:
        pass  # only the spec has defaults, and pods/status keeps the stored spec

    def admit_for_create(self, obj: Obj, toleration_seconds: int) -> str | None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return None
        memo_key = (id(spec), toleration_seconds)
        hit = self._admitted.get(memo_key)
        if hit is not None and hit[0] is spec:
            obj["spec"] = hit[1]
            return None
        admitted, refused = admit_pod_spec(spec, toleration_seconds)
        if refused is not None:
            return refused
        if self._specs.owns(spec):  # a template's defaulted spec: admitted once for all its pods
            if len(self._admitted) >= 4096:
                self._admitted.clear()
            self._admitted[memo_key] = (spec, admitted)
            self._specs.adopt(admitted)
        obj["spec"] = admitted
        return None

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1
        spec = obj.get("spec")
        qos = self._specs.qos(spec) if isinstance(spec, dict) else qos_class(obj)
        status = self._pending.get(qos)
        if status is None:
            status = self._pending[qos] = {"phase": "Pending", "qosClass": qos}
        obj["status"] = status

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
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return v.validate_pod(obj)
        # validate_pod, with the spec's causes remembered per spec object (see _SpecMemo).
        causes = v.validate_object_meta(obj["metadata"], True, names.name_is_dns_subdomain)
        causes.extend(self._specs.causes(spec))
        return causes

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

    def default_for_status_update(self, obj: Obj) -> None:
        pass  # only the spec has defaults, and replicasets/status keeps the stored spec

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

    def default_for_status_update(self, obj: Obj) -> None:
        self.default(obj)  # empty labels default to the template's: not only the spec

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


class DeploymentStrategy(Strategy):
    """pkg/registry/apps/deployment/strategy.go with SetDefaults_Deployment (deployment spec
    D15): generation 1 on create, +1 on an update that changes the spec or the annotations; the
    status endpoint keeps the stored spec and labels."""

    gc_policy = DELETE_DEPENDENTS
    has_generation = True
    has_status = True

    def default(self, obj: Obj) -> None:
        # SetDefaults_Deployment (D15.1-D15.3).
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        missing: Obj = {}
        if spec.get("replicas") is None:
            missing["replicas"] = 1
        strategy = spec.get("strategy")
        strategy = dict(strategy) if isinstance(strategy, dict) else {}
        changed = False
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            changed = True
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.get("rollingUpdate")
            rolling = dict(rolling) if isinstance(rolling, dict) else {}
            for key in ("maxUnavailable", "maxSurge"):
                if rolling.get(key) is None:
                    rolling[key] = "25%"
                    changed = True
            if rolling != strategy.get("rollingUpdate"):
                strategy["rollingUpdate"] = rolling
                changed = True
        if changed:
            missing["strategy"] = strategy
        if spec.get("revisionHistoryLimit") is None:
            missing["revisionHistoryLimit"] = 10
        if spec.get("progressDeadlineSeconds") is None:
            missing["progressDeadlineSeconds"] = 600
        template = spec.get("template")
        defaulted = _default_template(template)
        if defaulted is not template:
            missing["template"] = defaulted
        if missing:
            obj["spec"] = {**spec, **missing}

    def default_for_status_update(self, obj: Obj) -> None:
        pass  # deployments/status keeps the stored spec

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1
        obj["status"] = {}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        _keep(new, old, "status")
        # deploymentStrategy.PrepareForUpdate: spec or annotations changed → generation + 1.
        if new.get("spec") != old.get("spec") or (new["metadata"].get("annotations") or {}) != (
            old["metadata"].get("annotations") or {}
        ):
            new["metadata"]["generation"] = (old["metadata"].get("generation") or 0) + 1

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        _keep(new, old, "spec")
        labels = old["metadata"].get("labels")
        if labels is None:
            new["metadata"].pop("labels", None)
        else:
            new["metadata"]["labels"] = labels

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_deployment(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_deployment_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_deployment_status_update(new, old)


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

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        # namespaceStrategy.PrepareForUpdate: status and spec.finalizers change only through
        # their own subresources (status, finalize).
        super().prepare_for_update(new, old)
        found = new.get("spec")
        spec: Obj = found if isinstance(found, dict) else {}
        finalizers = (old.get("spec") or {}).get("finalizers")
        if finalizers:
            new["spec"] = {**spec, "finalizers": finalizers}
        elif "finalizers" in spec:
            new["spec"] = {k: val for k, val in spec.items() if k != "finalizers"}

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
    "deployments": DeploymentStrategy,
    "replicationcontrollers": ReplicationControllerStrategy,
    "nodes": NodeStrategy,
    "namespaces": NamespaceStrategy,
    "events": EventStrategy,
}


def strategy_for(info: ResourceInfo) -> Strategy:
    return _STRATEGIES.get(info.plural, Strategy)(info)

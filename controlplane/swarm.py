"""The fault swarm's pure half: seeded scenario generation, one case run under the oracles, and
shrinking (issue 9 §1).

Guarantees
----------
* `generate(seed)` is a pure function of its arguments: the same seed gives the same `Case`, on
  any machine. A case *is* a scenario (docs/scenarios.md): `Case.scenario()` is the dict a scenario file
  holds, and `run_case` runs it through `Simulation` exactly as `python -m controlplane run`
  does — the swarm has no second code path into the simulation.
* Every case has the same shape: a random cluster at t=0 (ReplicaSets and ReplicationControllers
  with 0-30 replicas, orphans that match or do not, pods owned by others, a few nodes,
  minReadySeconds sometimes, a random base config); a random *chaos* schedule over the whole
  action vocabulary; at `lift_time` every fault still in force is lifted (`liftFault all`, watches
  resumed, nodes up, what-ifs restored, manual workers handed back); then a quiet period. The
  liveness oracle checks at `lift_time + quiet` and again at `until`, one `stay` later.
* The swarm runs with a finite informer `resyncPeriod` (`SWARM_RESYNC_PERIOD` unless the caller's
  config says otherwise): two stalls faithful to upstream end only at a resync (docs/scenarios.md,
  "Faithful stalls"), so the liveness bound has the resync period in it (`oracles.liveness_bound`).
* `run_case` never raises for what the simulation does: an exception escaping the kernel is the
  `no-crash` oracle's violation. `shrink` only keeps a smaller case that still violates the same
  oracle.

Nothing here reads the wall clock or starts processes: timing, progress, process pools and Dask
belong to the host (`faultswarm`).
"""

from __future__ import annotations

import copy
import pathlib
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from controlplane.controllers.registry import DEPLOYMENT, REPLICA_SET, REPLICATION_CONTROLLER, by_kind
from controlplane.controllers.registry import REGISTRY as _ALL_CONTROLLERS
from controlplane.gcpolicy import simulation_gc
from controlplane.kernel import Rng, seeded_rng
from controlplane.oracles import (
    OracleReport,
    SafetyMonitor,
    TraceDigest,
    Violation,
    check_liveness,
    check_operator_oracles,
    liveness_bound,
)
from controlplane.scenario import POD_FAULTS, ScenarioError, check_config, parse_scenario
from controlplane.world import Simulation

Obj = dict[str, Any]

SWARM_RESYNC_PERIOD = 60.0
"""Informer resync of every swarm case unless `--config resyncPeriod=…` says otherwise."""
DEFAULT_QUIET = 600.0
"""Seconds of calm after the lift: ≥ the 5-minute expectations TTL + one resync + slack for the
back-offs the lift leaves behind (relists ≤ 30 s, pod restarts, node recovery)."""
LIFT_GAP = 1.0

# The swarm's worlds run the controllers that are on by default, and it draws from those only
# (an off-by-default controller, the Deployment one, would change every case's draws).
REGISTRY = _ALL_CONTROLLERS.defaults()
CONTROLLERS = REGISTRY.specs


APPS = ("web", "api", "db")
TIERS = ("front", "back")
TEAM = "team"
NAMESPACE_MANIFEST: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TEAM}}
JOB_OWNER_UID = "0b5e5a7e-0000-4000-8000-00000000{:04d}"
API_CODES = (409, 422, 429, 500, 403, 404, 0)
API_VERBS = ("create", "update", "patch", "delete", "get", "list", "watch", "*")
# The rng draws from these tuples: their order is part of every swarm case. Each controller's
# resource and its status subresource, in the registry's order; the ReplicaSet's scale
# subresource too (drawn since the swarm was written; the RC's scale never was).
API_RESOURCES = (
    "pods",
    "pods/status",
    "pods/binding",
    *(
        resource
        for spec in CONTROLLERS
        for resource in (
            spec.resource,
            f"{spec.resource}/status",
            *((f"{spec.resource}/scale",) if spec is REPLICA_SET else ()),
        )
    ),
    "events",
    "nodes",
    "*",
)
FOCUSED_FAULTS = (
    ("create", "pods"),
    ("delete", "pods"),
    ("patch", "pods"),
    *(("update", f"{resource}/status") for resource in REGISTRY.resources()),
    *(("get", resource) for resource in REGISTRY.resources()),
    ("list", "pods"),
    ("watch", "pods"),
)
# The controllers by the registry, in its order (the rng draws from these tuples).
CONTROLLER_NAMES = REGISTRY.names()
API_CLIENTS = (*(spec.component for spec in CONTROLLERS), "kubelet", "garbage-collector", "user")
WATCHED = REGISTRY.managed_resources()
PROPAGATIONS = (None, "Background", "Foreground", "Orphan")


# -- the case -----------------------------------------------------------------------------------


@dataclass
class Case:
    """One swarm case: the starting world, the chaos, and the calm after it."""

    seed: int
    config: Obj
    objects: list[Obj]
    chaos: list[Obj]
    quiet: float = DEFAULT_QUIET
    name: str = ""
    operators: list[Obj] = field(default_factory=list)  # the base scenario's (`--base`), as written

    @property
    def resync(self) -> float:
        return float(self.config.get("resyncPeriod", 0.0))

    @property
    def lift_time(self) -> float:
        return round(max((float(a["at"]) for a in self.chaos), default=-LIFT_GAP) + LIFT_GAP, 3)

    @property
    def stay(self) -> float:
        """How long after the first liveness check the second one comes: two resyncs, or a minute."""
        return 2 * self.resync if self.resync > 0 else 60.0

    @property
    def checks(self) -> tuple[float, float]:
        first = self.lift_time + self.quiet
        return first, first + self.stay

    def lift(self) -> list[Obj]:
        return lift_actions(self.chaos, self.config, self.lift_time)

    def scenario(self) -> Obj:
        first, until = self.checks
        return {
            "name": self.name or f"swarm seed {self.seed}",
            "description": (
                f"Fault swarm case (seed {self.seed}): chaos, every fault lifted at t={self.lift_time:g}, "
                f"liveness checked at t={first:g} (after a {self.quiet:g} s quiet period) and at t={until:g}."
            ),
            "seed": self.seed,
            "config": copy.deepcopy(self.config),
            **({"operators": copy.deepcopy(self.operators)} if self.operators else {}),
            "objects": copy.deepcopy(self.objects),
            "actions": [*copy.deepcopy(self.chaos), *self.lift()],
            "until": until,
        }


def lift_actions(chaos: list[Obj], base_config: Obj, at: float) -> list[Obj]:
    """The "lift every fault" step: API fault rules lifted, watches resumed, nodes up, every
    config key the chaos touched back to the case's base value."""
    out: list[Obj] = []
    if any("apiFault" in a for a in chaos):
        out.append({"at": at, "liftFault": {"apiFault": "all"}})
    paused = sorted(
        {a["watchFault"]["resource"] for a in chaos if "watchFault" in a and "client" not in a["watchFault"]}
    )
    out += [{"at": at, "watchFault": {"resource": r, "fault": "resume"}} for r in paused]
    clients = sorted(
        {(a["watchFault"]["client"], a["watchFault"]["resource"]) for a in chaos if "client" in a.get("watchFault", {})}
    )
    out += [{"at": at, "watchFault": {"resource": r, "fault": "resume", "client": c}} for c, r in clients]
    slowed = sorted({a["controllerFault"]["operator"] for a in chaos if "seconds" in a.get("controllerFault", {})})
    out += [{"at": at, "controllerFault": {"operator": name, "fault": "slow", "seconds": 0}} for name in slowed]
    downed = sorted({a["nodeFault"]["name"] for a in chaos if "nodeFault" in a}, key=_node_index)
    out += [{"at": at, "nodeFault": {"name": n, "fault": "up"}} for n in downed]
    restore: Obj = {}
    base = check_config(base_config)
    for action in chaos:
        for key, value in (action.get("config") or {}).items():
            if key in ("featureGates", "whatIf"):
                restore.setdefault(key, {}).update({k: base[key][k] for k in value})
            else:
                restore[key] = base[key]
    if restore:
        out.append({"at": at, "config": restore})
    return out


def _node_index(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


# -- generation ---------------------------------------------------------------------------------


def generate(seed: int, *, quiet: float = DEFAULT_QUIET, config: Obj | None = None, base: Obj | None = None) -> Case:
    """The case of `seed`. `config` overrides keys of the generated base config (the CLI's
    `--config K=V`); `resyncPeriod` defaults to `SWARM_RESYNC_PERIOD`. `base` (the CLI's `--base`:
    a scenario with `operators:`) adds its operators and objects to the case, and faults aimed at
    its operators, drawn from a stream of their own (without it every seed's case is unchanged)."""
    rng = seeded_rng(seed)
    gen = _Generator(rng)
    config_base = gen.base_config()
    config_base["resyncPeriod"] = SWARM_RESYNC_PERIOD
    for key, value in (config or {}).items():
        if key in ("featureGates", "whatIf"):
            config_base[key] = {**config_base.get(key, {}), **value}
        else:
            config_base[key] = value
    objects = gen.cluster(config_base.get("nodes", 3))
    chaos = gen.chaos(config_base)
    if DEPLOYMENT.name in (config_base.get("controllers") or ()):
        # Deployments only when the caller runs their controller (`--controllers`, or
        # `--config controllers=[...]`), drawn from a stream of their own after everything
        # else: the rest of the case is the one the seed gives without them.
        rollouts = _Rollouts(seeded_rng(seed + ROLLOUT_STREAM), gen.nodes)
        objects = objects + rollouts.deployments()
        chaos = sorted(chaos + rollouts.chaos(chaos), key=lambda a: float(a["at"]))
    operators: list[Obj] = []
    if base is not None and base.get("operators"):
        operators = copy.deepcopy(base["operators"])
        objects = copy.deepcopy(list(base.get("objects") or [])) + objects
        aimed = _OperatorChaos(seeded_rng(seed + OPERATOR_STREAM), operators).chaos(chaos)
        chaos = sorted(chaos + aimed, key=lambda a: float(a["at"]))
    return Case(seed=seed, config=config_base, objects=objects, chaos=chaos, quiet=quiet, operators=operators)


@dataclass
class _Controller:
    kind: str
    name: str
    app: str
    tier: str | None
    namespace: str = "default"

    @property
    def labels(self) -> dict[str, str]:
        out = {"app": self.app}
        if self.tier is not None:
            out["tier"] = self.tier
        return out


@dataclass
class _Generator:
    rng: Rng
    controllers: list[_Controller] = field(default_factory=list)
    bare_pods: list[str] = field(default_factory=list)
    nodes: int = 3
    api_faults: int = 0
    serial: int = 0
    namespaced: bool = False

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def replicas(self) -> int:
        # Mostly small (fast, and where the edge cases live), sometimes up to 30.
        return self.rng.choice((0, 1, 2, 3, 5)) if self.chance(0.6) else self.rng.randint(0, 30)

    # -- the cluster ----------------------------------------------------------------------------
    def base_config(self) -> Obj:
        rng, chance = self.rng, self.chance
        config: Obj = {"nodes": rng.choice((1, 2, 3, 3, 4))}
        if chance(0.3):
            config["workers"] = rng.choice((1, 2, 5))
        if chance(0.2):
            config["burstReplicas"] = rng.choice((1, 3, 10))
        if chance(0.2):
            config["kubeApiQPS"] = rng.choice((-1.0, 5.0, 50.0))
        if chance(0.2):
            config["watchLatency"] = rng.choice((0.0, 0.5, 2.0))
        if chance(0.2):
            config["apiLatency"] = rng.choice((0.0, 0.05, 0.5))
        if chance(0.2):
            config["podReadyDelay"] = rng.choice((1.0, 5.0))
        if chance(0.15):
            config["whatIf"] = {"expectations": False}
        if chance(0.15):
            config.setdefault("whatIf", {})["slowStart"] = False
        if chance(0.2):
            gate = rng.choice(
                ("StaleControllerConsistencyReplicaSet", "DeploymentReplicaSetTerminatingReplicas", "PodDeletionCost")
            )
            config["featureGates"] = {gate: False}
        self.nodes = int(config["nodes"])
        return config

    def controller_manifest(self, ctl: _Controller, replicas: int, min_ready: int = 0) -> Obj:
        template_labels = dict(ctl.labels)
        if self.chance(0.3):
            template_labels["release"] = "stable"
        template = {
            "metadata": {"labels": template_labels},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
        }
        spec: Obj
        owner = by_kind(ctl.kind)
        if owner is REPLICA_SET:  # apps/v1: a LabelSelector
            selector: Obj = {"matchLabels": {"app": ctl.app}}
            if ctl.tier is not None:
                selector["matchExpressions"] = [{"key": "tier", "operator": "In", "values": [ctl.tier]}]
            spec = {"replicas": replicas, "selector": selector, "template": template}
        else:  # core/v1: a map of labels
            spec = {"replicas": replicas, "selector": dict(ctl.labels), "template": template}
        manifest = {"apiVersion": owner.api_version, "kind": owner.kind}
        if min_ready:
            spec["minReadySeconds"] = min_ready
        return {**manifest, "metadata": {"name": ctl.name, "namespace": ctl.namespace}, "spec": spec}

    def new_controller(self, namespace: str = "default") -> _Controller:
        kind = REPLICA_SET.kind if self.chance(0.65) else REPLICATION_CONTROLLER.kind
        prefix = "rs" if kind == REPLICA_SET.kind else "rc"
        ctl = _Controller(
            kind, f"{prefix}-{len(self.controllers)}", self.rng.choice(APPS), self.rng.choice((None, *TIERS)), namespace
        )
        self.controllers.append(ctl)
        return ctl

    def pod_labels(self) -> dict[str, str]:
        labels = {"app": self.rng.choice(APPS)}
        if self.chance(0.5):
            labels["tier"] = self.rng.choice(TIERS)
        return labels

    def bare_pod(self, name: str, namespace: str = "default", owner: int | None = None) -> Obj:
        meta: Obj = {"name": name, "namespace": namespace, "labels": self.pod_labels()}
        if owner is not None:
            # Controlled by a kind this cluster does not serve: never dangling for the garbage
            # collector, never ours for the ReplicaSet controller.
            meta["ownerReferences"] = [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": f"job-{owner}",
                    "uid": JOB_OWNER_UID.format(owner),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
        }

    def cluster(self, nodes: int) -> list[Obj]:
        rng, chance = self.rng, self.chance
        objects: list[Obj] = []
        # Pods first half of the time: orphans that exist before their adopter.
        pods: list[Obj] = []
        for i in range(rng.choice((0, 0, 1, 2, 4))):
            name = f"orphan-{i}"
            self.bare_pods.append(name)
            pods.append(self.bare_pod(name))
        for i in range(rng.choice((0, 0, 1, 2))):
            name = f"owned-{i}"
            self.bare_pods.append(name)
            pods.append(self.bare_pod(name, owner=i))
        if chance(0.2):
            pods.append(self.bare_pod("stray-0", namespace="kube-system"))
        controllers = []
        for _ in range(rng.choice((1, 1, 2, 2, 3, 4))):
            ctl = self.new_controller()
            min_ready = rng.choice((0, 0, 0, 5, 30))
            controllers.append(self.controller_manifest(ctl, self.replicas(), min_ready))
        objects = pods + controllers if chance(0.5) else controllers + pods
        if chance(0.25):
            # A second namespace that the chaos may delete (its content goes with it; creates in a
            # terminating namespace are refused with the NamespaceTerminating cause, spec §8).
            self.namespaced = True
            ctl = self.new_controller(TEAM)
            team = [NAMESPACE_MANIFEST, self.controller_manifest(ctl, self.replicas())]
            if chance(0.5):
                team.append(self.bare_pod("orphan-team", namespace=TEAM))
            objects = team + objects
        return objects

    # -- the chaos ------------------------------------------------------------------------------
    def chaos(self, base: Obj) -> list[Obj]:
        rng = self.rng
        window = rng.choice((20.0, 60.0, 120.0, 300.0))
        times = [round(rng.uniform(0.0, window), 3) for _ in range(rng.randint(0, 40))]
        # Some actions share an instant: they apply in file order at its end (docs/scenarios.md).
        times += [t for t in times if self.chance(0.1)]
        times.sort()
        actions: list[Obj] = []
        manual = False
        makers: list[tuple[float, Callable[[], Obj | list[Obj] | None]]] = [
            (3, self.scale),
            (1.5, self.patch_controller),
            (1.5, self.patch_pod),
            (1, self.delete),
            (1.5, self.apply),
            (4, self.pod_fault),
            (1.5, self.node_fault),
            (4, self.api_fault),
            (0.7, self.lift_fault),
            (2, self.watch_fault),
            (1, self.restart),
            (1.5, self.config_what_if),
            (0.5, self.lost_creation),
        ]
        weights = [w for w, _ in makers]
        for at in times:
            if manual and self.chance(0.5):
                body = {"controller": self.rng.choice(CONTROLLER_NAMES)}
                actions.append({"at": at, "sync": body})
                continue
            maker = rng.choices([m for _, m in makers], weights)[0]
            made = maker()
            for step, verb_body in enumerate(made if isinstance(made, list) else [made] if made else []):
                actions.append({"at": round(at + step * 0.5, 3), **verb_body})
                if "config" in verb_body and "manualWorkers" in verb_body["config"]:
                    manual = bool(verb_body["config"]["manualWorkers"])
        actions.sort(key=lambda a: float(a["at"]))  # stable: same-instant actions keep their order
        return actions

    def app(self) -> str:
        """An app label, mostly one a controller selects (so the fault lands on its pods)."""
        if self.controllers and self.chance(0.8):
            return self.rng.choice(self.controllers).app
        return self.rng.choice(APPS)

    def pick_controller(self) -> _Controller | None:
        return self.rng.choice(self.controllers) if self.controllers else None

    def scale(self) -> Obj | None:
        ctl = self.pick_controller()
        if ctl is None:
            return None
        if self.chance(0.2):
            # The same through a merge patch of spec.replicas (a new generation) instead of /scale,
            # sent as an API client's `request` (what kubectl's writes become): the same API call
            # as a `patch` action.
            patch = {"spec": {"replicas": self.replicas()}}
            resource = by_kind(ctl.kind).resource
            request = {"verb": "patch", "resource": resource, "namespace": ctl.namespace, "name": ctl.name}
            return {"request": {**request, "patchType": "merge", "body": patch}}
        return {"scale": {**self.target(ctl), "replicas": self.replicas()}}

    @staticmethod
    def target(ctl: _Controller) -> Obj:
        out: Obj = {"kind": ctl.kind, "name": ctl.name}
        if ctl.namespace != "default":
            out["namespace"] = ctl.namespace
        return out

    def patch_controller(self) -> Obj | None:
        ctl = self.pick_controller()
        if ctl is None:
            return None
        self.serial += 1
        choice = self.rng.randrange(3)
        patch: Obj
        if choice == 0:  # a template change: new generation, new pods look different
            patch = {"spec": {"template": {"metadata": {"labels": {"rev": str(self.serial)}}}}}
        elif choice == 1:
            patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"nginx:{self.serial}"}]}}}}
        else:
            # A selector edit: an RC's pods are released and others adopted; a ReplicaSet's
            # selector is immutable (apps/v1), so the API server answers 422.
            app = self.rng.choice(APPS)
            if ctl.kind == REPLICA_SET.kind:
                patch = {"spec": {"selector": {"matchLabels": {"app": app}}}}
            else:
                patch = {"spec": {"selector": {"app": app}, "template": {"metadata": {"labels": {"app": app}}}}}
        return {"patch": {**self.target(ctl), "patch": patch}}

    def patch_pod(self) -> Obj | None:
        if not self.bare_pods:
            return None
        name = self.rng.choice(self.bare_pods)
        labels: Obj = {"app": self.rng.choice((*APPS, "other"))}
        if self.chance(0.5):
            labels["tier"] = self.rng.choice((*TIERS, None))
        return {"patch": {"kind": "Pod", "name": name, "patch": {"metadata": {"labels": labels}}}}

    def delete(self) -> Obj | None:
        if self.bare_pods and self.chance(0.3):
            return {"delete": {"kind": "Pod", "name": self.rng.choice(self.bare_pods)}}
        ctl = self.pick_controller()
        if ctl is None:
            return None
        if self.namespaced and self.chance(0.15):
            return {"delete": {"kind": "Namespace", "name": TEAM}}
        body: Obj = self.target(ctl)
        policy = self.rng.choice(PROPAGATIONS)
        if policy is not None:
            body["propagationPolicy"] = policy
        return {"delete": body}

    def apply(self) -> Obj | None:
        if self.namespaced and self.chance(0.1):
            return {"apply": copy.deepcopy(NAMESPACE_MANIFEST)}
        if self.chance(0.3):
            name = f"late-{self.serial}"
            self.serial += 1
            self.bare_pods.append(name)
            return {"apply": self.bare_pod(name)}
        # An existing name: re-create (same name, new uid) or update; else a new controller.
        ctl = self.rng.choice(self.controllers) if self.controllers and self.chance(0.6) else self.new_controller()
        return {"apply": self.controller_manifest(ctl, self.replicas(), self.rng.choice((0, 0, 5)))}

    def pod_fault(self) -> Obj | None:
        fault = self.rng.choice(POD_FAULTS)
        if self.bare_pods and self.chance(0.2):
            return {"podFault": {"name": self.rng.choice(self.bare_pods), "fault": fault}}
        body: Obj = {"selector": f"app={self.app()}", "fault": fault}
        if self.chance(0.7):
            body["count"] = self.rng.randint(1, 3)
        return {"podFault": body}

    def node_fault(self) -> Obj | None:
        if self.nodes < 1:
            return None
        name = f"node-{self.rng.randint(1, self.nodes)}"
        return {"nodeFault": {"name": name, "fault": "down" if self.chance(0.7) else "up"}}

    def api_fault(self) -> Obj:
        rng, chance = self.rng, self.chance
        code = rng.choice(API_CODES)
        if chance(0.5):
            # Aimed at what the controllers do: pod writes, adoption patches, status writes, the
            # uncached GET before adoption, their lists and watches.
            verb, resource = rng.choice(FOCUSED_FAULTS)
        else:
            verb, resource = rng.choice(API_VERBS), rng.choice(API_RESOURCES)
        body: Obj = {"verb": verb, "resource": resource, "code": code}
        if code == 403:
            body.update(reason="Forbidden", message='pods "x" is forbidden: exceeded quota: compute-resources')
        if chance(0.5):
            body["after"] = rng.randint(0, 5)
        if chance(0.4):
            body["rate"] = round(rng.uniform(0.1, 0.9), 2)
        else:
            body["count"] = rng.choice((1, 2, 5, 20, 100))
        if code == 0 or chance(0.2):
            body["latency"] = rng.choice((0.1, 1.0, 5.0))
        if chance(0.3):
            body["client"] = rng.choice(API_CLIENTS)
        self.api_faults += 1
        return {"apiFault": body}

    def lift_fault(self) -> Obj | None:
        if not self.api_faults:
            return None
        return {"liftFault": {"apiFault": self.rng.randint(1, self.api_faults)}}

    def watch_fault(self) -> Obj:
        body: Obj = {
            "resource": self.rng.choice(WATCHED),
            "fault": self.rng.choice(("pause", "pause", "resume", "drop")),
        }
        if body["fault"] == "pause" and self.chance(0.3):
            body["delay"] = self.rng.choice((1.0, 10.0, 60.0))
        if self.chance(0.3):
            body["controller"] = self.rng.choice(CONTROLLER_NAMES)
        return {"watchFault": body}

    def lost_creation(self) -> list[Obj] | None:
        """The recipe of a lost creation observation (docs/scenarios.md, "Faithful stalls"): the
        pod watch pauses, a scale-up creates pods, they are deleted, the watch is dropped and
        relists without them."""
        ctl = self.pick_controller()
        if ctl is None:
            return None
        return [
            {"watchFault": {"resource": "pods", "fault": "pause"}},
            {"scale": {**self.target(ctl), "replicas": self.rng.randint(1, 6)}},
            {"podFault": {"selector": f"app={ctl.app}", "fault": "delete"}},
            {"watchFault": {"resource": "pods", "fault": "drop"}},
        ]

    def restart(self) -> Obj:
        return {
            "controllerFault": {
                "controller": self.rng.choice(CONTROLLER_NAMES),
                "fault": "restart",
            }
        }

    def config_what_if(self) -> Obj:
        rng = self.rng
        choice = rng.randrange(9)
        if choice == 0:
            return {"config": {"whatIf": {"expectations": rng.random() < 0.5}}}
        if choice == 1:
            return {"config": {"whatIf": {"slowStart": rng.random() < 0.5}}}
        if choice == 2:
            return {"config": {"burstReplicas": rng.choice((1, 2, 5, 500))}}
        if choice == 3:
            return {"config": {"workers": rng.choice((1, 2, 5))}}
        if choice == 4:
            return {"config": {"watchLatency": rng.choice((0.0, 1.0, 5.0))}}
        if choice == 5:
            return {"config": {"apiLatency": rng.choice((0.0, 0.2, 1.0))}}
        if choice == 6:
            return {"config": {"kubeApiQPS": rng.choice((-1.0, 1.0, 20.0))}}
        if choice == 7:
            gate = rng.choice(("StaleControllerConsistencyReplicaSet", "PodDeletionCost"))
            return {"config": {"featureGates": {gate: rng.random() < 0.5}}}
        manual = [] if rng.random() < 0.3 else [rng.choice(CONTROLLER_NAMES)]
        return {"config": {"manualWorkers": manual}}


# -- Deployments (drawn only when the Deployment controller runs) --------------------------------

ROLLOUT_STREAM = 28 << 40
"""Added to the seed for the Deployments' own random stream (issue 28)."""
ROLLOUT_APPS = ("shop", "cart")
"""Their pods' app labels: apart from the ReplicaSets' and RCs' (no Deployment adopts a case's
ReplicaSet, whose pods the other oracles judge)."""
ROLLOUT_STRATEGIES: tuple[Obj, ...] = (
    {},  # the API server's default: RollingUpdate 25% / 25%
    {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
    {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
    {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%", "maxUnavailable": "50%"}},
    {"type": "Recreate"},
)


@dataclass
class _Rollouts:
    """Deployments and what happens to them: rollouts (new images), scales, pauses and resumes,
    and faults aimed at the Deployment controller's writes and watches, and at its pods."""

    rng: Rng
    nodes: int
    names: list[str] = field(default_factory=list)
    serial: int = 0

    def deployments(self) -> list[Obj]:
        out = []
        for i in range(self.rng.choice((1, 1, 2))):
            name = f"deploy-{i}"
            self.names.append(name)
            app = ROLLOUT_APPS[i % len(ROLLOUT_APPS)]
            spec: Obj = {
                "replicas": self.rng.choice((0, 1, 3, 5, 10)),
                "selector": {"matchLabels": {"app": app}},
                "template": {
                    "metadata": {"labels": {"app": app}},
                    "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
                },
            }
            strategy = self.rng.choice(ROLLOUT_STRATEGIES)
            if strategy:
                spec["strategy"] = copy.deepcopy(strategy)
            if self.rng.random() < 0.3:
                spec["minReadySeconds"] = self.rng.choice((5, 30))
            if self.rng.random() < 0.3:
                spec["revisionHistoryLimit"] = self.rng.choice((0, 1, 2))
            out.append(
                {
                    "apiVersion": DEPLOYMENT.api_version,
                    "kind": DEPLOYMENT.kind,
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": spec,
                }
            )
        return out

    def chaos(self, existing: list[Obj]) -> list[Obj]:
        """Actions within the window of the case's own chaos (or the first minute)."""
        window = max((float(a["at"]) for a in existing), default=60.0)
        out: list[Obj] = []
        for _ in range(self.rng.randint(1, 8)):
            at = round(self.rng.uniform(0.0, window), 3)
            action = self.rng.choice((self.rollout, self.rollout, self.scale, self.pause, self.fault))()
            out.append({"at": at, **action})
        paused = [a["patch"]["name"] for a in out if a.get("patch", {}).get("patch", {}).get("spec", {}).get("paused")]
        # Resumed by the lift's instant at the latest: a paused Deployment is never complete.
        out += [{"at": window, "patch": self._patch(name, {"spec": {"paused": False}})} for name in sorted(set(paused))]
        return sorted(out, key=lambda a: float(a["at"]))

    def _patch(self, name: str, patch: Obj) -> Obj:
        return {"kind": DEPLOYMENT.kind, "name": name, "patch": patch}

    def rollout(self) -> Obj:
        self.serial += 1
        image = {"containers": [{"name": "app", "image": f"nginx:1.{27 + self.serial}"}]}
        return {"patch": self._patch(self.rng.choice(self.names), {"spec": {"template": {"spec": image}}})}

    def scale(self) -> Obj:
        return {
            "scale": {
                "kind": DEPLOYMENT.kind,
                "name": self.rng.choice(self.names),
                "replicas": self.rng.choice((0, 1, 3, 5, 10, 20)),
            }
        }

    def pause(self) -> Obj:
        return {"patch": self._patch(self.rng.choice(self.names), {"spec": {"paused": self.rng.random() < 0.6}})}

    def fault(self) -> Obj:
        choice = self.rng.randrange(4)
        rs = DEPLOYMENT.owns[0].resource
        if choice == 0:
            verb, resource = self.rng.choice(
                (("update", rs), ("create", rs), ("update", f"{DEPLOYMENT.resource}/status"), ("delete", rs))
            )
            code = self.rng.choice((409, 500, 429))
            return {"apiFault": {"verb": verb, "resource": resource, "code": code, "count": self.rng.choice((1, 3))}}
        if choice == 1:
            return {"controllerFault": {"controller": DEPLOYMENT.name, "fault": "restart"}}
        if choice == 2:
            app = ROLLOUT_APPS[self.rng.randrange(len(self.names))]
            return {"podFault": {"selector": f"app={app}", "fault": self.rng.choice(POD_FAULTS), "count": 1}}
        resource = self.rng.choice((DEPLOYMENT.resource, rs))
        return {"watchFault": {"resource": resource, "fault": "pause", "controller": DEPLOYMENT.name}}


# -- operators (drawn only with a base scenario that has some) ------------------------------------

OPERATOR_STREAM = 30 << 40
"""Added to the seed for the stream of faults aimed at the base scenario's operators (issue 30)."""
OPERATOR_EARLY = 5.0
"""Half of an operator's restarts come in the first seconds: its handlers run mostly right after
the objects it watches appear (t=0), and a restart finds non-idempotent handlers only between
their writes."""
OPERATOR_SLOWNESS = (0.5, 2.0, 10.0)
# Its writes only: kopf retries a failed handler, but an error on its LIST or WATCH that outlasts
# its `error_backoffs` stops the operator (on a cluster its pod would exit), which the no-crash
# oracle reports; stale reads come from `watchFault {client}` instead.
OPERATOR_API_FAULTS = (("create", "pods"), ("create", "*"), ("patch", "*"), ("update", "*"), ("delete", "*"))


@dataclass
class _OperatorChaos:
    """Faults aimed at the operators: restarts (crash and restart at an instant), handler slowness
    (`controllerFault {operator, fault: slow, seconds}`), stale reads (`watchFault {client}`
    pause, or a dropped watch) and API errors (`apiFault {client}`)."""

    rng: Rng
    operators: list[Obj]

    def chaos(self, existing: list[Obj]) -> list[Obj]:
        window = max((float(a["at"]) for a in existing), default=60.0)
        out: list[Obj] = []
        for _ in range(self.rng.randint(1, 6)):
            spec = self.rng.choice(self.operators)
            name = pathlib.PurePath(str(spec["module"])).stem
            agent = str(spec.get("userAgent") or f"kopf/{name}")
            early = self.rng.random() < 0.5
            at = round(self.rng.uniform(0.0, OPERATOR_EARLY if early else max(window, OPERATOR_EARLY)), 3)
            action = self.rng.choices((self.restart, self.slow, self.watch, self.api), (3, 1.5, 1.5, 2))[0](name, agent)
            out.append({"at": at, **action})
        return sorted(out, key=lambda a: float(a["at"]))

    def restart(self, name: str, agent: str) -> Obj:
        return {"controllerFault": {"operator": name, "fault": "restart"}}

    def slow(self, name: str, agent: str) -> Obj:
        return {"controllerFault": {"operator": name, "fault": "slow", "seconds": self.rng.choice(OPERATOR_SLOWNESS)}}

    def watch(self, name: str, agent: str) -> Obj:
        fault = self.rng.choice(("pause", "pause", "drop"))
        return {"watchFault": {"resource": "*", "fault": fault, "client": agent}}

    def api(self, name: str, agent: str) -> Obj:
        verb, resource = self.rng.choice(OPERATOR_API_FAULTS)
        body: Obj = {"verb": verb, "resource": resource, "code": self.rng.choice((500, 409, 429)), "client": agent}
        body["count"] = self.rng.choice((1, 2, 5))
        return {"apiFault": body}


# -- running a case -----------------------------------------------------------------------------


@dataclass
class CaseResult:
    """What one run of a case found. `violations` is empty for a clean case."""

    seed: int
    violations: list[Violation]
    voided: dict[str, str]
    checked: list[str]
    digest: str | None = None
    end: float = 0.0
    events: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations


def run_scenario_checked(scenario: Obj, *, lift_time: float, quiet: float, digest: bool = False) -> CaseResult:
    """Run scenario data (a swarm case, or a file a failing case was written to) through the
    ordinary runner with the oracles watching: safety all along, liveness at `lift_time + quiet`
    and at `until`. An invalid scenario raises ScenarioError."""
    parsed = parse_scenario(scenario)
    sim = Simulation(parsed, trace_buffer=64)
    report = OracleReport()
    safety = SafetyMonitor(sim, report)
    digester = TraceDigest(sim) if digest else None
    first = lift_time + quiet
    until = max(parsed.until, first)
    bound = liveness_bound(sim.config, lift_time, quiet)
    try:
        sim.start()
        with simulation_gc():  # the GC policy of running simulations (controlplane.gcpolicy)
            sim.run_until(first)
            safety.flush()
            check_liveness(sim, report, bound)
            check_operator_oracles(sim, report)
            sim.run_until(until)
            safety.flush()
            check_liveness(sim, report, bound)
            check_operator_oracles(sim, report)
    except ScenarioError:
        sim.close()
        raise
    except Exception as exc:  # the simulation must never raise: that is the no-crash oracle's violation
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else "?"
        report.violate("no-crash", "simulation", sim.now, f"{type(exc).__name__}: {exc} (at {where})")
    # The simulation contains what raises inside it (a failed sync is requeued, a failed action
    # logged) and reports it as `error` records: for the swarm each is still a crash.
    for record in sim.errors[:1]:
        what = record.get("key") or record.get("task") or "simulation"
        report.violate("no-crash", what, record["time"], f"{record['error']} (contained: {record['where']})")
    report.check("no-crash")
    safety.close()
    sim.close()  # its embedded operators stop (nothing in the world moves)
    return CaseResult(
        seed=parsed.seed,
        violations=report.violations,
        voided=dict(report.voided),
        checked=sorted(report.checked),
        digest=digester.hexdigest() if digester is not None else None,
        end=sim.now,
        events=sim.trace.seq,
    )


def run_case(case: Case, *, digest: bool = False) -> CaseResult:
    return run_scenario_checked(case.scenario(), lift_time=case.lift_time, quiet=case.quiet, digest=digest)


def lift_time_of(scenario: Obj) -> float:
    """Where a case's faults were lifted: the instant of its last action (0 without actions)."""
    return max((float(a["at"]) for a in scenario.get("actions") or ()), default=0.0)


# -- shrinking ----------------------------------------------------------------------------------


def shrink(case: Case, fails: Callable[[Case], bool], *, budget: int = 200) -> Case:
    """A smaller case for which `fails` still holds (it held for `case`), the way Hypothesis
    shrinks: drop chaos actions (halves, then one at a time), drop starting objects, lower
    replicas, fewer nodes, drop base-config keys; keep each step that still fails. At most
    `budget` runs."""
    runs = 0

    def attempt(candidate: Case) -> bool:
        nonlocal runs
        if runs >= budget:
            return False
        runs += 1
        try:
            return fails(candidate)
        except ScenarioError:
            return False

    best = case
    improved = True
    while improved and runs < budget:
        improved = False
        for candidate in _smaller(best):
            if attempt(candidate):
                best = candidate
                improved = True
                break
    return best


def _smaller(case: Case) -> Iterator[Case]:
    chaos = case.chaos
    n = len(chaos)
    size = n // 2
    while size >= 1:
        for start in range(0, n, size):
            yield replace(case, chaos=chaos[:start] + chaos[start + size :])
        size //= 2
    for i in range(len(case.objects)):
        yield replace(case, objects=case.objects[:i] + case.objects[i + 1 :])
    for i, obj in enumerate(case.objects):
        replicas = (obj.get("spec") or {}).get("replicas")
        if isinstance(replicas, int) and replicas > 0:
            for smaller in sorted({0, 1, replicas // 2} - {replicas}):
                yield replace(case, objects=_with_replicas(case.objects, i, smaller))
    for i, action in enumerate(chaos):
        body = action.get("scale")
        if body is not None and body["replicas"] > 1:
            yield replace(
                case,
                chaos=[*chaos[:i], {**action, "scale": {**body, "replicas": body["replicas"] // 2}}, *chaos[i + 1 :]],
            )
    nodes = case.config.get("nodes", 3)
    if nodes > 1:
        fewer = {**case.config, "nodes": nodes - 1}
        downed = {f"node-{nodes}"}
        kept = [a for a in chaos if not ("nodeFault" in a and a["nodeFault"]["name"] in downed)]
        yield replace(case, config=fewer, chaos=kept)
    for key in sorted(case.config):
        if key not in ("resyncPeriod", "nodes"):
            yield replace(case, config={k: v for k, v in case.config.items() if k != key})
    times = sorted({float(a["at"]) for a in chaos})
    if times and times[-1] > 1:
        # Earlier is smaller too: pull the whole schedule towards t=0.
        yield replace(case, chaos=[{**a, "at": round(float(a["at"]) / 2, 3)} for a in chaos])


def _with_replicas(objects: list[Obj], index: int, replicas: int) -> list[Obj]:
    out = list(objects)
    obj = copy.deepcopy(out[index])
    obj["spec"]["replicas"] = replicas
    out[index] = obj
    return out

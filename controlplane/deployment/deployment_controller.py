"""The Deployment controller (pkg/controller/deployment/deployment_controller.go), v1.36, as
at the pinned commit of controlplane.controllers.stages (spec shared/spec/deployment-controller.md).

Guarantees
----------
* Handlers only enqueue Deployment keys (D2); every decision is made in
  `sync_deployment(key)` (D4), the `sync_handler` field so tests can swap it.
* The workqueue (name `deployment`), the workers, Forget / AddRateLimited, a raising sync's
  containment, manual workers, the `sync.*` records and the parking of idle workers are the shared
  runtime's (controlplane.controllers.runtime). Upstream drops a key after 15 requeues
  (`maxRetries`, D3.3): so does `_process` here, through `handle_err`.
* Each stage of a sync is one `sync.stage` record named after the upstream function it follows
  (controlplane.controllers.stages.DEPLOYMENT_STAGES); each ReplicaSet write is one
  `sync.request` record before it goes out.
* The controller keeps no expectations (upstream has none) and no consistency store: its
  snapshot shows an empty expectations table and the no-op store.
* Nothing here reads the wall clock: "now" is the kernel's.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from typing import Any

from controlplane.apiserver import ApiError
from controlplane.apiserver.errors import has_status_cause
from controlplane.consistency import NoopConsistencyStore
from controlplane.controller_ref_manager import ReplicaSetControllerRefManager, recheck_deletion_timestamp
from controlplane.controllers.config import ControllerConfig
from controlplane.controllers.registry import DEPLOYMENT, ControllerSpec
from controlplane.controllers.runtime import ControllerRuntime, SyncContext
from controlplane.deployment import util
from controlplane.deployment.progress import ProgressMixin
from controlplane.deployment.recreate import RecreateMixin
from controlplane.deployment.rollback import RollbackMixin
from controlplane.deployment.rolling import RollingMixin
from controlplane.deployment.sync import SyncMixin, get_rollback_to
from controlplane.events import EventRecorder
from controlplane.expectations import UIDTrackingControllerExpectations
from controlplane.informers import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    ResourceEventHandler,
    SharedInformer,
    meta_namespace_key,
    split_meta_namespace_key,
)
from controlplane.kernel import Kernel
from controlplane.labels import Selector, selector_from_label_selector
from controlplane.podutil import controller_ref
from controlplane.replicaset.kinds import ControllerKind
from controlplane.replicaset.replica_set import POD_CONTROLLER_INDEX, pod_controller_index, pod_controller_index_key
from controlplane.trace import NULL_TRACE, Trace

Obj = dict[str, Any]

MAX_RETRIES = 15  # deployment_controller.go maxRetries


def deployment_selector(d: Obj) -> Selector:
    return selector_from_label_selector(d["spec"].get("selector"))


def deployment_lister_selector(d: Obj) -> Selector | None:
    try:
        return deployment_selector(d)
    except ValueError:
        return None


# The controlled kind as the session's views and the oracles read every controller's `kind`
# (name, kind, resource, component, selector): a Deployment's selector is a LabelSelector.
DEPLOYMENT_KIND = ControllerKind(
    spec=DEPLOYMENT,
    enable_status_terminating_replicas=True,
    selector=deployment_selector,
    lister_selector=deployment_lister_selector,
)


class DeploymentMetrics:
    """The Deployment controller exports no metrics of its own (the runtime's snapshot asks)."""

    def snapshot(self) -> Obj:
        return {}


class DeploymentController(SyncMixin, RollingMixin, RecreateMixin, ProgressMixin, RollbackMixin, ControllerRuntime):
    """The Deployment controller on the shared runtime: it owns ReplicaSets (`owned`)."""

    version = "v1.36"

    def __init__(
        self,
        kernel: Kernel,
        client: Any,
        config: ControllerConfig | None = None,
        *,
        trace: Trace | None = None,
        spec: ControllerSpec = DEPLOYMENT,
    ) -> None:
        super().__init__(kernel, client, spec, config or ControllerConfig(), trace=trace or NULL_TRACE)
        self.owned = spec.owns[0]  # ReplicaSets
        self.kind = DEPLOYMENT_KIND
        self.sync_handler = self.handle_err_sync
        self._build()

    # -- construction (also what a restart redoes) ------------------------------------------
    def _build(self) -> None:
        kernel, cfg, trace = self.kernel, self.config, self.trace
        self._build_informers()
        self.queue = self._new_queue()
        self.expectations = UIDTrackingControllerExpectations(kernel, trace=trace, controller=self.spec.name)
        self.expectations.enabled = cfg.expectations
        self.consistency = NoopConsistencyStore()
        self.metrics = DeploymentMetrics()  # type: ignore[assignment]
        self.recorder = EventRecorder(kernel, self.client, self.spec.component, trace=trace)
        self._reset_workers()

    def _build_informers(self) -> None:
        """Upstream's three informers: Deployments, ReplicaSets, Pods (`d_informer`,
        `rs_informer`, `pod_informer`; the last two are the names every controller has)."""
        kernel, cfg, trace, name = self.kernel, self.config, self.trace, self.spec.name

        def informer(resource: str, indexers: Obj | None = None) -> SharedInformer:
            return SharedInformer(
                kernel,
                self.client,
                resource,
                name=f"{name}/{resource}",
                indexers=indexers,
                resync_period=cfg.resync_period,
                watch_latency=cfg.watch_latency,
                trace=trace,
            )

        self.d_informer = informer(self.spec.resource)
        self.rs_informer = informer(self.owned.resource)
        self.pod_informer = informer("pods", {POD_CONTROLLER_INDEX: pod_controller_index})
        self.d_informer.add_event_handler(
            ResourceEventHandler(self.add_deployment, self.update_deployment, self.delete_deployment)
        )
        self.rs_informer.add_event_handler(
            ResourceEventHandler(self.add_replica_set, self.update_replica_set, self.delete_replica_set)
        )
        self.pod_informer.add_event_handler(ResourceEventHandler(None, None, self.delete_pod))

    @property
    def informers(self) -> tuple[SharedInformer, ...]:
        return (self.d_informer, self.rs_informer, self.pod_informer)

    def set_resync_period(self, period: float) -> None:
        self.config.resync_period = period
        for informer in self.informers:
            informer.set_resync_period(period)

    def set_consistency_gate(self, enabled: bool) -> None:
        """StaleControllerConsistencyReplicaSet is the ReplicaSet controller's: nothing here."""
        self.config.stale_controller_consistency = enabled

    # -- worker: handleErr (D3.3) --------------------------------------------------------------
    async def handle_err_sync(self, key: str, worker: int | None = None) -> Exception | None:
        """`syncHandler` then `handleErr`: the runtime requeues (AddRateLimited) what this
        returns; upstream forgets a NamespaceTerminating error, and drops a key that failed
        `maxRetries` (15) times ("Dropping deployment out of the queue")."""
        err = await self.sync_deployment(key, worker)
        if err is None or has_status_cause(err, "NamespaceTerminating"):
            return None
        if self.queue.num_requeues(key) >= MAX_RETRIES:
            if self.trace.enabled:
                self.trace.emit(
                    "sync.requeue",
                    controller=self.spec.name,
                    key=key,
                    worker=worker,
                    decision="dropped",
                    delay=None,  # the record's shape (controlplane/trace.py): no requeue, no delay
                    requeues=self.queue.num_requeues(key),
                )
            return None
        return err

    # -- enqueueing (D2.10) ------------------------------------------------------------------
    def enqueue(self, d: Obj) -> None:
        self.queue.add(meta_namespace_key(d))

    def resolve_controller_ref(self, namespace: str, ref: Obj) -> Obj | None:
        """`resolveControllerRef` (D2.6)."""
        if ref.get("kind") != self.spec.kind:
            return None
        d = self.d_informer.indexer.get(namespace, ref.get("name", ""))
        if d is None or d["metadata"].get("uid") != ref.get("uid"):
            return None
        return d

    def get_deployments_for_replica_set(self, rs: Obj) -> list[Obj]:
        """`getDeploymentsForReplicaSet` (D2.5)."""
        namespace = rs["metadata"].get("namespace", "")
        return util.get_deployments_for_replica_set(self.d_informer.indexer.by_index(NAMESPACE_INDEX, namespace), rs)

    # -- Deployment handlers (D2.1-D2.3) --------------------------------------------------------
    def add_deployment(self, d: Obj) -> None:
        self.enqueue(d)

    def update_deployment(self, old: Obj, cur: Obj) -> None:
        self.enqueue(cur)

    def delete_deployment(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        d = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(d, dict):
            return
        self.enqueue(d)

    # -- ReplicaSet handlers (D2.4, D2.7, D2.8) -------------------------------------------------
    def add_replica_set(self, rs: Obj) -> None:
        if rs["metadata"].get("deletionTimestamp"):
            self.delete_replica_set(rs)
            return
        ref = controller_ref(rs)
        if ref is not None:
            d = self.resolve_controller_ref(rs["metadata"]["namespace"], ref)
            if d is not None:
                self.enqueue(d)
            return
        for d in self.get_deployments_for_replica_set(rs):
            self.enqueue(d)

    def update_replica_set(self, old: Obj, cur: Obj) -> None:
        if cur["metadata"].get("resourceVersion") == old["metadata"].get("resourceVersion"):
            return
        cur_ref, old_ref = controller_ref(cur), controller_ref(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            d = self.resolve_controller_ref(old["metadata"]["namespace"], old_ref)
            if d is not None:
                self.enqueue(d)
        if cur_ref is not None:
            d = self.resolve_controller_ref(cur["metadata"]["namespace"], cur_ref)
            if d is not None:
                self.enqueue(d)
            return
        label_changed = cur["metadata"].get("labels") != old["metadata"].get("labels")
        if label_changed or ref_changed:
            for d in self.get_deployments_for_replica_set(cur):
                self.enqueue(d)

    def delete_replica_set(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        rs = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(rs, dict):
            return
        ref = controller_ref(rs)
        if ref is None:
            return  # "No controller should care about orphans being deleted."
        d = self.resolve_controller_ref(rs["metadata"]["namespace"], ref)
        if d is not None:
            self.enqueue(d)

    # -- Pod handler (D2.9, as at the pinned commit) ----------------------------------------------
    def delete_pod(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """`deletePod`: a Recreate Deployment is enqueued on every deletion of one of its pods
        (the pinned commit's text; older releases listed ReplicaSets and counted pods first)."""
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(pod, dict):
            return
        d = self.get_deployment_for_pod(pod)
        if d is not None and util.strategy_type(d) == util.RECREATE:
            self.enqueue(d)

    def get_deployment_for_pod(self, pod: Obj) -> Obj | None:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != self.owned.kind:
            return None
        rs = self.rs_informer.indexer.get(pod["metadata"]["namespace"], ref.get("name", ""))
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return None
        rs_ref = controller_ref(rs)
        if rs_ref is None:
            return None
        return self.resolve_controller_ref(rs["metadata"]["namespace"], rs_ref)

    # -- syncDeployment (D4) ---------------------------------------------------------------------
    async def sync_deployment(self, key: str, worker: int | None = None) -> Exception | None:
        return await self._framed_sync(key, worker, self._sync)

    async def _sync(self, ctx: SyncContext) -> Exception | None:
        try:
            namespace, name = split_meta_namespace_key(ctx.key)
        except ValueError as exc:
            return exc
        deployment = self.d_informer.indexer.get(namespace, name)
        if deployment is None:
            self._stage(ctx, "get", found=False)
            ctx.requeue = {"decision": "none"}
            return None
        self._stage(ctx, "get", found=True, resourceVersion=deployment["metadata"].get("resourceVersion"))
        await self._yield()
        d = copy.deepcopy(deployment)  # "Deep-copy otherwise we are mutating our cache."
        ctx.requeue = {"decision": "none"}
        selector = d["spec"].get("selector")
        if selector == {}:
            self.recorder.event(
                d, "Warning", "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required."
            )
            status = d.setdefault("status", {})
            if int(status.get("observedGeneration") or 0) < int(d["metadata"].get("generation") or 0):
                status["observedGeneration"] = d["metadata"].get("generation")
                with contextlib.suppress(ApiError):
                    await self._update_deployment_status(ctx, d)
            return None
        rs_list, err = await self.get_replica_sets_for_deployment(ctx, d)
        if err is not None:
            return err
        await self._yield()
        if d["metadata"].get("deletionTimestamp"):
            self._stage(ctx, "syncStatusOnly")
            return await self.sync_status_only(ctx, d, rs_list)
        err = await self.check_paused_conditions(ctx, d)
        if err is not None:
            return err
        if d["spec"].get("paused"):
            self._stage(ctx, "sync", reason="paused")
            return await self.sync(ctx, d, rs_list)
        if get_rollback_to(d) is not None:
            return await self.rollback(ctx, d, rs_list)
        scaling_event, err = await self.is_scaling_event(ctx, d, rs_list)
        if err is not None:
            return err
        if scaling_event:
            self._stage(ctx, "sync", reason="scaling event")
            return await self.sync(ctx, d, rs_list)
        kind = util.strategy_type(d)
        if kind == util.RECREATE:
            pod_map = self.get_pod_map_for_deployment(d, rs_list)
            self._stage(ctx, "getPodMapForDeployment", pods={uid: len(p) for uid, p in pod_map.items()})
            self._stage(ctx, "rolloutRecreate")
            return await self.rollout_recreate(ctx, d, rs_list, pod_map)
        if kind == util.ROLLING_UPDATE:
            self._stage(ctx, "rolloutRolling", maxSurge=util.max_surge(d), maxUnavailable=util.max_unavailable(d))
            return await self.rollout_rolling(ctx, d, rs_list)
        return ValueError(f"unexpected deployment strategy type: {kind}")

    # -- claiming (D5) --------------------------------------------------------------------------
    async def get_replica_sets_for_deployment(self, ctx: SyncContext, d: Obj) -> tuple[list[Obj], Exception | None]:
        """`getReplicaSetsForDeployment` (D5.1): every RS of the namespace, claimed."""
        meta = d["metadata"]
        rs_list = self.rs_informer.indexer.by_index(NAMESPACE_INDEX, meta["namespace"])
        try:
            selector = selector_from_label_selector(d["spec"].get("selector"))
        except ValueError as exc:
            return [], ValueError(f"deployment {meta['namespace']}/{meta['name']} has invalid label selector: {exc}")

        async def get_fresh() -> Obj:
            fresh: Obj = await self.client.get(self.spec.resource, meta["namespace"], meta["name"])
            return fresh

        manager = ReplicaSetControllerRefManager(
            self.client,
            d,
            selector,
            self.spec.api_version,
            self.spec.kind,
            recheck_deletion_timestamp(get_fresh, {**d, "kind": self.spec.kind}),
            self.owned.resource,
        )
        claimed, err = await manager.claim_replica_sets(rs_list)
        self._stage(
            ctx,
            "getReplicaSetsForDeployment",
            replicaSets=[rs["metadata"]["name"] for rs in claimed],
            adopted=manager.adopted,
            released=manager.released,
            error=None if err is None else str(err),
        )
        return claimed, err

    def get_pod_map_for_deployment(self, d: Obj, rs_list: list[Obj]) -> dict[str, list[Obj]]:
        """`getPodMapForDeployment`: each RS's pods by the pod controller index (FilterPodsByOwner
        without orphans), keyed by RS UID."""
        indexer = self.pod_informer.indexer
        pod_map: dict[str, list[Obj]] = {}
        for rs in rs_list:
            meta = rs["metadata"]
            key = pod_controller_index_key(
                meta["namespace"], {"kind": self.owned.kind, "name": meta["name"], "uid": meta["uid"]}
            )
            pod_map[meta["uid"]] = indexer.by_index(POD_CONTROLLER_INDEX, key)
        return pod_map


def new_controller(
    kernel: Kernel, client: Any, config: ControllerConfig, *, trace: Trace, flags: Mapping[str, Any]
) -> DeploymentController:
    """The registry's factory of the Deployment controller (v1.36)."""
    return DeploymentController(kernel, client, config, trace=trace)

"""pkg/controller/deployment/sync.go: the paused / scaling sync, the new and old ReplicaSets,
proportional scaling, history clean-up and the status (spec D6, D10, D11, D12.1-D12.3).

`SyncMixin` holds the methods upstream defines on `DeploymentController` in sync.go; the
controller class (deployment_controller.py) mixes them in, as Go spreads one type's methods
over several files."""

from __future__ import annotations

import contextlib
import copy
from typing import TYPE_CHECKING, Any

from controlplane.apiserver import ApiError
from controlplane.apiserver.errors import has_status_cause, is_already_exists, is_not_found
from controlplane.deployment import util
from controlplane.podutil import new_controller_ref

if TYPE_CHECKING:
    from controlplane.controllers.runtime import SyncContext
    from controlplane.deployment.deployment_controller import DeploymentController

Obj = dict[str, Any]


class SyncMixin:
    # -- sync (D10.1) ---------------------------------------------------------------------------
    async def sync(self: DeploymentController, ctx: SyncContext, d: Obj, rs_list: list[Obj]) -> Exception | None:
        """`sync`: a paused Deployment or a scaling event: scale, clean up (paused), status."""
        new_rs, old_rss, err = await self.get_all_replica_sets_and_sync_revision(ctx, d, rs_list, False)
        if err is not None:
            return err
        err = await self.scale(ctx, d, new_rs, old_rss)
        if err is not None:
            return err
        if d["spec"].get("paused") and get_rollback_to(d) is None:
            err = await self.cleanup_deployment(ctx, old_rss, d)
            if err is not None:
                return err
        return await self.sync_deployment_status(ctx, [*old_rss, new_rs], new_rs, d)

    async def sync_status_only(
        self: DeploymentController, ctx: SyncContext, d: Obj, rs_list: list[Obj]
    ) -> Exception | None:
        """`syncStatusOnly` (D4.6): a Deployment being deleted: status, nothing else."""
        new_rs, old_rss, err = await self.get_all_replica_sets_and_sync_revision(ctx, d, rs_list, False)
        if err is not None:
            return err
        return await self.sync_deployment_status(ctx, [*old_rss, new_rs], new_rs, d)

    async def is_scaling_event(
        self: DeploymentController, ctx: SyncContext, d: Obj, rs_list: list[Obj]
    ) -> tuple[bool, Exception | None]:
        """`isScalingEvent` (D10.2): an active RS whose desired-replicas differs from spec.replicas."""
        new_rs, old_rss, err = await self.get_all_replica_sets_and_sync_revision(ctx, d, rs_list, False)
        if err is not None:
            return False, err
        for rs in util.filter_active_replica_sets([*old_rss, new_rs]):
            desired = util.get_desired_replicas_annotation(rs)
            if desired is None:
                continue
            if desired != util.replicas(d):
                self._stage(ctx, "isScalingEvent", scaling=True, replicaSet=rs["metadata"]["name"], desired=desired)
                return True, None
        self._stage(ctx, "isScalingEvent", scaling=False)
        return False, None

    # -- new and old ReplicaSets (D6) -----------------------------------------------------------
    async def get_all_replica_sets_and_sync_revision(
        self: DeploymentController, ctx: SyncContext, d: Obj, rs_list: list[Obj], create_if_not_existed: bool
    ) -> tuple[Obj | None, list[Obj], Exception | None]:
        """`getAllReplicaSetsAndSyncRevision` (D6.3) → (newRS or None, allOldRSs, error)."""
        _, all_old_rss = util.find_old_replica_sets(d, rs_list)
        new_rs, err = await self.get_new_replica_set(ctx, d, rs_list, all_old_rss, create_if_not_existed)
        return new_rs, all_old_rss, err

    async def get_new_replica_set(
        self: DeploymentController,
        ctx: SyncContext,
        d: Obj,
        rs_list: list[Obj],
        old_rss: list[Obj],
        create_if_not_existed: bool,
    ) -> tuple[Obj | None, Exception | None]:
        """`getNewReplicaSet` (D6.5-D6.8). Mutates `d` (the sync's deep copy) as upstream does."""
        existing_new_rs = util.find_new_replica_set(d, rs_list)
        max_old_revision = util.max_revision(old_rss)
        new_revision = str(max_old_revision + 1)
        namespace = d["metadata"]["namespace"]
        now = self.kernel.now
        if existing_new_rs is not None:
            rs_copy = copy.deepcopy(existing_new_rs)
            annotations_updated = util.set_new_replica_set_annotations(
                d, rs_copy, new_revision, True, util.MAX_REV_HISTORY_LENGTH_IN_CHARS
            )
            min_ready = d["spec"].get("minReadySeconds") or 0
            min_ready_needs_update = (rs_copy["spec"].get("minReadySeconds") or 0) != min_ready
            if annotations_updated or min_ready_needs_update:
                rs_copy["spec"] = {**rs_copy["spec"], "minReadySeconds": min_ready}
                self._stage(
                    ctx,
                    "getNewReplicaSet",
                    action="update",
                    replicaSet=rs_copy["metadata"]["name"],
                    revision=new_revision,
                )
                try:
                    updated = await self._update_rs(ctx, rs_copy)
                except ApiError as exc:
                    return None, exc
                return updated, None
            revision = util.annotations_of(rs_copy).get(util.REVISION_ANNOTATION, "")
            needs_update = util.set_deployment_revision(d, revision)
            status = d.setdefault("status", {})
            cond = util.get_deployment_condition(status, util.DEPLOYMENT_PROGRESSING)
            if util.has_progress_deadline(d) and cond is None:
                msg = f'Found new replica set "{rs_copy["metadata"]["name"]}"'
                util.set_deployment_condition(
                    status,
                    util.new_deployment_condition(
                        util.DEPLOYMENT_PROGRESSING, "True", util.FOUND_NEW_RS_REASON, msg, now
                    ),
                )
                needs_update = True
            self._stage(
                ctx,
                "getNewReplicaSet",
                action="found",
                replicaSet=rs_copy["metadata"]["name"],
                revisionSynced=needs_update,
            )
            if needs_update:
                try:
                    await self._update_deployment_status(ctx, d)
                except ApiError as exc:
                    return None, exc
            return rs_copy, None
        if not create_if_not_existed:
            self._stage(ctx, "getNewReplicaSet", action="none")
            return None, None
        # D6.8: a new ReplicaSet named by the template's hash.
        collision_count = (d.get("status") or {}).get("collisionCount")
        template = d["spec"]["template"]
        pod_template_hash = util.compute_hash(template, collision_count)
        new_template = copy.deepcopy(template)
        tmeta = new_template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: pod_template_hash}
        selector = copy.deepcopy(d["spec"]["selector"])
        selector["matchLabels"] = {
            **(selector.get("matchLabels") or {}),
            util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: pod_template_hash,
        }
        name = f"{d['metadata']['name']}-{pod_template_hash}"
        new_rs: Obj = {
            "apiVersion": self.owned.api_version,
            "kind": self.owned.kind,
            "metadata": {
                "name": name,
                "namespace": namespace,
                "ownerReferences": [new_controller_ref(d, self.spec.api_version, self.spec.kind)],
                "labels": dict(tmeta["labels"]),
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": d["spec"].get("minReadySeconds") or 0,
                "selector": selector,
                "template": new_template,
            },
        }
        all_rss = [*old_rss, new_rs]
        try:
            new_replicas = util.new_rs_new_replicas(d, all_rss, new_rs)
        except ValueError as exc:
            return None, exc
        new_rs["spec"]["replicas"] = new_replicas
        util.set_new_replica_set_annotations(d, new_rs, new_revision, False, util.MAX_REV_HISTORY_LENGTH_IN_CHARS)
        self._stage(
            ctx,
            "getNewReplicaSet",
            action="create",
            replicaSet=name,
            replicas=new_replicas,
            hash=pod_template_hash,
            revision=new_revision,
        )
        already_exists = False
        self._request(ctx, "create", name)
        await self._yield()
        try:
            created_rs: Obj = await self.client.create(self.owned.resource, namespace, new_rs)
        except ApiError as exc:
            if is_already_exists(exc):
                rs = self.rs_informer.indexer.get(namespace, name)
                if rs is None:
                    return None, exc  # the lister's NotFound
                if util.is_controlled_by(rs, d) and util.equal_ignore_hash(
                    d["spec"]["template"], rs["spec"]["template"]
                ):
                    created_rs = rs
                    already_exists = True
                else:
                    # A hash collision: bump collisionCount and retry with backoff (D6.8).
                    status = d.setdefault("status", {})
                    status["collisionCount"] = (status.get("collisionCount") or 0) + 1
                    with contextlib.suppress(ApiError):
                        await self._update_deployment_status(ctx, d)
                    self._stage(ctx, "getNewReplicaSet", action="collision", collisionCount=status["collisionCount"])
                    return None, exc
            elif has_status_cause(exc, "NamespaceTerminating"):
                return None, exc
            else:
                msg = f'Failed to create new replica set "{name}": {exc.message}'
                if util.has_progress_deadline(d):
                    status = d.setdefault("status", {})
                    util.set_deployment_condition(
                        status,
                        util.new_deployment_condition(
                            util.DEPLOYMENT_PROGRESSING, "False", util.FAILED_RS_CREATE_REASON, msg, self.kernel.now
                        ),
                    )
                    with contextlib.suppress(ApiError):
                        await self._update_deployment_status(ctx, d)
                self.recorder.event(d, "Warning", util.FAILED_RS_CREATE_REASON, msg)
                return None, exc
        if not already_exists:
            # The create answered: the new ReplicaSet exists (breakpoints stop here).
            self._stage(ctx, "getNewReplicaSet", action="created", replicaSet=name, revision=new_revision)
        if not already_exists and new_replicas > 0:
            self.recorder.event(
                d, "Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {new_replicas}"
            )
        needs_update = util.set_deployment_revision(d, new_revision)
        if not already_exists and util.has_progress_deadline(d):
            msg = f'Created new replica set "{name}"'
            util.set_deployment_condition(
                d.setdefault("status", {}),
                util.new_deployment_condition(
                    util.DEPLOYMENT_PROGRESSING, "True", util.NEW_REPLICA_SET_REASON, msg, self.kernel.now
                ),
            )
            needs_update = True
        if needs_update:
            try:
                await self._update_deployment_status(ctx, d)
            except ApiError as exc:
                return created_rs, exc
        return created_rs, None

    # -- scale (D10.3-D10.5) ----------------------------------------------------------------------
    async def scale(
        self: DeploymentController, ctx: SyncContext, d: Obj, new_rs: Obj | None, old_rss: list[Obj]
    ) -> Exception | None:
        """`scale`: one active RS gets everything; a saturated new RS takes the old ones to 0;
        otherwise (RollingUpdate) the difference is spread proportionally."""
        active_or_latest = util.find_active_or_latest(new_rs, old_rss)
        if active_or_latest is not None:
            self._stage(
                ctx,
                "scale",
                mode="activeOrLatest",
                replicaSet=active_or_latest["metadata"]["name"],
                to=util.replicas(d),
            )
            if util.replicas(active_or_latest) == util.replicas(d):
                return None
            _, _, err = await self.scale_replica_set_and_record_event(ctx, active_or_latest, util.replicas(d), d)
            return err
        if util.is_saturated(d, new_rs):
            self._stage(ctx, "scale", mode="saturated")
            for old in util.filter_active_replica_sets(old_rss):
                _, _, err = await self.scale_replica_set_and_record_event(ctx, old, 0, d)
                if err is not None:
                    return err
            return None
        if not util.is_rolling_update(d):
            self._stage(ctx, "scale", mode="none")
            return None
        all_rss = util.filter_active_replica_sets([*old_rss, new_rs])
        all_rss_replicas = util.get_replica_count_for_replica_sets(all_rss)
        allowed_size = util.replicas(d) + util.max_surge(d) if util.replicas(d) > 0 else 0
        to_add = allowed_size - all_rss_replicas
        if to_add > 0:
            util.sort_by_size_newer(all_rss)
        elif to_add < 0:
            util.sort_by_size_older(all_rss)
        added = 0
        sizes: dict[str, int] = {}
        for rs in all_rss:
            name = rs["metadata"]["name"]
            if to_add != 0:
                proportion = util.get_replica_set_proportion(rs, d, to_add, added)
                sizes[name] = util.replicas(rs) + proportion
                added += proportion
            else:
                sizes[name] = util.replicas(rs)
        for i, rs in enumerate(all_rss):
            name = rs["metadata"]["name"]
            if i == 0 and to_add != 0:
                sizes[name] = max(0, sizes[name] + to_add - added)
        self._stage(ctx, "scale", mode="proportional", allowed=allowed_size, toAdd=to_add, sizes=dict(sizes))
        for rs in all_rss:
            _, _, err = await self.scale_replica_set(ctx, rs, sizes[rs["metadata"]["name"]], d)
            if err is not None:
                return err
        return None

    async def scale_replica_set_and_record_event(
        self: DeploymentController, ctx: SyncContext, rs: Obj, new_scale: int, d: Obj
    ) -> tuple[bool, Obj, Exception | None]:
        if util.replicas(rs) == new_scale:
            return False, rs, None
        return await self.scale_replica_set(ctx, rs, new_scale, d)

    async def scale_replica_set(
        self: DeploymentController, ctx: SyncContext, rs: Obj, new_scale: int, d: Obj
    ) -> tuple[bool, Obj, Exception | None]:
        """`scaleReplicaSet` (D10.5): one PUT of size and replica annotations; an Event when the
        size changed."""
        size_needs_update = util.replicas(rs) != new_scale
        max_replicas = util.replicas(d) + util.max_surge(d)
        annotations_need_update = util.replicas_annotations_need_update(rs, util.replicas(d), max_replicas)
        scaled = False
        if size_needs_update or annotations_need_update:
            old_scale = util.replicas(rs)
            rs_copy = copy.deepcopy(rs)
            rs_copy["spec"] = {**rs_copy["spec"], "replicas": new_scale}
            util.set_replicas_annotations(rs_copy, util.replicas(d), max_replicas)
            try:
                rs = await self._update_rs(ctx, rs_copy)
            except ApiError as exc:
                return False, rs, exc
            if size_needs_update:
                scaled = True
                direction = "up" if old_scale < new_scale else "down"
                self.recorder.event(
                    d,
                    "Normal",
                    "ScalingReplicaSet",
                    f"Scaled {direction} replica set {rs['metadata']['name']} from {old_scale} to {new_scale}",
                )
        return scaled, rs, None

    # -- cleanupDeployment (D11) ----------------------------------------------------------------
    async def cleanup_deployment(
        self: DeploymentController, ctx: SyncContext, old_rss: list[Obj], d: Obj
    ) -> Exception | None:
        if not util.has_revision_history_limit(d):
            return None
        cleanable = [rs for rs in old_rss if rs is not None and not rs["metadata"].get("deletionTimestamp")]
        diff = len(cleanable) - int(d["spec"]["revisionHistoryLimit"])
        if diff <= 0:
            return None
        util.sort_by_revision(cleanable)
        deleted: list[str] = []
        for rs in cleanable[:diff]:
            meta, status = rs["metadata"], rs.get("status") or {}
            if (
                status.get("replicas")
                or util.replicas(rs) != 0
                or int(meta.get("generation") or 0) > int(status.get("observedGeneration") or 0)
                or meta.get("deletionTimestamp")
            ):
                continue
            self._request(ctx, "delete", meta["name"])
            await self._yield()
            try:
                await self.client.delete(self.owned.resource, meta["namespace"], meta["name"])
            except ApiError as exc:
                if not is_not_found(exc):
                    self._stage(ctx, "cleanupDeployment", deleted=deleted, error=exc.message)
                    return exc
            deleted.append(meta["name"])
        self._stage(ctx, "cleanupDeployment", limit=d["spec"]["revisionHistoryLimit"], deleted=deleted)
        return None

    # -- status (D12.1-D12.4) ----------------------------------------------------------------------
    async def sync_deployment_status(
        self: DeploymentController, ctx: SyncContext, all_rss: list[Obj | None], new_rs: Obj | None, d: Obj
    ) -> Exception | None:
        new_status = self.calculate_status(all_rss, new_rs, d)
        if _omit_zero(d.get("status") or {}) == new_status:
            self._stage(ctx, "syncDeploymentStatus", written=False)
            return None
        d["status"] = new_status
        try:
            await self._update_deployment_status(ctx, d)
        except ApiError as exc:
            self._stage(ctx, "syncDeploymentStatus", written=False, error=exc.message)
            return exc
        self._stage(ctx, "syncDeploymentStatus", written=True, status=_counts(new_status))
        return None

    def calculate_status(self: DeploymentController, all_rss: list[Obj | None], new_rs: Obj | None, d: Obj) -> Obj:
        """`calculateStatus` (D12.2, D12.3): the new status (conditions copied, Available set)."""
        available = util.get_available_replica_count_for_replica_sets(all_rss)
        total = util.get_replica_count_for_replica_sets(all_rss)
        unavailable = max(0, total - available)
        old = d.get("status") or {}
        status: Obj = {
            "observedGeneration": int(d["metadata"].get("generation") or 0),
            "replicas": util.get_actual_replica_count_for_replica_sets(all_rss),
            "updatedReplicas": util.get_actual_replica_count_for_replica_sets([new_rs]),
            "readyReplicas": util.get_ready_replica_count_for_replica_sets(all_rss),
            "availableReplicas": available,
            "unavailableReplicas": unavailable,
        }
        if self.config.terminating_replicas:
            terminating = util.get_terminating_replica_count_for_replica_sets(all_rss)
            if terminating is not None:
                status["terminatingReplicas"] = terminating
        if old.get("collisionCount") is not None:
            status["collisionCount"] = old["collisionCount"]
        if old.get("conditions"):
            status["conditions"] = [dict(c) for c in old["conditions"]]
        now = self.kernel.now
        if available >= util.replicas(d) - util.max_unavailable(d):
            cond = util.new_deployment_condition(
                util.DEPLOYMENT_AVAILABLE,
                "True",
                util.MINIMUM_REPLICAS_AVAILABLE,
                "Deployment has minimum availability.",
                now,
            )
        else:
            cond = util.new_deployment_condition(
                util.DEPLOYMENT_AVAILABLE,
                "False",
                util.MINIMUM_REPLICAS_UNAVAILABLE,
                "Deployment does not have minimum availability.",
                now,
            )
        util.set_deployment_condition(status, cond)
        return _omit_zero(status)

    # -- writes --------------------------------------------------------------------------------
    async def _update_rs(self: DeploymentController, ctx: SyncContext, rs: Obj) -> Obj:
        """One PUT of a ReplicaSet (a `sync.request` record first)."""
        meta = rs["metadata"]
        self._request(ctx, "update", meta["name"])
        await self._yield()
        updated: Obj = await self.client.update(self.owned.resource, meta["namespace"], meta["name"], rs)
        return updated

    async def _update_deployment_status(self: DeploymentController, ctx: SyncContext, d: Obj) -> Obj:
        """`UpdateStatus` of the Deployment; `d` takes the stored resourceVersion (as the Go
        client decodes the answer into it), so a second status write of one sync does not 409."""
        meta = d["metadata"]
        updated: Obj = await self.client.update(
            self.spec.resource, meta["namespace"], meta["name"], d, subresource="status"
        )
        meta["resourceVersion"] = updated["metadata"].get("resourceVersion")
        return updated


def get_rollback_to(d: Obj) -> int | None:
    """`getRollbackTo` (D13.1): the legacy annotation as an int64, or None."""
    value = util.annotations_of(d).get(util.DEPRECATED_ROLLBACK_TO)
    if not value:
        return None
    try:
        return util.parse_int64(value)  # strconv.ParseInt(revision, 10, 64); "If it's invalid, ignore it."
    except ValueError:
        return None


# DeploymentStatus's `*int32` fields: `omitempty` leaves out a nil pointer, not a pointer to 0.
_POINTER_FIELDS = frozenset({"terminatingReplicas", "collisionCount"})


def _omit_zero(status: Obj) -> Obj:
    """DeploymentStatus's int32 fields are `omitempty`: zero values are not serialised; its
    pointer fields (`terminatingReplicas`, `collisionCount`) are, when set."""
    return {
        k: v
        for k, v in status.items()
        if k in _POINTER_FIELDS or not (isinstance(v, int) and not isinstance(v, bool) and v == 0)
    }


def _counts(status: Obj) -> Obj:
    keys = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
    return {k: status.get(k, 0) for k in keys}

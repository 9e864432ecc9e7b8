"""pkg/controller/deployment/rolling.go: the RollingUpdate strategy (spec D8)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controlplane.deployment import util

if TYPE_CHECKING:
    from controlplane.controllers.runtime import SyncContext
    from controlplane.deployment.deployment_controller import DeploymentController

Obj = dict[str, Any]


class RollingMixin:
    async def rollout_rolling(
        self: DeploymentController, ctx: SyncContext, d: Obj, rs_list: list[Obj]
    ) -> Exception | None:
        """`rolloutRolling` (D8.1): scale up the new RS, *or* scale down old ones, then status."""
        new_rs, old_rss, err = await self.get_all_replica_sets_and_sync_revision(ctx, d, rs_list, True)
        if err is not None:
            return err
        assert new_rs is not None  # created when missing, or err
        all_rss: list[Obj | None] = [*old_rss, new_rs]
        scaled_up, err = await self.reconcile_new_replica_set(ctx, all_rss, new_rs, d)
        if err is not None:
            return err
        if scaled_up:
            return await self.sync_rollout_status(ctx, all_rss, new_rs, d)
        scaled_down, err = await self.reconcile_old_replica_sets(
            ctx, all_rss, util.filter_active_replica_sets(old_rss), new_rs, d
        )
        if err is not None:
            return err
        if scaled_down:
            return await self.sync_rollout_status(ctx, all_rss, new_rs, d)
        if util.deployment_complete(d, d.get("status") or {}):
            err = await self.cleanup_deployment(ctx, old_rss, d)
            if err is not None:
                return err
        return await self.sync_rollout_status(ctx, all_rss, new_rs, d)

    async def reconcile_new_replica_set(
        self: DeploymentController, ctx: SyncContext, all_rss: list[Obj | None], new_rs: Obj, d: Obj
    ) -> tuple[bool, Exception | None]:
        """`reconcileNewReplicaSet` (D8.2)."""
        have, want = util.replicas(new_rs), util.replicas(d)
        if have == want:
            self._stage(ctx, "reconcileNewReplicaSet", replicaSet=new_rs["metadata"]["name"], replicas=have, to=have)
            return False, None
        target = want if have > want else util.new_rs_new_replicas(d, all_rss, new_rs)
        self._stage(
            ctx,
            "reconcileNewReplicaSet",
            replicaSet=new_rs["metadata"]["name"],
            replicas=have,
            to=target,
            maxSurge=util.max_surge(d),
        )
        scaled, _, err = await self.scale_replica_set_and_record_event(ctx, new_rs, target, d)
        return scaled, err

    async def reconcile_old_replica_sets(
        self: DeploymentController,
        ctx: SyncContext,
        all_rss: list[Obj | None],
        old_rss: list[Obj],
        new_rs: Obj,
        d: Obj,
    ) -> tuple[bool, Exception | None]:
        """`reconcileOldReplicaSets` (D8.3): errors of the scale-downs are swallowed, as upstream."""
        old_pods_count = util.get_replica_count_for_replica_sets(old_rss)
        if old_pods_count == 0:
            self._stage(ctx, "reconcileOldReplicaSets", oldReplicas=0, maxScaledDown=0)
            return False, None
        all_pods_count = util.get_replica_count_for_replica_sets(all_rss)
        min_available = util.replicas(d) - util.max_unavailable(d)
        new_rs_unavailable = util.replicas(new_rs) - util.status_of(new_rs, "availableReplicas")
        max_scaled_down = all_pods_count - min_available - new_rs_unavailable
        self._stage(
            ctx,
            "reconcileOldReplicaSets",
            oldReplicas=old_pods_count,
            allReplicas=all_pods_count,
            minAvailable=min_available,
            newUnavailable=new_rs_unavailable,
            maxScaledDown=max_scaled_down,
        )
        if max_scaled_down <= 0:
            return False, None
        old_rss, cleanup_count, err = await self.cleanup_unhealthy_replicas(ctx, old_rss, d, max_scaled_down)
        if err is not None:
            return False, None
        scaled_down_count, err = await self.scale_down_old_replica_sets_for_rolling_update(
            ctx, [*old_rss, new_rs], old_rss, d
        )
        if err is not None:
            return False, None
        return cleanup_count + scaled_down_count > 0, None

    async def cleanup_unhealthy_replicas(
        self: DeploymentController, ctx: SyncContext, old_rss: list[Obj], d: Obj, max_cleanup_count: int
    ) -> tuple[list[Obj], int, Exception | None]:
        """`cleanupUnhealthyReplicas` (D8.4): scale old RSs down by their unavailable replicas."""
        old_rss = list(old_rss)
        util.sort_by_creation_timestamp(old_rss)
        total = 0
        for i, target in enumerate(old_rss):
            if total >= max_cleanup_count:
                break
            have = util.replicas(target)
            available = util.status_of(target, "availableReplicas")
            if have == 0 or have == available:
                continue
            count = min(max_cleanup_count - total, have - available)
            new_count = have - count
            if new_count > have:
                return (
                    [],
                    0,
                    ValueError(
                        f"when cleaning up unhealthy replicas, got invalid request to scale down "
                        f"{target['metadata']['namespace']}/{target['metadata']['name']} {have} -> {new_count}"
                    ),
                )
            _, updated, err = await self.scale_replica_set_and_record_event(ctx, target, new_count, d)
            if err is not None:
                return [], total, err
            total += count
            old_rss[i] = updated
        self._stage(ctx, "cleanupUnhealthyReplicas", scaledDown=total, max=max_cleanup_count)
        return old_rss, total, None

    async def scale_down_old_replica_sets_for_rolling_update(
        self: DeploymentController, ctx: SyncContext, all_rss: list[Obj | None], old_rss: list[Obj], d: Obj
    ) -> tuple[int, Exception | None]:
        """`scaleDownOldReplicaSetsForRollingUpdate` (D8.5)."""
        min_available = util.replicas(d) - util.max_unavailable(d)
        available = util.get_available_replica_count_for_replica_sets(all_rss)
        if available <= min_available:
            self._stage(
                ctx,
                "scaleDownOldReplicaSetsForRollingUpdate",
                available=available,
                minAvailable=min_available,
                scaledDown=0,
            )
            return 0, None
        old_rss = list(old_rss)
        util.sort_by_creation_timestamp(old_rss)
        total_scaled_down = 0
        total_scale_down_count = available - min_available
        for target in old_rss:
            if total_scaled_down >= total_scale_down_count:
                break
            if util.replicas(target) == 0:
                continue
            count = min(util.replicas(target), total_scale_down_count - total_scaled_down)
            new_count = util.replicas(target) - count
            _, _, err = await self.scale_replica_set_and_record_event(ctx, target, new_count, d)
            if err is not None:
                return total_scaled_down, err
            total_scaled_down += count
        self._stage(
            ctx,
            "scaleDownOldReplicaSetsForRollingUpdate",
            available=available,
            minAvailable=min_available,
            scaledDown=total_scaled_down,
        )
        return total_scaled_down, None

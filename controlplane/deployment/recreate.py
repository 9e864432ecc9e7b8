"""pkg/controller/deployment/recreate.go: the Recreate strategy, released branch (spec D9)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controlplane.deployment import util

if TYPE_CHECKING:
    from controlplane.controllers.runtime import SyncContext
    from controlplane.deployment.deployment_controller import DeploymentController

Obj = dict[str, Any]


class RecreateMixin:
    async def rollout_recreate(
        self: DeploymentController, ctx: SyncContext, d: Obj, rs_list: list[Obj], pod_map: dict[str, list[Obj]]
    ) -> Exception | None:
        """`rolloutRecreate` (D9.1): old RSs to 0, wait for their pods to go, then the new RS."""
        new_rs, old_rss, err = await self.get_all_replica_sets_and_sync_revision(ctx, d, rs_list, False)
        if err is not None:
            return err
        all_rss: list[Obj | None] = [*old_rss, new_rs]
        active_old = util.filter_active_replica_sets(old_rss)
        scaled_down, err = await self.scale_down_old_replica_sets_for_recreate(ctx, active_old, d)
        if err is not None:
            return err
        if scaled_down:
            return await self.sync_rollout_status(ctx, all_rss, new_rs, d)
        running = old_pods_running(new_rs, old_rss, pod_map)
        self._stage(ctx, "oldPodsRunning", running=running)
        if running:
            return await self.sync_rollout_status(ctx, all_rss, new_rs, d)
        if new_rs is None:
            new_rs, old_rss, err = await self.get_all_replica_sets_and_sync_revision(ctx, d, rs_list, True)
            if err is not None:
                return err
            all_rss = [*old_rss, new_rs]
        assert new_rs is not None
        _, _, err = await self.scale_replica_set_and_record_event(ctx, new_rs, util.replicas(d), d)
        self._stage(ctx, "scaleUpNewReplicaSetForRecreate", replicaSet=new_rs["metadata"]["name"], to=util.replicas(d))
        if err is not None:
            return err
        if util.deployment_complete(d, d.get("status") or {}):
            err = await self.cleanup_deployment(ctx, old_rss, d)
            if err is not None:
                return err
        return await self.sync_rollout_status(ctx, all_rss, new_rs, d)

    async def scale_down_old_replica_sets_for_recreate(
        self: DeploymentController, ctx: SyncContext, old_rss: list[Obj], d: Obj
    ) -> tuple[bool, Exception | None]:
        """`scaleDownOldReplicaSetsForRecreate`: every old RS to 0; a scaled one is replaced in
        `old_rss` by the updated object, as upstream replaces it in the caller's slice."""
        scaled = False
        for i, rs in enumerate(old_rss):
            if util.replicas(rs) == 0:
                continue
            scaled_rs, updated_rs, err = await self.scale_replica_set_and_record_event(ctx, rs, 0, d)
            if err is not None:
                return False, err
            if scaled_rs:
                old_rss[i] = updated_rs
                scaled = True
        self._stage(ctx, "scaleDownOldReplicaSetsForRecreate", scaled=scaled)
        return scaled, None


def old_pods_running(new_rs: Obj | None, old_rss: list[Obj], pod_map: dict[str, list[Obj]]) -> bool:
    """`oldPodsRunning` (D9.1 step 3): old RSs report pods, or a pod of an RS other than the new
    one is not Failed/Succeeded."""
    if util.get_actual_replica_count_for_replica_sets(old_rss) > 0:
        return True
    new_uid = None if new_rs is None else new_rs["metadata"].get("uid")
    for rs_uid, pods in pod_map.items():
        if new_uid is not None and rs_uid == new_uid:
            continue
        for pod in pods:
            if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
                continue
            return True
    return False

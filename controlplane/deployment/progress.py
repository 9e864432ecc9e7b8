"""pkg/controller/deployment/progress.go: the Progressing condition, ReplicaFailure, and the
requeue of a stuck rollout at its progress deadline (spec D12.5-D12.9)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controlplane.apiserver import ApiError
from controlplane.deployment import util
from controlplane.deployment.sync import _counts, _omit_zero
from controlplane.kernel import parse_rfc3339

if TYPE_CHECKING:
    from controlplane.controllers.runtime import SyncContext
    from controlplane.deployment.deployment_controller import DeploymentController

Obj = dict[str, Any]


class ProgressMixin:
    async def sync_rollout_status(
        self: DeploymentController, ctx: SyncContext, all_rss: list[Obj | None], new_rs: Obj | None, d: Obj
    ) -> Exception | None:
        """`syncRolloutStatus` (D12.6)."""
        new_status = self.calculate_status(all_rss, new_rs, d)
        now = self.kernel.now
        if not util.has_progress_deadline(d):
            util.remove_deployment_condition(new_status, util.DEPLOYMENT_PROGRESSING)
        current_cond = util.get_deployment_condition(d.get("status") or {}, util.DEPLOYMENT_PROGRESSING)
        is_complete_deployment = (
            int(new_status.get("replicas") or 0) == int(new_status.get("updatedReplicas") or 0)
            and current_cond is not None
            and current_cond.get("reason") == util.NEW_RS_AVAILABLE_REASON
        )
        decision = "none"
        if util.has_progress_deadline(d) and not is_complete_deployment:
            if util.deployment_complete(d, new_status):
                msg = (
                    f'ReplicaSet "{new_rs["metadata"]["name"]}" has successfully progressed.'
                    if new_rs is not None
                    else f'Deployment "{d["metadata"]["name"]}" has successfully progressed.'
                )
                util.set_deployment_condition(
                    new_status,
                    util.new_deployment_condition(
                        util.DEPLOYMENT_PROGRESSING, "True", util.NEW_RS_AVAILABLE_REASON, msg, now
                    ),
                )
                decision = "complete"
            elif util.deployment_progressing(d, new_status):
                msg = (
                    f'ReplicaSet "{new_rs["metadata"]["name"]}" is progressing.'
                    if new_rs is not None
                    else f'Deployment "{d["metadata"]["name"]}" is progressing.'
                )
                condition = util.new_deployment_condition(
                    util.DEPLOYMENT_PROGRESSING, "True", util.REPLICA_SET_UPDATED_REASON, msg, now
                )
                if current_cond is not None:
                    if current_cond.get("status") == "True":
                        condition["lastTransitionTime"] = current_cond.get("lastTransitionTime")
                    util.remove_deployment_condition(new_status, util.DEPLOYMENT_PROGRESSING)
                util.set_deployment_condition(new_status, condition)
                decision = "progressing"
            elif util.deployment_timed_out(d, new_status, now):
                msg = (
                    f'ReplicaSet "{new_rs["metadata"]["name"]}" has timed out progressing.'
                    if new_rs is not None
                    else f'Deployment "{d["metadata"]["name"]}" has timed out progressing.'
                )
                util.set_deployment_condition(
                    new_status,
                    util.new_deployment_condition(
                        util.DEPLOYMENT_PROGRESSING, "False", util.TIMED_OUT_REASON, msg, now
                    ),
                )
                decision = "timedOut"
        failures = self.get_replica_failures(all_rss, new_rs)
        if failures:
            util.set_deployment_condition(new_status, util.replica_set_to_deployment_condition(failures[0]))
        else:
            util.remove_deployment_condition(new_status, util.DEPLOYMENT_REPLICA_FAILURE)
        if _omit_zero(d.get("status") or {}) == new_status:
            after = self.requeue_stuck_deployment(d, new_status)
            # What was queued: AddAfter(after + 1s) when `after` is positive, rate-limited at 0.
            queued = None if after is None else (after + 1.0 if after > 0 else 0.0)
            self._stage(ctx, "syncRolloutStatus", written=False, progress=decision, requeueAfter=queued)
            if queued is not None:
                ctx.requeue = {"decision": "after", "delay": queued}
            return None
        d["status"] = new_status
        try:
            await self._update_deployment_status(ctx, d)
        except ApiError as exc:
            self._stage(ctx, "syncRolloutStatus", written=False, progress=decision, error=exc.message)
            return exc
        self._stage(ctx, "syncRolloutStatus", written=True, progress=decision, status=_counts(new_status))
        return None

    def get_replica_failures(self: DeploymentController, all_rss: list[Obj | None], new_rs: Obj | None) -> list[Obj]:
        """`getReplicaFailures`: the new RS's ReplicaFailure conditions, else every RS's."""

        def failures(rs: Obj) -> list[Obj]:
            return [c for c in (rs.get("status") or {}).get("conditions") or () if c.get("type") == "ReplicaFailure"]

        if new_rs is not None:
            found = failures(new_rs)
            if found:
                return found
        out: list[Obj] = []
        for rs in all_rss:
            if rs is not None:
                out.extend(failures(rs))
        return out

    def requeue_stuck_deployment(self: DeploymentController, d: Obj, new_status: Obj) -> float | None:
        """`requeueStuckDeployment` (D12.8): None (upstream -1) when nothing is scheduled, 0 for a
        rate-limited requeue, else `after` (as upstream returns it: the item itself is added
        after `after` + 1 s, the pad of #39785)."""
        current_cond = util.get_deployment_condition(d.get("status") or {}, util.DEPLOYMENT_PROGRESSING)
        if (
            not util.has_progress_deadline(d)
            or current_cond is None
            or util.deployment_complete(d, new_status)
            or current_cond.get("reason") == util.TIMED_OUT_REASON
        ):
            return None
        deadline = int(d["spec"]["progressDeadlineSeconds"])
        after = parse_rfc3339(current_cond["lastUpdateTime"]) + deadline - self.kernel.now
        key = f"{d['metadata']['namespace']}/{d['metadata']['name']}"
        if after < 1.0:
            self.queue.add_rate_limited(key)
            return 0.0
        self.queue.add_after(key, after + 1.0)
        return after

    async def check_paused_conditions(self: DeploymentController, ctx: SyncContext, d: Obj) -> Exception | None:
        """`checkPausedConditions` (D12.7)."""
        if not util.has_progress_deadline(d):
            return None
        status = d.setdefault("status", {})
        cond = util.get_deployment_condition(status, util.DEPLOYMENT_PROGRESSING)
        if cond is not None and cond.get("reason") == util.TIMED_OUT_REASON:
            return None
        paused = bool(d["spec"].get("paused"))
        paused_cond_exists = cond is not None and cond.get("reason") == util.PAUSED_DEPLOY_REASON
        now = self.kernel.now
        needs_update = False
        if paused and not paused_cond_exists:
            util.set_deployment_condition(
                status,
                util.new_deployment_condition(
                    util.DEPLOYMENT_PROGRESSING, "Unknown", util.PAUSED_DEPLOY_REASON, "Deployment is paused", now
                ),
            )
            needs_update = True
        elif not paused and paused_cond_exists:
            util.set_deployment_condition(
                status,
                util.new_deployment_condition(
                    util.DEPLOYMENT_PROGRESSING, "Unknown", util.RESUMED_DEPLOY_REASON, "Deployment is resumed", now
                ),
            )
            needs_update = True
        self._stage(ctx, "checkPausedConditions", paused=paused, written=needs_update)
        if not needs_update:
            return None
        try:
            await self._update_deployment_status(ctx, d)
        except ApiError as exc:
            return exc
        return None

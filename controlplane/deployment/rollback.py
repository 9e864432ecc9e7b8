"""pkg/controller/deployment/rollback.go: the legacy rollback through the
`deprecated.deployment.rollback.to` annotation (spec §13). Upstream's syncDeployment still
calls it at the pinned commit (stages.DEPLOYMENT_STAGES `rollback`); kubectl rollout undo does
not use it (it patches the template itself, D16.5)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from controlplane.apiserver import ApiError
from controlplane.deployment import util
from controlplane.deployment.sync import get_rollback_to

if TYPE_CHECKING:
    from controlplane.controllers.runtime import SyncContext
    from controlplane.deployment.deployment_controller import DeploymentController

Obj = dict[str, Any]


class RollbackMixin:
    async def rollback(self: DeploymentController, ctx: SyncContext, d: Obj, rs_list: list[Obj]) -> Exception | None:
        """`rollback` (D13.2)."""
        new_rs, all_old_rss, err = await self.get_all_replica_sets_and_sync_revision(ctx, d, rs_list, True)
        if err is not None:
            return err
        all_rss = [*all_old_rss, new_rs]
        to_revision = get_rollback_to(d) or 0
        if to_revision == 0:
            to_revision = util.last_revision(all_rss)
            if to_revision == 0:
                self.recorder.event(d, "Warning", util.ROLLBACK_REVISION_NOT_FOUND, "Unable to find last revision.")
                self._stage(ctx, "rollback", revision=0, found=False)
                return await self.update_deployment_and_clear_rollback_to(ctx, d)
        for rs in all_rss:
            if rs is None:
                continue
            try:
                v = util.revision(rs)
            except ValueError:
                continue
            if v == to_revision:
                self._stage(ctx, "rollback", revision=to_revision, found=True, replicaSet=rs["metadata"]["name"])
                performed, err = await self.rollback_to_template(ctx, d, rs)
                if performed and err is None:
                    self.recorder.event(
                        d,
                        "Normal",
                        util.ROLLBACK_DONE,
                        f'Rolled back deployment "{d["metadata"]["name"]}" to revision {to_revision}',
                    )
                return err
        self.recorder.event(
            d, "Warning", util.ROLLBACK_REVISION_NOT_FOUND, "Unable to find the revision to rollback to."
        )
        self._stage(ctx, "rollback", revision=to_revision, found=False)
        return await self.update_deployment_and_clear_rollback_to(ctx, d)

    async def rollback_to_template(
        self: DeploymentController, ctx: SyncContext, d: Obj, rs: Obj
    ) -> tuple[bool, Exception | None]:
        """`rollbackToTemplate` (D13.3)."""
        performed = False
        if not util.equal_ignore_hash(d["spec"]["template"], rs["spec"]["template"]):
            template = copy.deepcopy(rs["spec"]["template"])
            labels = dict((template.get("metadata") or {}).get("labels") or {})
            labels.pop(util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
            template.setdefault("metadata", {})["labels"] = labels
            d["spec"] = {**d["spec"], "template": template}
            util.set_deployment_annotations_to(d, rs)
            performed = True
        else:
            self.recorder.event(
                d,
                "Warning",
                util.ROLLBACK_TEMPLATE_UNCHANGED,
                f'The rollback revision contains the same template as current deployment "{d["metadata"]["name"]}"',
            )
        return performed, await self.update_deployment_and_clear_rollback_to(ctx, d)

    async def update_deployment_and_clear_rollback_to(
        self: DeploymentController, ctx: SyncContext, d: Obj
    ) -> Exception | None:
        """`updateDeploymentAndClearRollbackTo`: drop the annotation, one PUT of the Deployment."""
        meta = d["metadata"]
        meta["annotations"] = {
            k: v for k, v in (meta.get("annotations") or {}).items() if k != util.DEPRECATED_ROLLBACK_TO
        }
        try:
            await self.client.update(self.spec.resource, meta["namespace"], meta["name"], d)
        except ApiError as exc:
            return exc
        return None

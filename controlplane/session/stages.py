"""The sync stages of each controller version, as their `sync.stage` records name them: what a
breakpoint may stop at (`controlplane.session.breakpoints`) and what the inspector links each
stage to (the dashboard's panels). v1.5's are the engine's own (`controlplane.replication.STAGES`,
through `controlplane.simulation.SYNC_STAGES`); v1.36's, the default, are listed here with the
upstream function each follows and its line at a pinned commit."""

from __future__ import annotations

from typing import Any

from controlplane.simulation import DEFAULT_CONTROLLER_VERSION, SYNC_STAGES

Obj = dict[str, Any]

# v1.36 (today's controller, the default): each sync stage links to the line of the upstream
# function it follows, or of the call in syncReplicaSet it narrates, at a pinned commit (like
# v1.5's K15 links in dashboard/host/panels.py). No stored copy of these files at the v1.36.0 tag
# could be read here, so each file is pinned to the commit the spec (upstream-spec.md §0 "Sources
# read") read it at, which is the code ctrlscope implements. Every line below was counted in that
# commit's text and re-read:
# * replica_set.go at pohly/kubernetes bf9daf44 (the spec's [M]: a snapshot of upstream master
#   carried by that contributor fork; 970 lines): processNextWorkItem L601 (AddRateLimited L615),
#   manageReplicas L623, its getPodsToDelete call L684 (podControl.DeletePod L700),
#   syncReplicaSet L729: rsLister.Get L752, SatisfiedExpectations L763,
#   LabelSelectorAsSelector L764, FilterPodsByOwner L771 (FilterActivePods L778),
#   calculateStatus L798 (updateReplicaSetStatus L801), the requeue decision
#   `if manageReplicasErr != nil` L813 (queue.AddAfter L828); claimPods L833 (its
#   cm.ClaimPods L847), slowStartBatch L861.
# * consistency.go at kubernetes/kubernetes d7ce957d (the spec's read; 217 lines):
#   RealConsistencyStore.EnsureReady L123.
# controller_utils.go, controller_ref_manager.go and replica_set_utils.go are not linked: the
# stored copies that could be read at a known commit are older revisions than the [M] code (e.g.
# replica_set_utils.go at kubernetes/kubernetes f0116bf3 is v1.5-era), so the stages of their
# functions link to the call in syncReplicaSet (or manageReplicas) at RS_COMMIT instead.
RS_COMMIT = "bf9daf44a97ad65b76745a63fbaa302200b4d492"
CONSISTENCY_COMMIT = "d7ce957d8a8729e0e9c2e365288277d742491a5b"
RS_GO = f"https://github.com/pohly/kubernetes/blob/{RS_COMMIT}/pkg/controller/replicaset/replica_set.go"
_CONSISTENCY_GO = (
    f"https://github.com/kubernetes/kubernetes/blob/{CONSISTENCY_COMMIT}/pkg/controller/util/consistency/consistency.go"
)
# The worker's loop the inspector's first and last rows tell (not a stage of its own).
PROCESS_NEXT_WORK_ITEM = f"{RS_GO}#L601"
# Each sync stage: the upstream function it follows and its line.
STAGES = {
    "consistency": ("consistencyStore.EnsureReady", f"{_CONSISTENCY_GO}#L123"),
    "get": ("syncReplicaSet: rsLister.Get", f"{RS_GO}#L752"),
    "expectations": ("expectations.SatisfiedExpectations", f"{RS_GO}#L763"),
    "selector": ("metav1.LabelSelectorAsSelector", f"{RS_GO}#L764"),
    "list": ("controller.FilterPodsByOwner + FilterActivePods", f"{RS_GO}#L771"),
    "claim": ("claimPods → PodControllerRefManager.ClaimPods", f"{RS_GO}#L833"),
    "manage": ("manageReplicas", f"{RS_GO}#L623"),
    "batch": ("slowStartBatch", f"{RS_GO}#L861"),
    "delete": ("getPodsToDelete + podControl.DeletePod", f"{RS_GO}#L684"),
    "status": ("calculateStatus + updateReplicaSetStatus", f"{RS_GO}#L798"),
    "requeue": ("syncReplicaSet: queue.AddAfter / AddRateLimited", f"{RS_GO}#L813"),
}


def stage_groups() -> list[Obj]:
    """The sync stages of each controller version, for the breakpoint form (the page shows the
    groups of the versions that run): `versions` (space-separated), `stages` [(name, function)]."""
    v15 = [v for v, stages in SYNC_STAGES.items() if stages is SYNC_STAGES["v1.5"]]
    return [
        {"versions": DEFAULT_CONTROLLER_VERSION, "stages": [(name, fn) for name, (fn, _) in STAGES.items()]},
        {"versions": " ".join(v15), "stages": [(stage.name, stage.function) for stage in SYNC_STAGES["v1.5"]]},
    ]


def stage_names() -> tuple[str, ...]:
    """Every stage name a `sync.stage` record may carry, in the versions' order, once each."""
    return tuple(dict.fromkeys(name for group in stage_groups() for name, _ in group["stages"]))

"""The sync stages of each controller version, as its `sync.stage` records name them, each with
the upstream function it follows and a link to that function's line at a pinned commit.

The sync inspector narrates a sync stage by stage and links each row here; the breakpoint form
offers these names. A stage table belongs to a controller *version* (`registry.ControllerVersion`):
two versions of one controller (the v1.36 ReplicaSet controller serving ReplicationControllers,
and the v1.5 ReplicationManager) name different stages.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SyncStage:
    """One stage of a sync as the trace names it, and where upstream does it."""

    name: str  # the `sync.stage` record's `stage`
    function: str  # the upstream function (Go name) or call it follows: the inspector's label
    source: str  # that function's (or call's) line in upstream's source, at a pinned commit
    rule: str = ""  # the spec section, where one describes the stage
    summary: str = ""


# -- v1.36: the ReplicaSet controller (and its RC adapter) -----------------------------------------
# Each sync stage links to the line of the upstream function it follows, or of the call in
# syncReplicaSet it narrates, at a pinned commit (like K15's below). No stored copy of these files
# at the v1.36.0 tag could be read here, so each file is pinned to the commit the spec
# (upstream-spec.md §0 "Sources read") read it at, which is the code ctrlscope implements. Every
# line below was counted in that commit's text and re-read:
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
REPLICA_SET_WORKER = f"{RS_GO}#L601"
REPLICA_SET_STAGES: tuple[SyncStage, ...] = (
    SyncStage("consistency", "consistencyStore.EnsureReady", f"{_CONSISTENCY_GO}#L123"),
    SyncStage("get", "syncReplicaSet: rsLister.Get", f"{RS_GO}#L752"),
    SyncStage("expectations", "expectations.SatisfiedExpectations", f"{RS_GO}#L763"),
    SyncStage("selector", "metav1.LabelSelectorAsSelector", f"{RS_GO}#L764"),
    SyncStage("list", "controller.FilterPodsByOwner + FilterActivePods", f"{RS_GO}#L771"),
    SyncStage("claim", "claimPods → PodControllerRefManager.ClaimPods", f"{RS_GO}#L833"),
    SyncStage("manage", "manageReplicas", f"{RS_GO}#L623"),
    SyncStage("batch", "slowStartBatch", f"{RS_GO}#L861"),
    SyncStage("delete", "getPodsToDelete + podControl.DeletePod", f"{RS_GO}#L684"),
    SyncStage("status", "calculateStatus + updateReplicaSetStatus", f"{RS_GO}#L798"),
    SyncStage("requeue", "syncReplicaSet: queue.AddAfter / AddRateLimited", f"{RS_GO}#L813"),
)

# -- v1.5: the ReplicationManager (controlplane.replication) ---------------------------------------
# `pkg/controller/replication/replication_controller.go` at K15 (spec
# `shared/spec/v1.5-replication-manager.md`); each line where the stage happens in its file at
# that commit, as docs/versions.md's references cite it (taken from there, not re-read here).
UPSTREAM_COMMIT = "a0dadf16f9578b7e926945a85ea34b1621cde796"
K15 = f"https://github.com/kubernetes/kubernetes/blob/{UPSTREAM_COMMIT}/"
_RC_GO = K15 + "pkg/controller/replication/replication_controller.go"
_RC_UTILS_GO = K15 + "pkg/controller/replication/replication_controller_utils.go"
_REF_MANAGER_GO = K15 + "pkg/controller/controller_ref_manager.go"
# The worker loop (`worker` → processNextWorkItem) the inspector's first and last rows tell.
REPLICATION_MANAGER_WORKER = f"{_RC_GO}#L461"
REPLICATION_MANAGER_STAGES: tuple[SyncStage, ...] = (
    SyncStage(
        "podStoreSynced",
        "syncReplicationController",
        f"{_RC_GO}#L622",
        "R7.1",
        "Has the pod informer synced? If not: sleep 100 ms in this worker, re-add the key, return.",
    ),
    SyncStage(
        "get",
        "syncReplicationController",
        f"{_RC_GO}#L630",
        "R7.2",
        "Get the RC from the RC store; gone: drop expectations.",
    ),
    SyncStage(
        "expectations", "SatisfiedExpectations", f"{_RC_GO}#L650", "R7.3", "May this sync create or delete pods?"
    ),
    SyncStage(
        "list",
        "syncReplicationController",
        f"{_RC_GO}#L660",
        "R7.4",
        "List pods from the pod store: the namespace (GC on; others' pods skipped) or by selector (GC off).",
    ),
    SyncStage(
        "classify",
        "PodControllerRefManager.Classify",
        f"{_REF_MANAGER_GO}#L56",
        "R8.2",
        "Split active pods: controlled, matching orphans, controlled but no longer matching.",
    ),
    SyncStage(
        "adopt",
        "PodControllerRefManager.AdoptPod",
        f"{_RC_GO}#L668",
        "R8.3",
        "PATCH a ControllerRef onto each matching orphan; failures are logged and swallowed.",
    ),
    SyncStage(
        "release",
        "PodControllerRefManager.ReleasePod",
        f"{_RC_GO}#L683",
        "R8.4",
        "PATCH our ControllerRef off pods that no longer match; an error ends the sync.",
    ),
    SyncStage(
        "manage",
        "manageReplicas",
        f"{_RC_GO}#L489",
        "§9",
        "Compare pods with spec.replicas: create, delete or nothing.",
    ),
    SyncStage(
        "create",
        "RealPodControl.CreatePodsWithControllerRef",
        f"{_RC_GO}#L514",
        "R9.1",
        "Every create of the burst at once, no slow start; each failure lowers the expectations.",
    ),
    SyncStage(
        "delete",
        "RealPodControl.DeletePod",
        f"{_RC_GO}#L585",
        "R9.4",
        "Delete the victims (ActivePods order); any failure, NotFound too, is an error.",
    ),
    SyncStage(
        "status",
        "updateReplicationControllerStatus",
        f"{_RC_UTILS_GO}#L33",
        "§11",
        "calculateStatus, then UpdateStatus if anything changed (one retry after a GET).",
    ),
)

# -- v1.36: the Deployment controller (controlplane.deployment) -------------------------------------
# deployment_controller.go at the same pinned commit as the ReplicaSet controller's replica_set.go
# (pohly/kubernetes bf9daf44, a snapshot of upstream master; 629 lines, counted in that commit's
# text): processNextWorkItem L454, getReplicaSetsForDeployment L492 (ClaimReplicaSets L516),
# getPodMapForDeployment L525, syncDeployment L542: dLister.Get L556, getReplicaSetsForDeployment
# call L580, syncStatusOnly L586, checkPausedConditions L592, sync (paused) L597, rollback L603,
# isScalingEvent L607, sync (scaling event) L612, getPodMapForDeployment call L619,
# rolloutRecreate L623, rolloutRolling L625. sync.go, rolling.go, recreate.go and progress.go are
# not in that snapshot and the stored kubernetes/kubernetes copies that could be read are older
# (extensions/v1beta1-era) revisions, so a stage of a function of theirs links to the call in
# syncDeployment that leads to it, as the ReplicaSet table does for controller_utils.go.
_DEPLOYMENT_GO = (
    f"https://github.com/pohly/kubernetes/blob/{RS_COMMIT}/pkg/controller/deployment/deployment_controller.go"
)
DEPLOYMENT_WORKER = f"{_DEPLOYMENT_GO}#L454"
_SYNC_STATUS_ONLY = f"{_DEPLOYMENT_GO}#L586"
_PAUSED_SYNC = f"{_DEPLOYMENT_GO}#L597"
_RECREATE = f"{_DEPLOYMENT_GO}#L623"
_ROLLING = f"{_DEPLOYMENT_GO}#L625"
DEPLOYMENT_STAGES: tuple[SyncStage, ...] = (
    SyncStage("get", "syncDeployment: dLister.Get", f"{_DEPLOYMENT_GO}#L556", "D4.2"),
    SyncStage(
        "getReplicaSetsForDeployment",
        "getReplicaSetsForDeployment → ClaimReplicaSets",
        f"{_DEPLOYMENT_GO}#L492",
        "D5.1",
        "List the namespace's ReplicaSets; adopt matching orphans, release owned ones that no longer match.",
    ),
    SyncStage("syncStatusOnly", "syncStatusOnly", _SYNC_STATUS_ONLY, "D4.6", "Being deleted: status only."),
    SyncStage(
        "checkPausedConditions",
        "checkPausedConditions",
        f"{_DEPLOYMENT_GO}#L592",
        "D12.7",
        "Progressing=Unknown DeploymentPaused / DeploymentResumed, so a pause does not count toward the deadline.",
    ),
    SyncStage("sync", "sync", _PAUSED_SYNC, "D10.1", "Paused or scaled: scale, clean up (paused), status."),
    SyncStage("rollback", "rollback", f"{_DEPLOYMENT_GO}#L603", "D13.2", "The legacy rollback annotation."),
    SyncStage(
        "isScalingEvent",
        "isScalingEvent",
        f"{_DEPLOYMENT_GO}#L607",
        "D10.2",
        "Does an active ReplicaSet's desired-replicas annotation differ from spec.replicas?",
    ),
    SyncStage(
        "getNewReplicaSet",
        "getAllReplicaSetsAndSyncRevision → getNewReplicaSet",
        f"{_DEPLOYMENT_GO}#L607",
        "D6.5",
        "Find the ReplicaSet of the current template (sync its revision), or create it.",
    ),
    SyncStage(
        "scale", "scale", f"{_DEPLOYMENT_GO}#L612", "D10.3", "Scale one active ReplicaSet, or all proportionally."
    ),
    SyncStage("getPodMapForDeployment", "getPodMapForDeployment", f"{_DEPLOYMENT_GO}#L619", "D5.3"),
    SyncStage("rolloutRecreate", "rolloutRecreate", _RECREATE, "D9.1"),
    SyncStage("scaleDownOldReplicaSetsForRecreate", "scaleDownOldReplicaSetsForRecreate", _RECREATE, "D9.1"),
    SyncStage("oldPodsRunning", "oldPodsRunning", _RECREATE, "D9.1", "Is any old pod not yet Failed or Succeeded?"),
    SyncStage("scaleUpNewReplicaSetForRecreate", "scaleUpNewReplicaSetForRecreate", _RECREATE, "D9.1"),
    SyncStage("rolloutRolling", "rolloutRolling", _ROLLING, "D8.1"),
    SyncStage(
        "reconcileNewReplicaSet",
        "reconcileNewReplicaSet",
        _ROLLING,
        "D8.2",
        "Scale the new ReplicaSet up to the surge.",
    ),
    SyncStage(
        "reconcileOldReplicaSets",
        "reconcileOldReplicaSets",
        _ROLLING,
        "D8.3",
        "maxScaledDown = all - minAvailable - new unavailable.",
    ),
    SyncStage("cleanupUnhealthyReplicas", "cleanupUnhealthyReplicas", _ROLLING, "D8.4"),
    SyncStage("scaleDownOldReplicaSetsForRollingUpdate", "scaleDownOldReplicaSetsForRollingUpdate", _ROLLING, "D8.5"),
    SyncStage("cleanupDeployment", "cleanupDeployment", _ROLLING, "D11", "Delete old ReplicaSets beyond the limit."),
    SyncStage(
        "syncRolloutStatus",
        "syncRolloutStatus",
        _ROLLING,
        "D12.6",
        "Status, the Progressing condition, and the requeue at the progress deadline.",
    ),
    SyncStage("syncDeploymentStatus", "syncDeploymentStatus", _PAUSED_SYNC, "D12.1"),
)

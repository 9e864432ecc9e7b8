"""The knobs of one controller: kube-controller-manager's flags and feature gates, and the
what-ifs a learner may turn (the simulation builds one per controller from the scenario's config,
docs/scenarios.md). Every controller on the runtime (controlplane.controllers.runtime) takes one;
a knob a controller has no use for is ignored by it."""

from __future__ import annotations

from dataclasses import dataclass

BURST_REPLICAS = 500  # replica_set.go BurstReplicas: the most creates or deletes of one sync


@dataclass
class ControllerConfig:
    """Knobs of one controller; defaults mirror kube-controller-manager v1.36."""

    workers: int = 5
    burst_replicas: int = BURST_REPLICAS
    watch_latency: float = 0.05
    resync_period: float = 0.0  # KCM draws 12-24 h; 0 = no periodic resync within a simulation
    slow_start: bool = True  # what-if: False issues all creates of a sync in one batch
    expectations: bool = True  # what-if: False makes satisfied_expectations always true
    stale_controller_consistency: bool = True  # gate StaleControllerConsistencyReplicaSet
    terminating_replicas: bool = True  # gate DeploymentReplicaSetTerminatingReplicas
    pod_deletion_cost: bool = True  # gate PodDeletionCost (ranking key 4)
    manual_workers: bool = False  # what-if: workers dequeue only when `sync_next` says so

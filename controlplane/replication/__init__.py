"""The v1.5 ReplicationManager: the standalone ReplicationController controller that the v1.5
walkthroughs describe, selectable with `config.controllerVersion.replicationcontroller: v1.5`
(`v1.5-late`: the late-1.5 master variant). The default, v1.36, is the ReplicaSet controller
through its RC adapter (controlplane.replicaset). See `replication_controller` for what is
reused, what is v1.5's own, and the determinism decisions; its sync stages are in the
controller registry (controlplane.controllers.stages)."""

from controlplane.replication.lookup_cache import DEFAULT_LOOKUP_CACHE_SIZE, MatchingCache
from controlplane.replication.replication_controller import (
    FULL_CONTROLLER_RESYNC_PERIOD,
    LateReplicationManager,
    ReplicationManager,
)

__all__ = [
    "DEFAULT_LOOKUP_CACHE_SIZE",
    "FULL_CONTROLLER_RESYNC_PERIOD",
    "LateReplicationManager",
    "MatchingCache",
    "ReplicationManager",
]

"""The ReplicaSet controller and, through its adapter, the ReplicationController controller."""

from controlplane.replicaset.kinds import REPLICA_SET, REPLICATION_CONTROLLER, ControllerKind
from controlplane.replicaset.replica_set import ReplicaSetController

__all__ = ["REPLICATION_CONTROLLER", "REPLICA_SET", "ControllerKind", "ReplicaSetController"]

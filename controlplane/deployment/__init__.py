"""The Deployment controller (pkg/controller/deployment), v1.36: a controller that owns
ReplicaSets, built on the shared runtime (controlplane.controllers.runtime). The sync is split
as upstream splits it: `deployment_controller` (handlers, syncDeployment, claiming), `sync`
(sync.go), `rolling`, `recreate`, `progress`, `rollback`, and `util` (util/deployment_util.go).
docs/deployment-controller.md says, rule by rule, what is modelled."""

"""The controller registry (controlplane.controllers.registry) and the shared runtime
(controlplane.controllers.runtime): every registered controller is declared completely, a
controller that owns ReplicaSets can be declared and looked up, every version's factory builds a
controller on the runtime, and the v1.5 manager gets the runtime's manual workers without being
a ReplicaSet controller."""

from __future__ import annotations

import pickle

import pytest

from controlplane import scenario
from controlplane.apiserver import APIServer, Client
from controlplane.controllers import (
    CONTROLLERS,
    REGISTRY,
    ControllerSpec,
    ControllerVersion,
    OwnedKind,
    Registry,
    SyncStage,
    by_kind,
    by_name,
    by_queue,
    by_resource,
)
from controlplane.controllers.config import ControllerConfig
from controlplane.controllers.runtime import ControllerRuntime
from controlplane.deployment.deployment_controller import DeploymentController
from controlplane.kernel import Kernel
from controlplane.replicaset import ReplicaSetController
from controlplane.replication import ReplicationManager
from controlplane.trace import Trace

DEPLOYMENT_STAGES = (
    SyncStage("get", "syncDeployment: dLister.Get", "https://example.invalid/deployment_controller.go#L1"),
    SyncStage("rollout", "rolloutRolling", "https://example.invalid/rolling.go#L1"),
)
DEPLOYMENT = ControllerSpec(
    name="deployment",
    kind="Deployment",
    resource="deployments",
    group="apps",
    api_version="apps/v1",
    queue_name="deployment",
    component="deployment-controller",
    owns=(OwnedKind("ReplicaSet", "replicasets", "apps/v1"),),
    versions=(
        ControllerVersion(
            "v1.36",
            "controlplane.deployment.deployment_controller:new_controller",
            DEPLOYMENT_STAGES,
            "https://example.invalid/deployment_controller.go#L1",
        ),
    ),
)
FLAGS = {"enableGarbageCollector": True, "lookupCacheSize": 4096}


@pytest.mark.parametrize("spec", CONTROLLERS, ids=lambda spec: spec.name)
def test_every_registered_controller_is_declared_completely(spec):
    for field in ("name", "kind", "resource", "api_version", "queue_name", "component"):
        assert getattr(spec, field), field
    assert spec.owns and all(owned.kind and owned.resource and owned.api_version for owned in spec.owns)
    assert spec.versions and spec.default_version.version == scenario.DEFAULT_CONTROLLER_VERSION
    assert len(set(spec.version_names)) == len(spec.versions)
    for version in spec.versions:
        assert version.stages and len(set(version.stage_names)) == len(version.stages)
        for stage in (*version.stages, SyncStage("worker", "processNextWorkItem", version.worker_source)):
            assert stage.name and stage.function
            assert stage.source.startswith("https://github.com/") and "#L" in stage.source


def test_the_registry_agrees_with_the_scenario_vocabulary():
    # Until the scenario format reads the registry, its tables must say the same.
    assert REGISTRY.names() == scenario.CONTROLLERS
    assert {spec.name: spec.version_names for spec in CONTROLLERS} == scenario.CONTROLLER_VERSIONS


def test_the_lookups_find_each_controller_by_each_of_its_names():
    for spec in CONTROLLERS:
        assert by_name(spec.name) is spec
        assert by_kind(spec.kind) is spec
        assert by_resource(spec.resource) is spec
        assert by_queue(spec.queue_name) is spec
    assert by_queue("replicationmanager").name == "replicationcontroller"
    with pytest.raises(KeyError):
        by_kind("Pod")


def test_the_garbage_collectors_resources_are_the_owner_graph_in_registry_order():
    assert REGISTRY.managed_resources() == ("pods", "replicasets", "replicationcontrollers", "deployments")


def test_a_world_reads_the_controllers_it_runs_and_those_on_by_default():
    # The Deployment controller is off by default: a world that does not run it watches, reports
    # and snapshots exactly what it did before the controller existed.
    assert REGISTRY.default_names() == ("replicaset", "replicationcontroller")
    assert REGISTRY.defaults().managed_resources() == ("pods", "replicasets", "replicationcontrollers")
    assert REGISTRY.in_world(["replicaset"]).kinds() == ("ReplicaSet", "ReplicationController")
    running = REGISTRY.in_world(["replicaset", "deployment"])
    assert running.kinds() == ("ReplicaSet", "ReplicationController", "Deployment")
    assert running.managed_resources() == ("pods", "replicasets", "replicationcontrollers", "deployments")
    assert scenario.default_config()["controllers"] == ["replicaset", "replicationcontroller"]


def test_a_controller_that_owns_replica_sets_can_be_declared_and_looked_up():
    registry = Registry((*CONTROLLERS[:2], DEPLOYMENT))
    assert registry.by_name("deployment") is DEPLOYMENT
    assert registry.by_kind("Deployment") is DEPLOYMENT
    assert registry.by_resource("deployments") is DEPLOYMENT
    assert registry.by_queue("deployment") is DEPLOYMENT
    assert registry.names() == ("replicaset", "replicationcontroller", "deployment")
    # Its children's kind is a controller's kind too; each resource is watched once.
    assert registry.managed_resources() == ("pods", "replicasets", "replicationcontrollers", "deployments")
    assert DEPLOYMENT.group_resource == "deployments.apps"
    assert DEPLOYMENT.version("v1.36").stage_names == ("get", "rollout")


def test_two_controllers_may_not_share_a_kind_or_a_queue():
    with pytest.raises(ValueError, match="same kind"):
        Registry((*CONTROLLERS[:2], ControllerSpec(**{**DEPLOYMENT.__dict__, "kind": "ReplicaSet"})))
    with pytest.raises(ValueError, match="same queue_name"):
        Registry((*CONTROLLERS[:2], ControllerSpec(**{**DEPLOYMENT.__dict__, "queue_name": "replicaset"})))


def test_a_registered_spec_stays_the_registrys_object_through_pickle_and_a_toy_one_by_value():
    for spec in CONTROLLERS:
        assert pickle.loads(pickle.dumps(spec)) is spec
    assert pickle.loads(pickle.dumps(DEPLOYMENT)) == DEPLOYMENT


@pytest.mark.parametrize(
    ("name", "version", "cls"),
    [
        ("replicaset", "v1.36", ReplicaSetController),
        ("replicationcontroller", "v1.36", ReplicaSetController),
        ("replicationcontroller", "v1.5", ReplicationManager),
        ("replicationcontroller", "v1.5-late", ReplicationManager),
        ("deployment", "v1.36", DeploymentController),
    ],
)
def test_every_versions_factory_builds_that_version_on_the_runtime(name, version, cls):
    kernel = Kernel(seed=1)
    server = APIServer(kernel)
    spec = by_name(name)
    client = Client(server, kernel, spec.component, qps=None)
    controller = spec.version(version).new(kernel, client, ControllerConfig(), trace=Trace(kernel), flags=FLAGS)
    assert isinstance(controller, cls) and isinstance(controller, ControllerRuntime)
    assert (controller.spec, controller.version, controller.queue.name) == (spec, version, spec.queue_name)


def test_the_v1_5_manager_uses_the_runtime_without_being_a_replica_set_controller():
    assert not issubclass(ReplicationManager, ReplicaSetController)
    assert issubclass(ReplicationManager, ControllerRuntime)


def rc_world() -> tuple[Kernel, APIServer, ReplicationManager, list[dict]]:
    kernel = Kernel(seed=1)
    trace = Trace(kernel)
    records: list[dict] = []
    trace.subscribe(records.append)
    server = APIServer(kernel, trace)
    client = Client(server, kernel, "replication-controller", qps=None, latency=0.005)
    config = ControllerConfig(watch_latency=0.01, manual_workers=True, workers=2)
    rm = ReplicationManager(kernel, client, config, trace=trace)
    rm.start()
    kernel.advance(0.5)
    return kernel, server, rm, records


def rc_manifest(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"app": name},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "a", "image": "x"}]}},
        },
    }


def test_sync_next_on_the_v1_5_manager_syncs_one_key_through_the_runtime():
    kernel, server, rm, records = rc_world()
    assert [w.stage for w in rm.workers] == ["manual", "manual"]
    with pytest.raises(ValueError, match="queue is empty"):
        rm.sync_next()
    server.create("replicationcontrollers", "default", rc_manifest("a"))
    server.create("replicationcontrollers", "default", rc_manifest("b"))
    kernel.advance(0.1)
    assert rm.queue.snapshot()["queue"] == ["default/a", "default/b"]
    assert rm.sync_next("default/b") == {"key": "default/b", "worker": 0}  # out of order, as a what-if
    assert rm.sync_next() == {"key": "default/a", "worker": 1}
    with pytest.raises(ValueError, match="busy"):
        rm.sync_next()
    kernel.advance(0.5)
    framed = [(r["kind"], r["key"]) for r in records if r["kind"] in ("sync.start", "sync.end")]
    assert sorted(framed) == [
        ("sync.end", "default/a"),
        ("sync.end", "default/b"),
        ("sync.start", "default/a"),
        ("sync.start", "default/b"),
    ]
    starts = [r for r in records if r["kind"] == "sync.start"]
    assert [r["version"] for r in starts] == ["v1.5", "v1.5"]
    assert [w.stage for w in rm.workers] == ["manual", "manual"] and [w.syncs for w in rm.workers] == [1, 1]
    assert rm.queue.num_requeues("default/a") == 0


def test_the_v1_5_manager_resumes_automatic_workers_and_restarts_through_the_runtime():
    kernel, server, rm, records = rc_world()
    server.create("replicationcontrollers", "default", rc_manifest("a"))
    kernel.advance(0.1)
    rm.set_manual_workers(False)
    kernel.advance(0.5)
    assert any(r["kind"] == "sync.end" and r["key"] == "default/a" for r in records)
    rm.restart()
    assert rm.restarts == 1 and any(r["kind"] == "controller.restart" for r in records)
    kernel.advance(1.0)
    assert [w.stage for w in rm.workers] == ["idle", "idle"]

"""The Deployment controller in a simulated cluster: rollouts, Recreate, proportional scaling,
pause, history clean-up and the progress deadline (spec D8-D12, §18's behavioural cases). The
ports of rolling_test.go's tables are in test_rolling_go.py."""

from __future__ import annotations

import copy

from controlplane.deployment import util
from controlplane.scenario import parse_scenario
from controlplane.world import Simulation

CONTROLLERS = ["replicaset", "replicationcontroller", "deployment"]


def manifest(replicas=10, strategy=None, image="nginx:1.27", **spec):
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image}]},
            },
            **spec,
        },
    }
    if strategy is not None:
        body["spec"]["strategy"] = strategy
    return body


def image_patch(image, **container):
    return {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": image, **container}]}}}}


def world(objects, actions=(), until=120, **config):
    scenario = parse_scenario(
        {
            "seed": 1,
            "config": {"controllers": CONTROLLERS, **config},
            "objects": objects,
            "actions": list(actions),
            "until": until,
        }
    )
    return Simulation(scenario)


def deployment_of(sim):
    return (
        sim.server.get_object("deployments", "default", "web")
        if hasattr(sim.server, "get_object")
        else next(d for d in sim.server.objects("deployments") if d["metadata"]["name"] == "web")
    )


def replica_sets(sim):
    return sorted(sim.server.objects("replicasets"), key=lambda rs: rs["metadata"]["creationTimestamp"])


def pods(sim):
    return [p for p in sim.server.objects("pods") if not p["metadata"].get("deletionTimestamp")]


def ready(pod):
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in (pod.get("status") or {}).get("conditions") or ()
    )


def events(sim, reason="ScalingReplicaSet"):
    return [e["message"] for e in sim.server.objects("events") if e["reason"] == reason]


def run_watching(sim, until, step=0.05, watch=None):
    t = sim.kernel.now
    while t < until:
        t = round(t + step, 6)
        sim.run_until(t)
        if watch is not None:
            watch(sim)


def test_a_new_deployment_gets_one_replica_set_with_revision_and_replica_annotations():
    sim = world([manifest(3)])
    sim.run_until(20)
    (rs,) = replica_sets(sim)
    d = deployment_of(sim)
    h = rs["metadata"]["labels"][util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY]
    assert rs["metadata"]["name"] == f"web-{h}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": h}
    ref = rs["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == (
        "Deployment",
        d["metadata"]["uid"],
        True,
        True,
    )
    annotations = rs["metadata"]["annotations"]
    assert annotations[util.REVISION_ANNOTATION] == "1"
    assert (annotations[util.DESIRED_REPLICAS_ANNOTATION], annotations[util.MAX_REPLICAS_ANNOTATION]) == ("3", "4")
    assert d["metadata"]["annotations"][util.REVISION_ANNOTATION] == "1"
    assert events(sim) == [f"Scaled up replica set {rs['metadata']['name']} from 0 to 3"]
    status = d["status"]
    assert [status[k] for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")] == [3, 3, 3, 3]
    assert status["observedGeneration"] == d["metadata"]["generation"]
    conditions = {c["type"]: c["reason"] for c in status["conditions"]}
    assert conditions == {"Available": "MinimumReplicasAvailable", "Progressing": "NewReplicaSetAvailable"}


def test_a_rolling_update_converges_within_its_surge_and_unavailability_budget():
    sim = world(
        [manifest(10)], [{"at": 30, "patch": {"kind": "Deployment", "name": "web", "patch": image_patch("nginx:1.28")}}]
    )
    sim.run_until(29)
    seen = {"most": 0, "least_ready": 10}

    def watch(s):
        active = [
            p for p in s.server.objects("pods") if (p.get("status") or {}).get("phase") not in ("Failed", "Succeeded")
        ]
        seen["most"] = max(seen["most"], len([p for p in active if not p["metadata"].get("deletionTimestamp")]))
        seen["least_ready"] = min(seen["least_ready"], sum(ready(p) for p in pods(s)))
        total = sum(rs["spec"]["replicas"] for rs in s.server.objects("replicasets"))
        assert total <= 13

    run_watching(sim, 90, watch=watch)
    old, new = replica_sets(sim)
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 10)
    assert new["metadata"]["annotations"][util.REVISION_ANNOTATION] == "2"
    assert old["metadata"]["annotations"][util.REVISION_ANNOTATION] == "1"
    assert seen["most"] <= 13  # replicas + maxSurge (25% of 10 rounded up)
    assert seen["least_ready"] >= 8  # replicas - maxUnavailable (25% of 10 rounded down)
    # D18.2: the new RS is created at the surge, the old scaled 10 -> 8 in the next sync.
    msgs = events(sim)
    assert msgs[1:3] == [
        f"Scaled up replica set {new['metadata']['name']} from 0 to 3",
        f"Scaled down replica set {old['metadata']['name']} from 10 to 8",
    ]
    assert deployment_of(sim)["status"]["updatedReplicas"] == 10


def test_recreate_scales_the_old_set_to_zero_before_creating_the_new_one():
    sim = world(
        [manifest(3, strategy={"type": "Recreate"})],
        [{"at": 20, "patch": {"kind": "Deployment", "name": "web", "patch": image_patch("nginx:1.28")}}],
    )
    sim.run_until(19)

    def watch(s):
        sets = replica_sets(s)
        if len(sets) == 2:
            old_uid = sets[0]["metadata"]["uid"]
            # No new pod while an old one is still there (terminating ones included).
            old_pods = [p for p in s.server.objects("pods") if p["metadata"]["ownerReferences"][0]["uid"] == old_uid]
            new_pods = [p for p in s.server.objects("pods") if p["metadata"]["ownerReferences"][0]["uid"] != old_uid]
            assert not (old_pods and new_pods)

    run_watching(sim, 90, step=0.1, watch=watch)
    old, new = replica_sets(sim)
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 3)
    assert events(sim)[1:] == [
        f"Scaled down replica set {old['metadata']['name']} from 3 to 0",
        f"Scaled up replica set {new['metadata']['name']} from 0 to 3",
    ]
    assert deployment_of(sim)["status"]["availableReplicas"] == 3


def test_scaling_mid_rollout_is_proportional():
    # D18.8's numbers: old 8 and new 5 at max-replicas 13, scaled to 20 (max 25): 15 and 10.
    bad = image_patch("nginx:1.28", resources={"requests": {"cpu": "64"}})  # never schedules: stuck mid-rollout
    sim = world(
        [manifest(10)],
        [
            {"at": 20, "patch": {"kind": "Deployment", "name": "web", "patch": bad}},
            {"at": 40, "scale": {"kind": "Deployment", "name": "web", "replicas": 20}},
        ],
    )
    sim.run_until(39)
    old, new = replica_sets(sim)
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (8, 5)
    sim.run_until(60)
    old, new = replica_sets(sim)
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (15, 10)
    for rs in (old, new):
        annotations = rs["metadata"]["annotations"]
        assert (annotations[util.DESIRED_REPLICAS_ANNOTATION], annotations[util.MAX_REPLICAS_ANNOTATION]) == (
            "20",
            "25",
        )
    assert f"Scaled up replica set {old['metadata']['name']} from 8 to 15" in events(sim)
    assert f"Scaled up replica set {new['metadata']['name']} from 5 to 10" in events(sim)


def test_a_paused_deployment_scales_but_does_not_roll_out_until_resumed():
    # Created running (a Deployment created paused never gets a ReplicaSet: sync does not create).
    sim = world(
        [manifest(3)],
        [
            {"at": 15, "patch": {"kind": "Deployment", "name": "web", "patch": {"spec": {"paused": True}}}},
            {"at": 20, "patch": {"kind": "Deployment", "name": "web", "patch": image_patch("nginx:1.28")}},
            {"at": 25, "scale": {"kind": "Deployment", "name": "web", "replicas": 5}},
            {"at": 40, "patch": {"kind": "Deployment", "name": "web", "patch": {"spec": {"paused": False}}}},
        ],
    )
    sim.run_until(39)
    (rs,) = replica_sets(sim)
    assert rs["spec"]["replicas"] == 5
    d = deployment_of(sim)
    assert d["status"]["observedGeneration"] == d["metadata"]["generation"]
    progressing = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("Unknown", "DeploymentPaused")
    sim.run_until(90)
    old, new = replica_sets(sim)
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 5)


def test_the_revision_history_limit_deletes_the_oldest_scaled_down_sets():
    actions = [
        {"at": 20 * i, "patch": {"kind": "Deployment", "name": "web", "patch": image_patch(f"nginx:1.{27 + i}")}}
        for i in range(1, 5)
    ]
    sim = world([manifest(2, revisionHistoryLimit=2)], actions, until=150)
    sim.run_until(150)
    revisions = sorted(int(rs["metadata"]["annotations"][util.REVISION_ANNOTATION]) for rs in replica_sets(sim))
    assert revisions == [3, 4, 5]  # the new one and the two latest old ones
    assert len(events(sim, "ScalingReplicaSet")) >= 8


def test_a_rollout_whose_pods_never_become_ready_exceeds_its_progress_deadline():
    bad = image_patch("nginx:1.28", resources={"requests": {"cpu": "64"}})
    sim = world(
        [manifest(4, progressDeadlineSeconds=30)],
        [{"at": 20, "patch": {"kind": "Deployment", "name": "web", "patch": bad}}],
    )
    sim.run_until(50)
    progressing = next(c for c in deployment_of(sim)["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "ReplicaSetUpdated")
    sim.run_until(60)
    d = deployment_of(sim)
    progressing = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
    new = replica_sets(sim)[1]["metadata"]["name"]
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "False",
        "ProgressDeadlineExceeded",
        f'ReplicaSet "{new}" has timed out progressing.',
    )
    # Woken by its own AddAfter at lastUpdateTime (20, whole seconds) + 30 + 1 s pad.
    assert progressing["lastUpdateTime"] == "2026-01-01T00:00:51Z"
    assert d["status"]["availableReplicas"] == 3  # not rolled back, availability kept


def test_a_hash_collision_bumps_the_collision_count_and_a_new_name_is_tried():
    sim = world([manifest(2)])
    template = copy.deepcopy(manifest(2)["spec"]["template"])
    sim.run_until(0)
    from controlplane.apiserver.strategy import _default_template  # the template as stored

    h = util.compute_hash(_default_template(template), None)
    squatter = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": f"web-{h}", "namespace": "default", "labels": {"other": "x"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"other": "x"}},
            "template": {"metadata": {"labels": {"other": "x"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    sim2 = world([squatter, manifest(2)])
    sim2.run_until(20)
    d = deployment_of(sim2)
    assert d["status"]["collisionCount"] == 1
    names = {rs["metadata"]["name"] for rs in replica_sets(sim2)}
    assert f"web-{h}" in names and len(names) == 2
    assert d["status"]["availableReplicas"] == 2


def test_an_orphan_set_with_the_current_template_is_adopted_not_duplicated():
    d = manifest(2)
    orphan = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "adopt-me", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": d["spec"]["template"]},
    }
    sim = world([orphan, d])
    sim.run_until(20)
    (rs,) = replica_sets(sim)
    assert rs["metadata"]["name"] == "adopt-me"
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert deployment_of(sim)["status"]["availableReplicas"] == 2


def test_the_deployment_controller_restarts_through_controller_fault():
    sim = world([manifest(3)], [{"at": 5, "controllerFault": {"controller": "deployment", "fault": "restart"}}])
    sim.run_until(30)
    assert sim.controllers["deployment"].restarts == 1
    assert deployment_of(sim)["status"]["availableReplicas"] == 3


def test_a_world_without_the_deployment_controller_reports_what_it_always_did():
    plain = Simulation(parse_scenario({"seed": 1, "objects": [], "until": 1}))
    plain.run_until(1)
    assert list(plain.report()["objects"]) == ["ReplicaSet", "ReplicationController", "Pod", "Node", "Event"]
    assert "deployment" not in plain.controllers
    with_it = world([manifest(1)], until=1)
    with_it.run_until(1)
    assert list(with_it.report()["objects"]) == [
        "ReplicaSet",
        "ReplicationController",
        "Deployment",
        "Pod",
        "Node",
        "Event",
    ]

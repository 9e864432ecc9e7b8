"""Deployments with the real kubectl (issue 28, step 2): create (a protobuf body), apply, set
image, scale, rollout status / history / undo / restart / pause / resume, describe and the
Tables, against a live server whose simulation runs the Deployment controller at 4x."""

from __future__ import annotations

import json

import pytest

from tests.kubectl.conftest import WORLD, Kubectl
from tests.kubectl.test_kubectl import lines, write

DEPLOYMENT_WORLD = {
    **WORLD,
    "name": "kubectl deployment world",
    "config": {**WORLD["config"], "controllers": ["replicaset", "replicationcontroller", "deployment"]},
}

SHOP = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
  labels: {app: shop}
  annotations: {kubernetes.io/change-cause: first}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: shop, image: "shop:1.0"}]}
"""


@pytest.fixture
def sim(server):
    """A simulation of its own that runs the Deployment controller, at 4x: a rollout of a few
    pods (0.5 s each to start) completes in about a second of wall time."""
    sim_id = server.start(world=DEPLOYMENT_WORLD)
    server.command(sim_id, {"op": "run", "speed": 4})
    yield sim_id
    server.stop(sim_id)


def rolled_out(kubectl: Kubectl, name: str) -> str:
    """`kubectl rollout status` until it returns: it watches the Deployment and ends when the
    rollout is complete."""
    out = kubectl("rollout", "status", f"deployment/{name}", "--timeout=120s", timeout=150)
    assert out.strip().endswith(f'deployment "{name}" successfully rolled out'), out
    return out


def replica_sets(kubectl: Kubectl, selector: str) -> dict[str, dict]:
    """The ReplicaSets of `selector` by revision annotation: name, replicas, image."""
    items = json.loads(kubectl("get", "rs", "-l", selector, "-o", "json"))["items"]
    return {
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: {
            "name": rs["metadata"]["name"],
            "replicas": rs["spec"]["replicas"],
            "image": rs["spec"]["template"]["spec"]["containers"][0]["image"],
        }
        for rs in items
    }


def test_create_deployment_rolls_out_and_get_prints_a_clusters_columns(kubectl):
    # kubectl's typed client POSTs this one as protobuf.
    out = kubectl("create", "deployment", "web2", "--image=nginx", "--replicas=3")
    assert out.strip() == "deployment.apps/web2 created"
    rolled_out(kubectl, "web2")
    table = lines(kubectl("get", "deploy", "web2", "-o", "wide"))
    assert table[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert table[1][:4] == ["web2", "3/3", "3", "3"] and table[1][5:] == ["nginx", "nginx", "app=web2"]
    everything = kubectl("get", "deploy,rs,pods", "-l", "app=web2")
    [rs] = replica_sets(kubectl, "app=web2").values()
    assert "deployment.apps/web2   3/3" in everything
    assert f"replicaset.apps/{rs['name']}   3         3         3" in everything
    assert everything.count(f"pod/{rs['name']}-") == 3
    # `get all` lists deployments before replicasets, as a cluster's discovery orders them.
    all_ = kubectl("get", "all")
    assert all_.index("deployment.apps/web2") < all_.index(f"replicaset.apps/{rs['name']}")
    created = json.loads(kubectl("get", "deploy", "web2", "-o", "json"))
    assert created["spec"]["selector"] == {"matchLabels": {"app": "web2"}}
    assert created["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": "25%", "maxSurge": "25%"}
    assert created["spec"]["template"]["spec"]["containers"][0]["name"] == "nginx"


def test_apply_set_image_history_and_undo_reuses_the_old_replica_set(kubectl):
    path = write(kubectl, "shop.yaml", SHOP)
    assert kubectl("apply", "-f", path).strip() == "deployment.apps/shop created"
    assert kubectl("apply", "-f", path).strip() == "deployment.apps/shop unchanged"
    rolled_out(kubectl, "shop")
    kubectl("annotate", "deployment", "shop", "kubernetes.io/change-cause=second", "--overwrite")
    assert kubectl("set", "image", "deployment/shop", "shop=shop:1.1").strip() == "deployment.apps/shop image updated"
    rolled_out(kubectl, "shop")
    history = lines(kubectl("rollout", "history", "deployment/shop"))
    # The change-cause annotation reaches the current ReplicaSet too (the controller copies the
    # Deployment's annotations to its new ReplicaSet), so revision 1 says "second" as on a cluster.
    assert history[1:] == [["REVISION", "CHANGE-CAUSE"], ["1", "second"], ["2", "second"]]
    first = replica_sets(kubectl, "app=shop")["1"]
    assert kubectl("rollout", "history", "deployment/shop", "--revision=2").count("shop:1.1") == 1

    assert kubectl("rollout", "undo", "deployment/shop").strip() == "deployment.apps/shop rolled back"
    rolled_out(kubectl, "shop")
    by_revision = replica_sets(kubectl, "app=shop")
    # No third ReplicaSet: the revision-1 one is the new one again, at revision 3.
    assert sorted(by_revision) == ["2", "3"]
    assert by_revision["3"] == {**first, "replicas": 2} and by_revision["2"]["replicas"] == 0
    assert lines(kubectl("rollout", "history", "deployment/shop"))[2:] == [["2", "second"], ["3", "second"]]
    skipped = kubectl("rollout", "undo", "deployment/shop", "--to-revision=3").strip()
    assert skipped == "deployment.apps/shop skipped rollback (current template already matches revision 3)"
    missing = kubectl.run("rollout", "undo", "deployment/shop", "--to-revision=9", check=False)
    assert missing.returncode == 1 and "unable to find specified revision 9 in history" in missing.stderr


def test_scale_pause_resume_and_restart(kubectl):
    kubectl("create", "deployment", "web2", "--image=nginx", "--replicas=3")
    rolled_out(kubectl, "web2")
    assert kubectl("scale", "deployment", "web2", "--replicas=5").strip() == "deployment.apps/web2 scaled"
    kubectl.until(lambda out: lines(out)[1][1:4] == ["5/5", "5", "5"], "get", "deploy", "web2")

    assert kubectl("rollout", "pause", "deployment/web2").strip() == "deployment.apps/web2 paused"
    again = kubectl.run("rollout", "pause", "deployment/web2", check=False)
    assert again.returncode == 1 and "is already paused" in again.stderr
    refused = kubectl.run("rollout", "restart", "deployment/web2", check=False)
    assert refused.returncode == 1 and "can't restart paused deployment (run rollout resume first)" in refused.stderr
    # A template change while paused makes no new ReplicaSet.
    kubectl("set", "image", "deployment/web2", "nginx=nginx:1.28")
    kubectl.until(
        lambda out: json.loads(out)["status"].get("observedGeneration") == json.loads(out)["metadata"]["generation"],
        *("get", "deploy", "web2", "-o", "json"),
    )
    assert len(replica_sets(kubectl, "app=web2")) == 1
    assert kubectl("rollout", "resume", "deployment/web2").strip() == "deployment.apps/web2 resumed"
    rolled_out(kubectl, "web2")
    assert {rs["image"]: rs["replicas"] for rs in replica_sets(kubectl, "app=web2").values()} == {
        "nginx": 0,
        "nginx:1.28": 5,
    }
    # With a revision to go back to, undo refuses a paused Deployment (kubectl looks for the
    # revision first).
    kubectl("rollout", "pause", "deployment/web2")
    undo = kubectl.run("rollout", "undo", "deployment/web2", check=False)
    assert undo.returncode == 1 and "you cannot rollback a paused deployment" in undo.stderr
    assert kubectl("rollout", "resume", "deployment/web2").strip() == "deployment.apps/web2 resumed"

    assert kubectl("rollout", "restart", "deployment/web2").strip() == "deployment.apps/web2 restarted"
    rolled_out(kubectl, "web2")
    template = json.loads(kubectl("get", "deploy", "web2", "-o", "json"))["spec"]["template"]
    assert "kubectl.kubernetes.io/restartedAt" in template["metadata"]["annotations"]
    assert sorted(replica_sets(kubectl, "app=web2")) == ["1", "2", "3"]


def test_describe_deployment_shows_conditions_replica_sets_and_events(kubectl):
    kubectl("create", "deployment", "web2", "--image=nginx", "--replicas=2")
    rolled_out(kubectl, "web2")
    kubectl("set", "image", "deployment/web2", "nginx=nginx:1.28")
    rolled_out(kubectl, "web2")
    by_revision = replica_sets(kubectl, "app=web2")
    out = kubectl("describe", "deployment", "web2")
    assert "Replicas:               2 desired | 2 updated | 2 total | 2 available | 0 unavailable" in out
    assert "StrategyType:           RollingUpdate" in out
    assert "RollingUpdateStrategy:  25% max unavailable, 25% max surge" in out
    assert "Available      True    MinimumReplicasAvailable" in out
    assert "Progressing    True    NewReplicaSetAvailable" in out
    assert f"OldReplicaSets:  {by_revision['1']['name']} (0/0 replicas created)" in out
    assert f"NewReplicaSet:   {by_revision['2']['name']} (2/2 replicas created)" in out
    new = by_revision["2"]["name"]
    assert "ScalingReplicaSet  " in out and f"deployment-controller  Scaled up replica set {new} from 0 to 1" in out


def test_explain_deployment_strategy(kubectl):
    out = kubectl("explain", "deployment.spec.strategy")
    assert "KIND:       Deployment" in out and "FIELD: strategy <DeploymentStrategy>" in out
    assert "rollingUpdate\t<RollingUpdateDeployment>" in out and "type\t<string>" in out

"""Admission on pod create: ServiceAccount, DefaultTolerationSeconds, Priority (strategy.py)."""

from __future__ import annotations

import pytest

from controlplane.apiserver import ApiError, APIServer
from controlplane.kernel import Kernel
from tests.controlplane.factories import bare_pod, node_world, rs_manifest

DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def server():
    return APIServer(Kernel(0))


def test_a_created_pod_gets_the_default_service_account_tolerations_and_priority():
    spec = server().create("pods", "default", bare_pod("web-0"))["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    assert spec["tolerations"] == DEFAULT_TOLERATIONS
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")


def test_a_named_service_account_and_an_own_unreachable_toleration_are_kept():
    mine = {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 5,
    }
    spec = server().create("pods", "default", bare_pod("web-0", serviceAccountName="robot", tolerations=[mine]))["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("robot", "robot")
    assert spec["tolerations"] == [mine, DEFAULT_TOLERATIONS[0]]


def test_a_toleration_of_every_taint_needs_no_default_ones():
    spec = server().create("pods", "default", bare_pod("web-0", tolerations=[{"operator": "Exists"}]))["spec"]
    assert spec["tolerations"] == [{"operator": "Exists"}]


def test_templates_are_not_admitted_only_pods():
    stored = server().create("replicasets", "default", rs_manifest())
    template_spec = stored["spec"]["template"]["spec"]
    assert not {"serviceAccountName", "tolerations", "priority"} & set(template_spec)


def test_the_built_in_priority_classes_set_their_priority():
    spec = server().create("pods", "default", bare_pod("web-0", priorityClassName="system-node-critical"))["spec"]
    assert spec["priority"] == 2000001000


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"priority": 7},
            'pods "web-0" is forbidden: the integer value of priority (7) must not be provided in pod spec; '
            "priority admission controller computed 0 from the given PriorityClass name",
        ),
        ({"priorityClassName": "gold"}, 'pods "web-0" is forbidden: no PriorityClass with name gold was found'),
    ],
)
def test_priority_admission_refuses_what_it_cannot_compute(spec, message):
    srv = server()
    before = srv.digest()
    with pytest.raises(ApiError) as err:
        srv.create("pods", "default", bare_pod("web-0", **spec))
    assert (err.value.code, err.value.reason, err.value.message) == (403, "Forbidden", message)
    assert srv.digest() == before


def test_the_toleration_seconds_flag_comes_from_the_cluster_config():
    _, srv, sim = node_world(tolerationSeconds=30)
    spec = srv.create("pods", "default", bare_pod("web-0"))["spec"]
    assert [t["tolerationSeconds"] for t in spec["tolerations"]] == [30, 30]
    sim.apply_config({"tolerationSeconds": 45.5})
    spec = srv.create("pods", "default", bare_pod("web-1"))["spec"]
    assert [t["tolerationSeconds"] for t in spec["tolerations"]] == [46, 46]


def test_pods_of_one_template_share_one_admitted_spec():
    _, srv, _ = node_world()
    srv.create("replicasets", "default", rs_manifest(replicas=2))
    template = srv.get("replicasets", "default", "web")["spec"]["template"]
    specs = [
        srv.create("pods", "default", {"metadata": {"name": f"p{i}"}, "spec": template["spec"]})["spec"]
        for i in range(2)
    ]
    assert specs[0] is specs[1]
    assert specs[0]["tolerations"] == DEFAULT_TOLERATIONS

"""An injected API error reads as kube-apiserver words it (#19 §4): the fault's message inside the
standard form of its code, naming the resource and the name the request carried, never doubled,
and with no draw from the seeded rng (pod names stay what they were)."""

from types import SimpleNamespace

from controlplane.faults import api_fault_message
from controlplane.scenario import load_scenario
from controlplane.simulation import Simulation

SCENARIO = """
name: t
seed: 3
objects:
  - apiVersion: apps/v1
    kind: ReplicaSet
    metadata: {name: web, namespace: default}
    spec:
      replicas: 3
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: app, image: nginx}]}
until: 30
"""

QUOTA = "exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1"


def run_with(fault):
    s = Simulation(load_scenario(SCENARIO))
    s.apply({"apiFault": fault})
    s.run_until(5)
    return s


def failed_create_messages(s):
    return [e["message"] for e in s.server.objects("events") if e["reason"] == "FailedCreate"]


def pod_names(s):
    return sorted(p["metadata"]["name"] for p in s.server.objects("pods"))


def test_a_quota_403_on_pods_create_names_the_pod_as_admission_does():
    s = run_with({"verb": "create", "resource": "pods", "after": 1, "count": 1, "code": 403, "message": QUOTA})
    # The ReplicaSet's pods are created with generateName "web-": admission names the object by
    # that prefix, its name not generated yet (apiserver admission extractResourceName).
    assert failed_create_messages(s) == [f'Error creating: pods "web-" is forbidden: {QUOTA}']


def test_a_message_already_in_the_form_is_not_doubled_and_no_rng_is_drawn():
    plain = run_with({"verb": "create", "resource": "pods", "after": 1, "code": 403, "message": QUOTA})
    formed = run_with(
        {"verb": "create", "resource": "pods", "after": 1, "code": 403, "message": f'pods "web-" is forbidden: {QUOTA}'}
    )
    assert failed_create_messages(plain) == failed_create_messages(formed)
    assert pod_names(plain) == pod_names(formed)
    # The same pods as a fault that fails with no message: the wording draws nothing.
    bare = run_with({"verb": "create", "resource": "pods", "after": 1, "code": 403})
    assert pod_names(bare) == pod_names(plain)
    assert failed_create_messages(bare) == ['Error creating: pods "web-" is forbidden: injected fault: 403 Forbidden']


def request(verb="delete", resource="pods", name="web-abcde", body=None):
    return SimpleNamespace(verb=verb, resource=resource, name=name, body=body)


def test_each_code_has_its_upstream_form():
    assert api_fault_message(409, "Conflict", "etcd says no", request()) == (
        'Operation cannot be fulfilled on pods "web-abcde": etcd says no'
    )
    assert api_fault_message(500, "InternalError", "webhook down", request()) == "Internal error occurred: webhook down"
    assert api_fault_message(404, "NotFound", "", request()) == 'pods "web-abcde" not found'
    assert api_fault_message(409, "AlreadyExists", "", request()) == 'pods "web-abcde" already exists'
    assert api_fault_message(504, "Timeout", "slow etcd", request()) == "Timeout: slow etcd"
    assert api_fault_message(503, "ServiceUnavailable", "down", request()) == "down"
    # A subresource's errors name its parent resource, with its group.
    status = request("update", "replicasets/status", "web")
    assert api_fault_message(403, "Forbidden", "no", status) == 'replicasets.apps "web" is forbidden: no'
    # A request without a name (a list) has the forms without one.
    listing = request("list", "pods", None)
    assert api_fault_message(403, "Forbidden", "no", listing) == "pods is forbidden: no"
    assert api_fault_message(404, "NotFound", "", listing) == "the server could not find the requested resource"


def test_messages_in_the_form_are_kept_as_they_are():
    for code, reason, message in (
        (409, "Conflict", 'Operation cannot be fulfilled on pods "x": the object has been modified'),
        (500, "InternalError", "Internal error occurred: admission webhook unavailable"),
        (404, "NotFound", 'pods "x" not found'),
        (403, "Forbidden", 'pods "web" is forbidden: exceeded quota: compute'),
    ):
        assert api_fault_message(code, reason, message, request()) == message

"""pods/eviction (policy/v1 Eviction): a graceful delete of the pod, answered 201 Success."""

import pytest

from controlplane.apiserver import ApiError, Request
from controlplane.simulation import Simulation
from tests.controlplane.test_apiserver import make_server, pod_manifest

SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def evict(server, name, **body):
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}, **body}
    return server.handle(Request("kubectl", "create", "pods", "eviction", "default", name, eviction))


def test_eviction_marks_the_pod_for_graceful_deletion_with_its_grace_period():
    _kernel, server = make_server()
    server.create("pods", "default", {**pod_manifest("web-1", node="node-1")})
    assert evict(server, "web-1") == SUCCESS
    meta = server.peek("pods", "default", "web-1")["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30 and meta["deletionTimestamp"]
    assert server.requests[-1]["resource"] == "pods/eviction" and server.requests[-1]["code"] == 201


def test_eviction_honours_its_delete_options():
    _kernel, server = make_server()
    server.create("pods", "default", pod_manifest("web-1", node="node-1"))
    assert evict(server, "web-1", deleteOptions={"gracePeriodSeconds": 0}) == SUCCESS
    assert server.peek("pods", "default", "web-1") is None
    server.create("pods", "default", pod_manifest("web-2", node="node-1"))
    assert evict(server, "web-2", deleteOptions={"dryRun": ["All"], "gracePeriodSeconds": 0}) == SUCCESS
    assert server.peek("pods", "default", "web-2")["metadata"].get("deletionTimestamp") is None
    with pytest.raises(ApiError) as err:
        evict(server, "web-2", deleteOptions={"preconditions": {"uid": "nope"}})
    assert err.value.code == 409


def test_eviction_refuses_a_mismatched_name_a_bad_body_and_a_missing_pod():
    _kernel, server = make_server()
    server.create("pods", "default", pod_manifest("web-1"))
    with pytest.raises(ApiError) as err:
        server.handle(
            Request("kubectl", "create", "pods", "eviction", "default", "web-1", {"metadata": {"name": "web-2"}})
        )
    assert (err.value.code, err.value.message) == (400, "name in URL does not match name in Eviction object")
    with pytest.raises(ApiError) as err:
        evict(server, "web-1", deleteOptions={"gracePeriodSeconds": "soon"})
    assert err.value.code == 400 and "deleteOptions.gracePeriodSeconds" in err.value.message
    with pytest.raises(ApiError) as err:
        evict(server, "web-9")
    assert (err.value.code, err.value.message) == (404, 'pods "web-9" not found')
    with pytest.raises(ApiError) as err:
        server.handle(Request("kubectl", "update", "pods", "eviction", "default", "web-1", {}))
    assert err.value.code == 405
    assert server.peek("pods", "default", "web-1")["metadata"].get("deletionTimestamp") is None


def test_an_eviction_request_action_replays_and_the_controller_replaces_the_pod():
    sim = Simulation.from_file("demo")
    sim.run_until(10)
    pod = next(p for p in sim.server.objects("pods") if p["metadata"]["name"].startswith("web-"))
    name = pod["metadata"]["name"]
    request = {"verb": "create", "resource": "pods", "subresource": "eviction", "namespace": "default", "name": name}
    result = sim.apply({"request": {**request, "body": {"metadata": {"name": name}}}}, "kubectl")
    assert result["ok"] and result["response"] == (201, SUCCESS)
    sim.run_until(60)
    assert sim.server.peek("pods", "default", name) is None
    web = [p for p in sim.server.objects("pods") if p["metadata"]["name"].startswith("web-")]
    assert len(web) == sim.server.peek("replicasets", "default", "web")["spec"]["replicas"]

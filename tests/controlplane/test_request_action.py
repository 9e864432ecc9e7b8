"""The `request` action (one API write as a client sent it), server-side apply, and the API
server's unrecorded doors (read, dry_run, events_after)."""

from __future__ import annotations

import json

import pytest
import yaml

from controlplane.apiserver import ApiError, APIServer, Request
from controlplane.kernel import Kernel
from controlplane.scenario import load_scenario
from controlplane.simulation import Simulation, run_scenario
from tests.controlplane.factories import rs_manifest

KUBECTL = "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07"


def sim():
    s = Simulation.from_file("demo")
    s.run_until(5.0)
    return s


def request(s, **body):
    return s.act({"request": {"client": KUBECTL, **body}}, source=KUBECTL)


def test_a_request_action_is_the_api_call_with_the_clients_user_agent():
    s = sim()
    result = request(
        s,
        verb="patch",
        resource="replicasets",
        subresource="scale",
        namespace="default",
        name="web",
        patchType="merge",
        body={"spec": {"replicas": 6}},
    )
    assert result["ok"] is True and result["code"] == 200
    code, scale = result["response"]
    assert code == 200 and scale["kind"] == "Scale" and scale["spec"] == {"replicas": 6}
    assert s.server.requests[-1].to_dict() == {
        "time": 5.0,
        "client": KUBECTL,
        "verb": "patch",
        "resource": "replicasets/scale",
        "namespace": "default",
        "name": "web",
        "code": 200,
    }
    assert "response" not in s.actions[-1] and s.actions[-1]["source"] == KUBECTL


def test_a_rejected_request_is_logged_and_answers_the_status():
    s = sim()
    result = request(s, verb="create", resource="pods", namespace="default", body={"metadata": {}, "spec": {}})
    code, status = result["response"]
    assert code == 422 and status["kind"] == "Status" and status["reason"] == "Invalid"
    assert status["details"]["kind"] == "Pod"
    assert s.actions[-1]["ok"] is False and s.actions[-1]["code"] == 422


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"verb": "get", "resource": "pods"}, "request.verb: must be one of"),
        ({"verb": "create", "resource": "daemonsets", "body": {}}, "request.resource: must be one of"),
        ({"verb": "patch", "resource": "pods", "name": "x", "body": {}}, "request.patchType: required for patch"),
        ({"verb": "delete", "resource": "pods"}, "request.name: required for delete"),
        (
            {"verb": "delete", "resource": "pods", "name": "x", "options": {"propagationPolicy": "x"}},
            "request.options.propagationPolicy: must be one of",
        ),
        (
            {"verb": "delete", "resource": "pods", "name": "x", "options": {"bogus": 1}},
            "request.options.bogus: unknown key",
        ),
        ({"verb": "create", "resource": "pods", "body": "text"}, "request.body: must be a mapping or a list"),
    ],
)
def test_malformed_requests_are_refused_with_one_line_naming_the_field(body, error):
    problem = Simulation.check_action({"request": body})
    assert problem is not None and problem.startswith(error)


def test_deletecollection_deletes_every_selected_object_in_one_request():
    s = sim()
    result = request(
        s, verb="deletecollection", resource="pods", namespace="default", options={"labelSelector": "app=legacy"}
    )
    assert result["code"] == 200
    assert len(result["response"][1]["items"]) == 2
    assert [r["verb"] for r in s.server.requests if r["client"] == KUBECTL] == ["deletecollection"]


def test_a_session_of_requests_replays_headless_to_the_identical_report(tmp_path):
    s = sim()
    request(s, verb="create", resource="replicasets", namespace="default", body=rs_manifest("front", 2))
    s.run_until(8.0)
    request(
        s,
        verb="patch",
        resource="replicasets",
        namespace="default",
        name="front",
        patchType="strategic",
        body={"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}},
    )
    request(
        s,
        verb="patch",
        resource="replicasets",
        namespace="default",
        name="front",
        patchType="apply",
        body=rs_manifest("front", 4),
        options={"fieldManager": "kubectl", "force": False},
    )
    s.run_until(12.0)
    request(
        s,
        verb="delete",
        resource="replicasets",
        namespace="default",
        name="web",
        options={"propagationPolicy": "Orphan"},
    )
    s.run_until(20.0)
    s.finish_instant()
    path = tmp_path / "s.scenario.yaml"
    path.write_text(yaml.safe_dump(s.export_scenario(), sort_keys=False))
    assert load_scenario(path.read_text())
    assert json.dumps(run_scenario(str(path))) == json.dumps(s.report())


# -- the API server's unrecorded doors ------------------------------------------------------------


def server():
    kernel = Kernel(seed=3)
    return kernel, APIServer(kernel)


def test_read_and_dry_run_leave_no_trace_and_draw_nothing_from_the_rng():
    kernel, srv = server()
    srv.create("replicasets", "default", rs_manifest())
    before = (len(srv.requests), srv.revision, kernel.rng.getstate())
    assert srv.read(Request("kubectl", "get", "replicasets", None, "default", "web"))["metadata"]["name"] == "web"
    assert len(srv.read(Request("kubectl", "list", "replicasets"))["items"]) == 1
    obj, code = srv.dry_run(Request("kubectl", "create", "replicasets", None, "default", None, rs_manifest("x")))
    assert code == 201 and obj["metadata"]["uid"]
    _, code = srv.dry_run(Request("kubectl", "delete", "replicasets", None, "default", "web"))
    assert code == 200
    assert (len(srv.requests), srv.revision, kernel.rng.getstate()) == before
    assert srv.peek("replicasets", "default", "x") is None and srv.peek("replicasets", "default", "web")


def test_events_after_answers_the_history_and_410_when_too_old():
    _kernel, srv = server()
    rv = srv.revision
    srv.create("replicasets", "default", rs_manifest())
    events = srv.events_after(rv)
    assert [(e[0], e[1], e[2]) for e in events] == [(rv + 1, "ADDED", "replicasets")]
    small = APIServer(Kernel(seed=1), history_limit=2)
    for name in "abc":
        small.create("replicasets", "default", rs_manifest(name))
    with pytest.raises(ApiError) as err:
        small.events_after(0)
    assert err.value.code == 410


# -- server-side apply -------------------------------------------------------------------------------


def ssa(srv, body, manager="kubectl", force=False):
    return srv.handle(
        Request(
            "kubectl",
            "patch",
            "replicasets",
            None,
            "default",
            body["metadata"]["name"],
            body,
            {"patchType": "apply", "fieldManager": manager, "force": force},
        )
    )


def test_apply_creates_then_updates_and_keeps_managed_fields():
    _, srv = server()
    manifest = rs_manifest()
    manifest["metadata"]["labels"] = {"team": "a", "tier": "fe"}
    created = ssa(srv, manifest)
    entry = created["metadata"]["managedFields"][0]
    assert entry["manager"] == "kubectl" and entry["operation"] == "Apply" and entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"]["f:spec"]["f:replicas"] == {}
    assert 'k:{"name":"app"}' in entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    again = ssa(srv, manifest)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]  # a no-op
    del manifest["metadata"]["labels"]["tier"]
    manifest["spec"]["replicas"] = 5
    updated = ssa(srv, manifest)
    assert updated["metadata"]["labels"] == {"team": "a"}  # dropped from the config: removed
    assert updated["spec"]["replicas"] == 5


def test_apply_conflicts_with_another_manager_unless_forced():
    _, srv = server()
    ssa(srv, rs_manifest(replicas=3))
    other = rs_manifest(replicas=7)
    with pytest.raises(ApiError) as err:
        ssa(srv, other, manager="other")
    assert err.value.code == 409 and err.value.reason == "Conflict"
    assert err.value.message == 'Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas'
    assert err.value.details["causes"][0]["reason"] == "FieldManagerConflict"
    forced = ssa(srv, other, manager="other", force=True)
    assert forced["spec"]["replicas"] == 7
    owners = {e["manager"]: e["fieldsV1"] for e in forced["metadata"]["managedFields"]}
    assert "f:replicas" not in owners["kubectl"]["f:spec"] and "f:replicas" in owners["other"]["f:spec"]


def test_apply_without_a_field_manager_is_invalid():
    _, srv = server()
    with pytest.raises(ApiError) as err:
        srv.handle(Request("x", "patch", "replicasets", None, "default", "web", rs_manifest(), {"patchType": "apply"}))
    assert err.value.code == 422 and "fieldManager: Required value" in err.value.message

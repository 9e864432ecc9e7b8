"""fieldValidation (KEP-2885): unknown fields refused (Strict), warned about (Warn, the default) or
dropped (Ignore), and never stored, on every door: the API, the YAML editor's apply, scenario files."""

import copy

import pytest
import yaml

from controlplane.apiserver import RESOURCES, ApiError, Request, decode
from controlplane.scenario import ScenarioError, load_scenario
from controlplane.simulation import Simulation
from tests.controlplane.factories import rs_manifest
from tests.controlplane.test_apiserver import make_server

STRICT_TYPO = (
    'ReplicaSet in version "v1" cannot be handled as a ReplicaSet: strict decoding error: '
    'unknown field "spec.replcas", unknown field "spec.template.spec.containers[0].imagePullPolcy"'
)


def typo_rs(name="web"):
    rs = rs_manifest(name)
    rs["spec"] = {("replcas" if key == "replicas" else key): value for key, value in rs["spec"].items()}
    rs["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    return rs


def create(server, body, validation=None):
    options = {"fieldValidation": validation} if validation is not None else {}
    req = Request("kubectl", "create", "replicasets", None, "default", body["metadata"]["name"], body, options)
    return req, server.handle(req)


def test_strict_refuses_unknown_fields_with_upstreams_message_and_stores_nothing():
    _kernel, server = make_server()
    revision = server.revision
    with pytest.raises(ApiError) as err:
        create(server, typo_rs(), "Strict")
    assert (err.value.code, err.value.reason, err.value.message) == (400, "BadRequest", STRICT_TYPO)
    assert server.revision == revision and server.peek("replicasets", "default", "web") is None


def test_warn_is_the_default_and_stores_the_object_without_the_unknown_fields():
    _kernel, server = make_server()
    req, stored = create(server, typo_rs())
    assert req.warnings == [
        'unknown field "spec.replcas"',
        'unknown field "spec.template.spec.containers[0].imagePullPolcy"',
    ]
    assert "replcas" not in stored["spec"] and stored["spec"]["replicas"] == 1  # defaulted, as upstream
    assert "imagePullPolcy" not in stored["spec"]["template"]["spec"]["containers"][0]
    assert server.peek("replicasets", "default", "web") == stored


def test_ignore_drops_unknown_fields_without_a_warning():
    _kernel, server = make_server()
    req, stored = create(server, typo_rs(), "Ignore")
    assert req.warnings == [] and "replcas" not in stored["spec"]


def test_a_well_typed_body_has_no_unknown_fields_and_is_stored_as_sent():
    _kernel, server = make_server()
    req, stored = create(server, rs_manifest("web"), "Strict")
    assert req.warnings == [] and stored["spec"]["replicas"] == 3


def test_an_unknown_directive_is_a_422_naming_the_option():
    _kernel, server = make_server()
    with pytest.raises(ApiError) as err:
        create(server, rs_manifest("web"), "Loose")
    assert err.value.code == 422
    assert err.value.message == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": '
        'supported values: "", "Ignore", "Strict", "Warn"'
    )


def test_strict_patch_and_update_refuse_and_warn_prunes():
    _kernel, server = make_server()
    server.create("replicasets", "default", rs_manifest("web"))
    patch = Request(
        "kubectl",
        "patch",
        "replicasets",
        None,
        "default",
        "web",
        {"spec": {"replcas": 8}},
        {"patchType": "strategic", "fieldValidation": "Strict"},
    )
    with pytest.raises(ApiError) as err:
        server.handle(patch)
    assert err.value.message == 'strict decoding error: unknown field "spec.replcas"'
    body = copy.deepcopy(server.peek("replicasets", "default", "web"))
    body["spec"]["replcas"] = 8
    update = Request("kubectl", "update", "replicasets", None, "default", "web", body, {"fieldValidation": "Strict"})
    with pytest.raises(ApiError) as err:
        server.handle(update)
    assert err.value.message.endswith('strict decoding error: unknown field "spec.replcas"')
    update = Request("kubectl", "update", "replicasets", None, "default", "web", body)
    stored = server.handle(update)
    assert update.warnings == ['unknown field "spec.replcas"'] and "replcas" not in stored["spec"]


def test_an_operators_status_field_on_a_built_in_kind_is_pruned_as_a_cluster_does():
    # kopf writes `status.<handler>` progress on the objects it handles; a ReplicaSet's status has
    # no such field, so a cluster drops it and kopf reads nothing back.
    _kernel, server = make_server()
    server.create("replicasets", "default", rs_manifest("web"))
    patch = Request(
        "kopf",
        "patch",
        "replicasets",
        "status",
        "default",
        "web",
        {"status": {"create_fn": {"done": True}}},
        {"patchType": "merge"},
    )
    stored = server.handle(patch)
    assert "create_fn" not in stored.get("status", {}) and patch.warnings == ['unknown field "status.create_fn"']
    assert "create_fn" not in server.get("replicasets", "default", "web").get("status", {})


def test_unmodelled_structs_keep_their_keys():
    # Probes, affinity, … are `map[string]interface {}` in the type table: nothing there is unknown.
    rs = rs_manifest("web")
    rs["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {"anything": 1}}
    assert decode.check_body(RESOURCES["replicasets"], rs) == []


def test_a_scenario_object_with_an_unknown_field_is_a_file_error_naming_it():
    scenario = load_scenario(yaml.safe_dump({"name": "typo", "objects": [typo_rs()], "until": 10}, sort_keys=False))
    with pytest.raises(ScenarioError) as err:
        Simulation(scenario).start()
    assert str(err.value) == f"objects[0]: {STRICT_TYPO}"


def test_an_apply_action_with_an_unknown_field_is_refused_and_the_run_goes_on():
    sim = Simulation.from_file("demo")
    sim.run_until(5)
    before = sim.server.peek("replicasets", "default", "web")
    rs = copy.deepcopy(before)
    rs["spec"]["replcas"] = rs["spec"].pop("replicas")
    result = sim.apply({"apply": rs}, "user")
    assert result["ok"] is False and 'unknown field "spec.replcas"' in result["error"]
    assert sim.server.peek("replicasets", "default", "web") is before
    sim.run_until(10)


def test_enumerated_and_ranged_container_fields_are_422_field_causes_as_upstream():
    _kernel, server = make_server()
    rs = rs_manifest("web")
    container = rs["spec"]["template"]["spec"]["containers"][0]
    container["imagePullPolicy"] = "Sometimes"
    container["ports"] = [
        {"containerPort": 70000, "protocol": "ICMP"},
        {"containerPort": 80, "hostPort": -1},
        {"name": "metrics"},
    ]
    with pytest.raises(ApiError) as err:
        create(server, rs, "Strict")
    assert err.value.code == 422
    path = "spec.template.spec.containers[0]"
    assert [(c["field"], c["message"]) for c in err.value.details["causes"]] == [
        (
            f"{path}.imagePullPolicy",
            'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
        ),
        (f"{path}.ports[0].containerPort", "Invalid value: 70000: must be between 1 and 65535, inclusive"),
        (f"{path}.ports[0].protocol", 'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'),
        (f"{path}.ports[1].hostPort", "Invalid value: -1: must be between 1 and 65535, inclusive"),
        (f"{path}.ports[2].containerPort", "Required value"),
    ]
    assert server.peek("replicasets", "default", "web") is None
    container["imagePullPolicy"] = "IfNotPresent"
    container["ports"] = [{"containerPort": 8080, "protocol": "UDP", "hostPort": 8080}]
    create(server, rs, "Strict")  # valid values pass

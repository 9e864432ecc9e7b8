"""The API server decodes every body into the kind's Go type before anything reads it
(controlplane/apiserver/decode.py): upstream's 400 and 422 messages, 413, bounded walks."""

from __future__ import annotations

import math

import pytest

from controlplane.apiserver import ApiError, APIServer
from controlplane.kernel import Kernel
from tests.controlplane.factories import bare_pod, rs_manifest


@pytest.fixture
def server():
    return APIServer(Kernel(0))


def refusal(call):
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value


def test_a_wrong_type_is_a_400_with_upstreams_message_and_a_cause_per_field(server):
    body = rs_manifest()
    body["spec"]["replicas"] = "three"
    body["spec"]["template"]["spec"]["containers"][0]["name"] = 5
    err = refusal(lambda: server.create("replicasets", "default", body))
    assert err.code == 400 and err.reason == "BadRequest"
    assert err.message == (
        'ReplicaSet in version "v1" cannot be handled as a ReplicaSet: json: cannot unmarshal string into Go '
        "struct field ReplicaSetSpec.spec.replicas of type int32"
    )
    assert [c["field"] for c in err.details["causes"]] == ["spec.replicas", "spec.template.spec.containers[0].name"]
    assert {c["reason"] for c in err.details["causes"]} == {"FieldValueTypeInvalid"}
    assert server.count("replicasets") == 0


def test_causes_are_capped(server):
    pod = bare_pod("p")
    pod["metadata"]["labels"] = {f"k{i}": i for i in range(100)}
    err = refusal(lambda: server.create("pods", "default", pod))
    assert len(err.details["causes"]) == 20


def test_an_update_with_a_wrong_type_is_refused_and_the_stored_object_kept(server):
    stored = server.create("replicasets", "default", rs_manifest())
    body = {**stored, "spec": {**stored["spec"], "replicas": True}}
    err = refusal(lambda: server.update("replicasets", "default", "web", body))
    assert err.code == 400 and "cannot unmarshal bool" in err.message
    assert server.get("replicasets", "default", "web") is stored


def test_a_scale_body_is_a_scale(server):
    server.create("replicasets", "default", rs_manifest())
    scale = server.get("replicasets", "default", "web", subresource="scale")
    body = {**scale, "spec": {"replicas": "x"}}
    err = refusal(lambda: server.update("replicasets", "default", "web", body, subresource="scale"))
    assert err.message.startswith('Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal string')
    assert "ScaleSpec.spec.replicas of type int32" in err.message


def test_a_patch_that_breaks_the_type_is_a_422_on_the_field_patch(server):
    server.create("replicasets", "default", rs_manifest())
    before = server.digest()
    err = refusal(lambda: server.patch("replicasets", "default", "web", {"spec": {"replicas": "many"}}))
    assert err.code == 422
    assert err.message.startswith(' "" is invalid: patch: Invalid value: "{')
    assert err.message.endswith(
        "json: cannot unmarshal string into Go struct field ReplicaSetSpec.spec.replicas of type int32"
    )
    assert [c["field"] for c in err.details["causes"]] == ["patch"]
    assert server.digest() == before


def test_a_patch_that_is_not_json_is_a_400_before_it_is_applied(server):
    server.create("replicasets", "default", rs_manifest())
    err = refusal(lambda: server.patch("replicasets", "default", "web", {"metadata": {"annotations": {"a": math.nan}}}))
    assert err.code == 400 and err.message == "invalid patch: json: unsupported value: nan"


def test_nesting_is_bounded_and_a_cycle_is_not_followed_forever(server):
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    pod = bare_pod("p", affinity={"deep": deep})
    err = refusal(lambda: server.create("pods", "default", pod))
    assert err.code == 400 and "json: exceeded max depth 100" in err.message
    cyclic = bare_pod("q")
    cyclic["spec"]["affinity"] = {"self": cyclic}
    assert refusal(lambda: server.create("pods", "default", cyclic)).code == 400


def test_a_body_over_3_mib_is_a_413(server):
    pod = bare_pod("p")
    pod["metadata"]["annotations"] = {"a": "x" * (3 * 1024 * 1024)}
    err = refusal(lambda: server.create("pods", "default", pod))
    assert err.code == 413 and err.message == "Request entity too large: limit is 3145728"


def test_an_alias_bomb_costs_no_more_than_the_limit(server):
    level: list = ["lol"] * 9
    for _ in range(12):  # 9**13 leaves once expanded; the walk stops at 3 MiB
        level = [level] * 9
    err = refusal(lambda: server.create("pods", "default", bare_pod("p", affinity={"bomb": level})))
    assert err.code == 413


def test_untyped_fields_are_kept_as_sent_when_they_are_json(server):
    pod = bare_pod("p", affinity={"nodeAffinity": {"weights": [1, 2.5, None, True]}})
    stored = server.create("pods", "default", pod)
    assert stored["spec"]["affinity"] == {"nodeAffinity": {"weights": [1, 2.5, None, True]}}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (2**70, "json: number out of range (more than 64 bits)"),
        (math.inf, "json: unsupported value: inf"),
        ({1: "a"}, "json: unsupported map key 1: object keys must be strings"),
        ({"a"}, "json: unsupported type: set"),
    ],
)
def test_untyped_fields_must_be_json(server, value, message):
    err = refusal(lambda: server.create("pods", "default", bare_pod("p", affinity={"x": value})))
    assert err.code == 400 and message in err.message


def test_null_is_a_zero_field_but_not_a_label_value(server):
    pod = bare_pod("p", nodeSelector=None)
    pod["metadata"]["annotations"] = None
    assert server.create("pods", "default", pod)["metadata"]["name"] == "p"
    pod = bare_pod("q")
    pod["metadata"]["labels"] = {"app": None}
    err = refusal(lambda: server.create("pods", "default", pod))
    assert err.details["causes"][0]["field"] == "metadata.labels[app]"


def test_a_request_name_must_be_a_string(server):
    err = refusal(lambda: server.get("pods", "default", ["p"]))
    assert err.code == 400 and err.message == "the namespace and the name of a request must be strings"
    assert server.requests[-1]["name"] is None


def test_a_timestamp_must_be_rfc_3339(server):
    pod = bare_pod("p")
    pod["metadata"]["creationTimestamp"] = "tomorrow"
    err = refusal(lambda: server.create("pods", "default", pod))
    assert 'parsing time "tomorrow" as "2006-01-02T15:04:05Z07:00"' in err.message


def test_the_pod_ceiling_refuses_creates_as_an_exceeded_quota(server):
    server.max_pods = 1
    server.create("pods", "default", bare_pod("a"))
    err = refusal(lambda: server.create("pods", "default", bare_pod("b")))
    assert err.code == 403
    assert err.message == (
        'pods "b" is forbidden: exceeded quota: ctrlscope-pod-ceiling, requested: pods=1, used: pods=1, limited: pods=1'
    )


def test_a_grace_period_beyond_the_duration_ceiling_is_a_400(server):
    server.create("pods", "default", bare_pod("p"))
    err = refusal(lambda: server.delete("pods", "default", "p", grace_period_seconds=2**62))
    assert err.code == 400 and err.message.startswith("gracePeriodSeconds: must be an integer of at most 2592000")
    assert server.peek("pods", "default", "p") is not None

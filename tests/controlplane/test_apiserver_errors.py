"""ApiError and its helpers: Status bodies and upstream messages."""

from controlplane.apiserver import errors
from controlplane.apiserver.errors import ApiError


def test_status_is_the_body_kubectl_parses():
    assert errors.not_found("pods", "x").status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "x" not found',
        "reason": "NotFound",
        "details": {"name": "x", "kind": "pods"},
        "code": 404,
    }


def test_group_resources_split_into_group_and_kind_details():
    err = errors.already_exists("replicasets.apps", "web")
    assert err.message == 'replicasets.apps "web" already exists'
    assert err.details == {"name": "web", "group": "apps", "kind": "replicasets"}


def test_conflict_message_defaults_to_the_optimistic_lock_text():
    assert errors.conflict("pods", "a").message == (
        'Operation cannot be fulfilled on pods "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_invalid_uses_kind_with_group_and_lists_causes():
    err = errors.invalid(
        "ReplicaSet.apps",
        "web",
        [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.selector"}],
    )
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == 'ReplicaSet.apps "web" is invalid: spec.selector: Required value'
    assert err.details["kind"] == "ReplicaSet" and err.details["group"] == "apps"


def test_invalid_accepts_causes_spelled_with_type():
    err = errors.invalid("Pod", "p", [{"type": "FieldValueInvalid", "message": "Invalid value: 1: x", "field": "f"}])
    assert err.details["causes"] == [{"reason": "FieldValueInvalid", "message": "Invalid value: 1: x", "field": "f"}]


def test_predicates_recognise_their_reason():
    assert errors.is_not_found(errors.not_found("pods", "a"))
    assert errors.is_conflict(errors.conflict("pods", "a"))
    assert errors.is_already_exists(errors.already_exists("pods", "a"))
    assert errors.is_invalid(errors.invalid("Pod", "a", []))
    assert errors.is_gone(errors.resource_expired("too old resource version: 1 (2)"))
    assert not errors.is_not_found(ValueError("x"))


def test_has_status_cause_looks_at_the_details_causes():
    err = errors.forbidden(
        "pods",
        "",
        "unable to create new content in namespace x because it is being terminated",
        [{"reason": "NamespaceTerminating", "message": "m", "field": "metadata.namespace"}],
    )
    assert (
        err.message == "pods is forbidden: unable to create new content in namespace x because it is being terminated"
    )
    assert errors.has_status_cause(err, "NamespaceTerminating")
    assert not errors.has_status_cause(ApiError(500, "InternalError", "x"), "NamespaceTerminating")

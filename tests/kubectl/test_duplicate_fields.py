"""A body with a repeated key, sent as it is with the real kubectl (`create --raw` posts the file's
bytes): refused under fieldValidation=Strict, a warning under Warn (the server's default), the
last value kept under Ignore (issue 18 §2)."""

from __future__ import annotations

import json

BODY = (
    '{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"NAME","namespace":"default"},'
    '"spec":{"replicas":1,"replicas":2,"selector":{"matchLabels":{"app":"dup"}},'
    '"template":{"metadata":{"labels":{"app":"dup"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}'
)
URL = "/apis/apps/v1/namespaces/default/replicasets"


def post(kubectl, name, query=""):
    path = kubectl.server.tmp / f"{kubectl.sim_id}-{name}.json"
    path.write_text(BODY.replace("NAME", name))
    # `--raw` replaces the server URL's path (/sim/<id>/k8s): the simulation's path goes in front.
    return kubectl.run("create", "--raw", f"/sim/{kubectl.sim_id}/k8s{URL}{query}", "-f", str(path), check=False)


def test_strict_refuses_a_duplicate_field(kubectl):
    refused = post(kubectl, "strict", "?fieldValidation=Strict")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (BadRequest): ReplicaSet in version "v1" cannot be handled as a ReplicaSet: '
        'strict decoding error: duplicate field "spec.replicas"'
    )
    assert "NotFound" in kubectl.run("get", "rs", "strict", check=False).stderr


def test_warn_is_the_default_and_the_last_value_is_stored(kubectl):
    warned = post(kubectl, "warned")
    assert warned.returncode == 0
    assert 'Warning: duplicate field "spec.replicas"' in warned.stderr
    assert json.loads(kubectl("get", "rs", "warned", "-o", "json"))["spec"]["replicas"] == 2


def test_ignore_keeps_the_last_value_silently(kubectl):
    ignored = post(kubectl, "ignored", "?fieldValidation=Ignore")
    assert ignored.returncode == 0 and "Warning" not in ignored.stderr
    assert json.loads(kubectl("get", "rs", "ignored", "-o", "json"))["spec"]["replicas"] == 2

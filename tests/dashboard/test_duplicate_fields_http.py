"""Duplicate fields over HTTP: the body's repeated keys are found where it is read and travel with
the request action (so the recorded session replays to the same answers)."""

from __future__ import annotations

import json

import pytest
from channels.testing import HttpCommunicator

from dashboard.asgi import application

from .conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)
AUTH = (b"authorization", f"Bearer {TOKEN}".encode())
RS = (
    '{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"dup"},'
    '"spec":{"replicas":1,"replicas":2,"selector":{"matchLabels":{"app":"dup"}},'
    '"template":{"metadata":{"labels":{"app":"dup"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}'
)
URL = "/apis/apps/v1/namespaces/default/replicasets"


async def call(method, path, body, *headers):
    comm = HttpCommunicator(application, method, path, body=body.encode(), headers=[AUTH, *headers])
    response = await comm.get_response(timeout=10)
    warnings = [v.decode() for k, v in response["headers"] if k.lower() == b"warning"]
    return response["status"], json.loads(response["body"]), warnings


async def test_strict_refuses_warn_warns_and_the_action_carries_the_duplicates(running_host):
    status, body, _ = await call("POST", f"{URL}?fieldValidation=Strict", RS)
    assert (status, body["message"]) == (
        400,
        'ReplicaSet in version "v1" cannot be handled as a ReplicaSet: strict decoding error: '
        'duplicate field "spec.replicas"',
    )
    status, body, warnings = await call("POST", URL, RS)
    assert status == 201 and body["spec"]["replicas"] == 2
    assert warnings == ['299 - "duplicate field \\"spec.replicas\\""']
    status, body, warnings = await call(
        "PATCH",
        f"{URL}/dup",
        '{"spec":{"replicas":3,"replicas":4}}',
        (b"content-type", b"application/merge-patch+json"),
    )
    assert status == 200 and body["spec"]["replicas"] == 4 and len(warnings) == 1
    actions = [a["action"]["request"] for a in running_host.sims["demo"].sim.actions if "request" in a["action"]]
    assert [a.get("duplicates") for a in actions[-3:]] == [
        [{"path": ["spec"], "keys": ["replicas", "replicas", "selector", "template"]}],
        [{"path": ["spec"], "keys": ["replicas", "replicas", "selector", "template"]}],
        [{"path": ["spec"], "keys": ["replicas", "replicas"]}],
    ]


async def test_a_dry_run_decodes_as_the_write_would_and_answers_with_its_warnings(running_host):
    """`dryRun=All` goes through the same strict decoding: a repeated key is refused under Strict
    and warned about under Warn, with the Warning header a real write gets; nothing is stored."""
    actions = len(running_host.sims["demo"].sim.actions)
    status, body, _ = await call("POST", f"{URL}?dryRun=All&fieldValidation=Strict", RS)
    assert status == 400 and 'strict decoding error: duplicate field "spec.replicas"' in body["message"]
    status, body, warnings = await call("POST", f"{URL}?dryRun=All", RS)
    assert status == 201 and body["spec"]["replicas"] == 2
    assert warnings == ['299 - "duplicate field \\"spec.replicas\\""']
    sim = running_host.sims["demo"].sim
    assert sim.server.peek("replicasets", "default", "dup") is None and len(sim.actions) == actions

"""The hostile-input corpus (tests/corpus) fed through the dashboard's doors: the websocket, the
YAML editor and the Kubernetes HTTP API (bodies too large included). Each case must be turned
away — an error reply or a 4xx Status — with the simulation's store unchanged and the simulation
still running."""

from __future__ import annotations

import json
import math

import pytest
import yaml
from channels.testing import HttpCommunicator, WebsocketCommunicator

from controlplane.scenario import parse_scenario
from dashboard.asgi import application
from tests.corpus import BASE_SCENARIO, load_cases

from .conftest import ORIGIN, TOKEN

pytestmark = pytest.mark.django_db(transaction=True)

ACTIONS = load_cases("action")
MANIFESTS = load_cases("manifest")
PATHS = {
    "ReplicaSet": "/apis/apps/v1/namespaces/default/replicasets",
    "ReplicationController": "/api/v1/namespaces/default/replicationcontrollers",
    "Pod": "/api/v1/namespaces/default/pods",
}


def as_json(value):
    """The case as JSON text a client could send, or None when JSON cannot carry it."""
    try:
        return json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return None


def as_yaml(value):
    """The case as the YAML a user could paste (`.inf`, `.nan` included), or None."""
    try:
        return yaml.safe_dump(value)
    except (yaml.YAMLError, RecursionError):
        return None


@pytest.fixture
async def corpus_sim(running_host):
    hosted = await running_host.start_simulation(parse_scenario(BASE_SCENARIO), source="corpus", sim_id="corpus")
    hosted.sim.run_until(3.0)
    return hosted


async def viewer():
    comm = WebsocketCommunicator(application, f"/ws/sim/corpus/?token={TOKEN}", headers=ORIGIN)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return comm


async def reply_to(comm, text, msg_id):
    await comm.send_to(text_data=text)
    while True:
        message = json.loads(await comm.receive_from(timeout=10))
        if message["type"] == "reply" and message.get("id") == msg_id:
            return message["result"]
        # A message the consumer could not read (too long, not JSON) gets an error without an id.
        if message["type"] == "error" and message.get("id") in (msg_id, None):
            return {"ok": False, "error": message["error"]}


async def test_every_bad_action_through_the_websocket_is_turned_away(corpus_sim):
    comm = await viewer()
    store, sent = corpus_sim.sim.server.digest(), 0
    for i, case in enumerate(ACTIONS):
        text = as_json({"type": "cmd", "id": i, "cmd": {"op": "act", "action": case.input["action"]}})
        if text is None:
            continue
        sent += 1
        result = await reply_to(comm, text, i)
        assert result["ok"] is False, (case.id, result)
        assert corpus_sim.sim.server.digest() == store, case.id
    assert sent >= 60
    assert corpus_sim.error is None and corpus_sim.sim.halted is None
    corpus_sim.sim.advance(5)  # and it runs on
    await comm.disconnect()


async def test_every_bad_manifest_through_the_yaml_editor_is_turned_away(corpus_sim):
    comm = await viewer()
    store, sent = corpus_sim.sim.server.digest(), 0
    for i, case in enumerate(MANIFESTS):
        text = as_yaml(case.input["manifest"])
        if text is None or len(text) > 250_000:
            continue
        sent += 1
        message = {"type": "cmd", "id": i, "cmd": {"op": "apply_yaml", "text": text}}
        result = await reply_to(comm, json.dumps(message), i)
        assert result["ok"] is False, (case.id, result)
        assert corpus_sim.sim.server.digest() == store, case.id
    assert sent >= 100
    assert corpus_sim.error is None and corpus_sim.sim.halted is None
    await comm.disconnect()


async def post(path, body, content_type="application/json"):
    headers = [(b"authorization", f"Bearer {TOKEN}".encode()), (b"content-type", content_type.encode())]
    comm = HttpCommunicator(application, "POST", path, body=body, headers=headers)
    response = await comm.get_response(timeout=20)
    return response["status"], json.loads(response["body"] or b"{}")


async def test_every_bad_manifest_through_the_kubernetes_api_gets_a_4xx_status(corpus_sim):
    store, sent = corpus_sim.sim.server.digest(), 0
    for case in MANIFESTS:
        manifest = case.input["manifest"]
        kind = manifest.get("kind") if isinstance(manifest, dict) else None
        text = as_json(manifest)
        if text is None or kind not in PATHS:
            continue
        sent += 1
        status, body = await post(f"/sim/corpus/k8s{PATHS[kind]}", text.encode())
        assert 400 <= status < 500, (case.id, status, body)
        assert body.get("kind") == "Status" and body.get("status") == "Failure", (case.id, body)
        assert corpus_sim.sim.server.digest() == store, case.id
    assert sent >= 80
    assert corpus_sim.error is None and corpus_sim.sim.halted is None


@pytest.mark.parametrize(
    ("body", "content_type", "status", "message"),
    [
        (b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"x": NaN}}', "application/json",
         400, "unknown format"),
        (b"[" * 50_000 + b"]" * 50_000, "application/json", 400, "nested deeper"),
        (b"[" * 200_000 + b"]" * 200_000, "application/yaml", 400, "nested deeper"),
        (b"a: &a [x,x,x,x,x,x,x,x,x]\n" + b"".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n".encode() for i in range(8)
        ), "application/yaml", 400, "decoding YAML"),
        (b"x" * (3 * 1024 * 1024 + 10), "application/json", 413, "Request entity too large: limit is 3145728"),
        (b"x" * (5 * 1024 * 1024), "application/json", 413, "larger than the limit"),
        (b"\xff\xfe", "application/json", 400, "not UTF-8"),
    ],
    ids=["nan", "deep-json", "deep-yaml", "alias-bomb", "over-3-MiB", "over-4-MiB", "not-utf8"],
)
async def test_hostile_bodies_get_a_4xx_status_and_change_nothing(corpus_sim, body, content_type, status, message):
    store = corpus_sim.sim.server.digest()
    got, answer = await post("/sim/corpus/k8s/api/v1/namespaces/default/pods", body, content_type)
    assert got == status, answer
    assert message in answer.get("message", ""), answer
    assert corpus_sim.sim.server.digest() == store
    assert math.isfinite(corpus_sim.sim.now)

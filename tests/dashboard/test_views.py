"""Pages and HTTP endpoints: access, starting and stopping simulations, export, limits."""

from __future__ import annotations

import asyncio
import html
import json

import pytest
import yaml
from django.test import AsyncClient

from controlplane.simulation import run_scenario
from dashboard.asgi_limits import BodyLimit
from dashboard.models import SimulationRecord

from .conftest import OWN_ORIGIN, TOKEN

pytestmark = pytest.mark.django_db(transaction=True)


async def controlling_client():
    client = AsyncClient(**OWN_ORIGIN)
    response = await client.get(f"/?token={TOKEN}")
    assert response.status_code == 302 and response["Location"] == "/"
    return client


async def test_the_token_in_a_url_is_kept_in_the_session_and_dropped_from_the_address(running_host):
    client = AsyncClient()
    response = await client.get(f"/sim/demo/?token={TOKEN}&x=1")
    assert response.status_code == 302 and response["Location"] == "/sim/demo/?x=1"
    page = await client.get("/sim/demo/")
    assert b'data-control="1"' in page.content
    assert (await AsyncClient().get("/?token=wrong")).status_code == 403
    anonymous = await AsyncClient().get("/sim/demo/")
    assert b'data-control="0"' in anonymous.content


async def test_home_lists_running_simulations_and_the_library(running_host):
    response = await AsyncClient().get("/")
    body = response.content.decode()
    assert "/sim/demo/" in body and "demo cluster" in body
    assert "quota runs out" in body or "quota" in body
    assert "Read-only" in body


async def test_start_from_the_library_with_a_seed_then_stop(running_host):
    client = await controlling_client()
    response = await client.post("/sim/new", {"scenario": "scale-up-and-down", "seed": "42"})
    assert response.status_code == 302
    sim_id = response["Location"].strip("/").split("/")[1]
    hosted = running_host.sims[sim_id]
    assert hosted.sim.seed == 42 and hosted.mode == "paused"
    assert await SimulationRecord.objects.filter(id=sim_id).aexists()
    asked = await client.post(f"/sim/{sim_id}/stop")  # without confirm=yes: are you sure?
    assert asked.status_code == 200 and 'name="confirm" value="yes"' in asked.content.decode()
    assert sim_id in running_host.sims
    assert (await client.post(f"/sim/{sim_id}/stop", {"confirm": "yes"})).status_code == 302
    assert sim_id not in running_host.sims
    assert not await SimulationRecord.objects.filter(id=sim_id).aexists()


async def test_start_from_an_uploaded_file(running_host, tmp_path):
    client = await controlling_client()
    text = "name: uploaded\nobjects: []\nuntil: 10\n"
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("s.yaml", text.encode(), content_type="application/yaml")
    response = await client.post("/sim/new", {"file": upload, "run": "1"})
    assert response.status_code == 302
    sim_id = response["Location"].strip("/").split("/")[1]
    assert running_host.sims[sim_id].name == "uploaded" and running_host.sims[sim_id].mode == "running"


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"scenario": "../../etc/passwd"}, "scenario: choose one from the library"),
        ({"scenario": "demo", "seed": "-3"}, "seed: must be a whole number"),
        ({"scenario": "demo", "seed": "1e9"}, "seed: must be a whole number"),
        ({"file": ("s.yaml", b"\xff\xfe\x00binary")}, "file: not UTF-8 text"),
        ({"file": ("s.yaml", b"name: [unclosed")}, "file: not valid YAML"),
        ({"file": ("s.yaml", b"until: -1\n")}, "file: until: must be >= 0"),
        ({"file": ("s.yaml", b"objects: [{apiVersion: v1, kind: Pod, metadata: {name: BAD_NAME}}]\n")}, "objects[0]"),
        # An operator is code the server would import: none without CTRLSCOPE_OPERATOR_DIR, and
        # refused before its path is even looked at (no probing the server's files).
        (
            {"file": ("s.yaml", b"operators: [{module: examples/kopf-operator/operator.py}]\n")},
            "file: operators: this server runs no operator's code: start it with CTRLSCOPE_OPERATOR_DIR",
        ),
        ({"file": ("s.yaml", b"operators: [{module: /no/such.py}]\n")}, "this server runs no operator's code"),
    ],
)
async def test_a_bad_start_request_shows_the_problem_and_starts_nothing(running_host, fields, error):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = await controlling_client()
    data = dict(fields)
    if "file" in data:
        name, content = data["file"]
        data["file"] = SimpleUploadedFile(name, content)
    before = set(running_host.sims)
    response = await client.post("/sim/new", data)
    assert response.status_code == 400
    assert error in html.unescape(response.content.decode())
    assert set(running_host.sims) == before


OPERATOR_WORLD = """name: uploaded-operator
operators: [{module: MODULE}]
objects:
  - apiVersion: apps/v1
    kind: ReplicaSet
    metadata: {name: web, namespace: default}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: app, image: nginx}]}
until: 30
"""


async def test_an_uploaded_scenario_runs_operators_only_from_the_servers_operator_directory(
    running_host, tmp_path, settings
):
    import pathlib

    from django.core.files.uploadedfile import SimpleUploadedFile

    root = pathlib.Path(__file__).resolve().parents[2]
    operators = tmp_path / "operators"
    operators.mkdir()
    (operators / "labeller.py").write_text((root / "examples/kopf-operator/operator.py").read_text())
    (tmp_path / "outside.py").write_text("raise SystemExit('imported from outside the directory')\n")
    settings.CTRLSCOPE_OPERATOR_DIR = str(operators)
    client = await controlling_client()

    async def start(module):
        upload = SimpleUploadedFile("s.yaml", OPERATOR_WORLD.replace("MODULE", module).encode())
        return await client.post("/sim/new", {"file": upload})

    before = set(running_host.sims)
    for module, error in [
        ("../outside.py", "operators[0].module: must be a path relative to the server's operator directory"),
        (str(tmp_path / "outside.py"), "operators[0].module: must be a path relative to the server's operator"),
        ("missing.py", "operators[0].module: no such file 'missing.py' in the server's operator directory"),
    ]:
        response = await start(module)
        assert response.status_code == 400 and error in html.unescape(response.content.decode()), module
    assert set(running_host.sims) == before
    response = await start("labeller.py")
    assert response.status_code == 302, html.unescape(response.content.decode())
    sim_id = response["Location"].strip("/").split("/")[1]
    hosted = running_host.sims[sim_id]
    assert hosted.sim.scenario.operators == [{"module": str(operators / "labeller.py")}]
    # The operator runs in the dashboard's world: step it to t=20 and it has labelled the pods.
    running_host.service.command(sim_id, {"op": "step", "what": "to", "t": 20})
    for _ in range(600):
        if hosted.sim.now >= 20:
            break
        await asyncio.sleep(0.05)
    pods = [p for p in hosted.sim.server.objects("pods") if p["metadata"].get("labels", {}).get("app") == "web"]
    assert len(pods) == 2 and all(p["metadata"]["labels"].get("seen-by") == "kopf" for p in pods), pods


async def test_starting_without_the_token_is_refused(running_host):
    response = await AsyncClient().post("/sim/new", {"scenario": "demo"})
    assert response.status_code == 403
    assert set(running_host.sims) == {"demo"}
    assert (await AsyncClient().post("/sim/demo/stop")).status_code == 403


async def test_the_exported_scenario_replays_to_the_report_of_the_session(running_host, tmp_path):
    client = await controlling_client()
    hosted = running_host.sims["demo"]
    hosted.command({"op": "pause"})
    hosted.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 2}}})
    export = await client.get("/sim/demo/scenario.yaml")
    assert export.status_code == 200 and export["Content-Disposition"].endswith('demo.scenario.yaml"')
    report = json.loads((await client.get("/sim/demo/report.json")).content)
    path = tmp_path / "s.yaml"
    path.write_bytes(export.content)
    assert yaml.safe_load(export.content)["until"] == report["time"]
    replay = run_scenario(str(path))
    assert json.dumps(replay["objects"]) == json.dumps(report["objects"])
    assert json.dumps(replay["apiCalls"]) == json.dumps(report["apiCalls"])


async def test_pod_detail_and_sync_history_partials(running_host):
    hosted = running_host.sims["demo"]
    hosted.command({"op": "pause"})
    hosted.sim.run_until(5.0)
    name = next(p["metadata"]["name"] for p in hosted.sim.server.objects("pods"))
    client = AsyncClient()
    pod = await client.get(f"/sim/demo/pod/default/{name}")
    assert pod.status_code == 200 and name in pod.content.decode() and "States" in pod.content.decode()
    syncs = await client.get("/sim/demo/syncs/replicaset/default/web")
    assert syncs.status_code == 200 and "Sync of" in syncs.content.decode()
    assert (await client.get("/sim/demo/syncs/nope/default/web")).status_code == 400
    missing = await client.get("/sim/nope/")
    assert missing.status_code == 404 and "no simulation nope is running" in missing.content.decode()


@pytest.mark.parametrize("method", ["options", "trace", "put", "delete"])
async def test_pages_refuse_methods_they_do_not_take(running_host, method):
    client = AsyncClient()
    for path in ("/", "/sim/demo/", "/sim/demo/scenario.yaml"):
        response = await getattr(client, method)(path) if method != "trace" else await client.generic("TRACE", path)
        assert response.status_code == 405, (method, path)


async def test_a_body_over_the_limit_is_refused_before_it_is_read():
    received = []

    async def app(scope, receive, send):
        while True:
            message = await receive()
            received.append(message)
            if message["type"] == "http.disconnect" or not message.get("more_body"):
                break

    sent = []

    async def send(message):
        sent.append(message)

    chunks = [{"type": "http.request", "body": b"x" * 600, "more_body": True} for _ in range(10)]

    async def receive():
        return chunks.pop(0)

    limited = BodyLimit(app, limit=1000)
    await limited({"type": "http", "headers": [(b"content-length", b"500000000")]}, receive, send)
    assert sent[0]["status"] == 413 and received == []  # refused on the declared length, nothing read
    sent.clear()
    await limited({"type": "http", "headers": []}, receive, send)  # chunked: counted as it arrives
    assert sent[0]["status"] == 413
    assert [m["type"] for m in received] == ["http.request", "http.disconnect"]
    assert len(chunks) == 8


async def test_open_a_file_paused_just_before_a_time_pinned_on_the_timeline(running_host):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = await controlling_client()
    upload = SimpleUploadedFile("swarm-seed-7.yaml", b"name: seed 7\nuntil: 100\n")
    response = await client.post("/sim/new", {"file": upload, "pause_before": "12.5", "mark": "esr"})
    sim_id = response["Location"].strip("/").split("/")[1]
    hosted = running_host.sims[sim_id]
    assert hosted.marks == [{"t": 12.5, "label": "esr"}]
    for _ in range(200):
        if not hosted.busy:
            break
        await asyncio.sleep(0.02)
    assert hosted.sim.now == 12.499 and hosted.mode == "paused"
    bad = await client.post("/sim/new", {"scenario": "demo", "pause_before": "nan"})
    assert bad.status_code == 400 and "pause before" in bad.content.decode()

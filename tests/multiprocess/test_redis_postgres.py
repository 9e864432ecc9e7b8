"""Several Daphne processes serving one set of simulations: the Redis channel layer and a
PostgreSQL registry (the services running on these machines). Process A hosts the demo; a viewer
and commands that arrive at process B reach it."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import secrets
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import websockets

from tests.patience import PATIENCE_S

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKEN = "multiprocess-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def psql(sql: str) -> None:
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "root", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", sql],
                   check=True, capture_output=True)


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


LOGS: list[pathlib.Path] = []  # the processes' outputs


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    state = tmp_path_factory.mktemp("multiprocess")
    database = f"ctrlscope_mp_{secrets.token_hex(4)}"
    psql(f"CREATE DATABASE {database}")
    env = {
        **os.environ,
        "CTRLSCOPE_DB_URL": f"postgres://root@127.0.0.1:5432/{database}",
        "CTRLSCOPE_REDIS_URL": "redis://127.0.0.1:6379/0",
        "CTRLSCOPE_REDIS_PREFIX": f"ctrlscope-test-{secrets.token_hex(4)}",
        "CTRLSCOPE_TOKEN": TOKEN,
        "CTRLSCOPE_STATE_DIR": str(state),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    daphne = str(pathlib.Path(sys.executable).parent / "daphne")
    procs, urls = [], []
    for name, start in (("a", "demo"), ("b", "")):
        port = free_port()
        log = open(state / f"{name}.log", "wb")  # noqa: SIM115 - closed at teardown
        LOGS.append(state / f"{name}.log")
        procs.append((subprocess.Popen([daphne, "-b", "127.0.0.1", "-p", str(port), "dashboard.asgi:application"],
                                       cwd=ROOT, env={**env, "CTRLSCOPE_START": start}, stdout=log,
                                       stderr=subprocess.STDOUT), log))
        urls.append(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + PATIENCE_S
        for url in urls:
            while True:
                try:
                    get(url + "/")
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError((state / "a.log").read_text()[-2000:]) from None
                    time.sleep(0.2)
        yield urls
    finally:
        for proc, log in procs:
            proc.terminate()
            proc.wait(timeout=PATIENCE_S)
            log.close()
        psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def test_process_b_lists_and_answers_for_the_simulation_process_a_hosts(two_processes):
    _, b = two_processes
    deadline = time.monotonic() + PATIENCE_S
    while b"/sim/demo/" not in get(b + "/"):  # A registers the demo in the shared database
        assert time.monotonic() < deadline
        time.sleep(0.3)
    status = json.loads(get(b + "/sim/demo/status.json"))  # answered by A, through Redis
    assert status["id"] == "demo" and status["mode"] == "running"


def test_a_viewer_at_process_b_watches_and_controls_the_simulation_in_a(two_processes):
    a, b = two_processes

    async def session():
        url = b.replace("http://", "ws://") + f"/ws/sim/demo/?token={TOKEN}"
        async with websockets.connect(url, origin=b, max_size=None) as ws:
            kinds, frames = [], 0
            parts: list[str] | None = None
            expected = 0
            while frames < 3:
                text = await asyncio.wait_for(ws.recv(), 10)
                if parts is not None:
                    parts.append(text)
                    if len(parts) < expected:
                        continue
                    text, parts = "".join(parts), None
                message = json.loads(text)
                if message["type"] == "parts":
                    parts, expected = [], message["n"]
                    continue
                kinds.append(message["type"])
                if message["type"] in ("state", "frame"):
                    await ws.send(json.dumps({"type": "ack", "seq": message["seq"]}))
                    frames += message["type"] == "frame"
            assert kinds[:2] == ["hello", "state"]
            await ws.send(json.dumps({"type": "cmd", "id": 1, "cmd": {"op": "pause"}}))
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if message["type"] == "reply":
                    return message["result"]

    assert asyncio.run(session()) == {"ok": True, "mode": "paused"}
    assert json.loads(get(a + "/sim/demo/status.json"))["mode"] == "paused"  # A's own view agrees


def test_big_reads_at_process_b_come_from_a_in_parts_through_redis(two_processes):
    """report.json, scenario.yaml and a Kubernetes list asked at B are streamed by A's host."""
    _, b = two_processes
    report = json.loads(get(b + "/sim/demo/report.json"))
    assert report["seed"] is not None and "Pod" in report["objects"]
    assert b"until:" in get(b + "/sim/demo/scenario.yaml")
    request = urllib.request.Request(b + "/sim/demo/k8s/api/v1/pods?limit=2",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        pods = json.loads(response.read())
    assert pods["kind"] == "PodList" and len(pods["items"]) <= 2


def test_a_kubernetes_watch_at_process_b_gets_the_events_of_the_simulation_in_a(two_processes):
    """The watch's registration goes to A's watch channel through Redis, its events come back to
    B's stream; the create is B's too."""
    import requests

    _, b = two_processes
    headers = {"Authorization": f"Bearer {TOKEN}"}
    events = b + "/sim/demo/k8s/api/v1/namespaces/default/events"
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "from-b", "namespace": "default", "labels": {"door": "b"}},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Test",
        "message": "created at B",
    }
    watch = f"{events}?watch=true&labelSelector=door%3Db&timeoutSeconds=20"
    with requests.get(watch, headers=headers, stream=True, timeout=20) as stream:
        assert stream.status_code == 200
        assert requests.post(events, json=event, headers=headers, timeout=10).status_code == 201
        lines = (json.loads(line) for line in stream.iter_lines() if line)
        first = next(lines)
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "from-b", first


def test_an_idle_host_keeps_listening_through_redis_without_errors(two_processes):
    """The layer's blocking pop waits 5 s; redis-py's default read timeout was 5 s as well, so
    every idle receive ended in a TimeoutError (and, before the listener retried, the host
    stopped answering)."""
    _, b = two_processes
    time.sleep(12)  # two idle pops and more
    status = json.loads(get(b + "/sim/demo/status.json"))
    assert status["id"] == "demo"
    for log in LOGS:
        text = log.read_text()
        assert "failed; listening again" not in text and "Traceback" not in text, text[-3000:]

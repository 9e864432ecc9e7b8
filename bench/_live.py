"""A live ctrlscope server for the UI benchmarks: `daphne` in a subprocess on a free port, its own
database and state directory, a known token, and the first simulation from a scenario file."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOKEN = "bench-token-0123456789"  # at least 16 characters (settings refuses a weak token)
SERVERS: dict[str, int] = {}  # url -> pid of the server process live_server started there


def scenario_file(doc: dict, directory: pathlib.Path, name: str) -> pathlib.Path:
    import yaml

    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def fleet(replicasets: int, replicas: int, nodes: int, **config: object) -> dict:
    """`replicasets` ReplicaSets of `replicas` pods each on `nodes` nodes, client QPS off (the
    controller's, the scheduler's and the kubelets': 10,000 pods bound at the scheduler's 50 QPS
    would take 200 s to converge)."""
    objects = []
    for i in range(replicasets):
        name = f"rs-{i:03d}"
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
                    },
                },
            }
        )
    client_limits = {"kubeApiQPS": -1, "schedulerQPS": -1, "kubeletQPS": -1}
    return {
        "name": "bench fleet",
        "seed": 1,
        "config": {"nodes": nodes, **client_limits, **config},
        "objects": objects,
        "until": 3600,
    }


@contextlib.contextmanager
def live_server(start_file: pathlib.Path) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    state = pathlib.Path(tempfile.mkdtemp(prefix="ctrlscope-bench-"))
    env = {
        **os.environ,
        "CTRLSCOPE_DB_PATH": str(state / "bench.sqlite3"),
        "CTRLSCOPE_STATE_DIR": str(state),
        "CTRLSCOPE_TOKEN": TOKEN,
        "CTRLSCOPE_TLS_PORT": "0",  # plain http only: no second port (http + 443) to collide
        "CTRLSCOPE_START": str(start_file),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    log = open(state / "daphne.log", "wb")  # noqa: SIM115
    # The project's server (Daphne with an access log that never shows the token); plain Daphne
    # for an older checkout (--root) that has none.
    serve = ["-m", "dashboard.serve"] if (ROOT / "dashboard" / "serve.py").exists() else ["-m", "daphne"]
    proc = subprocess.Popen(
        [sys.executable, *serve, "-b", "127.0.0.1", "-p", str(port), "dashboard.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((state / "daphne.log").read_text()[-2000:]) from None
                time.sleep(0.2)
        SERVERS[url] = proc.pid
        yield url
    finally:
        SERVERS.pop(url, None)
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            # A server busy with a long session can take longer to stop: what was measured stands.
            print("the server did not stop within 10 s of SIGTERM: killed", file=sys.stderr)
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def cpu_seconds(url: str) -> float:
    """CPU time (user + system) the server at `url` has used so far: what a figure of work per CPU
    second is made of, which other processes on a shared machine do not change as they change
    wall-clock rates."""
    with open(f"/proc/{SERVERS[url]}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status(url: str, sim_id: str) -> dict:
    with urllib.request.urlopen(f"{url}/sim/{sim_id}/status.json", timeout=30) as response:
        return json.loads(response.read())

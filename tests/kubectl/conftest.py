"""The real `/usr/bin/kubectl` and the official Python client against a live Daphne server.

One server per module (its own SQLite file, state dir, CA and token; started as `./scripts/run`
starts it, `python -m dashboard.serve`, plain http and TLS), one fresh `KUBECACHEDIR` and `TMPDIR`
per session; kubectl and the clients use the TLS kubeconfig (`certificate-authority-data`, a
bearer token) unless a test asks for the path-token form; tests that change the world get a
simulation of their own, started from an uploaded scenario (running at 1x, or paused where the
test needs a frozen clock) and stopped after.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest
import requests
import yaml

from tests.patience import PATIENCE_S

ROOT = pathlib.Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
TOKEN = "kubectl-test-token"

WORLD = {
    "name": "kubectl test world",
    "seed": 3,
    "config": {"nodes": 2, "podStartup": 0.5},
    "objects": [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": "legacy", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"app": "legacy"},
                "template": {
                    "metadata": {"labels": {"app": "legacy"}},
                    "spec": {"containers": [{"name": "legacy", "image": "busybox:1.36"}]},
                },
            },
        },
    ],
    "until": 3600,
}

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl is not installed")


class Server:
    def __init__(self, url: str, tls_url: str, tmp: pathlib.Path, env: dict[str, str]) -> None:
        self.url = url
        self.tls_url = tls_url
        self.tmp = tmp
        self.env = env  # the server's own (its database and state dir: the CA, the running simulations)
        self.ca = tmp / "state" / "ca.crt"
        self.session = requests.Session()
        self.session.get(f"{url}/?token={TOKEN}", timeout=10)  # the control flag in the session

    def start(self, *, running: bool = True, world: dict | None = None) -> str:
        page = self.session.get(f"{self.url}/sim/new", timeout=10).text
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
        text = yaml.safe_dump(world or WORLD, sort_keys=False)
        data = {"csrfmiddlewaretoken": csrf}
        if running:
            data["run"] = "1"
        answer = self.session.post(
            f"{self.url}/sim/new",
            data=data,
            files={"file": ("world.scenario.yaml", text, "application/yaml")},
            headers={"Referer": f"{self.url}/", "Origin": self.url},  # as the page's form sends them
            allow_redirects=False,
            timeout=10,
        )
        assert answer.status_code == 302, answer.text[-2000:]
        return re.search(r"/sim/([^/]+)/", answer.headers["Location"])[1]

    def stop(self, sim_id: str) -> None:
        csrf = next(value for name, value in self.session.cookies.items() if name.startswith("ctrlscope_csrf_"))
        self.session.post(
            f"{self.url}/sim/{sim_id}/stop",
            data={"csrfmiddlewaretoken": csrf},
            headers={"Referer": f"{self.url}/", "Origin": self.url},
            allow_redirects=False,
            timeout=10,
        )

    def command(self, sim_id: str, cmd: dict) -> dict:
        """One host command through the dashboard's websocket (as the page sends it)."""
        import websocket

        ws = websocket.create_connection(
            f"{self.url.replace('http', 'ws', 1)}/ws/sim/{sim_id}/?token={TOKEN}", origin=self.url, timeout=10
        )
        try:
            ws.send(json.dumps({"type": "cmd", "id": 7, "cmd": cmd}))
            while True:
                message = json.loads(ws.recv())
                if message.get("type") == "reply" and message.get("id") == 7:
                    return message
        finally:
            ws.close()

    def kubeconfig(self, sim_id: str, *, path_token: bool = False) -> pathlib.Path:
        """`manage.py kubeconfig --sim ID`: the TLS form, or with `path_token` the plain http one."""
        path = self.tmp / f"kubeconfig-{sim_id}{'-path-token' if path_token else ''}"
        if not path.exists():
            form = ["--insecure-path-token", "--server", self.url] if path_token else ["--server", self.tls_url]
            out = subprocess.run(
                [sys.executable, "manage.py", "kubeconfig", "--sim", sim_id, *form],
                cwd=ROOT,
                env=self.env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            path.write_text(out)
        return path


class Kubectl:
    """`kubectl` for one simulation; `run()` returns the CompletedProcess (text)."""

    def __init__(self, server: Server, sim_id: str, env: dict[str, str]) -> None:
        self.server, self.sim_id = server, sim_id
        self.env = {**env, "KUBECONFIG": str(server.kubeconfig(sim_id))}

    def run(
        self,
        *args: str,
        check: bool = True,
        timeout: float = 60,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [KUBECTL, *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr}")
        return result

    def __call__(self, *args: str, **kwargs) -> str:
        return self.run(*args, **kwargs).stdout

    def until(self, predicate, *args: str, timeout: float = PATIENCE_S) -> str:
        """Run `kubectl args` until `predicate(stdout)` holds (the simulation runs at 1x)."""
        deadline = time.monotonic() + timeout
        while True:
            out = self(*args)
            if predicate(out):
                return out
            if time.monotonic() > deadline:
                raise AssertionError(f"kubectl {' '.join(args)} never satisfied the predicate; last output:\n{out}")
            time.sleep(0.3)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port, tls_port = free_port(), free_port()
    tmp = tmp_path_factory.mktemp("kubectl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTRLSCOPE_")}
    env.update(
        CTRLSCOPE_DB_PATH=str(tmp / "db.sqlite3"),
        CTRLSCOPE_STATE_DIR=str(tmp / "state"),
        CTRLSCOPE_TOKEN=TOKEN,
        CTRLSCOPE_PORT=str(port),
        CTRLSCOPE_TLS_PORT=str(tls_port),
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        PYTHONPATH=str(ROOT),
    )
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    # The server's log goes to a file: a pipe nobody reads would stop the server once ~64 KiB of
    # warnings filled it (a loaded machine logs more of them).
    log = open(tmp / "daphne.log", "wb")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard.serve", "-b", "127.0.0.1", "-p", str(port), "dashboard.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    tls_url = f"https://127.0.0.1:{tls_port}"
    deadline = time.monotonic() + PATIENCE_S
    while True:
        try:
            requests.get(url + "/version", timeout=1)
            requests.get(tls_url + "/version", timeout=1, verify=str(tmp / "state" / "ca.crt"))
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                log.close()
                raise RuntimeError(f"daphne did not start: {(tmp / 'daphne.log').read_text()[-2000:]}") from None
            time.sleep(0.2)
    yield Server(url, tls_url, tmp, env)
    proc.terminate()
    proc.wait(timeout=PATIENCE_S)
    log.close()


@pytest.fixture(scope="session")
def kubectl_env(tmp_path_factory):
    base = tmp_path_factory.mktemp("kubectl-env")
    (base / "cache").mkdir()
    (base / "tmp").mkdir()
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(base),
        "KUBECACHEDIR": str(base / "cache"),
        "TMPDIR": str(base / "tmp"),
    }


@pytest.fixture
def sim(server):
    """A running simulation of its own (the world above, at 1x)."""
    sim_id = server.start()
    yield sim_id
    server.stop(sim_id)


@pytest.fixture
def kubectl(server, sim, kubectl_env):
    return Kubectl(server, sim, kubectl_env)

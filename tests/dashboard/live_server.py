"""A real server process for the tests that need what an in-process communicator cannot show
(Daphne's own limits, its access log): `python -m dashboard.serve` or plain `daphne`, with its
own state directory, SQLite file and token, up once the demo answers."""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

from tests.patience import PATIENCE_S

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVERS = {  # the project's entry (as ./scripts/run starts it) and plain Daphne, as people also do
    "dashboard.serve": [sys.executable, "-m", "dashboard.serve"],
    "daphne": [str(pathlib.Path(sys.executable).parent / "daphne")],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def live_server(
    tmp_path: pathlib.Path, server: list[str], token: str, *, tls_port: int = 0, env: dict[str, str] | None = None
) -> Iterator[int]:
    """Start `server` on a free port (`env`: more of its environment); yields the port once
    `/sim/demo/status.json` answers. The output goes to `tmp_path / "server.log"`, complete once
    the block is left."""
    import requests

    port = free_port()
    extra = env or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTRLSCOPE_") and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update(extra)
    env.update(
        CTRLSCOPE_STATE_DIR=str(tmp_path / "state"),
        CTRLSCOPE_DB_PATH=str(tmp_path / "db.sqlite3"),
        CTRLSCOPE_TOKEN=token,
        CTRLSCOPE_TLS_PORT=str(tls_port),
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        PYTHONPATH=str(ROOT),
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*server, "-b", "127.0.0.1", "-p", str(port), "dashboard.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + PATIENCE_S
            while True:  # up when the demo is registered (the listening socket comes first)
                try:
                    if requests.get(f"http://127.0.0.1:{port}/sim/demo/status.json", timeout=1).status_code == 200:
                        break
                except OSError:
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            yield port
        finally:
            proc.terminate()
            proc.wait(timeout=PATIENCE_S)

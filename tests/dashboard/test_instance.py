"""One server per SQLite file: a second server refuses to start instead of deleting the first
one's registry rows; a server killed with -9 leaves nothing that blocks the next."""

import contextlib
import os
import pathlib
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.patience import PATIENCE_S

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKEN = "instance-test-token-0123"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def env(tmp_path):
    env = {
        **os.environ,
        "CTRLSCOPE_DB_PATH": str(tmp_path / "db.sqlite3"),
        "CTRLSCOPE_STATE_DIR": str(tmp_path / "state"),
        "CTRLSCOPE_TOKEN": TOKEN,
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    return env


def _daphne(env, port: int, log=None) -> subprocess.Popen:
    """A server process: its output into `log` (an open file), or piped when none is given."""
    bindir = pathlib.Path(sys.executable).parent
    piped = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    outputs = {"stdout": log, "stderr": subprocess.STDOUT} if log else piped
    return subprocess.Popen(
        [str(bindir / "daphne"), "-b", "127.0.0.1", "-p", str(port), "dashboard.asgi:application"],
        cwd=ROOT, env=env, **outputs,
    )


@contextlib.contextmanager
def _serving(env, log: pathlib.Path, end: int = signal.SIGTERM):
    """A server on a free port, once it lists its demo; ended with `end` afterwards."""
    port = _port()
    with open(log, "wb") as out:
        proc = _daphne(env, port, out)
        try:
            deadline = time.monotonic() + PATIENCE_S
            while not _serves_demo(port, env["CTRLSCOPE_DB_PATH"]):
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.2)
            yield port
        finally:
            proc.send_signal(end)
            proc.wait(timeout=PATIENCE_S)


def _serves_demo(port: int, db: str) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
    except OSError:
        return False
    return bool(_rows(db))


def _rows(db: str) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, host FROM dashboard_simulationrecord").fetchall()


def test_a_second_server_on_the_same_sqlite_file_refuses_to_start_and_deletes_nothing(env, tmp_path):
    db = env["CTRLSCOPE_DB_PATH"]
    with _serving(env, tmp_path / "first.log", end=signal.SIGKILL) as first_port:
        before = _rows(db)
        second = _daphne(env, _port())
        try:
            _out, err = second.communicate(timeout=30)
        finally:
            second.kill()
        assert second.returncode == 2
        lines = [line for line in err.decode().splitlines() if line.strip()]
        assert lines[-1].startswith("ctrlscope: another ctrlscope server (process ")
        assert db in lines[-1] and "CTRLSCOPE_DB_PATH" in lines[-1]
        assert "Traceback" not in err.decode()
        time.sleep(0.5)
        assert _rows(db) == before  # the first server's simulations are still listed
        with urllib.request.urlopen(f"http://127.0.0.1:{first_port}/sim/demo/status.json", timeout=5) as r:
            assert r.status == 200  # and it still serves them


def test_a_symlink_to_a_served_sqlite_file_is_the_same_database(env, tmp_path):
    """The lock belongs to the file, not to the name: a second server given a symlink to the
    first one's database (or a path through a symlinked directory) refuses to start."""
    db = pathlib.Path(env["CTRLSCOPE_DB_PATH"])
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "link.sqlite3"
    link.symlink_to(db)
    linked_dir = tmp_path / "linked-dir"
    linked_dir.symlink_to(tmp_path)
    with _serving(env, tmp_path / "first.log") as first_port:
        before = _rows(str(db))
        for other in (link, linked_dir / db.name):
            second = _daphne({**env, "CTRLSCOPE_DB_PATH": str(other)}, _port())
            try:
                _out, err = second.communicate(timeout=30)
            finally:
                second.kill()
            assert second.returncode == 2, err.decode()[-2000:]
            last = [line for line in err.decode().splitlines() if line.strip()][-1]
            assert last.startswith("ctrlscope: another ctrlscope server (process "), last
            assert f"{other} (the file {os.path.realpath(db)})" in last, last
        assert _rows(str(db)) == before
        with urllib.request.urlopen(f"http://127.0.0.1:{first_port}/sim/demo/status.json", timeout=5) as r:
            assert r.status == 200


def test_after_kill_9_the_next_server_starts_on_the_same_file(env, tmp_path):
    with _serving(env, tmp_path / "first.log", end=signal.SIGKILL):
        pass
    with _serving(env, tmp_path / "again.log"):
        pass


def test_postgres_without_a_shared_channel_layer_is_one_server_at_a_time():
    from dashboard import instance

    db = {"NAME": "test", "USER": "root", "PASSWORD": "", "HOST": "127.0.0.1", "PORT": "5432"}
    instance._claim_postgres(db)
    try:
        with pytest.raises(instance.DatabaseInUse, match="CTRLSCOPE_REDIS_URL"):
            instance._claim_postgres(db)  # a second session: another process, as far as PostgreSQL knows
    finally:
        instance.release_for_tests()
    instance._claim_postgres(db)  # released with its connection
    instance.release_for_tests()


def test_with_a_shared_channel_layer_several_servers_are_the_design(settings):
    from dashboard import instance

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer"}}
    instance.claim_database()
    assert instance._held == []

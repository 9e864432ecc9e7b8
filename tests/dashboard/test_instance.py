"""One server per SQLite file: a second server refuses to start instead of deleting the first
one's registry rows; a server killed with -9 leaves nothing that blocks the next."""

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


def _daphne(env, port: int) -> subprocess.Popen:
    bindir = pathlib.Path(sys.executable).parent
    return subprocess.Popen(
        [str(bindir / "daphne"), "-b", "127.0.0.1", "-p", str(port), "dashboard.asgi:application"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def _wait_for_demo(proc, port: int, db: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            if _rows(db):
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("the server did not start its demo")


def _rows(db: str) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, host FROM dashboard_simulationrecord").fetchall()


def test_a_second_server_on_the_same_sqlite_file_refuses_to_start_and_deletes_nothing(env):
    db = env["CTRLSCOPE_DB_PATH"]
    first_port = _port()
    first = _daphne(env, first_port)
    try:
        _wait_for_demo(first, first_port, db)
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
    finally:
        first.kill()
        first.wait(timeout=10)


def test_after_kill_9_the_next_server_starts_on_the_same_file(env):
    db = env["CTRLSCOPE_DB_PATH"]
    port = _port()
    first = _daphne(env, port)
    try:
        _wait_for_demo(first, port, db)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    port = _port()
    again = _daphne(env, port)
    try:
        _wait_for_demo(again, port, db)
    finally:
        again.terminate()
        again.wait(timeout=10)


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

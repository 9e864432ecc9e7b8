"""Start-up says what matters and nothing alarming (issue 19 §1): `./scripts/run` checks its port
before printing a URL, and serving static files needs no folder that nobody created."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("which", ["http", "tls"])
def test_run_refuses_a_port_in_use_before_printing_a_url(tmp_path, which):
    with socket.socket() as taken, socket.socket() as free:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        free.bind(("127.0.0.1", 0))
        port, other = taken.getsockname()[1], free.getsockname()[1]
        free.close()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CTRLSCOPE_")}
        http_port, tls_port = (port, other) if which == "http" else (other, port)
        env.update(
            CTRLSCOPE_PORT=str(http_port), CTRLSCOPE_TLS_PORT=str(tls_port), CTRLSCOPE_STATE_DIR=str(tmp_path / "state")
        )
        result = subprocess.run(
            [str(ROOT / "scripts" / "run")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ctrlscope: cannot listen on 127.0.0.1:{port}"), lines
    fix = f"CTRLSCOPE_PORT={port + 1}" if which == "http" else f"CTRLSCOPE_TLS_PORT={port + 1}"
    assert fix in lines[0]
    assert "token=" not in result.stdout + result.stderr  # no URL to someone else's server


def test_static_files_need_no_collected_folder():
    from whitenoise.middleware import WhiteNoiseMiddleware

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        WhiteNoiseMiddleware(lambda request: None)
    assert not [w for w in caught if "No directory at" in str(w.message)]


def test_installing_the_project_prints_no_packaging_warnings(tmp_path):
    """The first `./scripts/run` installs the project: its build must not print setuptools'
    deprecation wall (project.license as a table)."""
    import shutil
    import sys

    source = tmp_path / "src"  # a copy: setuptools writes build/ and *.egg-info beside the project
    skip = shutil.ignore_patterns(".git", ".venv", "test-artifacts", "build", "*.egg-info", "__pycache__")
    shutil.copytree(ROOT, source, ignore=skip)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path / "wheel"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "deprecated" not in (result.stdout + result.stderr).lower(), (result.stdout + result.stderr)[-2000:]


SERVERS = {
    "migrate (./scripts/run, first)": ["manage.py", "migrate", "--no-input"],
    "runserver": ["manage.py", "runserver", "--noreload", "127.0.0.1:{port}"],
    "daphne": ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "dashboard.asgi:application"],
    "dashboard.serve": ["-m", "dashboard.serve", "-b", "127.0.0.1", "-p", "{port}", "dashboard.asgi:application"],
}


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    """The bytes of a migrated database file (a server's, before any damage)."""
    import sys

    folder = tmp_path_factory.mktemp("migrated")
    env = {**os.environ, "CTRLSCOPE_DB_PATH": str(folder / "db.sqlite3"),
           "DJANGO_SETTINGS_MODULE": "dashboard.settings"}
    subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    return (folder / "db.sqlite3").read_bytes()


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
@pytest.mark.parametrize("server", list(SERVERS))
def test_a_damaged_database_file_is_refused_with_one_line_and_exit_code_2(tmp_path, migrated, damage, server):
    """Issue 26 §3: a truncated or overwritten SQLite file made a server that answered 500 to
    everything and logged tracebacks; it refuses to start, naming the file and what to do."""
    import sys

    db = tmp_path / "db.sqlite3"
    db.write_bytes(migrated[: len(migrated) // 2] if damage == "truncated" else bytes(range(256)) * 64)
    before = db.read_bytes()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTRLSCOPE_")}
    env.update(
        CTRLSCOPE_DB_PATH=str(db), CTRLSCOPE_STATE_DIR=str(tmp_path / "state"), CTRLSCOPE_TLS_PORT="0",
        DJANGO_SETTINGS_MODULE="dashboard.settings",
    )
    command = [sys.executable, *(arg.format(port=port) for arg in SERVERS[server])]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    why = "database disk image is malformed" if damage == "truncated" else "file is not a database"
    assert lines == [
        f"ctrlscope: the database {db} is damaged ({why}): move it aside (or delete it) to start afresh without its "
        "recordings, or give this server another file with CTRLSCOPE_DB_PATH"
    ], result.stderr
    assert db.read_bytes() == before  # nothing written to it

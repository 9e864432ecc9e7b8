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

"""The code quality gates of pyproject.toml run with the suite: ruff everywhere, mypy strict on
controlplane (the core must stay typed: the web layer and the next controller build on it)."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(sys.executable).parent


def test_ruff_finds_nothing():
    result = subprocess.run([str(BIN / "ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing_in_controlplane():
    result = subprocess.run([str(BIN / "mypy")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr

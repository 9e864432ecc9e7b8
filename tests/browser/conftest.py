"""Browser tests: Playwright for Python driving Debian's Chromium against a real Daphne process."""

import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from playwright.sync_api import expect

from tests.patience import PATIENCE_MS, PATIENCE_S

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
TOKEN = "browser-test-token"

expect.set_options(timeout=PATIENCE_MS)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1600, "height": 1000}}


@pytest.fixture
def context(context):
    """pytest-playwright's context, with every wait (wait_for_function, wait_for_url, clicks)
    bounded by PATIENCE_MS instead of Playwright's 30 s."""
    context.set_default_timeout(PATIENCE_MS)
    context.set_default_navigation_timeout(PATIENCE_MS)
    return context


@pytest.fixture(scope="session")
def live_server_url(tmp_path_factory):
    """`python -m dashboard.serve` (Daphne) in a subprocess (no fork problems), on a free port, with
    its own SQLite file, state directory and a known access token."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    state = tmp_path_factory.mktemp("state")
    env = {
        **os.environ,
        "CTRLSCOPE_DB_PATH": str(state / "browser.sqlite3"),
        "CTRLSCOPE_STATE_DIR": str(state),
        "CTRLSCOPE_TLS_PORT": "0",  # plain http only: no second port (http + 443) to collide
        "CTRLSCOPE_TOKEN": TOKEN,
        # An uploaded scenario's operators come from here (docs/operators.md, "In the dashboard").
        "CTRLSCOPE_OPERATOR_DIR": str(ROOT / "examples" / "kopf-operator"),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    log = open(state / "daphne.log", "wb")  # noqa: SIM115 - closed at teardown
    # The project's own server entry (Daphne with an access log that never shows the token).
    proc = subprocess.Popen([sys.executable, "-m", "dashboard.serve", "-b", "127.0.0.1", "-p", str(port),
                             "dashboard.asgi:application"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + PATIENCE_S
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=1)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"daphne did not start: {(state / 'daphne.log').read_text()[-2000:]}") from None
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=PATIENCE_S)  # a loaded machine stops a server holding 1,000-pod worlds slowly
    log.close()
    errors = [line for line in (state / "daphne.log").read_text().splitlines() if "Traceback" in line]
    assert not errors, "the server logged tracebacks: see " + str(state / "daphne.log")


def shot(page, name: str) -> None:
    """A screenshot into test-artifacts/, and into docs/img/ when CTRLSCOPE_UPDATE_DOCS=1."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    if os.environ.get("CTRLSCOPE_UPDATE_DOCS") == "1":
        docs = ROOT / "docs" / "img"
        docs.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, docs / f"{name}.png")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    page = item.funcargs.get("page") if hasattr(item, "funcargs") else None
    if report.when == "call" and report.failed and page is not None:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{item.name}.png"), full_page=True)

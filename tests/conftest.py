"""Suite-wide fixes for mixing Django, async tests and Playwright in one pytest run
(../shared/notes/stack-check.md §5.4)."""

import os
import pathlib
import sys

import pytest

# Playwright's sync API keeps an asyncio loop running in the main thread; without this, ORM calls
# in browser tests raise SynchronousOnlyOperation.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    # After the first `page`, pytest-asyncio tests fail ("Runner.run() cannot be called from a
    # running event loop"): browser tests run last.
    items.sort(key=lambda item: "page" in getattr(item, "fixturenames", ()))


BUSY_FOR = 600.0  # seconds a busy loop spins at most, even if its test never ends


@pytest.fixture
def busy_cores():
    """Every core kept busy beside the test (a busy loop per core, as other work on the machine
    would), each loop ending by itself after `BUSY_FOR` seconds and killed at teardown. Yields
    how many spin. The loop is bench/_machine.py's `busy_cores`."""
    bench = str(pathlib.Path(__file__).resolve().parents[1] / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    from _machine import busy_cores as spinning

    with spinning(seconds=BUSY_FOR) as count:
        yield count

"""Suite-wide fixes for mixing Django, async tests and Playwright in one pytest run
(../shared/notes/stack-check.md §5.4)."""

import os

import pytest

# Playwright's sync API keeps an asyncio loop running in the main thread; without this, ORM calls
# in browser tests raise SynchronousOnlyOperation.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    # After the first `page`, pytest-asyncio tests fail ("Runner.run() cannot be called from a
    # running event loop"): browser tests run last.
    items.sort(key=lambda item: "page" in getattr(item, "fixturenames", ()))

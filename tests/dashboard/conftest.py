"""A host on the test's event loop, with a fresh in-memory channel layer."""

from __future__ import annotations

import pytest
from channels.layers import channel_layers

from dashboard.host import host as host_module

TOKEN = "test-token-0123456789"
# A page of the dashboard itself: its Host and exactly its origin.
ORIGIN = [(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")]


@pytest.fixture(autouse=True)
def _token(settings):
    settings.CTRLSCOPE_TOKEN = TOKEN


@pytest.fixture
async def running_host(transactional_db):
    channel_layers.backends = {}
    await host_module.reset_for_tests()
    await host_module.ensure_started()
    host = host_module.get_host()
    yield host
    await host_module.reset_for_tests()
    channel_layers.backends = {}

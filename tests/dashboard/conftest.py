"""A host on the test's event loop, with a fresh in-memory channel layer."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import channel_layers
from django.test import AsyncClient

from dashboard import host as host_package
from dashboard.host import host as host_module

TOKEN = "test-token-0123456789"
# A page of the dashboard itself: its Host and exactly its origin.
ORIGIN = [(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")]
# The test client's requests, as the dashboard's own page at http://testserver sends them (a
# browser's Origin on every POST). An AsyncClient's extra keywords are headers by their ASGI names
# (its `headers=` argument reaches the application as `Http-Origin`).
OWN_ORIGIN = {"origin": "http://testserver"}


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


# -- helpers the view and host tests share -------------------------------------------------------
async def controlling_client() -> AsyncClient:
    """A client whose session holds the access token (the ?token= redirect), and that sends the
    dashboard's own Origin, as a browser does with every POST (the cookie controls only then)."""
    client = AsyncClient(**OWN_ORIGIN)
    response = await client.get(f"/?token={TOKEN}")
    assert response.status_code == 302
    return client


async def start(client: AsyncClient, scenario: str = "scale-up-and-down", seed: str = "3") -> str:
    """Start a library scenario from the home page's form; its id."""
    response = await client.post("/sim/new", {"scenario": scenario, "seed": seed})
    assert response.status_code == 302, response.content
    return str(response["Location"]).strip("/").split("/")[1]


async def command(sim_id: str, cmd: dict) -> dict:
    result = await host_package.request(sim_id, cmd, control=True)
    assert result.get("ok"), result
    return result


async def run_to(sim_id: str, t: float) -> None:
    """Step the session to virtual time t and wait until it stands there."""
    await command(sim_id, {"op": "step", "what": "to", "t": t})
    for _ in range(1000):
        status = (await host_package.request(sim_id, {"op": "status"}))["status"]
        if status["t"] >= t and status["goal"] is None:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never reached t={t}")

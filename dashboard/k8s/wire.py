"""What every handler of a Kubernetes API request shares, below `dashboard.k8s.api` (the request),
`endpoints` and `discovery`: the Status a request fails with (`Failure`, `not_found`,
`timed_out`), reading a body as JSON or YAML (`decode`), writing an answer (`respond`,
`respond_bytes`), noticing that the client went away (`wait_disconnect`), the 404 at once
for a simulation nobody hosts (`ensure_running`), and what a handler may ask of the request it
answers (`Request`, which `api.Call` is).

Guarantees
----------
* A `Failure` is a `metav1.Status` (kind Status, apiVersion v1, status Failure, reason, code),
  so kubectl prints its usual messages.
* `decode` (the core's, `controlplane.apiserver.http`, which the in-kernel door of an embedded
  operator uses too) never takes NaN or Infinity as JSON, never nests deeper than the core's
  `MAX_OBJECT_DEPTH`, and reads YAML within the limits of `controlplane.safeyaml`.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from asgiref.sync import sync_to_async

from controlplane.simulation import api_http

Obj = dict[str, Any]


class Request(Protocol):
    """One request being answered (`dashboard.k8s.api.Call`), as the handlers of `endpoints`
    use it."""

    sim_id: str
    method: str
    scope: Obj
    headers: dict[str, str]
    query: dict[str, str]
    head_only: bool
    receive: Any
    send: Any

    async def reply(self, body: Any, code: int = 200, content_type: str = "application/json") -> None: ...

    async def reply_text(self, answer: Obj) -> None: ...

    async def chunk(self, text: str, *, last: bool = False) -> None: ...

    async def ask(self, cmd: Obj) -> Obj: ...

    async def read_body(self) -> bytes: ...


Failure = api_http.HttpFailure  # an answer that is a Status (controlplane.apiserver.http)


not_found = api_http.not_found


def timed_out(silent: Exception) -> Failure:
    """The simulation exists but its host did not answer in time (busy, or its process gone):
    kube-apiserver's answer to a request that outlived its deadline (apimachinery's
    NewTimeoutError, from the timeout filter), which clients retry; never a 404 that would say the
    simulation is not there."""
    return Failure(504, "Timeout", f"Timeout: request did not complete within requested timeout - {silent}")


decode = api_http.decode  # a body as JSON (or YAML) data (controlplane.apiserver.http)
TOO_DEEP = api_http.TOO_DEEP


# -- answers ---------------------------------------------------------------------------------------------
async def respond(
    send: Any,
    code: int,
    body: Any,
    content_type: str = "application/json",
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    data = (body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))).encode()
    await respond_bytes(send, code, data, content_type, headers)


async def respond_bytes(
    send: Any, code: int, data: bytes, content_type: str, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": code,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def wait_disconnect(receive: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def ensure_running(sim_id: str) -> None:
    """404 at once for a simulation nobody hosts (rather than waiting for an answer that never comes)."""
    from dashboard.host import get_host

    if sim_id in get_host().sims:
        return
    if not await _alive(sim_id):
        raise not_found(f'simulation "{sim_id}" is not running')


@sync_to_async(thread_sensitive=False)
def _alive(sim_id: str) -> bool:
    from dashboard.models import SimulationRecord

    return SimulationRecord.alive().filter(id=sim_id).exists()

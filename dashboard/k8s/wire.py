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
* `decode` never takes NaN or Infinity as JSON, never nests deeper than the core's
  `MAX_OBJECT_DEPTH`, and reads YAML within the limits of `controlplane.safeyaml`.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from asgiref.sync import sync_to_async

from controlplane.simulation import MAX_OBJECT_DEPTH, collect_duplicates, nested_deeper_than, read_json, safeyaml

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


class Failure(Exception):
    """An answer that is a Status: raised anywhere while handling a request."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> Obj:
        body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message}
        body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def not_found(message: str = "the server could not find the requested resource") -> Failure:
    return Failure(404, "NotFound", message)


def timed_out(silent: Exception) -> Failure:
    """The simulation exists but its host did not answer in time (busy, or its process gone):
    kube-apiserver's answer to a request that outlived its deadline (apimachinery's
    NewTimeoutError, from the timeout filter), which clients retry; never a 404 that would say the
    simulation is not there."""
    return Failure(504, "Timeout", f"Timeout: request did not complete within requested timeout - {silent}")


def decode(raw: bytes, *, yaml_ok: bool, duplicates: list[Obj] | None = None) -> Any:
    """JSON (or YAML when `yaml_ok`) data; the objects read with a repeated key are added to
    `duplicates` (the last value of a repeated key is the one kept)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Failure(400, "BadRequest", "the body of the request is not UTF-8") from None
    found: list[Obj]
    try:
        # NaN and Infinity are not JSON (Python's parser takes them unless told not to).
        value, found = read_json(text, parse_constant=_not_json)
    except RecursionError:
        raise Failure(400, "BadRequest", TOO_DEEP) from None
    except ValueError as exc:
        if not yaml_ok:
            raise Failure(400, "BadRequest", f"the body of the request was in an unknown format: {exc}") from None
    else:
        if nested_deeper_than(value):
            raise Failure(400, "BadRequest", TOO_DEEP)
        if duplicates is not None:
            duplicates.extend(found)
        return value
    try:
        # Within limits and iteratively: libyaml's composer recurses in C (deep nesting crashes
        # the process) and alias expansion is counted before anything expands.
        value, found = collect_duplicates(safeyaml.load(text, duplicates=True))
    except safeyaml.YAMLInputError as exc:
        raise Failure(400, "BadRequest", f"error decoding YAML: {exc}") from None
    if duplicates is not None:
        duplicates.extend(found)
    return value


TOO_DEEP = f"the body of the request is nested deeper than {MAX_OBJECT_DEPTH} levels"


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


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

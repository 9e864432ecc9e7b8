"""Watches under concurrent writes against a live Daphne server: 200 watchers, 1,000 creates from
20 threads. Every watcher receives every ADDED event in resourceVersion order, or its stream
ends with an ERROR event (410 Expired: it fell behind, the client relists): never fewer events
without an error, never a clean end after a gap."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from .conftest import TOKEN

WATCHERS = 200
WRITERS = 20
CREATES = 1000
OPENING = 20  # watches opened at once
DEADLINE = 50.0  # seconds for the whole exchange (the test fails, rather than hangs, beyond it)


def _event(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"load-{i}", "namespace": "default", "labels": {"load": "yes"}},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Load",
        "message": f"event {i}",
        "type": "Normal",
    }


async def _watch(host: str, port: int, path: str, ready: asyncio.Event, started: list[int], deadline: float) -> dict:
    """One watch over HTTP/1.0 (no chunked encoding: the body is the event lines, then EOF)."""
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 22)
    writer.write(f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
    await writer.drain()
    result: dict = {"names": [], "rvs": [], "error": None, "eof": False, "status": None}
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
        result["status"] = int(head.split()[1])
        started.append(1)
        if len(started) == WATCHERS:
            ready.set()
        loop = asyncio.get_running_loop()
        while len(result["names"]) < CREATES:
            try:
                line = await asyncio.wait_for(reader.readline(), max(0.01, deadline - loop.time()))
            except TimeoutError:
                break
            if not line:
                result["eof"] = True
                break
            event = json.loads(line)
            if event["type"] == "ERROR":
                result["error"] = event["object"]
                result["eof"] = (await asyncio.wait_for(reader.read(), 10)) == b""
                break
            if event["type"] == "ADDED":
                result["names"].append(event["object"]["metadata"]["name"])
                result["rvs"].append(int(event["object"]["metadata"]["resourceVersion"]))
    finally:
        writer.close()
    return result


def test_every_watcher_gets_every_event_in_order_or_an_error(server):
    sim = server.start()
    try:
        _run(server, sim)
    finally:
        server.stop(sim)


def _run(server, sim: str) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    base = f"/sim/{sim}/k8s/api/v1/namespaces/default/events"
    watch_path = f"{base}?watch=true&labelSelector=load%3Dyes"
    local = threading.local()

    def create(i: int) -> int:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.headers["Authorization"] = f"Bearer {TOKEN}"
        return local.session.post(f"{server.url}{base}", json=_event(i), timeout=30).status_code

    async def main() -> tuple[list[dict], list[int], float]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE
        ready = asyncio.Event()
        started: list[int] = []
        watchers = []
        for _ in range(WATCHERS // OPENING):  # a few at a time: each watch is one command to the host
            batch = len(started) + OPENING
            watchers += [
                asyncio.ensure_future(_watch(host, int(port), watch_path, ready, started, deadline))
                for _ in range(OPENING)
            ]
            while len(started) < batch:
                await asyncio.sleep(0.01)
        await asyncio.wait_for(ready.wait(), 30)
        began = time.monotonic()
        with ThreadPoolExecutor(WRITERS) as pool:
            codes = await asyncio.gather(*(loop.run_in_executor(pool, create, i) for i in range(CREATES)))
        results = await asyncio.gather(*watchers)
        return results, list(codes), time.monotonic() - began

    results, codes, took = asyncio.run(main())
    assert codes == [201] * CREATES
    expected = {f"load-{i}" for i in range(CREATES)}
    counts = sorted(len(r["names"]) for r in results)
    print(
        f"\nevents received per watcher: min {counts[0]}, median {counts[len(counts) // 2]}, max {counts[-1]}; "
        f"{sum(r['error'] is not None for r in results)} errors; {took:.1f} s"
    )
    complete = errored = 0
    for result in results:
        assert result["status"] == 200
        assert result["rvs"] == sorted(result["rvs"]) and len(set(result["rvs"])) == len(result["rvs"])
        assert len(set(result["names"])) == len(result["names"]) and set(result["names"]) <= expected
        if result["error"] is not None:
            # Fell behind: the stream ends with a Status the client relists on, then EOF.
            assert result["error"]["code"] == 410 and result["error"]["reason"] == "Expired", result["error"]
            assert result["eof"]
            errored += 1
        else:
            received = len(result["names"])
            assert received == CREATES, f"a watcher got {received} of {CREATES} events and no error"
            complete += 1
    print(f"\n{complete} watchers got all {CREATES} events, {errored} ended with 410 Expired; {took:.1f} s")

"""Benchmark: Kubernetes watches under concurrent writes -- does every watcher get every event?

A live server runs the demo; 200 clients watch Events (`?watch=true&labelSelector=load=yes`,
HTTP/1.0 so that the body is the event lines, then EOF) and 20 threads create 1,000 labelled
Events through the Kubernetes API. Per watcher: the ADDED events received, whether they came in
resourceVersion order without repeats, and how the stream ended (all events; an ERROR event
with its Status, then EOF; or a gap: fewer events and no error). Printed as one JSON line with
the machine, the events received (min, median, max), the errors, the gaps, and the time from
the first create to the last event.

Target (issue 15): every committed event reaches every watcher in order, or the watcher gets
the error kube-apiserver sends when it cannot keep up (410 Expired, then the stream ends); never
a silent gap.

Usage: .venv/bin/python bench/watch_load.py [--watchers 200] [--writers 20] [--creates 1000]
       [--root DIR]   (`--root` serves the code of another checkout, e.g. the main branch)

`measure()` is also the driver of tests/kubectl/test_watch_load.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

OPENING = 20  # watches opened at once (each is one command to the host)


def event(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"load-{i}", "namespace": "default", "labels": {"load": "yes"}},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Load",
        "message": f"event {i}",
        "type": "Normal",
    }


async def _watch(
    host: str, port: int, path: str, token: str, wanted: int, started: list[int], deadline: float
) -> dict[str, Any]:
    """One watch over HTTP/1.0 (no chunked encoding: the body is the event lines, then EOF)."""
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 22)
    writer.write(f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    await writer.drain()
    result: dict[str, Any] = {"names": [], "rvs": [], "error": None, "eof": False, "status": None, "last": None}
    loop = asyncio.get_running_loop()
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
        result["status"] = int(head.split()[1])
        started.append(1)
        while len(result["names"]) < wanted:
            try:
                line = await asyncio.wait_for(reader.readline(), max(0.01, deadline - loop.time()))
            except TimeoutError:
                break
            if not line:
                result["eof"] = True
                break
            item = json.loads(line)
            if item["type"] == "ERROR":
                result["error"] = item["object"]
                result["eof"] = (await asyncio.wait_for(reader.read(), 10)) == b""
                break
            if item["type"] == "ADDED":
                result["names"].append(item["object"]["metadata"]["name"])
                result["rvs"].append(int(item["object"]["metadata"]["resourceVersion"]))
                result["last"] = time.monotonic()
    finally:
        writer.close()
    return result


def measure(
    url: str,
    sim: str,
    token: str,
    *,
    watchers: int = 200,
    writers: int = 20,
    creates: int = 1000,
    deadline: float = 50.0,
) -> dict[str, Any]:
    """Open `watchers` watches of the simulation's labelled Events, then create `creates` Events
    from `writers` threads. Returns the create codes, each watcher's result (names and
    resourceVersions of its ADDED events, its ERROR Status if any, whether its stream reached EOF)
    and the seconds from the first create to the last event received. Bounded: every watch stops
    reading after `deadline` seconds."""
    host, port = url.removeprefix("http://").split(":")
    base = f"/sim/{sim}/k8s/api/v1/namespaces/default/events"
    watch_path = f"{base}?watch=true&labelSelector=load%3Dyes"
    local = threading.local()

    def create(i: int) -> int:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.headers["Authorization"] = f"Bearer {token}"
        return int(local.session.post(f"{url}{base}", json=event(i), timeout=30).status_code)

    async def main() -> tuple[list[dict[str, Any]], list[int], float]:
        loop = asyncio.get_running_loop()
        ends = loop.time() + deadline
        started: list[int] = []
        tasks: list[asyncio.Future[dict[str, Any]]] = []
        while len(tasks) < watchers:
            batch = min(OPENING, watchers - len(tasks))
            tasks += [
                asyncio.ensure_future(_watch(host, int(port), watch_path, token, creates, started, ends))
                for _ in range(batch)
            ]
            while len(started) < len(tasks) and loop.time() < ends:
                await asyncio.sleep(0.01)
        began = time.monotonic()
        with ThreadPoolExecutor(writers) as pool:
            codes = await asyncio.gather(*(loop.run_in_executor(pool, create, i) for i in range(creates)))
        results = await asyncio.gather(*tasks)
        last = max((r["last"] for r in results if r["last"] is not None), default=began)
        return results, list(codes), last - began

    results, codes, took = asyncio.run(main())
    return {"codes": codes, "results": results, "seconds": took}


def summary(measured: dict[str, Any], creates: int) -> dict[str, Any]:
    results = measured["results"]
    counts = [len(r["names"]) for r in results]
    ordered = all(r["rvs"] == sorted(r["rvs"]) and len(set(r["rvs"])) == len(r["rvs"]) for r in results)
    errors: dict[str, int] = {}
    for r in results:
        if r["error"] is not None:
            key = f'{r["error"].get("code")} {r["error"].get("reason")}'
            errors[key] = errors.get(key, 0) + 1
    gaps = sum(1 for r in results if r["error"] is None and len(r["names"]) < creates)
    return {
        "watchers": len(results),
        "creates": creates,
        "created": sum(1 for code in measured["codes"] if code == 201),
        "events_per_watcher": {"min": min(counts), "median": statistics.median(counts), "max": max(counts)},
        "complete": sum(1 for c in counts if c == creates),
        "errors": errors,
        "silent_gaps": gaps,
        "in_order": ordered,
        "seconds": round(measured["seconds"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--watchers", type=int, default=200)
    parser.add_argument("--writers", type=int, default=20)
    parser.add_argument("--creates", type=int, default=1000)
    parser.add_argument("--deadline", type=float, default=60.0)
    parser.add_argument("--root", type=Path, default=None, help="serve the code of this checkout")
    args = parser.parse_args()
    bounds = (("watchers", args.watchers, 1000), ("writers", args.writers, 100), ("creates", args.creates, 100_000))
    for name, value, top in bounds:
        if not 1 <= value <= top:
            parser.error(f"--{name}: must be from 1 to {top}")
    if not 1 <= args.deadline <= 600:
        parser.error("--deadline: must be from 1 to 600 seconds")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _live
    from _machine import machine

    if args.root is not None:
        _live.ROOT = args.root.resolve()
    demo = _live.ROOT / "controlplane" / "scenarios" / "demo.scenario.yaml"
    with _live.live_server(demo) as url:
        measured = measure(
            url, "demo", _live.TOKEN, watchers=args.watchers, writers=args.writers, creates=args.creates,
            deadline=args.deadline,
        )
    out = {"bench": "watch_load", "served_from": str(_live.ROOT), **summary(measured, args.creates)}
    out["machine"] = machine()
    print(json.dumps(out))


if __name__ == "__main__":
    main()

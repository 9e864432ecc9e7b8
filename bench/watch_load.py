"""Benchmark: Kubernetes watches under concurrent writes -- does every watcher get every event?

A live server runs the demo; 200 clients watch Events (`?watch=true&labelSelector=load=yes`,
HTTP/1.0 so that the body is the event lines, then EOF) and 20 threads create 1,000 labelled
Events through the Kubernetes API, then go on creating (each one a second) until `--span`
seconds have passed since the watches opened: a span past 30 s puts the watches' lease renewals
in the middle of the load. `--busy N` keeps N cores busy beside it (a busy loop per core, as
other work on the machine would). Per watcher: the ADDED events received, whether they came in
resourceVersion order without repeats, and how the stream ended (all events; an ERROR event
with its Status, then EOF; or a gap: fewer events and no error). Printed as one JSON line with
the machine, the events received (min, median, max), the errors, the gaps, and the time from
the first create to the last event.

Target (issue 15): every committed event reaches every watcher in order, or the watcher gets
the error kube-apiserver sends when it cannot keep up (410 Expired, then the stream ends); never
a silent gap.

Usage: .venv/bin/python bench/watch_load.py [--watchers 200] [--writers 20] [--creates 1000]
       [--span 35] [--busy 2] [--deadline 60]
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
OPEN_WAIT = 60.0  # seconds, at most, for the watches to open
PACE = 1.0  # seconds between two creates of one writer once `creates` are made (until the span)


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
    host: str, port: int, path: str, token: str, wanted: list[int | None], started: list[int], ends: list[float]
) -> dict[str, Any]:
    """One watch over HTTP/1.0 (no chunked encoding: the body is the event lines, then EOF),
    read until it has `wanted[0]` events (None: the writers are not done), an ERROR, EOF or
    the loop's time `ends[0]` (infinite while the writers write)."""
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 22)
    writer.write(f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    await writer.drain()
    result: dict[str, Any] = {"names": [], "rvs": [], "error": None, "eof": False, "status": None, "last": None}
    loop = asyncio.get_running_loop()
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
        result["status"] = int(head.split()[1])
        started.append(1)
        while wanted[0] is None or len(result["names"]) < wanted[0]:
            try:  # (a readline cut by the timeout keeps its partial line in the buffer)
                line = await asyncio.wait_for(reader.readline(), max(0.01, min(1.0, ends[0] - loop.time())))
            except TimeoutError:
                if loop.time() >= ends[0]:
                    break
                continue
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
    span: float = 0.0,
    deadline: float = 50.0,
) -> dict[str, Any]:
    """Open `watchers` watches of the simulation's labelled Events, then create `creates` Events
    from `writers` threads, and more (each writer one every `PACE` s) until `span` seconds have
    passed since the watches opened. Returns the create codes (one per Event `load-0` … in
    order), each watcher's result (names and resourceVersions of its ADDED events, its ERROR
    Status if any, whether its stream reached EOF) and the seconds from the first create to the
    last event received. Bounded: every watch stops reading `deadline` seconds after the last
    create was answered (the writers are bounded by their requests' timeouts)."""
    host, port = url.removeprefix("http://").split(":")
    base = f"/sim/{sim}/k8s/api/v1/namespaces/default/events"
    watch_path = f"{base}?watch=true&labelSelector=load%3Dyes"
    local = threading.local()

    def create(i: int) -> int:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.headers["Authorization"] = f"Bearer {token}"
        return int(local.session.post(f"{url}{base}", json=event(i), timeout=60).status_code)

    lock = threading.Lock()
    made: dict[int, int] = {}  # Event index -> the create's HTTP code

    def write(opened: float) -> None:
        while True:
            with lock:  # (the next index is taken only if it will be created: names stay 0 … n-1)
                i = len(made)
                if i >= creates and time.monotonic() - opened >= span:
                    return
                made[i] = 0
            if i >= creates:
                time.sleep(PACE)
            made[i] = create(i)

    async def main() -> tuple[list[dict[str, Any]], list[int], float]:
        loop = asyncio.get_running_loop()
        ends = [float("inf")]
        started: list[int] = []
        wanted: list[int | None] = [None]
        tasks: list[asyncio.Future[dict[str, Any]]] = []
        opened = time.monotonic()
        while len(tasks) < watchers:
            batch = min(OPENING, watchers - len(tasks))
            tasks += [
                asyncio.ensure_future(_watch(host, int(port), watch_path, token, wanted, started, ends))
                for _ in range(batch)
            ]
            while len(started) < len(tasks) and time.monotonic() < opened + OPEN_WAIT:
                await asyncio.sleep(0.01)
        began = time.monotonic()
        with ThreadPoolExecutor(writers) as pool:
            await asyncio.gather(*(loop.run_in_executor(pool, write, opened) for _ in range(writers)))
        wanted[0] = len(made)
        ends[0] = loop.time() + deadline
        results = await asyncio.gather(*tasks)
        last = max((r["last"] for r in results if r["last"] is not None), default=began)
        return results, [made[i] for i in range(len(made))], last - began

    results, codes, took = asyncio.run(main())
    return {"codes": codes, "results": results, "seconds": took}


def summary(measured: dict[str, Any]) -> dict[str, Any]:
    results = measured["results"]
    creates = len(measured["codes"])
    counts = [len(r["names"]) for r in results]
    ordered = all(r["rvs"] == sorted(r["rvs"]) and len(set(r["rvs"])) == len(r["rvs"]) for r in results)
    errors: dict[str, int] = {}
    for r in results:
        if r["error"] is not None:
            key = f'{r["error"].get("code")} {r["error"].get("reason")}: {str(r["error"].get("message"))[:60]}'
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
    parser.add_argument("--span", type=float, default=0.0, help="seconds of creating, at least (35: past a renewal)")
    parser.add_argument("--busy", type=int, default=0, help="cores kept busy beside the load (a busy loop each)")
    parser.add_argument("--deadline", type=float, default=60.0)
    parser.add_argument("--root", type=Path, default=None, help="serve the code of this checkout")
    args = parser.parse_args()
    bounds = (("watchers", args.watchers, 1000), ("writers", args.writers, 100), ("creates", args.creates, 100_000))
    for name, value, top in bounds:
        if not 1 <= value <= top:
            parser.error(f"--{name}: must be from 1 to {top}")
    if not 1 <= args.deadline <= 600:
        parser.error("--deadline: must be from 1 to 600 seconds")
    if not 0 <= args.span <= 600:
        parser.error("--span: must be from 0 to 600 seconds")
    if not 0 <= args.busy <= 64:
        parser.error("--busy: must be from 0 to 64 cores")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _live
    from _machine import busy_cores, machine

    if args.root is not None:
        _live.ROOT = args.root.resolve()
    demo = _live.ROOT / "controlplane" / "scenarios" / "demo.scenario.yaml"
    with _live.live_server(demo) as url, busy_cores(args.busy, 1200):
        measured = measure(
            url, "demo", _live.TOKEN, watchers=args.watchers, writers=args.writers, creates=args.creates,
            span=args.span, deadline=args.deadline,
        )
    out = {"bench": "watch_load", "served_from": str(_live.ROOT), "busy_cores": args.busy, **summary(measured)}
    out["machine"] = machine()
    print(json.dumps(out))


if __name__ == "__main__":
    main()

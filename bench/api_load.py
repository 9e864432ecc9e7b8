"""Benchmark: expensive reads against a live 10,000-pod server -- do the simulation and the
dashboard keep their pace, and does the memory come back?

A live server hosts 10 ReplicaSets x 1,000 pods on 100 nodes (converged first, then running at
speed 1) and one websocket viewer counts the frames it receives (acknowledging each; the page
acknowledges at most once a second unless 4 frames wait, so this viewer's flow control is the
stricter one). Phases, each measured over its own wall time:

* `before`: no load;
* `lists`: 100 clients list every pod the way `kubectl get pods -A` does (`limit=500`, following
  `continue` to the end, again and again), honouring `429` + `Retry-After` as client-go does;
* `after_lists`: no load again;
* `report_storm`: `report.json` without a token, 60 one after another, then 10 at once;
* `after`: no load, after a pause for the process to settle.

For each phase: the simulation's speed (virtual seconds per wall second, from status.json),
frames per second at the viewer, the server's RSS (at the phase's start, its peak, its end),
and for the loads the requests answered (200 / 429 / other) with their latencies.

Targets (issue 15): during the lists the 1x simulation keeps >= 0.9x and the viewer >= 10
frames/s; after the load the RSS is within 10 % of its value before it.

Usage: .venv/bin/python bench/api_load.py [--window 20] [--root DIR]
(`--root` serves the code of another checkout, e.g. the main branch, with this benchmark.)
Needs the bench extra: .venv/bin/pip install -e '.[bench]'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _live
import aiohttp
import psutil
from _live import TOKEN, fleet, scenario_file, status
from _machine import machine
from stream import Viewer, command

CONTINUE = re.compile(rb'"continue":"([^"]*)"')
SIM = "fleet"


class Rss:
    """Samples the server's resident memory every 0.1 s."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def now(self) -> int:
        return self.process.memory_info().rss

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, self.now())
            time.sleep(0.1)

    def reset_peak(self) -> None:
        self.peak = self.now()


def mb(n: int) -> float:
    return round(n / 2**20, 1)


class Requests:
    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.latencies: list[float] = []
        self.bytes = 0

    def record(self, code: int, started: float, size: int) -> None:
        self.codes[str(code)] = self.codes.get(str(code), 0) + 1
        self.latencies.append(time.perf_counter() - started)
        self.bytes += size

    def summary(self) -> dict:
        lat = sorted(self.latencies)
        return {
            "codes": self.codes,
            "latency_s": {
                "p50": round(statistics.median(lat), 3) if lat else None,
                "p95": round(lat[int(0.95 * (len(lat) - 1))], 3) if lat else None,
                "max": round(lat[-1], 3) if lat else None,
            },
            "mb_received": mb(self.bytes),
        }


async def get(session: aiohttp.ClientSession, url: str, stats: Requests, headers: dict | None = None) -> bytes | None:
    """One GET; on 429 waits Retry-After and tries again (client-go does). None on failure."""
    while True:
        started = time.perf_counter()
        try:
            async with session.get(url, headers=headers) as response:
                body = await response.read()
                stats.record(response.status, started, len(body))
                if response.status == 429:
                    await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
                    continue
                return body if response.status == 200 else None
        except (aiohttp.ClientError, TimeoutError):
            stats.record(0, started, 0)
            return None


async def lister(session: aiohttp.ClientSession, url: str, until: float, stats: Requests, lists: list[int]) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}
    while time.monotonic() < until:
        token = ""
        while time.monotonic() < until:
            query = "limit=500" + (f"&continue={token}" if token else "")
            body = await get(session, f"{url}/sim/{SIM}/k8s/api/v1/pods?{query}", stats, headers)
            if body is None:
                break
            match = CONTINUE.search(body[:2048])
            if not match or not match.group(1):
                lists[0] += 1
                break
            token = match.group(1).decode()


class Phase:
    """Measures the simulation's pace, the viewer's frames and the RSS over a phase."""

    def __init__(self, url: str, viewer: Viewer, rss: Rss) -> None:
        self.url, self.viewer, self.rss = url, viewer, rss

    async def __aenter__(self) -> Phase:
        self.rss.reset_peak()
        self.rss_start = self.rss.now()
        self.status = await asyncio.to_thread(status, self.url, SIM)
        self.frames = self.viewer.frames
        self.started = time.perf_counter()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self.started
        after = await asyncio.to_thread(status, self.url, SIM)
        self.result = {
            "wall_s": round(self.elapsed, 1),
            "speed": round((after["t"] - self.status["t"]) / self.elapsed, 2),
            "frames_per_s": round((self.viewer.frames - self.frames) / self.elapsed, 1),
            "rss_mb": {"start": mb(self.rss_start), "peak": mb(self.rss.peak), "end": mb(self.rss.now())},
        }


async def quiet(url: str, viewer: Viewer, rss: Rss, window: float) -> dict:
    async with Phase(url, viewer, rss) as phase:
        await asyncio.sleep(window)
    return phase.result


async def lists_phase(url: str, viewer: Viewer, rss: Rss, window: float, clients: int) -> dict:
    stats, lists = Requests(), [0]
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=120)
    session = aiohttp.ClientSession(connector=connector, timeout=timeout)
    async with session, Phase(url, viewer, rss) as phase:
        until = time.monotonic() + window
        await asyncio.gather(*(lister(session, url, until, stats, lists) for _ in range(clients)))
    return {**phase.result, "clients": clients, "full_lists": lists[0], "pages": stats.summary()}


async def report_phase(url: str, viewer: Viewer, rss: Rss, sequential: int, concurrent: int) -> dict:
    stats = Requests()
    timeout = aiohttp.ClientTimeout(total=300)
    session = aiohttp.ClientSession(timeout=timeout)  # no token: an anonymous viewer
    async with session, Phase(url, viewer, rss) as phase:
        for _ in range(sequential):
            await get(session, f"{url}/sim/{SIM}/report.json", stats)
        await asyncio.gather(*(get(session, f"{url}/sim/{SIM}/report.json", stats) for _ in range(concurrent)))
    size = stats.bytes // max(1, sum(stats.codes.get(c, 0) for c in ("200",)))
    return {
        **phase.result,
        "sequential": sequential,
        "concurrent": concurrent,
        "report_mb": mb(size),
        "requests": stats.summary(),
    }


def read_share() -> float | None:
    """The served code's share of the loop for expensive reads (None: no such limit)."""
    path = _live.ROOT / "dashboard" / "host" / "reads.py"
    match = re.search(r"^READ_SHARE = ([0-9.]+)", path.read_text(), re.M) if path.exists() else None
    return float(match.group(1)) if match else None


def server_pid() -> int:
    for child in psutil.Process().children(recursive=True):
        command = " ".join(child.cmdline())
        if "daphne" in command or "dashboard.serve" in command:
            return child.pid
    raise RuntimeError("no server child process (daphne or dashboard.serve)")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--replicasets", type=int, default=10)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--root", type=Path, default=None, help="serve the code of this checkout")
    parser.add_argument("--no-storm", action="store_true", help="the lists only (no report.json storm)")
    args = parser.parse_args()
    if args.root is not None:
        _live.ROOT = args.root.resolve()
        os.environ["PYTHONPATH"] = str(_live.ROOT)
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # leave the other checkout untouched
    doc = fleet(args.replicasets, args.replicas, nodes=max(3, args.replicasets * args.replicas // 100))
    path = scenario_file(doc, Path(tempfile.mkdtemp(prefix="ctrlscope-api-load-")), SIM)
    with _live.live_server(path) as url:
        await command(url, SIM, {"op": "pause"})
        await command(url, SIM, {"op": "step", "what": "to", "t": 35})
        while status(url, SIM)["t"] < 35:
            time.sleep(0.5)
        pods = status(url, SIM)["pods"]
        await command(url, SIM, {"op": "run", "speed": 1})
        rss = Rss(server_pid())
        stop = asyncio.Event()
        viewer = Viewer(url, SIM)
        watching = asyncio.create_task(viewer.run(stop))
        await asyncio.sleep(3.0)  # connect, receive the full state, settle
        viewer.counting = True
        phases: dict[str, dict] = {}
        print("before", file=sys.stderr, flush=True)
        phases["before"] = await quiet(url, viewer, rss, args.window / 2)
        print("lists", file=sys.stderr, flush=True)
        phases["lists"] = await lists_phase(url, viewer, rss, args.window, args.clients)
        print("after lists", file=sys.stderr, flush=True)
        phases["after_lists"] = await quiet(url, viewer, rss, args.window / 2)
        if not args.no_storm:
            print("report storm", file=sys.stderr, flush=True)
            phases["report_storm"] = await report_phase(url, viewer, rss, 60, 10)
            await asyncio.sleep(args.window / 2)
            print("after", file=sys.stderr, flush=True)
            phases["after"] = await quiet(url, viewer, rss, args.window / 2)
        stop.set()
        await asyncio.gather(watching, return_exceptions=True)
        rss.stop.set()
    start = phases["before"]["rss_mb"]["start"]

    def grown(phase: str) -> float | None:
        return round(100.0 * (phases[phase]["rss_mb"]["end"] - start) / start, 1) if phase in phases else None

    print(
        json.dumps(
            {
                "bench": "api_load",
                "pods": pods,
                "window_s": args.window,
                "served_from": str(_live.ROOT),
                "read_share": read_share(),
                "phases": phases,
                "rss_after_lists_vs_before_pct": grown("after_lists"),
                "rss_after_storm_vs_before_pct": grown("after"),
                "targets_met": {
                    "speed_during_lists_ge_0.9": phases["lists"]["speed"] >= 0.9,
                    "frames_during_lists_ge_10": phases["lists"]["frames_per_s"] >= 10,
                    "rss_after_lists_within_10pct": abs(grown("after_lists") or 0.0) <= 10.0,
                },
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())

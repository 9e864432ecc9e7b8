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

Then the bounds on what outsiders can make the server hold (issue 26, `bounds` in the JSON):
`recording`, 30 refused 2.5 MiB writes (the database bytes they add to the recording);
`upload`, a 500 MiB chunked body (its answer and the server's peak RSS growth); `slow_sockets`,
3,000 connections that send part of their headers (how many are still held 20 s later); `stop`,
the simulation stopped (the RSS 2, 10 and 30 s after). `report_storm_speed` is the simulation's
speed during the report storm. `--no-lists` skips the lists, `--no-bounds` the bounds.

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
import contextlib
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


# -- the bounds on what outsiders can make the server hold (issue 26) ---------------------------------
PODS = f"/sim/{SIM}/k8s/api/v1/namespaces/default/pods"


def refused_write(size: int) -> bytes:
    """A pod create the API server refuses (422: the name is invalid) carrying `size` bytes."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Not_A_Name", "annotations": {"k": "x" * size}}}
    return json.dumps(pod).encode()


def recorded_bytes(pid: int) -> tuple[int, int]:
    """(rows, bytes of their entries) of the simulation's recording, read from the server's database."""
    import sqlite3

    path = psutil.Process(pid).environ()["CTRLSCOPE_DB_PATH"]
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows, size = db.execute(
            "SELECT count(*), coalesce(sum(length(entry)), 0) FROM dashboard_recordedaction WHERE recording_id = ?",
            (SIM,),
        ).fetchone()
    return int(rows), int(size)


async def recording_phase(url: str, pid: int, writes: int, size: int) -> dict:
    """`writes` refused writes of `size` bytes: what the recording keeps of them."""
    rows_before, bytes_before = recorded_bytes(pid)
    stats = Requests()
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    body = refused_write(size)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        for _ in range(writes):
            started = time.perf_counter()
            async with session.post(url + PODS, data=body, headers=headers) as response:
                stats.record(response.status, started, len(await response.read()))
    await asyncio.sleep(3.0)  # the recorder writes off the loop
    rows, stored = recorded_bytes(pid)
    return {
        "writes": writes,
        "write_mb": mb(len(body)),
        "codes": stats.codes,
        "rows_added": rows - rows_before,
        "db_mb_added": mb(stored - bytes_before),
        "db_mb_per_write": mb((stored - bytes_before) // writes),
    }


def upload_phase(url: str, rss: Rss, size: int) -> dict:
    """A chunked upload of `size` bytes (no declared length) with the token: its answer and
    the server's peak RSS meanwhile."""
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(url)
    rss.reset_peak()
    before = rss.now()
    sock = socket.create_connection((where.hostname, where.port))
    chunk = b"%x\r\n" % (1 << 20) + b"x" * (1 << 20) + b"\r\n"
    answer = bytearray()

    def send() -> None:
        try:
            sock.sendall(
                f"POST {PODS} HTTP/1.1\r\nHost: {where.netloc}\r\nAuthorization: Bearer {TOKEN}\r\n".encode()
                + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            for _ in range(size >> 20):
                sock.sendall(chunk)
            sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass

    started = time.perf_counter()
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    sock.settimeout(300)
    try:
        while data := sock.recv(65536):
            answer += data
    except OSError:
        pass
    elapsed = time.perf_counter() - started
    sock.close()
    sender.join(60)
    time.sleep(1.0)
    status_line = bytes(answer).split(b"\r\n", 1)[0].decode(errors="replace")
    return {
        "body_mb": mb(size),
        "answer": status_line,
        "answered_after_s": round(elapsed, 2),
        "rss_mb": {"before": mb(before), "peak": mb(rss.peak), "growth": mb(rss.peak - before)},
    }


def slow_sockets_phase(url: str, sockets: int, wait: float) -> dict:
    """`sockets` connections that send part of a request's headers and nothing more: how many
    the server still holds `wait` seconds later."""
    import select
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(url)
    opened = []
    for _ in range(sockets):
        try:
            sock = socket.create_connection((where.hostname, where.port), timeout=10)
            sock.sendall(b"GET /sim/fleet/status.json HTTP/1.1\r\nHost: " + where.netloc.encode() + b"\r\n")
            opened.append(sock)
        except OSError:
            break
    time.sleep(wait)
    held = 0
    for sock in opened:
        poll = select.poll()  # (not select(): thousands of descriptors)
        poll.register(sock, select.POLLIN)
        if not poll.poll(0):
            held += 1
            continue
        try:
            sock.setblocking(False)
            while sock.recv(65536):
                pass
        except BlockingIOError:
            held += 1  # answered (408) but not closed yet
        except OSError:
            pass
    for sock in opened:
        sock.close()
    return {"sockets": sockets, "opened": len(opened), "after_s": wait, "still_held": held}


async def stop_phase(url: str, rss: Rss) -> dict:
    """The simulation stopped: the server's RSS before and a while after."""
    import websockets

    running = rss.now()
    with contextlib.suppress(websockets.exceptions.ConnectionClosed):  # it may close before answering
        await command(url, SIM, {"op": "stop"})
    after, waited = {}, 0
    for wait in (2, 10, 30):
        await asyncio.sleep(wait - waited)
        waited = wait
        after[f"{wait}_s"] = mb(rss.now())
    return {"rss_running_mb": mb(running), "rss_after_stop_mb": after}


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
    parser.add_argument("--no-lists", action="store_true", help="no lists phase")
    parser.add_argument("--no-bounds", action="store_true", help="no bounds phases (recording, upload, sockets, stop)")
    parser.add_argument("--sequential", type=int, default=60, help="report.json one after another, first")
    parser.add_argument("--concurrent", type=int, default=10, help="report.json at once, then")
    parser.add_argument("--upload-mb", type=int, default=500)
    parser.add_argument("--slow-sockets", type=int, default=3000)
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
        if not args.no_lists:
            print("lists", file=sys.stderr, flush=True)
            phases["lists"] = await lists_phase(url, viewer, rss, args.window, args.clients)
            print("after lists", file=sys.stderr, flush=True)
            phases["after_lists"] = await quiet(url, viewer, rss, args.window / 2)
        if not args.no_storm:
            print("report storm", file=sys.stderr, flush=True)
            phases["report_storm"] = await report_phase(url, viewer, rss, args.sequential, args.concurrent)
            await asyncio.sleep(args.window / 2)
            print("after", file=sys.stderr, flush=True)
            phases["after"] = await quiet(url, viewer, rss, args.window / 2)
        bounds: dict[str, dict] = {}
        if not args.no_bounds:
            print("recording", json.dumps(phases), file=sys.stderr, flush=True)
            bounds["recording"] = await recording_phase(url, rss.process.pid, 30, int(2.5 * 2**20))
            print("upload", json.dumps(bounds), file=sys.stderr, flush=True)
            bounds["upload"] = await asyncio.to_thread(upload_phase, url, rss, args.upload_mb << 20)
            print("slow sockets", json.dumps(bounds), file=sys.stderr, flush=True)
            bounds["slow_sockets"] = await asyncio.to_thread(slow_sockets_phase, url, args.slow_sockets, 20.0)
        stop.set()
        await asyncio.gather(watching, return_exceptions=True)
        if not args.no_bounds:
            print("stop", json.dumps(bounds), file=sys.stderr, flush=True)
            bounds["stop"] = await stop_phase(url, rss)
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
                "bounds": bounds,
                "report_storm_speed": phases.get("report_storm", {}).get("speed"),
                "rss_after_lists_vs_before_pct": grown("after_lists"),
                "rss_after_storm_vs_before_pct": grown("after"),
                "targets_met": {
                    "speed_during_lists_ge_0.9": phases["lists"]["speed"] >= 0.9,
                    "frames_during_lists_ge_10": phases["lists"]["frames_per_s"] >= 10,
                    "rss_after_lists_within_10pct": abs(grown("after_lists") or 0.0) <= 10.0,
                }
                if "lists" in phases
                else None,
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())

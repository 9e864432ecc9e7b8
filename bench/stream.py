"""Benchmark: streaming a churning 10,000-pod simulation to 0, 1, 10 and 50 websocket viewers.

A live server runs 10 ReplicaSets x 1,000 pods on 100 nodes at maximum speed while 100 pods are
deleted every virtual second (so pods churn the whole time). For each number of viewers, over a
window of wall time: frames per second and bytes per frame each viewer received (viewers
acknowledge every frame, as the page does), and the simulation's speed (kernel events per wall
second, and per CPU second of the server process: the figure that holds on a shared machine)
against the run with no viewer. One more viewer connects and never reads: the others must
not notice. Prints one JSON line.

Targets (issue 7): <= 20 frames/s per viewer, <= 100 KB per frame, <= 10 % slowdown at 50 viewers.

Usage: .venv/bin/python bench/stream.py [--window 15] [--replicasets 10] [--replicas 1000]
Needs the bench extra: .venv/bin/pip install -e '.[bench]'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import websockets
from _live import TOKEN, cpu_seconds, fleet, live_server, scenario_file, status
from _machine import machine

BEHIND = re.compile(r'"behind":(\d+)')
SEQ = re.compile(r'^\{"type":"(frame|state)","seq":(\d+)')


class Viewer:
    def __init__(self, url: str, sim: str, reads: bool = True) -> None:
        self.ws_url = url.replace("http://", "ws://") + f"/ws/sim/{sim}/?token={TOKEN}"
        self.origin = url
        self.reads = reads
        self.frames = 0
        self.bytes = 0
        self.largest = 0
        self.behind = 0  # the last frame's count of pod transitions still to come (0: caught up)
        self.states = 0  # full states after the first one (resynchronisations)
        self.connected = False  # the first full state arrived
        self.counting = False

    async def run(self, stop: asyncio.Event) -> None:
        async with websockets.connect(self.ws_url, origin=self.origin, max_size=None) as ws:
            if not self.reads:
                await stop.wait()  # connected, never reads a byte
                return
            parts: list[str] | None = None
            expected = 0
            while not stop.is_set():
                try:
                    message = await asyncio.wait_for(ws.recv(), timeout=0.5)
                except TimeoutError:
                    continue
                if parts is not None:
                    parts.append(message)
                    if len(parts) < expected:
                        continue
                    message, parts = "".join(parts), None
                elif message.startswith('{"type":"parts"'):
                    parts, expected = [], json.loads(message)["n"]
                    continue
                match = SEQ.match(message)
                if not match:
                    continue
                first_state = match.group(1) == "state" and not self.connected
                self.connected = True
                if self.counting and not first_state:  # a full state after the first: a resync
                    if match.group(1) == "frame":
                        self.frames += 1
                        self.bytes += len(message)
                        self.largest = max(self.largest, len(message))
                        behind = BEHIND.search(message)
                        self.behind = int(behind.group(1)) if behind else 0
                    else:
                        self.states += 1
                await ws.send(json.dumps({"type": "ack", "seq": int(match.group(2))}))


async def command(url: str, sim: str, cmd: dict) -> dict:
    ws_url = url.replace("http://", "ws://") + f"/ws/sim/{sim}/?token={TOKEN}"
    async with websockets.connect(ws_url, origin=url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "cmd", "id": 1, "cmd": cmd}))
        while True:
            text = await ws.recv()
            if text.startswith('{"type":"reply"'):
                return json.loads(text)["result"]


async def measure(url: str, sim: str, viewers: int, window: float, stalled: int = 0) -> dict:
    stop = asyncio.Event()
    readers = [Viewer(url, sim) for _ in range(viewers)]
    stuck = [Viewer(url, sim, reads=False) for _ in range(stalled)]
    tasks = [asyncio.create_task(v.run(stop)) for v in readers + stuck]
    await asyncio.sleep(2.0)  # connect, receive the full state, settle
    for v in readers:
        v.counting = True
    print(f"measuring {viewers} viewers (+{stalled} stalled) for {window} s", file=sys.stderr, flush=True)
    before, cpu = status(url, sim), cpu_seconds(url)
    start = time.perf_counter()
    await asyncio.sleep(window)
    after, cpu = status(url, sim), cpu_seconds(url) - cpu
    elapsed = time.perf_counter() - start
    for v in readers:
        v.counting = False
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    result = {
        "viewers": viewers,
        "stalled_viewers": stalled,
        "events_per_s": round((after["events"] - before["events"]) / elapsed),
        "virtual_s_per_s": round((after["t"] - before["t"]) / elapsed, 2),
        # Kernel events per CPU second of the server process: what the viewers cost the server,
        # whatever else the machine runs (a shared machine changes events per wall second).
        "events_per_cpu_s": round((after["events"] - before["events"]) / cpu) if cpu else None,
        "server_cpu_share": round(cpu / elapsed, 2),
    }
    if readers:
        fps = [v.frames / elapsed for v in readers]
        sizes = [v.bytes / v.frames for v in readers if v.frames]
        result.update(
            {
                "frames_per_s_per_viewer": {
                    "min": round(min(fps), 1),
                    "median": round(statistics.median(fps), 1),
                    "max": round(max(fps), 1),
                },
                "bytes_per_frame_mean": round(statistics.mean(sizes)) if sizes else 0,
                "bytes_per_frame_max": max(v.largest for v in readers),
                "resyncs": sum(v.states for v in readers),
                # Pod transitions the pods and timeline canvases had still to receive at the end
                # (the most of any viewer): 0 means they kept up with the simulation.
                "canvas_behind_at_end": max(v.behind for v in readers),
            }
        )
    return result


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=float, default=15.0)
    parser.add_argument("--replicasets", type=int, default=10)
    parser.add_argument("--replicas", type=int, default=1000)
    args = parser.parse_args()
    doc = fleet(args.replicasets, args.replicas, nodes=max(3, args.replicasets * args.replicas // 100))
    # Churn: from t=30, every virtual second 100 pods of one ReplicaSet (in turn) are deleted.
    doc["actions"] = [
        {"at": 30 + k, "podFault": {"selector": f"app=rs-{k % args.replicasets:03d}", "count": 100, "fault": "delete"}}
        for k in range(3000)
    ]
    directory = Path(tempfile.mkdtemp(prefix="ctrlscope-stream-"))
    path = scenario_file(doc, directory, "churn")
    with live_server(path) as url:
        sim = "churn"
        await command(url, sim, {"op": "pause"})
        await command(url, sim, {"op": "step", "what": "to", "t": 35})
        while status(url, sim)["t"] < 35:
            time.sleep(0.5)
        pods = status(url, sim)["pods"]
        await command(url, sim, {"op": "run", "speed": "max"})
        runs = [await measure(url, sim, n, args.window) for n in (0, 1, 10, 50)]
        with_stalled = await measure(url, sim, 10, args.window, stalled=1)
        await command(url, sim, {"op": "pause"})
    base, base_cpu = runs[0]["events_per_s"], runs[0]["events_per_cpu_s"]
    for run in [*runs, with_stalled]:
        run["slowdown_pct"] = round(100.0 * (1 - run["events_per_s"] / base), 1) if base else None
        # The same against the server's CPU time: the figure to trust under load (the wall
        # figure is only meaningful on a quiet machine, where the two agree).
        cpu = run["events_per_cpu_s"]
        run["slowdown_cpu_pct"] = round(100.0 * (1 - cpu / base_cpu), 1) if base_cpu and cpu else None
    print(
        json.dumps(
            {
                "bench": "stream",
                "pods": pods,
                "window_s": args.window,
                "runs": runs,
                "ten_viewers_plus_one_stalled": with_stalled,
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())

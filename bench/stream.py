"""Benchmark: streaming a churning 10,000-pod simulation to 0, 1, 10 and 50 websocket viewers.

A live server runs 10 ReplicaSets x 1,000 pods on 100 nodes at maximum speed while 100 pods are
deleted every virtual second (so pods churn the whole time). For each number of viewers, over a
window of wall time once every viewer has its first full state: frames per second and bytes per
frame each viewer received (viewers acknowledge frames as the page does: cumulatively, at most
once a second unless 4 wait), and the simulation's speed (kernel events per wall second, and per
CPU second of the server process: the figure that holds on a shared machine) against windows
with no viewer just before and just after (the no-viewer rate drifts as the session ages). One
more run adds a viewer that connects and never reads: the others must not notice. Prints one
JSON line.

Targets (issue 7): <= 20 frames/s per viewer, <= 100 KB per frame, <= 10 % slowdown at 50 viewers.

Usage: .venv/bin/python bench/stream.py [--window 15] [--replicasets 10] [--replicas 1000]
       [--viewers 1,10,50] [--rounds 3] [--no-stalled] [--ack page|each]
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

ACK_EVERY, ACK_WITHIN = 4, 1.0  # the page's acknowledgements (static/dashboard/live.js)
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
            pending: int | None = None  # the latest frame received and not yet acknowledged
            waiting, acked_at = 0, 0.0
            while not stop.is_set():
                try:
                    message = await asyncio.wait_for(ws.recv(), timeout=0.5)
                except TimeoutError:
                    if pending is not None and time.monotonic() - acked_at >= ACK_WITHIN:
                        await ws.send(json.dumps({"type": "ack", "seq": pending}))  # the page's timer
                        pending, waiting, acked_at = None, 0, time.monotonic()
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
                # Acknowledge as the page does (static/dashboard/live.js): a state at once, frames
                # cumulatively, at most once a second unless ACK_EVERY wait.
                pending, waiting = int(match.group(2)), waiting + 1
                if match.group(1) == "state" or waiting >= ACK_EVERY or time.monotonic() - acked_at >= ACK_WITHIN:
                    await ws.send(json.dumps({"type": "ack", "seq": pending}))
                    pending, waiting, acked_at = None, 0, time.monotonic()


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
    # Connect and receive the first full state (each ~3 MB at 10,000 pods, built per viewer: 50
    # of them take the server several seconds), then settle: the window measures viewers
    # watching, not viewers arriving.
    connecting = time.perf_counter()
    await asyncio.sleep(2.0)
    while not all(v.connected for v in readers) and time.perf_counter() - connecting < 60:
        await asyncio.sleep(0.25)
    connect_s = time.perf_counter() - connecting
    await asyncio.sleep(1.0)
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
        "connect_s": round(connect_s, 1),  # until every viewer had its first state
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


def compared(run: dict, before: dict, after: dict) -> dict:
    """A window with viewers against the mean of the no-viewer windows on both sides of it."""
    base = (before["events_per_s"] + after["events_per_s"]) / 2
    run["baseline_events_per_s"] = round(base)
    run["slowdown_pct"] = round(100.0 * (1 - run["events_per_s"] / base), 1) if base else None
    # The same against the server's CPU time: the figure to trust under load (the wall figure
    # is only meaningful on a quiet machine, where the two agree).
    cpus = [before["events_per_cpu_s"], after["events_per_cpu_s"]]
    base_cpu = sum(cpus) / 2 if all(cpus) else None
    cpu = run["events_per_cpu_s"]
    run["slowdown_cpu_pct"] = round(100.0 * (1 - cpu / base_cpu), 1) if base_cpu and cpu else None
    return run


def summary(rounds: list[dict]) -> dict:
    """A count's rounds in one: medians, and every round's slowdown beside them."""
    out = dict(rounds[len(rounds) // 2])  # the frames and bytes of one round (they vary little)
    for key in ("events_per_s", "baseline_events_per_s", "events_per_cpu_s"):
        out[key] = round(statistics.median(r[key] for r in rounds if r[key] is not None))
    for key in ("slowdown_pct", "slowdown_cpu_pct"):
        values = [r[key] for r in rounds if r[key] is not None]
        out[key] = round(statistics.median(values), 1) if values else None
        out[key + "_rounds"] = values
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=float, default=15.0)
    parser.add_argument("--replicasets", type=int, default=10)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--viewers", default="1,10,50", help="the counts to measure beside no viewer")
    parser.add_argument(
        "--ack",
        choices=("page", "each"),
        default="page",
        help="acknowledge as the page does, or every frame (before 2026-11-24)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="windows per count, each between two without viewers")
    parser.add_argument("--no-stalled", action="store_true", help="skip the run with a stalled viewer")
    args = parser.parse_args()
    global ACK_EVERY
    if args.ack == "each":
        ACK_EVERY = 1
    try:
        counts = [int(n) for n in args.viewers.split(",")]
    except ValueError:
        parser.error(f"--viewers: expected numbers separated by commas, got {args.viewers!r}")
    if not 1 <= args.rounds <= 20:
        parser.error("--rounds: must be 1 to 20")
    if not 1 <= args.window <= 600:
        parser.error("--window: must be 1 to 600 seconds")
    if any(not 1 <= n <= 200 for n in counts):
        parser.error("--viewers: each count must be 1 to 200")
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
        # No viewer before and after every window with viewers: the no-viewer rate drifts as the
        # session ages and moves by ±10 % between neighbouring windows on a shared VM, so each
        # window is compared with the mean of the no-viewer windows on both sides of it, and a
        # count's slowdown is the median over `--rounds` such windows.
        baselines = [await measure(url, sim, 0, args.window)]
        runs = []
        for n, stalled in [*((n, 0) for n in counts), *([] if args.no_stalled else [(10, 1)])]:
            rounds = []
            for _ in range(args.rounds):
                window = await measure(url, sim, n, args.window, stalled=stalled)
                baselines.append(await measure(url, sim, 0, args.window))
                rounds.append(compared(window, baselines[-2], baselines[-1]))
            runs.append(summary(rounds))
        await command(url, sim, {"op": "pause"})
    with_stalled = None if args.no_stalled else runs.pop()
    print(
        json.dumps(
            {
                "bench": "stream",
                "pods": pods,
                "window_s": args.window,
                "rounds": args.rounds,
                "ack": args.ack,
                "runs": runs,
                "ten_viewers_plus_one_stalled": with_stalled,
                "baselines": [b["events_per_s"] for b in baselines],
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())

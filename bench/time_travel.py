"""Benchmark: what recording a session costs, and how long restoring it takes (issue 17).

A session of 1,000 pods (one ReplicaSet, 20 nodes) with faults along its timeline (a crash of 5
pods every 10 s, a scale between 1,000 and 900 every minute, a failed create now and then) runs
as fast as possible in a host of this process (the dashboard's `Host`, its driving task, no
viewer), to `--until` virtual seconds: once recorded (the write-through of docs/time-travel.md,
SQLite in WAL mode in a temporary directory), once with the recorder switched off, alternating,
`--reps` times each. Then the recorded session is stopped and re-opened: the restore replays its
recording to its last time (what a restart after `kill -9` does).

The past (`past`): the same session, hosted live in this process (its records kept, as the
dashboard keeps them), is shown at `--jumps` random earlier moments through the real replay
worker (`python -m dashboard.host.replay_worker`, keyframes on, spoken to with the host's
protocol, end to end: request written, answer read back and its view model rendered into every
panel as the host does, `dashboard.host.past_view.render`; the browser's paint is not included).
After each jump it steps back by one event, one sync stage and one sync, from
where the jump landed (`--think` seconds apart: a viewer's pause, in which the worker sweeps ahead
and leaves keyframes; 0, the default, sends each request as the last is answered). The answer
carries every panel at once, so the time to the first
repainted panel is the time to all panels. Memory of the history: the keyframes (snapshots the
worker holds as bytes) plus the records the live session keeps, as a percentage of this process's
RSS with the live session in it (`keyframes.bytes`: the snapshots' bytes and the private memory of
the one paused fork kept near the viewer, as the worker counts them against its budget). The
worker's own processes are reported beside it
(`worker_memory`: the broker, and the current world, which is the viewer's moment, not history).

Targets (issue 17): jump p95 <= 1 s to the first panel, <= 2 s to all; step back p95 <= 300 ms;
recording overhead <= 5 % of the same run's time unrecorded; memory of the history <= 25 % of
the live simulation's; restore of the 1,000-pod session of 30 virtual minutes <= 5 s. The same
at 10,000 pods is reported with no target.

Prints one JSON line. Usage: .venv/bin/python bench/time_travel.py [--until 1800] [--reps 2]
[--replicas 1000] [--jumps 20] [--seed 1] [--think 0] [--no-sweep] [--near N] [--past-only]
(`--past-only`: the past alone, no recording overhead nor restore; `--no-sweep`, `--near`: the
replay worker's sweep ahead and near keyframes, for comparisons).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _live import fleet  # noqa: E402
from _machine import machine  # noqa: E402


def scenario_doc(replicas: int, until: float) -> dict:
    doc = fleet(1, replicas, 20)
    actions: list[dict] = []
    t = 10.0
    while t < until:
        actions.append({"at": t, "podFault": {"selector": "app=rs-000", "count": 5, "fault": "crash"}})
        if t % 60 == 0:
            replicas_now = replicas - replicas // 10 if (t // 60) % 2 else replicas
            actions.append({"at": t, "scale": {"kind": "ReplicaSet", "name": "rs-000", "replicas": replicas_now}})
        if t % 300 == 0:
            actions.append({"at": t, "apiFault": {"verb": "create", "resource": "pods", "count": 3, "code": 500}})
        t += 10.0
    doc.update(name="time travel bench", actions=actions, until=until)
    return doc


async def one_run(scenario, until: float, recorded: bool) -> dict:
    from dashboard.host import host as host_module
    from dashboard.host import recording

    host = host_module.Host()
    note = recording.Recorder.note
    if not recorded:
        recording.Recorder.note = lambda self, force=False: None  # type: ignore[method-assign]
    try:
        hosted = await host.start_simulation(scenario, source="bench")
        started = time.perf_counter()
        hosted.command({"op": "step", "what": "to", "t": until})  # as fast as possible, then paused
        host.wake(hosted.id)
        while hosted.goal is not None:
            await asyncio.sleep(0.01)
        wall = time.perf_counter() - started
        recorder = host._recorders[hosted.id]
        out = {"wall": wall, "virtual": hosted.sim.now, "actions": len(hosted.sim.actions),
               "write_seconds": recorder.write_seconds}
        restore: dict = {}
        if recorded:
            await host.stop_simulation(hosted.id)
            started = time.perf_counter()
            again = await host.restore_simulation(hosted.id, reopened=True)
            restore = {"seconds": time.perf_counter() - started, "note": again.restored_note,
                       "same_time": again.sim.now == out["virtual"]}
        out["restore"] = restore
        await host.shutdown()
        return out
    finally:
        recording.Recorder.note = note  # type: ignore[method-assign]


def rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def deep_size(root: object) -> int:
    """Bytes of the objects reachable from `root` (each counted once; types and modules not)."""
    seen: set[int] = set()
    todo = [root]
    total = 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, type) or type(obj).__name__ == "module":
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, array):
            continue
        if isinstance(obj, dict):
            todo.extend(obj.keys())
            todo.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            todo.extend(obj)
        elif hasattr(obj, "__dict__"):
            todo.append(vars(obj))
        elif hasattr(obj, "__slots__"):
            todo.extend(getattr(obj, name) for name in obj.__slots__ if hasattr(obj, name))
    return total


class ReplayWorker:
    """The replay worker process, spoken to as `dashboard.host.past` does."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, "-m", "dashboard.host.replay_worker"], cwd=str(ROOT),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.next_id = 0
        self.sent = False

    def ask(self, hosted, target: dict) -> tuple[float, dict]:
        request = {"viewer": "bench", "target": target, "live": hosted.sim.position().to_json(), "focus": []}
        if not self.sent:
            request["recording"] = hosted.sim.recording()
            self.sent = True
        started = time.perf_counter()
        answer = self.raw(request)
        if "model" in answer:  # the host renders the worker's view model (dashboard.host.past_view)
            from dashboard.host.past_view import render

            answer["bytes"] = len(render(answer.pop("model")))
        return time.perf_counter() - started, answer

    def raw(self, request: dict) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        request["id"] = self.next_id
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        head = json.loads(self.proc.stdout.readline())
        while "progress" in head:  # how far a long replay has come: its answer follows
            head = json.loads(self.proc.stdout.readline())
        if head.get("ok") and "position" in head:
            head["model"] = self.proc.stdout.readline().decode().rstrip("\n")
        if not head.get("ok"):
            raise SystemExit(f"the replay worker answered {head}")
        return head

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


def quantiles(values: list[float]) -> dict:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 3), "p95": round(p95, 3), "max": round(ordered[-1], 3),
            "n": len(ordered)}


def past(scenario, until: float, jumps: int, seed: int, think: float = 0.0, sweep: bool = True,
         near: int | None = None) -> dict:
    """Jumps and steps back through the replay worker, and the memory of the history."""
    from controlplane.simulation import Simulation
    from dashboard.host.hosted import HostedSimulation

    gc.collect()
    base = rss()
    started = time.perf_counter()
    hosted = HostedSimulation("bench", Simulation(scenario), name="bench", source="bench")
    hosted.sim.run_until(until)
    live_seconds = time.perf_counter() - started
    gc.collect()
    live_rss = rss()
    records = deep_size(hosted.sim.record_log)
    worker = ReplayWorker()
    if not sweep:
        worker.raw({"viewer": "bench", "configure": {"sweep": False}})
    if near is not None:
        worker.raw({"viewer": "bench", "configure": {"near": near}})
    rng = random.Random(seed)
    first, answer = worker.ask(hosted, {"at": round(rng.uniform(0, until), 3)})
    jump_times: list[float] = []
    steps: dict[str, list[float]] = {"event": [], "stage": [], "sync": []}
    answer_bytes = answer["bytes"]
    for _ in range(jumps):
        time.sleep(think)
        seconds, answer = worker.ask(hosted, {"at": round(rng.uniform(0, until), 3)})
        jump_times.append(seconds)
        for step in steps:
            time.sleep(think)
            at = answer["position"]
            seconds, answer = worker.ask(hosted, {"back": step, "from": {k: at[k] for k in ("events", "seq", "time")}})
            steps[step].append(seconds)
    stats = worker.raw({"viewer": "bench", "stats": True})
    worker.close()
    kept = stats["keyframes"]
    held = stats["keyframe_bytes"]  # snapshots (bytes) + the nearby fork's private memory
    nearby = stats["nearby"]["memory"]["uss"] if stats.get("nearby") and stats["nearby"]["memory"] else 0
    return {
        "events": hosted.sim.kernel.events,
        "live_run_seconds": round(live_seconds, 3),
        "first_view_seconds": round(first, 3),
        "jump_first_panel_seconds": quantiles(jump_times),
        "jump_all_panels_seconds": quantiles(jump_times),
        "step_back_seconds": {**{k: quantiles(v) for k, v in steps.items()},
                              "all": quantiles([t for v in steps.values() for t in v])},
        "answer_bytes": answer_bytes,
        "keyframes": {"count": len(kept), "bytes": held, "snapshot_bytes": stats["snapshot_bytes"],
                      "nearby_uss_bytes": nearby, "budget_bytes": stats["budget"],
                      "snapshots": stats["snapshots"], "evicted": stats["evicted"],
                      "forks_from_keyframe": stats["forks_from_keyframe"], "forks_from_zero": stats["forks_from_zero"],
                      "sweeps": stats.get("sweeps"),
                      "events": [k["here"]["events"] for k in kept]},
        "worker_memory": {"broker": stats["broker"]["memory"],
                          "current": stats["current"]["memory"] if stats.get("current") else None},
        "records_bytes": records,
        "live_rss_bytes": live_rss,
        "live_rss_growth_bytes": live_rss - base,
        "history_pct_of_live_rss": round(100.0 * (held + records) / live_rss, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--until", type=float, default=1800.0)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--jumps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--think", type=float, default=0.0, help="seconds between two requests of the past")
    parser.add_argument("--no-sweep", action="store_true", help="the replay worker does not sweep ahead when idle")
    parser.add_argument("--near", type=int, default=None,
                        help="keyframe this many events before a step's target (default: the worker's)")
    parser.add_argument("--past-only", action="store_true", help="only the past (no recording overhead, no restore)")
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="ctrlscope-tt-"))
    os.environ.update(
        CTRLSCOPE_DB_PATH=str(state / "bench.sqlite3"),
        CTRLSCOPE_STATE_DIR=str(state),
        CTRLSCOPE_TOKEN="bench-token-0123456789",
        CTRLSCOPE_START="",
        DJANGO_SETTINGS_MODULE="dashboard.settings",
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from controlplane.scenario import parse_scenario

    scenario = parse_scenario(scenario_doc(args.replicas, args.until))
    past_figures = past(scenario, args.until, args.jumps, args.seed, args.think, not args.no_sweep, args.near)
    if args.past_only:
        print(json.dumps({"bench": "time_travel", "pods": args.replicas, "think_seconds": args.think,
                          "sweep": not args.no_sweep, "near": args.near, "past": past_figures,
                          "machine": machine()}))
        return
    gc.collect()
    runs: dict[str, list[dict]] = {"recorded": [], "unrecorded": []}
    for _ in range(args.reps):
        for mode in ("unrecorded", "recorded"):
            runs[mode].append(asyncio.run(one_run(scenario, args.until, mode == "recorded")))
    recorded = statistics.median(r["wall"] for r in runs["recorded"])
    unrecorded = statistics.median(r["wall"] for r in runs["unrecorded"])
    restores = [r["restore"]["seconds"] for r in runs["recorded"]]
    db = state / "bench.sqlite3"
    print(json.dumps({
        "bench": "time_travel",
        "pods": args.replicas,
        "think_seconds": args.think,
        "sweep": not args.no_sweep,
        "virtual_seconds": args.until,
        "actions": runs["recorded"][0]["actions"],
        "run_seconds": {"recorded": round(recorded, 3), "unrecorded": round(unrecorded, 3),
                        "each": {k: [round(r["wall"], 3) for r in v] for k, v in runs.items()}},
        "recording_overhead_pct": round(100.0 * (recorded - unrecorded) / unrecorded, 2),
        "write_seconds_in_thread": round(statistics.median(r["write_seconds"] for r in runs["recorded"]), 4),
        "restore_seconds": round(max(restores), 3),
        "restore_note": runs["recorded"][0]["restore"]["note"],
        "restored_same_time": all(r["restore"]["same_time"] for r in runs["recorded"]),
        "database_bytes": db.stat().st_size + sum(p.stat().st_size for p in state.glob("bench.sqlite3-*")),
        "past": past_figures,
        "targets": {"recording_overhead_pct": 5.0, "restore_seconds": 5.0, "jump_first_panel_p95": 1.0,
                    "jump_all_panels_p95": 2.0, "step_back_p95": 0.3, "history_pct_of_live_rss": 25.0},
        "machine": machine(),
    }))


if __name__ == "__main__":
    main()

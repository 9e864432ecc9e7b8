"""Benchmark: what recording a session costs, and how long restoring it takes (issue 17).

A session of 1,000 pods (one ReplicaSet, 20 nodes) with faults along its timeline (a crash of 5
pods every 10 s, a scale between 1,000 and 900 every minute, a failed create now and then) runs
as fast as possible in a host of this process (the dashboard's `Host`, its driving task, no
viewer), to `--until` virtual seconds: once recorded (the write-through of docs/time-travel.md,
SQLite in WAL mode in a temporary directory), once with the recorder switched off, alternating,
`--reps` times each. Then the recorded session is stopped and re-opened: the restore replays its
recording to its last time (what a restart after `kill -9` does).

Targets (issue 17): recording overhead <= 5 % of the same run's time unrecorded; restore of the
1,000-pod session of 30 virtual minutes <= 5 s. (Jumping, stepping back and the history's
memory belong to the later parts of the issue: not measured here.)

Prints one JSON line. Usage: .venv/bin/python bench/time_travel.py [--until 1800] [--reps 2] [--replicas 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--until", type=float, default=1800.0)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--replicas", type=int, default=1000)
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
        "targets": {"recording_overhead_pct": 5.0, "restore_seconds": 5.0},
        "machine": machine(),
    }))


if __name__ == "__main__":
    main()

"""Benchmark: the first look at the past of a big session (issue 26 §4).

A fleet of `--replicasets` ReplicaSets of `--replicas` pods (100 x 100: 10,000 pods; client QPS
off, as the dashboard's 10,000-pod tests run it) is simulated in this process to `--live` virtual
seconds, then shown at `--at` through the host's side of the past (`dashboard.host.past.
PastWorker`: the real replay worker, keyframes on, started cold as on a page's first look). The
first look replays every event from t=0, so it takes as long as the live run took to compute
that stretch. Reported: how long the answer took, and how often the replay said how far it had
come (the gaps between its progress lines, which restart the host's 60 s time limit: the limit
is on silence; before, it was on the whole replay, and a look longer than 60 s was cut off).

Prints one JSON line. Usage: .venv/bin/python bench/past_first_look.py [--replicasets 100]
[--replicas 100] [--live 12] [--at 10]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _live import fleet  # noqa: E402
from _machine import machine  # noqa: E402


async def first_look(args: argparse.Namespace) -> dict:
    import yaml

    from controlplane.scenario import load_scenario
    from controlplane.simulation import Simulation
    from dashboard.host import past
    from dashboard.host.hosted import HostedSimulation

    pods = args.replicasets * args.replicas
    scenario = load_scenario(yaml.safe_dump(fleet(args.replicasets, args.replicas, max(3, pods // 100))))
    hosted = HostedSimulation("bench", Simulation(scenario), name=scenario.name, source="upload", keep_records=False)
    started = time.perf_counter()
    hosted.sim.run_until(args.live)
    live_seconds = time.perf_counter() - started
    worker = past.PastWorker(hosted)
    heard: list[float] = []
    started = time.perf_counter()

    async def progress(where: dict) -> None:
        heard.append(time.perf_counter())

    try:
        answer = await worker.ask("bench", {"at": args.at}, [], progress=progress)
    finally:
        await worker.stop()
    seconds = time.perf_counter() - started
    marks = [started, *heard, started + seconds]  # the silences: from the ask to the answer
    gaps = [b - a for a, b in itertools.pairwise(marks)]
    return {
        "pods": pods,
        "live_virtual_seconds": args.live,
        "live_run_seconds": round(live_seconds, 1),
        "live_events": hosted.sim.kernel.events,
        "at": args.at,
        "ok": bool(answer.get("ok")),
        "error": answer.get("error"),
        "answer_seconds": round(seconds, 1),
        "progress_lines": len(heard),
        "longest_silence_seconds": round(max(gaps), 2),
        "time_limit_on_silence_seconds": past.TIME_LIMIT,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicasets", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--live", type=float, default=12.0)
    parser.add_argument("--at", type=float, default=10.0)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    figures = asyncio.run(first_look(args))
    print(json.dumps({"bench": "past_first_look", **figures, "load": os.getloadavg(), "machine": machine()}))


if __name__ == "__main__":
    main()

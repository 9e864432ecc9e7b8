"""Benchmark: the fault swarm on an operator world (issue 30's target: at least 200 seeds a minute
with one operator world on 2 workers).

Runs `python -m controlplane swarm --seeds 1-N --workers 2 --base SCENARIO --twice-every 0
--no-progress` in a child process, as a user would: every case is a generated cluster plus the
base scenario's operator and objects, with faults aimed at the operator (docs/operators.md,
"Swarm your operator"). The default base is examples/kopf-operator/scenario.yaml (a clean
operator: no failing seed writes files), the default quiet period the swarm's own (600 s).

Prints one JSON line: seeds, workers, quiet, base, wall_s, seeds_per_minute (seeds / wall),
cpu_s (the swarm's processes: parent and workers), cpu_s_per_seed, failed (seeds with a
violation), target_seeds_per_minute (200), and `machine` (bench/_machine.py, with the load
average at the start and at the end: on a shared machine `cpu_s_per_seed` is the steadier figure;
2 * 60 / cpu_s_per_seed is the rate both cores would give).

Usage: .venv/bin/python bench/operator_swarm.py [--seeds 100] [--workers 2] [--quiet 600]
                                                [--base examples/kopf-operator/scenario.yaml]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

TARGET = 200.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quiet", type=float, default=600.0)
    parser.add_argument("--base", default="examples/kopf-operator/scenario.yaml")
    args = parser.parse_args()
    from _machine import machine

    start_machine = machine()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controlplane",
            "swarm",
            "--seeds",
            f"1-{args.seeds}",
            "--workers",
            str(args.workers),
            "--quiet",
            f"{args.quiet:g}",
            "--base",
            args.base,
            "--twice-every",
            "0",
            "--no-progress",
            "--out",
            "/tmp/ctrlscope-operator-swarm-bench",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"the swarm failed: {done.stderr.strip().splitlines()[-1:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    failed = re.search(r"seeds failed\s+(\d+)", done.stdout)
    line = {
        "seeds": args.seeds,
        "workers": args.workers,
        "quiet": args.quiet,
        "base": args.base,
        "wall_s": round(wall, 2),
        "seeds_per_minute": round(args.seeds / wall * 60, 1),
        "cpu_s": round(cpu, 2),
        "cpu_s_per_seed": round(cpu / args.seeds, 3),
        "failed": int(failed.group(1)) if failed else None,
        "target_seeds_per_minute": TARGET,
        "machine": {**start_machine, "load_avg_end": machine()["load_avg"]},
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()

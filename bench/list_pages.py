"""Benchmark: the host's own time for every page of `kubectl get pods -A` (a Table, `limit=500`,
following `continue`), in process: no HTTP, no channel layer, no kubectl.

A world of N pods (bench/kubectl.py's) is run until every pod is Ready; then all pages are asked
of `k8s_ops` as the HTTP side asks them, `--runs` times. Prints one JSON line: the seconds spent
in the list op per run, the pages, the bytes, and the machine.

Usage: .venv/bin/python bench/list_pages.py [--pods 10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    import django

    django.setup()
    from _machine import machine
    from kubectl import world

    from controlplane.scenario import parse_scenario
    from controlplane.simulation import Simulation
    from dashboard.host import k8s_ops
    from dashboard.host.hosted import HostedSimulation

    pods = args.pods
    sim = Simulation(parse_scenario(world(pods, max(3, pods // 100))), seed=1)
    hosted = HostedSimulation("bench", sim, name="bench", source="bench")
    while (sim.server.peek("replicasets", "default", "big") or {}).get("status", {}).get("readyReplicas") != pods:
        sim.run_until(sim.now + 5)
    list_op = k8s_ops.READS["k8s_list"]
    times, pages, size = [], 0, 0
    for _ in range(args.runs):
        spent, pages, size, token = 0.0, 0, 0, None
        while True:
            cmd = {"op": "k8s_list", "resource": "pods", "limit": 500, "continue": token, "table": True}
            start = time.perf_counter()
            answer = list_op(hosted, cmd)
            spent += time.perf_counter() - start
            pages += 1
            size += len(answer["body"])
            token = json.loads(answer["body"])["metadata"].get("continue")
            if not token:
                break
        times.append(round(spent, 3))
    print(
        json.dumps(
            {
                "bench": "list_pages",
                "pods": pods,
                "pages": pages,
                "bytes": size,
                "seconds": times,
                "best_s": min(times),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()

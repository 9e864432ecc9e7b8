"""Benchmark: the converge of bench/converge.py (N ReplicaSets x R replicas to all Ready) with the
trace exported as `python -m controlplane run --trace --perfetto` does: the simulation records
(the report's history) and both exporters stream every record to a file.

Prints one JSON line: wall_s, records, jsonl_mb, perfetto_mb, perfetto_events, peak_rss_mb,
rss_per_pod_kb. Compare peak_rss_mb with converge.py's: the export must not hold the trace.

Usage: .venv/bin/python bench/trace_export.py [--replicasets 1000] [--replicas 100] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.converge import converged, replica_set
from controlplane.scenario import Scenario, default_config
from controlplane.simulation import Simulation
from controlplane.trace_export import JsonLinesTrace, PerfettoTrace


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicasets", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--max-virtual", type=float, default=3600.0)
    parser.add_argument("--out", default=None, help="directory for the two files (default: a temporary one)")
    args = parser.parse_args()
    pods = args.replicasets * args.replicas
    config = default_config()
    config.update(
        {
            "nodes": args.nodes,
            "kubeApiQPS": -1.0,
            "kubeletQPS": -1.0,
            "schedulerQPS": -1.0,
            "controllers": ["replicaset"],
        }
    )
    scenario = Scenario(
        name="converge", seed=1, config=config, objects=[replica_set(i, args.replicas) for i in range(args.replicasets)]
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        start = time.perf_counter()
        with open(out / "trace.jsonl", "w") as lines, open(out / "trace.perfetto.json", "w") as perfetto:
            sim = Simulation(scenario)
            jsonl = JsonLinesTrace(lines, scenario=scenario.name, seed=1)
            chrome = PerfettoTrace(perfetto, scenario=scenario.name, seed=1)
            sim.subscribe(jsonl.write)
            sim.subscribe(chrome.write)
            sim.start()
            while sim.now < args.max_virtual:
                sim.advance(1.0)
                if converged(sim, args.replicasets, args.replicas):
                    break
            jsonl.close(sim)
            chrome.close(sim)
        wall = time.perf_counter() - start
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(
            json.dumps(
                {
                    "benchmark": "trace_export",
                    "pods": pods,
                    "converged": converged(sim, args.replicasets, args.replicas),
                    "virtual_s": round(sim.now, 3),
                    "wall_s": round(wall, 1),
                    "records": jsonl.records,
                    "jsonl_mb": round((out / "trace.jsonl").stat().st_size / 2**20, 1),
                    "perfetto_events": chrome.events,
                    "perfetto_mb": round((out / "trace.perfetto.json").stat().st_size / 2**20, 1),
                    "syncs": len(sim.syncs),
                    "peak_rss_mb": round(peak_kb / 1024, 1),
                    "rss_per_pod_kb": round(peak_kb / pods, 2),
                }
            )
        )


if __name__ == "__main__":
    main()

"""Benchmark: N ReplicaSets x R replicas from empty to all Ready with status up to date.

Full pipeline (API server, watches, informers, workqueue, 5 workers, scheduler, kubelets), client
QPS limits off. Prints one JSON line:

  wall_s, pods_per_s, peak_rss_mb, rss_per_pod_kb, floor_s (building and indexing the same number of
  pod dicts in bare Python, measured in the same run), ratio (wall_s / floor_s), events (kernel
  callbacks), virtual_s (virtual time to converge).

Usage: .venv/bin/python bench/converge.py [--replicasets 1000] [--replicas 100] [--nodes 1000]
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controlplane.scenario import Scenario, default_config
from controlplane.simulation import Simulation


def replica_set(i: int, replicas: int) -> dict:
    name = f"rs-{i:04d}"
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }


def floor_seconds(n: int, owners: int) -> float:
    """Build and index n pod dicts shaped like the simulation's (store + namespace + owner index)."""
    start = time.perf_counter()
    store: dict[str, dict] = {}
    by_namespace: dict[str, dict[str, None]] = {}
    by_owner: dict[str, dict[str, None]] = {}
    per_owner = max(1, n // owners)
    for i in range(n):
        owner = f"rs-{i // per_owner:04d}"
        name = f"{owner}-{i:05x}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "generateName": f"{owner}-",
                "namespace": "default",
                "uid": f"00000000-0000-4000-8000-{i:012x}",
                "resourceVersion": str(i + 1),
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"app": owner},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": owner,
                        "uid": owner,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "containers": [{"name": "app", "image": "nginx:1.27"}],
                "nodeName": f"node-{i % 1000}",
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
            },
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:02Z"}],
            },
        }
        key = f"default/{name}"
        store[key] = pod
        by_namespace.setdefault("default", {})[key] = None
        by_owner.setdefault(f"default/ReplicaSet/{owner}/{owner}", {})[key] = None
    elapsed = time.perf_counter() - start
    del store, by_namespace, by_owner
    return elapsed


def converged(sim: Simulation, count: int, replicas: int) -> bool:
    done = 0
    for rs in sim.server.objects("replicasets"):
        status = rs.get("status") or {}
        if (
            status.get("readyReplicas") == replicas
            and status.get("availableReplicas") == replicas
            and status.get("replicas") == replicas
            and status.get("observedGeneration") == rs["metadata"].get("generation")
        ):
            done += 1
    return done == count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicasets", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--max-virtual", type=float, default=3600.0)
    args = parser.parse_args()
    pods = args.replicasets * args.replicas

    floor = floor_seconds(pods, args.replicasets)
    gc.collect()

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
    start = time.perf_counter()
    sim = Simulation(scenario, record=False)
    sim.start()
    virtual = 0.0
    while virtual < args.max_virtual:
        sim.advance(1.0)
        virtual = sim.now
        if converged(sim, args.replicasets, args.replicas):
            break
    wall = time.perf_counter() - start
    ok = converged(sim, args.replicasets, args.replicas)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "benchmark": "converge",
                "replicasets": args.replicasets,
                "replicas": args.replicas,
                "pods": pods,
                "nodes": args.nodes,
                "converged": ok,
                "virtual_s": round(virtual, 3),
                "wall_s": round(wall, 3),
                "pods_per_s": round(pods / wall, 1),
                "floor_s": round(floor, 3),
                "ratio": round(wall / floor, 2),
                "peak_rss_mb": round(peak_kb / 1024, 1),
                "rss_per_pod_kb": round(peak_kb / pods, 2),
                "events": sim.kernel._seq,
                "api_requests": len(sim.server.requests),
            }
        )
    )


if __name__ == "__main__":
    main()

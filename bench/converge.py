"""Benchmark: N ReplicaSets x R replicas from empty to all Ready with status up to date.

Full pipeline (API server, watches, informers, workqueue, 5 workers, scheduler, kubelets), client
QPS limits off, no trace subscriber. Method (issue 11), so that figures reproduce:

* the floor is the time bare Python needs to build and index the same number of pod dicts
  (`floor_seconds`), measured as the minimum of 5 runs with the collector disabled
  (`gc.collect()` before each, `gc.disable()` around it): `floor_gc_off_s`. A floor with the
  collector on moves with every GC setting more than the simulation does; it is reported for
  reference only (`floor_gc_on_s`, one run);
* the simulation runs `--repeat` times (default 2), each in a fresh interpreter (`--child`), so
  every run has its own peak RSS and starts from the same heap; the best wall time counts;
* the simulation runs under the GC policy of hosted simulations
  (`controlplane.gcpolicy.simulation_gc`) unless `--gc default`, and the line says which.

Prints one JSON line: wall_s (best), walls_s (every run), floor_gc_off_s, floor_gc_on_s, ratio
(wall_s / floor_gc_off_s), cpu_s, floor_gc_off_cpu_s and cpu_ratio (the same in CPU time of the
process, less sensitive to other load on a shared machine), us_per_pod, pods_per_s, events (kernel
callbacks run), scheduled (callbacks scheduled, cancelled ones included), events_per_s,
peak_rss_mb, rss_per_pod_kb (of the best run), virtual_s, api_requests, gc (the policy and the
collections the best run made) and `machine` (bench/_machine.py: CPU, cores, Python, PGO/LTO,
GC thresholds, load average at the start and at the end).

`--breakdown` adds a `memory` object: after the best run converged, the retained size of each
part of the world (store, watch history, kubelets, Events, garbage-collector graph, informers,
request log), each object counted once, in that order.

`--kind replicationcontroller` converges ReplicationControllers instead (v1 kind, equality
selector) under `--version v1.36` (today's controller, the default) or `--version v1.5` (the v1.5
ReplicationManager, docs/versions.md); `--version both` runs the two versions' children
alternately (v1.36, v1.5, v1.36, v1.5 ...) so that both see the same machine, and prints one
line per version plus a `compare` line with `ratio` = best v1.5 wall / best v1.36 wall (and the
same in CPU time).

`--kind deployment` (issue 28) is a rollout: `--replicasets` Deployments (default 1) of
`--replicas` (default 10,000) converge from empty (each Deployment's status: replicas, updated,
ready and available all `--replicas`, generation observed), then every Deployment's template gets a
new image and the run goes on until each rollout is complete (the same status again, so the old
ReplicaSet is at 0 pods). The line adds `converge_wall_s` / `rollout_wall_s` (and the virtual
seconds of each phase); `us_per_pod` is over the whole run (10,000 pods created, 10,000 replaced).
The same invocation also runs the ReplicaSet converge of the same size (1 x 10,000), the two kinds'
children alternately so that both see the same machine, and prints its line and a `compare` line
(`ratio` = deployment wall / replicaset wall, and the same in CPU time).

Usage: .venv/bin/python bench/converge.py [--replicasets 1000] [--replicas 100] [--nodes PODS/100]
       [--repeat 2] [--gc policy|default] [--breakdown]
       [--kind replicaset|replicationcontroller|deployment] [--version v1.36|v1.5|both]
Run long ones (1,000,000 pods: --replicasets 10000) with `nice -n 10`.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine

from controlplane import gcpolicy
from controlplane.limits import DEFAULT_RUN_LIMITS, RunLimits
from controlplane.scenario import Scenario, default_config
from controlplane.simulation import CONTROLLER_VERSIONS, Simulation

FLOOR_RUNS = 5


def _owner(kind: str, api_version: str, prefix: str, i: int, replicas: int) -> dict:
    """One owner of `replicas` nginx pods, its own `app` label (a ReplicationController's
    selector is a plain map, the others' a LabelSelector)."""
    name = f"{prefix}-{i:04d}"
    selector: dict = {"app": name} if kind == "ReplicationController" else {"matchLabels": {"app": name}}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": selector,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }


def replication_controller(i: int, replicas: int) -> dict:
    return _owner("ReplicationController", "v1", "rc", i, replicas)


def replica_set(i: int, replicas: int) -> dict:
    return _owner("ReplicaSet", "apps/v1", "rs", i, replicas)


def deployment(i: int, replicas: int) -> dict:
    return _owner("Deployment", "apps/v1", "deploy", i, replicas)


def rolled_out(sim: Simulation, count: int, replicas: int) -> bool:
    """Every Deployment complete: all its pods updated, ready and available, none of an old
    ReplicaSet left (status.replicas counts every ReplicaSet's), its generation observed."""
    done = 0
    for d in sim.server.objects("deployments"):
        status = d.get("status") or {}
        if (
            status.get("replicas") == replicas
            and status.get("updatedReplicas") == replicas
            and status.get("readyReplicas") == replicas
            and status.get("availableReplicas") == replicas
            and status.get("observedGeneration") == d["metadata"].get("generation")
        ):
            done += 1
    return done == count


def floor_seconds(n: int, owners: int) -> float:
    """Build and index n pod dicts shaped like the simulation's (store + namespace + owner index)."""
    return floor_times(n, owners)[0]


def floor_times(n: int, owners: int) -> tuple[float, float]:
    """`floor_seconds` as (wall, CPU time of this process)."""
    start = time.perf_counter()
    cpu_start = time.process_time()
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
    cpu = time.process_time() - cpu_start
    del store, by_namespace, by_owner
    return elapsed, cpu


def floor_gc_off(n: int, owners: int, runs: int = FLOOR_RUNS) -> tuple[list[float], list[float]]:
    """`floor_seconds` `runs` times with the collector off (collected before each run): the wall
    times and the CPU times of this process."""
    times = []
    cpu = []
    enabled = gc.isenabled()
    try:
        for _ in range(runs):
            gc.collect()
            gc.disable()
            wall_s, cpu_s = floor_times(n, owners)
            times.append(wall_s)
            cpu.append(cpu_s)
            gc.enable()
    finally:
        if enabled:
            gc.enable()
    return times, cpu


def converged(sim: Simulation, count: int, replicas: int, api_resource: str = "replicasets") -> bool:
    done = 0
    for rs in sim.server.objects(api_resource):
        status = rs.get("status") or {}
        if (
            status.get("readyReplicas") == replicas
            and status.get("availableReplicas") == replicas
            and status.get("replicas") == replicas
            and status.get("observedGeneration") == rs["metadata"].get("generation")
        ):
            done += 1
    return done == count


def scenario(replicasets: int, replicas: int, nodes: int, kind: str = "replicaset", version: str = "v1.36") -> Scenario:
    config = default_config()
    config.update(
        {
            "nodes": nodes,
            "kubeApiQPS": -1.0,
            "kubeletQPS": -1.0,
            "schedulerQPS": -1.0,
            "controllers": [kind],
        }
    )
    if kind == "deployment":
        # The Deployment controller drives the ReplicaSet controller (the registry's default set
        # plus the opt-in Deployment controller).
        config["controllers"] = ["replicaset", kind]
        objects = [deployment(i, replicas) for i in range(replicasets)]
    elif kind == "replicationcontroller":
        config["controllerVersion"] = {**config["controllerVersion"], "replicationcontroller": version}
        objects = [replication_controller(i, replicas) for i in range(replicasets)]
    else:
        objects = [replica_set(i, replicas) for i in range(replicasets)]
    return Scenario(name="converge", seed=1, config=config, objects=objects)


def run_once(args: argparse.Namespace) -> dict[str, Any]:
    """One simulation run in this process: wall, peak RSS, events, collections."""
    collections_before = [s["collections"] for s in gc.get_stats()]
    start = time.perf_counter()
    cpu_start = time.process_time()
    pods = args.replicasets * args.replicas
    limits = RunLimits(  # the headless ceilings, raised to what this size needs
        pods=max(DEFAULT_RUN_LIMITS.pods, pods),
        nodes=max(DEFAULT_RUN_LIMITS.nodes, args.nodes),
        events=max(DEFAULT_RUN_LIMITS.events, 20 * pods),
    )
    world = scenario(args.replicasets, args.replicas, args.nodes, args.kind, args.version)
    api_resource = "replicationcontrollers" if args.kind == "replicationcontroller" else "replicasets"
    rollout = args.kind == "deployment"
    if rollout:
        limits = RunLimits(pods=limits.pods, nodes=limits.nodes, events=2 * limits.events)

    def done() -> bool:
        if rollout:
            return rolled_out(sim, args.replicasets, args.replicas)
        return converged(sim, args.replicasets, args.replicas, api_resource)

    sim = Simulation(world, record=False, limits=limits)
    sim.start()
    hold = gcpolicy.simulation_gc() if args.gc == "policy" else None
    phases: dict[str, float] = {}
    try:
        virtual = 0.0
        while virtual < args.max_virtual:
            sim.advance(1.0)
            virtual = sim.now
            if done():
                break
        if rollout:
            phases = {"converge_wall_s": time.perf_counter() - start, "converge_virtual_s": virtual}
            for i in range(args.replicasets):
                image = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}}
                answer = sim.apply({"patch": {"kind": "Deployment", "name": f"deploy-{i:04d}", "patch": image}})
                assert answer["ok"], answer
            began = virtual
            while virtual - began < args.max_virtual:
                sim.advance(1.0)
                virtual = sim.now
                if done():
                    break
            phases["rollout_wall_s"] = time.perf_counter() - start - phases["converge_wall_s"]
            phases["rollout_virtual_s"] = virtual - began
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
    finally:
        if hold is not None:
            hold.release()
    collections = [s["collections"] - b for s, b in zip(gc.get_stats(), collections_before, strict=True)]
    result: dict[str, Any] = {
        "wall_s": wall,
        "cpu_s": cpu,
        "converged": done(),
        **phases,
        "virtual_s": virtual,
        "events": sim.kernel.events,
        "scheduled": sim.kernel._seq,
        "api_requests": len(sim.server.requests),
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "collections": collections,
    }
    if args.breakdown:
        from memory_breakdown import breakdown

        result["memory"] = breakdown(sim, args.replicasets * args.replicas)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicasets", type=int, default=None, help="default 1000 (deployment: 1)")
    parser.add_argument("--replicas", type=int, default=None, help="default 100 (deployment: 10000)")
    parser.add_argument("--nodes", type=int, default=None, help="default: one per 100 pods (maxPods is 110)")
    parser.add_argument("--max-virtual", type=float, default=3600.0)
    parser.add_argument("--repeat", type=int, default=2, help="simulation runs; the best wall time counts")
    parser.add_argument("--gc", choices=("policy", "default"), default="policy")
    parser.add_argument("--breakdown", action="store_true", help="measure where the memory is (slow)")
    # --kind: one of the registered controllers.
    parser.add_argument("--kind", choices=tuple(CONTROLLER_VERSIONS), default="replicaset")
    parser.add_argument("--version", choices=("v1.36", "v1.5", "both"), default="v1.36")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.version != "v1.36" and args.kind != "replicationcontroller":
        parser.error("--version: only ReplicationControllers have a v1.5 controller (--kind replicationcontroller)")
    rollout = args.kind == "deployment"
    if args.replicasets is None:
        args.replicasets = 1 if rollout else 1000
    if args.replicas is None:
        args.replicas = 10_000 if rollout else 100
    if args.nodes is None:
        args.nodes = max(1, args.replicasets * args.replicas // 100)
    if args.child:
        print(json.dumps(run_once(args)))
        return

    pods = args.replicasets * args.replicas
    machine_start = machine()
    floors, floors_cpu = floor_gc_off(pods, args.replicasets)
    gc.collect()
    floor_on = floor_seconds(pods, args.replicasets)
    gc.collect()
    versions = ("v1.36", "v1.5") if args.version == "both" else (args.version,)
    runs_of: dict[str, list[dict[str, Any]]] = {v: [] for v in versions}
    base = [a for a in sys.argv[1:] if not a.startswith("--version")]
    if "--version" in sys.argv[1:]:  # "--version X" as two words
        i = sys.argv.index("--version")
        base = sys.argv[1:i] + sys.argv[i + 2 :]
    if rollout:
        _rollout_and_replica_sets(args, floors, floors_cpu, floor_on, machine_start)
        return
    for _ in range(max(1, args.repeat)):
        for version in versions:  # alternately, so both versions see the same machine
            child = [sys.executable, __file__, "--child", *base, "--version", version]
            out = subprocess.run(child, check=True, stdout=subprocess.PIPE, text=True).stdout
            runs_of[version].append(json.loads(out.strip().splitlines()[-1]))
    lines = [
        _line(args, version, runs_of[version], floors, floors_cpu, floor_on, machine_start) for version in versions
    ]
    for line in lines:
        print(json.dumps(line))
    if len(lines) == 2:
        old, new = lines
        print(
            json.dumps(
                {
                    "benchmark": "converge-versions",
                    "kind": args.kind,
                    "pods": pods,
                    "ratio": round(new["wall_s"] / old["wall_s"], 3),
                    "cpu_ratio": round(new["cpu_s"] / old["cpu_s"], 3),
                    "walls_s": {v: line["walls_s"] for v, line in zip(versions, lines, strict=True)},
                    "machine": lines[-1]["machine"],
                }
            )
        )


def _rollout_and_replica_sets(
    args: argparse.Namespace,
    floors: list[float],
    floors_cpu: list[float],
    floor_on: float,
    machine_start: dict[str, Any],
) -> None:
    """`--kind deployment`: the rollout and the ReplicaSet converge of the same size, their
    children alternately (deployment, replicaset, deployment, ...)."""
    size = ["--replicasets", str(args.replicasets), "--replicas", str(args.replicas), "--nodes", str(args.nodes)]
    size += ["--max-virtual", str(args.max_virtual), "--gc", args.gc]
    kinds = ("deployment", "replicaset")
    runs_of: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    for _ in range(max(1, args.repeat)):
        for kind in kinds:
            child = [sys.executable, __file__, "--child", *size, "--kind", kind]
            out = subprocess.run(child, check=True, stdout=subprocess.PIPE, text=True).stdout
            runs_of[kind].append(json.loads(out.strip().splitlines()[-1]))
    lines = []
    for kind in kinds:
        line = _line(
            argparse.Namespace(**{**vars(args), "kind": kind}),
            "v1.36",
            runs_of[kind],
            floors,
            floors_cpu,
            floor_on,
            machine_start,
        )
        if kind == "deployment":
            best = min(runs_of[kind], key=lambda r: r["wall_s"])
            line["benchmark"] = "converge-rollout"
            for key in ("converge_wall_s", "converge_virtual_s", "rollout_wall_s", "rollout_virtual_s"):
                line[key] = round(best[key], 3)
        lines.append(line)
        print(json.dumps(line))
    rollout_line, rs_line = lines
    print(
        json.dumps(
            {
                "benchmark": "converge-compare",
                "kinds": list(kinds),
                "pods": args.replicasets * args.replicas,
                "ratio": round(rollout_line["wall_s"] / rs_line["wall_s"], 3),
                "cpu_ratio": round(rollout_line["cpu_s"] / rs_line["cpu_s"], 3),
                "walls_s": {k: line["walls_s"] for k, line in zip(kinds, lines, strict=True)},
                "machine": lines[-1]["machine"],
            }
        )
    )


def _line(
    args: argparse.Namespace,
    version: str,
    runs: list[dict[str, Any]],
    floors: list[float],
    floors_cpu: list[float],
    floor_on: float,
    machine_start: dict[str, Any],
) -> dict[str, Any]:
    pods = args.replicasets * args.replicas
    best = min(runs, key=lambda r: r["wall_s"])
    floor = min(floors)
    wall = best["wall_s"]
    machine_end = machine()
    line: dict[str, Any] = {
        "benchmark": "converge",
        "kind": args.kind,
        **({"version": version} if args.kind == "replicationcontroller" else {}),
        "replicasets": args.replicasets,
        "replicas": args.replicas,
        "pods": pods,
        "nodes": args.nodes,
        "converged": all(r["converged"] for r in runs),
        "virtual_s": round(best["virtual_s"], 3),
        "wall_s": round(wall, 3),
        "walls_s": [round(r["wall_s"], 3) for r in runs],
        "floor_gc_off_s": round(floor, 3),
        "floors_gc_off_s": [round(f, 3) for f in floors],
        "floor_gc_on_s": round(floor_on, 3),
        "ratio": round(wall / floor, 2),
        "cpu_s": round(best["cpu_s"], 3),
        "floor_gc_off_cpu_s": round(min(floors_cpu), 3),
        "cpu_ratio": round(best["cpu_s"] / min(floors_cpu), 2),
        "us_per_pod": round(wall * 1e6 / pods, 1),
        "pods_per_s": round(pods / wall, 1),
        "events": best["events"],
        "scheduled": best["scheduled"],
        "events_per_s": round(best["events"] / wall),
        "api_requests": best["api_requests"],
        "peak_rss_mb": round(best["peak_rss_kb"] / 1024, 1),
        "rss_per_pod_kb": round(best["peak_rss_kb"] / pods, 2),
        "gc": {
            "mode": args.gc,
            **(
                {k: v for k, v in gcpolicy.describe().items() if k in ("policy", "freeze", "thresholds_while_held")}
                if args.gc == "policy"
                else {"thresholds": list(gc.get_threshold())}
            ),
            "collections_by_generation": best["collections"],
        },
        "machine": {**machine_start, "load_avg_end": machine_end["load_avg"]},
    }
    if "memory" in best:
        line["memory"] = best["memory"]
    return line


if __name__ == "__main__":
    main()

"""What a converge run leaves behind, counted: stored objects, Events, watch history, requests.

Runs the `bench/converge.py` scenario once (same ReplicaSets, nodes, limits and GC policy) until
every ReplicaSet is ready, then prints one JSON line with the machine and:

* `store`: stored objects per resource;
* `events`: the stored Events by `source.component` and `reason`, and the sum of their `count`;
* `history`: watch-history entries (`APIServer._history`, bounded at 100,000 per resource) by resource and
  type, with the bound;
* `requests`: API requests by resource and by client, and by verb for Events;
* `recorders`: Events recorded but not yet posted when the run stops (each component's recorder
  outbox), by component, with the bytes they hold (`memory_breakdown`'s walk; shared strings
  counted too, so an upper bound);
* `kernel_events`: kernel callbacks run.

No timing is taken here (see `bench/converge.py`); the counts are deterministic for a size.

    .venv/bin/python bench/event_census.py --replicasets 100      # 10,000 pods
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _machine import machine
from converge import converged, scenario
from memory_breakdown import _size_of

from controlplane import gcpolicy
from controlplane.apiserver.resources import RESOURCES
from controlplane.limits import DEFAULT_RUN_LIMITS, RunLimits
from controlplane.simulation import Simulation


def census(replicasets: int, replicas: int, nodes: int, max_virtual: float = 600.0) -> dict:
    pods = replicasets * replicas
    limits = RunLimits(
        pods=max(DEFAULT_RUN_LIMITS.pods, pods),
        nodes=max(DEFAULT_RUN_LIMITS.nodes, nodes),
        events=max(DEFAULT_RUN_LIMITS.events, 20 * pods),
    )
    sim = Simulation(scenario(replicasets, replicas, nodes), record=False, limits=limits)
    sim.start()
    hold = gcpolicy.simulation_gc()
    try:
        while sim.now < max_virtual:
            sim.advance(1.0)
            if converged(sim, replicasets, replicas):
                break
    finally:
        hold.release()
    server = sim.server
    stored = {plural: server.count(plural) for plural in RESOURCES}
    events = list(server.objects("events"))
    by_reason = Counter(f"{(e.get('source') or {}).get('component', '')}/{e.get('reason')}" for e in events)
    history = server._history
    hist_resource = Counter({plural: len(column) for plural, column in history._resources.items()})
    hist_type = Counter(
        f"{plural}/{event_type}" for plural, column in history._resources.items() for event_type in column._types
    )
    requests = server.requests
    req_resource: Counter[str] = Counter()
    req_client: Counter[str] = Counter()
    event_verbs: Counter[str] = Counter()
    for record in requests:
        resource = record["resource"]
        req_resource[resource] += 1
        req_client[record["client"]] += 1
        if resource == "events":
            event_verbs[record["verb"]] += 1
    outboxes: Counter[str] = Counter()
    outbox_bytes: Counter[str] = Counter()
    seen: set[int] = set()
    recorders = [sim.nodes.scheduler.recorder]
    recorders += [k.recorder for k in sim.nodes.kubelets.values()]
    recorders += [c.recorder for c in sim.controllers.values()]
    for recorder in recorders:
        outboxes[recorder.component] += len(recorder._outbox)
        outbox_bytes[recorder.component] += _size_of(recorder._outbox, seen)[0]
    return {
        "pods": pods,
        "converged": converged(sim, replicasets, replicas),
        "virtual_s": sim.now,
        "kernel_events": sim.kernel.events,
        "store": {k: v for k, v in sorted(stored.items(), key=lambda kv: -kv[1]) if v},
        "events": {
            "stored": len(events),
            "count_sum": sum(int(e.get("count") or 1) for e in events),
            "by_source_reason": dict(by_reason.most_common()),
        },
        "recorders": {
            "unposted": dict(outboxes.most_common()),
            "unposted_kb_per_pod": {k: round(v / 1024 / pods, 3) for k, v in outbox_bytes.most_common()},
        },
        "history": {
            "entries": len(history),
            "revision": server.revision,
            "by_resource": dict(hist_resource.most_common()),
            "by_resource_type": dict(hist_type.most_common()),
        },
        "requests": {
            "total": len(requests),
            "by_resource": dict(req_resource.most_common()),
            "by_client": dict(req_client.most_common(12)),
            "events_by_verb": dict(event_verbs.most_common()),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicasets", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=None, help="default: one per 100 pods")
    args = parser.parse_args()
    if args.replicasets < 1 or args.replicas < 1:
        parser.exit(2, "event_census.py: --replicasets and --replicas must be at least 1\n")
    nodes = args.nodes or max(1, (args.replicasets * args.replicas + 99) // 100)
    out = census(args.replicasets, args.replicas, nodes)
    print(json.dumps({"bench": "event_census", "machine": machine(), **out}))


if __name__ == "__main__":
    main()

"""Prometheus `/metrics`: every hosted simulation's figures, labelled `simulation`.

Built on each scrape from snapshots the host reads (`k8s_metrics`), through a custom collector:
the simulation keeps its own counters and nothing in it is touched by a scrape. Names follow
client-go's workqueue metrics and the ReplicaSet controller's; API requests are counted by client,
verb, resource (with the subresource) and code from the simulated API server's request log.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from asgiref.sync import sync_to_async
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

Obj = dict[str, Any]


def _le(bound: Any) -> str:
    value = float(bound)
    return "+Inf" if value == float("inf") else repr(value) if value != int(value) else f"{value:.1f}"


def _buckets(histogram: Obj) -> list[tuple[str, float]]:
    return [(_le(bound), float(n)) for bound, n in histogram["buckets"]]


class SimulationCollector:
    """Metric families from `{simulation id: k8s_metrics snapshot}`."""

    def __init__(self, snapshots: dict[str, Obj]) -> None:
        self.snapshots = snapshots

    def collect(self) -> Iterator[Metric]:
        sim = ["simulation"]
        queue = ["simulation", "name"]
        time = GaugeMetricFamily("ctrlscope_virtual_time_seconds", "The simulation's virtual clock.", labels=sim)
        events = CounterMetricFamily("ctrlscope_kernel_events", "Kernel events the simulation has run.", labels=sim)
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=queue)
        adds = CounterMetricFamily("workqueue_adds", "Total number of adds handled by workqueue", labels=queue)
        retries = CounterMetricFamily("workqueue_retries", "Total number of retries handled by workqueue", labels=queue)
        queue_duration = HistogramMetricFamily(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            labels=queue,
        )
        work_duration = HistogramMetricFamily(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels=queue,
        )
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by work_duration.",
            labels=queue,
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=queue,
        )
        ratio = HistogramMetricFamily(
            "replicaset_controller_sorting_deletion_age_ratio",
            "The ratio of chosen deleted pod's ages to the current youngest pod's age (at the time).",
            labels=["simulation", "controller"],
        )
        skips = CounterMetricFamily(
            "replicaset_controller_stale_sync_skips",
            "Number of times a sync was skipped because the informer cache was stale.",
            labels=["simulation", "controller", "group", "resource"],
        )
        requests = CounterMetricFamily(
            "apiserver_request",
            "Requests to the simulated API server by client, verb, resource and HTTP code.",
            labels=["simulation", "client", "verb", "resource", "code"],
        )
        for sim_id, snap in sorted(self.snapshots.items()):
            time.add_metric([sim_id], snap["time"])
            events.add_metric([sim_id], snap["events"])
            for q in snap["queues"]:
                labels = [sim_id, q["name"]]
                depth.add_metric(labels, q["depth"])
                adds.add_metric(labels, q["adds"])
                retries.add_metric(labels, q["retries"])
                queue_duration.add_metric(labels, _buckets(q["queueDuration"]), q["queueDuration"]["sum"])
                work_duration.add_metric(labels, _buckets(q["workDuration"]), q["workDuration"]["sum"])
                unfinished.add_metric(labels, q["unfinished"])
                longest.add_metric(labels, q["longestRunning"])
            for controller, figures in sorted(snap["controllers"].items()):
                h = figures.get("replicaset_controller_sorting_deletion_age_ratio")
                if h is not None:  # a controller that exports none (the Deployment controller's `{}`)
                    ratio.add_metric([sim_id, controller], _buckets(h), h["sum"])
                for skip in figures.get("replicaset_controller_stale_sync_skips_total", ()):
                    skips.add_metric([sim_id, controller, skip["group"], skip["resource"]], skip["value"])
            for client, verb, resource, code, n in snap["requests"]:
                requests.add_metric([sim_id, client, verb, resource, str(code)], n)
        yield from (time, events, depth, adds, retries, queue_duration, work_duration, unfinished, longest)
        yield from (ratio, skips, requests)


async def exposition(only: str | None = None) -> tuple[str, str]:
    """(content type, text) of `/metrics`: every simulation alive in any process, or only the
    simulation `only` (its own API's `/metrics`)."""
    from dashboard.host import get_host, request

    ids = {only} if only is not None else set(get_host().sims) | set(await _alive_ids())
    snapshots: dict[str, Obj] = {}
    for sim_id in sorted(ids):
        try:
            answer = await request(sim_id, {"op": "k8s_metrics"}, control=True, timeout=5.0)
        except LookupError:
            continue
        if answer.get("ok") and "metrics" in answer:
            snapshots[sim_id] = answer["metrics"]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SimulationCollector(snapshots))  # type: ignore[arg-type]
    return CONTENT_TYPE_LATEST, generate_latest(registry).decode()


@sync_to_async(thread_sensitive=False)
def _alive_ids() -> list[str]:
    from dashboard.models import SimulationRecord

    return list(SimulationRecord.alive().values_list("id", flat=True))

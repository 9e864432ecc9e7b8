"""Metrics of the ReplicaSet controller (pkg/controller/replicaset/metrics/metrics.go, spec §15).

Guarantees: the same observations as upstream, from the virtual clock.
* `sorting_deletion_age_ratio` (histogram, buckets ExponentialBuckets(0.25, 2, 6)): on a scale-down
  that had to rank pods, for each READY victim, its age in ms divided — integer division, as Go's
  int64 milliseconds — by the age in ms of the youngest ready pod of the ReplicaSet. Upstream would
  divide by zero (and panic) if that youngest pod were 0 ms old; the simulation skips such an
  observation and counts it in `age_ratio_zero_age_skips`.
* `stale_sync_skips_total{group, resource}`: syncs refused by the consistency store (spec §14).
"""

from __future__ import annotations

from typing import Any

from controlplane.kernel import parse_rfc3339
from controlplane.podutil import is_pod_ready
from controlplane.workqueue.metrics import Histogram

SORTING_DELETION_AGE_RATIO_BUCKETS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)

Obj = dict[str, Any]


def _age_ms(pod: Obj, now: float) -> int:
    created = pod["metadata"].get("creationTimestamp")
    return int((now - (parse_rfc3339(created) if created else 0.0)) * 1000)


class ReplicaSetMetrics:
    def __init__(self) -> None:
        self.sorting_deletion_age_ratio = Histogram(SORTING_DELETION_AGE_RATIO_BUCKETS)
        self.age_ratio_zero_age_skips = 0
        self.stale_sync_skips_total: dict[tuple[str, str], int] = {}

    def report_sorting_deletion_age_ratio(self, filtered_pods: list[Obj], victims: list[Obj], now: float) -> None:
        """`reportSortingDeletionAgeRatioMetric`: called only when the victims had to be ranked."""
        ready = [p for p in filtered_pods if is_pod_ready(p)]
        if not ready:
            return
        youngest_ms = min(_age_ms(p, now) for p in ready)
        for pod in victims:
            if not is_pod_ready(pod):
                continue
            if youngest_ms == 0:
                self.age_ratio_zero_age_skips += 1
                continue
            self.sorting_deletion_age_ratio.observe(float(_age_ms(pod, now) // youngest_ms))

    def observe_stale_sync_skip(self, group_resource: str) -> None:
        """`group_resource` as GroupResource.String(): "pods", "replicasets.apps"."""
        resource, _, group = group_resource.partition(".")
        key = (group, resource)
        self.stale_sync_skips_total[key] = self.stale_sync_skips_total.get(key, 0) + 1

    def snapshot(self) -> Obj:
        histogram = self.sorting_deletion_age_ratio
        return {
            "replicaset_controller_sorting_deletion_age_ratio": {
                "count": histogram.count,
                "sum": histogram.sum,
                "buckets": [[bound, n] for bound, n in histogram.cumulative()],
            },
            "replicaset_controller_stale_sync_skips_total": [
                {"group": group, "resource": resource, "value": n}
                for (group, resource), n in sorted(self.stale_sync_skips_total.items())
            ],
        }

"""Workqueue metrics (spec §2.5): the always-kept numbers and the prometheus provider."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from controlplane.workqueue import DURATION_BUCKETS, Histogram, PrometheusMetricsProvider, RateLimitingQueue


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now


def test_duration_buckets_are_upstreams_exponential_buckets_from_10ns():
    assert len(DURATION_BUCKETS) == 10
    assert DURATION_BUCKETS[0] == 10e-9
    assert abs(DURATION_BUCKETS[-1] - 10.0) < 1e-9


def test_histogram_counts_an_observation_equal_to_a_bound_in_that_bucket():
    h = Histogram((1.0, 2.0))
    for value in [0.5, 1.0, 1.5, 3.0]:
        h.observe(value)
    assert h.counts == [2, 1, 1]
    assert h.cumulative() == [(1.0, 2), (2.0, 3), (float("inf"), 4)]
    assert (h.count, h.sum) == (4, 6.0)


def sample(registry, metric, name="replicaset"):
    return registry.get_sample_value(metric, {"name": name})


def test_prometheus_provider_exports_upstream_metric_names_for_a_named_queue():
    clock = FakeClock()
    registry = CollectorRegistry()
    q = RateLimitingQueue(clock, name="replicaset", metrics_provider=PrometheusMetricsProvider(registry))
    q.add("a")
    q.add("b")
    clock.now = 0.5
    q.get()
    clock.now = 2.0
    q.add_after("c", 1.0)
    assert sample(registry, "workqueue_depth") == 1.0
    assert sample(registry, "workqueue_adds_total") == 2.0
    assert sample(registry, "workqueue_retries_total") == 1.0
    assert sample(registry, "workqueue_queue_duration_seconds_count") == 1.0
    assert sample(registry, "workqueue_queue_duration_seconds_sum") == 0.5
    q.metrics.update_unfinished_work()
    assert sample(registry, "workqueue_unfinished_work_seconds") == 1.5
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 1.5
    q.done("a")
    assert sample(registry, "workqueue_work_duration_seconds_sum") == 1.5
    assert sample(registry, "workqueue_unfinished_work_seconds") == 0.0


def test_prometheus_provider_ignores_unnamed_queues_like_upstream():
    registry = CollectorRegistry()
    q = RateLimitingQueue(FakeClock(), metrics_provider=PrometheusMetricsProvider(registry))
    q.add("a")
    assert sample(registry, "workqueue_adds_total", "") is None
    assert q.metrics.adds == 1

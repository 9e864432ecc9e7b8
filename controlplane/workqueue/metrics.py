"""Workqueue metrics: client-go's provider interface, and the numbers every queue always keeps.

Guarantees
----------
* Every queue owns a `QueueMetrics` (`q.metrics`) whatever the provider: `depth`, `adds` and
  `retries` are plain integers, `queue_duration` and `work_duration` are `Histogram`s with
  upstream's buckets, and `unfinished_work_seconds()` / `longest_running_processor_seconds()`
  are computed on demand from the queue's virtual clock. The report and the UI read these.
* `depth` follows upstream exactly, quirk included (spec §2.1): it is incremented on every
  non-duplicate `add`, even when the item is processing and so not in the FIFO, and decremented
  on `get`. It can therefore differ from `len(q)`.
* A `MetricsProvider` (upstream's `MetricsProvider`, methods in snake_case) additionally receives
  the same updates, but only for a *named* queue, as upstream does (spec §2.5). The default is the
  no-op provider. `PrometheusMetricsProvider` exports upstream's metric names with the `name`
  label.
* Durations are virtual seconds from the queue's clock; nothing here reads the wall clock.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Sequence
from typing import Any, Protocol

from controlplane.trace import Clock


class GaugeMetric(Protocol):
    def inc(self) -> None: ...
    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    def observe(self, value: float) -> None: ...


class MetricsProvider(Protocol):
    """Makes the metrics of one named queue (upstream `workqueue.MetricsProvider`)."""

    def new_depth_metric(self, name: str) -> GaugeMetric: ...
    def new_adds_metric(self, name: str) -> CounterMetric: ...
    def new_latency_metric(self, name: str) -> HistogramMetric: ...
    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...
    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric: ...
    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric: ...
    def new_retries_metric(self, name: str) -> CounterMetric: ...


class NoopMetric:
    """Every metric interface at once, doing nothing."""

    __slots__ = ()

    def inc(self) -> None:
        pass

    def dec(self) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


_NOOP_METRIC = NoopMetric()


class NoopMetricsProvider:
    """The default provider: queues keep only their own `QueueMetrics`."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _NOOP_METRIC

    def new_adds_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_retries_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Upper bounds `start, start*factor, ...` computed as prometheus' ExponentialBuckets does
    (by repeated multiplication, so the floats are the same as upstream's)."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError("exponential_buckets needs count >= 1, start > 0 and factor > 1")
    buckets = []
    for _ in range(count):
        buckets.append(start)
        start *= factor
    return tuple(buckets)


DURATION_BUCKETS = exponential_buckets(10e-9, 10, 10)
"""Buckets of both duration histograms, as upstream: 10 ns, 100 ns, … 1 s, 10 s (then +Inf)."""


class Histogram:
    """Fixed-bucket histogram (prometheus `le` semantics). `counts[i]` counts observations in
    `(buckets[i-1], buckets[i]]`; the last slot is `+Inf`. Constant memory, so a run of 100,000
    pods does not keep 100,000 observations."""

    __slots__ = ("buckets", "count", "counts", "sum")

    def __init__(self, buckets: Sequence[float] = DURATION_BUCKETS) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.buckets, value)] += 1
        self.count += 1
        self.sum += value

    def cumulative(self) -> list[tuple[float, int]]:
        """`(upper bound, observations <= bound)` pairs as prometheus exposes them, `+Inf` last."""
        out: list[tuple[float, int]] = []
        running = 0
        for bound, n in zip((*self.buckets, float("inf")), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


class _ProviderMetrics:
    """The provider-made metrics of one named queue."""

    __slots__ = ("adds", "depth", "latency", "longest_running", "retries", "unfinished", "work_duration")

    def __init__(self, provider: MetricsProvider, name: str) -> None:
        self.depth = provider.new_depth_metric(name)
        self.adds = provider.new_adds_metric(name)
        self.latency = provider.new_latency_metric(name)
        self.work_duration = provider.new_work_duration_metric(name)
        self.unfinished = provider.new_unfinished_work_seconds_metric(name)
        self.longest_running = provider.new_longest_running_processor_seconds_metric(name)
        self.retries = provider.new_retries_metric(name)


class QueueMetrics:
    """The metrics of one queue (upstream `defaultQueueMetrics` + `defaultRetryMetrics`).

    The queue calls `add` for every non-duplicate add, `get` when it hands an item out, `done`
    when the item is finished and `retry` on every `add_after`. `processing` is the queue's own
    item -> start-time map (shared, not copied), from which the unfinished-work figures come.
    """

    __slots__ = (
        "_add_times",
        "_clock",
        "_processing",
        "_provider",
        "adds",
        "depth",
        "queue_duration",
        "retries",
        "work_duration",
    )

    def __init__(
        self,
        clock: Clock,
        processing: dict[Any, float],
        name: str | None = None,
        provider: MetricsProvider | None = None,
    ) -> None:
        self._clock = clock
        self._processing = processing
        # item -> time of the add that made it dirty; kept until the item is handed out (upstream
        # `addTimes`: a second add before the get does not reset it).
        self._add_times: dict[Any, float] = {}
        self._provider = (
            _ProviderMetrics(provider, name)
            if name and provider is not None and not isinstance(provider, NoopMetricsProvider)
            else None
        )
        self.depth = 0
        self.adds = 0
        self.retries = 0
        self.queue_duration = Histogram()
        self.work_duration = Histogram()

    def add(self, item: Hashable) -> None:
        self.adds += 1
        self.depth += 1
        add_times = self._add_times
        if item not in add_times:
            add_times[item] = self._clock.now
        provider = self._provider
        if provider is not None:
            provider.adds.inc()
            provider.depth.inc()

    def get(self, item: Hashable, now: float) -> None:
        self.depth -= 1
        added = self._add_times.pop(item, None)
        provider = self._provider
        if added is not None:
            self.queue_duration.observe(now - added)
            if provider is not None:
                provider.latency.observe(now - added)
        if provider is not None:
            provider.depth.dec()
            self.update_unfinished_work()

    def done(self, started: float, now: float) -> None:
        self.work_duration.observe(now - started)
        provider = self._provider
        if provider is not None:
            provider.work_duration.observe(now - started)
            self.update_unfinished_work()

    def retry(self) -> None:
        self.retries += 1
        provider = self._provider
        if provider is not None:
            provider.retries.inc()

    def unfinished_work_seconds(self) -> float:
        """Sum of the ages of the items being processed (upstream's gauge of the same name)."""
        now = self._clock.now
        return sum(now - started for started in self._processing.values())

    def longest_running_processor_seconds(self) -> float:
        """Age of the oldest item being processed, 0 when none is."""
        now = self._clock.now
        return max((now - started for started in self._processing.values()), default=0.0)

    def update_unfinished_work(self) -> None:
        """Push the two unfinished-work gauges to the provider.

        Upstream refreshes them from a 500 ms ticker; a perpetual ticker would keep the kernel
        busy forever, so the queue refreshes them on every get and done instead, and a host that
        scrapes between those calls this first.
        """
        provider = self._provider
        if provider is not None:
            provider.unfinished.set(self.unfinished_work_seconds())
            provider.longest_running.set(self.longest_running_processor_seconds())


class PrometheusMetricsProvider:
    """Upstream's workqueue metrics (component-base `metrics/prometheus/workqueue`) in a
    prometheus_client registry: `workqueue_depth`, `workqueue_adds_total`,
    `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
    `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds`,
    `workqueue_retries_total`, each labelled with the queue `name`.

    One provider registers the families once; queues with the same name share their children.
    """

    def __init__(self, registry: Any) -> None:
        from prometheus_client import Counter, Gauge
        from prometheus_client import Histogram as PromHistogram

        label = ["name"]
        self._depth = Gauge("workqueue_depth", "Current depth of workqueue", label, registry=registry)
        self._adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", label, registry=registry
        )
        self._latency = PromHistogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            label,
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self._work_duration = PromHistogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            label,
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self._unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
            "threads by observing the rate at which this increases.",
            label,
            registry=registry,
        )
        self._longest_running = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            label,
            registry=registry,
        )
        self._retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            label,
            registry=registry,
        )

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self._depth.labels(name=name)

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self._adds.labels(name=name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self._latency.labels(name=name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self._work_duration.labels(name=name)

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._unfinished.labels(name=name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._longest_running.labels(name=name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self._retries.labels(name=name)

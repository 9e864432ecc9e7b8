"""client-go's `util/workqueue` on the virtual clock: the queue every controller worker pulls keys
from, its delayed and rate-limited retries, and its metrics.

Three layers, each adding one capability to the one below (spec §2):
`Queue` (fair, stingy, deduplicating FIFO) → `DelayingQueue` (`add_after`) →
`RateLimitingQueue` (`add_rate_limited`, `forget`, `num_requeues` through a `RateLimiter`).
"""

from __future__ import annotations

from controlplane.workqueue.default_rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from controlplane.workqueue.delaying_queue import DelayingQueue
from controlplane.workqueue.metrics import (
    DURATION_BUCKETS,
    Histogram,
    MetricsProvider,
    NoopMetricsProvider,
    PrometheusMetricsProvider,
    QueueMetrics,
)
from controlplane.workqueue.queue import Queue
from controlplane.workqueue.rate_limiting_queue import RateLimitingQueue

__all__ = [
    "DURATION_BUCKETS",
    "BucketRateLimiter",
    "DelayingQueue",
    "Histogram",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "MetricsProvider",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "Queue",
    "QueueMetrics",
    "RateLimiter",
    "RateLimitingQueue",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]

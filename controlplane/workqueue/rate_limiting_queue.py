"""The rate-limiting queue (client-go `util/workqueue/rate_limiting_queue.go`, spec §2.3): a
`DelayingQueue` whose retries are paced by a `RateLimiter`.

Guarantees
----------
* `add_rate_limited(x)` is exactly `add_after(x, limiter.when(x))`: the limiter counts the
  failure even if the queue is shutting down (upstream asks the limiter first), and the retry
  metric is counted like any `add_after`.
* `forget(x)` only clears the limiter's history of `x`; it does not call `done`.
* The default limiter is `default_controller_rate_limiter(clock)`, the one the ReplicaSet
  controller uses.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from controlplane.kernel import vtime
from controlplane.trace import Clock, Trace
from controlplane.workqueue.default_rate_limiters import (
    RateLimiter,
    default_controller_rate_limiter,
    next_delay,
    requeue_counts,
)
from controlplane.workqueue.delaying_queue import DelayingQueue
from controlplane.workqueue.metrics import MetricsProvider
from controlplane.workqueue.queue import T


class RateLimitingQueue(DelayingQueue[T]):
    """A `DelayingQueue` with `add_rate_limited`, `forget` and `num_requeues`.

    The caller's duty (upstream: "Remember to call Forget!"): call `forget(key)` when a key
    succeeds, or the limiter keeps counting its failures and its next retry waits longer.
    """

    __slots__ = ("rate_limiter",)

    def __init__(
        self,
        clock: Clock,
        rate_limiter: RateLimiter | None = None,
        name: str | None = None,
        *,
        trace: Trace | None = None,
        metrics_provider: MetricsProvider | None = None,
    ) -> None:
        super().__init__(clock, name, trace=trace, metrics_provider=metrics_provider)
        self.rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock)
        )

    def add_rate_limited(self, item: T) -> float | None:
        """Add `item` after the delay the rate limiter decides for it; returns that delay (None
        after shut down: nothing is added)."""
        self._promote()
        delay = vtime(self.rate_limiter.when(item))  # an exact virtual duration (kernel.vtime)
        if self._shutting_down:
            return None
        cause = None
        if self._trace.enabled:
            cause = self._trace.emit(
                "queue.add_rate_limited",
                queue=self.name,
                key=item,
                delay=delay,
                requeues=self.rate_limiter.num_requeues(item),
            )
        self._add_after(item, delay, cause)
        return delay

    def forget(self, item: T) -> None:
        """The item is finished being retried (it succeeded, or the caller gave up)."""
        self._promote()
        self.rate_limiter.forget(item)
        if self._trace.enabled:
            self._trace.emit("queue.forget", queue=self.name, key=item)

    def num_requeues(self, item: T) -> int:
        """How many failures the limiter has counted for `item` since it was last forgotten."""
        self._promote()
        return self.rate_limiter.num_requeues(item)

    def _requeues_snapshot(self) -> dict[Hashable, int]:
        counts = requeue_counts(self.rate_limiter)
        return {item: counts[item] for item in sorted(counts, key=str)}

    def snapshot(self) -> dict[str, Any]:
        """Adds `backoff`: for each key with requeues, the delay its next failure would get."""
        snap = DelayingQueue.snapshot(self)
        snap["backoff"] = {item: next_delay(self.rate_limiter, item) for item in snap["requeues"]}
        return snap

"""Retry policies (client-go `util/workqueue/default_rate_limiters.go`, spec §2.4).

A rate limiter answers `when(item)`: how many seconds to wait before retrying `item`, counting
the failure as it does; `forget(item)` clears the item's history; `num_requeues(item)` reports
it. `requeue_counts()` and `next_delay(item)` (ctrlscope's additions, for the UI) list every
item with a non-zero count and tell the delay the item's next failure would get, without
counting it (pure reads: looking never changes what the limiter will answer).

Guarantees
----------
* Same numbers as upstream, to the nanosecond: delays are computed in integer nanoseconds as Go's
  `time.Duration` is, then returned as float seconds (so the 18th exponential failure is exactly
  `655.36`, not `655.3600000000001`).
* `BucketRateLimiter` is golang.org/x/time/rate's `Reserve().Delay()` on the virtual clock: the
  bucket starts full, every call takes one token whatever the item, tokens may go negative and
  the delay is the deficit divided by the rate.
* `MaxOfRateLimiter.when` calls every limiter, so every side effect happens.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Protocol

from controlplane.trace import Clock

_NS = 1_000_000_000
_MAX_INT64 = 2**63 - 1


def _to_ns(seconds: float) -> int:
    return round(seconds * _NS)


class RateLimiter(Protocol):
    """The retry policy of a `RateLimitingQueue` (upstream `RateLimiter`)."""

    def when(self, item: Hashable) -> float:
        """Seconds `item` should wait before its retry; counts the failure."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking `item` (it succeeded or was given up on)."""
        ...

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """`base * 2^failures`, capped at `max_delay`, per item."""

    __slots__ = ("_base_ns", "_failures", "_max_ns", "base_delay", "max_delay")

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._base_ns = _to_ns(base_delay)
        self._max_ns = _to_ns(max_delay)
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures
        exp = failures.get(item, 0)
        failures[item] = exp + 1
        return self._delay(exp)

    def next_delay(self, item: Hashable) -> float:
        return self._delay(self._failures.get(item, 0))

    def _delay(self, exp: int) -> float:
        # Upstream guards the float product against overflowing int64 and returns max_delay;
        # 2^63 ns is 292 years, far above any max_delay, so a large exponent is simply max.
        if exp >= 63:
            return self.max_delay if self._base_ns > 0 else 0.0
        backoff = self._base_ns << exp
        if backoff > _MAX_INT64 or backoff > self._max_ns:
            return self.max_delay
        return backoff / _NS

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def requeue_counts(self) -> dict[Hashable, int]:
        return dict(self._failures)


class ItemFastSlowRateLimiter:
    """`fast_delay` for the first `max_fast_attempts` failures of an item, `slow_delay` after."""

    __slots__ = ("_failures", "fast_delay", "max_fast_attempts", "slow_delay")

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        n = self._failures.get(item, 0) + 1
        self._failures[item] = n
        return self.fast_delay if n <= self.max_fast_attempts else self.slow_delay

    def next_delay(self, item: Hashable) -> float:
        n = self._failures.get(item, 0) + 1
        return self.fast_delay if n <= self.max_fast_attempts else self.slow_delay

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def requeue_counts(self) -> dict[Hashable, int]:
        return dict(self._failures)


class BucketRateLimiter:
    """One token bucket shared by all items: `qps` tokens per second, at most `burst`.

    Overall retry pacing, not per item: it never counts requeues and `forget` does nothing.
    """

    __slots__ = ("_clock", "_last", "_tokens", "burst", "qps")

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        self.qps = qps
        self.burst = burst
        self._clock = clock
        # Starts full (x/time/rate: a fresh limiter has had "forever" to fill up).
        self._tokens = float(burst)
        self._last = clock.now

    def when(self, item: Hashable) -> float:
        delay, tokens = self._reserve()
        self._tokens = tokens
        if self.qps > 0 and self.qps != math.inf and self.burst >= 1:
            self._last = self._clock.now
        return delay

    def next_delay(self, item: Hashable) -> float:
        return self._reserve()[0]

    def _reserve(self) -> tuple[float, float]:
        """(delay, tokens left) of a reservation made now; changes nothing."""
        qps = self.qps
        if qps == math.inf:
            return 0.0, self._tokens
        if qps <= 0:
            # rate.Limit(0): only the initial burst is ever granted; afterwards the reservation
            # is not OK and Delay() is InfDuration.
            if self._tokens >= 1:
                return 0.0, self._tokens - 1
            return math.inf, self._tokens
        if self.burst < 1:
            return math.inf, self._tokens  # reserving more than the burst is never OK
        now = self._clock.now
        last = self._last if self._last <= now else now
        tokens = min(self._tokens + (now - last) * qps, float(self.burst)) - 1
        if tokens >= 0:
            return 0.0, tokens
        # durationFromTokens truncates to whole nanoseconds.
        return int(-tokens / qps * _NS) / _NS, tokens

    def num_requeues(self, item: Hashable) -> int:
        return 0

    def forget(self, item: Hashable) -> None:
        pass

    def requeue_counts(self) -> dict[Hashable, int]:
        return {}


class MaxOfRateLimiter:
    """The worst case of several limiters. Every limiter's `when` is called."""

    __slots__ = ("limiters",)

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        worst = 0.0
        for limiter in self.limiters:
            delay = limiter.when(item)
            if delay > worst:
                worst = delay
        return worst

    def next_delay(self, item: Hashable) -> float:
        return max((next_delay(limiter, item) for limiter in self.limiters), default=0.0)

    def num_requeues(self, item: Hashable) -> int:
        return max((limiter.num_requeues(item) for limiter in self.limiters), default=0)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def requeue_counts(self) -> dict[Hashable, int]:
        counts: dict[Hashable, int] = {}
        for limiter in self.limiters:
            for item, n in requeue_counts(limiter).items():
                if n > counts.get(item, 0):
                    counts[item] = n
        return counts


class WithMaxWaitRateLimiter:
    """Another limiter's delay, capped at `max_delay`."""

    __slots__ = ("limiter", "max_delay")

    def __init__(self, limiter: RateLimiter, max_delay: float) -> None:
        self.limiter = limiter
        self.max_delay = max_delay

    def when(self, item: Hashable) -> float:
        delay = self.limiter.when(item)
        return self.max_delay if delay > self.max_delay else delay

    def next_delay(self, item: Hashable) -> float:
        return min(next_delay(self.limiter, item), self.max_delay)

    def num_requeues(self, item: Hashable) -> int:
        return self.limiter.num_requeues(item)

    def forget(self, item: Hashable) -> None:
        self.limiter.forget(item)

    def requeue_counts(self) -> dict[Hashable, int]:
        return requeue_counts(self.limiter)


def requeue_counts(limiter: RateLimiter) -> dict[Hashable, int]:
    """Items with a non-zero requeue count; {} for a foreign limiter that cannot list them."""
    method = getattr(limiter, "requeue_counts", None)
    if method is None:
        return {}
    return {item: n for item, n in method().items() if n}


def next_delay(limiter: RateLimiter, item: Hashable) -> float:
    """The delay `limiter.when(item)` would return now, without counting a failure; 0.0 for a
    foreign limiter that cannot tell."""
    method = getattr(limiter, "next_delay", None)
    return float(method(item)) if method is not None else 0.0


def default_controller_rate_limiter(clock: Clock) -> MaxOfRateLimiter:
    """Upstream `DefaultControllerRateLimiter`: per item 5 ms doubling up to 1000 s, overall
    10 retries per second with a burst of 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock),
    )


def default_item_based_rate_limiter() -> ItemExponentialFailureRateLimiter:
    """Upstream `DefaultItemBasedRateLimiter`: 1 ms doubling up to 1000 s (not used by RS)."""
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)

"""Rate limiters (spec §2.4), with upstream's exact numbers."""

from __future__ import annotations

import math

import pytest

from controlplane.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)

EXPONENTIAL_DELAYS = [
    0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56,
    5.12, 10.24, 20.48, 40.96, 81.92, 163.84, 327.68, 655.36,
]  # fmt: skip


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now


class CountingLimiter:
    """A limiter that records every call and answers a fixed delay."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = []

    def when(self, item):
        self.calls.append(("when", item))
        return self.delay

    def forget(self, item):
        self.calls.append(("forget", item))

    def num_requeues(self, item):
        return len([c for c in self.calls if c == ("when", item)])


# -- ItemExponentialFailureRateLimiter -------------------------------------------------------
def test_exponential_doubles_from_5ms_to_655_36s_at_the_18th_failure():
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    assert [limiter.when("a") for _ in range(18)] == EXPONENTIAL_DELAYS


def test_exponential_caps_at_1000s_from_the_19th_failure():
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    for _ in range(18):
        limiter.when("a")
    assert limiter.when("a") == 1000.0
    assert limiter.when("a") == 1000.0


def test_exponential_stays_at_max_for_huge_failure_counts():
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [limiter.when("a") for _ in range(2000)]
    assert delays[-1] == 1000.0


def test_exponential_counts_failures_per_item():
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == 0.001
    assert limiter.num_requeues("a") == 2
    assert limiter.num_requeues("b") == 1


def test_exponential_forget_restarts_the_backoff():
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    limiter.when("a")
    limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.001


def test_default_item_based_limiter_starts_at_1ms():
    limiter = default_item_based_rate_limiter()
    assert [limiter.when("a") for _ in range(3)] == [0.001, 0.002, 0.004]


# -- ItemFastSlowRateLimiter -----------------------------------------------------------------
def test_fast_slow_is_fast_for_max_fast_attempts_then_slow():
    limiter = ItemFastSlowRateLimiter(0.005, 10.0, 3)
    assert [limiter.when("a") for _ in range(5)] == [0.005, 0.005, 0.005, 10.0, 10.0]
    assert limiter.num_requeues("a") == 5


def test_fast_slow_forget_makes_the_item_fast_again():
    limiter = ItemFastSlowRateLimiter(0.005, 10.0, 1)
    limiter.when("a")
    limiter.when("a")
    limiter.forget("a")
    assert limiter.when("a") == 0.005
    assert limiter.when("b") == 0.005


# -- BucketRateLimiter -----------------------------------------------------------------------
def test_bucket_starts_full_and_grants_burst_calls_without_delay():
    limiter = BucketRateLimiter(10.0, 100, FakeClock())
    assert {limiter.when(f"k{i}") for i in range(100)} == {0.0}


def test_bucket_101st_call_in_one_instant_waits_0_1s_and_102nd_0_2s():
    limiter = BucketRateLimiter(10.0, 100, FakeClock())
    for i in range(100):
        limiter.when(f"k{i}")
    assert limiter.when("k100") == 0.1
    assert limiter.when("k101") == 0.2


def test_bucket_is_shared_by_all_items():
    limiter = BucketRateLimiter(1.0, 1, FakeClock())
    assert limiter.when("a") == 0.0
    assert limiter.when("b") == 1.0


def test_bucket_refills_as_time_passes():
    clock = FakeClock()
    limiter = BucketRateLimiter(10.0, 100, clock)
    for i in range(102):
        limiter.when(f"k{i}")
    clock.now = 0.5  # 5 tokens back: -2 + 5 = 3 left
    assert [limiter.when("x") for _ in range(4)] == [0.0, 0.0, 0.0, 0.1]


def test_bucket_refill_is_capped_at_burst():
    clock = FakeClock()
    limiter = BucketRateLimiter(10.0, 100, clock)
    for i in range(100):
        limiter.when(f"k{i}")
    clock.now = 1000.0
    assert {limiter.when(f"k{i}") for i in range(100)} == {0.0}
    assert limiter.when("one-too-many") == 0.1


def test_bucket_neither_counts_nor_forgets():
    limiter = BucketRateLimiter(10.0, 100, FakeClock())
    limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_bucket_with_infinite_rate_never_waits():
    limiter = BucketRateLimiter(math.inf, 0, FakeClock())
    assert limiter.when("a") == 0.0


# -- MaxOfRateLimiter and WithMaxWaitRateLimiter ---------------------------------------------
def test_max_of_calls_every_limiter_and_returns_the_largest_delay():
    small, large = CountingLimiter(0.1), CountingLimiter(2.0)
    limiter = MaxOfRateLimiter(large, small)
    assert limiter.when("a") == 2.0
    assert small.calls == [("when", "a")]
    assert large.calls == [("when", "a")]


def test_max_of_reports_the_largest_requeue_count_and_forgets_in_all():
    a = ItemExponentialFailureRateLimiter(0.001, 1.0)
    b = ItemFastSlowRateLimiter(0.001, 1.0, 5)
    limiter = MaxOfRateLimiter(a, b)
    limiter.when("x")
    b.when("x")
    assert limiter.num_requeues("x") == 2
    limiter.forget("x")
    assert (a.num_requeues("x"), b.num_requeues("x")) == (0, 0)


def test_with_max_wait_caps_the_delay():
    limiter = WithMaxWaitRateLimiter(ItemExponentialFailureRateLimiter(1.0, 1000.0), 3.0)
    assert [limiter.when("a") for _ in range(4)] == [1.0, 2.0, 3.0, 3.0]


def test_with_max_wait_delegates_requeues_and_forget():
    inner = ItemExponentialFailureRateLimiter(1.0, 1000.0)
    limiter = WithMaxWaitRateLimiter(inner, 3.0)
    limiter.when("a")
    assert limiter.num_requeues("a") == 1
    limiter.forget("a")
    assert inner.num_requeues("a") == 0


# -- default_controller_rate_limiter ---------------------------------------------------------
def test_default_controller_limiter_follows_the_item_backoff_while_the_bucket_has_tokens():
    limiter = default_controller_rate_limiter(FakeClock())
    assert [limiter.when("a") for _ in range(18)] == EXPONENTIAL_DELAYS


def test_default_controller_limiter_waits_for_the_bucket_after_100_retries_in_one_instant():
    limiter = default_controller_rate_limiter(FakeClock())
    assert {limiter.when(f"k{i}") for i in range(100)} == {0.005}
    assert limiter.when("k100") == 0.1
    assert limiter.when("k101") == 0.2


def test_default_controller_limiter_returns_whichever_of_bucket_and_item_backoff_is_longer():
    limiter = default_controller_rate_limiter(FakeClock())
    for i in range(110):
        limiter.when(f"k{i}")  # the bucket is 10 tokens in debt
    delays = [limiter.when("slow") for _ in range(10)]
    assert delays[8] == 1.9  # bucket (19 tokens short) beats the item's 1.28 s
    assert delays[9] == 2.56  # the item's 10th failure beats the bucket's 2.0 s
    assert limiter.num_requeues("slow") == 10


def test_default_controller_limiter_forget_resets_the_item_not_the_bucket():
    limiter = default_controller_rate_limiter(FakeClock())
    for i in range(100):
        limiter.when(f"k{i}")
    limiter.forget("k0")
    assert limiter.num_requeues("k0") == 0
    assert limiter.when("k0") == 0.1


@pytest.mark.parametrize(
    "make",
    [
        lambda: ItemExponentialFailureRateLimiter(0.005, 1000.0),
        lambda: ItemFastSlowRateLimiter(0.005, 1.0, 2),
        lambda: default_controller_rate_limiter(FakeClock()),
        lambda: WithMaxWaitRateLimiter(default_item_based_rate_limiter(), 1.0),
    ],
)
def test_requeue_counts_lists_items_with_failures(make):
    limiter = make()
    limiter.when("b")
    limiter.when("a")
    limiter.when("a")
    assert limiter.requeue_counts() == {"b": 1, "a": 2}


def test_next_delay_tells_the_next_failures_delay_without_counting_it():
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    for _ in range(3):
        limiter.when("k")
    assert limiter.next_delay("k") == 0.04
    assert limiter.next_delay("k") == 0.04
    assert limiter.num_requeues("k") == 3
    assert limiter.when("k") == 0.04


def test_next_delay_of_a_spent_bucket_is_its_deficit():
    clock = FakeClock()
    bucket = BucketRateLimiter(10.0, 1, clock)
    bucket.when("a")
    assert bucket.next_delay("b") == 0.1
    assert bucket.when("b") == 0.1

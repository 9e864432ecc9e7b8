"""RateLimitingQueue (spec §2.3): retries paced by its rate limiter."""

from __future__ import annotations

from controlplane.kernel import Kernel
from controlplane.trace import Trace
from controlplane.workqueue import ItemFastSlowRateLimiter, RateLimitingQueue


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now


def test_add_rate_limited_waits_the_limiters_delay():
    clock = FakeClock()
    q = RateLimitingQueue(clock, ItemFastSlowRateLimiter(1.0, 10.0, 1))
    q.add_rate_limited("a")
    clock.now = 0.999
    assert len(q) == 0
    clock.now = 1.0
    assert q.get() == ("a", False)


def test_default_limiter_retries_a_failing_key_after_5ms_then_10ms():
    kernel = Kernel()
    q = RateLimitingQueue(kernel)
    seen = []
    q.add("a")

    async def worker():
        for _ in range(3):
            key, _ = await q.get_async()
            seen.append(kernel.now)
            q.add_rate_limited(key)  # the sync failed
            q.done(key)

    kernel.spawn(worker(), "w1")
    kernel.run()
    assert seen == [0.0, 0.005, 0.015]


def test_num_requeues_counts_failures_until_forget():
    q = RateLimitingQueue(FakeClock())
    q.add_rate_limited("a")
    q.add_rate_limited("a")
    assert q.num_requeues("a") == 2
    q.forget("a")
    assert q.num_requeues("a") == 0


def test_forget_does_not_call_done():
    q = RateLimitingQueue(FakeClock())
    q.add("a")
    q.get()
    q.forget("a")
    q.add("a")
    assert len(q) == 0


def test_add_rate_limited_counts_a_retry():
    q = RateLimitingQueue(FakeClock())
    q.add_rate_limited("a")
    assert q.metrics.retries == 1


def test_add_rate_limited_after_shut_down_still_asks_the_limiter_but_adds_nothing():
    clock = FakeClock()
    q = RateLimitingQueue(clock)
    q.shut_down()
    q.add_rate_limited("a")
    clock.now = 1.0
    assert q.num_requeues("a") == 1
    assert q.get() == (None, True)
    assert q.metrics.retries == 0


def test_snapshot_lists_requeues_from_the_limiter_sorted_by_key():
    q = RateLimitingQueue(FakeClock(), name="rs")
    for key in ["ns/b", "ns/a", "ns/b"]:
        q.add_rate_limited(key)
    q.add_rate_limited("ns/c")
    q.forget("ns/c")
    snap = q.snapshot()
    assert snap["requeues"] == {"ns/a": 1, "ns/b": 2}
    assert [w["key"] for w in snap["waiting"]] == ["ns/b", "ns/a", "ns/c"]
    assert snap["retries"] == 4


def test_trace_records_add_rate_limited_with_delay_and_requeues_and_forget():
    clock = FakeClock()
    trace = Trace(clock)
    records = []
    trace.subscribe(records.append)
    q = RateLimitingQueue(clock, name="rs", trace=trace)
    q.add_rate_limited("a")
    q.add_rate_limited("a")
    q.forget("a")
    assert records[0]["kind"] == "queue.add_rate_limited"
    assert [(r["kind"], r.get("delay"), r.get("requeues")) for r in records] == [
        ("queue.add_rate_limited", 0.005, 1),
        ("queue.add_rate_limited", 0.01, 2),
        ("queue.forget", None, None),
    ]
    assert {r["queue"] for r in records} == {"rs"}

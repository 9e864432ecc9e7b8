"""The delaying contract (spec §2.2), run against DelayingQueue and RateLimitingQueue."""

from __future__ import annotations

import pytest

from controlplane.kernel import Kernel
from controlplane.trace import Trace
from controlplane.workqueue import DelayingQueue, RateLimitingQueue


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now


IMPLEMENTATIONS = [DelayingQueue, RateLimitingQueue]


@pytest.fixture(params=IMPLEMENTATIONS, ids=lambda cls: cls.__name__)
def make_queue(request):
    """Builds the implementation under test; every layer takes the same keyword arguments."""
    cls = request.param
    return lambda clock, name=None, trace=None: cls(clock, name=name, trace=trace)


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def q(make_queue, clock):
    return make_queue(clock, "test")


def drain(q):
    out = []
    while len(q):
        out.append(q.get()[0])
    return out


def test_add_after_holds_the_item_until_its_ready_time(q, clock):
    q.add_after("a", 1.0)
    clock.now = 0.999
    assert len(q) == 0
    clock.now = 1.0
    assert len(q) == 1
    assert q.get() == ("a", False)


def test_due_items_are_promoted_lazily_by_get(q, clock):
    q.add_after("a", 1.0)
    clock.now = 2.0
    assert q.get() == ("a", False)


def test_delayed_items_become_ready_in_ready_time_order(q, clock):
    q.add_after("c", 3.0)
    q.add_after("a", 1.0)
    q.add_after("b", 2.0)
    clock.now = 5.0
    assert drain(q) == ["a", "b", "c"]


def test_equal_ready_times_keep_scheduling_order(q, clock):
    for key in ["b", "c", "a"]:
        q.add_after(key, 1.0)
    clock.now = 1.0
    assert drain(q) == ["b", "c", "a"]


def test_an_earlier_add_after_wins(q, clock):
    q.add_after("a", 5.0)
    q.add_after("a", 1.0)
    clock.now = 1.0
    assert drain(q) == ["a"]
    clock.now = 5.0
    assert len(q) == 0


def test_a_later_add_after_does_not_push_an_item_back(q, clock):
    q.add_after("a", 1.0)
    q.add_after("a", 5.0)
    clock.now = 1.0
    assert drain(q) == ["a"]
    clock.now = 5.0
    assert len(q) == 0


def test_delayed_items_are_added_after_items_already_queued(q, clock):
    q.add_after("late", 1.0)
    q.add("now")
    clock.now = 1.0
    assert drain(q) == ["now", "late"]


def test_a_due_delayed_item_is_queued_before_a_later_plain_add(q, clock):
    q.add_after("delayed", 1.0)
    clock.now = 1.0
    q.add("plain")
    assert drain(q) == ["delayed", "plain"]


def test_a_waiting_item_that_is_also_queued_is_deduplicated_when_it_fires(q, clock):
    q.add("a")
    q.add_after("a", 1.0)
    clock.now = 1.0
    assert drain(q) == ["a"]


def test_a_waiting_item_fires_again_after_it_was_processed(q, clock):
    q.add("a")
    q.add_after("a", 1.0)
    q.get()
    q.done("a")
    clock.now = 1.0
    assert drain(q) == ["a"]


def test_add_after_zero_adds_now_and_still_counts_a_retry(q):
    q.add_after("a", 0)
    q.add_after("b", -1.0)
    assert drain(q) == ["a", "b"]
    assert q.metrics.retries == 2


def test_every_add_after_counts_a_retry(q):
    q.add_after("a", 1.0)
    q.add_after("a", 2.0)
    assert q.metrics.retries == 2
    assert q.metrics.adds == 0


def test_add_after_shut_down_is_ignored(q, clock):
    q.shut_down()
    q.add_after("a", 0)
    q.add_after("b", 1.0)
    clock.now = 1.0
    assert q.get() == (None, True)
    assert q.metrics.retries == 0


def test_shut_down_discards_waiting_items(q, clock):
    q.add_after("a", 1.0)
    q.shut_down()
    clock.now = 1.0
    assert q.get() == (None, True)
    assert q.snapshot()["waiting"] == []


def test_snapshot_lists_waiting_items_by_ready_time(q, clock):
    clock.now = 10.0
    q.add_after("b", 2.0)
    q.add_after("a", 1.0)
    q.add_after("b", 0.5)
    assert q.snapshot()["waiting"] == [{"key": "b", "readyAt": 10.5}, {"key": "a", "readyAt": 11.0}]


def test_trace_records_add_after_with_its_delay(make_queue, clock):
    trace = Trace(clock)
    records = []
    trace.subscribe(records.append)
    q = make_queue(clock, "rs", trace)
    q.add_after("a", 2.0)
    clock.now = 2.0
    q.get()
    assert [(r["kind"], r["key"], r.get("delay"), r["time"]) for r in records] == [
        ("queue.add_after", "a", 2.0, 0.0),
        ("queue.add", "a", None, 2.0),
        ("queue.get", "a", None, 2.0),
    ]


# -- with a Kernel: one timer wakes a parked worker on time ----------------------------------
def test_a_parked_worker_is_woken_at_the_ready_time(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    got = []

    async def worker():
        item, _ = await q.get_async()
        got.append((kernel.now, item))

    kernel.spawn(worker(), "w1")
    q.add_after("a", 2.5)
    kernel.run()
    assert got == [(2.5, "a")]


def test_the_kernel_timer_follows_an_earlier_head(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    q.add_after("a", 5.0)
    assert kernel.peek() == 5.0
    q.add_after("b", 2.0)
    assert kernel.peek() == 2.0
    q.add_after("a", 1.0)
    assert kernel.peek() == 1.0


def test_the_kernel_timer_rearms_for_the_next_item(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    q.add_after("a", 1.0)
    q.add_after("b", 3.0)
    kernel.advance(1.0)
    assert len(q) == 1
    assert kernel.peek() == 3.0


def test_no_timer_remains_once_nothing_waits(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    q.add_after("a", 1.0)
    q.shut_down()
    assert kernel.peek() is None


def test_snapshot_is_a_pure_read_and_lists_a_due_item_as_waiting(q, clock):
    q.add_after("a", 1.0)
    clock.now = 2.0
    snap = q.snapshot()
    assert snap["queue"] == []
    assert snap["waiting"] == [{"key": "a", "readyAt": 1.0}]
    assert len(q) == 1  # the next real operation promotes it

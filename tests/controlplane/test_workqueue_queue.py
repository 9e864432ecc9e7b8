"""The basic queue contract (spec §2.1), run against every queue layer: Queue, DelayingQueue and
RateLimitingQueue must all behave as the basic queue does for add/get/done/shut down."""

from __future__ import annotations

import pytest

from controlplane.kernel import Kernel
from controlplane.trace import Trace
from controlplane.workqueue import DelayingQueue, Queue, RateLimitingQueue


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now


IMPLEMENTATIONS = [Queue, DelayingQueue, RateLimitingQueue]


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
    """Get every queued item (without calling done)."""
    out = []
    while len(q):
        out.append(q.get()[0])
    return out


def test_items_are_handed_out_in_add_order(q):
    for key in ["a", "b", "c"]:
        q.add(key)
    assert drain(q) == ["a", "b", "c"]


def test_adding_a_queued_item_again_neither_duplicates_nor_reorders_it(q):
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert drain(q) == ["a", "b"]


def test_get_returns_item_and_false(q):
    q.add("a")
    assert q.get() == ("a", False)


def test_len_excludes_processing_items(q):
    q.add("a")
    q.add("b")
    q.get()
    assert len(q) == 1


def test_add_while_processing_is_deferred_until_done(q):
    q.add("a")
    q.get()
    q.add("a")
    assert len(q) == 0
    q.done("a")
    assert len(q) == 1
    assert q.get() == ("a", False)


def test_done_requeues_a_deferred_item_at_the_back(q):
    q.add("a")
    q.get()
    q.add("a")
    q.add("b")
    q.add("c")
    q.done("a")
    assert drain(q) == ["b", "c", "a"]


def test_an_item_is_never_handed_to_two_workers_at_once(q):
    q.add("a")
    q.get()
    q.add("a")
    q.add("a")
    assert len(q) == 0


def test_done_without_a_pending_add_does_not_requeue(q):
    q.add("a")
    q.get()
    q.done("a")
    assert len(q) == 0


def test_done_for_an_item_not_processing_does_nothing(q):
    q.add("a")
    q.done("a")
    q.done("zzz")
    assert drain(q) == ["a"]


def test_get_on_an_empty_live_queue_raises(q):
    with pytest.raises(RuntimeError, match="empty"):
        q.get()


def test_get_drains_queued_items_after_shut_down_then_reports_shutdown(q):
    q.add("a")
    q.add("b")
    q.shut_down()
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    assert q.get() == (None, True)


def test_adds_after_shut_down_are_ignored(q):
    q.shut_down()
    q.add("a")
    assert len(q) == 0
    assert q.metrics.adds == 0


def test_done_after_shut_down_still_requeues_a_dirty_item(q):
    q.add("a")
    q.get()
    q.add("a")
    q.shut_down()
    q.done("a")
    assert q.get() == ("a", False)
    assert q.get() == (None, True)


def test_shutting_down_is_false_until_shut_down(q):
    assert q.shutting_down() is False
    q.shut_down()
    assert q.shutting_down() is True


def test_shut_down_with_drain_also_shuts_down(q):
    q.shut_down_with_drain()
    assert q.shutting_down() is True


def test_shut_down_with_drain_without_a_kernel_returns_none(q):
    assert q.shut_down_with_drain() is None


# -- metrics ---------------------------------------------------------------------------------
def test_depth_counts_every_non_duplicate_add_even_while_processing(q):
    q.add("a")
    q.get()
    assert q.metrics.depth == 0
    q.add("a")
    assert q.metrics.depth == 1
    assert len(q) == 0


def test_adds_count_non_duplicate_adds_only(q):
    q.add("a")
    q.add("a")
    q.add("b")
    assert q.metrics.adds == 2


def test_queue_duration_is_observed_from_first_add_to_get(q, clock):
    q.add("a")
    clock.now = 1.0
    q.add("a")
    clock.now = 3.0
    q.get()
    assert q.metrics.queue_duration.count == 1
    assert q.metrics.queue_duration.sum == 3.0


def test_work_duration_is_observed_from_get_to_done(q, clock):
    q.add("a")
    clock.now = 1.0
    q.get()
    clock.now = 1.5
    q.done("a")
    assert q.metrics.work_duration.count == 1
    assert q.metrics.work_duration.sum == 0.5


def test_unfinished_work_is_the_sum_of_processing_ages_and_longest_the_oldest(q, clock):
    q.add("a")
    q.add("b")
    q.get()
    clock.now = 2.0
    q.get()
    clock.now = 5.0
    assert q.metrics.unfinished_work_seconds() == 8.0
    assert q.metrics.longest_running_processor_seconds() == 5.0


def test_unfinished_work_is_zero_when_nothing_is_processing(q, clock):
    clock.now = 7.0
    assert q.metrics.unfinished_work_seconds() == 0.0
    assert q.metrics.longest_running_processor_seconds() == 0.0


def test_a_queue_without_clock_measures_zero_durations():
    q = Queue()
    q.add("a")
    q.get()
    q.done("a")
    assert q.metrics.queue_duration.sum == 0.0
    assert q.metrics.work_duration.sum == 0.0


# -- snapshot and trace ----------------------------------------------------------------------
def test_snapshot_shows_queue_dirty_and_processing_in_order(q, clock):
    q.add("b")
    q.add("a")
    q.add("c")
    clock.now = 1.0
    q.get()
    q.add("b")
    snap = q.snapshot()
    assert snap["name"] == "test"
    assert snap["queue"] == ["a", "c"]
    assert snap["dirty"] == ["a", "b", "c"]
    assert snap["processing"] == [{"key": "b", "startedAt": 1.0}]
    assert snap["waiting"] == []
    assert snap["requeues"] == {}
    assert (snap["depth"], snap["adds"], snap["retries"]) == (3, 4, 0)


def test_trace_records_non_duplicate_adds_gets_and_dones(make_queue, clock):
    trace = Trace(clock)
    records = []
    trace.subscribe(records.append)
    q = make_queue(clock, "rs", trace)
    q.add("a")
    q.add("a")
    q.get(worker="w1")
    q.done("a", worker="w1")
    assert [(r["kind"], r["queue"], r["key"], r.get("worker")) for r in records] == [
        ("queue.add", "rs", "a", None),
        ("queue.get", "rs", "a", "w1"),
        ("queue.done", "rs", "a", "w1"),
    ]


# -- workers waiting through the kernel -------------------------------------------------------
def spawn_worker(kernel, q, name, log):
    async def worker():
        while True:
            item, shutdown = await q.get_async(worker=name)
            if shutdown:
                log.append((name, "exit"))
                return
            log.append((name, item))
            await kernel.sleep(1.0)  # the sync takes a while; meanwhile other workers get items
            q.done(item, worker=name)

    return kernel.spawn(worker(), name)


def test_get_async_wakes_one_waiter_per_added_item_in_waiting_order(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    log = []
    for name in ["w1", "w2", "w3"]:
        spawn_worker(kernel, q, name, log)
    kernel.advance(0)
    q.add("a")
    q.add("b")
    kernel.advance(0)
    assert log == [("w1", "a"), ("w2", "b")]


def test_get_async_returns_at_once_when_an_item_is_queued(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    q.add("a")
    log = []
    spawn_worker(kernel, q, "w1", log)
    kernel.step()
    assert log == [("w1", "a")]


def test_shut_down_wakes_every_waiting_worker(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    log = []
    for name in ["w1", "w2"]:
        spawn_worker(kernel, q, name, log)
    kernel.advance(0)
    q.shut_down()
    kernel.advance(0)
    assert log == [("w1", "exit"), ("w2", "exit")]


def test_a_cancelled_waiter_leaves_the_line(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    log = []
    first = spawn_worker(kernel, q, "w1", log)
    spawn_worker(kernel, q, "w2", log)
    kernel.advance(0)
    first.cancel()
    kernel.advance(0)
    q.add("a")
    kernel.advance(0)
    assert log == [("w2", "a")]


def test_get_async_without_a_kernel_raises(q):
    coro = q.get_async()
    with pytest.raises(RuntimeError, match="Kernel"):
        coro.send(None)


def test_shut_down_with_drain_resolves_when_processing_empties(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    q.add("a")
    q.add("b")
    q.get()
    fut = q.shut_down_with_drain()
    assert not fut.done()
    q.done("a")
    assert fut.done()
    assert q.get() == ("b", False)


def test_shut_down_with_drain_is_resolved_at_once_when_nothing_is_processing(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    assert q.shut_down_with_drain().done()


def test_shut_down_cancels_a_drain_wait(make_queue):
    kernel = Kernel()
    q = make_queue(kernel)
    q.add("a")
    q.get()
    fut = q.shut_down_with_drain()
    q.shut_down()
    assert fut.done()


def test_take_hands_out_a_queued_item_out_of_order():
    q = Queue()
    for item in ("a", "b", "c"):
        q.add(item)
    assert q.take("b") is True
    assert q.get() == ("a", False)
    assert q.get() == ("c", False)
    q.done("b")
    assert len(q) == 0


def test_take_refuses_an_item_that_is_not_queued():
    q = Queue()
    q.add("a")
    q.get()
    assert q.take("a") is False  # processing
    assert q.take("zzz") is False  # absent
    q.add("a")  # dirty while processing: still not queued
    assert q.take("a") is False

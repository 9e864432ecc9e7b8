from datetime import UTC, datetime

import pytest

from controlplane.kernel import EPOCH, Cancelled, Kernel, parse_rfc3339, rfc3339, vtime


def test_epoch_is_2026_new_year_utc():
    assert datetime(2026, 1, 1, tzinfo=UTC) == EPOCH


def test_rfc3339_uses_whole_seconds_and_round_trips():
    assert rfc3339(0) == "2026-01-01T00:00:00Z"
    assert rfc3339(61.9) == "2026-01-01T00:01:01Z"
    assert parse_rfc3339("2026-01-01T00:01:01Z") == 61.0


def test_callbacks_at_the_same_time_run_in_scheduling_order():
    k = Kernel()
    seen = []
    k.call_later(1, seen.append, "a")
    k.call_later(0.5, seen.append, "b")
    k.call_later(1, seen.append, "c")
    k.run()
    assert seen == ["b", "a", "c"]


def test_step_runs_exactly_one_callback_and_moves_the_clock():
    k = Kernel()
    seen = []
    k.call_later(2, seen.append, 1)
    k.call_later(3, seen.append, 2)
    assert k.step() is True
    assert seen == [1]
    assert k.now == 2
    assert k.step() is True
    assert k.step() is False


def test_advance_runs_callbacks_scheduled_meanwhile_each_at_its_own_time():
    k = Kernel()
    times = []

    def chain(n):
        times.append(k.now)
        if n:
            k.call_later(1, chain, n - 1)

    k.call_later(1, chain, 5)
    k.advance(3.5)
    assert times == [1, 2, 3]
    assert k.now == 3.5


def test_cancelled_timer_never_runs():
    k = Kernel()
    seen = []
    t = k.call_later(1, seen.append, "x")
    t.cancel()
    k.advance(5)
    assert seen == []
    assert not t.active


def test_task_sleeps_on_virtual_time():
    k = Kernel()
    log = []

    async def proc():
        log.append(k.now)
        await k.sleep(2.5)
        log.append(k.now)
        return "ok"

    task = k.spawn(proc(), name="p")
    k.run()
    assert log == [0.0, 2.5]
    assert task.result() == "ok"
    assert task.state == "done"


def test_task_awaits_a_future_resolved_later():
    k = Kernel()
    fut = k.create_future()

    async def proc():
        return await fut

    task = k.spawn(proc())
    k.call_later(4, fut.set_result, 42)
    k.run()
    assert task.result() == 42
    assert k.now == 4


def test_future_exception_is_raised_in_the_awaiting_task():
    k = Kernel()
    fut = k.create_future()

    async def proc():
        try:
            await fut
        except KeyError:
            return "caught"

    task = k.spawn(proc())
    k.call_later(1, fut.set_exception, KeyError("x"))
    k.run()
    assert task.result() == "caught"


def test_cancel_throws_cancelled_into_a_sleeping_task():
    k = Kernel()
    log = []

    async def proc():
        try:
            await k.sleep(100)
        except Cancelled:
            log.append(k.now)
            raise

    task = k.spawn(proc())
    k.advance(1)
    task.cancel()
    k.run()
    assert log == [1.0]
    assert task.state == "cancelled"
    assert k.now == 1.0


def test_a_failing_task_raises_out_of_the_kernel():
    k = Kernel()

    async def proc():
        raise RuntimeError("boom")

    k.spawn(proc())
    with pytest.raises(RuntimeError, match="boom"):
        k.run()


def test_same_seed_gives_same_random_draws():
    assert [Kernel(seed=7).rng.random() for _ in range(3)] == [Kernel(seed=7).rng.random() for _ in range(3)]
    assert Kernel(seed=7).rng.random() != Kernel(seed=8).rng.random()


def test_cancel_after_the_awaited_future_resolved_cancels_once():
    k = Kernel()
    fut = k.create_future()

    async def proc():
        await fut

    task = k.spawn(proc())
    k.advance(0)
    fut.set_result(1)
    task.cancel()
    k.advance(0)
    assert task.state == "cancelled"


def test_pending_counts_only_live_callbacks():
    k = Kernel()
    keep = k.call_later(1, print)
    k.call_later(2, print).cancel()
    k.call_soon(print).cancel()
    assert k.pending() == 1
    assert keep.active


def test_end_of_instant_callback_runs_after_every_callback_of_its_instant():
    k = Kernel()
    order = []
    k.call_at(1.0, order.append, "a")
    k.call_at_end_of_instant(1.0, order.append, "end")
    # Scheduled after the end-of-instant entry, and during the instant itself: still first.
    k.call_at(1.0, lambda: (order.append("b"), k.call_soon(order.append, "c")))
    k.call_at(2.0, order.append, "later")
    k.run_until(1.5)
    assert order == ["a", "b", "c", "end"]
    assert k.now == 1.5


def test_end_of_instant_callbacks_run_in_order_each_after_what_the_previous_scheduled():
    k = Kernel()
    order = []
    k.call_at_end_of_instant(0.0, lambda: (order.append("x"), k.call_soon(order.append, "x's effect")))
    k.call_at_end_of_instant(0.0, order.append, "y")
    k.run_until(0.0)
    assert order == ["x", "x's effect", "y"]


def test_end_of_instant_in_the_past_means_the_current_instant():
    k = Kernel()
    k.advance(5.0)
    seen = []
    k.call_at_end_of_instant(1.0, lambda: seen.append(k.now))
    k.run_until(5.0)
    assert seen == [5.0]


def test_virtual_time_is_exact_to_the_nanosecond():
    # 0.11 + 0.005 is 0.11500000000000002 in floats; the kernel's instants are exact decimals.
    kernel = Kernel()
    seen = []
    kernel.call_later(0.11, lambda: kernel.call_later(0.005, lambda: seen.append(kernel.now)))
    kernel.call_later(0.115, lambda: seen.append(kernel.now))
    kernel.run()
    assert seen == [0.115, 0.115]
    assert repr(seen[0]) == "0.115"


def test_two_paths_to_one_instant_meet_in_scheduling_order():
    kernel = Kernel()
    order = []
    kernel.call_later(0.1, lambda: kernel.call_later(0.2, order.append, "later path"))
    kernel.call_at(0.30000000000000004, order.append, "direct")
    kernel.run()
    assert order == ["direct", "later path"]
    assert kernel.now == 0.3


def test_vtime_rounds_to_the_nanosecond():
    assert vtime(0.1 + 0.2) == 0.3
    assert vtime(1e-10) == 0.0
    assert vtime(2.5e-9) == 2e-9  # round half to even, as round()


def test_timers_of_one_delay_interleave_with_others_in_time_then_scheduling_order():
    # call_later timers of one delay wait in a FIFO lane; the order is still (time, seq).
    kernel = Kernel()
    order = []
    kernel.call_later(0.5, order.append, "a 0.5")
    kernel.call_at(0.5, order.append, "b at 0.5")
    kernel.call_later(0.2, order.append, "c 0.2")
    kernel.call_later(0.5, order.append, "d 0.5")
    kernel.call_later(0.3, lambda: kernel.call_later(0.2, order.append, "e 0.2 from 0.3"))
    cancelled = kernel.call_later(0.5, order.append, "cancelled")
    cancelled.cancel()
    assert [t for t, _, _ in kernel.upcoming(10)] == [0.2, 0.3, 0.5, 0.5, 0.5]
    assert kernel.pending() == 5
    kernel.run()
    assert order == ["c 0.2", "a 0.5", "b at 0.5", "d 0.5", "e 0.2 from 0.3"]
    assert kernel.pending() == 0
    assert kernel._lanes == {}


def test_upcoming_follows_a_lane_past_its_head():
    kernel = Kernel()
    for _ in range(5):
        kernel.call_later(1.0, lambda: None)
        kernel.advance(0.1)
    kernel.call_later(0.45, lambda: None)
    assert [t for t, _, _ in kernel.upcoming(10)] == [0.95, 1.0, 1.1, 1.2, 1.3, 1.4]
    assert [t for t, _, _ in kernel.upcoming(3)] == [0.95, 1.0, 1.1]

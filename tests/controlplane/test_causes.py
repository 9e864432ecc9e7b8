"""Causes: every trace record knows the record that caused it; why? walks them; the record log."""

from __future__ import annotations

import json

import pytest

from controlplane.causes import RecordLog
from controlplane.kernel import Kernel
from controlplane.scenario import load_file
from controlplane.simulation import Simulation
from controlplane.trace import Trace
from controlplane.workqueue import RateLimitingQueue

SHIPPED = [
    "demo",
    "quota-slow-start",
    "node-loss",
    "controller-restart",
    "orphan-adoption",
    "replicaset-deletion",
    "scale-up-and-down",
    "stale-cache-expectations",
    "lesson-404-delete-taken-as-gone",
]


def kept(name: str, until: float) -> Simulation:
    sim = Simulation(load_file(name))
    sim.keep_records()
    sim.start()
    sim.run_until(until)
    return sim


def all_records(sim: Simulation) -> list[dict]:
    log = sim.record_log
    assert log is not None
    return [r for s in range(log.base, log.last + 1) if (r := log.get(s)) is not None]


# -- the kernel carries the current cause ----------------------------------------------------------
def test_a_callback_runs_with_the_cause_current_when_it_was_scheduled() -> None:
    kernel = Kernel()
    seen = []
    kernel.cause = 7
    kernel.call_later(1.0, lambda: seen.append(kernel.cause))
    kernel.cause = None
    kernel.call_soon(lambda: seen.append(kernel.cause))
    kernel.run_until(2.0)
    assert seen == [None, 7]
    assert kernel.cause is None  # nothing outside the loop inherits a callback's cause


def test_a_task_gets_its_own_cause_back_whoever_wakes_it() -> None:
    kernel = Kernel()
    fut = kernel.create_future()
    seen = []

    async def waiter() -> None:
        kernel.cause = 3
        await fut
        seen.append(kernel.cause)

    kernel.spawn(waiter())
    kernel.run_until(0.0)
    kernel.cause = 99
    kernel.call_soon(fut.set_result, None)  # the waker runs with cause 99
    kernel.cause = None
    kernel.run_until(1.0)
    assert seen == [3]


def test_queue_get_is_caused_by_the_add_that_made_the_key_dirty() -> None:
    kernel = Kernel()
    trace = Trace(kernel)
    records: list[dict] = []
    trace.subscribe(records.append)
    queue = RateLimitingQueue(kernel, name="q", trace=trace)
    trace.cause = None
    queue.add("a")
    trace.cause = 1000  # an unrelated step is current when the worker takes the key
    queue.get(worker="0")
    add, get = records
    assert (add["kind"], get["kind"]) == ("queue.add", "queue.get")
    assert get["cause"] == add["seq"]
    assert trace.cause == get["seq"]  # the worker's step starts at the get


def test_a_delayed_add_is_caused_by_its_add_after() -> None:
    kernel = Kernel()
    trace = Trace(kernel)
    records: list[dict] = []
    trace.subscribe(records.append)
    queue = RateLimitingQueue(kernel, name="q", trace=trace)
    queue.add_after("a", 1.0)
    kernel.run_until(2.0)
    add_after, add = records
    assert add["kind"] == "queue.add" and add["cause"] == add_after["seq"]


# -- chains on scenarios ---------------------------------------------------------------------------
def test_a_created_pods_chain_reaches_the_scale_that_asked_for_it() -> None:
    sim = kept("demo", 31)  # the demo scales web to 6 at t=30
    pending = [
        r for r in all_records(sim) if r["kind"] == "pod.transition" and r["to"] == "Pending" and r["time"] >= 30
    ]
    chain = sim.why(pending[0]["seq"])
    kinds = [link["kind"] for link in chain]
    assert kinds[0] == "pod.transition"
    for kind in ("api.request", "sync.request", "sync.start", "queue.get", "queue.add", "informer.event"):
        assert kind in kinds
    root = chain[-1]
    assert root["kind"] == "action.start" and "scale" in root["text"] and root["time"] == 30.0
    times = [link["time"] for link in chain]
    assert times == sorted(times, reverse=True)  # newest first


def test_a_failed_create_events_chain_reaches_the_sync_and_the_api_fault() -> None:
    sim = kept("quota-slow-start", 5)
    event = next(r for r in all_records(sim) if r["kind"] == "event" and r["reason"] == "FailedCreate")
    chain = sim.why(event["seq"])
    assert chain[0]["seq"] == event["seq"]
    response = chain[1]
    assert response["kind"] == "api.response" and "403" in response["text"]
    fault = chain[2]
    assert fault["side"] is True and fault["kind"] == "action.start" and "apiFault" in fault["text"]
    sync = next(link for link in chain if link["kind"] == "sync.start")
    assert "default/web" in sync["text"]
    assert chain[-1]["kind"] == "api.request" and chain[-1]["text"].startswith("user sent create replicasets")


def test_a_crashed_pods_transition_is_caused_by_the_pod_fault() -> None:
    sim = kept("demo", 21)  # podFault crash at t=20
    crashed = [r for r in all_records(sim) if r["kind"] == "pod.transition" and r["time"] >= 20]
    chain = sim.why(crashed[0]["seq"])
    assert chain[-1]["kind"] == "action.start" and "podFault crash" in chain[-1]["text"]


@pytest.mark.parametrize("name", SHIPPED)
def test_every_cause_points_to_an_earlier_record(name: str) -> None:
    records = all_records(kept(name, 40))
    assert records
    for r in records:
        assert r["cause"] is None or r["cause"] < r["seq"], r
    caused = sum(r["cause"] is not None for r in records)
    assert caused > 0.9 * len(records)  # roots are the exception: starting objects, actions


def test_the_same_scenario_twice_has_the_same_causes() -> None:
    one = [(r["seq"], r["kind"], r["cause"]) for r in all_records(kept("quota-slow-start", 40))]
    two = [(r["seq"], r["kind"], r["cause"]) for r in all_records(kept("quota-slow-start", 40))]
    assert one == two


@pytest.mark.parametrize("name", ["demo", "quota-slow-start", "node-loss"])
def test_keeping_records_leaves_the_report_byte_identical(name: str) -> None:
    plain = Simulation(load_file(name))
    plain.start()
    plain.run_until(60)
    assert kept(name, 60).report_json() == plain.report_json()


# -- the record log --------------------------------------------------------------------------------
def feed(log: RecordLog, n: int) -> None:
    for seq in range(1, n + 1):
        cause = seq - 1 or None
        key = f"ns/k{seq}"
        log({"time": seq / 10, "seq": seq, "kind": "queue.add", "cause": cause, "queue": "q", "key": key, "depth": 1})


def test_the_log_compacts_its_oldest_records_and_says_so() -> None:
    log = RecordLog(limit=8)
    feed(log, 12)
    assert log.full_from > 1
    old = log.get(1)
    assert old is not None and old["compacted"] is True and "key" not in old
    assert log.get(12)["key"] == "ns/k12"
    chain = log.why(12)
    assert [link["seq"] for link in chain] == list(range(12, 0, -1))
    assert "no longer kept" in chain[-1]["text"] and "no longer kept" not in chain[0]["text"]


def test_a_chain_past_the_forgotten_records_ends_with_a_link_that_says_so() -> None:
    log = RecordLog(limit=4)
    feed(log, 40)
    assert log.base > 1
    chain = log.why(40)
    assert chain[-1]["kind"] in ("forgotten", "limit")
    assert len(chain) <= 66


def test_why_of_a_record_not_kept_is_a_clear_error() -> None:
    log = RecordLog()
    feed(log, 3)
    with pytest.raises(ValueError, match="seq: no record 9"):
        log.why(9)


def test_records_pages_and_filters_without_dropping_a_row() -> None:
    sim = kept("quota-slow-start", 40)
    everything = sim.records(limit=1000)
    log = sim.record_log
    assert log is not None
    assert everything["total"] == len(log)
    pages = [sim.records(offset=o, limit=100)["rows"] for o in range(0, everything["total"], 100)]
    seqs = [row["seq"] for page in pages for row in page]
    assert seqs == list(range(log.base, log.last + 1))
    syncs = sim.records({"kind": "sync.start"}, limit=1000)
    assert syncs["total"] == sum(r["kind"] == "sync.start" for r in all_records(sim)) > 3
    assert {row["kind"] for row in syncs["rows"]} == {"sync.start"}
    named = sim.records({"text": "forbidden"}, limit=5)
    assert named["total"] > 0 and all("forbidden" in json.dumps(row).lower() for row in named["rows"])
    rc = sim.records({"controller": "replicationcontroller"}, limit=1000)
    assert 0 < rc["total"] < everything["total"]
    assert {row["controller"] for row in rc["rows"]} == {"replicationcontroller"}

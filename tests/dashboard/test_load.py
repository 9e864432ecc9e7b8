"""Expensive reads do not starve the process: the host keeps answering and driving between them,
at most a few run at once per process (429 beyond), big answers come in parts byte-identical to
the one-shot text, a requester that gives up leaves nothing behind, HEAD answers as GET."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from channels.layers import get_channel_layer
from channels.testing import HttpCommunicator
from django.test import AsyncClient

from dashboard.asgi import application
from dashboard.host import command_channel, request

from .conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)
AUTH = [(b"authorization", f"Bearer {TOKEN}".encode())]


async def demo(running_host):
    while "demo" not in running_host.sims:
        await asyncio.sleep(0.01)
    return running_host.sims["demo"]


async def full_gate(op):
    """Take every slot of `op`'s gate and fill its queue: the next request is one too many."""
    from dashboard.host import reads  # (not in the code before the limits)

    gate = reads.gate(op)
    for _ in range(gate.slots):
        await gate.acquire()
    waiting = [asyncio.create_task(gate.acquire()) for _ in range(gate.queue)]
    await asyncio.sleep(0)
    return gate, waiting


async def empty_gate(gate, waiting):
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    for _ in range(gate.slots):
        gate.release()
    assert gate.held == 0 and not gate.waiters


async def test_other_tasks_run_between_50_queued_reports_and_status_goes_first(running_host):
    """50 report requests queued at once: between any two of them the event loop runs the
    other tasks (a task that only yields counts its turns: the simulation's driving task at
    full speed does the same), and a status request sent after them is answered before most."""
    hosted = await demo(running_host)
    turns = 0
    stop = False

    async def other_task():
        nonlocal turns
        while not stop:
            turns += 1
            await asyncio.sleep(0)

    seen = []
    report = hosted.report

    def counted_report():
        seen.append(turns)  # the other task's turns when this report is built
        return report()

    hosted.report = counted_report
    spinning = asyncio.create_task(other_task())
    try:
        layer = get_channel_layer()
        replies = [await layer.new_channel() for _ in range(50)]
        for reply_to in replies:
            message = {"type": "sim.command", "cmd": {"op": "report"}, "reply_to": reply_to}
            await layer.send(command_channel("demo"), message)
        status = await request("demo", {"op": "status"})
        assert status["ok"]
        answered = [ch for ch in replies if layer.channels.get(ch) is not None and not layer.channels[ch].empty()]
        assert len(answered) < 5, f"{len(answered)} of 50 reports were answered before the status"
        for reply_to in replies:
            await asyncio.wait_for(layer.receive(reply_to), 30)
    finally:
        stop = True
        await spinning
    assert len(seen) == 50
    # Today the 50 run back to back: the other task gets no turn between them.
    assert all(later > earlier for earlier, later in itertools.pairwise(seen)), seen


async def test_too_many_reports_or_lists_at_once_get_429_with_retry_after(running_host):
    await demo(running_host)
    gate, waiting = await full_gate("report")
    try:
        response = await AsyncClient().get("/sim/demo/report.json")
        assert response.status_code == 429
        assert response["Retry-After"] == str(gate.retry_after)
        assert b"too many" in response.content  # the error page (an escaped template), saying why
    finally:
        await empty_gate(gate, waiting)
    assert (await AsyncClient().get("/sim/demo/report.json")).status_code == 200

    gate, waiting = await full_gate("k8s_list")
    try:
        comm = HttpCommunicator(application, "GET", "/api/v1/pods?limit=500", headers=AUTH)
        response = await comm.get_response(timeout=10)
        headers = dict(response["headers"])
        status = json.loads(response["body"])
        assert response["status"] == 429 and headers[b"retry-after"] == str(gate.retry_after).encode()
        assert status["kind"] == "Status" and status["reason"] == "TooManyRequests" and status["code"] == 429
        assert status["details"] == {"retryAfterSeconds": gate.retry_after}
    finally:
        await empty_gate(gate, waiting)
    comm = HttpCommunicator(application, "GET", "/api/v1/pods?limit=500", headers=AUTH)
    assert (await comm.get_response(timeout=10))["status"] == 200


async def test_a_waiting_request_gets_the_slot_when_one_frees():
    from dashboard.host import reads  # (not in the code before the limits)

    gate = reads.Gate("test", slots=1, queue=1, wait=30.0, retry_after=1)
    await gate.acquire()
    waiter = asyncio.create_task(gate.acquire())
    await asyncio.sleep(0)
    with pytest.raises(reads.Busy):
        await gate.acquire()  # one holds, one waits: the third is refused at once
    gate.release()
    await waiter
    assert gate.held == 1
    gate.release()
    assert gate.held == 0


async def test_big_answers_come_in_parts_identical_to_the_one_shot_text(running_host, monkeypatch):
    from dashboard.host import reads  # (not in the code before the limits)

    hosted = await demo(running_host)
    await request("demo", {"op": "step", "what": "to", "t": 20}, control=True)
    while hosted.sim.now < 20 or hosted.busy:
        await asyncio.sleep(0.02)
    monkeypatch.setattr(reads, "CHUNK", 2000)
    expected = json.dumps(hosted.report(), separators=(",", ":"))
    response = await AsyncClient().get("/sim/demo/report.json")
    assert response.status_code == 200 and response.streaming
    parts = [part async for part in response.streaming_content]
    # Parts of about CHUNK characters (a part ends after the piece that filled it: an object).
    assert len(parts) > 5 and max(len(part) for part in parts) < len(expected) / 4
    assert b"".join(parts).decode() == expected

    single = await request("demo", {"op": "k8s_list", "resource": "pods", "namespace": None}, control=True)
    comm = HttpCommunicator(application, "GET", "/api/v1/pods", headers=AUTH)
    response = await comm.get_response(timeout=10)
    assert response["status"] == 200 and response["body"].decode() == single["body"]


async def test_a_requester_that_gives_up_leaves_nothing_in_the_channel_layer(running_host, monkeypatch):
    await demo(running_host)
    layer = get_channel_layer()
    with pytest.raises(LookupError):
        await request("demo", {"op": "report"}, timeout=0)  # gives up before the answer
    # The host answers reads in order: when the second report is answered, the first was too.
    assert (await request("demo", {"op": "status"}))["ok"]
    await request("demo", {"op": "report"})
    held = {name: queue.qsize() for name, queue in layer.channels.items() if queue.qsize()}
    assert held == {}, held

    # A streamed answer whose reader stops after the first part: the host stops sending.
    from dashboard.host import reads, request_stream  # (not in the code before the limits)

    monkeypatch.setattr(reads, "CHUNK", 500)
    answer = await request_stream("demo", {"op": "report"})
    assert answer.more
    await answer.aclose()
    assert (await request("demo", {"op": "report"}))["ok"]
    held = {name: queue.qsize() for name, queue in layer.channels.items() if queue.qsize()}
    assert held == {}, held
    assert reads.gate("report").held == 0


async def test_head_answers_as_get_without_a_body(running_host):
    await demo(running_host)
    for path in ("/api/v1/namespaces/default/pods", "/version", "/api/v1/namespaces/default/pods/nope"):
        get = await HttpCommunicator(application, "GET", path, headers=AUTH).get_response(timeout=10)
        head = await HttpCommunicator(application, "HEAD", path, headers=AUTH).get_response(timeout=10)
        assert head["status"] == get["status"] and head["body"] == b"", path
        assert dict(head["headers"])[b"content-type"] == dict(get["headers"])[b"content-type"]


async def test_head_of_a_watch_answers_its_headers_and_ends(running_host):
    await demo(running_host)
    path = "/api/v1/namespaces/default/pods?watch=true"
    head = await HttpCommunicator(application, "HEAD", path, headers=AUTH).get_response(timeout=10)
    assert head["status"] == 200 and head["body"] == b""
    assert dict(head["headers"])[b"content-type"] == b"application/json"


async def test_every_answer_of_the_kubernetes_api_says_nosniff(running_host):
    """Streamed watches and lists and the 429s too, not only the answers `respond` builds."""
    await demo(running_host)
    for path in ("/api/v1/pods?limit=2", "/api/v1/pods", "/api/v1/nope", "/metrics"):
        response = await HttpCommunicator(application, "GET", path, headers=AUTH).get_response(timeout=10)
        assert dict(response["headers"]).get(b"x-content-type-options") == b"nosniff", path
    watch = HttpCommunicator(application, "GET", "/api/v1/pods?watch=true&timeoutSeconds=1", headers=AUTH)
    response = await watch.get_response(timeout=10)  # the stream ends after its timeout
    assert response["body"] and dict(response["headers"]).get(b"x-content-type-options") == b"nosniff"
    gate, waiting = await full_gate("k8s_list")
    try:
        response = await HttpCommunicator(application, "GET", "/api/v1/pods", headers=AUTH).get_response(timeout=10)
        assert response["status"] == 429
        assert dict(response["headers"]).get(b"x-content-type-options") == b"nosniff"
    finally:
        await empty_gate(gate, waiting)


async def test_a_stream_whose_reader_goes_away_midway_frees_its_slot(running_host, monkeypatch):
    """A client that disconnects while its answer streams: the response's iterator is dropped
    unfinished; its slot is freed and the host stops sending."""
    from dashboard.host import reads, request_stream  # (not in the code before the limits)

    await demo(running_host)
    monkeypatch.setattr(reads, "CHUNK", 500)
    answer = await request_stream("demo", {"op": "report"})
    parts = answer.text()
    assert await anext(parts) and await anext(parts)
    del answer, parts  # as Django drops a cancelled response: the event loop closes the iterator
    for _ in range(10):
        await asyncio.sleep(0)
    assert reads.gate("report").held == 0
    assert (await request("demo", {"op": "report"}))["ok"]  # the host is free again
    assert {name: q.qsize() for name, q in get_channel_layer().channels.items() if q.qsize()} == {}


async def test_one_requester_queues_at_most_two_expensive_reads(running_host):
    """A websocket viewer asks the host directly (no slot of a process): its third report in
    a row is answered "busy" at once instead of queueing."""
    await demo(running_host)
    layer = get_channel_layer()
    viewer = await layer.new_channel()
    for n in range(5):
        message = {"type": "sim.command", "cmd": {"op": "report"}, "reply_to": viewer, "id": n, "viewer": viewer}
        await layer.send(command_channel("demo"), message)
    results = [(await asyncio.wait_for(layer.receive(viewer), 30))["result"] for _ in range(5)]
    assert sorted(bool(r["ok"]) for r in results) == [False, False, False, True, True], results
    assert all("too many" in r["error"] for r in results if not r["ok"])
    assert (await request("demo", {"op": "report"}))["ok"]  # counted out: the next one is served


async def test_the_pacer_hands_the_loop_over_while_others_use_it_and_takes_it_back_when_idle(monkeypatch):
    """On a fake clock: after 5 ms of reads, a busy task (2 ms a turn) gets turns until it had as
    long (READ_SHARE 0.5); with nobody else ready, the reads go on after one empty round, and
    after the read a small debt is forgiven while a long step's (a big report) is slept off."""
    from dashboard.host import reads  # (not in the code before the limits)

    clock = [0.0]
    slept = []

    async def sleep(seconds):
        if seconds:
            slept.append(seconds)
        await real_sleep(0)

    real_sleep = asyncio.sleep
    monkeypatch.setattr(reads.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(reads.asyncio, "sleep", sleep)
    pacer = reads.Pacer()
    turns = 0
    busy = True

    async def busy_task():
        nonlocal turns
        while busy:
            turns += 1
            clock[0] += 0.002
            await real_sleep(0)

    other = asyncio.create_task(busy_task())
    await real_sleep(0)  # it starts
    pacer.start()
    clock[0] += 0.005  # the reads' work
    turns, started = 0, clock[0]
    await pacer.pause()
    assert turns == 3 and clock[0] - started >= 0.005  # 2 + 2 + 2 ms >= the reads' 5 ms
    busy = False
    await other

    clock[0] += 0.005
    before = clock[0]
    await pacer.pause()  # nobody else is ready: one empty round, no time handed away
    assert clock[0] == before and pacer.debt == pytest.approx(0.005)
    await pacer.settle()  # a small debt: forgiven
    assert slept == [] and pacer.debt == 0

    clock[0] += 0.4  # building a big report: one long step
    await pacer.pause()
    await pacer.settle()
    assert slept == [pytest.approx(0.4)] and pacer.debt == 0


async def test_a_report_is_built_in_another_process_while_the_loop_goes_on(tmp_path):
    """The child waits for a file the loop creates only after the build began: built on the loop,
    it would wait in vain (up to its bound) and say so."""
    import os
    import time

    from dashboard.host import reads

    go = tmp_path / "go"

    def build() -> str:
        deadline = time.monotonic() + 60
        while not go.exists():
            if time.monotonic() > deadline:
                return "the loop never ran while this was built"
            time.sleep(0.01)
        return f"built by {os.getpid()}"

    building = asyncio.ensure_future(reads.built_aside(build))
    await asyncio.sleep(0)  # the build starts
    go.touch()  # the loop runs meanwhile
    text = await building
    assert text.startswith("built by "), text
    assert int(text.removeprefix("built by ")) != os.getpid()


async def test_a_child_that_never_finishes_its_build_is_killed_and_the_text_built_on_the_loop(monkeypatch):
    """A child forked while another thread held a lock may wait for ever: past ASIDE_TIMEOUT it
    is killed, and the answer still comes (built where it would have been without the fork)."""
    import os
    import time

    from dashboard.host import reads

    parent = os.getpid()
    monkeypatch.setattr(reads, "ASIDE_TIMEOUT", 0.5)

    def build() -> str:
        while os.getpid() != parent:  # the child hangs, as on a lock nobody will release
            time.sleep(0.05)
        return "built on the loop"

    assert await reads.built_aside(build) == "built on the loop"

"""The past on the page: the replay worker's view model of a moment renders with the live page's
own panels, a step back shows exactly what the page showed before the forward step, and the
websocket's `past` command answers the viewer who asked (bad moments get a one-line error; nothing
changes)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from controlplane.scenario import load_file
from controlplane.session.timetravel.worker import Requests, Superseded, Worker
from controlplane.simulation import SessionService, Simulation
from dashboard.host.hosted import HostedSimulation
from dashboard.host.past_view import PastView, render

from .test_consumers import command, connect, receive


class NoNewer(Requests):
    """Requests of a test: never a newer one."""

    def __init__(self) -> None:
        super().__init__(-1)

    def newer(self, viewer: str) -> bool:
        return False


def live(name="demo"):
    return HostedSimulation("t", Simulation(load_file(name)), name=name, source=name)


def ask(worker, hosted, target, *, first=False, focus=()):
    request = {"viewer": "v", "target": target, "live": hosted.sim.position().to_json(), "focus": list(focus)}
    recording = hosted.sim.recording()
    if first or worker.recording is None:
        request["recording"] = recording
    else:
        request["actions"] = recording["actions"][len(worker.recording["actions"]) :]
    answer = worker.handle(json.loads(json.dumps(request)))
    assert answer["ok"], answer
    return answer


def panels(answer):
    return json.loads(render(answer["text"]))["panels"]


def live_panels(hosted, focus=()):
    state = json.loads(hosted.frames.state(list(focus)))
    state["panels"].pop("breakpoints")
    return state["panels"]


FOCUS = [("replicaset", "default/web")]


def test_the_past_is_rendered_with_the_live_pages_own_panels():
    hosted = live()
    hosted.focus("viewer", FOCUS)
    hosted.sim.run_until(2.5)
    for _ in range(3):
        hosted.sim.step()
    then, seen = hosted.sim.position(), live_panels(hosted, FOCUS)
    hosted.sim.act({"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 1}})
    hosted.sim.run_until(9.0)
    worker = Worker(NoNewer(), PastView())
    answer = ask(worker, hosted, {"events": then.events, "time": then.time, "exact": True}, focus=FOCUS)
    assert answer["position"] == then.to_json()
    assert panels(answer) == seen
    # The moment's pods, for the tiles; not the timeline's history, which the page keeps (live)
    # and marks the moment on.
    canvas = json.loads(render(answer["text"]))["canvas"]
    assert {"pods", "names", "owners", "nodeNames", "states"} <= set(canvas)
    assert not {"tr", "spans", "depth", "dropped"} & set(canvas)
    live_pods = json.loads(hosted.frames.state())["canvas"]["pods"]
    assert canvas["pods"] and len(canvas["pods"]) != len(live_pods)  # the scale to 1 changed the table since


def test_a_step_back_shows_the_panels_from_before_the_forward_step():
    hosted = live("quota-slow-start")
    hosted.focus("viewer", FOCUS)
    hosted.sim.run_until(0.3)
    worker = Worker(NoNewer(), PastView())
    for step in ("event", "stage", "sync"):
        before, seen = hosted.sim.position(), live_panels(hosted, FOCUS)
        {"event": hosted.sim.step, "stage": hosted.sim.step_stage, "sync": hosted.sim.step_sync}[step]()
        # Step back from the live moment, to the position the canonical inverse gives ...
        back = ask(worker, hosted, {"back": step, "from": None}, focus=FOCUS)
        if step == "event":
            assert back["position"]["events"] == before.events
        # ... and exactly back where the page was (the page keeps the positions it came from).
        exact = ask(worker, hosted, {"events": before.events, "time": before.time, "exact": True}, focus=FOCUS)
        assert exact["position"] == before.to_json()
        assert panels(exact) == seen


def test_stepping_back_over_a_sync_shows_its_key_queued_again():
    hosted = live()
    hosted.sim.run_until(0.01)
    ended = hosted.sim.step_sync()
    worker = Worker(NoNewer(), PastView())
    back = ask(worker, hosted, {"back": "sync", "from": None})
    queue = panels(back)[f"queue-{ended['controller']}"]
    assert ended["key"] in queue
    assert back["position"]["events"] < hosted.sim.position().events


def test_a_newer_request_of_the_same_viewer_supersedes_a_long_replay():
    hosted = live()
    hosted.sim.run_until(60.0)

    class Newer(NoNewer):
        def newer(self, viewer: str) -> bool:
            return True

    worker = Worker(Newer(), PastView())
    worker.chunk_events = 500
    worker.recording = hosted.sim.recording()
    worker.viewer = "v"
    with pytest.raises(Superseded):
        worker.go({"at": 59.0}, hosted.sim.position().to_json())
    assert 0 < worker.replay.sim.kernel.events < hosted.sim.kernel.events  # kept, to go on from


@pytest.mark.django_db(transaction=True)
async def test_the_websocket_shows_a_past_moment_to_the_viewer_who_asked(running_host):
    comm, connected, _ = await connect()
    assert connected
    await receive(comm, "state")
    hosted = running_host.sims["demo"]
    await command(comm, {"op": "pause"})
    while hosted.sim.now < 1.5:
        await asyncio.sleep(0.05)
        if hosted.mode == "paused":
            await command(comm, {"op": "step", "what": "to", "t": 2.0}, msg_id=9)
    live_before = hosted.sim.position()
    await comm.send_to(text_data=json.dumps({"type": "cmd", "id": 5, "cmd": {"op": "past", "at": 1.0}}))
    past = await receive(comm, "past", timeout=30)
    assert past["id"] == 5 and past["position"]["time"] == 1.0
    assert {"owners", "queue-replicaset", "informers"} <= set(past["state"]["panels"])
    assert past["state"]["status"]["t"] == 1.0
    assert hosted.sim.position() == live_before  # the live session did not move for it
    # Bad moments: one line naming the field; nothing changes.
    for bad, error in (
        (-1, "t: must be at least 0"),
        ("soon", "t: must be a number of seconds (got 'soon')"),
        (10_000, "t: t=10000 is after the live moment"),
    ):
        result = await command(comm, {"op": "past", "at": bad}, msg_id=6)
        assert result["ok"] is False and result["error"].startswith(error)
    assert hosted.sim.position() == live_before
    await comm.disconnect()


def test_a_trace_record_without_its_time_is_found_in_the_kept_records():
    """A span on the timeline names the sync.start it links to by `seq` only (its time is rounded
    for drawing): the host takes the record's own time from the kept records."""
    from dashboard.host.past import CommandError, target_of

    hosted = live()
    hosted.sim.run_until(3.0)
    log = hosted.sim.record_log
    start = next(log.get(s) for s in range(log.base, log.last + 1) if log.get(s)["kind"] == "sync.start")
    live_at = hosted.sim.position()
    target = target_of({"seq": start["seq"]}, live_at, log)
    assert target == {"seq": start["seq"], "time": start["time"]}
    with pytest.raises(CommandError, match=r"^t: must be a (finite )?number"):
        target_of({"seq": start["seq"]}, live_at)  # no kept records: the time must be given
    with pytest.raises(CommandError, match="seq: must be between 0 and"):
        target_of({"seq": live_at.seq + 1}, live_at, log)


def test_viewers_without_the_token_get_one_replay_at_a_time_then_as_long_a_rest():
    from dashboard.host.past import TokenlessBudget

    budget = TokenlessBudget()
    assert budget.refusal("a", 100.0) is None
    budget.begin("a")
    assert budget.refusal("b", 100.5) == 1.0  # another viewer waits for a's replay
    assert budget.refusal("a", 100.5) is None  # a's newer request supersedes its own
    budget.begin("a")
    budget.end(100.0, 101.0)  # superseded after 1 s
    assert budget.refusal("b", 101.0) == 1.0  # a's second is still in hand
    budget.end(100.5, 103.0)  # answered after 2.5 s: rest until 105.5
    assert budget.refusal("b", 104.0) == pytest.approx(1.5) and budget.refusal("a", 105.0) == pytest.approx(0.5)
    assert budget.refusal("b", 105.5) is None


@pytest.mark.django_db(transaction=True)
async def test_viewers_without_the_token_share_one_budget_and_never_hold_back_the_token(running_host):
    """Two viewers without the token ask for the past at once: one is answered, the other told
    it is busy and for how long; the viewer with the token is answered meanwhile."""
    owner, connected, _ = await connect()
    assert connected
    await receive(owner, "state")
    hosted = running_host.sims["demo"]
    await command(owner, {"op": "pause"})
    await command(owner, {"op": "step", "what": "to", "t": 2.0}, msg_id=9)
    while hosted.sim.now < 2.0:
        await asyncio.sleep(0.05)
    viewers = []
    for _ in range(2):
        comm, connected, _ = await connect(token=None)
        assert connected and (await receive(comm, "hello"))["control"] is False
        viewers.append(comm)
    for comm in viewers:
        await comm.send_to(text_data=json.dumps({"type": "cmd", "id": 5, "cmd": {"op": "past", "at": 1.0}}))
    await owner.send_to(text_data=json.dumps({"type": "cmd", "id": 7, "cmd": {"op": "past", "at": 0.5}}))
    outcomes = []
    for comm in viewers:
        while True:
            message = json.loads(await comm.receive_from(timeout=30))
            if message["type"] == "past" or (message["type"] == "reply" and message["id"] == 5):
                outcomes.append(message)
                break
    answered = [m for m in outcomes if m["type"] == "past"]
    refused = [m["result"] for m in outcomes if m["type"] == "reply"]
    assert len(answered) == 1 and answered[0]["position"]["time"] == 1.0
    assert len(refused) == 1 and refused[0]["ok"] is False and refused[0]["busy"] >= 1
    assert refused[0]["error"].startswith("busy: viewers without the access token replay the past one at a time")
    mine = await receive(owner, "past", timeout=30)
    assert mine["id"] == 7 and mine["position"]["time"] == 0.5
    for comm in [*viewers, owner]:
        await comm.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_the_host_cuts_the_past_only_for_a_request_with_the_token(running_host):
    """The host's streamed export at T (what scenario.yaml?at=T reads) is the token's whichever
    door asks; the present is anyone's."""
    from dashboard import host

    refused = await host.request_stream("demo", {"op": "export", "at": 0.0})
    assert refused.head == {"ok": False, "error": "read-only: the past (at) needs the access token"}
    await refused.aclose()
    for cmd, control in (({"op": "export"}, False), ({"op": "export", "at": 0.0}, True)):
        answer = await host.request_stream("demo", cmd, control=control)
        text = "".join([part async for part in answer.text()])
        assert answer.head["ok"] is True and "seed:" in text, (cmd, answer.head)


# -- a long look at the past: progress, and a reason when it fails (#26 §4) -------------------------
def busy_session():
    """The demo's web at 300 pods on 10 nodes, two minutes in: ~20,000 events, seconds to replay."""
    scenario = load_file("demo")
    scenario.objects[0]["spec"]["replicas"] = 300
    scenario.config["nodes"] = 10
    hosted = HostedSimulation("t", Simulation(scenario), name="busy", source="demo")
    hosted.sim.run_until(120.0)
    return hosted


async def warm_worker(hosted):
    """A replay worker started and standing at t=0.5, a progress line after every chunk of 200
    events (at most every 0.05 s), no sweep ahead (a later moment is replayed on demand)."""
    from dashboard.host import past

    service = SessionService(lambda *_: hosted)
    service.adopt(hosted)
    worker = past.PastWorker(service, hosted)
    configured = await worker.configure({"chunk_events": 200, "progress": 0.05, "sweep": False})
    assert configured["ok"], configured
    assert (await worker.ask("v", {"at": 0.5}, []))["ok"]
    return worker


def descendants(pid):
    """The pids of every process below `pid` (Linux /proc)."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


async def test_a_long_replay_that_makes_progress_arrives_past_the_time_limit_and_says_how_far_it_came(monkeypatch):
    from dashboard.host import past

    hosted = busy_session()
    worker = await warm_worker(hosted)
    try:
        # The limit is on silence: a replay that moves is never cut off, however long it takes.
        monkeypatch.setattr(past, "TIME_LIMIT", 1.0)
        heard = []

        async def progress(where):
            heard.append(where)

        answer = await worker.ask("v", {"at": 119.0}, [], progress=progress)
        assert answer["ok"], answer
        assert answer["position"]["time"] == 119.0
        events = [p["events"] for p in heard]
        assert len(events) >= 2, heard  # the replay took seconds: the viewer heard of it
        assert events == sorted(events) and events[-1] <= answer["position"]["events"]
        assert all(0.5 <= p["time"] <= 119.0 for p in heard)
    finally:
        await worker.stop()


async def test_a_replay_worker_killed_mid_replay_answers_with_why_and_the_next_look_starts_a_new_one(capfd):
    hosted = busy_session()
    worker = await warm_worker(hosted)
    try:
        pid = worker.proc.pid
        killed = []

        async def kill_at_first_progress(where):
            if not killed:
                killed.extend(descendants(pid))  # its worlds and their children: they end with it
                os.kill(pid, signal.SIGKILL)

        answer = await worker.ask("v", {"at": 119.0}, [], progress=kill_at_first_progress)
        assert answer == {"ok": False, "error": "the replay worker was killed by SIGKILL (out of memory?): try again"}
        again = await worker.ask("v", {"at": 10.0}, [])
        assert again["ok"] and again["position"]["time"] == 10.0
        assert worker.proc.pid != pid
        # The orphans of the killed worker end by themselves, quietly: a broker gone is no bug.
        for _ in range(600):
            if not any(alive(p) for p in killed):
                break
            await asyncio.sleep(0.05)
        assert not any(alive(p) for p in killed)
        err = capfd.readouterr().err
        assert "Traceback" not in err and "ConnectionRefusedError" not in err, err
    finally:
        await worker.stop()


def alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_a_worker_without_keyframes_says_how_far_its_replay_has_come():
    hosted = live()
    hosted.sim.run_until(300.0)
    worker = Worker(NoNewer(), PastView())
    worker.chunk_events = 100
    worker.progress_every = 0.0  # a line after every chunk
    heard = []
    worker.on_progress = heard.append
    answer = ask(worker, hosted, {"at": 299.0})
    events = [p["events"] for p in heard]
    assert len(events) >= 3 and events == sorted(events), heard
    assert events[-1] <= answer["position"]["events"]
    assert all(p["time"] <= 299.0 for p in heard)

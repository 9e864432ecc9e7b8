"""The past on the page, in a real browser: scrub to before a crash and see the pod Ready again,
step back over a sync and see the queue restored, End back to live, a row's link to its moment,
and bad moments refused with a clear message."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from playwright.sync_api import Page, expect

from controlplane.session.timefmt import vtime
from tests.patience import PATIENCE_S

from .conftest import PATIENCE_MS, shot
from .test_dashboard import command, errors, pod_states, run_to, start, stop, wait_pods  # noqa: F401

PAST = PATIENCE_MS  # the first past view starts the replay worker


def view_at(page: Page, t: str) -> None:
    page.fill("#view-at input", t)
    page.press("#view-at input", "Enter")


def test_scrub_to_before_a_crash_and_see_the_pod_ready_again(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start(page, live_server_url)
    run_to(page, 5)
    web = sorted(k for k, v in pod_states(page).items() if k.startswith("default/web-") and v == "Ready")
    victim = web[0]
    command(page, {"op": "act", "action": {"podFault": {"name": victim.split("/")[1], "fault": "crash"}}})
    run_to(page, 12)
    wait_pods(page, f"s['{victim}'] !== 'Ready'")
    view_at(page, "4.5")
    expect(page.locator("#past-banner")).to_be_visible(timeout=PAST)
    expect(page.locator("#past-at")).to_have_text("t=4.500 s")
    expect(page.locator("#past-live")).to_have_text("t=12.000 s")
    page.evaluate("() => document.activeElement.blur()")
    wait_pods(page, f"s['{victim}'] === 'Ready'")
    assert page.evaluate("() => document.body.classList.contains('in-past')")
    # Acting waits for live: the world is not changed from the past.
    page.click("#drawer-tabs [data-tab=tab-actions]")
    shot(page, "dashboard-past")
    page.keyboard.press("End")
    expect(page.locator("#past-banner")).to_be_hidden()
    wait_pods(page, f"s['{victim}'] !== 'Ready'")
    # A row's time is a link to its moment (the top row of the complete trace view).
    page.click("#drawer-tabs [data-tab=tab-trace]")
    # Hold the view still (it follows the newest records: a row can move between finding it and
    # the click landing), then take its top row.
    page.uncheck("#trace-follow")
    page.evaluate("() => { document.getElementById('trace-all').scrollTop = 0; }")
    expect(page.locator("#trace-all-rows tr").first).to_have_attribute("data-seq", "1")
    link = page.locator("#trace-all a.jump").first  # the complete trace view (test_causes.py)
    t, seq = float(link.get_attribute("data-jump-t")), int(link.get_attribute("data-jump-seq"))
    # The same row, found by its seq: the virtualised view may redraw between the two lines.
    page.locator(f'#trace-all a.jump[data-jump-seq="{seq}"]').first.click()
    expect(page.locator("#past-at")).to_have_text(f"t={vtime(t)}", timeout=PAST)
    assert page.evaluate("() => window.CtrlscopePast.position().seq") >= seq
    page.keyboard.press("End")
    expect(page.locator("#past-banner")).to_be_hidden()
    stop(page, live_server_url, sim)


def test_step_back_over_a_sync_and_see_the_queue_restored(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start(page, live_server_url)
    run_to(page, 0.01)
    queue = page.locator("#queue-replicaset")
    before = queue.inner_text()
    events = page.evaluate("() => window.ctrlscope.status.events")
    page.evaluate("() => document.activeElement.blur()")  # keys go to the page, not the run-to field
    page.keyboard.press("s")  # one sync, forward, live
    page.wait_for_function(
        f"() => window.ctrlscope.status.events > {events} && !window.ctrlscope.status.goal"
    )
    expect(queue).not_to_have_text(before)
    page.keyboard.press("Shift+S")  # and back over it: the past, exactly where the step came from
    expect(page.locator("#past-banner")).to_be_visible(timeout=PAST)
    expect(queue).to_have_text(before)
    expect(page.locator("#st-events")).to_have_text(f"{events:,}")
    shot(page, "dashboard-step-back")
    # In the past, n . s step forward through the past; shift+N steps back one event.
    page.keyboard.press("n")
    expect(page.locator("#st-events")).to_have_text(f"{events + 1:,}", timeout=PAST)
    page.keyboard.press("Shift+N")
    expect(page.locator("#st-events")).to_have_text(f"{events:,}", timeout=PAST)
    expect(queue).to_have_text(before)
    page.click("#past-to-live")
    expect(page.locator("#past-banner")).to_be_hidden()
    expect(queue).not_to_have_text(before)
    stop(page, live_server_url, sim)


def test_a_moment_that_is_not_in_the_past_is_refused_with_a_clear_message(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start(page, live_server_url)
    run_to(page, 3)
    for text, error in (
        ("soon", "t: must be a number of seconds (got 'soon')"),
        ("-1", "t: must be at least 0"),
        ("99", "t: t=99 is after the live moment (t=3.000)"),
    ):
        view_at(page, text)
        expect(page.locator("#st-result")).to_have_text(error)
        expect(page.locator("#past-banner")).to_be_hidden()
    assert page.evaluate("() => window.ctrlscope.status.t") == 3.0
    stop(page, live_server_url, sim)


def test_shift_stage_back_from_live_goes_to_the_last_stage_before_now_not_to_a_past_view_step(
    page: Page, live_server_url: str, errors  # noqa: F811
):
    # Stage steps taken in the past view, then back to live and on: shift+. took the page back to
    # where the past view's last step came from (a stale cursor), not to the stage before now.
    sim = start(page, live_server_url)
    run_to(page, 3)
    view_at(page, "1")
    expect(page.locator("#past-at")).to_have_text("t=1.000 s", timeout=PAST)
    page.evaluate("() => document.activeElement.blur()")
    for _ in range(2):
        shown = page.evaluate("() => window.CtrlscopePast.position().events")
        page.keyboard.press(".")  # a stage forward, in the past
        page.wait_for_function(f"() => window.CtrlscopePast.position().events > {shown}", timeout=PAST)
    stepped = page.evaluate("() => window.CtrlscopePast.position()")
    page.keyboard.press("End")
    expect(page.locator("#past-banner")).to_be_hidden()
    # The live session goes on without this page's toolbar (another viewer, a run started before).
    command(page, {"op": "step", "what": "to", "t": 12})
    page.wait_for_function(
        "() => window.ctrlscope.status.t >= 12 && window.ctrlscope.status.mode === 'paused'"
        " && !window.ctrlscope.status.goal"
    )
    live = page.evaluate("() => window.ctrlscope.status.position")
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("Shift+Period")  # one stage back from the present (">")
    expect(page.locator("#past-banner")).to_be_visible(timeout=PAST)
    page.wait_for_function("() => window.CtrlscopePast.position() !== null", timeout=PAST)
    landed = page.evaluate("() => window.CtrlscopePast.position()")
    assert stepped["events"] < landed["events"] < live["events"], (stepped, landed, live)
    assert landed["time"] > 3, landed  # after every moment the past view stepped through
    # The server's own answer for "one stage back from live" is where the page went.
    page.keyboard.press("End")
    expect(page.locator("#past-banner")).to_be_hidden()
    page.evaluate(
        "from => window.CtrlscopePast.go({back: 'stage', from})",
        {"events": live["events"], "seq": live["seq"], "t": live["time"]},
    )
    page.wait_for_function(
        f"() => (window.CtrlscopePast.position() || {{}}).events === {landed['events']}", timeout=PAST
    )
    page.keyboard.press("End")
    stop(page, live_server_url, sim)


def replay_workers(url: str) -> list[int]:
    """The pids of the replay workers of the server at `url` (its children running
    `dashboard.host.replay_worker`; other servers on this machine have their own)."""
    port = url.rsplit(":", 1)[1]
    procs = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            procs[int(entry.name)] = (ppid, [c.decode(errors="replace") for c in cmdline])
    servers = {pid for pid, (_, cmd) in procs.items() if "dashboard.serve" in cmd and port in cmd}
    return [pid for pid, (ppid, cmd) in procs.items() if ppid in servers and "dashboard.host.replay_worker" in cmd]


def busy_session(page: Page, url: str) -> str:
    """The demo with web at 300 pods, two minutes in: its past takes seconds to replay."""
    sim = start(page, url)
    command(page, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 300}}})
    run_to(page, 120)
    page.evaluate("() => document.activeElement.blur()")
    return sim


def test_a_long_first_look_at_the_past_shows_progress_and_arrives(page: Page, live_server_url: str, errors):  # noqa: F811
    # Issue 26 §4: at 10,000 pods the first look at the past said "no answer from the server"
    # (the page gave up after 15 s) while the server was still replaying.
    page.clock.install()  # the page's timers: the test moves them on (time still flows)
    sim = busy_session(page, live_server_url)
    view_at(page, "119")
    result = page.locator("#st-result")
    expect(result).to_contain_text("computing the past…", timeout=PAST)
    shot(page, "dashboard-past-progress")
    page.clock.fast_forward("00:20")  # longer than any one command waited
    expect(page.locator("#past-banner")).to_be_visible(timeout=PAST)
    expect(page.locator("#past-at")).to_have_text(f"t={vtime(119)}")
    expect(result).not_to_contain_text("no answer")
    expect(result).not_to_contain_text("computing")
    page.click("#past-to-live")
    stop(page, live_server_url, sim)


def test_a_look_at_the_past_whose_worker_dies_says_why(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = busy_session(page, live_server_url)
    view_at(page, "1")  # the worker starts and stands at t=1
    expect(page.locator("#past-banner")).to_be_visible(timeout=PAST)
    page.click("#past-to-live")
    expect(page.locator("#past-banner")).to_be_hidden()
    # Idle, the worker sweeps ahead towards the live moment (keyframes), so how long a look at
    # t=119 would take from it depends on how busy the machine is. It ends here; once the server
    # has seen it end, the next look starts a worker with nothing ahead: it replays from t=0.
    idle = set(replay_workers(live_server_url))
    assert idle
    for pid in idle:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + PATIENCE_S
    while set(replay_workers(live_server_url)) & idle:  # reaped by the server
        assert time.monotonic() < deadline
        time.sleep(0.05)
    view_at(page, "119")
    result = page.locator("#st-result")
    expect(result).to_contain_text("computing the past…", timeout=PAST)
    for pid in replay_workers(live_server_url):
        os.kill(pid, signal.SIGKILL)
    expect(result).to_have_text("the replay worker was killed by SIGKILL (out of memory?): try again", timeout=PAST)
    expect(page.locator("#past-banner")).to_be_hidden()
    shot(page, "dashboard-past-worker-died")
    view_at(page, "119")  # the next look starts a new worker
    expect(page.locator("#past-at")).to_have_text(f"t={vtime(119)}", timeout=PAST)
    page.click("#past-to-live")
    stop(page, live_server_url, sim)

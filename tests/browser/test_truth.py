"""Every number true, at once (issue #19 §2 time and speed, §4): one time format everywhere,
a speed select that Run obeys, live object panels, frames that carry what a step changed,
controls that show their state, and messages in upstream's words."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from controlplane.session.timefmt import vtime

from .test_dashboard import command, pod_states, run_to, start, stop


@pytest.fixture
def errors(page: Page):
    seen: list[str] = []
    page.on("pageerror", lambda exc: seen.append(str(exc)))
    yield seen
    assert seen == []


def test_one_time_format_from_seconds_to_days_and_the_inspector_never_overprints(
    page: Page, live_server_url: str, errors
):
    sim = start(page, live_server_url)
    # The page's JS writes what the server's filter writes, at every scale.
    samples = [0, 0.005, 42.105, 59.9996, 184.567, 1000.5, 3784.567, 183845.678]
    written = page.evaluate("ts => ts.map((t) => window.CtrlscopeTime.format(t))", samples)
    assert written == [vtime(t) for t in samples]
    run_to(page, 1000.5)
    expect(page.locator("#st-time")).to_have_text("16:40.500")
    expect(page.locator("#st-hit")).to_contain_text("Paused at t=16:40.500")
    # A sync at t >= 1000 s: the inspector's time column is as wide as its widest time.
    command(page, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 8}}})
    page.click("#btn-sync")
    inspector = page.locator("[data-slot=inspector]")
    expect(inspector).to_contain_text("t=16:40.5")
    overlaps = page.evaluate(
        """() => [...document.querySelectorAll('[data-slot=inspector] li.stage')].filter((li) => {
             const t = li.querySelector('.t'), say = li.querySelector('.say');
             if (!t || !say || !t.textContent.trim()) return false;
             const range = document.createRange(); range.selectNodeContents(t);
             return range.getBoundingClientRect().right > say.getBoundingClientRect().left;
           }).length"""
    )
    assert overlaps == 0
    # Ages and countdowns, in the right column and the timers list, use the same format.
    assert "s)" in page.locator("#timers").inner_text() or ":" in page.locator("#timers").inner_text()
    # The timeline's axis: minutes past the first minute, never "16m40s".
    page.click("#tl-all")
    page.wait_for_timeout(300)
    labels = page.evaluate("() => window.CtrlscopeTimeline.axisLabels()")
    assert labels and all(("m" not in label) for label in labels)
    assert any(":" in label for label in labels)
    stop(page, live_server_url, sim)


def test_the_frame_after_a_step_carries_what_it_changed(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    page.click("#manual-replicaset")
    run_to(page, 1)
    # One sync by hand, the inspector following the latest sync: each stage a step reaches is on
    # the page at once (the latest sync's panel was rebuilt only when the next sync started).
    page.click("#sync-next-replicaset")
    page.check("#follow-latest")
    page.evaluate("() => document.activeElement.blur()")  # keys go to the page
    # Count from the manual sync's own panel: until its frame arrives the slot may still show an
    # earlier, finished sync with more stages than the new one will have after three steps.
    expect(page.locator("[data-slot=inspector] .badge.warn")).to_have_text("in progress")
    stages = page.locator("[data-slot=inspector] li.stage")
    for _ in range(3):
        before = stages.count()
        page.keyboard.press(".")
        page.wait_for_function("() => window.ctrlscope.status.mode === 'paused' && !window.ctrlscope.status.goal")
        page.wait_for_function(
            f"() => document.querySelectorAll('[data-slot=inspector] li.stage').length > {before}", timeout=3000
        )
    # Timer by timer: each countdown is counted from the new clock within a frame, not a second later.
    for _ in range(4):
        e0 = page.evaluate("() => window.ctrlscope.status.events")
        page.keyboard.press("t")  # (a timer due at this instant runs alone: the clock may stay)
        page.wait_for_function(
            f"() => window.ctrlscope.status.events > {e0} && window.ctrlscope.status.mode === 'paused' "
            "&& !window.ctrlscope.status.goal"
        )
        page.wait_for_function(
            """() => { const t = window.ctrlscope.status.t;
                       const rows = [...document.querySelectorAll('#timers li[data-t]')];
                       return rows.length > 0 && rows.every((li) =>
                         Math.abs(parseFloat(li.dataset.t) - parseFloat(li.dataset.in) - t) < 0.0006); }""",
            timeout=900,  # the page used to wait for the next second's frame
        )
    stop(page, live_server_url, sim)


def test_the_speed_chosen_is_what_run_uses_space_works_and_nothing_moves(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    run_to(page, 2)
    watched = ["#layout", "#btn-run", "#btn-pause", "#speed", "#st-time", "#btn-export", "#drawer"]

    def boxes():
        return page.evaluate(
            "ids => ids.map((id) => { const r = document.querySelector(id).getBoundingClientRect(); "
            "return [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)]; })",
            watched,
        )

    paused = boxes()
    page.focus("#speed")  # as a user does: the select takes the focus, then a choice
    # The choice, and in the same turn of the page's event loop (before the host can answer) a
    # frame built before the host took it: it still says 1x.
    page.evaluate(
        """() => { const sel = document.getElementById('speed'); sel.value = '5';
                   sel.dispatchEvent(new Event('change', {bubbles: true}));
                   const old = {...window.ctrlscope.status, speed: 1, mode: 'paused', goal: null};
                   window.ctrlscope.show.applyStatus(old); }"""
    )
    expect(page.locator("#speed")).to_have_value("5")
    page.keyboard.press(" ")  # Space works right after using the select
    expect(page.locator("#st-mode")).to_have_text("running 5×")  # noqa: RUF001
    assert page.evaluate("() => window.ctrlscope.status.speed") == 5
    page.wait_for_function("() => window.ctrlscope.status.rate != null")
    assert boxes() == paused  # running, with its actual rate shown: nothing moved
    page.keyboard.press(" ")
    expect(page.locator("#st-mode")).to_have_text("paused")
    expect(page.locator("#st-hit")).to_contain_text("Paused at t=")
    assert boxes() == paused
    # A step with a long goal and a long reason to stop: still nothing moves.
    page.keyboard.press(".")
    expect(page.locator("#st-hit")).to_contain_text("Paused at t=")
    assert boxes() == paused
    stop(page, live_server_url, sim)


def test_the_inspector_says_expectations_expired_and_clicks_leave_no_stray_done(
    page: Page, live_server_url: str, errors
):
    sim = start(page, live_server_url, scenario="lesson-leaked-expectations")
    run_to(page, 359.9)
    page.evaluate("() => document.activeElement.blur()")
    inspector = page.locator("[data-slot=inspector]")
    # The resync at t=360 finds the leaked record (add=1) older than five minutes.
    for _ in range(8):
        page.keyboard.press(".")
        page.wait_for_function("() => window.ctrlscope.status.mode === 'paused' && !window.ctrlscope.status.goal")
        if "EXPIRED" in inspector.inner_text():
            break
    expect(inspector).to_contain_text("Expectations EXPIRED unfulfilled (still expecting add=1, del=0")
    assert "Expectations satisfied" not in inspector.inner_text()
    for button in ("#btn-run", "#btn-pause", "#btn-event"):
        page.click(button)
        page.wait_for_timeout(200)
        assert "done" not in page.locator("#st-result").inner_text()
    stop(page, live_server_url, sim)


def test_the_pod_tab_is_live_after_a_crash(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    run_to(page, 5)
    web = sorted(k for k, v in pod_states(page).items() if k.startswith("default/web-") and v == "Ready")
    key = web[0]
    tile = page.wait_for_function("k => window.CtrlscopePods.tileOf(k)", arg=key).json_value()
    page.locator("#pods-canvas").click(position={"x": tile["x"], "y": tile["y"]})
    detail = page.locator("#pod-detail")
    badge = detail.locator("h2 .badge")
    expect(badge).to_have_text("Ready")
    calls = detail.locator("table.log tr").count()
    # Crash it from the tab, then let time run: the tab follows the pod as the tile does, with no
    # new click (it was a one-off read).
    detail.locator("button", has_text="crash").click()
    run_to(page, 12)
    page.wait_for_function(f"() => window.CtrlscopePods.states()['{key}'] === 'CrashLoopBackOff'")
    expect(badge).to_have_text("CrashLoopBackOff")
    expect(detail.locator("ol.history .badge").last).to_have_text("CrashLoopBackOff")
    assert detail.locator("table.log tr").count() > calls  # the kubelet's status writes
    expect(detail.locator("pre.yaml")).to_contain_text("CrashLoopBackOff")
    # A reconnecting page still has the pod open, and live.
    page.reload()
    expect(page.locator("#st-conn")).to_have_text("live")
    page.evaluate(f"() => window.ctrlscope.openPod('default', '{key.split('/')[1]}')")
    command(page, {"op": "act", "action": {"podFault": {"name": key.split("/")[1], "fault": "delete"}}})
    run_to(page, 13)
    expect(badge).to_have_text("gone")
    stop(page, live_server_url, sim)


def test_the_what_ifs_and_knobs_show_the_config_in_force_and_follow_it(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    page.click("#drawer-tabs [data-tab=tab-inject]")
    form = page.locator("#form-config")
    # Every feature is on by default, and each knob shows its value.
    for name in ("whatIf.expectations", "whatIf.slowStart", "featureGates.PodDeletionCost"):
        expect(form.locator(f"input[name='{name}']")).to_be_checked()
    for name, value in (("workers", "5"), ("burstReplicas", "500"), ("kubeApiQPS", "20"), ("apiLatency", "0.005")):
        expect(form.locator(f"input[name={name}]")).to_have_value(value)
    # A change made elsewhere (another viewer, kubectl, a scenario's config action) shows.
    command(page, {"op": "act", "action": {"config": {"workers": 2, "whatIf": {"slowStart": False}}}})
    expect(form.locator("input[name=workers]")).to_have_value("2")
    expect(form.locator("input[name='whatIf.slowStart']")).not_to_be_checked()
    # What the user is changing is theirs until applied; only it is sent.
    form.locator("input[name=burstReplicas]").fill("7")
    page.evaluate("() => document.activeElement.blur()")
    command(page, {"op": "act", "action": {"config": {"kubeApiQPS": 50}}})
    expect(form.locator("input[name=kubeApiQPS]")).to_have_value("50")
    expect(form.locator("input[name=burstReplicas]")).to_have_value("7")
    form.locator("button[type=submit]").click()
    expect(form.locator(".form-result")).to_contain_text("applied")
    now = page.evaluate("() => window.ctrlscope.status.t")
    exported = command(page, {"op": "export"})["scenario"]["actions"]
    configs = [a["config"] for a in exported if "config" in a and a["at"] <= now]
    assert configs[-1] == {"burstReplicas": 7}
    command(page, {"op": "act", "action": {"config": {"burstReplicas": 9}}})
    expect(form.locator("input[name=burstReplicas]")).to_have_value("9")  # it follows again
    stop(page, live_server_url, sim)


def test_actions_events_and_trace_list_in_one_order_oldest_first(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    run_to(page, 2)
    for replicas in (5, 6):
        command(page, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": replicas}}})
        run_to(page, page.evaluate("() => window.ctrlscope.status.t") + 1)
    page.click("#drawer-tabs [data-tab=tab-actions]")
    rows = page.locator("#actions tbody tr")
    expect(rows.last).to_contain_text('"replicas":6')
    texts = rows.all_inner_texts()
    first5 = next(i for i, t in enumerate(texts) if '"replicas":5' in t)
    first6 = next(i for i, t in enumerate(texts) if '"replicas":6' in t)
    assert first5 < first6

    def times(rows: str) -> list[float]:
        return page.evaluate(
            f"() => [...document.querySelectorAll('{rows} a.jump')].map((a) => parseFloat(a.dataset.jumpT))"
        )

    page.click("#drawer-tabs [data-tab=tab-events]")
    events = times("#rows-events tr")
    assert len(events) > 3 and events == sorted(events)
    page.click("#drawer-tabs [data-tab=tab-trace]")
    page.wait_for_function("() => document.querySelectorAll('#trace-all-rows tr[data-seq]').length > 3")
    seqs = page.evaluate(
        "() => [...document.querySelectorAll('#trace-all-rows tr[data-seq]')].map((r) => +r.dataset.seq)"
    )
    assert seqs == sorted(seqs)
    for rows in ("#trace-all-rows tr", "#rows-trace tr"):
        page.wait_for_function(f"() => document.querySelectorAll('{rows} a.jump').length > 3")
        trace = times(rows)
        assert trace and trace == sorted(trace)
    stop(page, live_server_url, sim)

"""Fork from here in a real browser: a session runs past a scale; the user forks it just before
the scale with a different number of replicas and lands on the compare page, where the fork mark
and the first divergence show where the two worlds part."""

from __future__ import annotations

import time

from playwright.sync_api import Page, expect

from .conftest import shot
from .test_dashboard import run_to, start
from .test_time_travel import PAST, view_at


def test_fork_before_a_scale_with_other_replicas_and_compare(page: Page, live_server_url: str):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    # scale-up-and-down: its file scales web from 2 to 10 at t=10 and back to 3 at t=12.
    sim_id = start(page, live_server_url, scenario="scale-up-and-down", seed="2")
    run_to(page, 11)
    # Live, the menu forks at now.
    page.click("#fork-menu summary")
    form = page.locator("#fork-menu form")
    expect(form).to_be_visible()
    expect(form.locator("input[name=at]")).to_have_value("")
    expect(form.locator("input[name=compare][type=checkbox]")).to_be_checked()
    page.click("#fork-menu summary")
    # Look at the moment just before the scale; the menu then forks there, 8 replicas asked for.
    view_at(page, "9.5")
    expect(page.locator("#past-at")).to_have_text("t=9.500 s", timeout=PAST)
    page.click("#fork-menu summary")
    expect(form.locator("input[name=at]")).to_have_value("9.5")
    expect(form.locator(".fork-at-hint")).to_contain_text("the moment viewed")
    form.locator("textarea[name=change]").fill("scale: {kind: ReplicaSet, name: web, replicas: 8}")
    shot(page, "fork-menu")
    form.locator("button[type=submit]").click()
    # The compare page: A is the original at t=11, B the fork paused at t=9.5.
    page.wait_for_url(f"**/compare/{sim_id}/*/")
    fork_id = page.url.rstrip("/").split("/")[-1]
    assert fork_id.startswith("scale-up-and-down-fork-")
    expect(page.locator("#fork-line-b")).to_contain_text("B is a fork of A at t=9.500")
    expect(page.locator("#time-a")).to_have_text("11.000 s")
    expect(page.locator("#time-b")).to_have_text("9.500 s")
    expect(page.locator("#fork-mark")).to_be_attached()
    # Both to t=30 in lock-step (B catches up first): the divergence comes after the fork mark.
    page.fill("#compare-toolbar input[name=t]", "30")
    page.click("#compare-toolbar button[value=to]")
    expect(page.locator("#time-a")).to_have_text("30.000 s")
    expect(page.locator("#time-b")).to_have_text("30.000 s")
    expect(page.locator(".first-divergence")).to_contain_text("first divergence at t=9.5")
    expect(page.locator("#compare-timeline svg .mark").first).to_be_attached()
    mark_x = float(page.locator("#fork-mark line").get_attribute("x1") or "nan")
    first_x = float(page.locator("#compare-timeline svg .mark line").first.get_attribute("x1") or "nan")
    assert 0 < mark_x <= first_x, (mark_x, first_x)
    expect(page.locator("#pods-table")).to_contain_text("ReplicaSet/default/web")
    shot(page, "fork-compare")
    # The fork is a session like any other: its own page says where it came from.
    page.goto(f"{live_server_url}/sim/{fork_id}/")
    expect(page.locator("#fork-note")).to_contain_text("A fork of")
    expect(page.locator("#fork-note")).to_contain_text("at t=9.500")
    expect(page.locator(".sim-name")).to_contain_text("fork of scale up and down at t=9.500")
    assert errors == [], errors


def test_a_bad_fork_is_a_form_error(page: Page, live_server_url: str):
    sim_id = start(page, live_server_url, scenario="scale-up-and-down")
    run_to(page, 3)
    page.click("#fork-menu summary")
    form = page.locator("#fork-menu form")
    form.locator("input[name=at]").fill("999")
    form.locator("textarea[name=change]").fill("workers: 0")
    form.locator("button[type=submit]").click()
    errors = page.locator("#fork-errors li")
    expect(errors.nth(0)).to_contain_text("change: config.workers: must be >= 1")
    # The page keeps what was typed; fixed, the fork is made (here without the comparison).
    page.fill("#fork-page-form textarea[name=change]", "")
    page.uncheck("#fork-page-form input[name=compare][type=checkbox]")
    started = time.monotonic()
    page.click("#fork-page-form button[type=submit]")
    expect(page.locator("#fork-errors li").first).to_contain_text("at: must be <= now (t=3.000)")
    page.fill("#fork-page-form input[name=at]", "")
    page.click("#fork-page-form button[type=submit]")
    page.wait_for_url(f"{live_server_url}/sim/*/")
    assert page.url.rstrip("/").split("/")[-1] != sim_id
    expect(page.locator("#fork-note")).to_contain_text("at t=3.000")
    assert time.monotonic() - started < 30

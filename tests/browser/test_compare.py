"""The compare page in a real browser: two configurations of one scenario side by side."""

import pathlib
import time

from playwright.sync_api import Page, expect

from controlplane.session.timefmt import vtime

from .conftest import PATIENCE_S, TOKEN, shot

THOUSAND = pathlib.Path(__file__).with_name("compare-1000.yaml")


def start(page: Page, url: str, *, scenario: str | None = None, upload: pathlib.Path | None = None) -> None:
    page.goto(f"{url}/?token={TOKEN}")
    page.click("#compare-entry a")
    expect(page.locator("h1")).to_have_text("Compare")
    if scenario:
        page.select_option("#compare-form select[name=scenario]", scenario)
    if upload:
        page.set_input_files("#compare-form input[type=file]", str(upload))
    page.fill("#compare-form textarea[name=a]", "whatIf: {slowStart: false}")
    page.fill("#compare-form textarea[name=b]", "{}")
    page.click("#compare-form button[type=submit]")
    expect(page.locator("#side-a")).to_be_visible()


def run_then_step_to(page: Page, t: float, speed: str = "max") -> None:
    """Run both for a moment, pause, then step both to `t`."""
    page.select_option("#compare-toolbar select[name=speed]", speed)
    page.click("#compare-toolbar button[value=run]")
    deadline = time.monotonic() + PATIENCE_S
    while float(page.locator("#time-b").get_attribute("data-t")) < 1.0:
        assert time.monotonic() < deadline, "the pair did not run"
        page.wait_for_timeout(100)
    page.click("#compare-toolbar button[value=pause]")
    expect(page.locator("#pair-mode")).to_have_text("paused")
    if float(page.locator("#time-b").get_attribute("data-t")) < t:
        page.fill("#compare-toolbar input[name=t]", str(t))
        page.click("#compare-toolbar button[value=to]")
        expect(page.locator("#time-b")).to_have_text(vtime(t))
        expect(page.locator("#time-a")).to_have_text(vtime(t))


def test_compare_quota_slow_start_on_and_off(page: Page, live_server_url: str):
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    start(page, live_server_url, scenario="quota-slow-start")
    expect(page.locator("#side-a .config")).to_contain_text("whatIf.slowStart: false")
    expect(page.locator("#side-b .config")).to_contain_text("whatIf.slowStart: true")
    run_then_step_to(page, 40, speed="10.0")
    # Both worlds stand at the same time, and they differ: the first divergence is marked.
    assert page.locator("#time-a").inner_text() == page.locator("#time-b").inner_text()
    expect(page.locator(".first-divergence")).to_contain_text("first divergence at t=0.100")
    expect(page.locator("#divergences li").first).to_contain_text("create pods (403)")
    expect(page.locator("#compare-timeline svg .mark").first).to_be_attached()
    row = page.locator("#calls-table tr.differs").first
    expect(row).to_contain_text("replicaset-controller")
    a_failed = int(page.locator("#side-a p.small b.num").nth(1).inner_text())
    b_failed = int(page.locator("#side-b p.small b.num").nth(1).inner_text())
    assert a_failed > b_failed > 0
    expect(page.locator("#events-table")).to_contain_text("FailedCreate")
    expect(page.locator("#pods-table")).to_contain_text("ReplicaSet/default/web")
    assert errors == []
    shot(page, "compare-quota")
    # A refused command shows its one line (the browser logs the 400 itself).
    page.fill("#compare-toolbar input[name=t]", "-5")
    page.click("#compare-toolbar button[value=to]")
    expect(page.locator("#compare-message")).to_contain_text("t: must be later than now")


def test_compare_a_thousand_pods_stays_responsive(page: Page, live_server_url: str):
    start(page, live_server_url, upload=THOUSAND)
    run_then_step_to(page, 90)
    expect(page.locator("#side-a .owner-sum")).to_contain_text("web")
    # The partial (both worlds and the summary) answers quickly at this size.
    url = page.url.rstrip("/") + "/view"
    began = time.monotonic()
    assert page.request.get(url).status == 200
    assert time.monotonic() - began < 2.0
    shot(page, "compare-1000-pods")

"""From effect to cause, in a real browser: a FailedCreate event's why? lands on the sync that got
the 403 (and names the apiFault behind it); the complete trace view scrolls through every record
and filters on the server."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from dashboard.timefmt import vtime

from .conftest import shot
from .test_dashboard import errors, run_to, start, stop  # noqa: F401

PAST = 30_000  # ms: the first past view starts the replay worker


def test_a_failed_create_events_why_lands_on_the_sync_that_got_the_403(
    page: Page, live_server_url: str, errors  # noqa: F811
):
    sim = start(page, live_server_url, scenario="quota-slow-start")
    run_to(page, 2)
    page.click("#drawer-tabs [data-tab=tab-events]")
    row = page.locator("#rows-events tr", has_text="FailedCreate").first
    row.locator("a.why").click()
    chain = page.locator("#why-panel .why-chain")
    expect(chain).to_be_visible()
    expect(chain.locator("li").first).to_contain_text("FailedCreate")
    expect(chain.locator("li[data-kind='api.response']")).to_contain_text("403 Forbidden")
    expect(chain.locator("li.side")).to_contain_text("apiFault")
    sync = chain.locator("li[data-kind='sync.start']").first
    expect(sync).to_contain_text("default/web")
    shot(page, "dashboard-why")
    # The sync's time is its moment: the page goes there.
    link = sync.locator("a.jump")
    t = float(link.get_attribute("data-jump-t"))
    link.click()
    expect(page.locator("#past-banner")).to_be_visible(timeout=PAST)
    expect(page.locator("#past-at")).to_have_text(f"t={vtime(t)}", timeout=PAST)  # the one time format
    page.keyboard.press("Escape")
    expect(page.locator("#why-panel")).to_be_hidden()
    page.keyboard.press("End")
    expect(page.locator("#past-banner")).to_be_hidden()
    stop(page, live_server_url, sim)


def test_the_complete_trace_view_scrolls_every_record_and_filters(
    page: Page, live_server_url: str, errors  # noqa: F811
):
    sim = start(page, live_server_url)
    run_to(page, 25)
    page.click("#drawer-tabs [data-tab=tab-trace]")
    count = page.locator("#trace-all-count")
    expect(count).to_contain_text("records")
    total = page.evaluate(f"() => fetch('/sim/{sim}/records.json?limit=0').then(r => r.json()).then(j => j.total)")
    assert total > 500  # more than the 300 rows a frame-fed log ever held
    expect(count).to_contain_text(f"{total:,} records")
    rows = page.locator("#trace-all-rows tr")
    assert rows.count() < 100  # only the rows in sight exist
    # Scroll to the very first record: it is there (nothing was dropped).
    page.uncheck("#trace-follow")
    page.evaluate("() => { document.getElementById('trace-all').scrollTop = 0; }")
    expect(rows.first).to_have_attribute("data-seq", "1")
    page.fill("#trace-q-kind", "sync.start")
    expect(count).not_to_contain_text(f"{total:,} records")
    expect(rows.first).to_have_attribute("data-kind", "sync.start")
    shot(page, "dashboard-trace-complete")
    rows.first.locator("a.why").click()
    expect(page.locator("#why-panel li").first).to_contain_text("sync #")
    stop(page, live_server_url, sim)

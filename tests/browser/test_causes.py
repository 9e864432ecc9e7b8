"""From effect to cause, in a real browser: a FailedCreate event's why? lands on the sync that got
the 403 (and names the apiFault behind it); the complete trace view scrolls through every record
and filters on the server."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from controlplane.session.timefmt import vtime

from .conftest import PATIENCE_MS, shot
from .test_dashboard import errors, run_to, start, stop  # noqa: F401

PAST = PATIENCE_MS  # the first past view starts the replay worker


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
    expect(page.locator("#past-at")).to_have_text(f"t={vtime(t)}", timeout=PAST)
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


def test_a_sync_span_on_the_timeline_goes_to_its_moment_and_opens_its_why(
    page: Page, live_server_url: str, errors  # noqa: F811
):
    """A span (one sync of a key) links to its cause like every other row: a click moves the
    cursor to the sync's start and opens the why? of that sync (its queue item, the handler …)."""
    sim = start(page, live_server_url)
    run_to(page, 8)
    page.wait_for_function("() => window.CtrlscopeTimeline.spanBoxes().length > 2")
    # Zoom in on the first syncs (a few ms apart: a pixel apart at the first zoom), then take a
    # span with room around it.
    box = page.locator("#timeline-canvas").bounding_box()
    assert box is not None
    first = page.evaluate("() => window.CtrlscopeTimeline.spanBoxes()[0]")
    page.mouse.move(box["x"] + first["x0"], box["y"] + first["top"])
    page.keyboard.down("Control")  # ctrl+wheel zooms (the plain wheel scrolls lanes that overflow)
    for _ in range(24):
        page.mouse.wheel(0, -100)
    page.keyboard.up("Control")
    isolated = """() => {
        const boxes = window.CtrlscopeTimeline.spanBoxes();
        const apart = (b, o) => o === b || o.top !== b.top || o.x0 > b.x1 + 8 || o.x1 < b.x0 - 8;
        return boxes.find(b => b.x0 > 0 && boxes.every(o => apart(b, o)));
    }"""
    page.wait_for_function(isolated)
    span = page.evaluate(isolated)
    assert span and span["seq"] > 0
    page.mouse.click(box["x"] + (span["x0"] + span["x1"]) / 2, box["y"] + span["top"] + span["height"] / 2)
    expect(page.locator("#past-banner")).to_be_visible(timeout=PAST)
    expect(page.locator("#past-at")).to_have_text(f"t={vtime(span['start'])}", timeout=PAST)
    # Right after the event that wrote the sync's start (that event may write a few more records).
    page.wait_for_function(f"() => window.CtrlscopePast.position().seq >= {span['seq']}", timeout=PAST)
    chain = page.locator(f"#why-panel .why-chain[data-why-of='{span['seq']}']")
    expect(chain).to_be_visible()
    first = chain.locator("li").first
    expect(first).to_have_attribute("data-kind", "sync.start")
    expect(chain.locator("li[data-kind='queue.get']")).to_have_count(1)
    expect(chain.locator("li.future")).to_have_count(0)  # the moment viewed is the sync's own
    page.keyboard.press("End")
    expect(page.locator("#past-banner")).to_be_hidden()
    stop(page, live_server_url, sim)


def test_viewing_the_past_the_trace_view_and_why_end_at_the_moment_viewed(
    page: Page, live_server_url: str, errors  # noqa: F811
):
    """Panels never mix times: at a moment of the past the complete trace view holds the records up
    to that moment and none after it, and a why? of a later record says it is in the future."""
    sim = start(page, live_server_url)
    run_to(page, 20)
    page.click("#drawer-tabs [data-tab=tab-trace]")
    count = page.locator("#trace-all-count")
    total = page.evaluate(f"() => fetch('/sim/{sim}/records.json?limit=0').then(r => r.json()).then(j => j.total)")
    expect(count).to_contain_text(f"{total:,} records")
    late = page.locator("#trace-all-rows tr").last
    expect(late).to_have_attribute("data-seq", str(total))  # following the newest record
    late_seq = total
    late.locator("a.why").click()  # opened live: nothing is in the future yet
    expect(page.locator(f"#why-panel .why-chain[data-why-of='{late_seq}']")).to_be_visible()
    expect(page.locator("#why-panel li.future")).to_have_count(0)
    page.fill("#view-at input", "3")
    page.press("#view-at input", "Enter")
    expect(page.locator("#past-at")).to_have_text("t=3.000 s", timeout=PAST)
    at = page.evaluate("() => window.CtrlscopePast.position().seq")
    assert 0 < at < late_seq
    # The trace view: the records up to the moment, the last one shown is the moment's.
    expect(count).to_contain_text(f"{at:,} records up to #{at}")
    expect(page.locator("#trace-all-rows tr").last).to_have_attribute("data-seq", str(at))
    rows = page.evaluate("() => [...document.querySelectorAll('#trace-all-rows tr')].map(r => +r.dataset.seq)")
    assert rows and max(rows) == at
    # The open why? of the later record is asked again for the moment: it is in that moment's future.
    expect(page.locator("#why-panel .future-note")).to_contain_text(f"#{late_seq} is after the moment")
    expect(page.locator("#why-panel li.future").first).to_contain_text("in the future")
    page.click("#past-to-live")
    expect(page.locator("#past-banner")).to_be_hidden()
    expect(count).to_contain_text(f"{total:,} records")
    expect(page.locator("#why-panel li.future")).to_have_count(0)
    stop(page, live_server_url, sim)


def test_the_trace_view_following_the_newest_records_never_blinks_empty(
    page: Page, live_server_url: str, errors  # noqa: F811
):
    """Following the newest records onto a page of the trace not fetched yet kept nothing on
    screen until it arrived (and a test reading the rows in between saw none); then it kept the
    old rows, but above the part of the box it had already scrolled to."""
    sim = start(page, live_server_url)
    run_to(page, 1)
    page.click("#drawer-tabs [data-tab=tab-trace]")
    page.wait_for_function("() => document.querySelectorAll('#trace-all-rows tr').length > 3")
    # Counted on every animation frame: no rows at all (a blink), or rows none of which is in the
    # visible part of the box (the view moved to the newest records before they arrived).
    page.evaluate(
        """() => { window.__blinks = 0; window.__empty = 0; window.__samples = 0;
                   const tbody = document.getElementById('trace-all-rows');
                   const box = document.getElementById('trace-all');
                   new MutationObserver(() => { if (!tbody.rows.length) window.__blinks++; })
                     .observe(tbody, {childList: true});
                   const look = () => {
                     const b = box.getBoundingClientRect();
                     const seen = [...tbody.rows].some((r) => {
                       const q = r.getBoundingClientRect(); return q.bottom > b.top + 1 && q.top < b.bottom - 1; });
                     window.__samples++;
                     if (!seen) window.__empty++;
                     requestAnimationFrame(look); };
                   requestAnimationFrame(look); }"""
    )
    before = page.evaluate(f"() => fetch('/sim/{sim}/records.json?limit=0').then(r => r.json()).then(j => j.total)")
    for t in (5, 10, 15, 20, 25):  # a few hundred records each: the view follows onto new pages
        run_to(page, t)
        page.wait_for_timeout(1200)  # the view refreshes once a second
    after = page.evaluate(f"() => fetch('/sim/{sim}/records.json?limit=0').then(r => r.json()).then(j => j.total)")
    assert after - before > 400  # at least two pages of 200 crossed
    expect(page.locator("#trace-all-count")).to_contain_text(f"{after:,} records")
    assert page.evaluate("() => window.__blinks") == 0
    assert page.evaluate("() => window.__samples") > 100
    assert page.evaluate("() => window.__empty") == 0, "the visible part of the view was empty while following"
    # And it stands on the newest record.
    expect(page.locator("#trace-all-rows tr").last).to_have_attribute("data-seq", str(after))
    # To a moment of the past and back to live: the view goes from one end to the other in one
    # step (it went to the first records, then a second later to the newest).
    page.fill("#view-at input", "3")
    page.press("#view-at input", "Enter")
    expect(page.locator("#past-at")).to_have_text("t=3.000 s", timeout=PAST)
    at = page.evaluate("() => window.CtrlscopePast.position().seq")
    expect(page.locator("#trace-all-rows tr").last).to_have_attribute("data-seq", str(at))
    page.evaluate(
        """() => { window.__views = []; const tbody = document.getElementById('trace-all-rows');
                   const box = document.getElementById('trace-all');
                   const look = () => {
                     const b = box.getBoundingClientRect();
                     const row = [...tbody.rows].find((r) => r.getBoundingClientRect().bottom > b.top + 1);
                     const seq = row ? +row.dataset.seq : 0;
                     if (window.__views.at(-1) !== seq) window.__views.push(seq);
                     requestAnimationFrame(look); };
                   requestAnimationFrame(look); }"""
    )
    page.click("#past-to-live")
    expect(page.locator("#past-banner")).to_be_hidden()
    expect(page.locator("#trace-all-rows tr").last).to_have_attribute("data-seq", str(after))
    page.wait_for_timeout(1500)  # a refresh or two more
    rows = page.evaluate("() => Math.ceil(document.getElementById('trace-all').clientHeight / 20)")
    views = page.evaluate("() => window.__views")
    assert all(at - rows - 6 <= v <= at or v >= after - rows - 6 for v in views), (at, after, views)
    stop(page, live_server_url, sim)

"""The Events tab lists Events as `kubectl get events` does: repeated occurrences the correlator
counts into one Event are one row with its count."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from controlplane.session.timefmt import vtime

from .conftest import shot
from .test_dashboard import command, errors, run_to, start, stop  # noqa: F401 - the errors fixture


def test_repeated_failed_creates_are_one_row_with_their_count(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start(page, live_server_url)
    run_to(page, 3)
    quota = {"verb": "create", "resource": "pods", "count": 4, "code": 403, "reason": "quota"}
    assert command(page, {"op": "act", "action": {"apiFault": quota}})["ok"]
    assert command(page, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}}})["ok"]
    run_to(page, 30)
    page.click("#drawer-tabs [data-tab=tab-events]")
    failed = page.locator("#rows-events tr", has_text="FailedCreate").filter(has_text="ReplicaSet/default/web")
    expect(failed).to_have_count(1)
    count = int(failed.locator("td").nth(5).inner_text())
    occurrences = page.evaluate(
        """async () => {
            const r = await fetch(location.pathname + "records.json?kind=event&text=FailedCreate&limit=100");
            return (await r.json()).rows.filter(x => x.subject === "ReplicaSet/default/web").length;
        }"""
    )
    assert count == occurrences and count >= 2  # one row, every occurrence counted
    # The row's tooltips are the page's, written on the first hover (no row carries them).
    cell = failed.locator("td.count")
    cell.hover()
    expect(cell).to_have_attribute(
        "title",
        f"the count of the Event {failed.get_attribute('data-event')} after this "
        "occurrence (the correlator patches its count and lastTimestamp)",
    )
    failed.locator("a.jump").hover()
    expect(failed.locator("a.jump")).to_have_attribute("title", "see the world right after this event was recorded")
    failed.locator("a.why").hover()
    expect(failed.locator("a.why")).to_have_attribute("title", "why? the chain of causes of this row")
    page.click("#drawer-tabs [data-tab=tab-api]")
    jump = page.locator("#rows-api tr a.jump").last
    jump.hover()
    expect(jump).to_have_attribute(
        "title", f"see the world when its answer came (t={vtime(float(jump.get_attribute('data-jump-t')))})"
    )
    shot(page, "dashboard-events-count")
    stop(page, live_server_url, sim)

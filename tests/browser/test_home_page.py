"""The home page in a real browser (Debian Chromium through Playwright)."""

from playwright.sync_api import Page, expect

from controlplane.scenario import library

from .conftest import shot


def test_home_page_renders_in_chromium(page: Page, live_server_url: str):
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(live_server_url + "/")
    expect(page.locator("h1")).to_have_text("ctrlscope")
    expect(page.locator("main")).to_contain_text("visual debugger for Kubernetes controllers")
    expect(page.locator("#scenarios li")).to_have_count(len(library()))
    # The stylesheet is served (WhiteNoise, no CDN) and applied.
    assert page.request.get(live_server_url + "/static/dashboard/ctrlscope.css").status == 200
    assert page.locator("#scenarios").evaluate("el => getComputedStyle(el).display") == "grid"
    assert errors == []
    shot(page, "home")

"""The Content-Security-Policy in the real browser: the pages work under it (websocket, tiles,
commands, htmx polling, the inspector's fragments) and Chromium reports no violation at all."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import TOKEN, shot
from .test_dashboard import start, stop, wait_pods

# Installed by the browser before any page script (not subject to the page's CSP).
LISTEN = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


@pytest.fixture
def violations(page: Page):
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: console.append(str(exc)))
    page.add_init_script(LISTEN)

    def check() -> None:
        seen = page.evaluate("() => window.__csp || []")
        assert seen == [], seen
        policy = [line for line in console if "Content Security Policy" in line or "Content-Security-Policy" in line]
        assert policy == [], policy

    yield check
    check()
    # An answer's status (the 404 page, an inspector's 400) is not a script error.
    errors = [line for line in console if not line.startswith("Failed to load resource: the server responded")]
    assert errors == [], errors


def test_the_sim_page_works_under_the_policy(page: Page, live_server_url: str, violations):
    response = page.goto(f"{live_server_url}/sim/demo/?token={TOKEN}")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    expect(page.locator("#st-conn")).to_have_text("live")  # the websocket: connect-src 'self' covers ws:
    wait_pods(page, "Object.values(s).filter(v => v === 'Ready').length >= 9")  # tiles drawn
    violations()
    shot(page, "csp-sim-page")


def test_commands_fragments_and_expectations_work_under_the_policy(page: Page, live_server_url: str, violations):
    sim = start(page, live_server_url)  # paused
    page.click("#btn-sync")  # a command: one sync, which expects pod creations
    page.wait_for_function("() => window.ctrlscope.status && window.ctrlscope.status.events > 0")
    meter = page.locator("meter.ttl").first
    expect(meter).to_be_attached()
    assert 0 <= float(meter.get_attribute("value")) <= 100
    page.click("#btn-run")
    expect(page.locator("#st-mode")).to_contain_text("running")
    # The inspector's fragments: a pod that does not exist answers an escaped error.
    page.evaluate("() => window.ctrlscope.openPod('default', '<img src=x onerror=alert(1)>')")
    expect(page.locator("#pod-detail")).to_contain_text("<img src=x onerror=alert(1)>")
    assert page.locator("#pod-detail img").count() == 0
    violations()
    stop(page, live_server_url, sim)


def test_the_home_page_polls_under_the_policy(page: Page, live_server_url: str, violations):
    response = page.goto(f"{live_server_url}/")
    assert "style-src 'self'" in response.headers["content-security-policy"]
    with page.expect_response(lambda r: r.url.endswith("/sims/")):
        pass  # htmx polls the list every 3 s: no indicator styles, no eval
    page.goto(f"{live_server_url}/no/such/page")
    expect(page.locator("main")).to_contain_text("Nothing here")
    violations()

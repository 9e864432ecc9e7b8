"""A paused page does nothing (issue #19 Targets: the page's main thread <= 5 % busy while
paused): no CSS animation that never ends (the legend's CrashLoopBackOff swatch pulsed forever,
repainting the page 60 times a second), no canvas redrawn while nothing moves (the timeline
redrew itself twice a second)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from .test_dashboard import errors, run_to, start, stop  # noqa: F401 - errors is a fixture


@pytest.mark.usefixtures("errors")  # no script error on the page either
def test_a_paused_page_runs_no_endless_animation_and_draws_nothing(page: Page, live_server_url: str):
    sim = start(page, live_server_url)
    run_to(page, 5.0)
    page.wait_for_timeout(1200)  # the step's last frames, and any glow of a changed number (0.9 s)
    endless = page.evaluate(
        "() => [...document.querySelectorAll('*')]"
        ".filter((e) => getComputedStyle(e).animationIterationCount.split(',').includes('infinite'))"
        ".map((e) => e.tagName + '.' + e.className)"
    )
    assert endless == []
    # Count the animation frames the page's scripts ask for while it stays paused: none.
    page.evaluate(
        """() => {
          window.__frames = 0;
          const request = window.requestAnimationFrame.bind(window);
          window.requestAnimationFrame = (callback) => { window.__frames += 1; return request(callback); };
        }"""
    )
    page.wait_for_timeout(2000)
    assert page.evaluate("() => window.__frames") == 0
    assert page.evaluate("() => document.getAnimations().length") == 0
    stop(page, live_server_url, sim)

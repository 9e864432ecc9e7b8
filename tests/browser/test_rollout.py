"""A Deployment in a real browser: focus it, read its rollout (old and new ReplicaSets, the surge
and unavailability budget, revisions, conditions), read its sync in the inspector in upstream's
function names with their links, act on it (pause, resume, set image with a form error first,
undo), and take the screenshots docs/dashboard.md shows."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from .conftest import TOKEN, shot
from .test_dashboard import errors, run_to, stop  # noqa: F401 - errors is a fixture

DEPLOYMENT_GO = "https://github.com/pohly/kubernetes/blob/bf9daf44"  # the pinned commit's prefix


def start_rollout(page: Page, url: str) -> str:
    page.goto(f"{url}/?token={TOKEN}")
    page.select_option("#start-form select[name=scenario]", "deployment-rolling-update")
    page.set_checked("#start-form input[name=run]", False)
    page.click("#start-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/sim/[a-z0-9-]+/$"))
    expect(page.locator("#st-conn")).to_have_text("live")
    return page.url.rstrip("/").split("/")[-1]


def test_a_rolling_update_read_and_driven_from_the_rollout_panel(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start_rollout(page, live_server_url)
    run_to(page, 33)
    page.click("#owners article[data-owner='Deployment/web'] a.owner-name")
    rollout = page.locator("#rollout")
    expect(rollout).to_contain_text("Rollout default/web")
    expect(rollout).to_contain_text("revision 2")
    expect(rollout.locator("tr.new")).to_contain_text("nginx:1.28")
    expect(rollout.locator("tr.old")).to_contain_text("nginx:1.27")
    # The budget in upstream's terms: the ReplicaSets' spec.replicas against replicas + maxSurge
    # (25% of 10 rounded up: 3), the available ones against replicas - maxUnavailable (25% of 10
    # rounded down: 2), each number the one the controller compares.
    expect(rollout).to_contain_text("of at most 13 = 10 + maxSurge 3")
    expect(rollout).to_contain_text("at least 8 = 10 \u2212 maxUnavailable 2")
    expect(rollout).not_to_contain_text("unavailable 5 of at most")
    # The Deployment's own lane, its ReplicaSets' beneath it: its revisions, its conditions,
    # its ScalingReplicaSet Events.
    page.wait_for_function("() => window.CtrlscopeTimeline.drawn().length >= 2")
    drawn = page.evaluate("() => window.CtrlscopeTimeline.drawn().map(l => l.owner)")
    assert drawn[0] == "Deployment/web", drawn
    assert all(o.startswith("ReplicaSet/web-") for o in drawn[1:]), drawn
    marks = page.evaluate("() => window.CtrlscopeTimeline.marks()")
    assert ["rev", "2"] in [m[2:4] for m in marks], marks
    assert any(m[2] == "ev" and m[3] == "ScalingReplicaSet" and "web-77768f5b79" in m[4] for m in marks), marks
    assert any(m[2] == "cond" and m[3] == "Progressing=True" and m[4].startswith("ReplicaSetUpdated") for m in marks)
    assert "revision 2" in page.evaluate("() => window.CtrlscopeTimeline.ownAt('Deployment/web', 32)")
    assert "revision 1" in page.evaluate("() => window.CtrlscopeTimeline.ownAt('Deployment/web', 20)")
    expect(rollout).to_contain_text("Progressing=True")
    expect(rollout.locator(".deadline")).to_contain_text("deadline in")
    expect(rollout.locator("svg.spark").first).to_be_visible()
    # The ReplicaSets' pods are the Deployment's: its focus shows their tiles and lanes.
    expect(page.locator("#owners article[data-owner='ReplicaSet/web-77768f5b79']")).to_have_attribute(
        "data-parent", "Deployment/web"
    )

    # The inspector tells the Deployment's sync in the Deployment controller's stages (not the
    # ReplicaSet controller's, whose version name is the same).
    page.click("#btn-sync")
    inspector = page.locator("[data-slot=inspector]")
    expect(inspector).to_contain_text("calls syncDeployment")
    for words in ("getReplicaSetsForDeployment → ClaimReplicaSets", "rolloutRolling", "reconcileOldReplicaSets"):
        expect(inspector).to_contain_text(words)
    expect(inspector.locator("a:text-is('rolloutRolling')")).to_have_attribute(
        "href",
        re.compile(re.escape(DEPLOYMENT_GO) + r"[0-9a-f]*/pkg/controller/deployment/deployment_controller.go#L625"),
    )
    shot(page, "dashboard-rollout")

    # Actions: a form error first (nothing sent), then the API server's own words, then real ones.
    result = rollout.locator(".form-result")
    rollout.locator("form[data-rollout=image] button[type=submit]").click()
    expect(result).to_contain_text("image: required")
    rollout.locator("form[data-rollout=image] input[name=image]").fill("nginx:1.29")
    rollout.locator("form[data-rollout=image] button[type=submit]").click()
    expect(page.locator("#st-result, #rollout .form-result").first).not_to_have_class(re.compile("bad"))
    rollout.locator("button:text-is('pause')").click()
    expect(rollout.locator(".badge.warn")).to_have_text("paused")
    rollout.locator("button:text-is('resume')").click()
    expect(rollout.locator("h2 .badge.warn")).to_have_count(0)
    run_to(page, 80)
    expect(rollout).to_contain_text("revision 3")
    expect(rollout.locator("tr.new")).to_contain_text("nginx:1.29")
    rollout.locator("button:has-text('undo to rev 2')").click()
    run_to(page, 140)
    expect(rollout).to_contain_text("revision 4")
    expect(rollout.locator("tr.new")).to_contain_text("nginx:1.28")
    rollout.locator("button:text-is('restart')").click()
    run_to(page, 200)
    expect(rollout).to_contain_text("revision 5")
    stop(page, live_server_url, sim)


def test_the_image_fault_control_sends_config_image_faults(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start_rollout(page, live_server_url)
    run_to(page, 1)
    page.click("#owners article[data-owner='Deployment/web'] a.owner-name")
    rollout = page.locator("#rollout")
    form = rollout.locator("form[data-rollout=imageFault]")
    form.locator("button[type=submit]").click()
    expect(rollout.locator(".form-result")).to_contain_text("an image glob is required")
    form.locator("input[name=glob]").fill("nginx:bad")
    form.locator("button[type=submit]").click()
    try:
        expect(rollout.locator(".form-result")).to_have_class(re.compile(r"\bok\b"))
    finally:
        stop(page, live_server_url, sim)


def test_a_rollout_breakpoint_pauses_where_the_rollout_completes(page: Page, live_server_url: str, errors):  # noqa: F811
    """The breakpoint form offers the Deployment controller's moments: a rollout starts a new
    revision, completes, exceeds its progress deadline."""
    sim = start_rollout(page, live_server_url)
    page.click("#drawer-tabs [data-tab=tab-breakpoints]")
    form = page.locator("#form-breakpoint")
    form.locator("select[name=kind]").select_option("rolloutComplete")
    expect(form.locator("input[name=key]")).to_be_visible()
    form.locator("select[name=controller]").select_option("replicaset")
    form.locator("button[type=submit]").click()
    expect(form.locator(".form-result")).to_have_class(re.compile(r"\bbad\b"))  # not a Deployment's moment
    form.locator("select[name=controller]").select_option("")
    form.locator("input[name=key]").fill("default/web")
    form.locator("button[type=submit]").click()
    expect(page.locator("#breakpoints li")).to_have_count(1)
    page.click("#btn-run")
    expect(page.locator("#st-hit")).to_contain_text("Breakpoint #1 fired")
    expect(page.locator("#st-mode")).to_have_text("paused")
    stop(page, live_server_url, sim)


def test_a_stuck_rollout_reads_true_states_faults_and_lanes(page: Page, live_server_url: str, errors):  # noqa: F811
    """lesson-rollout-stuck-image-pull: the new pods read ErrImagePull / ImagePullBackOff (not
    Scheduled) in the legend, the faults panel lists config.imageFaults and removes one, the
    Deployment's lane shows Progressing turning False, and a search finds the Deployment and
    focuses its lanes."""
    page.goto(f"{live_server_url}/?token={TOKEN}")
    page.select_option("#start-form select[name=scenario]", "lesson-rollout-stuck-image-pull")
    page.set_checked("#start-form input[name=run]", False)
    page.click("#start-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/sim/[a-z0-9-]+/$"))
    sim = page.url.rstrip("/").split("/")[-1]
    run_to(page, 70)
    legend = page.locator("#pods-legend")
    pulls = page.evaluate(
        "() => Object.values(window.CtrlscopePods.states())"
        ".filter(s => s === 'ErrImagePull' || s === 'ImagePullBackOff').length"
    )
    assert pulls == 2, page.evaluate("() => window.CtrlscopePods.states()")
    # Each state some pod is in has its entry (and colour) in the legend, the image-pull ones too.
    for state in set(page.evaluate("() => Object.values(window.CtrlscopePods.states())")):
        expect(legend.locator(f"[data-state={state}]")).to_be_visible()
    expect(legend.locator("[data-state=Running]")).to_contain_text("Running, not ready")
    assert page.evaluate("() => Object.values(window.CtrlscopePods.states()).includes('Scheduled')") is False

    faults = page.locator("#faults")
    expect(faults).to_contain_text("image fault: nginx:9.9 → ErrImagePull")

    # Search finds the Deployment; taking it focuses its lane and its ReplicaSets'.
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("/")
    page.keyboard.type("web")
    page.locator("#search-results button[data-kind=owner]", has_text="Deployment/web").click()
    expect(page.locator("#rollout")).to_contain_text("Rollout default/web")
    page.wait_for_function("() => window.CtrlscopeTimeline.drawn().length >= 3")
    assert page.evaluate("() => window.CtrlscopeTimeline.drawn()[0].owner") == "Deployment/web"
    marks = page.evaluate("() => window.CtrlscopeTimeline.marks()")
    assert any(m[3] == "Progressing=False" and m[4].startswith("ProgressDeadlineExceeded") for m in marks), marks
    assert "Progressing=False (ProgressDeadlineExceeded)" in page.evaluate(
        "() => window.CtrlscopeTimeline.ownAt('Deployment/web', 70)"
    )
    box = page.locator("#timeline-scroll").bounding_box()
    assert box["height"] >= 140, box  # the rollout panel leaves the timeline a usable height
    shot(page, "dashboard-rollout-stuck")
    # At 1280 x 800 too: the Deployment's lane and a ReplicaSet's stay in view.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.wait_for_function("() => document.getElementById('timeline-scroll').getBoundingClientRect().height >= 120")
    page.wait_for_function("() => window.CtrlscopeTimeline.drawn().length >= 2")
    page.set_viewport_size({"width": 1600, "height": 1000})
    # A mark on the Deployment's lane links to its record: the revision 2 line goes to that moment
    # and opens its why?.
    page.wait_for_function("() => window.CtrlscopeTimeline.markBoxes().some(b => b.kind === 'rev' && b.label === '2')")
    boxes = page.evaluate("() => window.CtrlscopeTimeline.markBoxes()")
    rev = next(b for b in boxes if b["label"] == "2" and b["kind"] == "rev")
    page.locator("#timeline-canvas").click(position={"x": (rev["x0"] + rev["x1"]) / 2, "y": rev["top"] + 30})
    expect(page.locator("#why-panel")).to_be_visible()
    expect(page.locator("#past-banner")).to_be_visible()
    page.keyboard.press("Escape")
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("End")
    expect(page.locator("#past-banner")).to_be_hidden()

    # Removing the image fault (the mapping without it): the next pull succeeds.
    faults.locator("li:has-text('image fault') button:text-is('remove')").click()
    expect(faults).not_to_contain_text("image fault: nginx:9.9")
    run_to(page, 140)
    expect(page.locator("#rollout")).to_contain_text("NewReplicaSetAvailable")
    stop(page, live_server_url, sim)

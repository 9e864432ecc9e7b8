"""The debugger in a real browser (Debian Chromium through Playwright), doing what a user does:
open the demo, pause, step a sync by hand, break pods, the API and a watch, set a breakpoint,
apply YAML, and download the session as a scenario that replays headless."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from playwright.sync_api import Page, expect

from controlplane.simulation import run_scenario

from .conftest import PATIENCE_MS, TOKEN, shot


def start(page: Page, url: str, scenario: str = "demo", run: bool = False, seed: str = "") -> str:
    """Start a simulation from the home page's form, as a user does; returns its id."""
    page.goto(f"{url}/?token={TOKEN}")
    page.select_option("#start-form select[name=scenario]", scenario)
    page.fill("#start-form input[name=seed]", seed)
    page.set_checked("#start-form input[name=run]", run)
    page.click("#start-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/sim/[a-z0-9-]+/$"))
    expect(page.locator("#st-conn")).to_have_text("live")
    return page.url.rstrip("/").split("/")[-1]


def command(page: Page, cmd: dict) -> dict:
    """A command through the page's own websocket (for set-up steps a test is not about)."""
    return page.evaluate("c => window.ctrlscope.command(c)", cmd)


def run_to(page: Page, t: float, timeout: float = PATIENCE_MS) -> None:
    """Run to t= and wait until the page shows it reached (`timeout` in ms)."""
    page.fill("#run-to input", str(t))
    page.press("#run-to input", "Enter")
    page.wait_for_function(
        f"() => window.ctrlscope.status && window.ctrlscope.status.t >= {t} "
        "&& window.ctrlscope.status.mode === 'paused' && !window.ctrlscope.status.goal",
        timeout=timeout,
    )


def settled(page: Page, selector: str, quiet_ms: int = 700) -> None:
    """Wait until `selector` has not changed for `quiet_ms`: the status frame can arrive before
    a loaded server has sent every panel of that moment (frames have a time budget)."""
    page.evaluate(
        """([selector, quiet]) => new Promise(resolve => {
            const el = document.querySelector(selector);
            let timer = setTimeout(done, quiet);
            const observer = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(done, quiet); });
            function done() { observer.disconnect(); resolve(); }
            observer.observe(el, {subtree: true, childList: true, characterData: true, attributes: true});
        })""",
        [selector, quiet_ms],
    )


def pod_states(page: Page) -> dict:
    return page.evaluate("() => window.CtrlscopePods.states()")


def wait_pods(page: Page, predicate_js: str, timeout: float = PATIENCE_MS) -> None:
    page.wait_for_function(
        f"() => {{ const s = window.CtrlscopePods.states(); return ({predicate_js}); }}", timeout=timeout
    )


def stop(page: Page, url: str, sim_id: str) -> None:
    """Stop from the home page, confirming; the session is then listed as a stopped recording."""
    page.goto(f"{url}/")
    page.locator(f"tr:has(a[href='/sim/{sim_id}/']) a:has-text('stop')").click()
    page.click("#confirm-form button[type=submit]")
    # Back on the home page (the confirmation page has its own link back to the session).
    page.wait_for_url(f"{url}/")
    expect(page.locator(f"a[href='/sim/{sim_id}/']")).to_have_count(0)
    expect(page.locator(f"#stopped-list tr[data-recording='{sim_id}']")).to_have_count(1)


@pytest.fixture
def errors(page: Page):
    seen: list[str] = []
    page.on("pageerror", lambda exc: seen.append(str(exc)))
    yield seen
    assert seen == []


@pytest.fixture
def page_errors(page: Page):
    """Every uncaught exception and every console error of the page: a click that throws shows
    here even when the page looks right."""
    seen: list[str] = []
    page.on("pageerror", lambda exc: seen.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: seen.append(f"console.error: {msg.text}") if msg.type == "error" else None)
    yield seen
    assert seen == []


def click_tile(page: Page, key: str) -> None:
    """Click the pod's tile, as a user does: scrolled into the tiles' box first (at 10,000 pods
    the box scrolls; a point below it would land on the box, not on the canvas)."""
    tile = page.wait_for_function("k => window.CtrlscopePods.tileOf(k)", arg=key).json_value()
    page.locator("#pods-scroll").evaluate(
        "(s, y) => { if (y < s.scrollTop + 4 || y > s.scrollTop + s.clientHeight - 8)"
        " s.scrollTop = Math.max(0, y - 40); }",
        tile["y"],
    )
    page.locator("#pods-canvas").click(position={"x": tile["x"], "y": tile["y"]})


def expect_pod_tab(page: Page, key: str, timeout: float = PATIENCE_MS) -> None:
    """The Pod tab is the one shown, and it shows `key` (its button at once; its heading when the
    read answers: at 10,000 pods on a busy machine that takes seconds)."""
    expect(page.locator("#pod-tab-button")).to_have_text(f"Pod {key.split('/')[1]}")
    expect(page.locator("#pod-tab-button")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#tab-pod")).to_be_visible()
    expect(page.locator("#pod-detail h2 code")).to_have_text(key, timeout=timeout)
    assert page.evaluate("() => window.CtrlscopePods.opened()") == key  # its tile is ringed


def open_pods_again_and_again(page: Page, keys: list[str], timeout: float = PATIENCE_MS) -> None:
    """Click tiles of several pods, one of them twice in a row and again later, from another
    tab, and after the search opened a pod: every click opens the pod clicked."""
    a, b, c, d = keys
    for key in (a, b, c, a, a, d, b):
        click_tile(page, key)
        expect_pod_tab(page, key, timeout)
    page.click("#drawer-tabs [data-tab=tab-events]")
    expect(page.locator("#tab-pod")).to_be_hidden()
    click_tile(page, c)
    expect_pod_tab(page, c, timeout)
    page.fill("#search", d.split("/")[1])
    expect(page.locator("#search-results button[data-kind=pod]").first).to_contain_text(d, timeout=timeout)
    page.press("#search", "Enter")  # the first result: the pod
    expect_pod_tab(page, d, timeout)
    page.evaluate("() => document.activeElement.blur()")
    click_tile(page, a)
    expect_pod_tab(page, a, timeout)
    assert page.evaluate("() => typeof window.ctrlscope.openPod") == "function"


def test_every_tile_click_opens_its_pod(page: Page, live_server_url: str, page_errors):
    sim = start(page, live_server_url)
    run_to(page, 5)
    states = pod_states(page)
    assert len(states) >= 9
    # Pods of each owner: web, api and the RC's.
    web = sorted(k for k in states if k.startswith("default/web-"))
    others = sorted(k for k in states if not k.startswith("default/web-"))
    keys = [web[0], others[0], others[-1], web[1]]
    open_pods_again_and_again(page, keys)
    # The tab stays on the pod last opened while the frames change another one.
    command(page, {"op": "act", "action": {"podFault": {"name": keys[1].split("/")[1], "fault": "fail"}}})
    run_to(page, 8)
    expect_pod_tab(page, keys[0])
    expect(page.locator("#pod-detail h2 .badge")).to_have_text("Ready")
    shot(page, "dashboard-pod-tab-10")
    stop(page, live_server_url, sim)


def test_the_demo_is_running_at_1x_and_draws_its_pods(page: Page, live_server_url: str, errors):
    page.goto(f"{live_server_url}/sim/demo/?token={TOKEN}")
    expect(page.locator("#st-conn")).to_have_text("live")
    expect(page.locator("#st-mode")).to_have_text("running 1×")  # noqa: RUF001
    first = page.evaluate("() => window.ctrlscope.status.t")
    page.wait_for_function(f"() => window.ctrlscope.status.t > {first} + 0.5")
    expect(page.locator("#owners")).to_contain_text("web")
    expect(page.locator("#owners")).to_contain_text("legacy")
    wait_pods(page, "Object.values(s).filter(v => v === 'Ready').length >= 9")
    expect(page.locator("#queue-replicaset")).to_contain_text("Workqueue")
    expect(page.locator("#informers")).to_contain_text("replicaset/pods")
    shot(page, "dashboard-demo")


def test_pause_stops_the_clock_and_says_so(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url, run=True)
    page.wait_for_function("() => window.ctrlscope.status.t > 1")
    page.click("#btn-pause")
    expect(page.locator("#st-mode")).to_have_text("paused")
    t = page.evaluate("() => window.ctrlscope.status.t")
    page.wait_for_timeout(600)
    assert page.evaluate("() => window.ctrlscope.status.t") == t
    expect(page.locator("#st-hit")).to_contain_text("Paused at t=")
    page.keyboard.press(" ")  # Space runs again
    expect(page.locator("#st-mode")).to_contain_text("running")
    stop(page, live_server_url, sim)


def test_manual_workers_sync_one_key_and_the_inspector_narrates_it(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    page.click("#manual-replicaset")
    expect(page.locator("#workers-replicaset .badge")).to_have_text("manual")
    expect(page.locator("#manual-replicaset")).to_have_count(0)  # the switch became "automatic"
    run_to(page, 1)
    queue = page.locator("#queue-replicaset ol.keys")
    expect(queue).to_contain_text("default/web")
    head = queue.locator("li.key.head span").first.inner_text()
    page.click("#sync-next-replicaset")
    expect(page.locator("#st-result")).to_contain_text(f"worker 0 syncs {head}")
    expect(page.locator("#queue-replicaset li.key.busy")).to_contain_text(head)
    # Step stage by stage: each click adds the next stage of that same sync.
    page.click("#btn-stage")
    inspector = page.locator("[data-slot=inspector]")
    expect(inspector).to_contain_text(f"Sync of {head}")
    for text in ("No expectations recorded for this key", "Listed 0 pods", "Claimed 0 pods", "create"):
        page.click("#btn-stage")
        expect(inspector).to_contain_text(text)
    page.click("#btn-sync")
    expect(inspector).to_contain_text("Returned no error")
    expect(inspector).to_contain_text("Status written")
    shot(page, "dashboard-inspector")
    # Nothing else was dequeued: the other keys wait for the next click.
    assert page.locator("#queue-replicaset ol.keys").inner_text().count("default/") >= 1
    stop(page, live_server_url, sim)


def tile_of(page: Page, key: str) -> dict:
    """Where the pod's tile is drawn: the model may hold a pod whose tile the next animation frame
    lays out, so wait for it."""
    return page.wait_for_function("k => window.CtrlscopePods.tileOf(k)", arg=key).json_value()


def test_crash_then_fail_a_pod_from_its_tile(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    run_to(page, 5)
    web = sorted(k for k, v in pod_states(page).items() if k.startswith("default/web-"))
    assert len(web) == 4
    tile = tile_of(page, web[0])
    page.locator("#pods-canvas").click(position={"x": tile["x"], "y": tile["y"]})
    expect(page.locator("#pod-detail")).to_contain_text(web[0])
    page.locator("#pod-detail button", has_text="crash").click()
    page.click("#btn-timer")
    wait_pods(page, f"s['{web[0]}'] === 'CrashLoopBackOff'")
    # A failed pod is no longer active: the ReplicaSet replaces it.
    command(page, {"op": "act", "action": {"podFault": {"name": web[1].split("/")[1], "fault": "fail"}}})
    run_to(page, 12)
    states = pod_states(page)
    assert states[web[1]] == "Failed"
    web_now = [k for k, v in states.items() if k.startswith("default/web-") and v == "Ready"]
    assert len(web_now) == 3 and len([k for k in states if k.startswith("default/web-")]) == 5
    stop(page, live_server_url, sim)


def test_kill_three_selected_pods_and_see_replacements(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    run_to(page, 5)
    web = sorted(k for k in pod_states(page) if k.startswith("default/web-"))[:3]
    for key in web:
        tile = tile_of(page, key)
        page.locator("#pods-canvas").click(position={"x": tile["x"], "y": tile["y"]}, modifiers=["Shift"])
    expect(page.locator("#selection-count")).to_have_text("3 selected")
    shot(page, "dashboard-selection")
    page.click("#selection-bar button[data-pods=delete]")
    expect(page.locator("#st-result")).to_contain_text("3 pods")
    run_to(page, 12)
    states = pod_states(page)
    assert all(k not in states for k in web)  # gone
    assert len([k for k, v in states.items() if k.startswith("default/web-") and v == "Ready"]) == 4
    stop(page, live_server_url, sim)


def test_a_create_fault_shows_failedcreate_and_replicafailure_then_recovery(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    run_to(page, 5)
    page.click("#drawer-tabs [data-tab=tab-inject]")
    form = page.locator("#form-api-fault")
    form.locator("select[name=verb]").select_option("create")
    form.locator("select[name=resource]").select_option("pods")
    form.locator("select[name=code]").select_option("403")
    form.locator("input[name=message]").fill("exceeded quota: pods")
    form.locator("input[name=count]").fill("100")
    form.locator("button[type=submit]").click()
    expect(form.locator(".form-result")).to_contain_text("API fault #1 in force")
    expect(page.locator("#faults")).to_contain_text("create pods")
    web = page.locator("#owners article[data-owner='ReplicaSet/web']")
    web.locator("input[name=replicas]").fill("6")
    web.locator("form[data-action=scale] button[type=submit]").click()
    run_to(page, 9)
    expect(web).to_contain_text("ReplicaFailure=True")
    page.click("#drawer-tabs [data-tab=tab-events]")
    expect(page.locator("#rows-events")).to_contain_text("FailedCreate")
    # As kube-apiserver words it: the pod named by its generateName, the quota the cause.
    expect(page.locator("#rows-events")).to_contain_text('pods "web-" is forbidden: exceeded quota: pods')
    shot(page, "dashboard-replicafailure")
    page.locator("#faults li.fault", has_text="create pods").locator("button", has_text="remove").click()
    expect(page.locator("#faults li.fault")).to_have_count(0)
    run_to(page, 60)
    expect(web).not_to_contain_text("ReplicaFailure=True")
    expect(web.locator("[data-k='ReplicaSet/web/ready']")).to_have_text("6")
    stop(page, live_server_url, sim)


def test_a_paused_pod_watch_makes_cache_and_truth_diverge_then_converge(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    run_to(page, 5)
    page.locator("#owners a.owner-name", has_text="web").click()
    page.click("#drawer-tabs [data-tab=tab-truth]")
    truth = page.locator("[data-slot=truth]")
    expect(truth).to_contain_text("in agreement")
    row = page.locator("#informers tr", has_text="replicaset/pods")
    row.locator("button", has_text="pause").click()
    expect(page.locator("#faults")).to_contain_text("watch paused: replicaset/pods")
    command(page, {"op": "act", "action": {"podFault": {"selector": "app=web", "count": 2, "fault": "delete"}}})
    run_to(page, 9)
    expect(truth).to_contain_text("differ")
    expect(truth.locator("tr.differs")).not_to_have_count(0)
    shot(page, "dashboard-cache-vs-truth")
    page.locator("#faults li.fault", has_text="watch paused").locator("button", has_text="resume").click()
    run_to(page, 20)
    expect(truth).to_contain_text("in agreement")
    stop(page, live_server_url, sim)


def test_a_breakpoint_fires_and_says_which_and_why(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    page.click("#drawer-tabs [data-tab=tab-breakpoints]")
    form = page.locator("#form-breakpoint")
    form.locator("select[name=kind]").select_option("podState")
    form.locator("input[name=owner]").fill("ReplicaSet/api")
    form.locator("select[name=state]").select_option("Ready")
    form.locator("button[type=submit]").click()
    expect(page.locator("#breakpoints")).to_contain_text("#1 a pod of ReplicaSet/api becomes Ready")
    page.click("#btn-run")
    expect(page.locator("#st-hit")).to_contain_text("Breakpoint #1 fired")
    expect(page.locator("#st-hit")).to_contain_text("→ Ready")
    expect(page.locator("#st-mode")).to_have_text("paused")
    expect(page.locator("#breakpoints li.fired")).to_have_count(1)
    shot(page, "dashboard-breakpoint")
    stop(page, live_server_url, sim)


def test_yaml_editor_applies_a_manifest_and_shows_field_errors_for_a_bad_one(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    page.click("#drawer-tabs [data-tab=tab-yaml]")
    good = (
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: cache}\nspec:\n  replicas: 2\n"
        "  selector: {matchLabels: {app: cache}}\n  template:\n    metadata: {labels: {app: cache}}\n"
        "    spec: {containers: [{name: redis, image: redis}]}\n"
    )
    page.fill("#yaml-text", good)
    page.click("#yaml-form button[type=submit]")
    expect(page.locator("#yaml-result")).to_contain_text("applied ReplicaSet/cache")
    expect(page.locator("#owners")).to_contain_text("cache")
    bad = good.replace("name: cache}", "name: Bad_Name}").replace(
        "app: cache}}\n  template", "app: other}}\n  template"
    )
    page.fill("#yaml-text", bad)
    page.click("#yaml-form button[type=submit]")
    expect(page.locator("#yaml-result .bad")).to_contain_text("422")
    expect(page.locator("#yaml-result ul.causes")).to_contain_text("metadata.name")
    page.fill("#yaml-text", "kind: [unclosed")
    page.click("#yaml-form button[type=submit]")
    expect(page.locator("#yaml-result")).to_contain_text("not valid YAML")
    expect(page.locator("#owners article")).to_have_count(4)  # web, api, cache + legacy: nothing else
    stop(page, live_server_url, sim)


def test_download_the_session_and_replay_it_headless(page: Page, live_server_url: str, errors, tmp_path):
    sim = start(page, live_server_url)
    run_to(page, 3)
    page.click("#manual-replicaset")
    page.locator("#owners article[data-owner='ReplicaSet/web'] button[title^='scale to 5']").click()
    run_to(page, 4)
    page.click("#sync-next-replicaset")
    page.click("#btn-sync")
    page.wait_for_function("() => window.ctrlscope.status.mode === 'paused' && !window.ctrlscope.status.goal")
    command(page, {"op": "act", "action": {"podFault": {"selector": "app=api", "count": 1, "fault": "crash"}}})
    run_to(page, 8.5)
    with page.expect_download() as download:
        page.click("#btn-export")
    path = tmp_path / "session.scenario.yaml"
    download.value.save_as(path)
    data = yaml.safe_load(path.read_text())
    assert data["until"] == page.evaluate("() => window.ctrlscope.status.t")
    verbs = [next(k for k in a if k != "at") for a in data["actions"]]
    assert verbs[:4] == ["config", "scale", "sync", "podFault"]
    live = json.loads(page.request.get(f"{live_server_url}/sim/{sim}/report.json").text())
    assert json.dumps(run_scenario(str(path))) == json.dumps(live)
    stop(page, live_server_url, sim)


def test_a_thousand_pods_stay_readable(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    command(page, {"op": "act", "action": {"config": {"nodes": 12, "kubeApiQPS": -1}}})
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "fleet", "namespace": "default"},
        "spec": {
            "replicas": 1000,
            "selector": {"matchLabels": {"app": "fleet"}},
            "template": {
                "metadata": {"labels": {"app": "fleet"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    assert command(page, {"op": "act", "action": {"apply": manifest}})["ok"]
    run_to(page, 30)
    wait_pods(page, "Object.values(s).filter(v => v === 'Ready').length >= 1000")
    lanes = page.evaluate("() => window.CtrlscopeTimeline.lanes()")
    assert any(lane["owner"] == "ReplicaSet/fleet" and lane["now"] == 1000 for lane in lanes)
    expect(
        page.locator("#owners article[data-owner='ReplicaSet/fleet'] [data-k='ReplicaSet/fleet/ready']")
    ).to_have_text("1000")
    shot(page, "dashboard-1000-pods")
    stop(page, live_server_url, sim)


def test_a_frame_replaces_only_the_parts_of_a_panel_that_changed(page: Page, live_server_url: str, errors):
    sim = start(page, live_server_url)
    run_to(page, 20)
    # The world of t=20 on every card (a loaded server may send the status frame first).
    for k, n in (("ReplicaSet/api/available", "3"), ("ReplicationController/legacy/ready", "2")):
        expect(page.locator(f'#owners [data-k="{k}"]')).to_have_text(n)
    settled(page, "#owners")
    # Mark every owner card with a property (an attribute would itself make it differ) and
    # remember its HTML; then change one ReplicaSet.
    before = page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('#owners article')]"
        ".map(el => { el.marked = true; return [el.dataset.owner, el.outerHTML]; }))"
    )
    command(page, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 6}}})
    run_to(page, 21)
    expect(page.locator('#owners [data-k="ReplicaSet/web/desired"]')).to_have_text("6")
    after = page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('#owners article')]"
        ".map(el => [el.dataset.owner, [el.outerHTML, el.marked === true]]))"
    )
    assert after["ReplicaSet/web"] == [after["ReplicaSet/web"][0], False]  # web's card was swapped
    unchanged = [owner for owner, (html, _) in after.items() if html == before.get(owner)]
    assert unchanged, "every card changed: nothing to check"
    # A card whose HTML did not change is the same element; a changed one is a new element.
    for owner, (html, kept) in after.items():
        assert kept == (html == before.get(owner)), owner
    stop(page, live_server_url, sim)


def test_a_stage_step_and_until_idle_say_they_wait_for_a_manual_worker_and_stop(
    page: Page, live_server_url: str, errors
):
    # Issue 26 §4: with a key waiting for a manual worker, each `.` ran one virtual hour silently.
    sim = start(page, live_server_url)
    run_to(page, 60)  # the demo's own timeline (t=20, 30, 45) is behind it, its pods at rest
    page.click("#manual-replicaset")
    expect(page.locator("#workers-replicaset .badge")).to_have_text("manual")
    command(page, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 7}}})
    run_to(page, 61)
    expect(page.locator("#queue-replicaset ol.keys")).to_contain_text("default/web")
    hit = page.locator("#st-hit")
    for key in (".", "i"):
        before = page.evaluate("() => window.ctrlscope.status.t")
        page.evaluate("() => document.activeElement.blur()")
        page.keyboard.press(key)
        expect(hit).to_contain_text("default/web waits in the replicaset queue for a manual worker")
        expect(hit).to_contain_text("sync next")
        page.wait_for_function("() => window.ctrlscope.status.mode === 'paused' && !window.ctrlscope.status.goal")
        assert page.evaluate("() => window.ctrlscope.status.t") - before < 60
    shot(page, "dashboard-step-waits-for-manual-worker")
    stop(page, live_server_url, sim)

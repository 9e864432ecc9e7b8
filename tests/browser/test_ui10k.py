"""The dashboard at 10,000 pods (issue #19 §3): a layout where tiles, timeline and the right
column stay usable from 10 pods to 10,000 pods in 100 owners; focus on one ReplicaSet; search;
the keyboard help. Screenshots into test-artifacts/ (docs/img/ with CTRLSCOPE_UPDATE_DOCS=1)."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml
from playwright.sync_api import Page, expect

from tests.controlplane.factories import fleet_objects

from .conftest import PATIENCE_MS, TOKEN, shot
from .test_dashboard import (  # noqa: F401 - errors and page_errors are fixtures
    command,
    errors,
    open_pods_again_and_again,
    page_errors,
    run_to,
    start,
    stop,
)


def fleet(replicasets: int, replicas: int) -> dict:
    """`replicasets` ReplicaSets of `replicas` pods each (labels app=rs-NNN, tier=web or db by
    parity), client QPS off so that 10,000 pods start within seconds of virtual time."""
    objects = fleet_objects(replicasets, replicas)
    nodes = max(3, replicasets * replicas // 100)
    config = {"nodes": nodes, "kubeApiQPS": -1, "schedulerQPS": -1, "kubeletQPS": -1}
    return {"name": f"fleet {replicasets}x{replicas}", "seed": 1, "config": config, "objects": objects, "until": 3600}


def start_fleet(page: Page, url: str, path: pathlib.Path) -> str:
    page.goto(f"{url}/?token={TOKEN}")
    page.set_input_files("#start-form input[name=file]", str(path))
    page.set_checked("#start-form input[name=run]", False)
    page.click("#start-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/sim/[a-z0-9-]+/$"))
    expect(page.locator("#st-conn")).to_have_text("live")
    return page.url.rstrip("/").split("/")[-1]


def wait_pod_count(page: Page, n: int, timeout: float = PATIENCE_MS) -> None:
    page.wait_for_function(f"() => Object.keys(window.CtrlscopePods.states()).length >= {n}", timeout=timeout)


def box(page: Page, selector: str) -> dict:
    return page.locator(selector).bounding_box()


def fleet_file(tmp_path: pathlib.Path, replicasets: int, replicas: int, **config: object) -> pathlib.Path:
    doc = fleet(replicasets, replicas)
    doc["config"].update(config)
    path = tmp_path / f"fleet-{replicasets}x{replicas}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def boxes(page: Page) -> dict:
    return {sel: box(page, sel) for sel in ("#pods-panel", "#timeline-panel", "#right", "#left", "#drawer")}


def inside_viewport(page: Page, b: dict) -> bool:
    vp = page.viewport_size
    right, bottom = b["x"] + b["width"], b["y"] + b["height"]
    return b["x"] >= 0 and b["y"] >= 0 and right <= vp["width"] + 1 and bottom <= vp["height"] + 1


def click_canvas(page: Page, point: dict) -> None:
    """Click a point of the pods canvas, scrolled into the visible part of its box first (a point
    below it would land on the box, #pods-scroll, not on the canvas)."""
    page.evaluate(
        """y => { const s = document.getElementById("pods-scroll");
                  if (y < s.scrollTop + 4 || y > s.scrollTop + s.clientHeight - 8)
                    s.scrollTop = Math.max(0, y - 40); }""",
        point["y"],
    )
    page.locator("#pods-canvas").click(position={"x": point["x"], "y": point["y"]})


def hover_tile(page: Page, key: str) -> str:
    tile = page.evaluate("k => window.CtrlscopePods.tileOf(k)", key)
    page.locator("#pods-canvas").hover(position={"x": tile["x"], "y": tile["y"]})
    tip = page.locator("#pods-tip")
    expect(tip).to_be_visible()
    return tip.inner_text()


@pytest.mark.parametrize(("replicasets", "replicas"), [(100, 100), (10, 1000)])
def test_ten_thousand_pods_fit_the_page(page: Page, live_server_url: str, page_errors, tmp_path, replicasets, replicas):  # noqa: F811
    if replicasets == 100:
        # The library's fleet (the README's picture): the same 100 ReplicaSets of 100 as fleet().
        sim = start(page, live_server_url, "fleet-10000")
        expect(page.locator("#toolbar")).to_contain_text("10,000 pods in 100 ReplicaSets")
    else:
        sim = start_fleet(page, live_server_url, fleet_file(tmp_path, replicasets, replicas))
    run_to(page, 20)
    wait_pod_count(page, 10000)
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 10000")
    # Every panel is on screen, none squeezed: the tiles get room, the timeline is bounded.
    b = boxes(page)
    for sel, rect in b.items():
        assert inside_viewport(page, rect), f"{sel} is pushed off screen: {rect}"
    assert box(page, "#pods-scroll")["height"] >= 120
    assert box(page, "#timeline-scroll")["height"] <= 0.3 * page.viewport_size["height"]
    layout = page.evaluate("() => window.CtrlscopePods.layout()")
    # 10,000 tiles in the box (or nearly: at most a little scrolling), each still a tile.
    assert layout["size"] >= 2 and layout["height"] <= 1.3 * layout["room"], layout
    # Hover names the pod under the pointer, at 2 px as at 16.
    last = f"default/rs-{replicasets - 1:03d}"
    key = page.evaluate("o => Object.keys(window.CtrlscopePods.states()).find(k => k.startsWith(o + '-'))", last)
    box_top = box(page, "#pods-scroll")
    tile = page.evaluate("k => window.CtrlscopePods.tileOf(k)", key)
    page.locator("#pods-scroll").evaluate("(el, y) => { el.scrollTop = Math.max(0, y - 40); }", tile["y"])
    assert tile["y"] - page.locator("#pods-scroll").evaluate("el => el.scrollTop") < box_top["height"]
    assert key.split("/")[1] in hover_tile(page, key)
    # The timeline draws only the lanes in view, folded, and scrolls to the others.
    lanes = page.evaluate("() => window.CtrlscopeTimeline.lanes()")
    assert len(lanes) == replicasets
    drawn = page.evaluate("() => window.CtrlscopeTimeline.drawn()")
    if replicasets == 100:
        assert 3 <= len(drawn) < 40
        assert all(d["height"] < 30 for d in drawn)  # folded
        page.locator("#timeline-scroll").evaluate("el => { el.scrollTop = el.scrollHeight; }")
        page.wait_for_function("() => window.CtrlscopeTimeline.drawn().some(d => d.owner === 'ReplicaSet/rs-099')")
    else:
        assert len(drawn) == replicasets
    shot(page, f"dashboard-10000-{replicasets}x{replicas}")
    # Run and Pause never move the layout.
    page.click("#btn-run")
    expect(page.locator("#st-mode")).to_contain_text("running")
    page.wait_for_timeout(800)
    assert boxes(page) == b
    page.click("#btn-pause")
    expect(page.locator("#st-mode")).to_have_text("paused")
    assert boxes(page) == b
    # Every click on a tile opens its pod, again and again: pods of the first, a middle and the
    # last owner (the last ones below the fold of the scrolled box).
    states = page.evaluate("() => Object.keys(window.CtrlscopePods.states()).sort()")
    owners = ("rs-000", f"rs-{replicasets // 2:03d}", f"rs-{replicasets - 1:03d}")
    picked = [next(k for k in states if k.startswith(f"default/{o}-")) for o in owners]
    picked.append([k for k in states if k.startswith(f"default/{owners[0]}-")][-1])
    open_pods_again_and_again(page, picked)
    shot(page, f"dashboard-pod-tab-10000-{replicasets}x{replicas}")
    stop(page, live_server_url, sim)


def test_ten_and_a_thousand_pods(page: Page, live_server_url: str, errors, tmp_path):  # noqa: F811
    sim = start(page, live_server_url)
    run_to(page, 10)
    page.wait_for_function("() => Object.values(window.CtrlscopePods.states()).filter(s => s === 'Ready').length >= 9")
    layout = page.evaluate("() => window.CtrlscopePods.layout()")
    assert layout["size"] == 16 and layout["labelled"]
    drawn = page.evaluate("() => window.CtrlscopeTimeline.drawn()")
    lanes = page.evaluate("() => window.CtrlscopeTimeline.lanes()")
    assert len(drawn) == len(lanes) == 3 and all(d["height"] > 40 for d in drawn)  # every lane, unfolded
    shot(page, "dashboard-10")
    stop(page, live_server_url, sim)
    sim = start_fleet(page, live_server_url, fleet_file(tmp_path, 10, 100))
    run_to(page, 15)
    wait_pod_count(page, 1000)
    layout = page.evaluate("() => window.CtrlscopePods.layout()")
    assert layout["labelled"] and layout["size"] >= 4 and layout["height"] <= layout["room"], layout
    shot(page, "dashboard-1000")
    stop(page, live_server_url, sim)


def test_focus_on_one_replicaset_filters_the_whole_page(page: Page, live_server_url: str, errors, tmp_path):  # noqa: F811
    # 60 ReplicaSets, manual workers: 60 keys wait in the queue, which lists the first 50.
    path = fleet_file(tmp_path, 60, 4, manualWorkers=["replicaset"])
    sim = start_fleet(page, live_server_url, path)
    run_to(page, 2)
    queue = page.locator("#queue-replicaset")
    expect(queue).to_contain_text("+10 more")
    expect(queue.locator("li.key", has_text="default/rs-059")).to_have_count(0)  # not among the first 50
    # Sync two keys by hand so that there are pods, Events and API calls of more than one owner.
    for key in ("default/rs-000", "default/rs-059"):
        assert command(page, {"op": "act", "action": {"sync": {"controller": "replicaset", "key": key}}})["ok"]
    run_to(page, 10)
    wait_pod_count(page, 8)
    page.click("#drawer-tabs [data-tab=tab-events]")
    expect(page.locator("#rows-events tr", has_text="rs-000")).not_to_have_count(0)
    # Focus from the owner card.
    page.locator("#owners a.owner-name", has_text="rs-059").click()
    chip = page.locator("#focus-chip")
    expect(chip).to_be_visible()
    expect(chip).to_contain_text("default/rs-059")
    # Its queue entry, found by the server among all 60 (not the first 50 filtered here).
    expect(queue).to_have_attribute("data-only", "default/rs-059")
    expect(queue.locator("ol.keys li.key")).to_have_count(1)
    expect(queue.locator("ol.keys li.key")).to_contain_text("default/rs-059")
    expectations = page.locator("#expectations-replicaset")
    expect(expectations).to_have_attribute("data-only", "default/rs-059")
    expect(expectations.locator("a[data-focus]")).to_have_text(["default/rs-059"])
    # Its tiles only, its lane only, its key in the inspector.
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 4")
    assert page.evaluate("() => window.CtrlscopeTimeline.drawn().map(d => d.owner)") == ["ReplicaSet/rs-059"]
    expect(page.locator("#focus-key")).to_have_value("replicaset|default/rs-059")
    expect(page.locator("#controller-tabs button")).to_have_count(2)  # a focused panel is no controller
    # Its Events only (rs-000's are hidden), and API calls.
    page.click("#drawer-tabs [data-tab=tab-events]")
    expect(page.locator("#rows-events tr:visible", has_text="rs-000")).to_have_count(0)
    expect(page.locator("#rows-events tr:visible", has_text="rs-059")).not_to_have_count(0)
    page.click("#drawer-tabs [data-tab=tab-api]")
    visible_api = page.locator("#rows-api tr:visible")
    expect(visible_api).not_to_have_count(0)
    for text in visible_api.all_inner_texts():
        assert "rs-059" in text, text
    shot(page, "dashboard-focus")
    # New frames are filtered too: a sync of another key adds nothing to the focused panels.
    assert command(page, {"op": "act", "action": {"sync": {"controller": "replicaset", "key": "default/rs-001"}}})["ok"]
    run_to(page, 15)
    wait_pod_count(page, 12)
    assert page.evaluate("() => window.CtrlscopePods.layout().shown") == 4
    expect(page.locator("#rows-api tr:visible", has_text="rs-001")).to_have_count(0)
    expect(queue.locator("ol.keys li.key")).to_have_count(1)
    # A reconnect keeps the focus: the new connection is told it again.
    page.evaluate("() => window.ctrlscope.ws.close()")
    expect(page.locator("#st-conn")).not_to_have_text("live")
    expect(page.locator("#st-conn")).to_have_text("live")
    assert command(page, {"op": "act", "action": {"sync": {"controller": "replicaset", "key": "default/rs-002"}}})["ok"]
    run_to(page, 20)
    expect(queue).to_have_attribute("data-only", "default/rs-059")
    expect(queue.locator("ol.keys li.key")).to_have_count(1)
    assert page.evaluate("() => window.CtrlscopePods.layout().shown") == 4
    # Its new Events arrive (the rows the server keeps apart for the focus, past the frame's cap).
    page.click("#drawer-tabs [data-tab=tab-events]")
    created = page.locator("#rows-events tr:visible", has_text="Created pod: rs-059-")
    before = created.count()  # its first pods' (if the page still holds those rows)
    scale = {"kind": "ReplicaSet", "name": "rs-059", "replicas": 5}
    assert command(page, {"op": "act", "action": {"scale": scale}})["ok"]
    run_to(page, 22)  # the informer hears of it and queues the key
    assert command(page, {"op": "act", "action": {"sync": {"controller": "replicaset", "key": "default/rs-059"}}})["ok"]
    run_to(page, 25)
    expect(created).to_have_count(before + 1)
    # The past keeps the focus: the moment's queue is the focused one too (the queue had had
    # fewer adds then).
    adds = queue.locator("[data-k='replicaset/adds']")
    live_adds = int(adds.inner_text())
    page.fill("#view-at input", "5")
    page.press("#view-at input", "Enter")
    expect(page.locator("#past-banner")).to_be_visible()
    expect(page.locator("#past-at")).to_contain_text("5.000")
    expect(queue).to_have_attribute("data-only", "default/rs-059")
    expect(queue.locator("ol.keys li.key")).to_have_count(1)
    expect(queue.locator(".focus-badge")).to_contain_text("60 of 60 queued")
    assert int(adds.inner_text()) < live_adds
    assert page.evaluate("() => window.CtrlscopePods.layout().shown") == 4
    page.click("#past-to-live")
    expect(page.locator("#past-banner")).to_be_hidden()
    expect(queue).to_have_attribute("data-only", "default/rs-059")
    # Esc first closes a why? panel (the focus stays), then unfocuses: every owner again.
    page.locator("#rows-events tr:visible a.why").last.click()
    expect(page.locator("#why-panel")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#why-panel")).to_be_hidden()
    expect(chip).to_be_visible()
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("Escape")
    expect(chip).to_be_hidden()
    expect(queue).not_to_have_attribute("data-only", "default/rs-059")
    expect(queue).to_contain_text("more")
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 17")
    # A lane's name focuses too, and so does the name over a group of tiles; ✕ unfocus ends it.
    lane = next(d for d in page.evaluate("() => window.CtrlscopeTimeline.drawn()") if d["owner"] == "ReplicaSet/rs-001")
    page.locator("#timeline-canvas").click(position={"x": 40, "y": lane["top"] + 8})
    expect(chip).to_contain_text("default/rs-001")
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 4")
    page.click("#focus-clear")
    expect(chip).to_be_hidden()
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 17")
    label = next(g for g in page.evaluate("() => window.CtrlscopePods.labels()") if g["owner"] == "ReplicaSet/rs-002")
    click_canvas(page, label)
    expect(chip).to_contain_text("default/rs-002")
    page.click("#focus-clear")
    expect(chip).to_be_hidden()
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 17")  # laid out again: every owner
    # And a pod's owner, from its Pod tab.
    key = page.evaluate("() => Object.keys(window.CtrlscopePods.states()).find(k => k.includes('/rs-001-'))")
    click_canvas(page, page.evaluate("k => window.CtrlscopePods.tileOf(k)", key))
    page.locator("#pod-detail [data-owner-focus]").click()
    expect(chip).to_contain_text("default/rs-001")
    page.click("#focus-clear")
    stop(page, live_server_url, sim)


def test_search_by_name_and_label_selector_and_filters(page: Page, live_server_url: str, errors, tmp_path):  # noqa: F811
    sim = start_fleet(page, live_server_url, fleet_file(tmp_path, 6, 5))
    run_to(page, 10)
    wait_pod_count(page, 30)
    search = page.locator("#search")
    results = page.locator("#search-results")
    # `/` focuses the box; keys typed there are text, not commands (n would run one event).
    page.evaluate("() => document.activeElement.blur()")
    events = page.evaluate("() => window.ctrlscope.status.events")
    page.keyboard.press("/")
    expect(search).to_be_focused()
    page.keyboard.type("rs-00n")
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.ctrlscope.status.events") == events
    expect(results).to_contain_text("Nothing matches name")
    # A label selector, parsed by the core's parser: owners and pods that match.
    search.fill("tier!=db,app in (rs-000,rs-001,rs-002)")
    expect(results).to_contain_text("Owners · 2")
    shot(page, "dashboard-search")
    owners = results.locator("button[data-kind=owner]")
    expect(owners).to_have_count(2)
    # On top of the page, not clipped by the status line it hangs from.
    at = owners.nth(1).bounding_box()
    on_top = "([x, y]) => !!document.elementFromPoint(x, y).closest('#search-results')"
    assert page.evaluate(on_top, [at["x"] + 10, at["y"] + at["height"] / 2])
    expect(owners.nth(0)).to_contain_text("ReplicaSet/rs-000")
    expect(owners.nth(1)).to_contain_text("ReplicaSet/rs-002")
    expect(results).to_contain_text("Pods · 10")
    results.locator("button[data-kind=all]", has_text="show only these 10 pods").click()
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 10")
    expect(page.locator("#pods-filter")).to_contain_text("label selector")
    page.click("#pods-filter-clear")
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 30")
    # A bad selector says what is wrong, in upstream's words.
    search.fill("app in (")
    expect(results.locator("p.bad")).to_contain_text("q: not a label selector")
    # A name: a node's pods; an owner focuses the page; a pod opens.
    search.fill("node-2")
    results.locator("button[data-kind=node]", has_text="node-2").first.click()
    expect(page.locator("#pods-filter")).to_contain_text("on node-2")
    shown = page.evaluate("() => window.CtrlscopePods.layout().shown")
    assert 0 < shown < 30
    page.click("#pods-filter-clear")
    search.fill("rs-004")
    results.locator("button[data-kind=owner]", has_text="ReplicaSet/rs-004").click()
    expect(page.locator("#focus-chip")).to_contain_text("default/rs-004")
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 5")
    page.click("#focus-clear")
    pod = page.evaluate("() => Object.keys(window.CtrlscopePods.states()).find(k => k.includes('rs-003-'))")
    search.fill(pod.split("/")[1])
    search.press("Enter")  # the first result: the pod
    expect(page.locator("#pod-tab-button")).to_have_text(f"Pod {pod.split('/')[1]}")
    assert page.evaluate("() => window.CtrlscopePods.selected()") == [pod]
    # The legend's states are filters.
    page.locator("#pods-legend [data-state=Ready]").click()
    expect(page.locator("#pods-legend [data-state=Ready]")).to_have_attribute("aria-pressed", "true")
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 30")
    command(page, {"op": "act", "action": {"podFault": {"selector": "app=rs-000", "count": 2, "fault": "fail"}}})
    run_to(page, 10.5)
    count = "s => Object.values(window.CtrlscopePods.states()).filter(v => s.includes(v)).length"
    page.wait_for_function(f"() => ({count})(['Failed']) === 2")
    ready = page.evaluate(f"() => ({count})(['Ready'])")
    either = page.evaluate(f"() => ({count})(['Ready', 'Failed'])")
    assert either == ready + 2
    page.wait_for_function(f"() => window.CtrlscopePods.layout().shown === {ready}")
    page.locator("#pods-legend [data-state=Failed]").click()  # Ready or Failed
    page.wait_for_function(f"() => window.CtrlscopePods.layout().shown === {either}")
    page.locator("#pods-legend [data-state=Ready]").click()  # Failed only
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 2")
    expect(page.locator("#pods-filter")).to_contain_text("showing Failed")
    shot(page, "dashboard-filters")
    page.click("#pods-filter-clear")
    # Events filter by object and reason; API calls by object, code and client.
    fault = {"verb": "create", "resource": "pods", "count": 1, "code": 500}
    command(page, {"op": "act", "action": {"apiFault": fault}})
    command(page, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "rs-005", "replicas": 7}}})
    run_to(page, 14)
    page.click("#drawer-tabs [data-tab=tab-events]")
    page.fill("#events-q-reason", "FailedCreate")
    rows = page.locator("#rows-events tr:visible")
    expect(rows).not_to_have_count(0)
    for text in rows.all_inner_texts():
        assert "FailedCreate" in text
    page.fill("#events-q-reason", "")
    page.fill("#events-q-object", "rs-005")
    for text in rows.all_inner_texts():
        assert "rs-005" in text
    page.click("#drawer-tabs [data-tab=tab-api]")
    page.fill("#api-q-code", "5xx")
    api = page.locator("#rows-api tr:visible")
    expect(api).to_have_count(1)
    expect(api).to_contain_text("500")
    page.fill("#api-q-code", "")
    page.fill("#api-q-client", "scheduler")
    page.fill("#api-q-object", "binding")
    expect(api).not_to_have_count(0)
    for text in api.all_inner_texts():
        assert "default-scheduler" in text and "pods/binding" in text
    stop(page, live_server_url, sim)


def test_question_mark_shows_every_key(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start(page, live_server_url)
    help_box = page.locator("#help-overlay")
    expect(help_box).to_be_hidden()
    # Not while typing.
    page.fill("#run-to input", "?")
    expect(help_box).to_be_hidden()
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("?")
    expect(help_box).to_be_visible()
    keys = [k.strip() for k in page.locator("#help-keys tr[data-key]").evaluate_all("rs => rs.map(r => r.dataset.key)")]
    # Every key live.js, past.js, focus.js and search.js act on.
    for key in ("Space", "n", ".", "s", "t", "i", "shift+N", "shift+.", "shift+S", "[  ]", "End", "/", "Esc", "?"):
        assert key in keys, key
    shot(page, "dashboard-keys")
    # While it is open no key reaches the page; Esc closes it.
    events = page.evaluate("() => window.ctrlscope.status.events")
    page.keyboard.press("n")
    page.keyboard.press("Escape")
    expect(help_box).to_be_hidden()
    assert page.evaluate("() => window.ctrlscope.status.events") == events
    stop(page, live_server_url, sim)

"""The v1.5 ReplicationManager in a real browser: start the demo under v1.5 from the home page's
form, step one ReplicationController sync stage by stage and read upstream's v1.5 function names
with their links at the pinned commit, see the lookup cache panel and the version on the status
line, stop on a v1.5 stage breakpoint, switch back to v1.36 at run time; and the same page with a
thousand pods."""

from __future__ import annotations

import pathlib
import re

from playwright.sync_api import Page, expect

from .conftest import TOKEN, shot
from .test_dashboard import command, errors, run_to, stop  # noqa: F401 - errors is a fixture

K15 = "https://github.com/kubernetes/kubernetes/blob/a0dadf16f9578b7e926945a85ea34b1621cde796/"
RC_GO = K15 + "pkg/controller/replication/replication_controller.go"
RC_1000 = pathlib.Path(__file__).with_name("rc-1000.yaml")


def start_v15(page: Page, url: str, scenario: str = "demo") -> str:
    page.goto(f"{url}/?token={TOKEN}")
    page.select_option("#start-form select[name=scenario]", scenario)
    page.select_option("#start-version", "v1.5")
    page.set_checked("#start-form input[name=run]", False)
    page.click("#start-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/sim/[a-z0-9-]+/$"))
    expect(page.locator("#st-conn")).to_have_text("live")
    return page.url.rstrip("/").split("/")[-1]


def step_until(page: Page, where, text: str, limit: int = 20) -> None:
    """Click ▸▸ stage until `where` says `text` (other controllers' stages come in between)."""
    for _ in range(limit):
        if text in where.inner_text():
            return
        page.click("#btn-stage")
        page.wait_for_function("() => window.ctrlscope.status && !window.ctrlscope.status.goal")
    expect(where).to_contain_text(text)


def test_step_a_v1_5_sync_and_read_upstreams_v1_5_functions(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start_v15(page, live_server_url)
    expect(page.locator("#st-versions")).to_contain_text("replicationcontroller v1.5")
    rc_tab = page.locator("#controller-tabs button[data-controller=replicationcontroller]")
    expect(rc_tab).to_have_text("replicationcontroller v1.5")
    rc_tab.click()
    page.click("#manual-replicationcontroller")
    expect(page.locator("#workers-replicationcontroller")).to_contain_text(
        "ReplicationManager workers (--concurrent_rc_syncs)"
    )
    run_to(page, 1)
    expect(page.locator("#queue-replicationcontroller")).to_contain_text("replicationmanager")
    expect(page.locator("#queue-replicationcontroller ol.keys")).to_contain_text("default/legacy")
    page.click("#sync-next-replicationcontroller")
    expect(page.locator("#st-result")).to_contain_text("syncs default/legacy")
    page.click("#btn-stage")
    inspector = page.locator("[data-slot=inspector]")
    expect(inspector).to_contain_text("Sync of default/legacy")
    expect(inspector).to_contain_text("rm.queue.Get()")
    for words in (
        "rm.podStoreSynced()",
        "rm.rcStore.Indexer.GetByKey",
        "rcNeedsSync := SatisfiedExpectations(rcKey)",
        "cm.Classify(pods)",
        "No orphan to adopt",
        "Nothing to release",
        "all 2 creates at once (no slow start)",
    ):
        step_until(page, inspector, words)
    page.click("#btn-sync")
    expect(inspector).to_contain_text("rm.queue.Forget(key)")
    expect(inspector).to_contain_text("calculateStatus + updateReplicationControllerStatus")
    for name, line in (("manageReplicas", 489), ("syncReplicationController", 622), ("worker", 461)):
        expect(inspector.locator(f"a:text-is('{name}')").first).to_have_attribute("href", f"{RC_GO}#L{line}")
    expect(inspector.locator("a:text-is('PodControllerRefManager.Classify')")).to_have_attribute(
        "href", K15 + "pkg/controller/controller_ref_manager.go#L56"
    )
    run_to(page, 3)  # the two new pods reach the informer: looked up, their RC cached
    cache = page.locator("#lookupcache-replicationcontroller")
    expect(cache).to_be_visible()
    expect(cache).to_contain_text("Lookup cache")
    expect(cache).to_contain_text("app=legacy")
    expect(page.locator("#owners [data-owner='ReplicationController/legacy'] .version")).to_have_text("v1.5")
    shot(page, "v15-inspector")

    # A breakpoint on a v1.5 stage: the form offers the stages of the versions that run.
    page.click("#drawer-tabs [data-tab=tab-breakpoints]")
    page.select_option("#bp-kind", "stage")
    expect(page.locator("#bp-stage optgroup[data-versions='v1.5 v1.5-late']")).not_to_have_attribute("hidden", "")
    page.select_option("#bp-stage", "classify")
    page.select_option("#form-breakpoint select[name=controller]", "replicationcontroller")
    page.click("#form-breakpoint button[type=submit]")
    expect(page.locator("#breakpoints")).to_contain_text("reaches stage classify")
    command(page, {"op": "act", "action": {"config": {"manualWorkers": []}}})
    scale = {"kind": "ReplicationController", "name": "legacy", "replicas": 3}
    command(page, {"op": "act", "action": {"scale": scale}})
    page.click("#btn-run")
    expect(page.locator("#st-hit")).to_contain_text("reaches stage classify")

    # Back to v1.36 at run time, from the Inject faults tab: the controller restarts.
    page.click("#drawer-tabs [data-tab=tab-inject]")
    page.select_option("#version-select", "v1.36")
    page.click("#version-apply")
    expect(page.locator("#st-versions")).to_contain_text("replicationcontroller v1.36")
    expect(rc_tab).to_have_text("replicationcontroller v1.36")
    expect(cache).to_be_hidden()
    expect(page.locator("#bp-stage optgroup[data-versions='v1.5 v1.5-late']")).to_have_attribute("hidden", "")
    stop(page, live_server_url, sim)


def test_a_thousand_pods_under_v1_5(page: Page, live_server_url: str, errors):  # noqa: F811
    page.goto(f"{live_server_url}/?token={TOKEN}")
    page.set_input_files("#start-form input[name=file]", str(RC_1000))
    page.set_checked("#start-form input[name=run]", False)
    page.click("#start-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/sim/[a-z0-9-]+/$"))
    sim = page.url.rstrip("/").split("/")[-1]
    expect(page.locator("#st-conn")).to_have_text("live")
    expect(page.locator("#st-versions")).to_contain_text("replicationcontroller v1.5")
    page.locator("#controller-tabs button[data-controller=replicationcontroller]").click()
    page.select_option("#focus-key", "replicationcontroller|default/web")
    page.uncheck("#follow-latest")
    # The quota wall: the sync whose burst meets it, told as v1.5 tells it.
    spec = {"kind": "syncError", "controller": "replicationcontroller"}
    command(page, {"op": "breakpoint", "do": "add", "spec": spec})
    page.click("#btn-run")
    expect(page.locator("#st-hit")).to_contain_text("Breakpoint #1")
    inspector = page.locator("[data-slot=inspector]")
    expect(inspector).to_contain_text("all 500 creates at once (no slow start)")
    expect(inspector).to_contain_text(
        '300 created, 200 failed (unable to create pods: pods "web-" is forbidden: exceeded quota)'
    )
    expect(inspector).to_contain_text("Failed creation, decrementing expectations")
    expect(inspector).to_contain_text("rm.queue.AddRateLimited(key)")
    shot(page, "dashboard-v15")
    command(page, {"op": "breakpoint", "do": "remove", "id": 1})
    run_to(page, 20)
    expect(page.locator("#pods-count")).to_contain_text("1,000 pods")
    expect(page.locator("#lookupcache-replicationcontroller")).to_contain_text("app=web")
    expect(page.locator("#owners [data-owner='ReplicationController/web']")).to_contain_text("1000")
    shot(page, "v15-1000")
    stop(page, live_server_url, sim)


# Where a v1.5 stage's time runs into its neighbours: the text's box against the next column's.
TIME_OVERLAPS = """() => [...document.querySelectorAll('[data-slot=inspector] ol.stages.v15 li.stage')]
  .flatMap((li) => {
    const fn = li.querySelector('.fn'), t = li.querySelector('.t'), say = li.querySelector('.say');
    if (!t || !t.textContent.trim()) return [];
    const range = document.createRange(); range.selectNodeContents(t);
    const text = range.getBoundingClientRect(), sayBox = say.getBoundingClientRect();
    const out = [];
    if (text.right > sayBox.left) out.push(`${t.textContent} runs ${text.right - sayBox.left}px into the next column`);
    if (fn && fn.getBoundingClientRect().right > text.left) out.push(`the function name runs into ${t.textContent}`);
    return out;
})"""


def test_the_v1_5_inspectors_time_column_never_overprints(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start_v15(page, live_server_url)
    run_to(page, 12345.678)
    scale = {"kind": "ReplicationController", "name": "legacy", "replicas": 3}
    command(page, {"op": "act", "action": {"scale": scale}})
    page.click("#btn-sync")
    inspector = page.locator("[data-slot=inspector]")
    expect(inspector).to_contain_text("default/legacy")
    expect(inspector.locator("ol.stages.v15 li.stage .t").first).to_contain_text("t=3:25:45.")
    # Every stage's time (t=3:25:45.678: wider than the 4.5rem column it had) ends before the text
    # beside it starts, and the function name column ends before the time.
    assert page.locator("[data-slot=inspector] ol.stages.v15 li.stage").count() >= 5
    assert page.evaluate(TIME_OVERLAPS) == []
    shot(page, "v15-inspector-long-times")
    stop(page, live_server_url, sim)

"""What one step costs the page at 10,000 pods, counted (issue 31): a "sync next" that replaces
one deleted pod of 10 ReplicaSets x 1,000 changes one tile, one lane of the timeline, a few
panels and log rows, so the page's work for it must stay near that. Counted, not timed: the 2D
canvas calls of both canvases (every method of CanvasRenderingContext2D, wrapped) and the DOM
mutation records (a MutationObserver on the document) from the click until the step has landed.

Issue 31's page redrew all 10,000 tiles and every lane's bands at four line segments per pixel
column for each frame of a step: ~72,000 canvas calls a redraw, a few redraws a step, and
Chromium spent ~300 ms of main thread a step rasterising them. The bounds below are a few times
what the page does now (a changed group of tiles, the bands' corners) and an order of magnitude
under that."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .test_dashboard import command, errors, run_to, stop  # noqa: F401 - errors is a fixture
from .test_ui10k import fleet_file, start_fleet, wait_pod_count

# Canvas calls and DOM mutation records a step may cost at 10,000 pods (see the docstring).
MAX_CANVAS_CALLS = 25_000
MAX_MUTATIONS = 3_000

# Counts every 2D canvas call (by canvas id and method) and every DOM mutation record from now
# on; window.__work.reset() starts again.
COUNT_WORK = """() => {
  if (window.__work) { window.__work.reset(); return; }
  const work = window.__work = {canvas: {}, mutations: 0,
    reset() { this.canvas = {}; this.mutations = 0; }};
  const P = CanvasRenderingContext2D.prototype;
  for (const name of Object.getOwnPropertyNames(P)) {
    const d = Object.getOwnPropertyDescriptor(P, name);
    if (name === 'constructor' || typeof d.value !== 'function') continue;
    const call = d.value;
    P[name] = function (...args) {
      const k = (this.canvas.id || '?') + '.' + name;
      work.canvas[k] = (work.canvas[k] || 0) + 1;
      return call.apply(this, args);
    };
  }
  new MutationObserver((records) => { work.mutations += records.length; })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
}"""

SETTLED = "() => window.ctrlscope.status.mode === 'paused' && !window.ctrlscope.status.goal"


def queued(page: Page) -> list[str]:
    return page.evaluate(
        "() => [...document.querySelectorAll('#queue-replicaset ol.keys li.key span')].map(e => e.textContent)"
    )


def step(page: Page, seconds: float = 0.2) -> None:
    """Let `seconds` of virtual time pass and wait until the page shows the world paused again."""
    t = page.evaluate("() => window.ctrlscope.status.t")
    assert command(page, {"op": "step", "what": "to", "t": round(t + seconds, 3)})["ok"]
    page.wait_for_function(f"() => window.ctrlscope.status.t >= {round(t + seconds, 3)} && ({SETTLED})()")


def test_a_step_at_ten_thousand_pods_touches_what_it_changes(page: Page, live_server_url: str, errors, tmp_path):  # noqa: F811
    sim = start_fleet(page, live_server_url, fleet_file(tmp_path, 10, 1000))
    run_to(page, 20)
    wait_pod_count(page, 10000)
    assert command(page, {"op": "act", "action": {"config": {"manualWorkers": ["replicaset"]}}})["ok"]
    # Set-up: every key synced, one pod of rs-003 deleted, its key at the head of the queue.
    owner, key = "rs-003", "default/rs-003"
    for _ in range(50):
        if not queued(page):
            break
        assert command(page, {"op": "act", "action": {"sync": {"controller": "replicaset"}}})["ok"]
        step(page)
    assert not queued(page)
    victim = next(
        k
        for k, v in page.evaluate("() => window.CtrlscopePods.states()").items()
        if k.startswith(f"default/{owner}-") and v == "Ready"
    )
    assert command(page, {"op": "act", "action": {"podFault": {"name": victim.split("/")[1], "fault": "delete"}}})["ok"]
    for _ in range(50):  # the deletion reaches the informer as virtual time passes
        step(page)
        if key in queued(page):
            break
    assert queued(page) == [key]
    expect(page.locator("#sync-next-replicaset")).to_be_enabled()
    newest = page.evaluate("() => window.CtrlscopePods.newest().id")

    # The step: sync next, and the time its sync takes; it has landed when the inspector narrates
    # it and the replacement pod's tile is drawn.
    page.evaluate(COUNT_WORK)
    page.click("#sync-next-replicaset")
    step(page, 0.5)
    page.wait_for_function(
        """([owner, newest]) => { const n = window.CtrlscopePods.newest();
             return n && n.id > newest && n.key.startsWith('default/' + owner + '-') && n.drawn; }""",
        arg=[owner, newest],
    )
    expect(page.locator("[data-slot=inspector]")).to_contain_text(f"Sync of {key}")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    work = page.evaluate("() => ({canvas: window.__work.canvas, mutations: window.__work.mutations})")
    calls = sum(work["canvas"].values())
    top = sorted(work["canvas"].items(), key=lambda kv: -kv[1])[:6]
    print(f"one step at 10,000 pods: {calls} canvas calls {top}, {work['mutations']} DOM mutation records")
    assert work["canvas"], "the step drew nothing: the counters saw no canvas call"
    assert calls <= MAX_CANVAS_CALLS, f"one step made {calls} canvas calls (at most {MAX_CANVAS_CALLS}): {top}"
    assert work["mutations"] <= MAX_MUTATIONS, f"one step made {work['mutations']} DOM mutation records"
    stop(page, live_server_url, sim)

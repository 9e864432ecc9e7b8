"""Benchmark: the debugger page focused on a 10,000-pod rollout (lesson-rollout-10000).

A live server hosts the library's lesson-rollout-10000 (a Deployment of 10,000 replicas on 100
nodes that gets a new image at t=30). Real Chromium opens the debugger, runs the session to
`--at` (default t=36: the rollout well under way, about 12,500 pods), clicks the Deployment's name
(its rollout panel, its lane and its ReplicaSets') and measures, in the page:

* focus: from the click to the rollout panel and the Deployment's own lane drawn;
* step: from a click on "▸ event" to the clock and event count of the frame that carries it on
  screen (`--reps` repetitions, paused, focused);
* the renderer's main thread busy share (CDP Performance.getMetrics TaskDuration, and its script,
  style, layout parts) over `--window` seconds paused, then running at 1x;
* the timeline's and the tiles' last draw time.

`--shot PATH` saves a 1600 x 1000 screenshot of the focused page (docs/img/dashboard-rollout-10000.png).
Prints one JSON line with the machine and interpreter.

Usage: .venv/bin/python bench/ui_rollout.py [--at 36] [--reps 20] [--window 5] [--shot PATH]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _live import TOKEN, live_server
from _machine import machine
from playwright.sync_api import sync_playwright
from ui_step import CHROMIUM_ARGS, busy_share, pct

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "controlplane" / "scenarios" / "lesson-rollout-10000.scenario.yaml"

STEP = """async () => {
  const before = window.ctrlscope.status.events;
  const t0 = performance.now();
  document.getElementById('btn-event').click();
  while (performance.now() - t0 < 10000) {
    await new Promise(r => requestAnimationFrame(r));
    if (window.ctrlscope.status.events > before) {
      await new Promise(r => requestAnimationFrame(r));  // painted by the next frame's callback
      return performance.now() - t0;
    }
  }
  return null;
}"""

FOCUS = """async () => {
  const t0 = performance.now();
  document.querySelector("#owners article[data-owner='Deployment/web'] a.owner-name").click();
  while (performance.now() - t0 < 20000) {
    await new Promise(r => requestAnimationFrame(r));
    const rollout = document.querySelector('#rollout');
    const lanes = window.CtrlscopeTimeline.drawn();
    if (rollout && rollout.offsetParent && lanes.length && lanes[0].owner === 'Deployment/web') {
      await new Promise(r => requestAnimationFrame(r));
      return performance.now() - t0;
    }
  }
  return null;
}"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--at", type=float, default=36.0, help="virtual time to run to before measuring")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--window", type=float, default=5.0)
    parser.add_argument("--shot", type=Path, default=None)
    args = parser.parse_args()
    if not 0 < args.at <= 60 or not 1 <= args.reps <= 1000 or not 0.5 <= args.window <= 120:
        print("--at must be in (0, 60], --reps in [1, 1000], --window in [0.5, 120]", file=sys.stderr)
        sys.exit(2)
    start = Path(tempfile.mkdtemp(prefix="ctrlscope-uirollout-")) / "rollout.yaml"
    shutil.copy(SCENARIO, start)
    with live_server(start) as url, sync_playwright() as p:
        sim = "rollout"
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(f"{url}/sim/{sim}/?token={TOKEN}")
        page.wait_for_function("() => window.ctrlscope.status && window.ctrlscope.seq !== null")
        command = lambda cmd: page.evaluate("c => window.ctrlscope.command(c)", cmd)  # noqa: E731
        command({"op": "pause"})
        t0 = time.monotonic()
        command({"op": "step", "what": "to", "t": args.at})
        page.wait_for_function(
            f"() => window.ctrlscope.status.t >= {args.at} && window.ctrlscope.status.mode === 'paused'",
            timeout=1_800_000,
        )
        reach_s = time.monotonic() - t0
        pods = page.evaluate("() => Object.keys(window.CtrlscopePods.states()).length")
        focus_ms = page.evaluate(FOCUS)
        time.sleep(2.0)  # the rollout's first frames
        if args.shot is not None:
            page.screenshot(path=str(args.shot))
        steps = []
        for _ in range(args.reps):
            steps.append(page.evaluate(STEP))
            time.sleep(0.3)
        done = [s for s in steps if s is not None]
        busy = {"paused_focused": busy_share(cdp, args.window)}
        command({"op": "run", "speed": 1})
        time.sleep(1.0)
        busy["running_1x_focused"] = busy_share(cdp, args.window)
        command({"op": "pause"})
        draws = page.evaluate(
            "() => ({timeline: window.CtrlscopeTimeline.drawMs(), lanes: window.CtrlscopeTimeline.drawn().length,"
            " marks: window.CtrlscopeTimeline.marks().length})"
        )
        browser.close()
    print(
        json.dumps(
            {
                "bench": "ui_rollout",
                "scenario": "lesson-rollout-10000",
                "at": args.at,
                "pods": pods,
                "seconds_to_reach": round(reach_s, 1),
                "focus_to_drawn_ms": None if focus_ms is None else round(focus_ms, 1),
                "step_event_to_painted_ms": {
                    "p50": pct(done, 0.5) if done else None,
                    "p95": pct(done, 0.95) if done else None,
                    "completed": len(done),
                    "reps": args.reps,
                },
                "main_thread_busy_percent": busy,
                "timeline": draws,
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()

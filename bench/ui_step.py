"""Benchmark: from a click on "sync next" to the result on screen, with 10,000 pods.

A live server hosts 10 ReplicaSets x 1,000 pods on 100 nodes, converged, with manual workers,
running at 1x (API and watch latency 1 ms, so the simulation itself adds ~3 ms). Real Chromium
opens the debugger. Each repetition deletes one pod (set-up, not timed), waits until its
ReplicaSet's key is queued, then clicks "sync next" and measures, in the page, the time until the
inspector shows that sync and the replacement pod's tile is drawn ("inspector", "tile"), and until
both are painted (the animation frame after the later of the two: "both", the figure the target
is about). Beside it, in the same page and run: a bare websocket round trip to the same server (a
message the consumer answers itself, without the host). Where the time went: when the last
message needed arrived (server, channel layer, socket) and how long the page's script took to
handle those messages.

The page's main thread (issue 19): after the repetitions, the share of wall time Chromium's
renderer main thread spent in tasks (CDP `Performance.getMetrics` TaskDuration, and its script,
style and layout parts) over a window while paused, while running at 1x, and while running at 1x
with one pod deleted every second. Each repetition's click also gets that breakdown.

`--busy`: the bench starts a process that keeps one core busy (a Python busy loop) for the whole
run, and says so in the JSON (`busy_core`).

Targets (issue 19): p95 <= 100 ms on a quiet machine, <= 150 ms with one core busy, in both
shapes (10 x 1,000 and `--replicasets 100 --replicas 100`); main thread <= 5 % busy paused,
<= 30 % running at 1x. Prints one JSON line.

Usage: .venv/bin/python bench/ui_step.py [--reps 50] [--replicasets 10] [--replicas 1000] [--busy]
       [--window 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _live import TOKEN, fleet, live_server, scenario_file, status
from _machine import machine
from playwright.sync_api import sync_playwright

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Before the page's scripts: time every websocket message's arrival and its handler, so that
# each repetition says how long the server took (click -> the frame that showed the result
# arrived) and how long the page took (handling those frames, then layout and paint).
WS_TIMING = """(() => {
  const Native = window.WebSocket;
  window.__wsLog = [];
  window.WebSocket = function (url, protocols) {
    const ws = new Native(url, protocols);
    let handler = null;
    Object.defineProperty(ws, 'onmessage', {
      get: () => handler,
      set: (h) => {
        handler = h;
        ws.addEventListener('message', (ev) => {
          const at = performance.now();
          h.call(ws, ev);
          window.__wsLog.push([at, performance.now() - at, ev.data.length]);
        });
      },
    });
    return ws;
  };
  Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  window.WebSocket.prototype = Native.prototype;
})()"""

# In the page: click, then watch every animation frame for the inspector and the new tile.
MEASURE = """async ([owner, key, before, newest]) => {
  const slot = document.querySelector('[data-slot=inspector]');
  // What the frames carried, by part (bytes of each panel's HTML, of the rows, of the canvas).
  const parts = {};
  const hook = (m) => {
    for (const [id, html] of Object.entries(m.panels || {})) {
      const kind = id.split(':')[0];
      parts[kind] = (parts[kind] || 0) + html.length;
    }
    for (const html of Object.values(m.rows || {})) parts.rows = (parts.rows || 0) + html.length;
    if (m.canvas) parts.canvas = (parts.canvas || 0) + JSON.stringify(m.canvas).length;
  };
  window.ctrlscope.hooks.push(hook);
  const t0 = performance.now();
  document.getElementById('sync-next-replicaset').click();
  let inspectorAt = null, tileAt = null;
  // Each check runs in an animation-frame callback. What the page changed before the callback
  // of frame k is painted at the end of frame k, i.e. by the callback of frame k+1; the tile is
  // drawn in a callback of its own (pods.js), so it is painted by the next callback after its
  // draw. "both" is the first callback by which both were painted.
  while (performance.now() - t0 < 5000) {
    await new Promise(r => requestAnimationFrame(r));
    const now = performance.now();
    if (tileAt === null) {
      const n = window.CtrlscopePods.newest();
      if (n && n.id > newest && n.key.startsWith('default/' + owner + '-') && n.drawn) tileAt = n.drawnAt;
    }
    if (inspectorAt !== null && tileAt !== null) {
      const painted = now;
      // The messages up to the one after which both were on screen: when the last of them
      // arrived (the server's share), and the time spent handling them (the page's script).
      const msgs = window.__wsLog.filter(m => m[0] >= t0 && m[0] <= Math.max(inspectorAt, tileAt));
      const last = msgs.length ? msgs[msgs.length - 1][0] - t0 : null;
      const handling = msgs.reduce((a, m) => a + m[1], 0);
      const bytes = msgs.reduce((a, m) => a + m[2], 0);
      window.ctrlscope.hooks.splice(window.ctrlscope.hooks.indexOf(hook), 1);
      return {inspector: inspectorAt - t0, tile: tileAt - t0, both: painted - t0,
              arrived: last, handling, messages: msgs.length, bytes, parts};
    }
    if (inspectorAt === null && slot.textContent.includes('Sync of ' + key)) {
      const m = slot.textContent.match(/#(\\d+) · t=/);
      if (m && Number(m[1]) > before) inspectorAt = now;
    }
  }
  window.ctrlscope.hooks.splice(window.ctrlscope.hooks.indexOf(hook), 1);
  const since = (t) => (t === null ? null : t - t0);
  return {inspector: since(inspectorAt), tile: since(tileAt), both: null};
}"""

ECHO = """async (url) => {
  const ws = new WebSocket(url);
  await new Promise(r => ws.onopen = r);
  const times = [];
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now();
    const answered = new Promise(r => ws.onmessage = (ev) => { if (ev.data.startsWith('{"type":"error"')) r(); });
    ws.send('{"type":"echo"}');
    await answered;
    times.push(performance.now() - t0);
  }
  ws.close();
  return times;
}"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 1)


def main_thread(cdp: object) -> dict[str, float]:
    """Seconds the renderer's main thread spent so far: in tasks, and in script, style, layout."""
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}  # type: ignore[attr-defined]
    return {
        "task": metrics["TaskDuration"],
        "script": metrics["ScriptDuration"],
        "style": metrics["RecalcStyleDuration"],
        "layout": metrics["LayoutDuration"],
    }


def busy_share(cdp: object, window: float, during: object = None) -> dict[str, float]:
    """Percent of `window` wall seconds the main thread was busy (tasks; script, style, layout).
    `during`, if given, is called about once a second inside the window."""
    before, t0 = main_thread(cdp), time.monotonic()
    while time.monotonic() - t0 < window:
        if during is not None:
            during()  # type: ignore[operator]
        time.sleep(min(1.0, max(0.0, window - (time.monotonic() - t0))))
    after, elapsed = main_thread(cdp), time.monotonic() - t0
    return {k: round(100 * (after[k] - before[k]) / elapsed, 1) for k in before}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--replicasets", type=int, default=10)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--busy", action="store_true", help="keep one core busy with another process")
    parser.add_argument("--window", type=float, default=5.0, help="seconds of each main-thread window")
    args = parser.parse_args()
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        run(args)
    finally:
        if burner is not None:
            burner.terminate()
            burner.wait()


def run(args: argparse.Namespace) -> None:
    nodes = max(3, args.replicasets * args.replicas // 100)
    # The v1.36 consistency gate off: at this scale its stale-cache skips keep requeueing keys
    # (rate-limited) for minutes, and the queue never gets quiet enough to put the measured key
    # at its head. The path measured (click -> sync -> frame -> screen) is the same.
    doc = fleet(
        args.replicasets,
        args.replicas,
        nodes,
        apiLatency=0.001,
        watchLatency=0.001,
        featureGates={"StaleControllerConsistencyReplicaSet": False},
    )
    path = scenario_file(doc, Path(tempfile.mkdtemp(prefix="ctrlscope-uistep-")), "fleet")
    with live_server(path) as url, sync_playwright() as p:
        sim = "fleet"
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.add_init_script(WS_TIMING)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(f"{url}/sim/{sim}/?token={TOKEN}")
        page.wait_for_function("() => window.ctrlscope.status && window.ctrlscope.seq !== null")
        command = lambda cmd: page.evaluate("c => window.ctrlscope.command(c)", cmd)  # noqa: E731
        command({"op": "pause"})
        command({"op": "step", "what": "to", "t": 40})
        page.wait_for_function("() => window.ctrlscope.status.t >= 40", timeout=600_000)
        pods = status(url, sim)["pods"]
        command({"op": "act", "action": {"config": {"manualWorkers": ["replicaset"]}}})
        samples = []
        queued = "() => [...document.querySelectorAll('#queue-replicaset ol.keys li.key span')].map(e => e.textContent)"
        idle = "() => window.ctrlscope.status.mode === 'paused' && !window.ctrlscope.status.goal"
        for rep in range(args.reps):
            owner = f"rs-{rep % args.replicasets:03d}"
            key = f"default/{owner}"
            # Set-up, paused: sync whatever earlier repetitions left queued, delete one pod of
            # this ReplicaSet, and let the deletion reach the cache, so that this key is the
            # head of the queue. Then run at 1x and click.
            command({"op": "pause"})
            deleted = False
            for _ in range(200):
                time.sleep(0.3)  # let the frames of the last step arrive
                q = page.evaluate(queued)
                if deleted and q and q[0] == key:
                    break
                if q:  # sync the head (left by earlier repetitions), a little time passes
                    command({"op": "act", "action": {"sync": {"controller": "replicaset"}}})
                elif not deleted:
                    victim = next(
                        k
                        for k, v in page.evaluate("() => window.CtrlscopePods.states()").items()
                        if k.startswith(f"default/{owner}-") and v == "Ready"
                    )
                    command({"op": "act", "action": {"podFault": {"name": victim.split("/")[1], "fault": "delete"}}})
                    deleted = True
                t = page.evaluate("() => window.ctrlscope.status.t")
                command({"op": "step", "what": "to", "t": round(t + 0.2, 3)})
                page.wait_for_function(idle)
            else:
                raise RuntimeError(f"could not get {key} to the head of the queue")
            page.wait_for_function(
                "() => { const b = document.getElementById('sync-next-replicaset'); return b && !b.disabled; }"
            )
            command({"op": "run", "speed": 1})
            before = page.evaluate(
                "() => { const m = (document.querySelector('[data-slot=inspector]').textContent"
                ".match(/#(\\d+) · t=/)); return m ? Number(m[1]) : 0; }"
            )
            newest = page.evaluate("() => { const n = window.CtrlscopePods.newest(); return n ? n.id : -1; }")
            spent = main_thread(cdp)
            samples.append(page.evaluate(MEASURE, [owner, key, before, newest]))
            samples[-1]["main"] = {k: 1000 * (v - spent[k]) for k, v in main_thread(cdp).items()}
            print(f"rep {rep}: {key} {samples[-1]}", file=sys.stderr)
            time.sleep(0.05)
        echo = page.evaluate(ECHO, url.replace("http://", "ws://") + f"/ws/sim/{sim}/?token={TOKEN}")
        # The page's main thread, paused, running at 1x, and running with a pod deleted a second.
        command({"op": "act", "action": {"config": {"manualWorkers": []}}})
        command({"op": "pause"})
        time.sleep(1.0)
        busy = {"paused": busy_share(cdp, args.window)}
        command({"op": "run", "speed": 1})
        time.sleep(1.0)
        busy["running_1x"] = busy_share(cdp, args.window)
        ready = iter(k for k, v in page.evaluate("() => window.CtrlscopePods.states()").items() if v == "Ready")

        def delete_one() -> None:
            name = next(ready).split("/")[1]
            command({"op": "act", "action": {"podFault": {"name": name, "fault": "delete"}}})

        busy["running_1x_deleting_1_per_s"] = busy_share(cdp, args.window, delete_one)
        browser.close()
    both = [s["both"] for s in samples if s["both"] is not None]
    inspector = [s["inspector"] for s in samples if s["inspector"] is not None]
    tile = [s["tile"] for s in samples if s["tile"] is not None]
    done = [s for s in samples if s["both"] is not None]
    arrived = [s["arrived"] for s in done if s["arrived"] is not None]
    handling = [s["handling"] for s in done]
    kb = [s["bytes"] / 1000 for s in done]
    print(
        json.dumps(
            {
                "bench": "ui_step",
                "pods": pods,
                "reps": args.reps,
                "completed": len(both),
                "sync_next_to_painted_ms": {"p50": pct(both, 0.5), "p95": pct(both, 0.95), "max": round(max(both), 1)},
                "inspector_ms": {"p50": pct(inspector, 0.5), "p95": pct(inspector, 0.95)},
                "tile_ms": {"p50": pct(tile, 0.5), "p95": pct(tile, 0.95)},
                "websocket_echo_ms": {"p50": pct(echo, 0.5), "p95": pct(echo, 0.95)},
                "mean_ms": round(statistics.mean(both), 1),
                # Where the time went: click -> the last message needed arrived (server, channel layer,
                # socket) and the page's handling of those messages (parse, swap panels, draw tiles);
                # the rest of "both" is waiting for animation frames, layout and paint.
                "result_arrived_ms": {"p50": pct(arrived, 0.5), "p95": pct(arrived, 0.95)},
                "handling_ms": {"p50": pct(handling, 0.5), "p95": pct(handling, 0.95)},
                "kb_per_step": {"p50": pct(kb, 0.5), "max": round(max(kb), 1)},
                # What those KB were, p50 per part (panel kinds, log rows, canvas deltas); the
                # frames applied until both were on screen (a frame after that is not counted).
                "kb_per_step_by_part_p50": {
                    part: pct([s.get("parts", {}).get(part, 0) / 1000 for s in done], 0.5)
                    for part in sorted({p for s in done for p in s.get("parts", {})})
                },
                # The renderer's main thread during each click's measurement (ms): tasks, and their
                # script, style and layout parts.
                "step_main_thread_ms": {
                    k: {"p50": pct([s["main"][k] for s in done], 0.5), "p95": pct([s["main"][k] for s in done], 0.95)}
                    for k in done[0]["main"]
                },
                "main_thread_busy_percent": busy,
                "shape": f"{args.replicasets} x {args.replicas}",
                "busy_core": args.busy,
                "target_p95_ms": 150 if args.busy else 100,
                "target_main_thread_percent": {"paused": 5, "running_1x": 30},
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()

// The timeline: for each owner, its pods' states over virtual time as a stacked area (readable
// at 1,000 pods, still drawing at 10,000: one path per state per lane), the syncs of its key as
// spans (red when the sync returned an error), and each controller's queue depth at the bottom.
// An owner of owners (a Deployment) has a lane of its own above its children's: its conditions
// as bands over time, its revision changes, its Events (ScalingReplicaSet …) and its syncs.
// Wheel zooms around the pointer, drag pans, "follow" keeps the newest time in view.
"use strict";

(function () {
  const canvas = document.getElementById("timeline-canvas");
  if (!canvas) return;
  const ctx = canvas.getContext("2d");
  const tip = document.getElementById("timeline-tip");

  const ORDER = ["Ready", "Running", "NotReady", "Scheduled", "Pending", "ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff", "Unknown", "Terminating", "Failed", "Succeeded"];
  const COLOR = {
    Ready: "#2e9d4a", Running: "#9fd8a8", NotReady: "#f0a85e", Scheduled: "#f7cf7a", Pending: "#f4b740",
    ErrImagePull: "#c2185b", ImagePullBackOff: "#e88ab5",
    CrashLoopBackOff: "#d93a3a", Unknown: "#7e57c2", Terminating: "#b9c0c9", Failed: "#8f1d1d", Succeeded: "#9aa3ad",
  };
  // The controllers' names and kinds, in the controller registry's order (sim.html renders them in #app's data-controller-kinds).
  const CONTROLLER_KINDS = JSON.parse(document.getElementById("app").dataset.controllerKinds);
  const CONTROLLER_KIND = Object.values(CONTROLLER_KINDS);
  const CONTROLLER_NAME = Object.keys(CONTROLLER_KINDS);
  const LANE = 44, SPANS = 10, AXIS = 18, LEFT = 0;
  // A queue depth row: 30 px, or 14 in a short box (a page focused on a Deployment at 1280 x 800)
  // so that the lanes keep the room.
  let DEPTH = 30;
  const OWN = 52; // an owner of owners' lane: its name, a band per condition, its Events
  const FOLDED = 12; // a folded lane: its stacked area in a thin strip, its syncs as ticks below
  const AUTO_FOLD = 8; // with more lanes than this, lanes start folded
  const scroller = document.getElementById("timeline-scroll");
  const spacer = document.getElementById("timeline-spacer");

  const m = {
    states: ["Pending", "Scheduled", "ErrImagePull", "ImagePullBackOff", "Running", "Ready", "NotReady", "CrashLoopBackOff", "Terminating", "Failed", "Succeeded", "Unknown", "Deleted"],
    owners: [""],
    keys: [],
    lanes: new Map(), // owner index -> {events: number[] (t, state, delta triples), max}
    podAt: new Map(), // pod id -> [owner, state]
    spans: [], // [start, end, controller, key, worker, err, seq of its sync.start]
    depth: [], // [t, controller, depth]
    marks: [], // an owner of owners' own: [t, owner, kind ("rev" | "cond" | "ev" | "warn"), label, detail, seq]
    now: 0,
    dropped: 0,
  };
  const view = { t0: 0, t1: 60, follow: true };
  let cursor = null; // the moment of the past the page shows (past.js), or null: live
  let scrubbing = null; // dragging the cursor: {last: wall ms of the last request}
  let scheduled = false;
  let dragging = null;
  let hover = null;
  // Lanes: folded or not (the default folds them all beyond AUTO_FOLD lanes; a click on a name
  // toggles that one), and which owner the page is focused on (focus.js: only its lane).
  const lanes = { foldAll: null, toggled: new Set(), only: null, parents: new Map(), scrollTop: 0, viewH: 0, placed: [] };

  function reset(data) {
    if (data.states) m.states = data.states;
    m.owners = data.owners || [""];
    m.keys = data.keys || [];
    m.lanes = new Map();
    m.podAt = new Map();
    m.spans = [];
    m.depth = [];
    m.dropped = data.dropped || 0;
    window.CtrlscopeTransitions.each(data.tr, transition);
    m.spans = (data.spans || []).slice();
    m.depth = (data.depth || []).slice();
    m.marks = [];
    for (const mk of data.marks || []) mark(mk);
    schedule();
  }

  function apply(delta) {
    if (delta.owners) m.owners = delta.owners;
    if (delta.keys) m.keys = delta.keys;
    window.CtrlscopeTransitions.each(delta.tr, transition);
    for (const s of delta.spans || []) m.spans.push(s);
    for (const d of delta.depth || []) m.depth.push(d);
    for (const mk of delta.marks || []) mark(mk);
    schedule();
  }

  function lane(owner) {
    let l = m.lanes.get(owner);
    if (!l) { l = { events: [], count: new Array(m.states.length).fill(0), max: 1, total: 0 }; m.lanes.set(owner, l); }
    return l;
  }

  // A mark makes its owner's lane one of its own (no pods: its conditions, revisions, Events).
  function mark(mk) {
    m.marks.push(mk);
    const l = lane(mk[1]);
    l.own = true;
    if (mk[0] > m.now) m.now = mk[0];
  }

  function transition([t, id, owner, state]) {
    const deleted = m.states.indexOf("Deleted");
    const prev = m.podAt.get(id);
    if (t > m.now) m.now = t;
    if (prev) {
      const l = lane(prev[0]);
      l.events.push(t, prev[1], -1);
      l.count[prev[1]] -= 1;
      l.total -= 1;
    }
    if (state === deleted) { m.podAt.delete(id); return; }
    m.podAt.set(id, [owner, state]);
    const l = lane(owner);
    l.events.push(t, state, 1);
    l.count[state] += 1;
    l.total += 1;
    if (l.total > l.max) l.max = l.total;
  }

  function setNow(t) {
    if (t > m.now) m.now = t;
  }

  // The width and the visible height come from ResizeObservers, the scroll offset from the
  // scroll event: reading them while drawing would force a layout.
  let width = spacer.clientWidth || 600;
  new ResizeObserver((entries) => { width = entries[0].contentRect.width || width; schedule(); }).observe(spacer);
  new ResizeObserver((entries) => { lanes.viewH = entries[0].contentRect.height; schedule(); }).observe(scroller);
  scroller.addEventListener("scroll", () => { lanes.scrollTop = scroller.scrollTop; schedule(); }, { passive: true });

  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { scheduled = false; draw(); });
  }

  // Lanes by owner name, each owner's children (a Deployment's ReplicaSets: `parents`, from
  // the owners panel) right beneath it, grouped under their parent's name.
  function laneOrder() {
    // [group, 0 for the parent's own lane, 1 for a child's, name]: a Deployment's lane first,
    // its ReplicaSets' right beneath it.
    const group = (o) => { const name = m.owners[o]; const parent = lanes.parents.get(name); return parent ? [parent, 1, name] : [name, 0, ""]; };
    const cmp = (a, b) => { const ga = group(a), gb = group(b); return ga[0].localeCompare(gb[0]) || ga[1] - gb[1] || ga[2].localeCompare(gb[2]); };
    const order = [...m.lanes.keys()].filter((o) => m.lanes.get(o).max > 0).sort((a, b) => (a === 0) - (b === 0) || cmp(a, b));
    return lanes.only === null ? order : order.filter((o) => lanes.only.includes(m.owners[o]));
  }

  function folded(owner, count) {
    const byDefault = lanes.foldAll === null ? count > AUTO_FOLD : lanes.foldAll;
    return byDefault !== lanes.toggled.has(m.owners[owner]);
  }

  function laneHeight(isFolded, own) {
    return isFolded ? FOLDED + 6 : (own ? OWN : LANE) + SPANS + 6;
  }

  function controllersWithDepth() {
    const seen = new Set(m.depth.map((d) => d[1]));
    return [...seen].sort();
  }

  let lastDrawMs = 0; // how long the last draw took (benchmarks)

  function draw() {
    const started = performance.now();
    try {
      drawAll();
      foldButton();
    } finally {
      lastDrawMs = performance.now() - started;
    }
  }

  let drawnClock = null; // the status clock of the last draw

  function drawAll() {
    const st = window.ctrlscope && window.ctrlscope.status;
    if (st) setNow(st.t);
    drawnClock = st ? st.t : null;
    const order = laneOrder();
    const depthCtl = controllersWithDepth();
    DEPTH = lanes.viewH && lanes.viewH < 230 ? 14 : 30;
    const depthH = depthCtl.length * (DEPTH + 6);
    let lanesH = 0;
    const heights = order.map((o) => { const h = laneHeight(folded(o, order.length), m.lanes.get(o).own); lanesH += h; return h; });
    const total = AXIS + lanesH + depthH + 8;
    // The canvas is as tall as the box shows (the box scrolls a spacer as tall as every lane):
    // the axis stays at the top, the queue depth at the bottom, the lanes in view in between.
    const height = Math.max(AXIS + depthH + 30, Math.min(total, lanes.viewH || total));
    if (spacer.style.height !== total + "px") spacer.style.height = total + "px";
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(height * dpr);
      canvas.style.width = width + "px";
      canvas.style.height = height + "px";
    }
    if (view.follow) {
      const span = Math.max(view.t1 - view.t0, 1);
      view.t1 = Math.max(m.now, span);
      view.t0 = Math.max(0, view.t1 - span);
      if (m.now < span) { view.t0 = 0; view.t1 = span; }
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const W = width - LEFT;
    const xOf = (t) => LEFT + ((t - view.t0) / (view.t1 - view.t0)) * W;
    axis(width, height, xOf);
    // Only the lanes in view are drawn (the rest cost nothing, at 100 owners as at 2).
    const clipBottom = height - depthH - 4;
    const scrollTop = Math.min(lanes.scrollTop, Math.max(0, total - height));
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS, width, Math.max(0, clipBottom - AXIS));
    ctx.clip();
    lanes.placed = [];
    spanHits = [];
    markHits = [];
    let y = AXIS - scrollTop;
    for (const owner of m.lanes.keys()) m.lanes.get(owner).top = undefined;
    order.forEach((owner, i) => {
      const h = heights[i];
      if (y + h >= AXIS && y <= clipBottom) {
        const isFolded = h < LANE;
        const l = m.lanes.get(owner);
        const laneH = isFolded ? FOLDED : l.own ? OWN : LANE;
        if (l.own) drawOwnLane(owner, l, y, W, xOf, laneH, isFolded);
        else drawLane(l, y, W, xOf, laneH);
        // A child lane names its parent: "Deployment/web › ReplicaSet/web-77768f5b79".
        const parent = lanes.parents.get(m.owners[owner]);
        const label = `${isFolded ? "▸" : "▾"} ${parent ? parent + " › " : ""}${m.owners[owner] || "no controller"}`;
        ctx.font = isFolded ? "600 10px system-ui, sans-serif" : "600 11px system-ui, sans-serif";
        const lw = ctx.measureText(label).width;
        ctx.fillStyle = "rgba(255,255,255,0.85)";
        ctx.fillRect(LEFT + 2, y + (isFolded ? 0 : 2), lw + 8, isFolded ? FOLDED : 15);
        ctx.fillStyle = "#1d2330";
        ctx.fillText(label, LEFT + 6, y + (isFolded ? 10 : 13));
        lanes.placed.push({ owner: m.owners[owner], top: y, bottom: y + h, labelRight: LEFT + 10 + lw });
        drawSpans(owner, y + (isFolded ? FOLDED + 1 : laneH + 2), xOf, isFolded ? 4 : SPANS - 2);
      }
      y += h;
    });
    ctx.restore();
    y = height - depthH - 2;
    for (const c of depthCtl) {
      drawDepth(c, y, width, xOf);
      y += DEPTH + 6;
    }
    // pinned times (a violation a swarm found …)
    for (const mark of (st && st.marks) || []) {
      const xm = xOf(mark.t);
      if (xm < LEFT || xm > width) continue;
      ctx.strokeStyle = "#d93a3a";
      ctx.lineWidth = 2;
      ctx.beginPath(); ctx.moveTo(xm, AXIS - 4); ctx.lineTo(xm, height); ctx.stroke();
      ctx.fillStyle = "#d93a3a";
      ctx.font = "600 11px system-ui, sans-serif";
      ctx.fillText(mark.label, Math.min(xm + 4, width - ctx.measureText(mark.label).width - 4), AXIS + 10);
    }
    // now
    const xn = xOf(m.now);
    if (xn >= LEFT && xn <= width) {
      ctx.strokeStyle = "#2f6fdf";
      ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(xn + 0.5, AXIS - 4); ctx.lineTo(xn + 0.5, height); ctx.stroke();
    }
    // the cursor: the moment every panel shows while viewing the past
    if (cursor !== null) {
      const xc = xOf(cursor);
      if (xc >= LEFT && xc <= width) {
        ctx.fillStyle = "rgba(247, 213, 139, 0.35)";
        ctx.fillRect(xc, AXIS, Math.max(0, Math.min(width, xn) - xc), height - AXIS);
        ctx.strokeStyle = "#c27c00";
        ctx.lineWidth = 3;
        ctx.beginPath(); ctx.moveTo(xc, AXIS - 6); ctx.lineTo(xc, height); ctx.stroke();
        ctx.fillStyle = "#8a5a00";
        ctx.font = "600 11px system-ui, sans-serif";
        const label = `viewing t=${window.CtrlscopeTime.format(cursor)}`;
        ctx.fillText(label, Math.min(xc + 5, width - ctx.measureText(label).width - 4), AXIS + 22);
      }
    }
    if (hover) {
      ctx.strokeStyle = "rgba(0,0,0,0.35)";
      ctx.beginPath(); ctx.moveTo(hover.x + 0.5, AXIS); ctx.lineTo(hover.x + 0.5, height); ctx.stroke();
    }
    if (!order.length) {
      ctx.fillStyle = "#5b6475";
      ctx.font = "13px system-ui, sans-serif";
      ctx.fillText("No pods yet.", 6, AXIS + 18);
    }
    if (m.dropped) {
      ctx.fillStyle = "#8a5a00";
      ctx.font = "11px system-ui, sans-serif";
      ctx.fillText(`(${m.dropped.toLocaleString("en-US")} oldest transitions dropped)`, width - 230, height - 4);
    }
  }

  // Tick steps a reader counts in: decimal below a second, then seconds, minutes, hours, days.
  const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 432000, 864000];

  function niceStep(span, px) {
    const target = span / Math.max(2, px / 110);
    if (target >= 1) {
      for (const s of STEPS) if (s >= target) return s;
      return Math.ceil(target / 864000) * 864000;
    }
    const mag = Math.pow(10, Math.floor(Math.log10(target)));
    for (const f of [1, 2, 5, 10]) if (f * mag >= target) return f * mag;
    return 10 * mag;
  }

  let axisLabels = []; // the labels last drawn (for the tests: a canvas has no text to read)

  function axis(width, height, xOf) {
    const step = niceStep(view.t1 - view.t0, width);
    // The page's one time format (time.js), with as many decimals as the step needs.
    const places = step >= 1 ? 0 : step >= 0.1 ? 1 : 2;
    ctx.fillStyle = "#5b6475";
    ctx.strokeStyle = "#eef0f4";
    ctx.font = "11px system-ui, sans-serif";
    ctx.lineWidth = 1;
    axisLabels = [];
    for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, AXIS - 3); ctx.lineTo(x, height); ctx.stroke();
      const label = window.CtrlscopeTime.format(t, places);
      axisLabels.push(label);
      ctx.fillText(label, x + 3, 11);
    }
  }

  // The stacked counts of one owner's pods by state, one column per pixel.
  function drawLane(l, top, W, xOf, laneH) {
    const cols = Math.max(1, Math.floor(W));
    const nStates = m.states.length;
    const counts = new Array(nStates).fill(0);
    const ev = l.events;
    const grid = new Array(cols);
    let i = 0;
    const dt = (view.t1 - view.t0) / cols;
    const empty = new Array(nStates).fill(0);
    for (let c = 0; c < cols; c++) {
      const tStart = view.t0 + c * dt, tEnd = tStart + dt;
      while (i < ev.length && ev[i] <= tEnd) { counts[ev[i + 1]] += ev[i + 2]; i += 3; }
      grid[c] = tStart > m.now ? empty : counts.slice(); // nothing is known after now
    }
    const scale = (laneH - 2) / Math.max(1, l.max);
    const base = new Float32Array(cols);
    ctx.fillStyle = "#f6f7f9";
    ctx.fillRect(LEFT, top, W, laneH);
    for (const name of ORDER) {
      const s = m.states.indexOf(name);
      if (s < 0) continue;
      let any = false;
      for (let c = 0; c < cols; c++) if (grid[c][s]) { any = true; break; }
      if (!any) continue;
      ctx.fillStyle = COLOR[name];
      ctx.beginPath();
      // The band's outline: its top edge left to right, its bottom edge (the bands below) back.
      // A corner only where an edge's height changes from one column to the next: a count that
      // holds for a thousand columns is one line, not two thousand (the same polygon; the path's
      // size follows the changes in view, not the canvas' width: issue 31).
      const tops = new Float32Array(cols);
      for (let c = 0; c < cols; c++) tops[c] = base[c] + grid[c][s] * scale;
      ctx.moveTo(LEFT, top + laneH - base[0]);
      steps(tops, cols, top + laneH, 1);
      steps(base, cols, top + laneH, -1);
      ctx.closePath();
      ctx.fill();
      base.set(tops);
    }
    l.grid = grid;
    l.top = top;
    // Scale mark: the most pods this owner had at once.
    l.height = laneH;
    if (laneH >= 20) {
      ctx.fillStyle = "#5b6475";
      ctx.font = "10px system-ui, sans-serif";
      ctx.fillText(String(l.max), LEFT + W - 24, top + 10);
    }
  }

  // One edge of a band as a staircase of column heights `h` (px above `bottom`): left to right
  // (dir 1) or right to left (dir -1), with a corner only where the height changes.
  function steps(h, cols, bottom, dir) {
    const first = dir > 0 ? 0 : cols - 1;
    let y = bottom - h[first];
    ctx.lineTo(LEFT + (dir > 0 ? 0 : cols), y);
    for (let c = first + dir; c >= 0 && c < cols; c += dir) {
      const next = bottom - h[c];
      if (next === y) continue;
      const x = LEFT + (dir > 0 ? c : c + 1); // the boundary between column c and the one before it
      ctx.lineTo(x, y);
      ctx.lineTo(x, next);
      y = next;
    }
    ctx.lineTo(LEFT + (dir > 0 ? cols : 0), y);
  }

  // -- an owner of owners' own lane (a Deployment) ------------------------------------------------
  // Its conditions as bands (one per type, Progressing first), each run coloured by its status and
  // reason and named inside when it has room; its revision changes as dark lines; its Events as
  // marks (▲ scaled up, ▼ scaled down, ◆ a Warning, • any other).
  const COND_ORDER = ["Progressing", "Available"];
  function condColor(type, status, reason) {
    if (status === "Unknown") return "#9aa3ad";
    if (type === "Progressing") return status === "False" ? "#d93a3a" : reason === "NewReplicaSetAvailable" ? "#2e9d4a" : "#2f6fdf";
    if (type === "Available") return status === "True" ? "#2e9d4a" : "#f0a85e";
    return status === "True" ? "#d93a3a" : "#b9c0c9"; // ReplicaFailure and others: True is the bad news
  }

  function ownMarks(owner) {
    return m.marks.filter((mk) => mk[1] === owner);
  }

  // The runs of each condition type: {type: [[from, to, status, reason, message]]} (to: now).
  function conditionRuns(marks) {
    const runs = new Map();
    for (const [t, , kind, label, detail] of marks) {
      if (kind !== "cond") continue;
      const eq = label.indexOf("=");
      const type = label.slice(0, eq), status = label.slice(eq + 1);
      const colon = detail.indexOf(": ");
      const reason = colon < 0 ? detail : detail.slice(0, colon), message = colon < 0 ? "" : detail.slice(colon + 2);
      if (!runs.has(type)) runs.set(type, []);
      const list = runs.get(type);
      if (list.length) list[list.length - 1][1] = t;
      list.push([t, null, status, reason, message]);
    }
    const types = [...runs.keys()].sort((a, b) => ((COND_ORDER.indexOf(a) + 99) % 99) - ((COND_ORDER.indexOf(b) + 99) % 99) || a.localeCompare(b));
    return types.map((type) => [type, runs.get(type)]);
  }

  function drawOwnLane(owner, l, top, W, xOf, laneH, isFolded) {
    const marks = ownMarks(owner);
    ctx.fillStyle = "#f6f7f9";
    ctx.fillRect(LEFT, top, W, laneH);
    const runs = conditionRuns(marks);
    l.runs = runs;
    l.grid = null;
    l.top = top;
    l.height = laneH;
    // Bands: under the name (16 px) in a full lane, the whole strip (the first type) when folded.
    const bandTop = isFolded ? top : top + 16;
    const rows = isFolded ? runs.slice(0, 1) : runs.slice(0, 3);
    const bandH = isFolded ? laneH : Math.max(6, Math.min(11, Math.floor((laneH - 28) / Math.max(1, rows.length))));
    rows.forEach(([type, list], r) => {
      const y = bandTop + r * (bandH + 1);
      for (const [from, to, status, reason] of list) {
        const end = to === null ? m.now : to;
        if (end < view.t0 || from > view.t1) continue;
        const x0 = Math.max(LEFT, xOf(from)), x1 = Math.min(LEFT + W, Math.max(xOf(end), x0 + 1));
        ctx.fillStyle = condColor(type, status, reason);
        ctx.fillRect(x0, y, x1 - x0, bandH);
        if (!isFolded && bandH >= 9) {
          const text = `${type}=${status} ${reason}`;
          ctx.font = "9px system-ui, sans-serif";
          if (ctx.measureText(text).width + 6 < x1 - x0) {
            ctx.fillStyle = "#ffffff";
            ctx.fillText(text, x0 + 3, y + bandH - 2);
          }
        }
      }
    });
    // Revisions: a line through the lane, "rev N" beside it.
    const evY = isFolded ? top + laneH - 3 : top + laneH - 6;
    for (const mk of marks) {
      const [t, , kind, label] = mk;
      const x = xOf(t);
      if (x < LEFT - 4 || x > LEFT + W + 4) continue;
      if (kind === "rev") {
        ctx.strokeStyle = "#1d2330";
        ctx.lineWidth = 1.5;
        ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + laneH); ctx.stroke();
        if (!isFolded) {
          ctx.font = "600 10px system-ui, sans-serif";
          const text = `rev ${label}`;
          const w = ctx.measureText(text).width;
          ctx.fillStyle = "rgba(255,255,255,0.85)";
          ctx.fillRect(x + 2, top + 2, w + 4, 12);
          ctx.fillStyle = "#1d2330";
          ctx.fillText(text, x + 4, top + 12);
        }
        markHits.push([x - 3, x + 3, top, laneH, mk]);
      } else if (kind === "ev" || kind === "warn") {
        const r = isFolded ? 3 : 4;
        ctx.fillStyle = kind === "warn" ? "#d93a3a" : "#1d4fb0";
        ctx.beginPath();
        const detail = mk[4] || "";
        if (kind === "warn") { ctx.moveTo(x, evY - r); ctx.lineTo(x + r, evY); ctx.lineTo(x, evY + r); ctx.lineTo(x - r, evY); }
        else if (/^Scaled up/.test(detail)) { ctx.moveTo(x, evY - r); ctx.lineTo(x + r, evY + r); ctx.lineTo(x - r, evY + r); }
        else if (/^Scaled down/.test(detail)) { ctx.fillStyle = "#5b6475"; ctx.moveTo(x - r, evY - r); ctx.lineTo(x + r, evY - r); ctx.lineTo(x, evY + r); }
        else ctx.arc(x, evY, r - 1, 0, Math.PI * 2);
        ctx.closePath();
        ctx.fill();
        markHits.push([x - r, x + r, evY - r, 2 * r, mk]);
      } else if (kind === "cond") {
        markHits.push([x - 2, x + 2, bandTop, Math.max(bandH, 4) * Math.max(1, rows.length), mk]);
      }
    }
  }

  // What an own lane says at time t: each condition then, and the revision.
  function ownAt(owner, t) {
    const l = m.lanes.get(owner);
    const parts = [];
    for (const [type, list] of l.runs || []) {
      let run = null;
      for (const r of list) if (r[0] <= t) run = r;
      if (run) parts.push(`${type}=${run[2]} (${run[3]})`);
    }
    let rev = null;
    for (const mk of m.marks) if (mk[1] === owner && mk[2] === "rev" && mk[0] <= t) rev = mk[3];
    if (rev !== null) parts.push(`revision ${rev}`);
    return parts.join(" · ") || "no status yet";
  }

  let markHits = []; // the marks drawn: [x0, x1, top, height, mark] (a click on one goes to its record)

  function markAt(ev) {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    let best = null, bestDistance = 4;
    for (const [x0, x1, top, h, mk] of markHits) {
      if (y < top - 2 || y > top + h + 2) continue;
      const distance = x < x0 ? x0 - x : x > x1 ? x - x1 : 0;
      if (distance < bestDistance || (distance === bestDistance && best && best[2] === "cond" && mk[2] !== "cond")) { best = mk; bestDistance = distance; }
    }
    return best;
  }

  function markText(mk) {
    const when = window.CtrlscopeTime.format(mk[0]);
    if (mk[2] === "rev") return `${m.owners[mk[1]]} at ${when}: ${mk[4]}`;
    if (mk[2] === "cond") return `${m.owners[mk[1]]} at ${when}: ${mk[3]} ${mk[4]}`;
    return `${m.owners[mk[1]]} at ${when}: ${mk[2] === "warn" ? "Warning" : "Event"} ${mk[3]}: ${mk[4]}`;
  }

  const keyOwner = []; // key index -> "Kind/name" (keys only grow)
  function ownerOfKey(k) {
    if (keyOwner[k] === undefined) {
      const key = m.keys[k];
      if (!key) return null;
      const [controller, nsName] = key.split(":");
      const kind = CONTROLLER_KIND[CONTROLLER_NAME.indexOf(controller)];
      const [namespace, name] = nsName.split("/");
      keyOwner[k] = window.CtrlscopePods.ownerLabel(kind, namespace, name);
    }
    return keyOwner[k];
  }

  let spanHits = []; // the spans drawn: [x0, x1, top, height, span] (a click on one goes to its cause)

  function drawSpans(owner, top, xOf, h) {
    const name = m.owners[owner];
    const spans = m.spans;
    // Spans are in end-time order: skip to the first that ends in view.
    let lo = 0, hi = spans.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (spans[mid][1] < view.t0) lo = mid + 1; else hi = mid; }
    for (let i = lo; i < spans.length; i++) {
      const [start, end, , k, , err] = spans[i];
      if (start > view.t1) continue;
      if (ownerOfKey(k) !== name) continue;
      const x0 = xOf(start), x1 = Math.max(xOf(end), x0 + 1.5);
      ctx.fillStyle = err ? "#d93a3a" : "#2f6fdf";
      ctx.fillRect(x0, top, x1 - x0, h);
      spanHits.push([x0, x1, top, h, spans[i]]);
    }
  }

  function drawDepth(controller, top, width, xOf) {
    const pts = m.depth.filter((d) => d[1] === controller);
    let max = 1;
    for (const p of pts) if (p[2] > max) max = p[2];
    ctx.fillStyle = "#f6f7f9";
    ctx.fillRect(LEFT, top, width - LEFT, DEPTH);
    ctx.strokeStyle = "#5a3fc0";
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    // A step line; the samples outside the view are pinned to its edges, and several in one
    // pixel column draw as one vertical stroke through their lowest and highest (the line's
    // corners follow the pixels in view, not the session's history of samples: issue 31).
    const yOf = (d) => top + DEPTH - (d / max) * (DEPTH - 4);
    let last = 0, col = null, lo = 0, hi = 0;
    const flush = () => {
      if (col === null) return;
      ctx.lineTo(col, yOf(lo));
      ctx.lineTo(col, yOf(hi));
      ctx.lineTo(col, yOf(last));
    };
    ctx.moveTo(LEFT, top + DEPTH);
    for (const [t, , d] of pts) {
      const x = Math.round(Math.min(Math.max(xOf(t), LEFT), width));
      if (x !== col) {
        flush();
        ctx.lineTo(x, yOf(last));
        col = x; lo = hi = last;
      }
      if (d < lo) lo = d;
      if (d > hi) hi = d;
      last = d;
    }
    flush();
    ctx.lineTo(width, yOf(last));
    ctx.stroke();
    ctx.fillStyle = "#1d2330";
    ctx.font = "600 11px system-ui, sans-serif";
    ctx.fillText(`${CONTROLLER_NAME[controller]} queue depth (max ${max})`, LEFT + 6, top + Math.min(12, DEPTH - 2));
  }

  // -- interaction --------------------------------------------------------------------------------
  canvas.addEventListener("wheel", (ev) => {
    // Lanes that overflow their box scroll with the wheel; ctrl/shift+wheel (or the wheel over
    // the axis) zooms. Lanes that fit: the wheel zooms.
    const overflow = scroller.scrollHeight > scroller.clientHeight + 1;
    const overAxis = ev.clientY - canvas.getBoundingClientRect().top < AXIS;
    if (overflow && !ev.ctrlKey && !ev.shiftKey && !overAxis) return;
    ev.preventDefault();
    const r = canvas.getBoundingClientRect();
    const frac = (ev.clientX - r.left - LEFT) / (r.width - LEFT);
    const t = view.t0 + frac * (view.t1 - view.t0);
    const factor = ev.deltaY > 0 ? 1.25 : 0.8;
    const span = Math.min(Math.max((view.t1 - view.t0) * factor, 0.01), Math.max(m.now, 60) * 1.2);
    view.t0 = Math.max(0, t - frac * span);
    view.t1 = view.t0 + span;
    view.follow = view.t1 >= m.now && ev.deltaY > 0 ? view.follow : false;
    followButton();
    schedule();
  }, { passive: false });

  function timeAt(clientX) {
    const r = canvas.getBoundingClientRect();
    return view.t0 + ((clientX - r.left - LEFT) / (r.width - LEFT)) * (view.t1 - view.t0);
  }

  // Press on the cursor and drag: scrub (each request supersedes the last, at most 10 a second).
  // A click anywhere else moves the cursor there; a drag elsewhere pans.
  canvas.addEventListener("mousedown", (ev) => {
    const r = canvas.getBoundingClientRect();
    const xc = cursor === null ? null : LEFT + ((cursor - view.t0) / (view.t1 - view.t0)) * (r.width - LEFT);
    if (xc !== null && Math.abs(ev.clientX - r.left - xc) <= 6) {
      scrubbing = { last: 0 };
      return;
    }
    dragging = { x: ev.clientX, t0: view.t0, t1: view.t1, moved: false };
  });
  window.addEventListener("mouseup", (ev) => {
    if (scrubbing) {
      scrubbing = null;
      if (window.CtrlscopePast) window.CtrlscopePast.scrub(cursor);
    } else if (dragging && !dragging.moved && ev.target === canvas && laneLabel(ev)) {
      // A lane's name: its mark folds or unfolds it, its name focuses the page on that owner.
      const { lane, onMark } = laneLabel(ev);
      if (onMark) toggleFold(lane.owner);
      else if (window.CtrlscopeFocus && lane.owner) window.CtrlscopeFocus.focusOwner(lane.owner);
    } else if (dragging && !dragging.moved && ev.target === canvas && window.CtrlscopePast && markAt(ev)) {
      // A mark of a Deployment's lane (an Event, a revision, a condition that flipped): its
      // moment, and its why? (the sync and the write behind it).
      const mk = markAt(ev);
      window.CtrlscopePast.go({ seq: mk[5] });
      if (window.CtrlscopeCauses) window.CtrlscopeCauses.why(mk[5]);
    } else if (dragging && !dragging.moved && ev.target === canvas && window.CtrlscopePast && spanAt(ev)) {
      // A sync span links to its cause like every other row: the cursor to the sync's start,
      // and its why? (the queue item, the handler, the delivery … that started it).
      const span = spanAt(ev);
      window.CtrlscopePast.go({ seq: span[6] }); // the host knows the record's exact time
      if (window.CtrlscopeCauses) window.CtrlscopeCauses.why(span[6]);
    } else if (dragging && !dragging.moved && ev.target === canvas && window.CtrlscopePast) {
      const t = Math.min(timeAt(ev.clientX), m.now);
      setCursor(Math.max(0, t));
      window.CtrlscopePast.scrub(Math.max(0, t));
    }
    dragging = null;
  });
  canvas.addEventListener("mousemove", (ev) => {
    const r = canvas.getBoundingClientRect();
    if (scrubbing) {
      cursor = Math.max(0, Math.min(timeAt(ev.clientX), m.now));
      const now = performance.now();
      if (now - scrubbing.last > 100 && window.CtrlscopePast) {
        scrubbing.last = now;
        window.CtrlscopePast.scrub(cursor);
      }
      schedule();
      return;
    }
    if (dragging && Math.abs(ev.clientX - dragging.x) > 3) dragging.moved = true;
    if (dragging && dragging.moved) {
      const dt = ((ev.clientX - dragging.x) / (r.width - LEFT)) * (dragging.t1 - dragging.t0);
      view.t0 = Math.max(0, dragging.t0 - dt);
      view.t1 = view.t0 + (dragging.t1 - dragging.t0);
      view.follow = false;
      followButton();
    }
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    hover = { x };
    const t = view.t0 + ((x - LEFT) / (r.width - LEFT)) * (view.t1 - view.t0);
    let text = `t=${window.CtrlscopeTime.format(t)}`;
    const span = spanAt(ev);
    if (span) {
      const [start, end, , k, worker, err] = span;
      text += ` · sync of ${m.keys[k] || "?"} (worker ${worker}${err ? ", error" : ""}) ` +
        `${window.CtrlscopeTime.format(start)}–${window.CtrlscopeTime.format(end)}: click for its moment and why?`;
    }
    const mk = !span && markAt(ev);
    if (mk) text += ` · ${markText(mk)}: click for its moment and why?`;
    for (const owner of laneOrder()) {
      const l = m.lanes.get(owner);
      if (l.own && l.top !== undefined && y >= l.top && y <= l.top + l.height && y >= AXIS) {
        if (!mk) text += ` · ${m.owners[owner]}: ${ownAt(owner, t)}`;
        continue;
      }
      if (l.top !== undefined && y >= l.top && y <= l.top + l.height && y >= AXIS && l.grid) {
        const c = Math.min(l.grid.length - 1, Math.max(0, Math.floor(x - LEFT)));
        const parts = ORDER.map((n) => [n, l.grid[c][m.states.indexOf(n)]]).filter(([, v]) => v > 0).map(([n, v]) => `${n} ${v}`);
        text += ` · ${m.owners[owner] || "orphans"}: ${parts.join(", ") || "no pods"}`;
      }
    }
    const onLabel = !dragging && laneLabel(ev);
    canvas.style.cursor = onLabel ? "pointer" : "";
    if (onLabel) text = onLabel.onMark ? `${onLabel.lane.owner}: click to fold or unfold this lane` : `${onLabel.lane.owner}: click to focus the page on it`;
    tip.hidden = false;
    tip.textContent = text;
    const box = document.getElementById("timeline-panel").getBoundingClientRect();
    tip.style.left = Math.max(0, Math.min(ev.clientX - box.left + 12, box.width - tip.offsetWidth - 6)) + "px";
    tip.style.top = ev.clientY - box.top + 12 + "px";
    schedule();
  });
  canvas.addEventListener("mouseleave", () => { hover = null; tip.hidden = true; schedule(); });

  function laneLabel(ev) {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    if (y < AXIS) return null;
    const lane = lanes.placed.find((p) => y >= p.top && y <= p.top + 16 && x <= p.labelRight);
    return lane ? { lane, onMark: x <= LEFT + 14 } : null;
  }

  function toggleFold(owner) {
    if (lanes.toggled.has(owner)) lanes.toggled.delete(owner); else lanes.toggled.add(owner);
    schedule();
  }

  function foldButton() {
    const b = document.getElementById("tl-lanes");
    const order = laneOrder();
    const allFolded = order.length > 0 && order.every((o) => folded(o, order.length));
    b.setAttribute("aria-pressed", String(allFolded));
    b.textContent = allFolded ? "unfold lanes" : "fold lanes";
  }
  document.getElementById("tl-lanes").addEventListener("click", () => {
    const order = laneOrder();
    const allFolded = order.length > 0 && order.every((o) => folded(o, order.length));
    lanes.foldAll = !allFolded;
    lanes.toggled.clear();
    schedule();
  });

  // The span under the pointer (with the seq of its start: spans of an older server have none).
  function spanAt(ev) {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    let best = null, bestDistance = 3; // px: a thin span is hard to hit exactly
    for (const [x0, x1, top, h, span] of spanHits) {
      if (!span[6] || y < top - 1 || y > top + h + 1) continue;
      const distance = x < x0 ? x0 - x : x > x1 ? x - x1 : 0;
      if (distance < bestDistance) { best = span; bestDistance = distance; }
    }
    return best;
  }

  function followButton() {
    const b = document.getElementById("tl-follow");
    if (b) b.setAttribute("aria-pressed", String(view.follow));
  }
  document.getElementById("tl-follow").addEventListener("click", () => { view.follow = !view.follow; followButton(); schedule(); });
  document.getElementById("tl-all").addEventListener("click", () => { view.t0 = 0; view.t1 = Math.max(m.now, 1); view.follow = true; followButton(); schedule(); });
  // The clock moves even when no pod changes: redraw twice a second for the "now" line, if it
  // moved (paused, the page has nothing to do: issue 19, main thread <= 5 % busy).
  setInterval(() => { const st = window.ctrlscope && window.ctrlscope.status; if (!st || st.t !== drawnClock) schedule(); }, 500);

  function setCursor(t) {
    cursor = t;
    schedule();
  }

  // Focus (focus.js): only this owner's lane ("Kind/name"), or every lane (null).
  function only(owner) {
    lanes.only = owner === null ? null : [].concat(owner);
    scroller.scrollTop = 0;
    lanes.scrollTop = 0;
    schedule();
  }

  // Each child owner's parent ("ReplicaSet/web-x" -> "Deployment/web"): the owners panel's.
  function setParents(parents) {
    lanes.parents = new Map(Object.entries(parents || {}));
    schedule();
  }

  window.CtrlscopeTimeline = {
    only,
    setParents,
    // For tests: the lanes drawn in the last draw (the rest are scrolled out of view) and
    // the height the timeline takes.
    drawn: () => lanes.placed.map((p) => ({ owner: p.owner, top: p.top, height: p.bottom - p.top })),
    reset,
    apply,
    setCursor,
    cursor: () => cursor,
    lanes: () => laneOrder().map((o) => ({ owner: m.owners[o], own: Boolean(m.lanes.get(o).own), max: m.lanes.get(o).max, now: m.lanes.get(o).count.reduce((a, b) => a + b, 0) })),
    // An owner of owners' marks: [t, owner name, kind, label, detail, seq] (tests), and where
    // the last draw put them (CSS px in the canvas).
    marks: () => m.marks.map(([t, o, kind, label, detail, seq]) => [t, m.owners[o], kind, label, detail, seq]),
    markBoxes: () => markHits.map(([x0, x1, top, h, mk]) => ({ x0, x1, top, height: h, kind: mk[2], label: mk[3], seq: mk[5] })),
    ownAt: (owner, t) => { const i = m.owners.indexOf(owner); return i < 0 || !m.lanes.has(i) ? null : ownAt(i, t); },
    spans: () => m.spans.length,
    drawMs: () => lastDrawMs,
    axisLabels: () => axisLabels.slice(),
    // The spans drawn, where (CSS px in the canvas) and which sync.start each links to (tests).
    spanBoxes: () => spanHits.map(([x0, x1, top, h, s]) => ({ x0, x1, top, height: h, start: s[0], seq: s[6] })),
  };
})();

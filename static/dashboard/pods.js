// Pods as tiles on a canvas, grouped by owner, coloured by state (with a shape too, so colour is
// not the only signal). Fed by the websocket's canvas data: the pod table on (re)connect, then
// state transitions. Stays fast at 10,000 pods: one canvas, no DOM per pod.
"use strict";

(function () {
  const canvas = document.getElementById("pods-canvas");
  if (!canvas) return;
  const ctx = canvas.getContext("2d");
  const tip = document.getElementById("pods-tip");

  // Display order of states in legends and counts; colours match the CSS legend.
  const STYLE = {
    Pending: { fill: "#f4b740", label: "pending (not scheduled)" },
    Scheduled: { fill: "#f4b740", dot: "#7a5200", label: "scheduled, starting" },
    Running: { fill: "#d9f2dc", stroke: "#2e9d4a", label: "running, not ready" },
    Ready: { fill: "#2e9d4a", label: "ready" },
    NotReady: { fill: "#fde2c4", stroke: "#d9731a", label: "not ready (was ready)" },
    CrashLoopBackOff: { fill: "#d93a3a", pulse: true, label: "CrashLoopBackOff" },
    Terminating: { fill: "#dfe3e8", stripes: "#8a94a0", label: "terminating" },
    Failed: { fill: "#8f1d1d", cross: "#ffffff", label: "failed" },
    Succeeded: { fill: "#9aa3ad", label: "succeeded" },
    Unknown: { fill: "#7e57c2", label: "unknown (node lost)" },
  };

  const model = {
    states: ["Pending", "Scheduled", "Running", "Ready", "NotReady", "CrashLoopBackOff", "Terminating", "Failed", "Succeeded", "Unknown", "Deleted"],
    owners: [""],
    nodes: [""],
    names: new Map(), // id -> "ns/name"
    pods: new Map(), // id -> [owner, state, node]
    selected: new Set(), // ids
  };
  let layout = { groups: [], size: 16, gap: 2 };
  let scheduled = false;
  let pulseOn = false;
  let drag = null;

  function reset(data) {
    if (data.states) model.states = data.states;
    model.owners = data.owners || [""];
    model.nodes = data.nodeNames || [""];
    model.names = new Map((data.names || []).map(([id, key]) => [id, key]));
    model.pods = new Map((data.pods || []).map(([id, owner, state, node]) => [id, [owner, state, node]]));
    for (const id of [...model.selected]) if (!model.pods.has(id)) model.selected.delete(id);
    schedule();
  }

  function apply(delta) {
    if (delta.owners) model.owners = delta.owners;
    if (delta.nodeNames) model.nodes = delta.nodeNames;
    for (const [id, key] of delta.names || []) model.names.set(id, key);
    const deleted = model.states.indexOf("Deleted");
    for (const [, id, owner, state] of delta.tr || []) {
      if (state === deleted) {
        model.pods.delete(id);
        model.selected.delete(id);
      } else {
        const entry = model.pods.get(id);
        if (entry) { entry[0] = owner; entry[1] = state; } else model.pods.set(id, [owner, state, 0]);
      }
    }
    for (const [id, node] of delta.nodes || []) {
      const entry = model.pods.get(id);
      if (entry) entry[2] = node;
    }
    schedule();
  }

  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { scheduled = false; draw(); });
  }

  function computeLayout(width) {
    const byOwner = new Map();
    for (const [id, [owner]] of model.pods) {
      if (!byOwner.has(owner)) byOwner.set(owner, []);
      byOwner.get(owner).push(id);
    }
    const n = model.pods.size;
    const size = n <= 150 ? 16 : n <= 600 ? 11 : n <= 2500 ? 7 : 4;
    const gap = size >= 10 ? 3 : 1;
    const header = 18;
    const order = [...byOwner.keys()].sort((a, b) => (a === 0) - (b === 0) || model.owners[a].localeCompare(model.owners[b]));
    const cols = Math.max(1, Math.floor((width - 4) / (size + gap)));
    let y = 2;
    const groups = [];
    for (const owner of order) {
      const ids = byOwner.get(owner).sort((a, b) => a - b);
      const rows = Math.ceil(ids.length / cols);
      groups.push({ owner, ids, top: y + header, cols, header: y });
      y += header + rows * (size + gap) + 8;
    }
    return { groups, size, gap, height: Math.max(y, 40) };
  }

  // The width comes from a ResizeObserver: reading it while drawing would force a layout.
  let width = canvas.parentElement.clientWidth || 600;
  new ResizeObserver((entries) => { width = entries[0].contentRect.width || width; schedule(); }).observe(canvas.parentElement);

  let drawnUpTo = -1; // the highest pod id drawn so far (benchmarks: "the new tile is on screen") ...
  let drawnAt = 0; // ... and when (performance.now() of that draw)

  let lastDrawMs = 0; // how long the last draw took (benchmarks)

  function draw() {
    const started = performance.now();
    layout = computeLayout(width);
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(layout.height * dpr)) {
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(layout.height * dpr);
      canvas.style.width = width + "px";
      canvas.style.height = layout.height + "px";
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, layout.height);
    const { size, gap } = layout;
    let pulsing = false;
    const counts = new Array(model.states.length).fill(0);
    for (const g of layout.groups) {
      const groupCounts = new Array(model.states.length).fill(0);
      g.ids.forEach((id, i) => {
        const [, state] = model.pods.get(id);
        groupCounts[state] += 1;
        counts[state] += 1;
        const x = 2 + (i % g.cols) * (size + gap);
        const y = g.top + Math.floor(i / g.cols) * (size + gap);
        const style = STYLE[model.states[state]] || STYLE.Unknown;
        if (style.pulse) pulsing = true;
        tile(x, y, size, style);
        if (model.selected.has(id)) {
          ctx.strokeStyle = "#1f5fd6";
          ctx.lineWidth = size >= 10 ? 2 : 1;
          ctx.strokeRect(x - 1, y - 1, size + 2, size + 2);
        }
      });
      ctx.fillStyle = "#1d2330";
      ctx.font = "600 12px system-ui, sans-serif";
      const name = model.owners[g.owner] || "no controller (orphans)";
      const ready = groupCounts[model.states.indexOf("Ready")];
      ctx.fillText(`${name}`, 2, g.header + 12);
      const w = ctx.measureText(name).width;
      ctx.fillStyle = "#5b6475";
      ctx.font = "12px system-ui, sans-serif";
      ctx.fillText(`  ${g.ids.length} pod${g.ids.length === 1 ? "" : "s"}, ${ready} ready`, 2 + w, g.header + 12);
    }
    if (!layout.groups.length) {
      ctx.fillStyle = "#5b6475";
      ctx.font = "13px system-ui, sans-serif";
      ctx.fillText("No pods.", 4, 20);
    }
    if (drag && drag.moved) {
      ctx.strokeStyle = "#1f5fd6";
      ctx.setLineDash([4, 3]);
      ctx.strokeRect(drag.x0, drag.y0, drag.x1 - drag.x0, drag.y1 - drag.y0);
      ctx.setLineDash([]);
    }
    legend(counts);
    for (const id of model.pods.keys()) if (id > drawnUpTo) { drawnUpTo = id; drawnAt = started; }
    document.getElementById("pods-count").textContent = `${model.pods.size.toLocaleString("en-US")} pods`;
    const bar = document.getElementById("selection-bar");
    bar.hidden = model.selected.size === 0;
    document.getElementById("selection-count").textContent = `${model.selected.size} selected`;
    if (pulsing) setTimeout(() => { pulseOn = !pulseOn; schedule(); }, 600);
    lastDrawMs = performance.now() - started;
  }

  function tile(x, y, s, style) {
    ctx.fillStyle = style.fill;
    if (style.pulse && pulseOn) ctx.fillStyle = "#f08a8a";
    ctx.fillRect(x, y, s, s);
    if (style.stroke && s >= 4) {
      ctx.strokeStyle = style.stroke;
      ctx.lineWidth = s >= 10 ? 2 : 1;
      ctx.strokeRect(x + 0.5 * ctx.lineWidth, y + 0.5 * ctx.lineWidth, s - ctx.lineWidth, s - ctx.lineWidth);
    }
    if (style.stripes && s >= 6) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(x, y, s, s);
      ctx.clip();
      ctx.strokeStyle = style.stripes;
      ctx.lineWidth = 1.5;
      for (let d = -s; d < s; d += 4) { ctx.beginPath(); ctx.moveTo(x + d, y + s); ctx.lineTo(x + d + s, y); ctx.stroke(); }
      ctx.restore();
    }
    if (style.cross && s >= 8) {
      ctx.strokeStyle = style.cross;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.moveTo(x + 3, y + 3); ctx.lineTo(x + s - 3, y + s - 3);
      ctx.moveTo(x + s - 3, y + 3); ctx.lineTo(x + 3, y + s - 3);
      ctx.stroke();
    }
    if (style.dot && s >= 8) {
      ctx.fillStyle = style.dot;
      ctx.beginPath();
      ctx.arc(x + s / 2, y + s / 2, s / 6, 0, Math.PI * 2);
      ctx.fill();
    }
  }

  let lastLegend = "";
  function legend(counts) {
    const parts = [];
    for (const [name, style] of Object.entries(STYLE)) {
      const n = counts[model.states.indexOf(name)] || 0;
      parts.push(`<span class="lg" title="${style.label}"><i class="sw sw-${name}"></i>${name} <b>${n}</b></span>`);
    }
    const html = parts.join("");
    if (html !== lastLegend) { document.getElementById("pods-legend").innerHTML = html; lastLegend = html; }
  }

  function hit(x, y) {
    const { size, gap } = layout;
    for (const g of layout.groups) {
      if (y < g.top) continue;
      const col = Math.floor((x - 2) / (size + gap));
      const row = Math.floor((y - g.top) / (size + gap));
      if (col < 0 || col >= g.cols) return null;
      const i = row * g.cols + col;
      if (i < g.ids.length) {
        const tx = 2 + col * (size + gap), ty = g.top + row * (size + gap);
        if (x <= tx + size + 1 && y <= ty + size + 1) {
          if (y < g.top + Math.ceil(g.ids.length / g.cols) * (size + gap)) return g.ids[i];
        }
      }
    }
    return null;
  }

  function pos(ev) {
    const r = canvas.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  }

  canvas.addEventListener("mousemove", (ev) => {
    const [x, y] = pos(ev);
    if (drag) {
      drag.x1 = x; drag.y1 = y;
      drag.moved = drag.moved || Math.abs(x - drag.x0) + Math.abs(y - drag.y0) > 4;
      schedule();
      return;
    }
    const id = hit(x, y);
    if (id === null) { tip.hidden = true; canvas.style.cursor = "default"; return; }
    const [owner, state, node] = model.pods.get(id);
    tip.hidden = false;
    tip.textContent = `${model.names.get(id) || "pod " + id} · ${model.states[state]}${model.nodes[node] ? " · " + model.nodes[node] : ""}${model.owners[owner] ? " · " + model.owners[owner] : ""}`;
    const box = canvas.parentElement.getBoundingClientRect();
    tip.style.left = Math.min(ev.clientX - box.left + 12, box.width - 240) + "px";
    tip.style.top = ev.clientY - box.top + canvas.parentElement.offsetTop + 14 - canvas.parentElement.scrollTop + "px";
    canvas.style.cursor = "pointer";
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });

  canvas.addEventListener("mousedown", (ev) => {
    if (!ev.shiftKey) return;
    const [x, y] = pos(ev);
    drag = { x0: x, y0: y, x1: x, y1: y, moved: false };
    ev.preventDefault();
  });

  window.addEventListener("mouseup", (ev) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    if (d.moved) {
      const [x0, x1] = [Math.min(d.x0, d.x1), Math.max(d.x0, d.x1)];
      const [y0, y1] = [Math.min(d.y0, d.y1), Math.max(d.y0, d.y1)];
      const { size, gap } = layout;
      for (const g of layout.groups) {
        g.ids.forEach((id, i) => {
          const tx = 2 + (i % g.cols) * (size + gap), ty = g.top + Math.floor(i / g.cols) * (size + gap);
          if (tx + size >= x0 && tx <= x1 && ty + size >= y0 && ty <= y1) model.selected.add(id);
        });
      }
      schedule();
    } else {
      toggle(d.x0, d.y0);
    }
  });

  canvas.addEventListener("click", (ev) => {
    if (ev.shiftKey) return; // handled by mousedown/up
    const [x, y] = pos(ev);
    const id = hit(x, y);
    if (id === null) return;
    const key = model.names.get(id);
    if (key && window.ctrlscope) {
      const [ns, name] = key.split("/");
      window.ctrlscope.openPod(ns, name);
    }
  });

  function toggle(x, y) {
    const id = hit(x, y);
    if (id === null) return;
    if (model.selected.has(id)) model.selected.delete(id); else model.selected.add(id);
    schedule();
  }

  window.CtrlscopePods = {
    reset,
    apply,
    selected: () => [...model.selected].map((id) => model.names.get(id)).filter(Boolean),
    clearSelection: () => { model.selected.clear(); schedule(); },
    select: (names) => { for (const [id, key] of model.names) if (names.includes(key) && model.pods.has(id)) model.selected.add(id); schedule(); },
    // The newest pod and whether its tile has been drawn (cheap: for the UI benchmark).
    drawMs: () => lastDrawMs,
    newest: () => {
      let id = -1;
      for (const k of model.pods.keys()) if (k > id) id = k;
      return id < 0 ? null : { id, key: model.names.get(id), drawn: id <= drawnUpTo, drawnAt: id <= drawnUpTo ? drawnAt : null };
    },
    // For tests: where a pod's tile is, and what state it shows.
    tileOf: (key) => {
      for (const g of layout.groups) {
        const i = g.ids.findIndex((id) => model.names.get(id) === key);
        if (i >= 0) {
          const { size, gap } = layout;
          return { x: 2 + (i % g.cols) * (size + gap) + size / 2, y: g.top + Math.floor(i / g.cols) * (size + gap) + size / 2, state: model.states[model.pods.get(g.ids[i])[1]] };
        }
      }
      return null;
    },
    states: () => {
      const out = {};
      for (const [id, [, state]] of model.pods) out[model.names.get(id)] = model.states[state];
      return out;
    },
  };
})();

// Pods as tiles on a canvas, grouped by owner, coloured by state (with a shape too, so colour is
// not the only signal). Fed by the websocket's canvas data: the pod table on (re)connect, then
// state transitions. Stays fast at 10,000 pods: one canvas, no DOM per pod.
"use strict";

// Pod transitions arrive packed (dashboard/host/frames.py, pack_transitions): four integers each,
// the time in milliseconds and the pod id as differences from the transition before, then owner
// and state. `each` calls fn([t in seconds, id, owner, state]) for each, in order.
window.CtrlscopeTransitions = {
  each(packed, fn) {
    let t = 0, id = 0;
    for (let i = 0; i + 3 < (packed || []).length; i += 4) {
      t += packed[i];
      id += packed[i + 1];
      fn([t / 1000, id, packed[i + 2], packed[i + 3]]);
    }
  },
};

(function () {
  const canvas = document.getElementById("pods-canvas");
  if (!canvas) return;
  const ctx = canvas.getContext("2d");
  const tip = document.getElementById("pods-tip");

  // Display order of states in legends and counts; colours match the CSS legend.
  const STYLE = {
    Pending: { fill: "#f4b740", label: "pending (not scheduled)" },
    Scheduled: { fill: "#f4b740", dot: "#7a5200", label: "scheduled, starting (containers creating)" },
    // A container waiting for an image it cannot pull, as kubectl's STATUS column says it.
    // (rare: listed in the legend only while some pod is in them, so the legend keeps its lines)
    ErrImagePull: { fill: "#c2185b", dot: "#ffffff", rare: true, label: "ErrImagePull: the image pull failed" },
    ImagePullBackOff: { fill: "#f5c6dc", stroke: "#c2185b", rare: true, label: "ImagePullBackOff: backing off before the next pull" },
    // Phase Running, Ready condition False, never ready yet (starting, or a readiness probe that
    // never passes): kubectl shows STATUS Running, READY 0/1.
    Running: { fill: "#d9f2dc", stroke: "#2e9d4a", text: "Running, not ready", label: "running, not ready (kubectl: Running, READY 0/1): starting, or its readiness probe has not passed" },
    Ready: { fill: "#2e9d4a", label: "ready" },
    NotReady: { fill: "#fde2c4", stroke: "#d9731a", label: "running, not ready after being ready (kubectl: Running, READY 0/1)" },
    CrashLoopBackOff: { fill: "#d93a3a", pulse: true, label: "CrashLoopBackOff" },
    Terminating: { fill: "#dfe3e8", stripes: "#8a94a0", label: "terminating" },
    Failed: { fill: "#8f1d1d", cross: "#ffffff", label: "failed" },
    Succeeded: { fill: "#9aa3ad", label: "succeeded" },
    Unknown: { fill: "#7e57c2", label: "unknown (node lost)" },
  };

  // The page's name for an owner, as the server writes it (dashboard/host/panels.py
  // owner_label): "Kind/name" in the default namespace, "Kind/namespace/name" in any other.
  function ownerLabel(kind, namespace, name) {
    return !namespace || namespace === "default" ? `${kind}/${name}` : `${kind}/${namespace}/${name}`;
  }

  const model = {
    states: ["Pending", "Scheduled", "ErrImagePull", "ImagePullBackOff", "Running", "Ready", "NotReady", "CrashLoopBackOff", "Terminating", "Failed", "Succeeded", "Unknown", "Deleted"],
    owners: [""],
    nodes: [""],
    names: new Map(), // id -> "ns/name"
    byKey: new Map(), // "ns/name" -> id
    pods: new Map(), // id -> [owner, state, node]
    selected: new Set(), // ids
    open: null, // "ns/name": the pod the Pod tab shows (live.js openPod), ringed on its tile
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
    model.byKey = new Map((data.names || []).map(([id, key]) => [key, id]));
    model.pods = new Map((data.pods || []).map(([id, owner, state, node]) => [id, [owner, state, node]]));
    for (const id of [...model.selected]) if (!model.pods.has(id)) model.selected.delete(id);
    schedule();
  }

  function apply(delta) {
    if (delta.owners) model.owners = delta.owners;
    if (delta.nodeNames) model.nodes = delta.nodeNames;
    for (const [id, key] of delta.names || []) { model.names.set(id, key); model.byKey.set(key, id); }
    const deleted = model.states.indexOf("Deleted");
    window.CtrlscopeTransitions.each(delta.tr, ([, id, owner, state]) => {
      if (state === deleted) {
        model.pods.delete(id);
        model.selected.delete(id);
      } else {
        const entry = model.pods.get(id);
        if (entry) { entry[0] = owner; entry[1] = state; } else model.pods.set(id, [owner, state, 0]);
      }
    });
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

  // What the tiles show (focus.js, search.js): one owner's pods, pods in some states, one
  // node's, or a search's result; null: everything. Checked in the pass the layout makes anyway.
  // owner and node are names (resolved to indexes per draw: an owner may have no pod yet).
  const filter = { owner: null, states: null, node: null, ids: null, label: "" };
  let scope = { owners: new Set(), node: -1 };

  function inScope(entry, id) {
    return (filter.owner === null || scope.owners.has(entry[0])) && (filter.node === null || entry[2] === scope.node)
      && (filter.ids === null || filter.ids.has(id));
  }

  // Tiles shrink as the count grows, to the largest size at which every group fits the box
  // (16 px for the demo, 2 px with a 1 px gap for 10,000 pods in 100 groups). A group is a
  // full-width band when it has many pods, else a block packed beside the others, under its
  // name: 100 owners of 100 pods are 100 small blocks, not 100 bands of one line each.
  const SIZES = [16, 11, 8, 6, 4, 3, 2];

  function pack(groups, width, size, aspect, labelled = true) {
    const gap = size >= 10 ? 3 : 1;
    const pitch = size + gap;
    const small = size < 8;
    // Without names (the last resort at 10,000 pods in 100 owners) blocks are set apart by
    // their background; hovering a tile names its owner.
    const header = !labelled ? 0 : small ? 12 : 18;
    const cols = Math.max(1, Math.floor((width - 4) / pitch));
    const minCols = labelled ? Math.max(1, Math.ceil((small ? 56 : 110) / pitch)) : 1;
    let x = 2, y = 2, shelf = 0;
    const out = [];
    for (const g of groups) {
      const n = g.ids.length;
      let gcols = cols;
      if (aspect) gcols = Math.min(cols, Math.max(minCols, n * pitch <= 200 ? n : Math.ceil(Math.sqrt(n * aspect))));
      const w = gcols * pitch, h = header + Math.ceil(n / gcols) * pitch + (!labelled ? 4 : small ? 3 : 8);
      if (x > 2 && x + w > width) { y += shelf; x = 2; shelf = 0; }
      out.push({ owner: g.owner, ids: g.ids, left: x, width: w, header: y, top: y + header, cols: gcols, rows: Math.ceil(n / gcols) });
      shelf = Math.max(shelf, h);
      x += gcols === cols ? width : w + (!labelled ? 4 : small ? 6 : 12);
    }
    return { groups: out, size, gap, height: Math.max(y + shelf, 40), small, labelled };
  }

  // From the largest tiles with names down to the smallest without: the first that fits.
  const CANDIDATES = [];
  for (const size of SIZES) {
    for (const aspect of [0, 1.6, 4, 0.6]) CANDIDATES.push([size, aspect, true]);
    if (size <= 3) for (const aspect of [0, 1.6, 4]) CANDIDATES.push([size, aspect, false]);
  }

  function computeLayout(width, room) {
    // An owner filter is one label or several (an owner of owners: a Deployment's ReplicaSets).
    const wanted = filter.owner === null ? [] : [].concat(filter.owner);
    scope = { owners: new Set(wanted.map((o) => model.owners.indexOf(o)).filter((i) => i >= 0)), node: filter.node === null ? -1 : model.nodes.indexOf(filter.node) };
    const byOwner = new Map();
    let shown = 0;
    const counts = new Array(model.states.length).fill(0); // the legend's: in scope, any state
    for (const [id, entry] of model.pods) {
      if (!inScope(entry, id)) continue;
      counts[entry[1]] += 1;
      if (filter.states !== null && !filter.states.has(entry[1])) continue;
      shown += 1;
      let g = byOwner.get(entry[0]);
      if (!g) { g = { owner: entry[0], ids: [] }; byOwner.set(entry[0], g); }
      g.ids.push(id);
    }
    const groups = [...byOwner.values()].sort((a, b) => (a.owner === 0) - (b.owner === 0) || model.owners[a.owner].localeCompare(model.owners[b.owner]));
    for (const g of groups) g.ids.sort((a, b) => a - b);
    let best = null; // nothing fits: the lowest of the smallest (the box scrolls)
    for (const [size, aspect, labelled] of CANDIDATES) {
      const l = pack(groups, width, size, aspect, labelled);
      if (l.height <= room) return Object.assign(l, { shown, counts });
      if (size === SIZES[SIZES.length - 1] && !labelled && (!best || l.height < best.height)) best = l;
    }
    return Object.assign(best, { shown, counts });
  }

  // The width and the room (the box's height) come from a ResizeObserver: reading them while
  // drawing would force a layout.
  let width = canvas.parentElement.clientWidth || 600;
  let room = 340;
  new ResizeObserver((entries) => {
    width = entries[0].contentRect.width || width;
    room = entries[0].contentRect.height || room;
    schedule();
  }).observe(canvas.parentElement);

  let drawnUpTo = -1; // the highest pod id drawn so far (benchmarks: "the new tile is on screen") ...
  let drawnAt = 0; // ... and when (performance.now() of that draw)

  let lastDrawMs = 0; // how long the last draw took (benchmarks)

  // What the canvas shows, to redraw only what changed: the canvas' geometry, the open pod's
  // ring, the pulse's phase, and per group its place and its tiles (ids, states, selection).
  // A frame that changes one pod redraws that pod's group (its name and counts too), not the
  // 10,000 tiles of every group (issue 31: a step drew every tile of the page, twice).
  let shown = null;
  let shownLabels = []; // where each group's name ends, as last drawn

  function snapshot() {
    const openId = model.open === null ? undefined : model.byKey.get(model.open);
    const pitch = layout.size + layout.gap;
    let ring = null;
    const groups = layout.groups.map((g) => {
      const states = new Uint8Array(g.ids.length);
      let sel = "", pulse = false;
      g.ids.forEach((id, i) => {
        const state = model.pods.get(id)[1];
        states[i] = state;
        if ((STYLE[model.states[state]] || STYLE.Unknown).pulse) pulse = true;
        if (model.selected.size && model.selected.has(id)) sel += i + ",";
        if (id === openId) ring = [g.left + (i % g.cols) * pitch, g.top + Math.floor(i / g.cols) * pitch];
      });
      const place = [g.owner, model.owners[g.owner], g.left, g.top, g.header, g.cols, g.rows, g.width].join(" ");
      return { place, box: groupBox(g), ids: g.ids.slice(), states, sel, pulse };
    });
    return {
      frame: [canvas.width, canvas.height, layout.size, layout.gap, layout.labelled, groups.length].join(" "),
      ring: ring && ring.join(" "), ringAt: ring, drag: Boolean(drag && drag.moved), pulseOn, groups,
    };
  }

  // What to redraw since `before` was drawn: the indexes of the groups whose tiles changed and
  // the boxes to clear first (a group that moved or grew: where it was and where it is; the
  // others keep their boxes, which overlap neither), or null: the whole canvas.
  function changed(before, now) {
    if (!before || before.frame !== now.frame || before.ring !== now.ring || before.drag || now.drag || !now.groups.length) return null;
    const groups = [], boxes = [];
    now.groups.forEach((g, i) => {
      const b = before.groups[i];
      if (b.place !== g.place) {
        groups.push(i);
        boxes.push(b.box, g.box);
      } else if (b.sel !== g.sel || (g.pulse && before.pulseOn !== now.pulseOn) || !sameTiles(b, g)) {
        groups.push(i);
        boxes.push(g.box);
      }
    });
    return groups.length === now.groups.length ? null : { groups, boxes };
  }

  function sameTiles(a, b) {
    if (a.ids.length !== b.ids.length) return false;
    for (let i = 0; i < a.ids.length; i++) if (a.ids[i] !== b.ids[i] || a.states[i] !== b.states[i]) return false;
    return true;
  }

  // The box a group draws in: its name above, its tiles, a selected tile's outline (2 px out).
  function groupBox(g) {
    const pitch = layout.size + layout.gap;
    const top = layout.labelled ? g.header : g.top - 2;
    const right = g.left + Math.max(g.cols * pitch + 2, layout.labelled ? Math.max(g.width, 40) : 0);
    return [g.left - 2, top, right - (g.left - 2), g.top + g.rows * pitch + 2 - top];
  }

  function draw() {
    const started = performance.now();
    layout = computeLayout(width, room);
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(layout.height * dpr)) {
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(layout.height * dpr);
      canvas.style.width = width + "px";
      canvas.style.height = layout.height + "px";
      shown = null; // a resized canvas is blank
    }
    const now = snapshot();
    const redraw = changed(shown, now);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const boxes = redraw === null ? null : redraw.boxes;
    if (boxes === null) ctx.clearRect(0, 0, width, layout.height);
    else for (const b of boxes) ctx.clearRect(...b);
    const { size, gap, small } = layout;
    const pitch = size + gap;
    let pulsing = false;
    const readyState = model.states.indexOf("Ready");
    layout.groups.forEach((g, gi) => {
      if (now.groups[gi].pulse) pulsing = true;
      if (redraw !== null && !redraw.groups.includes(gi)) return;
      if (!layout.labelled) {
        ctx.fillStyle = "#e4e8ef";
        ctx.fillRect(g.left - 1, g.top - 1, g.cols * pitch + 1, g.rows * pitch + 1);
      }
      let ready = 0;
      g.ids.forEach((id, i) => {
        const state = model.pods.get(id)[1];
        if (state === readyState) ready += 1;
        const x = g.left + (i % g.cols) * pitch;
        const y = g.top + Math.floor(i / g.cols) * pitch;
        const style = STYLE[model.states[state]] || STYLE.Unknown;
        tile(x, y, size, style);
        if (model.selected.has(id)) {
          ctx.strokeStyle = "#1f5fd6";
          ctx.lineWidth = size >= 10 ? 2 : 1;
          ctx.strokeRect(x - 1, y - 1, size + 2, size + 2);
        }
      });
      // The group's name (a click on it focuses the page on that owner), cut to its block.
      if (!layout.labelled) return;
      // The whole name and counts when they fit the block, else the name without its kind and
      // the count (hovering a tile tells the rest).
      const full = model.owners[g.owner] || "no controller (orphans)";
      const room = Math.max(g.width, 40);
      const bold = small ? "600 10px system-ui, sans-serif" : "600 12px system-ui, sans-serif";
      const plain = small ? "10px system-ui, sans-serif" : "12px system-ui, sans-serif";
      let name = full, detail = `  ${g.ids.length} pod${g.ids.length === 1 ? "" : "s"}, ${ready} ready`;
      ctx.font = bold;
      const fullWidth = ctx.measureText(full).width;
      ctx.font = plain;
      if (small || fullWidth + ctx.measureText(detail).width > room) {
        name = g.owner ? full.slice(full.indexOf("/") + 1) : full; // (keeps a namespace: "team-a/web")
        detail = ` ${g.ids.length}`;
      }
      ctx.save();
      ctx.beginPath();
      ctx.rect(g.left, g.header, room, small ? 12 : 18);
      ctx.clip();
      ctx.fillStyle = "#1d2330";
      ctx.font = bold;
      ctx.fillText(name, g.left, g.header + (small ? 9 : 12));
      const w = ctx.measureText(name).width;
      g.labelRight = g.left + w;
      ctx.fillStyle = "#5b6475";
      ctx.font = plain;
      ctx.fillText(detail, g.left + w, g.header + (small ? 9 : 12));
      ctx.restore();
    });
    // A group not redrawn keeps where its name ends (a click there focuses its owner).
    if (redraw !== null) layout.groups.forEach((g, gi) => { if (!redraw.groups.includes(gi)) g.labelRight = shownLabels[gi]; });
    shownLabels = layout.groups.map((g) => g.labelRight);
    const counts = layout.counts;
    if (!layout.groups.length) {
      ctx.fillStyle = "#5b6475";
      ctx.font = "13px system-ui, sans-serif";
      ctx.fillText("No pods.", 4, 20);
    }
    if (now.ringAt && boxes === null) ringOpen(now.ringAt[0], now.ringAt[1], size);
    else if (now.ringAt && boxes.length) {
      // The ring is where it was: drawn again over the boxes redrawn only (twice over the
      // rest would darken its edges).
      ctx.save();
      ctx.beginPath();
      for (const b of boxes) ctx.rect(...b);
      ctx.clip();
      ringOpen(now.ringAt[0], now.ringAt[1], size);
      ctx.restore();
    }
    if (drag && drag.moved) {
      ctx.strokeStyle = "#1f5fd6";
      ctx.setLineDash([4, 3]);
      ctx.strokeRect(drag.x0, drag.y0, drag.x1 - drag.x0, drag.y1 - drag.y0);
      ctx.setLineDash([]);
    }
    shown = now;
    legend(counts);
    for (const id of model.pods.keys()) if (id > drawnUpTo) { drawnUpTo = id; drawnAt = started; }
    const total = model.pods.size.toLocaleString("en-US");
    const countText = layout.shown === model.pods.size ? `${total} pods` : `${layout.shown.toLocaleString("en-US")} of ${total} pods`;
    const countEl = document.getElementById("pods-count");
    if (countEl.textContent !== countText) countEl.textContent = countText;
    const bar = document.getElementById("selection-bar");
    if (bar.hidden !== (model.selected.size === 0)) bar.hidden = model.selected.size === 0;
    const selection = document.getElementById("selection-count");
    const selectionText = `${model.selected.size} selected`;
    if (selection.textContent !== selectionText) selection.textContent = selectionText;
    if (pulsing) setTimeout(() => { pulseOn = !pulseOn; schedule(); }, 600);
    lastDrawMs = performance.now() - started;
  }

  // The open pod's tile, ringed on top of its neighbours: a dark ring with a white one inside, at
  // least 5 px out, so that a 2 px tile among 10,000 can be found at a glance. A tile at the edge
  // of the canvas gets its ring moved in (the tile stays inside it) rather than cut in half.
  function ringOpen(x, y, s) {
    const r = Math.max(s * 0.75, 5), edge = r + 3;
    const cx = Math.min(Math.max(x + s / 2, edge), width - edge);
    const cy = Math.min(Math.max(y + s / 2, edge), layout.height - edge);
    ctx.beginPath();
    ctx.arc(cx, cy, r + 1.5, 0, 2 * Math.PI);
    ctx.lineWidth = 2;
    ctx.strokeStyle = "#1d2330";
    ctx.stroke();
    ctx.beginPath();
    ctx.arc(cx, cy, r, 0, 2 * Math.PI);
    ctx.lineWidth = 1;
    ctx.strokeStyle = "#ffffff";
    ctx.stroke();
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

  // The legend counts each state (of the pods in scope: the focused owner's, the node's, the
  // search's) and is a filter: a click on a state shows only pods in it (several: any of them).
  let lastLegend = "";
  function legend(counts) {
    const parts = [];
    for (const [name, style] of Object.entries(STYLE)) {
      const index = model.states.indexOf(name);
      const n = counts[index] || 0;
      const on = filter.states !== null && filter.states.has(index);
      parts.push(`<span class="lg filter" role="button" tabindex="0" data-state="${name}" aria-pressed="${on}"${n || on ? "" : " data-zero"}${style.rare ? " data-rare" : ""} title="${style.label} — click: show only pods in this state (click again to show all)"><i class="sw sw-${name}"></i>${style.text || name} <b>${n}</b></span>`);
    }
    const html = parts.join("");
    const el = document.getElementById("pods-legend");
    if (html !== lastLegend) { el.innerHTML = html; lastLegend = html; }
    el.classList.toggle("filtering", filter.states !== null);
    const words = [];
    if (filter.states !== null) words.push([...filter.states].map((i) => model.states[i]).join(" or "));
    if (filter.node !== null) words.push(`on ${filter.node}`);
    if (filter.ids !== null) words.push(filter.label || "search result");
    const text = words.length ? `showing ${words.join(", ")}` : "";
    const box = document.getElementById("pods-filter");
    if (box.dataset.text !== text) {
      box.dataset.text = text;
      box.textContent = text;
      if (text) {
        const clear = document.createElement("button");
        clear.className = "small quiet";
        clear.id = "pods-filter-clear";
        clear.textContent = "✕ show all";
        clear.title = "Clear the state, node and search filters of the tiles";
        clear.addEventListener("click", () => clearFilters());
        box.append(" ", clear);
      }
    }
  }

  function toggleState(name) {
    const index = model.states.indexOf(name);
    if (index < 0) return;
    const states = new Set(filter.states || []);
    if (states.has(index)) states.delete(index); else states.add(index);
    filter.states = states.size ? states : null;
    schedule();
  }

  function clearFilters() {
    filter.states = null;
    filter.node = null;
    filter.ids = null;
    filter.label = "";
    schedule();
  }

  document.getElementById("pods-legend").addEventListener("click", (ev) => {
    const item = ev.target.closest("[data-state]");
    if (item) toggleState(item.dataset.state);
  });
  document.getElementById("pods-legend").addEventListener("keydown", (ev) => {
    const item = ev.target.closest("[data-state]");
    if (item && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); ev.stopPropagation(); toggleState(item.dataset.state); }
  });

  function hit(x, y) {
    const pitch = layout.size + layout.gap;
    for (const g of layout.groups) {
      if (y < g.top || x < g.left || x >= g.left + g.cols * pitch) continue;
      const col = Math.floor((x - g.left) / pitch);
      const row = Math.floor((y - g.top) / pitch);
      const i = row * g.cols + col;
      if (i < g.ids.length) {
        const tx = g.left + col * pitch, ty = g.top + row * pitch;
        if (x <= tx + layout.size + 1 && y <= ty + layout.size + 1) return g.ids[i];
      }
    }
    return null;
  }

  // The group whose name is under (x, y): a click on it focuses the page on that owner.
  function groupLabel(x, y) {
    for (const g of layout.groups) {
      if (g.owner && y >= g.header && y < g.top && x >= g.left && x <= (g.labelRight || g.left) + 30) return g;
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
    const label = groupLabel(x, y);
    const id = label ? null : hit(x, y);
    if (label) {
      tip.hidden = false;
      tip.textContent = `${model.owners[label.owner]}: click to focus the page on it`;
      placeTip(ev);
      canvas.style.cursor = "pointer";
      return;
    }
    if (id === null) { tip.hidden = true; canvas.style.cursor = "default"; return; }
    const [owner, state, node] = model.pods.get(id);
    tip.hidden = false;
    tip.textContent = `${model.names.get(id) || "pod " + id} · ${(STYLE[model.states[state]] || {}).text || model.states[state]}${model.nodes[node] ? " · " + model.nodes[node] : ""}${model.owners[owner] ? " · " + model.owners[owner] : ""}`;
    placeTip(ev);
    canvas.style.cursor = "pointer";
  });

  function placeTip(ev) {
    const box = document.getElementById("pods-panel").getBoundingClientRect();
    tip.style.left = Math.max(0, Math.min(ev.clientX - box.left + 12, box.width - tip.offsetWidth - 6)) + "px";
    tip.style.top = ev.clientY - box.top + 14 + "px";
  }
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
          const tx = g.left + (i % g.cols) * (size + gap), ty = g.top + Math.floor(i / g.cols) * (size + gap);
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
    const label = groupLabel(x, y);
    if (label) {
      if (window.CtrlscopeFocus) window.CtrlscopeFocus.focusOwner(model.owners[label.owner]);
      return;
    }
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
    ownerLabel,
    reset,
    apply,
    // Filters (focus.js, search.js): an owner ("Kind/name"), a node, pod keys ("ns/name"), states.
    setOwner: (owner) => { filter.owner = owner; schedule(); },
    setNode: (node) => { filter.node = node; schedule(); },
    setPods: (keys, label) => {
      if (keys === null) { filter.ids = null; filter.label = ""; schedule(); return; }
      const wanted = new Set(keys);
      filter.ids = new Set();
      for (const [id, key] of model.names) if (wanted.has(key)) filter.ids.add(id);
      filter.label = label || `${keys.length} pods`;
      schedule();
    },
    setIds: (ids, label) => {
      filter.ids = ids === null ? null : new Set(ids);
      filter.label = ids === null ? "" : label || `${ids.length} pods`;
      schedule();
    },
    toggleState,
    clearFilters,
    filter: () => ({ owner: filter.owner, node: filter.node, states: filter.states && [...filter.states].map((i) => model.states[i]), pods: filter.ids && filter.ids.size }),
    // For search.js: pod keys and the owner and node of each (read on a keystroke, not per frame).
    find: (match, limit) => {
      const out = [];
      for (const [id, key] of model.names) {
        const entry = model.pods.get(id);
        if (entry && match(key)) {
          out.push({ key, owner: model.owners[entry[0]], node: model.nodes[entry[2]], state: model.states[entry[1]] });
          if (out.length >= limit) break;
        }
      }
      return out;
    },
    owners: () => model.owners.filter(Boolean),
    nodes: () => model.nodes.filter(Boolean),
    ownerOf: (key) => {
      const e = model.pods.get(model.byKey.get(key));
      return e ? model.owners[e[0]] : null;
    },
    layout: () => ({ size: layout.size, gap: layout.gap, height: layout.height, room, shown: layout.shown, groups: layout.groups.length, labelled: layout.labelled }),
    // For tests: where each group's name is drawn (a click there focuses the page on it).
    labels: () => layout.labelled ? layout.groups.map((g) => ({ owner: model.owners[g.owner], x: g.left + 4, y: g.header + 6 })) : [],
    selected: () => [...model.selected].map((id) => model.names.get(id)).filter(Boolean),
    clearSelection: () => { model.selected.clear(); schedule(); },
    // The pod the Pod tab shows ("ns/name"), ringed on its tile; opened() reads it back.
    setOpen: (key) => { model.open = key; schedule(); },
    opened: () => model.open,
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
          return { x: g.left + (i % g.cols) * (size + gap) + size / 2, y: g.top + Math.floor(i / g.cols) * (size + gap) + size / 2, size, state: model.states[model.pods.get(g.ids[i])[1]] };
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

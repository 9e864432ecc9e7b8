// ctrlscope: the live debugger page. One websocket per page: frames in (panels rendered by the
// server, log rows, canvas deltas), commands out. Every control sends a command and shows the
// host's answer; nothing is computed here that the server did not say.
"use strict";

(function () {
  const app = document.getElementById("app");
  if (!app) return;
  const SIM = app.dataset.sim;
  const LOG_ROWS = 500; // rows kept in each log table
  const SPEEDS = ["0.1", "0.25", "0.5", "1", "2", "5", "10", "25", "50", "100", "max"];

  const state = {
    ws: null,
    seq: null,
    control: app.dataset.control === "1",
    nextId: 1,
    pending: new Map(), // command id -> {resolve}
    progress: new Map(), // command id -> what to do with its progress messages
    panels: new Map(), // panel id -> latest HTML (also for panels not on screen)
    deferred: new Map(), // panel id -> HTML held back while the user edits inside it
    focus: null, // [controller, key]
    podKey: null, // "ns/name": the pod the Pod tab shows, kept live by the frames
    podFromFrame: false,
    followLatest: true,
    controllers: [],
    status: null,
    retry: 500,
    stopped: false,
    hooks: [], // functions called with each frame after it is applied (benchmarks, tests)
    past: null, // the moment of the past this page shows (past.js), or null: live
    speedChoice: null, // the speed chosen in the select until a status shows the host has it
  };
  window.ctrlscope = state; // for the browser tests and the curious

  // The page's functions for the other scripts (and the tests) live on the same object as its
  // fields. Each is defined once, read-only, under a name no field has: a field of the same name
  // once replaced openPod with the open pod's key, and every tile click after the first failed.
  // Assigning to one now throws at once (strict mode) instead of breaking a later click.
  function expose(name, value) {
    if (name in state) throw new Error(`ctrlscope.${name} is taken`);
    Object.defineProperty(state, name, { value, enumerable: true });
  }

  // -- connection -----------------------------------------------------------------------------
  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${proto}//${location.host}${app.dataset.ws}`);
    state.ws = ws;
    setConn("connecting…", "connecting");
    let parts = null; // a long message arrives as {"type":"parts","n":N} and N slices
    ws.onmessage = (ev) => {
      if (parts) {
        parts.got.push(ev.data);
        if (parts.got.length === parts.n) { const text = parts.got.join(""); parts = null; onMessage(text); }
        return;
      }
      if (ev.data.startsWith('{"type":"parts"')) { parts = { n: JSON.parse(ev.data).n, got: [] }; return; }
      onMessage(ev.data);
    };
    ws.onopen = () => {
      state.retry = 500;
      setTimeout(() => {
        if (state.ws === ws && state.seq === null && ws.readyState === WebSocket.OPEN) {
          setConn("the simulation does not answer (its server process may have restarted) — retrying", "down");
          ws.close();
        }
      }, 8000);
    };
    ws.onclose = (ev) => {
      state.seq = null;
      clearTimeout(acks.timer); // a new connection starts from a state: nothing to acknowledge
      Object.assign(acks, { seq: null, waiting: 0, timer: null });
      if (state.stopped || ev.code === 4410) { setConn("simulation stopped", "down"); return; }
      if (ev.code === 4404) { setConn("no such simulation (stopped?) — back to the list", "down"); return; }
      setConn(`disconnected — reconnecting in ${(state.retry / 1000).toFixed(1)} s`, "down");
      setTimeout(connect, state.retry);
      state.retry = Math.min(state.retry * 2, 5000);
    };
  }

  function setConn(text, cls) {
    const el = document.getElementById("st-conn");
    el.textContent = text;
    el.className = "conn " + (cls || "");
  }

  function sendRaw(obj) {
    if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(obj));
  }

  // Acknowledgements are cumulative (the consumer's flow control, dashboard/consumers.py): the
  // page acknowledges the latest frame it has applied at most once a second, or at once when
  // ACK_EVERY frames wait (half the consumer's window of 8). Each ack costs the server a
  // websocket read inside the simulation's time; at 50 viewers and 2 frames a second, one ack a
  // frame was a tenth of the viewers' cost (docs/performance.md). A state is acknowledged at once.
  const ACK_EVERY = 4;
  const ACK_WITHIN_MS = 1000;
  const acks = { seq: null, waiting: 0, timer: null, last: 0 };
  function flushAck() {
    clearTimeout(acks.timer);
    acks.timer = null;
    if (acks.seq === null) return;
    sendRaw({ type: "ack", seq: acks.seq });
    acks.seq = null;
    acks.waiting = 0;
    acks.last = performance.now();
  }
  function ack(seq, now) {
    acks.seq = seq;
    acks.waiting += 1;
    const since = performance.now() - acks.last;
    if (now || acks.waiting >= ACK_EVERY || since >= ACK_WITHIN_MS) flushAck();
    else if (!acks.timer) acks.timer = setTimeout(flushAck, ACK_WITHIN_MS - since);
  }

  // A command to the host; resolves with its result ({ok, error?, ...}). `opts.onProgress`:
  // called with each progress message of this command (a long look at the past), each of which
  // restarts the wait; `opts.wait`: ms without a word from the server before giving up.
  function command(cmd, opts) {
    const id = state.nextId++;
    const wait = (opts && opts.wait) || 15000;
    return new Promise((resolve) => {
      if (!state.ws || state.ws.readyState !== WebSocket.OPEN) {
        resolve({ ok: false, error: "not connected" });
        return;
      }
      const giveUp = () => {
        if (!state.pending.has(id)) return;
        state.pending.delete(id);
        state.progress.delete(id);
        resolve({ ok: false, error: `no answer from the server in ${Math.round(wait / 1000)} s` });
      };
      let timer = setTimeout(giveUp, wait);
      state.pending.set(id, (result) => { clearTimeout(timer); state.progress.delete(id); resolve(result); });
      if (opts && opts.onProgress) {
        state.progress.set(id, (msg) => { clearTimeout(timer); timer = setTimeout(giveUp, wait); opts.onProgress(msg); });
      }
      sendRaw({ type: "cmd", id, cmd });
    });
  }
  expose("command", command);

  function onMessage(text) {
    let msg;
    try { msg = JSON.parse(text); } catch (e) { return; }
    switch (msg.type) {
      case "hello":
        state.control = !!msg.control;
        document.body.classList.toggle("can-control", state.control);
        document.body.classList.toggle("read-only", !state.control);
        break;
      case "state": applyState(msg); break;
      case "frame": applyFrame(msg); break;
      case "past_progress": {
        // How far the replay of a past moment this page asked for has come (past.js shows it).
        const progress = state.progress.get(msg.id);
        if (progress) progress(msg);
        break;
      }
      case "past": {
        // A moment of the past (past.js shows it); it answers a command of this page.
        const resolve = state.pending.get(msg.id);
        if (resolve) { state.pending.delete(msg.id); resolve({ ok: true, past: msg }); }
        break;
      }
      case "reply": {
        const resolve = state.pending.get(msg.id);
        if (resolve) { state.pending.delete(msg.id); resolve(msg.result); }
        break;
      }
      case "error": {
        const resolve = msg.id != null && state.pending.get(msg.id);
        if (resolve) { state.pending.delete(msg.id); resolve({ ok: false, error: msg.error }); }
        else showResult({ ok: false, error: msg.error });
        break;
      }
      case "stopped": state.stopped = true; setConn("simulation stopped", "down"); break;
    }
  }

  // -- applying state and frames --------------------------------------------------------------
  function applyState(msg) {
    state.seq = msg.seq;
    if (state.past) state.past.leave(); // a full state is the live moment
    state.panels.clear();
    state.deferred.clear();
    applyPanels(msg.panels);
    for (const log of ["trace", "api", "events"]) {
      const body = document.getElementById("rows-" + log);
      body.innerHTML = msg.rows[log] || "";
      if (log === "events") foldEvents(body);
      filterRows(log);
      scrollDown(body, true);
    }
    window.CtrlscopePods && window.CtrlscopePods.reset(msg.canvas);
    window.CtrlscopeTimeline && window.CtrlscopeTimeline.reset(msg.canvas);
    applyStatus(msg.status);
    setConn("live", "up");
    fillFocusPicker();
    if (window.CtrlscopeFocus) window.CtrlscopeFocus.onState();
    ack(msg.seq, true);
  }

  function applyFrame(msg) {
    if (state.seq === null) return;
    state.seq = msg.seq;
    if (state.past) {
      // Viewing the past: panels never mix times. Only the live clock moves (the banner);
      // going back to live asks for a full state.
      state.status = msg.status;
      state.past.onLive(msg.status);
      ack(msg.seq);
      return;
    }
    applyPanels(msg.panels);
    // A page focused on one owner takes that owner's Events and API calls from the rows the
    // server picked for it before the per-frame cap (focus.js).
    const rows = window.CtrlscopeFocus ? window.CtrlscopeFocus.frameRows(msg) : msg.rows || {};
    for (const [log, html] of Object.entries(rows)) appendRows(log, html);
    const skipped = msg.skipped || {};
    for (const log of ["trace", "api"]) {
      const el = document.getElementById(log + "-skipped");
      if (el && skipped[log]) el.textContent = `${skipped[log]} older rows of the last frame not shown`;
    }
    if (msg.canvas) {
      window.CtrlscopePods && window.CtrlscopePods.apply(msg.canvas);
      window.CtrlscopeTimeline && window.CtrlscopeTimeline.apply(msg.canvas);
    }
    applyStatus(msg.status);
    ack(msg.seq);
    for (const hook of state.hooks) hook(msg);
  }

  function applyPanels(panels) {
    let ownersChanged = false;
    for (const [id, html] of Object.entries(panels || {})) {
      state.panels.set(id, html);
      if (id === "owners") ownersChanged = true;
      const ctl = /^(queue|workers|expectations|lookupcache)-([^:]+)$/.exec(id); // not a focused panel (…:key)
      if (ctl) ensureController(ctl[2]);
      if (id.startsWith("inspector:") || id.startsWith("truth:") || id.startsWith("rollout:") || id === "inspector-latest") continue;
      if (id.startsWith("pod:")) { showPod(id, html); continue; }
      const targetId = panelTarget(id);
      if (targetId === null) continue; // a focused panel of another key (focus.js)
      if (id === "actions") {
        // The Actions log grows at the bottom like the other logs (one order, oldest first).
        keepAtBottom(document.getElementById("tab-actions"), () => place(document.getElementById(id), id, html));
        continue;
      }
      place(document.getElementById(targetId), id, html);
    }
    showSlots();
    if (ownersChanged) fillFocusPicker();
  }

  // The element a panel goes to: its own, or for a page focused on one owner (focus.js) the
  // focused queue / expectations panel in place of the unfocused one.
  function panelTarget(id) {
    return window.CtrlscopeFocus ? window.CtrlscopeFocus.target(id) : id;
  }

  // Replace the element with the panel's new HTML, unless the user is typing inside it: then
  // hold the HTML back until they leave (a number being edited must not change under them).
  // When only some of its children changed (one ReplicaSet of ten, one row of a table), only
  // those are replaced: the browser then lays out and paints what changed, not the panel.
  function place(el, id, html) {
    if (!el) return;
    if (el.contains(document.activeElement) && document.activeElement.matches("input, select, textarea")) {
      state.deferred.set(id, html);
      return;
    }
    const before = numbers(el);
    const tpl = document.createElement("template");
    tpl.innerHTML = html.trim();
    const fresh = tpl.content.firstElementChild;
    if (!fresh) return;
    const openDetails = [...el.querySelectorAll("details[open] > summary")].map((s) => s.textContent);
    let root = fresh;
    let replaced = [fresh];
    if (sameShell(el, fresh)) {
      root = el;
      replaced = [];
      const olds = [...el.children];
      [...fresh.children].forEach((child, i) => {
        if (!olds[i].isEqualNode(child)) { olds[i].replaceWith(child); replaced.push(child); }
      });
    } else {
      el.replaceWith(fresh);
    }
    for (const part of replaced) {
      for (const summary of part.querySelectorAll("details > summary")) {
        if (openDetails.includes(summary.textContent)) summary.parentElement.open = true;
      }
      if (window.htmx) htmx.process(part);
    }
    flash(root, before);
  }

  // Same element, attributes and text of its own, and as many children: a child-by-child swap
  // gives the same DOM as replacing the whole.
  function sameShell(a, b) {
    if (a.tagName !== b.tagName || a.children.length !== b.children.length) return false;
    if (a.attributes.length !== b.attributes.length) return false;
    for (const attr of a.attributes) if (b.getAttribute(attr.name) !== attr.value) return false;
    const ownText = (node) => [...node.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.data).join("");
    return ownText(a) === ownText(b);
  }

  document.addEventListener("focusout", () => {
    setTimeout(() => {
      for (const [id, html] of [...state.deferred]) {
        const el = document.getElementById(id);
        if (el && !el.contains(document.activeElement)) { state.deferred.delete(id); place(el, id, html); }
      }
    }, 0);
  });

  function numbers(el) {
    const out = new Map();
    for (const n of el.querySelectorAll(".n[data-k]")) out.set(n.dataset.k, n.textContent);
    return out;
  }

  // A number that changed glows for a moment. An animation, not a class: the element stays
  // equal to the server's HTML, so the next frame need not replace it.
  function flash(el, before) {
    for (const n of el.querySelectorAll(".n[data-k]")) {
      const old = before.get(n.dataset.k);
      if (old !== undefined && old !== n.textContent) {
        n.animate([{ backgroundColor: "#ffe27a" }, { backgroundColor: "transparent" }], { duration: 900, easing: "ease-in" });
      }
    }
  }

  function ensureController(name) {
    if (state.controllers.includes(name)) return;
    state.controllers.push(name);
    const tabs = document.getElementById("controller-tabs");
    const btn = document.createElement("button");
    btn.textContent = name;
    btn.dataset.controller = name;
    btn.dataset.name = name;
    btn.setAttribute("role", "tab");
    btn.addEventListener("click", () => showController(name));
    tabs.appendChild(btn);
    const box = document.createElement("div");
    box.className = "controller";
    box.id = "controller-" + name;
    box.hidden = true;
    for (const kind of ["workers", "queue", "expectations", "lookupcache"]) {
      const s = document.createElement("section");
      s.id = `${kind}-${name}`;
      s.className = "panel";
      box.appendChild(s);
    }
    document.getElementById("controllers").appendChild(box);
    if (state.controllers.length === 1) showController(name);
  }

  function showController(name) {
    for (const box of document.querySelectorAll("#controllers > .controller")) box.hidden = box.id !== "controller-" + name;
    for (const b of document.querySelectorAll("#controller-tabs button")) b.setAttribute("aria-selected", String(b.dataset.controller === name));
  }
  // Focusing an owner shows its controller's workers, queue and expectations (focus.js).
  expose("showController", (name) => { if (state.controllers.includes(name)) showController(name); });

  // The inspector and cache-vs-truth slots show the focused key (or the latest sync).
  function showSlots() {
    const inspector = document.querySelector('[data-slot="inspector"]');
    const truth = document.querySelector('[data-slot="truth"]');
    const key = state.focus ? state.focus.join(":") : null;
    const inspectorId = state.followLatest || !key ? "inspector-latest" : "inspector:" + key;
    setSlot(inspector, inspectorId, state.followLatest ? "No sync yet." : "Waiting for the first sync of this key…");
    setSlot(truth, key ? "truth:" + key : null, "Pick a key (click a ReplicaSet's name).");
    // The rollout of the owner the page is focused on, when it has one (an owner of owners).
    const rollout = document.querySelector('[data-slot="rollout"]');
    const owner = window.CtrlscopeFocus && window.CtrlscopeFocus.current();
    const rolloutId = owner ? `rollout:${owner.controller}:${owner.key}` : null;
    // (held back while the user types in its forms: the panel ticks with the deadline's countdown)
    const typing = rollout && rollout.contains(document.activeElement) && document.activeElement.matches("input, select");
    if (!typing) setSlot(rollout, rolloutId, "");
    if (rollout) rollout.hidden = !(rolloutId && state.panels.get(rolloutId));
  }

  function setSlot(slot, id, empty) {
    if (!slot || slot.dataset.history) return;
    const html = id && state.panels.get(id);
    if (slot.dataset.showing === id && slot.dataset.html === html) return;
    slot.dataset.showing = id || "";
    slot.dataset.html = html || "";
    if (html) {
      const before = numbers(slot);
      slot.innerHTML = html;
      if (window.htmx) htmx.process(slot);
      flash(slot, before);
    } else {
      slot.innerHTML = `<p class="muted empty">${empty}</p>`;
    }
  }

  // New log rows go at the bottom (every log: Events, Trace, API calls, Actions). Only a
  // visible log is scrolled, and only if it was at the bottom already: reading a hidden tab's
  // geometry would force a layout of the whole page.
  function appendRows(log, html) {
    const body = document.getElementById("rows-" + log);
    if (!body) return;
    keepAtBottom(body.closest(".tab"), () => {
      const before = body.rows.length;
      body.insertAdjacentHTML("beforeend", html);
      filterRows(log, before);
      if (log === "events") foldEvents(body);
      const extra = body.rows.length - LOG_ROWS;
      if (extra > 0) {
        const range = document.createRange();
        range.setStartBefore(body.rows[0]);
        range.setEndAfter(body.rows[extra - 1]);
        range.deleteContents();
      }
    });
  }

  // The log rows' tooltips, written on the first hover (dashboard/host/rows.py sends none: the
  // same words in every row were a third of its bytes).
  function rowTip(log, el, row) {
    if (el.classList.contains("why")) return "why? the chain of causes of this row";
    if (el.classList.contains("count")) {
      return row.dataset.event ? `the count of the Event ${row.dataset.event} after this occurrence (the correlator patches its count and lastTimestamp)` : "";
    }
    if (log === "api") return `see the world when its answer came (t=${window.CtrlscopeTime.format(parseFloat(el.dataset.jumpT))})`;
    if (log === "events") return "see the world right after this event was recorded";
    return `see the world right after this record (#${el.dataset.jumpSeq})`;
  }
  for (const log of ["trace", "api", "events"]) {
    const body = document.getElementById("rows-" + log);
    if (!body) continue;
    body.addEventListener("mouseover", (ev) => {
      const el = ev.target.closest("a.jump, a.why, td.count");
      if (el && !el.title) el.title = rowTip(log, el, el.closest("tr"));
    });
  }

  // One row per Event object, as `kubectl get events` lists them: an occurrence the correlator
  // counted into an Event already listed replaces that Event's row (its row moves to the end,
  // with the count and the time of this occurrence). At most LOG_ROWS rows: a cheap pass.
  function foldEvents(body) {
    const last = new Map();
    for (const row of body.rows) if (row.dataset.event) last.set(row.dataset.event, row);
    for (const row of Array.from(body.rows)) {
      if (row.dataset.event && last.get(row.dataset.event) !== row) row.remove();
    }
  }
  expose("foldEvents", foldEvents);

  function keepAtBottom(scroller, change) {
    if (!scroller) { change(); return; }
    const visible = !scroller.hidden;
    const atBottom = visible && scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 30;
    change();
    if (atBottom) scroller.scrollTop = scroller.scrollHeight;
    if (!visible) scroller.dataset.scrollOnShow = "1";
  }

  function scrollDown(body, yes) {
    const scroller = body.closest(".tab");
    if (yes && scroller) scroller.scrollTop = scroller.scrollHeight;
  }

  // -- status -----------------------------------------------------------------------------------
  // The page's one time format (time.js): the clock, the status line, the banners.
  const fmtT = (t) => window.CtrlscopeTime.format(t);

  // A property of an element, written only when it differs: the status line is applied with
  // every frame (ten a second at 1x), and an unchanged write is still a DOM mutation the page
  // restyles for (issue 31).
  function put(el, prop, value) {
    if (el && el[prop] !== value) el[prop] = value;
  }

  function applyStatus(st) {
    if (!st) return;
    state.status = st;
    const time = document.getElementById("st-time");
    put(time, "textContent", fmtT(st.t));
    put(time, "title", `virtual time: ${st.t.toFixed(3)} seconds (what run to t= and view t= take)`);
    put(document.getElementById("st-seed"), "textContent", String(st.seed));
    put(document.getElementById("st-events"), "textContent", st.events.toLocaleString("en-US"));
    const mode = document.getElementById("st-mode");
    const running = st.mode !== "paused";
    put(mode, "textContent", st.goal ? `stepping: ${st.goal}` : running ? (st.mode === "fast" ? "running at max" : `running ${st.speed}×`) : "paused");
    put(mode, "className", "mode mode-" + (st.goal ? "stepping" : st.mode));
    put(mode, "title", mode.textContent);
    if (document.body.classList.contains("is-paused") !== (!running && !st.goal)) document.body.classList.toggle("is-paused", !running && !st.goal);
    put(document.getElementById("st-rate"), "textContent", running && st.rate != null ? `(${st.rate}× actual)` : "");
    const next = document.getElementById("st-next");
    put(next, "textContent", st.next ? `next timer t=${fmtT(st.next.t)}: ${st.next.what}` : "no timer scheduled");
    const hit = document.getElementById("st-hit");
    if (st.error) {
      put(hit, "className", "banner bad");
      put(hit, "textContent", `Stopped on an error at t=${fmtT(st.t)}: ${st.error}`);
    } else if (st.hit && !running) {
      put(hit, "className", "banner " + (st.hit.breakpoint ? "hit" : "info"));
      put(hit, "textContent", (st.hit.breakpoint ? `❚❚ Breakpoint #${st.hit.breakpoint} fired at t=${fmtT(st.hit.t)}: ${st.hit.why}` : `❚❚ Paused at t=${fmtT(st.hit.t)}: ${st.hit.why}`) + (st.hit.detail ? ` — ${st.hit.detail}` : ""));
    } else if (!running && !st.goal) {
      put(hit, "className", "banner info");
      put(hit, "textContent", `❚❚ Paused at t=${fmtT(st.t)}`);
    } else {
      put(hit, "className", "");
      put(hit, "textContent", "");
    }
    showVersions(st.versions || {}, st.garbageCollector);
    if (st.config) showConfig(st.config);
    put(hit, "title", hit.textContent); // the status line is one line: a long message reads in full on hover
    put(next, "title", next.textContent);
    // The select shows the host's speed, except while the user's own choice is on its way: a
    // frame built before the host took it must not put the old speed back (▶ Run sends the
    // select's value).
    const sel = document.getElementById("speed");
    const want = st.mode === "fast" ? "max" : String(st.speed);
    if (state.speedChoice === want) state.speedChoice = null;
    if (state.speedChoice === null && document.activeElement !== sel && SPEEDS.includes(want)) put(sel, "value", want);
    put(document.getElementById("btn-run"), "disabled", running && !st.goal);
    put(document.getElementById("btn-pause"), "disabled", !running && !st.goal);
  }

  // Which version each controller runs: the status line, the controller tabs, the breakpoint
  // form's stages (only the running versions'), and the version switch's GC box (until touched).
  function showVersions(versions, gc) {
    const names = Object.keys(versions);
    const line = document.getElementById("st-versions");
    const text = names.map((n) => `${n} ${versions[n]}`).join(" · ") + (gc === false ? " · garbage collector off" : "");
    if (line.textContent !== text) line.textContent = text;
    for (const b of document.querySelectorAll("#controller-tabs button")) {
      const label = versions[b.dataset.name] ? `${b.dataset.name} ${versions[b.dataset.name]}` : b.dataset.name;
      if (b.textContent !== label) b.textContent = label;
    }
    const stage = document.getElementById("bp-stage");
    if (stage) {
      for (const group of stage.querySelectorAll("optgroup")) {
        // A stage table is shown when one of its controllers runs one of its versions.
        const tables = group.dataset.versions.split(" ");
        const shown = group.dataset.controllers.split(" ").some((c) => tables.includes(versions[c]));
        put(group, "hidden", !shown);
        put(group, "disabled", !shown);
      }
      const current = stage.selectedOptions[0];
      if (!current || current.parentElement.disabled) {
        const first = stage.querySelector("optgroup:not([disabled]) option");
        if (first) stage.value = first.value;
      }
    }
    const gcBox = document.getElementById("version-gc");
    if (gcBox && !gcBox.dataset.touched && typeof gc === "boolean") gcBox.checked = gc;
  }

  // The What-ifs and knobs show the config in force (#19 §4), whoever changed it, except a
  // control the user has changed and not yet applied, or is editing.
  function showConfig(config) {
    for (const input of document.querySelectorAll("#form-config [data-follow]")) {
      if (input.dataset.touched || input === document.activeElement) continue;
      let value = config;
      for (const part of input.name.split(".")) value = value == null ? undefined : value[part];
      if (value === undefined) continue;
      if (input.type === "checkbox") {
        if (input.checked !== !!value) input.checked = !!value;
      } else if (input.value !== String(value)) {
        input.value = String(value);
      }
    }
  }

  function showResult(result, where, cmd) {
    const el = where || document.getElementById("st-result");
    if (!el) return;
    el.classList.remove("ok", "bad");
    if (result.ok) {
      el.classList.add("ok");
      el.textContent = describeOk(result, cmd);
      clearTimeout(el._t);
      el._t = setTimeout(() => { el.textContent = ""; }, 4000);
    } else {
      el.classList.add("bad");
      const causes = (result.causes || []).map((c) => `${c.field}: ${c.message}`).join("; ");
      el.textContent = (result.code ? `${result.code} ` : "") + (result.error || "refused") + (causes ? ` (${causes})` : "");
    }
    el.title = el.textContent; // one line on the page: the whole message on hover
  }

  function describeOk(r, cmd) {
    if (r.object) return `applied ${r.object}`;
    if (r.key && r.worker !== undefined) return `worker ${r.worker} syncs ${r.key}`;
    if (r.pods) return `${r.pods.length} pod${r.pods.length === 1 ? "" : "s"}: ${r.pods.slice(0, 6).join(", ")}${r.pods.length > 6 ? "…" : ""}` + (r.skipped ? ` (skipped ${r.skipped.join(", ")})` : "");
    if (r.id !== undefined && r.rule !== undefined) return `API fault #${r.id} in force`;
    if (r.lifted) return `lifted API fault ${r.lifted.join(", ")}`;
    if (r.goal) return ""; // the status line tells the step's progress and where it stopped
    if (r.informers) return `informers: ${r.informers.join(", ")}`;
    // An action says which verb was applied; anything else (run, pause, speed, a breakpoint
    // toggled) shows its effect where it belongs -- the clock, the mode, the panel -- and says
    // nothing here rather than a vague "done".
    if (cmd && cmd.op === "act" && cmd.action) return `${Object.keys(cmd.action)[0]} applied`;
    return "";
  }

  // -- controls -----------------------------------------------------------------------------------
  async function run(cmd, where) {
    // past.js: in the past a step moves the cursor and acting waits for live; live, it notes
    // where a step starts so that a step back returns there exactly.
    if (window.CtrlscopePast && window.CtrlscopePast.intercept(cmd)) return { ok: false };
    if (!state.control) { showResult({ ok: false, error: "read-only: open the URL with the access token to control" }, where); return { ok: false }; }
    const result = await command(cmd);
    showResult(result, where, cmd);
    return result;
  }
  expose("run", run);
  // For past.js: the past is shown with the same functions as the present.
  expose("show", { applyPanels, applyStatus, showResult, filterRows, scrollDown, clearPanels: () => state.panels.clear() });
  expose("resync", () => sendRaw({ type: "resync" }));

  document.addEventListener("click", (ev) => {
    const cmdEl = ev.target.closest("[data-cmd]");
    if (cmdEl) {
      if (cmdEl.tagName === "INPUT" && cmdEl.type === "checkbox") {
        // A toggle: the server decides; the next frame shows the real state.
      } else ev.preventDefault();
      let cmd;
      try { cmd = JSON.parse(cmdEl.dataset.cmd); } catch (e) { return; }
      if (cmd.op === "run") cmd.speed = document.getElementById("speed").value;
      run(cmd).then((result) => {
        // A key synced by hand: the inspector follows that sync.
        if (result.ok && cmd.op === "act" && cmd.action.sync) setFocus(cmd.action.sync.controller, result.key, true);
      });
      return;
    }
    const focusEl = ev.target.closest("[data-focus]");
    if (focusEl) {
      ev.preventDefault();
      const [controller, key] = focusEl.dataset.focus.split("|");
      setFocus(controller, key, true);
      return;
    }
    const podEl = ev.target.closest("[data-pod]");
    if (podEl) {
      ev.preventDefault();
      const [ns, name] = podEl.dataset.pod.split("/");
      openPod(ns, name);
      return;
    }
    const histEl = ev.target.closest("[data-sync-history]");
    if (histEl) {
      ev.preventDefault();
      const [controller, key, id] = histEl.dataset.syncHistory.split("|");
      openHistory(controller, key, id);
      return;
    }
    const tab = ev.target.closest("#drawer-tabs [data-tab]");
    if (tab) showTab(tab.dataset.tab);
    const podsBtn = ev.target.closest("[data-pods]");
    if (podsBtn) actOnSelection(podsBtn.dataset.pods);
  });

  document.getElementById("speed").addEventListener("change", (ev) => {
    const speed = ev.target.value;
    state.speedChoice = speed;
    ev.target.blur(); // Space runs and pauses again at once, instead of opening the select
    run({ op: "speed", speed }).then((result) => { if (!result.ok && state.speedChoice === speed) state.speedChoice = null; });
  });

  function showTab(id) {
    for (const t of document.querySelectorAll("#drawer > .tab")) t.hidden = t.id !== id;
    const shown = document.getElementById(id);
    if (shown && shown.dataset.scrollOnShow) { delete shown.dataset.scrollOnShow; shown.scrollTop = shown.scrollHeight; }
    for (const b of document.querySelectorAll("#drawer-tabs [data-tab]")) b.setAttribute("aria-selected", String(b.dataset.tab === id));
  }
  expose("showTab", showTab);

  function setFocus(controller, key, reveal) {
    state.focus = [controller, key];
    const picker = document.getElementById("focus-key");
    const value = `${controller}|${key}`;
    if (![...picker.options].some((o) => o.value === value)) {
      // A key no owner lists (an operator's object, from its handler's inspector): pickable too.
      const option = document.createElement("option");
      option.value = value;
      option.textContent = `${key} (${controller})`;
      picker.appendChild(option);
    }
    picker.value = value;
    if (reveal) {
      state.followLatest = false;
      document.getElementById("follow-latest").checked = false;
      const current = document.querySelector("#drawer-tabs [aria-selected=true]");
      if (!current || !["tab-inspector", "tab-truth"].includes(current.dataset.tab)) showTab("tab-inspector");
    }
    command({ op: "focus", keys: [[controller, key]] });
    showSlots();
  }
  expose("setFocus", setFocus);

  function fillFocusPicker() {
    const picker = document.getElementById("focus-key");
    const keys = [...new Set([...document.querySelectorAll("#owners [data-focus]")].map((e) => e.dataset.focus))];
    const current = picker.value;
    if (state.focus && current.includes("|") && !keys.includes(current)) keys.push(current); // an operator's key, kept
    picker.innerHTML = keys.map((k) => `<option value="${k}">${k.split("|")[1]} (${k.split("|")[0]})</option>`).join("");
    if (keys.includes(current)) picker.value = current;
    if (!state.focus && keys.length) {
      const [c, k] = keys[0].split("|");
      setFocus(c, k, false);
    }
  }

  document.getElementById("focus-key").addEventListener("change", (ev) => {
    const [c, k] = ev.target.value.split("|");
    setFocus(c, k, false);
  });
  document.getElementById("follow-latest").addEventListener("change", (ev) => {
    state.followLatest = ev.target.checked;
    const slot = document.querySelector('[data-slot="inspector"]');
    delete slot.dataset.history;
    showSlots();
  });

  // The Pod tab is live (#19 §4): the pod is this viewer's open pod, a focused panel
  // ("pod:ns/name") the frames rebuild whenever a record touches it. The first look is a read,
  // unless a frame brought the panel first.
  function openPod(ns, name) {
    const target = document.getElementById("pod-detail");
    const key = `${ns}/${name}`;
    document.getElementById("pod-tab-button").hidden = false;
    document.getElementById("pod-tab-button").textContent = `Pod ${name}`;
    showTab("tab-pod");
    state.podKey = key;
    state.podFromFrame = false;
    if (window.CtrlscopePods) window.CtrlscopePods.setOpen(key);
    target.innerHTML = '<p class="muted">loading…</p>';
    command({ op: "focus", pod: key });
    fetch(`/sim/${SIM}/pod/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`)
      .then((r) => r.text().then((t) => ({ ok: r.ok, t })))
      .then(({ ok, t }) => {
        if (state.podKey !== key || state.podFromFrame) return;
        target.innerHTML = ok ? t : `<p class="bad">${t}</p>`;
      });
  }

  function showPod(id, html) {
    if (!state.podKey || id !== "pod:" + state.podKey) return;
    state.podFromFrame = true;
    const target = document.getElementById("pod-detail");
    const el = target.firstElementChild;
    if (el && el.id === id) place(el, id, html);
    else { target.innerHTML = html; if (window.htmx) htmx.process(target); }
  }
  expose("openPod", openPod);

  function openHistory(controller, key, id) {
    const slot = document.querySelector('[data-slot="inspector"]');
    const [ns, name] = key.split("/");
    fetch(`/sim/${SIM}/syncs/${controller}/${ns}/${name}?sync=${id}`)
      .then((r) => r.text().then((t) => ({ ok: r.ok, t })))
      .then(({ ok, t }) => {
        slot.dataset.history = "1";
        slot.innerHTML = `<p class="history-bar"><button class="small" id="back-to-live">← back to live</button> an earlier sync</p>` + (ok ? t : `<p class="bad">${t}</p>`);
        document.getElementById("back-to-live").addEventListener("click", () => { delete slot.dataset.history; slot.dataset.showing = ""; showSlots(); });
      });
  }

  // -- forms: each builds one action (or command) from its fields ----------------------------------
  function fieldValue(input) {
    const type = input.dataset.type;
    if (type === "bool") return input.checked;
    const raw = input.value.trim();
    if (raw === "") return undefined;
    if (type === "int") return /^-?\d+$/.test(raw) ? parseInt(raw, 10) : raw; // the server names a bad value
    if (type === "number") return /^-?\d*\.?\d+(e-?\d+)?$/i.test(raw) ? parseFloat(raw) : raw;
    return raw;
  }

  function formBody(form, submitter) {
    const body = {};
    for (const input of form.querySelectorAll("input, select, textarea")) {
      if (!input.name || input.name.startsWith("_") || input.type === "submit") continue;
      if (input.type === "radio" && !input.checked) continue;
      if (input.dataset.tristate !== undefined && !input.dataset.touched) continue;
      if (input.type === "checkbox" && input.dataset.type !== "bool") { if (!input.checked) continue; }
      const value = fieldValue(input);
      if (value === undefined) continue;
      const path = input.name.split(".");
      let at = body;
      for (const part of path.slice(0, -1)) at = at[part] = at[part] || {};
      at[path[path.length - 1]] = value;
    }
    if (submitter && submitter.name) body[submitter.name] = submitter.value;
    return body;
  }

  // A control that shows a value in force is sent only once the user changed it.
  for (const kind of ["change", "input"]) {
    document.addEventListener(kind, (ev) => {
      if (ev.target.dataset && ev.target.dataset.tristate !== undefined) ev.target.dataset.touched = "1";
    });
  }

  document.addEventListener("submit", async (ev) => {
    const form = ev.target;
    if (form.id === "yaml-form") { ev.preventDefault(); return state.edit && state.edit.target ? state.edit.apply() : applyYaml(); }
    if (form.id === "form-breakpoint") { ev.preventDefault(); return addBreakpoint(form); }
    if (form.id === "run-to") { ev.preventDefault(); return run({ op: "step", what: "to", t: form.querySelector("input").value }); }
    const verb = form.dataset.action;
    if (!verb) return;
    ev.preventDefault();
    if (form.dataset.confirm && !confirm(form.dataset.confirm)) return;
    const body = formBody(form, ev.submitter);
    if (verb === "apiFault") {
      const mode = (form.querySelector('input[name="_mode"]:checked') || {}).value;
      if (mode !== "count") delete body.count;
      if (mode !== "rate") delete body.rate;
      if (mode === "forever") body.rate = 1;
    }
    if (verb === "watchFault" && body.fault !== "pause") delete body.delay;
    if (verb === "watchFault" && !body.controller) delete body.controller;
    const where = form.querySelector(".form-result") || document.getElementById("st-result");
    const result = await run({ op: "act", action: { [verb]: body } }, where);
    if (result.ok && verb === "config") {
      for (const input of form.querySelectorAll("[data-touched]")) delete input.dataset.touched;
    }
  });

  async function applyYaml() {
    const text = document.getElementById("yaml-text").value;
    const out = document.getElementById("yaml-result");
    if (!state.control) { showResult({ ok: false, error: "read-only" }, out); return; }
    const result = await command({ op: "apply_yaml", text });
    out.classList.remove("ok", "bad");
    if (!result.results) { showResult(result, out); return; }
    out.innerHTML = "";
    result.results.forEach((r, i) => {
      const line = document.createElement("div");
      line.className = r.ok ? "ok" : "bad";
      const causes = (r.causes || []).map((c) => `${c.field}: ${c.message}`);
      line.textContent = `document ${i + 1}: ` + (r.ok ? `applied ${r.object}` : `${r.code ? r.code + " " : ""}${r.error}`);
      out.appendChild(line);
      if (causes.length) {
        const ul = document.createElement("ul");
        ul.className = "causes";
        for (const c of causes) { const li = document.createElement("li"); li.textContent = c; ul.appendChild(li); }
        out.appendChild(ul);
      }
    });
  }

  async function addBreakpoint(form) {
    const kind = form.querySelector('[name="kind"]').value;
    const spec = { kind };
    for (const input of form.querySelectorAll("input, select")) {
      if (!input.name || input.name === "kind") continue;
      const label = input.closest("label[data-for]");
      if (label && !label.dataset.for.split(" ").includes(kind)) continue;
      const value = fieldValue(input);
      if (value !== undefined) spec[input.name] = value;
    }
    await run({ op: "breakpoint", do: "add", spec }, form.querySelector(".form-result"));
  }

  function showBreakpointFields() {
    const kind = document.getElementById("bp-kind").value;
    for (const label of document.querySelectorAll("#form-breakpoint label[data-for]")) {
      label.hidden = !label.dataset.for.split(" ").includes(kind);
    }
  }
  document.getElementById("bp-kind").addEventListener("change", showBreakpointFields);
  showBreakpointFields();

  // -- pods selection (from the tiles) -------------------------------------------------------------
  async function actOnSelection(what) {
    const pods = window.CtrlscopePods;
    if (!pods) return;
    if (what === "clear") { pods.clearSelection(); return; }
    const selected = pods.selected();
    let failed = 0;
    const names = [];
    for (const key of selected) {
      const [namespace, name] = key.split("/");
      const cmd = what === "orphan" ? { op: "orphan", namespace, name } : { op: "act", action: { podFault: { name, namespace, fault: what } } };
      const result = await command(cmd);
      if (!result.ok) failed += 1; else names.push(name);
    }
    showResult(failed ? { ok: false, error: `${what}: ${failed} of ${selected.length} refused` } : { ok: true, pods: names });
    pods.clearSelection();
  }

  // -- log filters ---------------------------------------------------------------------------------
  // Hide the rows a filter excludes: all rows when a filter changes, only new ones otherwise.
  // Rows are also hidden by the other filters of the page (focus.js, search.js): `extraFilters`
  // are functions (log, row) -> true to hide.
  const extraFilters = [];
  expose("extraFilters", extraFilters);
  function extraHidden(log, row) {
    for (const f of extraFilters) if (f(log, row)) return true;
    return false;
  }
  function filterRows(log, from = 0) {
    const extra = extraFilters.some((f) => f.active && f.active(log));
    if (log === "trace") {
      const kind = document.getElementById("trace-filter-kind").value.trim();
      const key = document.getElementById("trace-filter-key").value.trim();
      const controller = document.getElementById("trace-filter-controller").value;
      if (!from || kind || key || controller || extra) {
        const rows = document.getElementById("rows-trace").rows;
        for (let i = from; i < rows.length; i++) {
          const row = rows[i];
          const hide = !!((kind && !row.dataset.kind.startsWith(kind)) || (key && !row.dataset.subject.includes(key)) || (controller && row.dataset.controller !== controller)) || (extra && extraHidden(log, row));
          if (row.hidden !== hide) row.hidden = hide;
        }
      }
    } else if (log === "api") {
      const failedOnly = document.getElementById("api-failed-only").checked;
      if (!from || failedOnly || extra) {
        const rows = document.getElementById("rows-api").rows;
        for (let i = from; i < rows.length; i++) {
          const hide = (failedOnly && !rows[i].classList.contains("failed")) || (extra && extraHidden(log, rows[i]));
          if (rows[i].hidden !== hide) rows[i].hidden = hide;
        }
      }
    } else if (log === "events") {
      if (!from || extra) {
        const rows = document.getElementById("rows-events").rows;
        for (let i = from; i < rows.length; i++) {
          const hide = extra && extraHidden(log, rows[i]);
          if (rows[i].hidden !== hide) rows[i].hidden = hide;
        }
      }
    }
  }
  for (const id of ["trace-filter-kind", "trace-filter-key", "trace-filter-controller"]) {
    document.getElementById(id).addEventListener("input", () => filterRows("trace"));
  }
  document.getElementById("api-failed-only").addEventListener("change", () => filterRows("api"));

  // -- keys, like a debugger's ------------------------------------------------------------------------
  document.addEventListener("keydown", (ev) => {
    if (ev.target.closest("input, textarea, select") || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (window.CtrlscopePast && window.CtrlscopePast.key(ev)) { ev.preventDefault(); return; } // [ ] N > S End
    const keys = { n: "btn-event", ".": "btn-stage", s: "btn-sync", t: "btn-timer", i: "btn-idle" };
    if (ev.key === " ") {
      ev.preventDefault();
      const st = state.status;
      document.getElementById(st && st.mode !== "paused" ? "btn-pause" : "btn-run").click();
    } else if (keys[ev.key]) {
      ev.preventDefault();
      document.getElementById(keys[ev.key]).click();
    }
  });

  // The splitter between the panes and the drawer sets the drawer's height.
  (function splitter() {
    const bar = document.getElementById("splitter");
    let start = null;
    bar.addEventListener("mousedown", (ev) => {
      const tab = document.querySelector("#drawer > .tab:not([hidden])");
      start = { y: ev.clientY, h: tab ? tab.getBoundingClientRect().height : 300 };
      ev.preventDefault();
    });
    window.addEventListener("mousemove", (ev) => {
      if (!start) return;
      const h = Math.min(Math.max(start.h - (ev.clientY - start.y), 80), window.innerHeight * 0.8);
      document.documentElement.style.setProperty("--drawer", h + "px");
    });
    window.addEventListener("mouseup", () => { start = null; window.dispatchEvent(new Event("resize")); });
  })();

  showTab("tab-inspector");
  connect();
})();

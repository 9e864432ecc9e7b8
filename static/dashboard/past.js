// ctrlscope: the past on the page. The cursor is one state of the page: when it is set, every
// panel shows the world at that moment (the server replays the session to it and renders the
// panels with the live page's own templates), tinted, under a banner; live frames then only move
// the banner's live clock. Keys: [ and ] one second back and forward, shift+N / shift+. / shift+S
// one event / sync stage / sync back (n . s forward, in the past), End back to live.
"use strict";

(function () {
  const app = document.getElementById("app");
  const st = window.ctrlscope;
  if (!app || !st) return;
  const banner = document.getElementById("past-banner");
  const STEPS = { N: "event", ">": "stage", S: "sync" };
  // The same keys by position: shift+. is ">" on a US keyboard, ":" on a German one.
  const STEP_CODES = { KeyN: "event", Period: "stage", KeyS: "sync" };
  const FORWARD = ["event", "stage", "sync"];

  const past = {
    position: null, // {events, seq, time} of the moment shown
    asked: 0, // number of the latest request (older answers are dropped)
    shown: 0,
    // [{from, kind, to, live}]: where each forward step of this page came from, and where it landed
    // (`to`; `live`: the last step taken live, which landed on the present).
    undo: [],
    onLive: () => showBanner(),
    leave: () => exit(false),
    intercept,
  };

  const clock = (t) => window.CtrlscopeTime.format(t); // the page's one time format (time.js)

  function livePosition() {
    const status = st.status;
    return status && status.position ? status.position : null;
  }

  // The server's time limit for a replay is 60 s without progress (dashboard/host/past.py), and a
  // worker may first wait 30 s for a slot: the page waits longer than that for a word.
  const PAST_WAIT_MS = 120000;
  const SHOW_PROGRESS_AFTER_MS = 400; // a quick answer shows no progress at all

  // The replay in hand, on the status line: "computing t=10 s…", then how far it has come.
  function progress(number, target, msg) {
    if (number !== past.asked) return; // an older request: a newer one has the line
    const el = document.getElementById("st-result");
    const goal = target.at !== undefined ? ` of t=${clock(parseFloat(target.at))}` : target.t !== undefined ? ` of t=${clock(parseFloat(target.t))}` : "";
    el.classList.remove("ok", "bad");
    clearTimeout(el._t);
    el.dataset.past = String(number);
    if (!msg) el.textContent = "computing the past… (the server replays the session to that moment)";
    else if (msg.starting) el.textContent = "computing the past… starting the replay worker";
    else el.textContent = `computing the past… replayed to t=${clock(msg.time)}${goal} (${msg.events.toLocaleString("en-US")} events)`;
    el.title = el.textContent; // the status line is one line: the whole of it on hover
  }

  function progressDone(number) {
    const el = document.getElementById("st-result");
    if (el.dataset.past === String(number)) { el.textContent = ""; delete el.dataset.past; }
  }

  // Ask for a moment: {at} | {seq, t} | {events, t, exact} | {back|forward, from}.
  async function go(target, landed) {
    const number = ++past.asked;
    const focus = st.focus ? [st.focus] : [];
    const owner = window.CtrlscopeFocus && window.CtrlscopeFocus.current(); // the page's focus (focus.js)
    const slow = setTimeout(() => progress(number, target, null), SHOW_PROGRESS_AFTER_MS);
    const result = await st.command(
      Object.assign({ op: "past", focus, owner: owner ? [owner.controller, owner.key] : null }, target),
      { wait: PAST_WAIT_MS, onProgress: (msg) => progress(number, target, msg) },
    );
    clearTimeout(slow);
    progressDone(number);
    if (number < past.shown) return result; // a newer moment is already on the page
    if (number < past.asked && !result.ok) return result; // superseded by a newer request: it speaks
    if (result.ok && result.past) {
      past.shown = number;
      if (landed) landed.to = result.past.position; // where this page's forward step landed
      show(result.past);
    } else if (result.ok && result.live) {
      exit(true);
    } else {
      st.show.showResult(result);
    }
    return result;
  }

  function show(msg) {
    const state = msg.state;
    if (!st.past) enter();
    past.position = msg.position;
    moment();
    st.show.applyPanels(state.panels);
    for (const log of ["trace", "api", "events"]) {
      const body = document.getElementById("rows-" + log);
      body.innerHTML = state.rows[log] || "";
      if (log === "events" && window.ctrlscope.foldEvents) window.ctrlscope.foldEvents(body);
      st.show.filterRows(log);
      st.show.scrollDown(body, true);
    }
    window.CtrlscopePods && window.CtrlscopePods.reset(state.canvas);
    window.CtrlscopeTimeline && window.CtrlscopeTimeline.setCursor(msg.position.time);
    document.getElementById("st-time").textContent = clock(msg.position.time);
    document.getElementById("st-events").textContent = msg.position.events.toLocaleString("en-US");
    const next = state.status.next;
    document.getElementById("st-next").textContent = next ? `next timer t=${window.CtrlscopeTime.format(next.t)}: ${next.what}` : "no timer scheduled";
    showBanner();
  }

  function enter() {
    st.past = past;
    document.body.classList.add("in-past");
    banner.hidden = false;
  }

  // Back to live: the next full state repaints every panel with the present.
  function exit(resync) {
    if (!st.past) return;
    st.past = null;
    past.undo = []; // the past view's own steps: stepping back from live starts from the present
    past.position = null;
    past.shown = ++past.asked; // answers still on their way are for the past: drop them
    document.body.classList.remove("in-past");
    banner.hidden = true;
    window.CtrlscopeTimeline && window.CtrlscopeTimeline.setCursor(null);
    if (resync) st.resync();
    moment();
  }

  // Tell the other views (causes.js: the trace view, why?) that the moment shown changed.
  function moment() {
    document.dispatchEvent(new CustomEvent("ctrlscope:moment", { detail: past.position }));
  }

  function showBanner() {
    if (!st.past || !past.position) return;
    const live = st.status;
    document.getElementById("past-at").textContent = `t=${window.CtrlscopeTime.format(past.position.time)}`;
    document.getElementById("past-events").textContent = `event ${past.position.events.toLocaleString("en-US")}`;
    document.getElementById("past-live").textContent = live ? `t=${window.CtrlscopeTime.format(live.t)}` : "…";
  }

  function here() {
    if (past.position) return past.position;
    const live = livePosition();
    return live ? { events: live.events, seq: live.seq, time: live.time } : null;
  }

  function same(a, b) {
    return !!a && !!b && a.events === b.events && a.seq === b.seq && a.time === b.time;
  }

  function back(kind) {
    const top = past.undo[past.undo.length - 1];
    // The inverse of this page's own forward step, while the page stands where that step landed:
    // in the past, the moment its answer showed; live, a step taken live (it lands on the present).
    const undoes = top && top.kind === kind && (st.past ? same(top.to, past.position) : top.live);
    if (undoes) {
      // Exactly where it came from.
      past.undo.pop();
      return go({ events: top.from.events, t: top.from.time, exact: true });
    }
    past.undo = []; // stale: the page moved since (another step, a jump, the live session going on)
    const from = past.position ? { events: past.position.events, seq: past.position.seq, t: past.position.time } : null;
    return go({ back: kind, from });
  }

  function forward(kind) {
    const from = here();
    const step = { from, kind, to: null };
    if (from) past.undo.push(step);
    return go({ forward: kind, from: { events: from.events, seq: from.seq, t: from.time } }, step);
  }

  // Commands of the page while the past is shown: a step moves the cursor; run, pause, speed and
  // focus act as usual (the banner's live clock shows the live session going on); anything that
  // would change the world waits for live. Live, a step is remembered so that a step back undoes it.
  function intercept(cmd) {
    const step = cmd.op === "step" && FORWARD.includes(cmd.what) ? cmd.what : null;
    if (!st.past) {
      if (step && livePosition()) {
        const live = livePosition();
        const from = { events: live.events, seq: live.seq, time: live.time };
        const top = past.undo[past.undo.length - 1];
        if (top && top.live) { top.live = false; top.to = from; } // the last live step landed here
        past.undo.push({ from, kind: step, live: true });
      } else if (cmd.op === "run" || cmd.op === "step") {
        past.undo = [];
      }
      return false;
    }
    if (step) { forward(step); return true; }
    if (["run", "pause", "speed"].includes(cmd.op)) return false;
    if (cmd.op === "focus") {
      setTimeout(() => past.position && go({ events: past.position.events, t: past.position.time, exact: true }), 0);
      return false;
    }
    st.show.showResult({ ok: false, error: "viewing the past: press End (back to live) to change the world" });
    return true;
  }

  function nudge(seconds) {
    const from = here();
    if (!from) return;
    const live = livePosition();
    const t = Math.max(0, Math.round((from.time + seconds) * 1000) / 1000);
    past.undo = [];
    if (live && t >= live.time) { exit(true); return; }
    go({ at: t });
  }

  function key(ev) {
    if (ev.key === "End") { exit(true); return true; }
    if (ev.key === "[") { nudge(-1); return true; }
    if (ev.key === "]") { if (st.past) nudge(1); return true; }
    const kind = ev.shiftKey && (STEPS[ev.key] || STEP_CODES[ev.code]);
    if (kind) { back(kind); return true; }
    return false;
  }

  document.addEventListener("click", (ev) => {
    const jump = ev.target.closest("[data-jump-seq]");
    if (jump) {
      ev.preventDefault();
      past.undo = [];
      go({ seq: parseInt(jump.dataset.jumpSeq, 10), t: parseFloat(jump.dataset.jumpT) });
      return;
    }
    const backBtn = ev.target.closest("[data-back]");
    if (backBtn) { ev.preventDefault(); back(backBtn.dataset.back); return; }
    if (ev.target.closest("#past-to-live")) { ev.preventDefault(); exit(true); }
  });

  document.getElementById("view-at").addEventListener("submit", (ev) => {
    ev.preventDefault();
    past.undo = [];
    go({ at: ev.target.querySelector("input").value.trim() });
  });

  window.CtrlscopePast = {
    go: (target) => { past.undo = []; return go(target); },
    scrub: (t) => {
      const live = livePosition();
      if (live && t >= live.time) { exit(true); return null; }
      past.undo = [];
      return go({ at: Math.max(0, Math.round(t * 1000) / 1000) });
    },
    back,
    forward,
    key,
    intercept,
    toLive: () => exit(true),
    position: () => past.position,
  };
})();

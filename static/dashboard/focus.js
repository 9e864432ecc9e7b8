// ctrlscope: focus the whole page on one ReplicaSet or ReplicationController (#19 §3). A click
// on an owner's name (its card, its timeline lane, its group of tiles, a search result) focuses
// every panel on it until "✕ unfocus" or Esc: its tiles only, its lane only, its queue entries
// and expectations (filtered by the server before the lists are capped: the focused panels
// `queue-<controller>:<key>` and `expectations-<controller>:<key>`), its Events and API calls,
// and the inspector and cache vs truth on its key. The focus is the viewer's `focus` command's
// `owner` (the same per-viewer focus as the inspector's keys): it survives frames, resyncs and
// reconnects, and the address keeps it (#focus=controller|namespace/name) across a reload.
"use strict";

(function () {
  const st = window.ctrlscope;
  if (!st) return;
  // Each controller's name -> the kind it controls, from the controller registry (sim.html renders it in #app's data-controller-kinds).
  const KIND = JSON.parse(document.getElementById("app").dataset.controllerKinds);
  const chip = document.getElementById("focus-chip");
  const left = document.getElementById("left");
  let current = null; // {controller, key, owner: "Kind/name", namespace, name}

  // "Kind/name" (a lane, a group of tiles): the owners panel knows its controller and namespace.
  function focusOwner(owner) {
    const link = document.querySelector(`#owners article[data-owner="${CSS.escape(owner)}"] [data-focus]`);
    if (!link) {
      st.show.showResult({ ok: false, error: `focus: ${owner} is not listed among the ReplicaSets and ReplicationControllers` });
      return;
    }
    const [controller, key] = link.dataset.focus.split("|");
    focusKey(controller, key);
  }

  function focusKey(controller, key) {
    if (!KIND[controller] || key.split("/").length !== 2) return;
    const [namespace, name] = key.split("/");
    current = { controller, key, namespace, name, owner: window.CtrlscopePods.ownerLabel(KIND[controller], namespace, name) };
    st.setFocus(controller, key, true); // the inspector and cache vs truth on its key
    st.showController(controller); // its controller's column: workers, queue, expectations
    send();
    show();
  }

  function unfocus() {
    if (!current) return;
    current = null;
    send();
    show();
  }

  function send() {
    st.command({ op: "focus", owner: current ? [current.controller, current.key] : null });
    const hash = current ? `#focus=${encodeURIComponent(current.controller + "|" + current.key)}` : "";
    if (location.hash !== hash) history.replaceState(null, "", location.pathname + location.search + hash);
  }

  // The owners a focus shows: the owner and its children (a Deployment's ReplicaSets: the owner
  // cards that name it as their parent), so its tiles and lanes are theirs.
  function family(owner) {
    const children = [...document.querySelectorAll(`#owners article[data-parent="${CSS.escape(owner)}"]`)].map((a) => a.dataset.owner);
    return children.length ? [owner, ...children] : owner;
  }

  // The timeline groups each child's lane under its parent (from the owner cards).
  function parents() {
    const map = {};
    for (const card of document.querySelectorAll("#owners article[data-parent]")) map[card.dataset.owner] = card.dataset.parent;
    return map;
  }
  let lastParents = "";
  function syncFamilies() {
    const map = parents();
    const text = JSON.stringify(map);
    if (text === lastParents) return;
    lastParents = text;
    if (window.CtrlscopeTimeline) window.CtrlscopeTimeline.setParents(map);
    if (current) {
      const owner = family(current.owner);
      if (window.CtrlscopePods) window.CtrlscopePods.setOwner(owner);
      if (window.CtrlscopeTimeline) window.CtrlscopeTimeline.only(owner);
    }
  }

  // Everything the focus changes on the page, from what the page already holds.
  function show() {
    const owner = current ? family(current.owner) : null;
    if (window.CtrlscopePods) window.CtrlscopePods.setOwner(owner);
    if (window.CtrlscopeTimeline) window.CtrlscopeTimeline.only(owner);
    chip.hidden = !current;
    document.getElementById("focus-name").textContent = current ? `${current.key} (${KIND[current.controller]})` : "";
    document.body.classList.toggle("page-focused", !!current);
    markCard();
    // The queue and expectations panels: the focused variant if the page holds it already,
    // else the next frame brings it (the server builds it as soon as it hears of the focus).
    const again = {};
    for (const id of st.panels.keys()) if (/^(queue|expectations)-/.test(id) && target(id)) again[id] = st.panels.get(id);
    st.show.applyPanels(again);
    for (const log of ["events", "api", "trace"]) st.show.filterRows(log);
  }

  // The owner card of the focus stands out, the others are dimmed (the panel is the server's
  // HTML: the mark is put back whenever a frame replaces the card).
  function markCard() {
    left.toggleAttribute("data-focused", !!current);
    for (const card of left.querySelectorAll("#owners article.owner.focused")) {
      if (!current || card.dataset.owner !== current.owner) card.classList.remove("focused");
    }
    if (!current) return;
    const card = left.querySelector(`#owners article[data-owner="${CSS.escape(current.owner)}"]`);
    if (card && !card.classList.contains("focused")) {
      card.classList.add("focused");
      card.scrollIntoView({ block: "nearest" });
    }
  }
  new MutationObserver(() => { if (current) markCard(); syncFamilies(); }).observe(left, { childList: true, subtree: true });

  // Which element a panel goes to (live.js asks for every panel of a frame): a focused queue or
  // expectations panel takes the place of the one it filters while the page is focused on its
  // key, and is ignored otherwise (frames carry every viewer's focused panels). A moment of the
  // past is asked for with the focus (past.js), so its state has the focused panels too.
  function target(id) {
    const m = /^(queue|expectations)-([a-z]+)(?::(.+))?$/.exec(id);
    if (!m) return id;
    const base = `${m[1]}-${m[2]}`;
    const focusedHere = current && current.controller === m[2];
    if (m[3] === undefined) return focusedHere ? null : base;
    return focusedHere && m[3] === current.key ? base : null;
  }

  // A frame's new log rows for this page: focused, the Events and API calls the server picked
  // for the owner (`focusRows`, before the per-frame cap that everyone's rows have), so that a
  // busy world cannot crowd them out; the trace sample as everyone's.
  function frameRows(msg) {
    const rows = msg.rows || {};
    if (!current) return rows;
    const mine = (msg.focusRows || {})[`${current.controller}:${current.key}`] || {};
    const out = {};
    if (rows.trace) out.trace = rows.trace;
    if (mine.events) out.events = mine.events;
    if (mine.api) out.api = mine.api;
    return out;
  }

  // Rows of Events, API calls and the frames' trace sample that are not about the focus are
  // hidden (live.js asks for each row it shows).
  function rowHidden(log, row) {
    if (!current) return false;
    const { namespace, name, owner } = current;
    const pod = (ns, podName) => {
      const of = window.CtrlscopePods && window.CtrlscopePods.ownerOf(`${ns}/${podName}`);
      return of ? of === owner : ns === namespace && podName.startsWith(name + "-");
    };
    if (log === "events") {
      const object = row.cells[3] ? row.cells[3].textContent : "";
      const [kind, ns, objName] = object.split("/");
      if (kind === KIND[current.controller]) return !(ns === namespace && objName === name);
      return !(kind === "Pod" && pod(ns, objName || ""));
    }
    if (log === "api") {
      const resource = row.cells[3] ? row.cells[3].textContent : "";
      const [ns, objName] = (row.cells[4] ? row.cells[4].textContent : "").split("/");
      if (!objName) return true;
      if (resource.startsWith("pods")) return !pod(ns, objName);
      return !(resource.split("/")[0] === `${current.controller}s` && ns === namespace && objName === name);
    }
    if (log === "trace") {
      const subject = row.dataset.subject || "";
      if (subject === current.key) return false;
      const [ns, objName] = subject.split("/");
      return !(objName && pod(ns, objName));
    }
    return false;
  }

  rowHidden.active = () => !!current;
  st.extraFilters.push(rowHidden);

  chip.querySelector("button").addEventListener("click", unfocus);
  // A click on an owner's name focuses the page on it (live.js then shows its key in the
  // inspector, as before).
  document.addEventListener("click", (ev) => {
    const button = ev.target.closest("[data-owner-focus]"); // a pod's owner (the Pod tab)
    if (button) { focusOwner(button.dataset.ownerFocus); return; }
    const link = ev.target.closest("#owners a.owner-name[data-focus]");
    if (!link) return;
    const [controller, key] = link.dataset.focus.split("|");
    focusKey(controller, key);
  }, true);

  // Esc unfocuses, unless it closes something else first (the why? panel, the help, the
  // search's results). Capture: this looks before those close themselves on the same Esc.
  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape" || !current || ev.target.closest("input, textarea, select")) return;
    const overlay = ["why-panel", "help-overlay", "search-results"].some((id) => { const el = document.getElementById(id); return el && !el.hidden; });
    if (!overlay) unfocus();
  }, true);

  // A reconnect is a new connection: tell it the focus again (a resync keeps it).
  function onState() {
    if (current) st.command({ op: "focus", owner: [current.controller, current.key] });
  }

  // A reload keeps the focus (the address says it); it applies once the owners are known.
  const fromHash = /^#focus=(.+)$/.exec(location.hash);
  if (fromHash) {
    const [controller, key] = decodeURIComponent(fromHash[1]).split("|");
    if (KIND[controller] && key) {
      const [namespace, name] = key.split("/");
      current = { controller, key, namespace, name, owner: `${KIND[controller]}/${name}` };
      let tries = 0;
      const wait = setInterval(() => {
        if (++tries > 300) { clearInterval(wait); return; }
        if (st.seq === null || !document.querySelector("#owners [data-focus]")) return;
        clearInterval(wait);
        focusKey(controller, key);
      }, 100);
    }
  }

  window.CtrlscopeFocus = { focusOwner, focusKey, unfocus, target, rowHidden, frameRows, onState, current: () => current && { ...current } };
})();

// ctrlscope: `?` shows every key the page has (live.js, past.js, focus.js, search.js, causes.js);
// Esc closes it. No key acts while you type in a field (each handler checks the same way).
"use strict";

(function () {
  const overlay = document.getElementById("help-overlay");
  if (!overlay) return;
  const KEYS = [
    ["Time", [
      ["Space", "run at the chosen speed / pause"],
      ["n", "run one event (▸ event)"],
      [".", "run to the next sync stage (▸▸ stage)"],
      ["s", "run until a sync ends (▸| sync)"],
      ["t", "run to the next timer (» timer)"],
      ["i", "run until idle"],
    ]],
    ["The past", [
      ["shift+N", "step back one event (◂ event)"],
      ["shift+.", "step back one sync stage (◂◂ stage)"],
      ["shift+S", "step back over the last sync (|◂ sync)"],
      ["[  ]", "view the world one second earlier / later"],
      ["End", "back to live"],
    ]],
    ["Find and focus", [
      ["/", "search pods, owners and nodes by name or label selector (app=web,tier!=db)"],
      ["↑ ↓ Enter", "in the search: move through the results, pick one"],
      ["Esc", "close the search, the help or the why? panel; else unfocus the page"],
      ["?", "this help"],
    ]],
  ];

  const table = document.getElementById("help-keys");
  for (const [group, keys] of KEYS) {
    const head = table.insertRow();
    const th = document.createElement("th");
    th.colSpan = 2;
    th.textContent = group;
    head.appendChild(th);
    for (const [key, what] of keys) {
      const row = table.insertRow();
      row.dataset.key = key;
      const k = row.insertCell();
      for (const part of key.split(/\s+/)) {
        const kbd = document.createElement("kbd");
        kbd.textContent = part;
        k.append(kbd, " ");
      }
      row.insertCell().textContent = what;
    }
  }

  let before = null; // the element that had the keyboard before the help opened
  function open() {
    before = document.activeElement;
    overlay.hidden = false;
    document.getElementById("help-close").focus();
  }
  function close() {
    overlay.hidden = true;
    if (before && before.focus) before.focus();
  }

  document.getElementById("help-close").addEventListener("click", close);
  overlay.addEventListener("click", (ev) => { if (ev.target === overlay) close(); });
  // Capture: while the help is open, Esc closes it and no other key reaches the page.
  document.addEventListener("keydown", (ev) => {
    if (!overlay.hidden) {
      if (ev.key === "Escape" || ev.key === "?") { ev.preventDefault(); close(); }
      if (ev.key !== "Tab") ev.stopImmediatePropagation();
      return;
    }
    if (ev.key !== "?" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.target.closest("input, textarea, select")) return;
    ev.preventDefault();
    ev.stopImmediatePropagation();
    open();
  }, true);

  window.CtrlscopeHelp = { open, close, keys: () => KEYS.flatMap(([, keys]) => keys.map(([key]) => key)) };
})();

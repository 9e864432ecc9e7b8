// ctrlscope: find things at 10,000 pods (#19 §3). `/` focuses the search box: pods, owners and
// nodes by name or by label selector (`app=web,tier!=db`), answered by the server (`search`, a
// read: the core's own selector parser over the API server's objects). A result picked opens it:
// an owner focuses the page on it (focus.js), a node shows its pods' tiles only, a pod opens in
// the Pod tab with its tile selected; "show only these" keeps the tiles of every matching pod.
// The Events and API calls tabs have their own filters (object, reason, text; object, code,
// client), applied to the rows the page holds.
"use strict";

(function () {
  const st = window.ctrlscope;
  const input = document.getElementById("search");
  const box = document.getElementById("search-results");
  if (!st || !input) return;
  let timer = null;
  let asked = 0;
  let last = null; // the last answer shown

  function schedule() {
    clearTimeout(timer);
    const q = input.value.trim();
    if (!q) { close(); return; }
    timer = setTimeout(() => ask(q), 150);
  }

  async function ask(q) {
    const number = ++asked;
    const result = await st.command({ op: "search", q });
    if (number !== asked || input.value.trim() !== q) return; // a newer query is on its way
    show(result);
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function result(kind, label, detail, act) {
    const b = el("button", "result");
    b.dataset.kind = kind;
    b.type = "button";
    b.setAttribute("role", "option");
    b.append(el("span", "", label), el("span", "muted", detail));
    b.addEventListener("click", () => { act(); close(); });
    return b;
  }

  function section(title, total, shown) {
    box.appendChild(el("h4", "", total > shown ? `${title} · ${shown} of ${total.toLocaleString("en-US")}` : `${title} · ${total}`));
  }

  function show(r) {
    box.innerHTML = "";
    last = r;
    if (!r.ok) {
      box.appendChild(el("p", "bad", r.error));
      open();
      return;
    }
    const how = r.selector ? "label selector" : "name";
    if (!r.podsTotal && !r.ownersTotal && !r.nodesTotal) {
      box.appendChild(el("p", "muted", `Nothing matches ${how} “${r.q}”.`));
    }
    if (r.ownersTotal) {
      section("Owners", r.ownersTotal, r.owners.length);
      for (const o of r.owners) {
        box.appendChild(result("owner", o.owner, `${o.key} · focus`, () => window.CtrlscopeFocus && window.CtrlscopeFocus.focusKey(o.controller, o.key)));
      }
    }
    if (r.nodesTotal) {
      section("Nodes", r.nodesTotal, r.nodes.length);
      for (const n of r.nodes) {
        box.appendChild(result("node", n, "show its pods", () => window.CtrlscopePods.setNode(n)));
      }
    }
    if (r.podsTotal) {
      section("Pods", r.podsTotal, r.pods.length);
      const all = result("all", `show only these ${r.podsTotal.toLocaleString("en-US")} pods`, `${how} ${r.q}`, () => window.CtrlscopePods.setIds(r.ids, `${how} “${r.q}”`));
      box.appendChild(all);
      for (const p of r.pods) {
        box.appendChild(result("pod", p.key, [p.state, p.owner, p.node].filter(Boolean).join(" · "), () => {
          const [ns, name] = p.key.split("/");
          window.CtrlscopePods.clearSelection();
          window.CtrlscopePods.select([p.key]);
          st.openPod(ns, name);
        }));
      }
    }
    open();
  }

  function open() {
    // Fixed under the box: the status line clips what overflows it.
    const r = input.getBoundingClientRect();
    box.style.left = r.left + "px";
    box.style.top = r.bottom + 4 + "px";
    box.hidden = false;
  }

  function close() {
    box.hidden = true;
  }

  function results() {
    return [...box.querySelectorAll("button.result")];
  }

  input.addEventListener("input", schedule);
  input.addEventListener("focus", () => { if (last && input.value.trim()) open(); });
  input.addEventListener("keydown", (ev) => {
    const list = results();
    if (ev.key === "Escape") { ev.preventDefault(); ev.stopPropagation(); if (!box.hidden) close(); else input.blur(); return; }
    if (ev.key === "Enter") {
      ev.preventDefault();
      clearTimeout(timer);
      const q = input.value.trim();
      // The first owner, node or pod (not "show only these").
      const first = () => results().find((b) => b.dataset.kind !== "all");
      if (last && last.q === q && first()) first().click();
      else if (q) ask(q).then(() => { if (first()) first().click(); });
      return;
    }
    if (ev.key === "ArrowDown" && list.length) { ev.preventDefault(); list[0].focus(); }
  });
  box.addEventListener("keydown", (ev) => {
    const list = results();
    const i = list.indexOf(document.activeElement);
    if (ev.key === "ArrowDown") { ev.preventDefault(); (list[i + 1] || list[i]).focus(); }
    if (ev.key === "ArrowUp") { ev.preventDefault(); (i > 0 ? list[i - 1] : input).focus(); }
    if (ev.key === "Escape") { ev.preventDefault(); ev.stopPropagation(); close(); input.focus(); }
  });
  document.addEventListener("click", (ev) => {
    if (!box.hidden && !ev.target.closest("#search-box") && !ev.target.closest("#search-results")) close();
  });
  // `/` focuses the box (not while typing elsewhere).
  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "/" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.target.closest("input, textarea, select")) return;
    ev.preventDefault();
    input.focus();
    input.select();
  });

  // -- the Events and API calls filters ----------------------------------------------------------
  const fields = {
    events: [["events-q-object", 3], ["events-q-reason", 2], ["events-q-text", 4]],
    api: [["api-q-object", null], ["api-q-code", 5], ["api-q-client", 1]],
  };
  function values(log) {
    return fields[log].map(([id, cell]) => [document.getElementById(id).value.trim().toLowerCase(), cell, id]).filter(([v]) => v);
  }
  function rowHidden(log, row) {
    if (!fields[log]) return false;
    for (const [value, cell, id] of values(log)) {
      if (id === "api-q-object") {
        const text = `${row.cells[3].textContent} ${row.cells[4].textContent}`.toLowerCase();
        if (!text.includes(value)) return true;
      } else if (id === "api-q-code") {
        // 403, or 4xx for any client error
        const code = row.cells[5].textContent.trim().split(" ")[0];
        const pattern = new RegExp(`^${value.replace(/x/g, ".").replace(/[^0-9.]/g, "")}$`);
        if (!pattern.test(code) && !code.startsWith(value)) return true;
      } else if (!row.cells[cell] || !row.cells[cell].textContent.toLowerCase().includes(value)) {
        return true;
      }
    }
    return false;
  }
  rowHidden.active = (log) => !!fields[log] && values(log).length > 0;
  st.extraFilters.push(rowHidden);
  for (const log of Object.keys(fields)) {
    for (const [id] of fields[log]) {
      document.getElementById(id).addEventListener("input", () => {
        st.show.filterRows(log);
        const body = document.getElementById("rows-" + log);
        const shown = document.getElementById(log + "-shown");
        if (shown) shown.textContent = rowHidden.active(log) ? `${[...body.rows].filter((r) => !r.hidden).length} of ${body.rows.length} rows` : "";
      });
    }
  }

  window.CtrlscopeSearch = { ask, close, open };
})();

// Causes on the page: the why? panel (any [data-why-seq] opens the chain of causes of that trace
// record, rendered by the server) and the complete trace view (every record of the session,
// virtualised: only the rows in sight exist in the DOM, fetched by page from records.json, so a
// million rows scroll; filters narrow on the server; nothing is dropped). Times in both are
// past.js's "go to moment" links ([data-jump-seq]).
(function () {
  "use strict";
  const app = document.getElementById("app");
  if (!app) return;
  const SIM = app.dataset.sim;

  // -- why? ----------------------------------------------------------------------------------
  const panel = document.getElementById("why-panel");
  const body = document.getElementById("why-body");

  // The moment of the past the page shows (past.js), as the seq of its last record, or null
  // (live): the trace view and why? then show the session as it was then — nothing after it in
  // the trace, and a why? link after it marked "in the future".
  function upto() {
    const p = window.CtrlscopePast && window.CtrlscopePast.position();
    return p ? p.seq : null;
  }

  let shownWhy = null; // the seq whose chain the panel shows

  function why(seq) {
    shownWhy = seq;
    panel.hidden = false;
    body.innerHTML = '<p class="muted">asking why…</p>';
    const at = upto();
    fetch(`/sim/${SIM}/why/${encodeURIComponent(seq)}${at === null ? "" : `?upto=${at}`}`)
      .then((r) => r.text().then((t) => ({ ok: r.ok, t })))
      .then(({ ok, t }) => {
        if (ok) { body.innerHTML = t; return; }
        let message = t;
        try { message = JSON.parse(t).message || t; } catch (e) { /* plain text */ }
        body.textContent = "";
        const p = document.createElement("p");
        p.className = "bad";
        p.textContent = message;
        body.appendChild(p);
      });
  }

  document.addEventListener("click", (ev) => {
    const link = ev.target.closest("[data-why-seq]");
    if (link) { ev.preventDefault(); why(link.dataset.whySeq); return; }
    if (ev.target.closest("#why-close")) { ev.preventDefault(); panel.hidden = true; }
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !panel.hidden) panel.hidden = true;
  });
  // The cursor moved (or went back to live): an open why? is asked again for the new moment.
  document.addEventListener("ctrlscope:moment", () => {
    if (!panel.hidden && shownWhy !== null) why(shownWhy);
  });
  window.CtrlscopeCauses = { why };

  // -- the complete trace view ---------------------------------------------------------------
  const ROW = 20; // px: every row has this height (ctrlscope.css), so row i sits at i * ROW
  const PAGE = 200;
  const box = document.getElementById("trace-all");
  const spacer = document.getElementById("trace-all-spacer");
  const tbody = document.getElementById("trace-all-rows");
  const count = document.getElementById("trace-all-count");
  const follow = document.getElementById("trace-follow");
  const tab = document.getElementById("tab-trace");
  if (!box) return;
  const inputs = ["kind", "controller", "key", "name", "text"].map((f) => [f, document.getElementById(`trace-q-${f}`)]);
  let total = 0;
  let pages = new Map(); // page index -> rows (for the current filter)
  let filterKey = "";
  let inflight = new Set();
  let generation = 0;

  function query() {
    const q = new URLSearchParams();
    for (const [f, el] of inputs) if (el.value.trim()) q.set(f, el.value.trim());
    const at = upto();
    if (at !== null) q.set("upto", String(at));
    return q;
  }

  function fetchPage(index, force) {
    if (inflight.has(index) || (!force && pages.has(index))) return;
    const q = query();
    q.set("offset", String(index * PAGE));
    q.set("limit", String(PAGE));
    const gen = generation;
    inflight.add(index);
    fetch(`/sim/${SIM}/records.json?${q}`)
      .then((r) => r.json().then((j) => ({ ok: r.ok, j })))
      .then(({ ok, j }) => {
        inflight.delete(index);
        if (gen !== generation) return;
        if (!ok) { count.textContent = j.message || "error"; return; }
        pages.set(index, j.rows);
        setTotal(j.total, j);
        followEnd();
        draw();
      })
      .catch(() => inflight.delete(index));
  }

  function setTotal(n, page) {
    total = n;
    spacer.style.height = `${Math.max(total, 1) * ROW}px`;
    let words = `${total.toLocaleString()} record${total === 1 ? "" : "s"}`;
    if (page && page.first > 1) words += ` (kept from #${page.first})`;
    if (page && page.compactedBefore > page.first) words += ` · details compacted before #${page.compactedBefore}`;
    if (page && page.upto !== null && page.upto !== undefined) words += ` up to #${page.upto}, the moment viewed (none after it)`;
    count.textContent = words;
  }

  function cell(tr, cls, text) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }

  function rowEl(r) {
    const tr = document.createElement("tr");
    tr.dataset.seq = r.seq;
    tr.dataset.kind = r.kind;
    const t = cell(tr, "num t", "");
    const a = document.createElement("a");
    a.href = "#";
    a.className = "jump";
    a.dataset.jumpSeq = r.seq;
    a.dataset.jumpT = String(r.time);
    a.title = `see the world right after this record (#${r.seq})`;
    a.textContent = window.CtrlscopeTime.format(r.time); // the one time format (time.js)
    t.appendChild(a);
    const w = document.createElement("a");
    w.href = "#";
    w.className = "why";
    w.dataset.whySeq = r.seq;
    w.title = "why? the chain of causes of this record";
    w.textContent = "why?";
    t.appendChild(document.createTextNode(" "));
    t.appendChild(w);
    cell(tr, "kind k", r.kind);
    cell(tr, "c", r.controller);
    cell(tr, "s", r.subject);
    const d = cell(tr, "detail", r.text);
    d.title = `#${r.seq}${r.cause ? ` ← #${r.cause}` : ""} ${r.detail}`;
    return tr;
  }

  function draw() {
    if (tab.hidden) return;
    const first = Math.max(0, Math.floor(box.scrollTop / ROW) - 5);
    const shown = Math.ceil(box.clientHeight / ROW) + 10;
    const last = Math.min(total, first + shown);
    const rows = [];
    let missing = false;
    for (let i = first; i < last; i++) {
      const page = pages.get(Math.floor(i / PAGE));
      if (!page) { fetchPage(Math.floor(i / PAGE)); missing = true; continue; }
      const r = page[i % PAGE];
      if (r) rows.push(r);
      else if (page.length === PAGE) { fetchPage(Math.floor(i / PAGE) + 1); missing = true; }
      else { fetchPage(Math.floor(i / PAGE), true); missing = true; } // the page grew since it was fetched
    }
    // Rows still on their way: keep what is shown until they arrive (fetchPage draws again), so
    // the view never blinks empty while it follows the newest records onto a page not fetched yet.
    if (missing && inflight.size && tbody.rows.length) return;
    tbody.parentElement.style.top = `${first * ROW}px`;
    tbody.replaceChildren(...rows.map(rowEl));
  }

  function refresh() {
    if (tab.hidden) return;
    const key = query().toString();
    if (key !== filterKey) { filterKey = key; pages = new Map(); generation++; inflight = new Set(); }
    // The newest page again (it grows while the simulation runs); then draw where we are.
    const lastPage = Math.max(0, Math.floor(Math.max(total - 1, 0) / PAGE));
    fetchPage(lastPage, true);
    followEnd();
    draw();
  }

  // Following the newest record: the view moves to the end only once the page holding it is
  // here (else it fetches that page and stays where it is until then), so it moves in one step
  // and never stands on rows still on their way (an empty box, the old rows above it).
  function followEnd() {
    if (!follow.checked || !total) return;
    // The rows the view shows at the end (as draw() picks them), each page of them complete.
    const first = Math.max(0, total - Math.ceil(box.clientHeight / ROW) - 5);
    for (let index = Math.floor(first / PAGE); index * PAGE < total; index++) {
      const page = pages.get(index);
      if (!page || page.length < Math.min(PAGE, total - index * PAGE)) { fetchPage(index, !!page); return; }
    }
    box.scrollTop = Math.max(0, total * ROW - box.clientHeight);
  }

  box.addEventListener("scroll", () => {
    const atEnd = box.scrollTop + box.clientHeight >= total * ROW - ROW;
    if (!atEnd && follow.checked && document.activeElement === box) follow.checked = false;
    draw();
  });
  box.addEventListener("wheel", () => { follow.checked = follow.checked && false; }, { passive: true });
  // Another filter or moment: other records (refresh starts over, keeping the rows on screen
  // until the new ones arrive).
  for (const [, el] of inputs) el.addEventListener("input", refresh);
  follow.addEventListener("change", refresh);
  document.addEventListener("ctrlscope:moment", refresh);
  new MutationObserver(refresh).observe(tab, { attributes: true, attributeFilter: ["hidden"] });
  setInterval(refresh, 1000);
})();

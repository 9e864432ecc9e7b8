// ctrlscope: Edit an object as `kubectl edit` does (controlplane/session/edit.py). "edit" on an owner
// card or a pod (or the YAML tab's "Edit … open" form) opens the stored object in the YAML tab;
// "Review changes" asks the server for a dry run of the update and shows its diff; Apply sends
// the update (an action of the recording), refused with a 409 if the object changed since it was
// opened. "✕ stop editing" goes back to applying manifests.
"use strict";

(function () {
  const form = document.getElementById("yaml-form");
  if (!form) return;
  const text = document.getElementById("yaml-text");
  const out = document.getElementById("yaml-result");
  const bar = document.getElementById("edit-bar");
  const what = document.getElementById("edit-what");
  const rv = document.getElementById("edit-rv");
  const help = document.getElementById("yaml-help");
  const review = document.getElementById("edit-review");
  const diff = document.getElementById("edit-diff");
  const st = window.ctrlscope;
  const edit = { target: null };
  st.edit = edit;

  function say(ok, message) {
    out.classList.remove("ok", "bad");
    out.classList.add(ok ? "ok" : "bad");
    out.textContent = message;
  }

  function showDiff(body) {
    diff.textContent = "";
    const columns = document.getElementById("edit-columns");
    columns.classList.toggle("with-diff", !!body);
    if (!body) { diff.hidden = true; return; }
    for (const line of body.split("\n")) {
      const span = document.createElement("span");
      if (line.startsWith("+") && !line.startsWith("+++")) span.className = "add";
      else if (line.startsWith("-") && !line.startsWith("---")) span.className = "del";
      else if (line.startsWith("@@")) span.className = "hunk";
      span.textContent = line + "\n";
      diff.appendChild(span);
    }
    diff.hidden = false;
  }

  function setTarget(target) {
    edit.target = target;
    bar.hidden = review.hidden = !target;
    help.hidden = !!target;
    showDiff("");
    if (target) {
      what.textContent = `${target.kind} ${target.namespace ? target.namespace + "/" : ""}${target.name}`;
      rv.textContent = target.resourceVersion;
    }
  }

  async function open(kind, namespace, name) {
    const result = await st.command({ op: "edit", kind, namespace: namespace || null, name });
    st.showTab("tab-yaml");
    if (!result.ok) { say(false, result.error); return; }
    setTarget({ kind, namespace: result.namespace, name, resourceVersion: result.resourceVersion, original: result.yaml });
    text.value = result.yaml;
    say(true, "opened: change it, review, apply");
    text.focus();
  }

  function cmd(op) {
    const t = edit.target;
    return { op, kind: t.kind, namespace: t.namespace, name: t.name, resourceVersion: t.resourceVersion, original: t.original, text: text.value };
  }

  review.addEventListener("click", async () => {
    if (!edit.target) return;
    const result = await st.command(cmd("edit_preview"));
    if (!result.ok) { showDiff(""); say(false, result.error); return; }
    if (!result.valid) { showDiff(""); say(false, `${result.code} ${result.error}`); return; }
    showDiff(result.diff);
    const warned = (result.warnings || []).length ? ` · warnings: ${result.warnings.join("; ")}` : "";
    say(true, (result.changes ? "dry run: the update would change what the diff shows" : "dry run: the update would change nothing") + warned);
  });

  edit.apply = async () => {
    if (!st.control) { say(false, "read-only"); return; }
    const result = await st.command(cmd("edit_apply"));
    if (!result.ok) { say(false, `${result.code ? result.code + " " : ""}${result.error}`); return; }
    const stored = result.response && result.response[1] && result.response[1].metadata;
    say(true, `updated ${result.object || edit.target.name}${stored ? " (resourceVersion " + stored.resourceVersion + ")" : ""}`);
    setTarget(null);
  };

  document.getElementById("edit-cancel").addEventListener("click", () => { setTarget(null); out.textContent = ""; });

  document.addEventListener("click", (ev) => {
    const button = ev.target.closest("[data-edit]");
    if (!button) return;
    ev.preventDefault();
    const [kind, namespace, name] = button.dataset.edit.split("|");
    open(kind, namespace, name);
  });

  document.getElementById("edit-open").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const kind = f.kind.value;
    const clusterScoped = kind === "Node" || kind === "Namespace";
    open(kind, clusterScoped ? null : f.namespace.value.trim() || "default", f.name.value.trim());
  });
})();

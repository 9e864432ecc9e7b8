// The rollout panel's two forms (templates/dashboard/_rollout.html): *set image* and the image
// fault. Each becomes one action of the session's vocabulary, sent through the page's command
// path (window.ctrlscope.run), its answer (or a form error, before anything is sent) shown
// beside the form. The panel's buttons (pause, resume, restart, undo) carry their whole command
// in data-cmd, rendered by the server (dashboard/host/panels.rollout_commands).
(() => {
  "use strict";

  function formError(where, text) {
    where.classList.remove("ok");
    where.classList.add("bad");
    where.textContent = text;
    where.title = text;
  }

  // kubectl set image: a strategic merge patch of the one container (merged by name).
  function setImage(form, where) {
    const container = form.querySelector('[name="container"]').value;
    const image = form.querySelector('[name="image"]').value.trim();
    if (!container) return formError(where, "container: this Deployment's template has no container");
    if (!image) return formError(where, "image: required (a name like nginx:1.29)");
    if (/\s/.test(image)) return formError(where, `image: must not contain spaces (got "${image}")`);
    const target = JSON.parse(form.dataset.target);
    const body = { spec: { template: { spec: { containers: [{ name: container, image }] } } } };
    const request = { verb: "patch", ...target, patchType: "strategic", body };
    return window.ctrlscope.run({ op: "act", action: { request } }, where);
  }

  // config.imageFaults: image glob -> ErrImagePull | NeverReady (the kubelet's contract). A
  // config action replaces the whole mapping: the new fault joins those in force, which the
  // faults panel carries (rendered by the server with every action).
  function imageFault(form, where) {
    const glob = form.querySelector('[name="glob"]').value.trim();
    const fault = form.querySelector('[name="fault"]').value;
    if (!glob) return formError(where, "imageFaults: an image glob is required (nginx:bad, nginx:*)");
    const panel = document.querySelector("[data-image-faults]");
    let current = {};
    try { current = panel ? JSON.parse(panel.dataset.imageFaults) || {} : {}; } catch { current = {}; }
    const imageFaults = { ...current, [glob]: fault };
    return window.ctrlscope.run({ op: "act", action: { config: { imageFaults } } }, where);
  }

  document.addEventListener("submit", (ev) => {
    const form = ev.target.closest("form[data-rollout]");
    if (!form) return;
    ev.preventDefault();
    const where = form.closest(".rollout-actions").querySelector(".form-result");
    if (form.dataset.rollout === "image") setImage(form, where);
    else if (form.dataset.rollout === "imageFault") imageFault(form, where);
  });
})();

// ctrlscope: the "fork from here…" menu of the sim page. Opened while the page shows a moment of
// the past (past.js), it proposes that moment's time; opened live, now (an empty field). A time
// the user typed is left alone. The form itself is a plain POST (fork_views.sim_fork).
"use strict";

(function () {
  const menu = document.getElementById("fork-menu");
  if (!menu) return;
  const input = menu.querySelector("input[name=at]");
  const hint = menu.querySelector(".fork-at-hint");

  // Seconds as the form takes them (at most 9 decimals), without float noise.
  function seconds(t) {
    return t.toFixed(9).replace(/\.?0+$/, "");
  }

  menu.addEventListener("toggle", () => {
    if (!menu.open) return;
    const st = window.ctrlscope;
    const position = st && st.past && st.past.position;
    const typed = input.value.trim() !== "" && input.dataset.proposed !== input.value;
    if (typed) return;
    if (position) {
      input.value = input.dataset.proposed = seconds(position.time);
      hint.textContent = "the moment viewed (the end of that instant)";
    } else {
      input.value = "";
      delete input.dataset.proposed;
      hint.textContent = "";
    }
  });
})();

// ctrlscope: the page's one way to write virtual time, the same as the `secs` template filter
// (dashboard/templatetags/ctrlscope.py, `vtime`): `42.105 s` below a minute, `3:04.567` below an
// hour, `1:03:04.567` below a day, then `2d 03:04:05.678`. Rounded once, before splitting.
"use strict";

window.CtrlscopeTime = (function () {
  const pad = (n) => String(n).padStart(2, "0");

  function format(t, places = 3) {
    if (t === null || t === undefined || Number.isNaN(t)) return "—";
    if (!Number.isFinite(t)) return t > 0 ? "∞" : "-∞";
    const sign = t < 0 ? "-" : "";
    const scale = 10 ** places;
    const units = Math.round(Math.abs(t) * scale);
    const whole = Math.floor(units / scale);
    const tail = places ? "." + String(units % scale).padStart(places, "0") : "";
    if (whole < 60) return `${sign}${whole}${tail} s`;
    const s = whole % 60, m = Math.floor(whole / 60) % 60, h = Math.floor(whole / 3600) % 24, d = Math.floor(whole / 86400);
    if (whole < 3600) return `${sign}${m}:${pad(s)}${tail}`;
    if (whole < 86400) return `${sign}${h}:${pad(m)}:${pad(s)}${tail}`;
    return `${sign}${d}d ${pad(h)}:${pad(m)}:${pad(s)}${tail}`;
  }

  return { format };
})();

"""The one way to write virtual time (issue #19 §2): `42.105 s` below a minute, `3:04.567` below
an hour, `1:03:04.567` below a day, `2d 03:04:05.678` beyond. The session's messages (why a run
stopped, what a breakpoint saw), the dashboard's `secs` template filter and
static/dashboard/time.js all write this."""

from __future__ import annotations

import math
from typing import Any


def vtime(value: Any, places: int = 3) -> str:
    """Virtual seconds in the page's one time format (static/dashboard/time.js writes the same):
    `42.105 s` below a minute, `3:04.567` below an hour, `1:03:04.567` below a day, then
    `2d 03:04:05.678`. `places` decimals (3: milliseconds, what the host rounds to); rounded
    once, before splitting, so 59.9996 reads `1:00.000`, never `0:60.000`."""
    if value is None:
        return "—"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number):
        return "∞" if number > 0 else ("-∞" if number < 0 else "—")
    sign = "-" if number < 0 else ""
    scale = 10**places
    units = round(abs(number) * scale)
    whole, frac = divmod(units, scale)
    tail = f".{frac:0{places}d}" if places else ""
    if whole < 60:
        return f"{sign}{whole}{tail} s"
    minutes, seconds = divmod(whole, 60)
    if minutes < 60:
        return f"{sign}{minutes}:{seconds:02d}{tail}"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{sign}{hours}:{minutes:02d}:{seconds:02d}{tail}"
    days, hours = divmod(hours, 24)
    return f"{sign}{days}d {hours:02d}:{minutes:02d}:{seconds:02d}{tail}"

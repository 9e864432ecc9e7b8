"""Template helpers: times to the millisecond, commands as JSON attributes, pod state names."""

from __future__ import annotations

import json
import math
from typing import Any

from django import template

from controlplane.nodes import POD_STATES

register = template.Library()


@register.filter
def secs(value: Any) -> str:
    """Seconds with millisecond precision: 12.345 s."""
    if value is None:
        return "—"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number):
        return "∞" if number > 0 else str(number)
    return f"{number:.3f}"


@register.filter
def clock(value: Any) -> str:
    """Virtual time as h:mm:ss.mmm."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "—"
    millis = round(number * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, ms = divmod(rest, 1000)
    return f"{hours}:{minutes:02d}:{seconds:02d}.{ms:03d}"


@register.filter
def tojson(value: Any) -> str:
    """JSON for an HTML attribute (autoescaping quotes it)."""
    return json.dumps(value, separators=(",", ":"), default=str)


@register.simple_tag
def cmd(op: str, **fields: Any) -> str:
    """`data-cmd` of a control: `{% cmd "step" what="event" %}`; with `verb=`, an action:
    `{% cmd "act" verb="sync" controller=c key=k %}` → {"op":"act","action":{"sync":{...}}}."""
    verb = fields.pop("verb", None)
    if verb is not None:
        body = {k: v for k, v in fields.items() if v is not None and v != ""}
        return json.dumps({"op": op, "action": {verb: body}}, separators=(",", ":"))
    return json.dumps({"op": op, **fields}, separators=(",", ":"))


@register.filter
def state_name(index: Any) -> str:
    try:
        return POD_STATES[int(index)]
    except (TypeError, ValueError, IndexError):
        return str(index)


@register.filter
def get(mapping: Any, key: Any) -> Any:
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def pct(value: Any, total: Any) -> float:
    try:
        return 0.0 if not total else min(100.0, 100.0 * float(value) / float(total))
    except (TypeError, ValueError):
        return 0.0

"""Template helpers: times in one format (`format_vtime`), commands as JSON attributes, pod state names."""

from __future__ import annotations

import json
from typing import Any

from django import template

from controlplane.simulation import POD_STATES, format_vtime

register = template.Library()


@register.filter
def secs(value: Any) -> str:
    """A time or a duration in virtual seconds, in the one format (`format_vtime`): `12.345 s`,
    `3:04.567`, `2d 03:04:05.678`. Templates write no unit after it."""
    return format_vtime(value)


@register.filter
def clock(value: Any) -> str:
    """The virtual clock of a session (the home page's lists): the same format as `secs`."""
    try:
        return format_vtime(float(value))
    except (TypeError, ValueError):
        return "—"


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

"""The rows of the three live logs (Trace, API calls, Events) as HTML, written directly.

Every frame carries up to `frames.ROWS_PER_FRAME` new rows of each log. Rendered through Django
templates they were the largest part of a frame's cost (5-15 ms for 30 rows of one log, most of
it the template engine's per-variable machinery), paid again with every frame a saturated
simulation sends; written here with `escape` they cost a few hundredths of that, and each value
is escaped exactly as a template would (`None` reads "None", a missing field reads "").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from html import escape  # what django.utils.html.escape calls, without its lazy-string wrapper
from typing import Any

from dashboard.templatetags.ctrlscope import secs as _template_secs

Obj = dict[str, Any]

_MISSING = object()


def _v(row: Obj, key: str) -> str:
    """A value as a template's `{{ row.key }}` writes it: escaped text, "" when it is absent."""
    value = row.get(key, _MISSING)
    return "" if value is _MISSING else escape(str(value))


def _t(value: Any) -> str:
    """A time for a data attribute (`stringformat:'r'`): exact, so the page can jump to it."""
    return escape(repr(value))


def _secs(value: Any) -> str:
    """A time in the one format, as the templates' `secs` filter writes it."""
    return escape(str(_template_secs(value)))


# The rows' tooltips (the jump link's, why?'s, an Event's count) are written by the page when the
# pointer first reaches one (static/dashboard/live.js, `rowTip`), not sent with every row: they
# were a third of a row's bytes, and rows half of a busy frame's.
_WHY = '<a href="#" class="why" data-why-seq="{seq}">why?</a>'


def trace_rows(rows: Iterable[Obj]) -> str:
    """Rows of `controlplane.simulation.trace_row` (text=False)."""
    out = []
    for r in rows:
        seq, t = _v(r, "seq"), _t(r.get("time"))
        out.append(
            f'<tr data-kind="{_v(r, "kind")}" data-controller="{_v(r, "controller")}" '
            f'data-subject="{_v(r, "subject")}" data-seq="{seq}" data-t="{t}"><td class="num">'
            f'<a href="#" class="jump" data-jump-seq="{seq}" data-jump-t="{t}">{_secs(r.get("time"))}</a> '
            f"{_WHY.format(seq=seq)}</td>"
            f'<td class="kind">{_v(r, "kind")}</td><td>{_v(r, "controller")}</td><td>{_v(r, "subject")}</td>'
            f'<td class="detail">{_v(r, "detail")}</td></tr>\n'
        )
    return "".join(out)


def api_rows(rows: Iterable[Obj]) -> str:
    """Rows of `FrameBuilder.api_row`: one API call, its answer and latency."""
    out = []
    for r in rows:
        seq, at = _v(r, "seq"), _t(r.get("at"))
        code = r.get("code")
        failed = "failed" if isinstance(code, int) and code >= 400 else ""
        name = f"{_v(r, 'namespace')}/" if r.get("namespace") else ""
        name += escape(str(r.get("name") or ""))
        reason = f" {_v(r, 'reason')}" if r.get("reason") else ""
        out.append(
            f'<tr class="{failed}" data-code="{_v(r, "code")}" data-seq="{seq}" data-t="{at}"><td class="num">'
            f'<a href="#" class="jump" data-jump-seq="{seq}" data-jump-t="{at}">{_secs(r.get("time"))}</a> '
            f"{_WHY.format(seq=seq)}</td>"
            f"<td>{_v(r, 'client')}</td><td>{_v(r, 'verb')}</td><td>{_v(r, 'resource')}</td><td>{name}</td>"
            f'<td class="num">{_v(r, "code")}{reason}</td><td class="num">{_secs(r.get("latency"))}</td></tr>\n'
        )
    return "".join(out)


_NOT_SENT = (
    "not posted: the Event correlator's spam filter (per source and object, a burst of 25, then one "
    "per 5 minutes); the Event's count still includes it"
)


def event_rows(rows: Iterable[Obj]) -> str:
    """Rows of `event` records (Kubernetes Events as recorded): each occurrence with the Event it
    counts into (`data-event`: the page keeps one row per Event) and that Event's count."""
    out = []
    for r in rows:
        seq, t = _v(r, "seq"), _t(r.get("time"))
        dropped = r.get("sent") == "dropped"
        classes = " ".join(
            c for c in ("warning" if r.get("type") == "Warning" else "", "dropped" if dropped else "") if c
        )
        event = f' data-event="{_v(r, "name")}"' if r.get("name") else ""
        message = (
            f'<td title="{_NOT_SENT}">{_v(r, "message")} (not sent)</td>' if dropped else f"<td>{_v(r, 'message')}</td>"
        )
        out.append(
            f'<tr class="{classes}" data-seq="{seq}" data-t="{t}"{event}><td class="num">'
            f'<a href="#" class="jump" data-jump-seq="{seq}" data-jump-t="{t}">{_secs(r.get("time"))}</a> '
            f"{_WHY.format(seq=seq)}</td>"
            f"<td>{_v(r, 'type')}</td><td>{_v(r, 'reason')}</td><td>{_v(r, 'object')}</td>"
            f'{message}<td class="num count">{_v(r, "count")}</td><td>{_v(r, "component")}</td></tr>\n'
        )
    return "".join(out)


RENDER: dict[str, Callable[[Iterable[Obj]], str]] = {"trace": trace_rows, "api": api_rows, "events": event_rows}

"""Fork from here (docs/time-travel.md#fork-from-here): `GET /sim/<id>/fork` is the form (prefilled
from `?at=&change=`), `POST /sim/<id>/fork` makes the fork — the running session's past up to
`at` (empty: now), then its own future from the optional `change` — and opens it: beside its
original on the compare page (`compare`, on unless unchecked), or alone.

Like every view, this one never holds a simulation: the original's host makes the fork
(`{"op": "fork"}` on its channel, dashboard.host.forks), so the two run in one process and the
compare page can drive them in lock-step. Bad input — a time that is not one of the session's
past, a change that is not YAML or names a bad field — is a form error (400) and creates
nothing; a stopped session is a 409; no access token, 403.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from dashboard import host
from dashboard.access import can_control
from dashboard.host.forks import FORK_TIMEOUT, MAX_CHANGE, ForkError, parse_change
from dashboard.models import Recording, SimulationRecord
from dashboard.views import AT, _answers_busy, _error

Obj = dict[str, Any]


def fork_time(raw: str) -> float | None:
    """The form's `at`: None for now (empty, or `now`); else seconds as the page writes them.
    ForkError naming `at` otherwise (whether it is in the past is the host's to say)."""
    raw = raw.strip()
    if raw in ("", "now"):
        return None
    if raw.startswith("-") and AT.match(raw[1:]):
        raise ForkError("at: must be >= 0 (a virtual time of this session's past, or empty for now)")
    if not AT.match(raw):
        raise ForkError(f"at: must be a number of seconds, like 42.105, or empty for now (got {raw[:40]!r})")
    return float(raw)


def _compare(data: Any) -> bool:
    """The checkbox, on by default: the form sends `compare=0` then, when checked, `compare=1`
    (the last one counts); a client that sends neither gets the default."""
    values = data.getlist("compare")
    return not values or values[-1] in ("1", "on", "true", "yes")


def _page(request: HttpRequest, record: SimulationRecord, form: Obj, status: int = 200) -> HttpResponse:
    context = {"record": record, "sim_id": record.id, "form": form, "control": can_control(request)}
    return render(request, "dashboard/fork.html", context, status=status)


@sync_to_async
def _session(sim_id: str) -> SimulationRecord | Recording | None:
    """The running session, else its recording (stopped, or waiting to be restored), else None."""
    record = SimulationRecord.alive().filter(id=sim_id).first()
    if record is not None:
        return record
    return Recording.objects.filter(id=sim_id).first()


@require_http_methods(["GET", "HEAD", "POST"])
@_answers_busy
async def sim_fork(request: HttpRequest, sim_id: str) -> HttpResponse:
    """GET: the fork form. POST (CSRF, access token): fork at `at` with `change`; open the fork
    beside its original (`compare`) or alone."""
    safe = request.method in ("GET", "HEAD")
    data = request.GET if safe else request.POST
    form: Obj = {
        "at": data.get("at", "")[:40],
        "change": data.get("change", "")[: MAX_CHANGE + 1],
        "compare": _compare(data),
        "errors": [],
    }
    session = await _session(sim_id)
    if session is None:
        raise Http404(f"no simulation {sim_id} is running or recorded")
    control = await sync_to_async(can_control)(request)
    if not safe and not control:
        return await sync_to_async(_error)(request, 403, "read-only: open the dashboard with its access token to fork")
    if isinstance(session, Recording):
        state = "stopped" if session.state == Recording.STOPPED else "not running in any server process"
        message = f"simulation {sim_id} is {state}: re-open it from the home page first, then fork it"
        return await sync_to_async(_error)(request, 409, message)
    if safe:
        return await sync_to_async(_page)(request, session, form)
    at: float | None = None
    change: Obj | None = None
    try:
        at = fork_time(form["at"])
    except ForkError as exc:
        form["errors"].append(str(exc))
    try:
        change = parse_change(form["change"])
    except ForkError as exc:
        form["errors"].append(str(exc))
    if form["errors"]:
        return await sync_to_async(_page)(request, session, form, 400)
    try:
        result = await host.request(
            sim_id, {"op": "fork", "at": at, "change": change}, control=True, timeout=FORK_TIMEOUT
        )
    except host.NoAnswer as silent:
        result = {"ok": False, "error": f"{silent}: it is busy; try again"}
    except LookupError as exc:
        raise Http404(str(exc)) from None
    if not result.get("ok"):
        form["errors"].append(str(result.get("error", "the session could not be forked")))
        return await sync_to_async(_page)(request, session, form, 400)
    fork_id = str(result["id"])
    if form["compare"]:
        return HttpResponseRedirect(reverse("compare-open") + "?" + urlencode({"a": sim_id, "b": fork_id}))
    return redirect("sim", sim_id=fork_id)

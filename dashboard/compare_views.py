"""The compare page (docs/compare.md): one scenario under two configurations, or any two running
simulations, side by side. Like every view, these never hold a simulation: they start sessions
through the host and send the pair's commands to simulation A's channel (`{"op": "pair"}`,
dashboard.host.pairs), which drives both in lock-step virtual time.

Bad input — a config block that is not YAML or names a bad field, a bad seed, an unknown
scenario — is a form error (400) and starts nothing; a bad pair command is a 400 with its one line.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from controlplane.simulation import ScenarioError, check_seed, default_pair, load_file, parse_block, with_config
from dashboard import host
from dashboard.access import can_control
from dashboard.models import Recording, SimulationRecord
from dashboard.views import _answers_busy, _error, _record, chosen_scenario, scenario_library

Obj = dict[str, Any]
MAX_FIELD = 4096  # characters of a config block typed in the form
PICKS = 9  # pods-over-time columns on the page
STATUS_SHOWN = 12  # the latest status tuples per owner on the page (the JSON summary keeps more)


def block_text(block: Obj) -> str:
    """A config block as the one-line YAML flow mapping the form and the CLI take."""
    return json.dumps(block, separators=(", ", ": ")) if block else "{}"


def _new(request: HttpRequest, form: Obj, status: int = 200) -> HttpResponse:
    context = {
        "form": form,
        "scenarios": scenario_library(),
        "sims": list(SimulationRecord.alive()),
        "control": can_control(request),
    }
    return render(request, "dashboard/compare_new.html", context, status=status)


@require_http_methods(["GET", "HEAD", "POST"])
async def compare_new(request: HttpRequest) -> HttpResponse:
    """GET: the form, prefilled from `?scenario=ID&seed=N&a=YAML&b=YAML` (a lesson link). POST:
    start A and B (the scenario with each block merged over its config) and open the pair.
    A block not given is the library scenario's own `compare` block (a lesson), else the
    default pair (v1.5 against v1.36)."""
    control = await sync_to_async(can_control)(request)
    safe = request.method in ("GET", "HEAD")
    data = request.GET if safe else request.POST
    chosen = data.get("scenario", "")
    lesson = load_file(chosen) if chosen in {s["id"] for s in scenario_library()} else None
    defaults = default_pair(lesson)
    labels = [lesson.compare[side]["label"] if lesson and lesson.compare else "" for side in ("a", "b")]
    form: Obj = {
        "scenario": chosen,
        "seed": data.get("seed", ""),
        "a": data.get("a", block_text(defaults[0]))[: MAX_FIELD + 1],
        "b": data.get("b", block_text(defaults[1]))[: MAX_FIELD + 1],
        "labels": labels,
        "run": bool(data.get("run")) if not safe else data.get("run", "1") != "0",
        "errors": [],
    }
    if safe:
        return await sync_to_async(_new)(request, form)
    if not control:
        form["errors"].append("Open the dashboard with its access token to start simulations.")
        return await sync_to_async(_new)(request, form, 403)
    seed: int | None = None
    if form["seed"].strip():
        try:
            seed = check_seed(form["seed"])
        except ScenarioError as exc:
            form["errors"].append(str(exc))
    blocks: list[Obj] = []
    for side in ("a", "b"):
        try:
            if len(form[side]) > MAX_FIELD:
                raise ScenarioError(f"--{side}: longer than {MAX_FIELD} characters")
            blocks.append(parse_block(form[side], side))
        except ScenarioError as exc:
            form["errors"].append(f"config {side.upper()}: {str(exc).removeprefix(f'--{side}: ')}")
    scenario, source = chosen_scenario(form, request.FILES.get("file"))
    if form["errors"] or scenario is None:
        return await sync_to_async(_new)(request, form, 400)
    the_host = host.get_host()
    tag = secrets.token_hex(3)
    base = "".join(c if c.isalnum() else "-" for c in source.lower()).strip("-")[:40] or "compare"
    started = []
    try:
        for letter, block in zip(("a", "b"), blocks, strict=True):
            hosted = await the_host.start_simulation(
                with_config(scenario, block), seed=seed, source=source, sim_id=f"{base}-{letter}-{tag}"
            )
            started.append(hosted.id)
    except (ScenarioError, host.HostError) as exc:
        for sim_id in started:  # nothing started: the half of a pair is stopped again
            await the_host.stop_simulation(sim_id)
        form["errors"].append(str(exc))
        return await sync_to_async(_new)(request, form, 400)
    a_id, b_id = started
    if form["run"]:
        await host.request(a_id, {"op": "pair", "other": b_id, "do": "run", "speed": 1.0}, control=True)
    return redirect("compare", a_id=a_id, b_id=b_id)


@require_safe
async def compare_open(request: HttpRequest) -> HttpResponse:
    """`?a=ID&b=ID`: open two running simulations side by side."""
    a_id, b_id = request.GET.get("a", ""), request.GET.get("b", "")
    if not a_id or not b_id or a_id == b_id:
        return await sync_to_async(_error)(request, 400, "a and b: choose two different running simulations")
    await _record(a_id)
    await _record(b_id)
    return redirect("compare", a_id=a_id, b_id=b_id)


async def _view(a_id: str, b_id: str) -> Obj:
    await _record(a_id)
    await _record(b_id)
    try:
        result = await host.request(a_id, {"op": "pair", "other": b_id, "do": "view"})
    except host.NoAnswer:
        raise  # 503 (`_answers_busy`): the session exists, its host is busy
    except LookupError as exc:
        raise Http404(str(exc)) from None
    if not result.get("ok"):
        raise Http404(str(result.get("error", "the pair is not available")))
    view: Obj = result["view"]
    view["sides"] = [view["a"], view["b"]]
    view["forks"], view["fork_mark"] = await _forks(a_id, b_id, view["timeline"])
    view["pods_table"] = _pods_table(view["summary"].get("pods") or {})
    view["status_rows"] = _status_rows(view["summary"].get("status") or {})
    return view


@sync_to_async
def _fork_notes(a_id: str, b_id: str) -> dict[str, tuple[str, float]]:
    rows = Recording.objects.filter(id__in=(a_id, b_id)).exclude(parent="").values_list("id", "parent", "forked_at")
    return {sim_id: (parent, float(at or 0.0)) for sim_id, parent, at in rows}


async def _forks(a_id: str, b_id: str, timeline: Obj) -> tuple[list[Obj], Obj | None]:
    """The `fork` notes of A and B from their recordings (docs/time-travel.md#fork-from-here): for
    each side that is a fork, its parent and T; and, when one side is a fork of the other, the
    mark on the shared timeline at T, where the fork's history separates from its parent's."""
    notes = await _fork_notes(a_id, b_id)
    letters = {a_id: "A", b_id: "B"}
    out, mark = [], None
    for sim_id in (a_id, b_id):
        if sim_id not in notes:
            continue
        parent, at = notes[sim_id]
        note = {"letter": letters[sim_id], "parent": parent, "parent_letter": letters.get(parent), "at": at}
        out.append(note)
        if note["parent_letter"] is not None and mark is None:
            x = timeline["width"] * min(at / timeline["end"], 1.0)
            # The ⎇ sits beside the line (a ▲ of the first divergence is often right on it).
            left = x >= 20.0
            mark = {
                **note,
                "x": round(x, 1),
                "label_x": round(x - 6 if left else x + 6, 1),
                "anchor": "end" if left else "start",
            }
    return out, mark


def _pods_table(pods: Obj) -> Obj:
    times = pods.get("times") or []
    n = len(times)
    picks = list(range(n)) if n <= PICKS else sorted({round(i * (n - 1) / (PICKS - 1)) for i in range(PICKS)})
    rows = []
    for name, series in (("total", pods.get("total")), *(pods.get("owners") or {}).items()):
        if not series:
            continue
        cells = [{"a": series["a"][i], "b": series["b"][i]} for i in picks]
        rows.append({"name": name, "cells": cells, "differs": any(c["a"] != c["b"] for c in cells)})
    return {"times": [times[i] for i in picks], "rows": rows}


def _status_rows(status: Obj) -> list[Obj]:
    out = []
    for owner, sides in status.items():
        shown = {side: sides[side][-STATUS_SHOWN:] for side in ("a", "b")}
        length = max(len(shown["a"]), len(shown["b"]))
        rows = [
            {"cells": [shown[side][i] if i < len(shown[side]) else None for side in ("a", "b")]} for i in range(length)
        ]
        earlier = max(len(sides["a"]), len(sides["b"])) - length
        out.append({"owner": owner, "rows": rows, "earlier": earlier})
    return out


@require_safe
@_answers_busy
async def compare_page(request: HttpRequest, a_id: str, b_id: str) -> HttpResponse:
    view = await _view(a_id, b_id)
    context = {"a_id": a_id, "b_id": b_id, "view": view, "control": await sync_to_async(can_control)(request)}
    return await sync_to_async(render)(request, "dashboard/compare.html", context)


@require_safe
@_answers_busy
async def compare_view(request: HttpRequest, a_id: str, b_id: str) -> HttpResponse:
    """Both worlds and the summary, as the page's partial (htmx polls it about once a second)."""
    view = await _view(a_id, b_id)
    context = {"a_id": a_id, "b_id": b_id, "view": view, "control": await sync_to_async(can_control)(request)}
    return await sync_to_async(render)(request, "dashboard/_compare_view.html", context)


@require_POST
@_answers_busy
async def compare_control(request: HttpRequest, a_id: str, b_id: str) -> HttpResponse:
    """One toolbar command for both worlds: `do` = run (`speed`), pause, speed, to (`t`), event."""
    await _record(a_id)
    await _record(b_id)
    if not await sync_to_async(can_control)(request):
        return await sync_to_async(_error)(request, 403, "read-only: open the dashboard with its access token")
    cmd: Obj = {"op": "pair", "other": b_id, "do": request.POST.get("do", "")}
    if "speed" in request.POST:
        speed = request.POST["speed"]
        cmd["speed"] = speed if speed == "max" else speed[:20]
    if "t" in request.POST:
        cmd["t"] = request.POST["t"][:40]
    try:
        result = await host.request(a_id, cmd, control=True)
    except host.NoAnswer:
        raise  # 503 (`_answers_busy`): the session exists, its host is busy
    except LookupError as exc:
        raise Http404(str(exc)) from None
    if not result.get("ok"):
        message = str(result.get("error", "bad request"))
        return await sync_to_async(render)(
            request, "dashboard/_compare_message.html", {"message": message, "bad": True}, status=400
        )
    if request.htmx:  # type: ignore[attr-defined]
        return await sync_to_async(render)(request, "dashboard/_compare_message.html", {"message": "", "bad": False})
    return redirect(reverse("compare", kwargs={"a_id": a_id, "b_id": b_id}))

"""Pages and the few HTTP endpoints of the dashboard. Views never hold a simulation: they read
the registry (`SimulationRecord`) and ask the host through the channel layer (`host.request`)."""

from __future__ import annotations

import functools
import math
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from controlplane.scenario import SCENARIO_DIR, ScenarioError, library, load_file, load_scenario
from dashboard import host
from dashboard.access import can_control
from dashboard.models import SimulationRecord

MAX_SCENARIO_BYTES = 1024 * 1024  # an uploaded scenario file


def scenario_library() -> list[dict[str, str]]:
    """The shipped scenarios, read once (and again when a file in the library changes)."""
    stamp = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in SCENARIO_DIR.iterdir() if p.suffix == ".yaml"))
    return _library(stamp)


@functools.lru_cache(maxsize=4)
def _library(stamp: tuple[Any, ...]) -> list[dict[str, str]]:
    return library()


def _error(request: HttpRequest, status: int, message: str, *, partial: bool = False) -> HttpResponse:
    """An error as a template (autoescaped): a whole page, or (`partial`) the escaped message alone
    for the fragments the sim page inserts as HTML (the pod and sync inspectors)."""
    template = "dashboard/_error.html" if partial else "error.html"
    return render(request, template, {"status": status, "message": message}, status=status)


def _answers_busy(view: Any) -> Any:
    """A view that asks the host: 429 with Retry-After (the error page) when the host's command
    channel or this process's read slots are full, instead of an error 500."""

    @functools.wraps(view)
    async def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            response: HttpResponseBase = await view(request, *args, **kwargs)
        except host.Busy as busy:
            response = await sync_to_async(_error)(request, 429, str(busy))
            response["Retry-After"] = str(busy.retry_after)
        return response

    return wrapper


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Django's CSRF failure page, as our error page: Django's own has an inline style, which the
    Content-Security-Policy refuses."""
    return _error(request, 403, f"Forbidden: {reason or 'CSRF verification failed'}. Reload the page and try again.")


@sync_to_async
def _alive_records() -> list[SimulationRecord]:
    return list(SimulationRecord.alive())


@sync_to_async
def _record(sim_id: str) -> SimulationRecord:
    try:
        return SimulationRecord.alive().get(id=sim_id)
    except SimulationRecord.DoesNotExist:
        raise Http404(f"no simulation {sim_id} is running") from None


def _home(request: HttpRequest, sims: list[SimulationRecord], form: dict[str, Any], status: int = 200) -> HttpResponse:
    context = {"sims": sims, "scenarios": scenario_library(), "control": can_control(request), "form": form}
    return render(request, "dashboard/home.html", context, status=status)


@require_safe
async def home(request: HttpRequest) -> HttpResponse:
    return await sync_to_async(_home)(request, await _alive_records(), {})


@require_safe
async def sim_list(request: HttpRequest) -> HttpResponse:
    """The running simulations, as the home page's partial (htmx polls it)."""
    sims = await _alive_records()
    return await sync_to_async(render)(
        request, "dashboard/_sim_list.html", {"sims": sims, "control": can_control(request)}
    )


@require_http_methods(["GET", "HEAD", "POST"])
async def sim_new(request: HttpRequest) -> HttpResponse:
    """GET: the start form, prefilled (`?scenario=ID&seed=N`). POST: start a simulation from a
    library scenario or an uploaded file, with a seed; then open it."""
    control = await sync_to_async(can_control)(request)
    safe = request.method in ("GET", "HEAD")
    data = request.GET if safe else request.POST
    form = {
        "scenario": data.get("scenario", ""),
        "seed": data.get("seed", ""),
        "pause_before": data.get("pause_before", ""),
        "mark": data.get("mark", "")[:200],
        "errors": [],
    }
    if safe or not control:
        if not safe:
            form["errors"].append("Open the dashboard with its access token to start simulations.")
        return await sync_to_async(_home)(request, await _alive_records(), form, 200 if safe else 403)
    upload = request.FILES.get("file")
    seed: int | None = None
    if form["seed"].strip():
        try:
            seed = int(form["seed"])
            if not 0 <= seed < 2**63:
                raise ValueError
        except ValueError:
            form["errors"].append(f"seed: must be a whole number from 0 to 2^63-1 (got {form['seed']!r})")
    pause_before: float | None = None
    if form["pause_before"].strip():
        try:
            pause_before = float(form["pause_before"])
            if not (math.isfinite(pause_before) and 0.001 < pause_before <= 1e7):
                raise ValueError
        except ValueError:
            form["errors"].append(f"pause before: a time in seconds, above 0.001 (got {form['pause_before']!r})")
    scenario = None
    source = form["scenario"]
    if upload is not None:
        source = "upload"
        if upload.size is None or upload.size > MAX_SCENARIO_BYTES:
            form["errors"].append(f"file: larger than {MAX_SCENARIO_BYTES // 1024} KiB")
        else:
            try:
                scenario = load_scenario(upload.read().decode("utf-8"))
            except UnicodeDecodeError:
                form["errors"].append("file: not UTF-8 text (a scenario is a YAML file)")
            except ScenarioError as exc:
                form["errors"].append(f"file: {exc}")
    elif source in {s["id"] for s in scenario_library()}:
        scenario = load_file(source)  # looked up by id in the library, never as a path
    else:
        form["errors"].append("scenario: choose one from the library or upload a file")
    if form["errors"] or scenario is None:
        return await sync_to_async(_home)(request, await _alive_records(), form, 400)
    try:
        hosted = await host.get_host().start_simulation(
            scenario,
            seed=seed,
            source=source,
            running=bool(data.get("run")),
            pause_before=pause_before,
            mark=form["mark"],
        )
    except (ScenarioError, host.HostError) as exc:
        form["errors"].append(str(exc))
        return await sync_to_async(_home)(request, await _alive_records(), form, 400)
    return redirect("sim", sim_id=hosted.id)


@require_safe
async def sim_page(request: HttpRequest, sim_id: str) -> HttpResponse:
    record = await _record(sim_id)
    context = {"record": record, "control": await sync_to_async(can_control)(request), "sim_id": sim_id}
    return await sync_to_async(render)(request, "dashboard/sim.html", context)


@require_POST
@_answers_busy
async def sim_stop(request: HttpRequest, sim_id: str) -> HttpResponse:
    await _record(sim_id)
    if not await sync_to_async(can_control)(request):
        return await sync_to_async(_error)(request, 403, "read-only: open the dashboard with its access token")
    result = await _ask(sim_id, {"op": "stop"}, control=True)
    if not result.get("ok"):
        return await sync_to_async(_error)(request, 400, str(result.get("error", "could not stop")))
    return redirect("home")


async def _ask(sim_id: str, cmd: dict[str, Any], control: bool = False) -> dict[str, Any]:
    try:
        return await host.request(sim_id, cmd, control=control)
    except LookupError as exc:
        raise Http404(str(exc)) from None


@require_safe
@_answers_busy
async def sim_export(request: HttpRequest, sim_id: str) -> HttpResponse:
    """The session as a scenario file: replays headless to the same report."""
    await _record(sim_id)
    response = await _streamed(request, sim_id, {"op": "export"}, "application/yaml; charset=utf-8")
    if response.status_code == 200:
        response["Content-Disposition"] = f'attachment; filename="{sim_id}.scenario.yaml"'
    return response


@require_safe
@_answers_busy
async def sim_report(request: HttpRequest, sim_id: str) -> HttpResponse:
    """The headless runner's report for the session as it is now."""
    await _record(sim_id)
    return await _streamed(request, sim_id, {"op": "report"}, "application/json")


async def _streamed(request: HttpRequest, sim_id: str, cmd: dict[str, Any], content_type: str) -> HttpResponseBase:
    """A big answer of the host, streamed as it is serialised (`host.request_stream`). Raises
    `host.Busy` when this process serves too many already (`_answers_busy` answers it)."""
    try:
        answer = await host.request_stream(sim_id, cmd)
    except LookupError as exc:
        raise Http404(str(exc)) from None
    if not answer.head.get("ok"):
        await answer.aclose()
        return await sync_to_async(_error)(request, 400, str(answer.head.get("error", "bad request")))
    if not answer.more:
        return HttpResponse(answer.first, content_type=content_type)
    return StreamingHttpResponse(_encoded(answer), content_type=content_type)


async def _encoded(answer: host.reads.Answer) -> AsyncIterator[bytes]:
    async for text in answer.text():
        yield text.encode()


@require_safe
@_answers_busy
async def pod_detail(request: HttpRequest, sim_id: str, namespace: str, name: str) -> HttpResponse:
    await _record(sim_id)
    result = await _ask(sim_id, {"op": "pod", "namespace": namespace, "name": name})
    if not result.get("ok"):
        return await sync_to_async(_error)(request, 400, str(result.get("error", "bad request")), partial=True)
    return HttpResponse(result["html"])


@require_safe
@_answers_busy
async def sync_history(request: HttpRequest, sim_id: str, controller: str, namespace: str, name: str) -> HttpResponse:
    await _record(sim_id)
    cmd: dict[str, Any] = {"op": "syncs", "controller": controller, "key": f"{namespace}/{name}"}
    if request.GET.get("sync", "").isdigit():
        cmd["sync"] = int(request.GET["sync"])
    result = await _ask(sim_id, cmd)
    if not result.get("ok"):
        return await sync_to_async(_error)(request, 400, str(result.get("error", "bad request")), partial=True)
    return HttpResponse(result["html"])


@require_safe
@_answers_busy
async def sim_status(request: HttpRequest, sim_id: str) -> HttpResponse:
    """The status line as JSON (virtual time, events run, mode …): for scripts and benchmarks."""
    await _record(sim_id)
    result = await _ask(sim_id, {"op": "status"})
    return JsonResponse(result["status"])

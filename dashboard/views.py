"""Pages and the few HTTP endpoints of the dashboard. Views never hold a simulation: they read
the registry (`SimulationRecord`) and the recordings (`Recording`), and ask the host through the
channel layer (`host.request`). The past (`?at=T`, stopped sessions) is the recording cut at T;
its report is run headless in a separate process (`past`), never on the host's event loop."""

from __future__ import annotations

import functools
import json
import math
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import yaml
from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from controlplane.simulation import (
    CONTROLLER_REGISTRY,
    CONTROLLER_STAGE_GROUPS,
    CONTROLLER_VERSIONS,
    NOWHERE,
    SCENARIO_DIR,
    OperatorSource,
    Replay,
    Scenario,
    ScenarioError,
    check_seed,
    configured,
    library,
    load_file,
    load_scenario,
)
from dashboard import host
from dashboard.access import can_control, has_token
from dashboard.host import reads, recording
from dashboard.models import Recording, SimulationRecord

MAX_SCENARIO_BYTES = 1024 * 1024  # an uploaded scenario file
# The controller whose version the start form and the version switch choose: the one with more
# than one version in the controller registry (the ReplicationController's).
VERSIONED_CONTROLLER = next(spec for spec in CONTROLLER_REGISTRY if len(spec.versions) > 1)
# The controllers the page's forms offer and its scripts read (name -> kind, in the registry's
# order; sim.html hands it to the scripts as JSON in #app's data-controller-kinds).
CONTROLLER_KINDS = {spec.name: spec.kind for spec in CONTROLLER_REGISTRY}


def scenario_library() -> list[dict[str, str]]:
    """The shipped scenarios, read once (and again when a file in the library changes)."""
    stamp = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in SCENARIO_DIR.iterdir() if p.suffix == ".yaml"))
    return _library(stamp)


@functools.lru_cache(maxsize=4)
def _library(stamp: tuple[Any, ...]) -> list[dict[str, str]]:
    return library()


def uploaded_operators() -> OperatorSource:
    """Where an uploaded scenario's operators may come from: the server's operator directory
    (CTRLSCOPE_OPERATOR_DIR), or nowhere when it has none."""
    root = settings.CTRLSCOPE_OPERATOR_DIR
    return OperatorSource(root=Path(root)) if root else NOWHERE


def chosen_scenario(form: dict[str, Any], upload: Any) -> tuple[Scenario | None, str]:
    """The scenario a start form asks for — an uploaded file, or a library scenario by its id
    (never as a path) — and its source ("upload" or the id). What is wrong is appended to
    `form["errors"]` (then the scenario is None)."""
    source = form["scenario"]
    if upload is not None:
        source = "upload"
        if upload.size is None or upload.size > MAX_SCENARIO_BYTES:
            form["errors"].append(f"file: larger than {MAX_SCENARIO_BYTES // 1024} KiB")
            return None, source
        try:
            return load_scenario(upload.read().decode("utf-8"), uploaded_operators()), source
        except UnicodeDecodeError:
            form["errors"].append("file: not UTF-8 text (a scenario is a YAML file)")
        except ScenarioError as exc:
            form["errors"].append(f"file: {exc}")
        return None, source
    if source in {s["id"] for s in scenario_library()}:
        return load_file(source), source
    form["errors"].append("scenario: choose one from the library or upload a file")
    return None, source


def _error(request: HttpRequest, status: int, message: str, *, partial: bool = False) -> HttpResponse:
    """An error as a template (autoescaped): a whole page, or (`partial`) the escaped message alone
    for the fragments the sim page inserts as HTML (the pod and sync inspectors)."""
    template = "dashboard/_error.html" if partial else "error.html"
    return render(request, template, {"status": status, "message": message}, status=status)


NO_ANSWER_RETRY = 5  # seconds: Retry-After of a 503 when the host did not answer in time


def _answers_busy(view: Any) -> Any:
    """A view that asks the host: 429 with Retry-After (the error page) when the host's command
    channel or this process's read slots are full, 503 with Retry-After when the host of a session
    that exists did not answer in time (busy, or its process gone), instead of an error 500 or a
    404 that would say the session does not exist."""

    @functools.wraps(view)
    async def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            response: HttpResponseBase = await view(request, *args, **kwargs)
        except host.Busy as busy:
            response = await sync_to_async(_error)(request, 429, str(busy))
            response["Retry-After"] = str(busy.retry_after)
        except host.NoAnswer as silent:
            response = await sync_to_async(_error)(request, 503, f"{silent}: it is busy; try again")
            response["Retry-After"] = str(NO_ANSWER_RETRY)
        return response

    return wrapper


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Django's CSRF failure page, as our error page: Django's own has an inline style, which the
    Content-Security-Policy refuses."""
    return _error(request, 403, f"Forbidden: {reason or 'CSRF verification failed'}. Reload the page and try again.")


@sync_to_async
def _alive_records() -> list[SimulationRecord]:
    return list(SimulationRecord.alive())


def _ended_recordings() -> dict[str, list[Recording]]:
    """The recordings of the sessions that do not run: stopped ones, and damaged ones (that
    cannot be replayed: `note` says why)."""
    ended = Recording.objects.filter(state__in=(Recording.STOPPED, Recording.DAMAGED)).order_by("-stopped")
    lists: dict[str, list[Recording]] = {Recording.STOPPED: [], Recording.DAMAGED: []}
    for rec in ended:
        lists[rec.state].append(rec)
    return {"stopped": lists[Recording.STOPPED], "damaged": lists[Recording.DAMAGED]}


@sync_to_async
def _recording(sim_id: str) -> Recording | None:
    return Recording.objects.filter(id=sim_id).first()


@sync_to_async
def _record(sim_id: str) -> SimulationRecord:
    try:
        return SimulationRecord.alive().get(id=sim_id)
    except SimulationRecord.DoesNotExist:
        raise Http404(f"no simulation {sim_id} is running") from None


def _home(request: HttpRequest, sims: list[SimulationRecord], form: dict[str, Any], status: int = 200) -> HttpResponse:
    context = {
        "sims": sims,
        **_ended_recordings(),
        "scenarios": scenario_library(),
        "control": can_control(request),
        "form": form,
        "controller_versions": CONTROLLER_VERSIONS,
        "versioned_controller": VERSIONED_CONTROLLER,
    }
    return render(request, "dashboard/home.html", context, status=status)


@require_safe
async def home(request: HttpRequest) -> HttpResponse:
    return await sync_to_async(_home)(request, await _alive_records(), {})


@require_safe
async def sim_list(request: HttpRequest) -> HttpResponse:
    """The running simulations and the stopped sessions' recordings, as the home page's partial
    (htmx polls it)."""
    sims = await _alive_records()
    ended = await sync_to_async(_ended_recordings)()
    return await sync_to_async(render)(
        request, "dashboard/_sim_list.html", {"sims": sims, **ended, "control": can_control(request)}
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
        "controller_version": data.get("controller_version", "")[:40],
        "gc_off": bool(data.get("gc_off")),
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
            seed = check_seed(form["seed"])
        except ScenarioError as exc:
            form["errors"].append(str(exc))
    pause_before: float | None = None
    if form["pause_before"].strip():
        try:
            pause_before = float(form["pause_before"])
            if not (math.isfinite(pause_before) and 0.001 < pause_before <= 1e7):
                raise ValueError
        except ValueError:
            form["errors"].append(f"pause before: a time in seconds, above 0.001 (got {form['pause_before']!r})")
    scenario, source = chosen_scenario(form, upload)
    if scenario is not None:
        # The version select and the GC checkbox: a `config` block over the scenario's own,
        # checked as a `config` action is (one validation path: the facade's check_config).
        block: dict[str, Any] = {}
        if form["controller_version"]:
            block["controllerVersion"] = {VERSIONED_CONTROLLER.name: form["controller_version"]}
        if form["gc_off"]:
            block["enableGarbageCollector"] = False
        try:
            scenario = configured(scenario, block) if block else scenario
        except ScenarioError as exc:
            form["errors"].append(str(exc))
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
    try:
        record = await _record(sim_id)
    except Http404:
        rec = await _recording(sim_id)
        if rec is None or rec.state == Recording.RUNNING:
            raise
        if rec.state == Recording.DAMAGED:
            raise Http404(
                f"The recording of {sim_id} is damaged and cannot be replayed: {rec.note}. The home page lists it, "
                "to delete."
            ) from None
        raise Http404(f"Simulation {sim_id} is stopped: the home page lists its recording, to re-open.") from None
    context = {
        "record": record,
        "recording": await _recording(sim_id),
        "control": await sync_to_async(can_control)(request),
        "sim_id": sim_id,
        "fork_form": {"compare": True},  # the "fork from here…" menu (dashboard.fork_views)
        # The version switch and the breakpoint form's stages (the page shows those of the
        # versions that run, from the status line's `versions`).
        "controller_versions": CONTROLLER_VERSIONS,
        "versioned_controller": VERSIONED_CONTROLLER,
        "controllers": CONTROLLER_REGISTRY,
        "controller_kinds": json.dumps(CONTROLLER_KINDS),
        "stage_groups": CONTROLLER_STAGE_GROUPS(),
    }
    return await sync_to_async(render)(request, "dashboard/sim.html", context)


def _confirm(request: HttpRequest, *, title: str, text: str, action: str, button: str) -> HttpResponse:
    """A confirmation page: one form (POST, CSRF, `confirm=yes`) and a way back; no script."""
    context = {"title": title, "text": text, "action": action, "button": button, "control": True}
    return render(request, "dashboard/confirm.html", context)


@require_http_methods(["GET", "HEAD", "POST"])
@_answers_busy
async def sim_stop(request: HttpRequest, sim_id: str) -> HttpResponse:
    """GET: are you sure? POST with `confirm=yes`: stop the session; its recording is kept
    (listed as stopped, exportable, re-openable, deletable)."""
    record = await _record(sim_id)
    if not await sync_to_async(can_control)(request):
        return await sync_to_async(_error)(request, 403, "read-only: open the dashboard with its access token")
    if request.method != "POST" or request.POST.get("confirm") != "yes":
        text = (
            f"Stop {record.name} ({sim_id}) at t={record.virtual_time:.3f}? Its recording is kept: the home page "
            "lists it as stopped, with its scenario.yaml and report.json, to re-open or delete."
        )
        return await sync_to_async(_confirm)(
            request, title="Stop this simulation?", text=text, action=f"/sim/{sim_id}/stop", button="stop it"
        )
    result = await _ask(sim_id, {"op": "stop"}, control=True)
    if not result.get("ok"):
        return await sync_to_async(_error)(request, 400, str(result.get("error", "could not stop")))
    return redirect("home")


async def _stopped(request: HttpRequest, sim_id: str) -> Recording | HttpResponse:
    """The recording of a session that does not run (stopped or damaged), or the answer that
    says why not (403, 404, 409)."""
    if not await sync_to_async(can_control)(request):
        return await sync_to_async(_error)(request, 403, "read-only: open the dashboard with its access token")
    rec = await _recording(sim_id)
    if rec is None:
        raise Http404(f"no recording {sim_id}")
    if rec.state not in (Recording.STOPPED, Recording.DAMAGED):
        return await sync_to_async(_error)(request, 409, f"simulation {sim_id} is running: stop it first")
    return rec


@require_POST
async def sim_reopen(request: HttpRequest, sim_id: str) -> HttpResponse:
    """Start a stopped session again from its recording: replayed to its last time, paused."""
    rec = await _stopped(request, sim_id)
    if isinstance(rec, HttpResponse):
        return rec
    if rec.state == Recording.DAMAGED:
        message = f"the recording of {sim_id} is damaged and cannot be replayed: {rec.note}"
        return await sync_to_async(_error)(request, 409, message)
    try:
        await host.get_host().restore_simulation(sim_id, reopened=True)
    except host.HostError as exc:
        return await sync_to_async(_error)(request, 400, str(exc))
    return redirect("sim", sim_id=sim_id)


@require_http_methods(["GET", "HEAD", "POST"])
async def sim_delete(request: HttpRequest, sim_id: str) -> HttpResponse:
    """GET: are you sure? POST with `confirm=yes`: delete a stopped or damaged session's recording."""
    rec = await _stopped(request, sim_id)
    if isinstance(rec, HttpResponse):
        return rec
    if request.method != "POST" or request.POST.get("confirm") != "yes":
        how = "damaged" if rec.state == Recording.DAMAGED else "stopped"
        text = (
            f"Delete the recording of {rec.name} ({sim_id}), {how} at t={rec.virtual_time:.3f} with "
            f"{rec.actions} actions? It cannot be re-opened or exported afterwards."
        )
        return await sync_to_async(_confirm)(
            request, title="Delete this recording?", text=text, action=f"/sim/{sim_id}/delete", button="delete it"
        )
    ended = (Recording.STOPPED, Recording.DAMAGED)
    await sync_to_async(Recording.objects.filter(id=sim_id, state__in=ended).delete)()
    return redirect("home")


async def _ask(sim_id: str, cmd: dict[str, Any], control: bool = False) -> dict[str, Any]:
    try:
        return await host.request(sim_id, cmd, control=control)
    except host.NoAnswer:
        raise  # 503 (`_answers_busy`): the session exists, its host is busy
    except LookupError as exc:
        raise Http404(str(exc)) from None


AT = re.compile(r"^[0-9]{1,10}(\.[0-9]{0,9})?$")  # seconds, as the page and the docs write them
PAST_TIMEOUT = 60.0  # seconds a report of the past may take to run headless
# A read of the past (`?at=T`, or a stopped session's) replays or cuts a recording: up to a core
# for PAST_TIMEOUT seconds. Only the token's holder may ask (a viewer's page shows the present).
PAST_NEEDS_TOKEN = (
    "{what} of the past (?at=T, or a stopped session) is replayed in a process of its own: it needs the "
    "access token. Open the dashboard with the URL the run command printed, or send Authorization: Bearer <token>"
)


class BadTime(ValueError):
    """`?at=` that is not a time of this session's past: the message names `at`."""


def _at(request: HttpRequest) -> float | None:
    """`?at=T`: None when absent; BadTime unless a finite number of seconds >= 0."""
    raw = request.GET.get("at")
    if raw is None:
        return None
    if raw.startswith("-") and AT.match(raw[1:]):
        raise BadTime("at: must be >= 0 (a virtual time of this session's past)")
    if not AT.match(raw):
        raise BadTime(f"at: must be a number of seconds, like 42.105 (got {raw[:40]!r})")
    value = float(raw)
    if not math.isfinite(value):  # not reachable with AT, kept for whoever loosens it
        raise BadTime("at: must be a finite number of seconds")
    return value


def _status(code: int, reason: str, message: str) -> JsonResponse:
    """An error of report.json as a Kubernetes Status (as the API answers its errors)."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    return JsonResponse(body, status=code)


def _text(code: int, message: str) -> HttpResponse:
    return HttpResponse(message + "\n", status=code, content_type="text/plain; charset=utf-8")


async def _session(sim_id: str) -> SimulationRecord | Recording:
    """The running session, else its recording (stopped, or waiting to be restored); 404."""
    try:
        return await _record(sim_id)
    except Http404:
        rec = await _recording(sim_id)
        if rec is None:
            raise Http404(f"no simulation {sim_id} is running or recorded") from None
        return rec


async def _cut_text(request: HttpRequest, sim_id: str, session: SimulationRecord | Recording, at: float | None) -> str:
    """The session (cut at `at`) as scenario YAML: from the host for a running session, from
    the recording for a stopped one. BadTime when `at` is past its time; `host.Busy`."""
    if isinstance(session, SimulationRecord):
        answer = await host.request_stream(sim_id, {"op": "export", "at": at}, control=True)  # has_token checked
        parts = [part async for part in answer.text()]
        if not answer.head.get("ok"):
            raise BadTime(str(answer.head.get("error", "bad request")))
        return "".join(parts)

    def cut() -> str:
        try:
            data = recording.load(sim_id).cut(at)
        except (ValueError, recording.RecordingError) as exc:
            raise BadTime(str(exc)) from None
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)

    return await sync_to_async(cut, thread_sensitive=False)()


@require_safe
@_answers_busy
async def sim_export(request: HttpRequest, sim_id: str) -> HttpResponse:
    """The session as a scenario file: replays headless to the same report. `?at=T`: the
    session cut at T (docs/time-travel.md); a stopped session's from its recording."""
    try:
        at = _at(request)
    except BadTime as exc:
        return _text(400, str(exc))
    session = await _session(sim_id)
    if at is None and isinstance(session, SimulationRecord):
        response = await _streamed(request, sim_id, {"op": "export"}, "application/yaml; charset=utf-8")
    elif not await sync_to_async(has_token)(request):
        return _text(403, PAST_NEEDS_TOKEN.format(what="scenario.yaml"))
    else:
        try:
            response = HttpResponse(
                await _cut_text(request, sim_id, session, at), content_type="application/yaml; charset=utf-8"
            )
        except BadTime as exc:
            return _text(400, str(exc))
    if response.status_code == 200:
        name = f"{sim_id}.scenario.yaml" if at is None else f"{sim_id}-at-{at:g}.scenario.yaml"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_safe
@_answers_busy
async def sim_report(request: HttpRequest, sim_id: str) -> HttpResponse:
    """The headless runner's report for the session as it is now; `?at=T`: as it was at T,
    its recording replayed to T (`python -m controlplane replay`) in a process of its own (one
    at a time per server process: `reads.gate`), byte for byte the report
    `python -m controlplane run <scenario.yaml?at=T> --until T` prints (docs/time-travel.md)."""
    try:
        at = _at(request)
    except BadTime as exc:
        return _status(400, "BadRequest", str(exc))
    session = await _session(sim_id)
    if at is None and isinstance(session, SimulationRecord):
        return await _streamed(request, sim_id, {"op": "report"}, "application/json")
    if not await sync_to_async(has_token)(request):
        return _status(403, "Forbidden", PAST_NEEDS_TOKEN.format(what="report.json"))
    gate = reads.gate("report_at")
    assert gate is not None
    await gate.acquire()  # host.Busy (429) when too many wait already
    try:
        until = at if at is not None else session.virtual_time  # (no `at`: a stopped session, at its end)
        try:
            text = await _recording_text(sim_id, session, at)
        except BadTime as exc:
            return _status(400, "BadRequest", str(exc))
        except Unreplayable as exc:
            return _status(500, "InternalError", f"the session could not be replayed to t={until:.3f}: {exc}")
        return await sync_to_async(_run_past, thread_sensitive=False)(text, until)
    finally:
        gate.release()


class Unreplayable(Exception):
    """A stopped session's recording that its replay would refuse (damaged): the message says why."""


async def _recording_text(sim_id: str, session: SimulationRecord | Recording, at: float | None) -> str:
    """What replays the session up to `at` (`Simulation.recording()`'s form, as JSON): from the
    host for a running session, from the recording for a stopped one, checked first as its
    restore checks it. BadTime when `at` is past its time; Unreplayable; `host.Busy`."""
    if isinstance(session, SimulationRecord):
        answer = await host.request_stream(sim_id, {"op": "export", "form": "recording", "at": at}, control=True)
        parts = [part async for part in answer.text()]
        if not answer.head.get("ok"):
            raise BadTime(str(answer.head.get("error", "bad request")))
        return "".join(parts)

    def recorded() -> str:
        try:
            stored = recording.load(sim_id)
            data = stored.cut(at)  # (ValueError naming `at` when past its time)
        except (ValueError, recording.RecordingError) as exc:
            raise BadTime(str(exc)) from None
        try:
            Replay.check(data)
        except ScenarioError as exc:
            raise Unreplayable(str(exc)) from None
        return json.dumps(stored.replayable(until=at), separators=(",", ":"))

    return await sync_to_async(recorded, thread_sensitive=False)()


def _run_past(text: str, until: float) -> HttpResponse:
    """Replay the recording headless in a child process (`python -m controlplane replay`: the
    one replay path; the live simulations keep the event loop), at most PAST_TIMEOUT seconds."""
    command = [sys.executable, "-m", "controlplane", "replay", "-", "--until", repr(until)]
    try:
        done = subprocess.run(
            command, input=text.encode(), capture_output=True, timeout=PAST_TIMEOUT, cwd=settings.BASE_DIR, check=False
        )
    except subprocess.TimeoutExpired:
        message = f"the report at t={until:.3f} took longer than {PAST_TIMEOUT:g} s to replay: try an earlier time"
        return _status(504, "Timeout", message)
    if done.returncode == 0:
        return HttpResponse(done.stdout, content_type="application/json")
    line = (done.stderr.decode(errors="replace").strip().splitlines() or ["the replay failed"])[-1][:500]
    return _status(500, "InternalError", f"the session could not be replayed to t={until:.3f}: {line}")


async def _streamed(request: HttpRequest, sim_id: str, cmd: dict[str, Any], content_type: str) -> HttpResponseBase:
    """A big answer of the host, streamed as it is serialised (`host.request_stream`). Raises
    `host.Busy` when this process serves too many already (`_answers_busy` answers it)."""
    try:
        answer = await host.request_stream(sim_id, cmd)
    except host.NoAnswer:
        raise  # 503 (`_answers_busy`)
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


# -- causes: why? and the complete trace (docs/dashboard.md, docs/time-travel.md) ---------------------
MAX_OFFSET = 100_000_000  # beyond any session's records (the record log keeps at most 8,000,000)


@require_safe
@_answers_busy
async def sim_why(request: HttpRequest, sim_id: str, seq: int) -> HttpResponse:
    """The chain of causes of trace record `seq`, newest first: the why? panel (an HTML partial),
    or `?format=json` → {"seq", "upto", "links": [{seq, time, kind, text[, side][, future]}]}.
    `?upto=S` (the page views the past at record S): each link after S is marked `future`."""
    await _record(sim_id)
    try:
        upto = _upto(request)
    except BadTime as exc:
        return _status(400, "BadRequest", str(exc))
    result = await _ask(sim_id, {"op": "why", "seq": seq})
    if not result.get("ok"):
        return _status(400, "BadRequest", str(result.get("error", "bad request")))
    links = result["links"]
    if upto is not None:  # viewing the past at record `upto`: what came after is its future
        for link in links:
            link["future"] = link["seq"] > upto and link["time"] is not None
    if request.GET.get("format") == "json":
        return JsonResponse({"seq": seq, "upto": upto, "links": links})
    future = upto is not None and seq > upto
    return render(request, "dashboard/_why.html", {"seq": seq, "links": links, "upto": upto, "future": future})


def _upto(request: HttpRequest) -> int | None:
    """`?upto=S`: the seq of the moment of the past the page views (records after it are its
    future), or None when absent or empty (the present)."""
    if not request.GET.get("upto"):
        return None
    return _whole(request, "upto", 0, 0, MAX_OFFSET)


def _whole(request: HttpRequest, name: str, default: int, low: int, high: int) -> int:
    raw = request.GET.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or len(raw) > 12:
        raise BadTime(f"{name}: must be a whole number from {low} to {high}")
    value = int(raw)
    if not low <= value <= high:
        raise BadTime(f"{name}: must be a whole number from {low} to {high}")
    return value


@require_safe
@_answers_busy
async def sim_records(request: HttpRequest, sim_id: str) -> HttpResponseBase:
    """A page of the complete trace (the trace view scrolls through it): `offset`, `limit`
    (≤ 1000) and filters `kind` (a prefix), `controller`, `key`, `name`, `text`. Every record of
    the session is there; none is dropped (controlplane.causes says what is compacted when)."""
    await _record(sim_id)
    try:
        offset = _whole(request, "offset", 0, 0, MAX_OFFSET)
        limit = _whole(request, "limit", 200, 0, 1000)
        upto = _upto(request)
    except BadTime as exc:
        return _status(400, "BadRequest", str(exc))
    filters: dict[str, str] = {}
    for name in ("kind", "controller", "key", "name", "text"):
        value = request.GET.get(name, "")
        if len(value) > 100:
            return _status(400, "BadRequest", f"{name}: at most 100 characters")
        if value.strip():
            filters[name] = value.strip()
    cmd = {"op": "records", "filters": filters, "offset": offset, "limit": limit, "upto": upto}
    return await _streamed(request, sim_id, cmd, "application/json")

"""The replay worker: a child process that shows one hosted simulation's past (`python -m
dashboard.host.replay_worker`, started by `dashboard.host.past`).

Guarantees
----------
* A plain process, no event loop: it reads requests as JSON lines on stdin and answers each with
  one JSON line on stdout, so the host's event loop never runs a replay.
* It keeps the last replayed world in its own process (`dashboard.host.past_world.Worker`): a
  later moment replays on from there; an earlier one rebuilds from the start. Where `os.fork` is
  available, `main` serves through `dashboard.host.keyframes.Broker` instead: the worlds live in
  forked children and an earlier moment replays from the nearest earlier keyframe.
* Newer requests supersede older ones of the same viewer (`past_world.Requests` keeps the latest
  of each); a superseded request gets no answer.

Requests: `{"id", "viewer", "recording"?, "actions"?, "live": position, "focus": [[c, k]…], "owner"?,
"target": {"at": T} | {"events": n, "time": t, "exact": bool} | {"seq": s, "time": t} |
{"back" | "forward": "event" | "stage" | "sync", "from": position}}`. Answers: `{"id", "ok": true,
"position"}` then a line of text (the state message of that moment, as the live page gets it) or `{"id", "live": true}`
(the target is the live moment) or `{"id", "ok": false, "error"}`. While a replay takes long, lines
`{"id", "viewer", "progress": {"events", "time"}}` come before its answer, one every
`past_world.PROGRESS_EVERY` seconds: how far it has come.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from dashboard.host import keyframes
from dashboard.host.keyframes import SWEEP_AFTER
from dashboard.host.past_world import Requests, Superseded, Worker, progress_line


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from controlplane.simulation import simulation_gc

    simulation_gc()  # for the life of the process: a replay is a simulation running (gcpolicy's why)

    requests = Requests(sys.stdin.fileno())
    worker: Worker | keyframes.Broker
    if keyframes.available():
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the worlds are never waited for: no zombies
        worker = keyframes.Broker(requests)
    else:
        worker = Worker(requests)  # no fork here: every move back replays from t=0
    try:
        serve(requests, worker)
    finally:
        if isinstance(worker, keyframes.Broker):
            worker.close()


def serve(requests: Requests, worker: Worker | keyframes.Broker) -> None:
    out = sys.stdout
    while True:
        if not isinstance(worker, Worker) and not requests.waiting and not requests.closed:
            requests.poll(SWEEP_AFTER)  # a viewer's next move, if it comes soon
            if not requests.waiting and not requests.closed:
                worker.idle()  # it did not: the broker sweeps ahead meanwhile
            worker.wait()  # taking in the keyframes the worlds send
        request = requests.next()
        if request is None:
            return  # the host closed our stdin: it stopped the session, or exited
        if isinstance(worker, Worker):
            worker.on_progress = lambda progress, request=request: progress_line(request, progress)
        try:
            answer = worker.handle(request)
        except Superseded:
            continue
        except Exception as exc:  # a bug: say so to the viewer, drop the world, serve on
            worker.drop_world()
            answer = {"ok": False, "error": f"replay failed: {type(exc).__name__}: {exc}"[:500]}
        answer["id"] = request.get("id")
        answer["viewer"] = request.get("viewer")
        text = answer.pop("text", None)
        # A header line, then the state's text on a line of its own: the host forwards it unparsed.
        out.write(json.dumps(answer, separators=(",", ":"), allow_nan=False, default=str) + "\n")
        if text is not None:
            out.write(text + "\n")
        out.flush()
        if not isinstance(worker, Worker):
            worker.housekeep()


if __name__ == "__main__":
    main()

"""The replay worker: a child process that shows one hosted simulation's past (`python -m
dashboard.host.replay_worker`, started by `dashboard.host.past`).

Guarantees
----------
* A plain process, no event loop: it reads requests as JSON lines on stdin and answers each with
  one JSON line on stdout, so the host's event loop never runs a replay. Django is never set up
  here and no template is rendered: an answer carries the view model of the moment
  (`dashboard.host.past_view`), which the host renders.
* The machinery is the session's (`controlplane.session.timetravel`): a `Worker` keeps the last
  replayed world in this process (a later moment replays on from there; an earlier one rebuilds
  from the start); where `os.fork` is available, a `keyframes.Broker` serves instead: the worlds
  live in forked children and an earlier moment replays from the nearest earlier keyframe. This
  module gives them what the core may not take itself: the view of a past world, the wall clock
  (`past_view.PastView`) and the broker's unguessable socket name.
* Newer requests supersede older ones of the same viewer (`worker.Requests` keeps the latest of
  each); a superseded request gets no answer.

Requests: `{"id", "viewer", "recording"?, "actions"?, "live": position, "focus": [[c, k]…], "owner"?,
"target": {"at": T} | {"events": n, "time": t, "exact": bool} | {"seq": s, "time": t} |
{"back" | "forward": "event" | "stage" | "sync", "from": position}}`. Answers: `{"id", "ok": true,
"position"}` then a line of text (the view model of that moment) or `{"id", "live": true}`
(the target is the live moment) or `{"id", "ok": false, "error"}`. While a replay takes long, lines
`{"id", "viewer", "progress": {"events", "time"}}` come before its answer, one every
`worker.PROGRESS_EVERY` seconds: how far it has come.
"""

from __future__ import annotations

import secrets
import signal
import sys

from controlplane.simulation import PastRequests as Requests
from controlplane.simulation import PastWorld as Worker
from controlplane.simulation import keyframes, simulation_gc
from dashboard.host.past_view import PastView


def main() -> None:
    simulation_gc()  # for the life of the process: a replay is a simulation running (gcpolicy's why)
    requests = Requests(sys.stdin.fileno())
    view = PastView()
    worker: Worker | keyframes.Broker
    if keyframes.available():
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the worlds are never waited for: no zombies
        worker = keyframes.Broker(requests, view, secrets.token_hex(8))
    else:
        worker = Worker(requests, view)  # no fork here: every move back replays from t=0
    try:
        keyframes.serve(requests, worker)
    finally:
        if isinstance(worker, keyframes.Broker):
            worker.close()


if __name__ == "__main__":
    main()

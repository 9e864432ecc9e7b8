"""The view of a past world: what the replay worker makes of the moment it replayed to (a view
model: data), and how the host renders it into the state message the page shows.

Guarantees
----------
* In the replay worker (`PastView`, given to `controlplane.session.timetravel.worker.Worker`):
  a past world is a session seen through the live page's own frame builder (`HostedSimulation`,
  its `FrameBuilder` subscribed before the replay runs), so the sync narrations, the pod table,
  the transitions and the spans fill exactly as they did live. `model` takes from it the state
  of the moment as data: each panel's context (`panels.context`, the same builders as live),
  the newest `frames.ROWS_IN_STATE` rows of each log as data, the pod table. No template is rendered
  there and Django is never set up: the worker process renders nothing.
* In the host (`render`): the panels are rendered with the live page's templates and the rows
  with its row writers, into the same state message a (re)connecting viewer gets, so the past
  looks exactly like the present did. A past world has no breakpoints panel (the live
  session's: the page keeps its own) and no timeline history (the page keeps the live one and
  marks the moment with a cursor, static/dashboard/past.js).
* The model travels as one line: pickled (contexts hold tuples, integer keys and the
  narrations' objects, which JSON would change), base64. It comes only from the host's own
  child process.
"""

from __future__ import annotations

import base64
import pickle
import time
from typing import Any

from controlplane.simulation import Simulation, trace_row
from dashboard.host import panels
from dashboard.host import rows as log_rows
from dashboard.host.frames import _wire
from dashboard.host.hosted import HostedSimulation

Obj = dict[str, Any]

PAST_PANELS_DROPPED = ("breakpoints",)  # the live session's, not the world's: the page keeps its own


class PastView:
    """The replay worker's view of its worlds (`worker.PastView`)."""

    def world(self, sim: Simulation, name: str) -> HostedSimulation:
        # No record log: why? and the trace view are the live session's (it keeps every record),
        # and a keyframe would come to own every page of it the later replay reallocates.
        return HostedSimulation("past", sim, name=name, source="past", keep_records=False)

    def clock(self) -> float:
        return time.monotonic()

    def model(self, world: HostedSimulation, focus: list[Any], owner: Any = None) -> str:
        """The state of the moment as data (see the module's guarantees), as one line of text."""
        hosted = world
        frames = hosted.frames
        # Nothing of the world is owed to a frame: a past world sends none (the state is all).
        frames.sent_transitions = len(frames.transitions)
        frames.sent_spans = len(frames.spans)
        frames.sent_depth = len(frames.depth)
        frames.new_names, frames.node_changes = [], []
        # The logs: the newest rows of the moment, from the simulation's recent records (the
        # frame builder keeps only a frame's worth between frames, and none are built here).
        for kept in (frames.trace_rows, frames.api_rows, frames.event_rows):
            kept.clear()
        for log in frames.new_rows:
            frames.new_rows[log] = []
        for record in list(hosted.sim.recent):
            kind = record["kind"]
            if kind == "api.response":
                frames.api_rows.append(record)
            elif kind == "event":
                frames.event_rows.append(record)
            if kind != "api.request":
                frames.trace_rows.append(record)
        keys = [(str(c), str(k)) for c, k in focus if isinstance(c, str) and isinstance(k, str)]
        hosted.focus("past", keys)
        hosted.focus_owner("past", owner)  # a page focused on one owner: its queue, its expectations
        frames.seq += 1  # a new moment: never the state of another
        contexts = {}
        for panel_id in frames.state_panel_ids(keys):
            if panel_id not in PAST_PANELS_DROPPED:
                context = panels.context(hosted, panel_id)
                context.pop("sim", None)  # the world itself: no template reads it
                contexts[panel_id] = context
        rows = {
            "trace": [trace_row(r, text=False) for r in frames.trace_rows],
            "api": [frames.api_row(r) for r in frames.api_rows],
            "events": list(frames.event_rows),
        }
        model = {
            "seq": frames.seq,
            "status": panels.status(hosted),
            "contexts": contexts,
            "rows": rows,
            "canvas": frames.pod_table(pending=0),
        }
        return base64.b64encode(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)).decode()


def render(text: str) -> str:
    """The state message (JSON text) of a view model from `PastView.model`: what the page shows."""
    from django.template.loader import render_to_string

    model = pickle.loads(base64.b64decode(text))
    state = {
        "type": "state",
        "seq": model["seq"],
        "status": model["status"],
        "panels": {
            panel_id: render_to_string(panels.template_of(panel_id), context)
            for panel_id, context in model["contexts"].items()
        },
        "rows": {log: log_rows.RENDER[log](rows) for log, rows in model["rows"].items()},
        "canvas": model["canvas"],
    }
    return _wire(state)

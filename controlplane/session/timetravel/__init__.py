"""Time travel: a session's past rebuilt, free of Django, Channels and the wall clock
(docs/time-travel.md).

* `replay.py` — `Replay`: a session's past rebuilt to an exact position, from its recording (its
  start and its live actions) or from its export cut at T; the index of sync records steps go by;
* `snapshot.py` — a quiescent world pickled and loaded again (the keyframes' bytes);
* `worker.py` — a past world replayed to a moment, answered with the view model of that moment;
* `keyframes.py` — the broker: the worlds in forked children, snapshots and the nearby keyframe,
  the sweep ahead; `serve`, the replay worker process's loop.

The process (`python -m dashboard.host.replay_worker`) gives them the view (the dashboard's
frame builder), the wall clock and a secret: nothing here renders, reads the clock or draws
randomness.
"""

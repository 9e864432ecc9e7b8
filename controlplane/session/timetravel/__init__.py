"""Time travel: a session's past rebuilt, free of Django, Channels and the wall clock
(docs/time-travel.md).

* `replay.py` — `Replay`: the one way a past world is rebuilt, from a session's recording (its
  start and its action log) to an exact position; and the index of sync records steps go by;
* `snapshot.py` — a quiescent world pickled and loaded again (the keyframes' bytes).
"""

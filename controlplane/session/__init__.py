"""Sessions: the debugger engine, free of Django, Channels, asyncio and the wall clock.

* `service.py` — `SessionService`, the one interface the web layer drives sessions through
  (start, command, state, past, fork, export, kube, subscribe);
* `views.py` — the view models: what the page shows of a session's world, as plain data;
* `kube.py` — the Kubernetes API of a session's world (`Kube`: reads, dry runs, watches,
  connected clients, metrics), with the Table printer and the wall time passed in;
* `session.py` — one simulation under a debugger's control: its commands, what its viewers look
  at, and what it publishes to its listeners (`SessionListener`);
* `goals.py` — where a step stops (next stage, sync, timer, idle, a time);
* `breakpoints.py` — pausing after the event that matched;
* `commands.py` — `CommandError` and the readers of a command's arguments;
* `edit.py` — `kubectl edit` with a dry-run diff; `keyindex.py` — sorted keys for paged lists;
* `timefmt.py` — how times are written (the sync stages are the controller registry's,
  `controlplane/controllers/stages.py`).
* `timetravel/` — the past: replay, snapshots, keyframes and the replay worker's engine.

The web layer (`dashboard/host/`) hosts sessions through the service: it paces them against the
wall clock (`dashboard.host.hosted`), renders what they publish and the view models
(`dashboard.host.frames`, `panels`) and carries commands, answers and watch events over Channels.
"""

"""Sessions: the debugger engine, free of Django, Channels, asyncio and the wall clock.

* `session.py` — one simulation under a debugger's control: its commands, what its viewers look
  at, and what it publishes to its listeners (`SessionListener`);
* `goals.py` — where a step stops (next stage, sync, timer, idle, a time);
* `breakpoints.py` — pausing after the event that matched;
* `commands.py` — `CommandError` and the readers of a command's arguments;
* `edit.py` — `kubectl edit` with a dry-run diff; `keyindex.py` — sorted keys for paged lists;
* `stages.py` — the sync stages of each controller version; `timefmt.py` — how times are written;
* `timetravel/` — the past: replay, snapshots, keyframes and the replay worker's engine.

The web layer (`dashboard/host/`) hosts sessions: it paces them against the wall clock
(`dashboard.host.hosted`), renders what they publish (`dashboard.host.frames`, `panels`) and
carries commands and answers over Channels.
"""

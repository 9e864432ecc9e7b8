"""The run history: what a run did on its way, for the report (docs/scenarios.md, "The report").

Guarantees
----------
* Built from trace records only (the trace is the debugger's eyes: the controller states each
  fact at its source, this module only files it), in emission order: the same run gives the
  same history, byte for byte.
* `syncs` holds one entry per completed sync, in completion order: the report's `syncs`, whose
  first five keys (controller, key, start, end, error) are the original contract; the others are
  additions (worker, expectations before and after, the consistency verdict, what
  manageReplicas did, the slow-start batches (a v1.5 burst is one batch), the requeue decision).
* `status_history[controller][key]` lists each status write of that controller object: its time
  and the status fields it changed.
* Memory grows with the number of syncs and status writes, as the report does; nothing else is
  kept (a sync cut short by a controller restart leaves no entry).
"""

from __future__ import annotations

from typing import Any

from controlplane.trace import Record

Obj = dict[str, Any]


class RunHistory:
    def __init__(self) -> None:
        self.syncs: list[Obj] = []
        self.status_history: dict[str, dict[str, list[Obj]]] = {}
        # (controller, key) -> what the running sync of that key has done so far. One at a time:
        # the workqueue never hands a key to two workers.
        self._open: dict[tuple[str, str], Obj] = {}
        # (controller, key) -> the entry of its latest completed sync (the worker's requeue
        # decision arrives just after `sync.end`).
        self._ended: dict[tuple[str, str], Obj] = {}

    def observe(self, record: Record) -> None:
        kind = record["kind"]
        if kind == "sync.stage":
            self._stage(record)
        elif kind == "sync.start":
            self._open[(record["controller"], record["key"])] = {
                "expectationsBefore": record.get("expectations"),
                "manage": None,
                "batches": [],
            }
        elif kind == "sync.end":
            self._end(record)
        elif kind == "sync.requeue":
            entry = self._ended.get((record["controller"], record["key"]))
            if entry is not None:
                entry["requeue"] = {"decision": record["decision"], "delay": record["delay"]}

    def _stage(self, record: Record) -> None:
        stage = record["stage"]
        if stage == "status":
            if record["written"]:
                owners = self.status_history.setdefault(record["controller"], {})
                owners.setdefault(record["key"], []).append(
                    {"time": record["time"], "changed": record.get("changed", {})}
                )
            return
        current = self._open.get((record["controller"], record["key"]))
        if current is None:
            return
        if stage == "batch":
            current["batches"].append(
                {"size": record["size"], "succeeded": record["succeeded"], "failed": record["failed"]}
            )
        elif stage == "create":  # the v1.5 ReplicationManager's one burst: a single batch
            current["batches"].append(
                {"size": record["issued"], "succeeded": record["succeeded"], "failed": record["failed"]}
            )
        elif stage == "manage":
            current["manage"] = {"action": record["action"], "count": record.get("count", 0)}

    def _end(self, record: Record) -> None:
        key = (record["controller"], record["key"])
        current = self._open.pop(key, None) or {"expectationsBefore": None, "manage": None, "batches": []}
        requeue = record.get("requeue")
        if requeue is not None and requeue["decision"] == "rateLimited":
            requeue = {"decision": "rateLimited", "delay": None}  # the worker's record fills it in
        entry = {
            "controller": record["controller"],
            "key": record["key"],
            "start": record["start"],
            "end": record["time"],
            "error": record["error"],
            "worker": record["worker"],
            "expectationsBefore": current["expectationsBefore"],
            "expectationsAfter": record.get("expectations"),
            "consistency": record.get("consistency"),
            "manage": current["manage"],
            "batches": current["batches"],
            "requeue": dict(requeue) if requeue is not None else {"decision": "none"},
        }
        self.syncs.append(entry)
        self._ended[key] = entry

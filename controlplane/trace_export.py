"""Trace export: a run's records, streamed to a file as they are emitted (docs/scenarios.md).

* `JsonLinesTrace`: every trace record as one JSON object a line, after one header line
  `{"schema": "ctrlscope-trace", "version": 1, ...}`; `controlplane/trace.schema.json` is the JSON
  Schema of a line. Version 1 may gain record kinds and fields; a reader ignores what it does not
  know. A rename or removal would be version 2.
* `PerfettoTrace`: the Chrome trace-event format (JSON object form) that Perfetto and
  `chrome://tracing` open: each controller is a process whose workers are threads, each sync a
  complete slice on its worker's thread with its stages as instants inside it; queue depth and
  expectations are counters; each pod's life is an async slice, its states nested in it; actions,
  restarts and Kubernetes Events are instants.

Guarantees: each record is written when it is emitted and then forgotten, so memory stays flat
however long the run (the Perfetto writer keeps only the state of each live pod); the same run
writes the same bytes (records in emission order, keys in record order, no wall clock).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from controlplane.trace import Record

if TYPE_CHECKING:
    from controlplane.world import Simulation

Obj = dict[str, Any]

SCHEMA = "ctrlscope-trace"
SCHEMA_VERSION = 1
SCHEMA_FILE = Path(__file__).resolve().parent / "trace.schema.json"


def _jsonable(value: Any) -> Any:
    """Record fields JSON has no type for: sets (sorted lists), anything else by its str()."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=_jsonable, allow_nan=False)


class JsonLinesTrace:
    """Writes a header line, then one line per record. The caller owns `stream` (opens, closes)."""

    def __init__(self, stream: IO[str], *, scenario: str, seed: int) -> None:
        self._stream = stream
        self.records = 0
        stream.write(_dumps({"schema": SCHEMA, "version": SCHEMA_VERSION, "scenario": scenario, "seed": seed}) + "\n")

    def write(self, record: Record) -> None:
        self._stream.write(_dumps(record) + "\n")
        self.records += 1

    def close(self, sim: Simulation) -> None:
        self._stream.flush()


def _us(t: float) -> float:
    """Virtual seconds as the format's microseconds (to the nanosecond: floats print stably)."""
    return round(t * 1_000_000, 3)


class PerfettoTrace:
    """Writes `{"displayTimeUnit": "ms", "traceEvents": [...]}`, one event a line, as records
    arrive. The caller owns `stream`; `close` ends the open pod slices and the JSON."""

    def __init__(self, stream: IO[str], *, scenario: str, seed: int) -> None:
        self._stream = stream
        self._first = True
        self._pids: dict[str, int] = {}
        self._threads: set[tuple[int, int]] = set()
        self._pods: dict[str, str] = {}  # live pod key -> its current state's name
        self.events = 0
        header = {"displayTimeUnit": "ms", "otherData": {"scenario": scenario, "seed": seed, "schema": SCHEMA}}
        stream.write(_dumps(header)[:-1] + ',"traceEvents":[\n')

    # -- plumbing -------------------------------------------------------------------------------
    def _emit(self, event: Obj) -> None:
        if not self._first:
            self._stream.write(",\n")
        self._first = False
        self._stream.write(_dumps(event))
        self.events += 1

    def _pid(self, process: str) -> int:
        """A process id per track group, numbered in order of first appearance."""
        pid = self._pids.get(process)
        if pid is None:
            pid = self._pids[process] = len(self._pids) + 1
            self._emit({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": process}})
            self._emit({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        return pid

    def _tid(self, pid: int, worker: Any) -> int:
        tid = worker + 1 if isinstance(worker, int) else 0
        if (pid, tid) not in self._threads:
            self._threads.add((pid, tid))
            name = f"worker {worker}" if isinstance(worker, int) else "no worker"
            self._emit({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        return tid

    # -- records ------------------------------------------------------------------------------
    def write(self, record: Record) -> None:
        kind = record["kind"]
        ts = _us(record["time"])
        if kind == "sync.end":
            pid = self._pid(f"controller {record['controller']}")
            tid = self._tid(pid, record["worker"])
            start = _us(record["start"])
            args: Obj = {k: record[k] for k in ("error", "consistency", "requeue", "expectations") if k in record}
            self._emit(
                {
                    "ph": "X",
                    "cat": "sync",
                    "name": record["key"],
                    "pid": pid,
                    "tid": tid,
                    "ts": start,
                    "dur": round(ts - start, 3),
                    "args": args,
                }
            )
        elif kind == "sync.stage":
            pid = self._pid(f"controller {record['controller']}")
            tid = self._tid(pid, record["worker"])
            args = {k: v for k, v in record.items() if k not in ("time", "seq", "kind", "controller", "worker")}
            self._emit(
                {
                    "ph": "i",
                    "s": "t",
                    "cat": "stage",
                    "name": record["stage"],
                    "pid": pid,
                    "tid": tid,
                    "ts": ts,
                    "args": args,
                }
            )
        elif kind in ("queue.add", "queue.get", "queue.done"):
            pid = self._pid("workqueues")
            self._emit(
                {
                    "ph": "C",
                    "name": f"queue {record['queue']}",
                    "pid": pid,
                    "tid": 0,
                    "ts": ts,
                    "args": {"depth": record["depth"]},
                }
            )
        elif kind == "expectations":
            pid = self._pid(f"controller {record['controller']}")
            self._emit(
                {
                    "ph": "C",
                    "name": f"expectations {record['key']}",
                    "pid": pid,
                    "tid": 0,
                    "ts": ts,
                    "args": {"add": record["add"], "del": record["del"]},
                }
            )
        elif kind == "pod.transition":
            self._pod(record, ts)
        elif kind == "node.transition":
            pid = self._pid("nodes")
            self._emit(
                {
                    "ph": "i",
                    "s": "p",
                    "cat": "node",
                    "name": f"{record['name']} {record['to']}",
                    "pid": pid,
                    "tid": 0,
                    "ts": ts,
                    "args": {"from": record["from"], "to": record["to"]},
                }
            )
        elif kind == "event":
            pid = self._pid("events")
            self._emit(
                {
                    "ph": "i",
                    "s": "p",
                    "cat": "event",
                    "name": record["reason"],
                    "pid": pid,
                    "tid": 0,
                    "ts": ts,
                    "args": {k: record[k] for k in ("type", "object", "message", "component")},
                }
            )
        elif kind in ("action", "controller.restart"):
            pid = self._pid("actions")
            name = kind if kind != "action" else next(iter(record["action"]), "action")
            args = {k: v for k, v in record.items() if k not in ("time", "seq", "kind")}
            self._emit({"ph": "i", "s": "g", "cat": kind, "name": name, "pid": pid, "tid": 0, "ts": ts, "args": args})

    def _pod(self, record: Record, ts: float) -> None:
        """A pod is an async slice from its first transition to Deleted; each state a slice in it."""
        pid = self._pid("pods")
        key = f"{record['namespace']}/{record['name']}"
        state = record["to"]
        previous = self._pods.get(key)
        base = {"cat": "pod", "pid": pid, "tid": 0, "id": key, "ts": ts}
        if previous is None:
            self._emit({**base, "ph": "b", "name": record["name"], "args": {"owner": record["owner"]}})
        else:
            self._emit({**base, "ph": "e", "name": previous})
        if state == "Deleted":
            self._pods.pop(key, None)
            self._emit({**base, "ph": "e", "name": record["name"]})
            return
        self._pods[key] = state
        self._emit({**base, "ph": "b", "name": state, "args": {"node": record["node"]}})

    def close(self, sim: Simulation) -> None:
        ts = _us(sim.now)
        pid = self._pids.get("pods")
        for key, state in self._pods.items():
            base = {"cat": "pod", "pid": pid, "tid": 0, "id": key, "ts": ts}
            self._emit({**base, "ph": "e", "name": state})
            self._emit({**base, "ph": "e", "name": key.split("/", 1)[1]})
        self._pods = {}
        self._stream.write("\n]}\n")
        self._stream.flush()

"""The record log: every trace record of a session, kept compactly by `seq`, and the two questions
asked of it — "why?" (the chain of causes of one record) and "which records?" (the trace view).

Guarantees
----------
* Complete and exact up to its ceilings: while subscribed, every record is kept, addressable by
  its `seq`, with its time, kind, cause and fields as emitted. Records are never reconstructed
  from timing: the chain `why` walks is the `cause` each record was written with
  (controlplane.trace).
* Bounded memory: a record costs a few columns (time 8 bytes, cause 8, kind 2) and one tuple of
  its field values (the keys are shared by every record of the same shape); every
  `BLOCK_RECORDS` records the tuples are *sealed* into one compressed block (pickle, zlib level
  1: ~20 bytes a record instead of ~150), unpacked again when read (the last two blocks read
  are kept unpacked). At most `limit` records (default `MAX_RECORDS`, 2,000,000) keep their
  fields; beyond, the oldest quarter (in whole blocks) is *compacted* to time, kind and cause,
  and at most `4 * limit` records are kept at all (the oldest quarter is then *forgotten*).
  Neither is ever silent: a compacted record says
  so (`compacted: True`), a chain that reaches a forgotten record ends with a link saying that
  earlier steps are no longer kept, and `records` reports where the kept range starts.
* Pure reads: answering never changes what is kept or what the simulation does.
* Every loop over user-sized input has a ceiling: a chain has at most `MAX_LINKS` links, a page
  of records at most `MAX_PAGE` rows, and a filtered scan visits each kept record once (the
  matches of the last filter are kept and extended, not recomputed, while the log grows).
"""

from __future__ import annotations

import bisect
import json
import math
import pickle
import zlib
from array import array
from collections.abc import Iterable
from typing import Any

from controlplane.controllers.registry import CONTROLLERS

Record = dict[str, Any]

MAX_RECORDS = 2_000_000
BLOCK_RECORDS = 4096  # records whose field values are sealed into one compressed block
MAX_LINKS = 64
MAX_PAGE = 1000
FILTER_FIELDS = ("kind", "controller", "key", "name", "text")
# The controller a workqueue belongs to, by the queue's name (upstream names the RC queue
# "replicationmanager"), and the kind of each resource an informer of a controller watches.
CONTROLLER_OF_QUEUE = {spec.queue_name: spec.name for spec in CONTROLLERS}
_KIND_OF_RESOURCE = {
    **{owned.resource: owned.kind for spec in CONTROLLERS for owned in spec.owns},
    **{spec.resource: spec.kind for spec in CONTROLLERS},
}
_PAST = {"add": "added", "update": "updated", "delete": "deleted"}


class RecordLog:
    """A trace subscriber (`trace.subscribe(log)`) that keeps the records (see the module
    docstring). Records must arrive in `seq` order, as a Trace emits them."""

    def __init__(self, limit: int = MAX_RECORDS) -> None:
        if limit < 4:
            raise ValueError("limit: must be >= 4")
        self.limit = limit
        self.base = 0  # seq of the first kept record (0: none yet)
        self.full_from = 0  # seq of the first record whose fields are kept
        self._times = array("d")
        self._causes = array("q")  # 0: a root
        self._kinds = array("H")
        self._kind_names: list[str] = []
        self._kind_index: dict[str, int] = {}
        self._shapes: list[tuple[str, ...]] = []
        self._shape_index: dict[tuple[str, ...], int] = {}
        # The field values, `(shape id, *values)` from `full_from` on: sealed blocks of `_block`
        # tuples each (zlib'd pickles, oldest first), then the open tail.
        self._block = max(1, min(BLOCK_RECORDS, limit // 4))
        self._sealed: list[bytes] = []
        self._tail: list[tuple[Any, ...]] = []
        self._unpacked: dict[int, list[tuple[Any, ...]]] = {}  # first seq of a block -> its tuples
        self._match: tuple[tuple[tuple[str, str], ...], int, array[int]] | None = None

    # -- keeping ------------------------------------------------------------------------------
    def __call__(self, record: Record) -> None:
        seq = record["seq"]
        if not self._times:
            self.base = self.full_from = seq
        elif seq != self.base + len(self._times):
            return  # not the next record (a second trace, or a gap): never index it wrongly
        kind = record["kind"]
        kind_id = self._kind_index.get(kind)
        if kind_id is None:
            kind_id = self._kind_index[kind] = len(self._kind_names)
            self._kind_names.append(kind)
        self._times.append(record["time"])
        self._causes.append(record.get("cause") or 0)
        self._kinds.append(kind_id)
        keys = tuple(record)[4:] if "cause" in record else tuple(k for k in record if k not in ("time", "seq", "kind"))
        shape = self._shape_index.get(keys)
        if shape is None:
            shape = self._shape_index[keys] = len(self._shapes)
            self._shapes.append(keys)
        tail = self._tail
        tail.append((shape, *(record[k] for k in keys)))
        if len(tail) >= self._block:
            self._sealed.append(zlib.compress(pickle.dumps(tail, protocol=pickle.HIGHEST_PROTOCOL), 1))
            self._tail = []
            if (len(self._sealed) + 1) * self._block > self.limit:  # room for the next tail
                # Compact the oldest quarter, in whole blocks.
                blocks = min(len(self._sealed), max(1, self.limit // 4 // self._block))
                del self._sealed[:blocks]
                self.full_from += blocks * self._block
                self._unpacked.clear()
        if len(self._times) > 4 * self.limit:
            drop = self.limit
            del self._times[:drop]
            del self._causes[:drop]
            del self._kinds[:drop]
            self.base += drop
            self._match = None

    def __len__(self) -> int:
        return len(self._times)

    @property
    def last(self) -> int:
        """The seq of the newest kept record (base - 1 when none)."""
        return self.base + len(self._times) - 1

    def get(self, seq: int) -> Record | None:
        """The record `seq` as emitted (`compacted: True` and no fields when only its skeleton
        is left), or None when it was forgotten or never kept."""
        i = seq - self.base
        if not self._times or i < 0 or i >= len(self._times):
            return None
        cause = self._causes[i]
        record: Record = {
            "time": self._times[i],
            "seq": seq,
            "kind": self._kind_names[self._kinds[i]],
            "cause": cause or None,
        }
        j = seq - self.full_from
        if j < 0:
            record["compacted"] = True
            return record
        block, k = divmod(j, self._block)
        sealed = len(self._sealed)
        values = self._unpack(block)[k] if block < sealed else self._tail[j - sealed * self._block]
        record.update(zip(self._shapes[values[0]], values[1:], strict=True))
        return record

    def _unpack(self, block: int) -> list[tuple[Any, ...]]:
        first = self.full_from + block * self._block
        values = self._unpacked.get(first)
        if values is None:
            values = pickle.loads(zlib.decompress(self._sealed[block]))
            if len(self._unpacked) >= 2:
                del self._unpacked[next(iter(self._unpacked))]  # the one unpacked longest ago
            self._unpacked[first] = values
        return values

    # -- why? ---------------------------------------------------------------------------------
    def why(self, seq: int) -> list[Record]:
        """The chain of causes of record `seq`, newest first: `{seq, time, kind, text}` links,
        the record itself first. A side cause (the apiFault behind a refused request) follows
        the link it explains, with `side: True`. The last link is a root, or says why the
        chain stops (`kind: "forgotten"` / `"limit"`). ValueError when `seq` is not kept."""
        record = self.get(seq)
        if record is None:
            raise ValueError(f"seq: no record {seq} is kept (kept: {self.base}..{self.last})")
        links: list[Record] = []
        seen: set[int] = set()
        while record is not None:
            links.append(link(record))
            seen.add(record["seq"])
            fault = record.get("fault")
            if isinstance(fault, int):
                side = self.get(fault)
                if side is not None:
                    links.append({**link(side), "side": True})
            cause = record.get("cause")
            if cause is None:
                return links
            if cause in seen or cause >= record["seq"]:
                # Cannot happen (causes point to earlier records); never loop if it did.
                links.append({"seq": cause, "time": None, "kind": "limit", "text": "the chain stops here"})
                return links
            if len(links) >= MAX_LINKS:
                links.append(
                    {"seq": cause, "time": None, "kind": "limit", "text": f"… more causes (at most {MAX_LINKS} shown)"}
                )
                return links
            record = self.get(cause)
            if record is None:
                links.append(
                    {
                        "seq": cause,
                        "time": None,
                        "kind": "forgotten",
                        "text": f"earlier steps are no longer kept (the session keeps the last "
                        f"{4 * self.limit:,} records; the oldest kept is #{self.base})",
                    }
                )
        return links

    # -- the trace view -----------------------------------------------------------------------
    def records(
        self, filters: dict[str, str] | None = None, offset: int = 0, limit: int = 200, upto: int | None = None
    ) -> Record:
        """A page of kept records, oldest first, as trace-view rows (`row`): the `limit` rows
        from `offset` among those matching `filters` (kind: a prefix such as "sync" or
        "queue.get"; controller; key: the subject contains it; name: an object name it
        mentions; text: anywhere in the row) and, with `upto`, numbered at most `upto` (the
        trace as it was at a moment of the past: nothing after it). Returns {total, offset,
        rows, first, last, compactedBefore, upto}."""
        limit = max(0, min(int(limit), MAX_PAGE))
        offset = max(0, int(offset))
        wanted = tuple(sorted((k, v) for k, v in (filters or {}).items() if k in FILTER_FIELDS and v))
        last = self.last if upto is None else min(self.last, int(upto))
        out: Record = {"first": self.base, "last": last, "compactedBefore": self.full_from, "upto": upto}
        if not wanted:
            total = max(0, last + 1 - self.base)
            seqs: Iterable[int] = range(self.base + offset, self.base + min(total, offset + limit))
        else:
            matches = self._matches(wanted)
            total = bisect.bisect_right(matches, last)  # matches are in seq order
            seqs = matches[offset : min(total, offset + limit)]
        rows = []
        for seq in seqs:
            record = self.get(seq)
            if record is not None:
                rows.append(trace_row(record))
        out.update({"total": total, "offset": offset, "rows": rows})
        return out

    def _matches(self, wanted: tuple[tuple[str, str], ...]) -> array[int]:
        """Seqs of the kept records matching `wanted`, extended from the last scan when the
        filter is the same."""
        cached = self._match
        if cached is not None and cached[0] == wanted and cached[1] >= self.base:
            _, scanned, found = cached
        else:
            scanned, found = self.base, array("q")
        want = dict(wanted)
        kind = want.get("kind", "").lower()
        kinds = {i for i, name in enumerate(self._kind_names) if name.startswith(kind)} if kind else None
        others = {k: v.lower() for k, v in want.items() if k != "kind"}
        end = self.last + 1
        for seq in range(scanned, end):
            i = seq - self.base
            if kinds is not None and self._kinds[i] not in kinds:
                continue
            if others:
                record = self.get(seq)
                if record is None or not _row_matches(trace_row(record), record, others):
                    continue
            found.append(seq)
        self._match = (wanted, end, found)
        return found


def _row_matches(r: Record, record: Record, want: dict[str, str]) -> bool:
    for field, value in want.items():
        if field == "controller" and r["controller"].lower() != value:
            return False
        if field == "key" and value not in r["subject"].lower():
            return False
        if field == "name" and not any(
            isinstance(record.get(k), str) and value in record[k].lower() for k in ("name", "key", "object", "pod")
        ):
            return False
        if field == "text":
            haystack = f"{r['kind']} {r['controller']} {r['subject']} {r['detail']} {r['text']}"
            if value not in haystack.lower():
                return False
    return True


# -- words ------------------------------------------------------------------------------------------
def trace_row(record: Record, *, text: bool = True) -> Record:
    """A record as a trace-view row: seq, time, cause, kind, controller, subject, detail (the
    other fields, `k=v`) and, with `text`, the record in words (as a why? link says it). The
    complete trace view and the live sample of newest rows both draw these rows."""
    kind = record["kind"]
    subject = record.get("key") or record.get("informer") or record.get("name") or record.get("object") or ""
    if kind == "pod.transition":
        subject = f"{record.get('namespace')}/{record.get('name')}"
    elif kind == "event":
        subject = str(record.get("object", ""))  # the object it is about (`name` is the Event's)
    controller = (
        record.get("controller") or record.get("operator") or CONTROLLER_OF_QUEUE.get(record.get("queue") or "", "")
    )
    if not controller and kind.startswith("informer"):
        controller = str(record.get("informer", "")).split("/", 1)[0]
    skip = {"time", "seq", "kind", "cause", "key", "controller", "queue"}
    detail = " ".join(f"{k}={_short(v)}" for k, v in record.items() if k not in skip)
    return {
        "seq": record["seq"],
        "time": record["time"],
        "cause": record.get("cause"),
        "kind": kind,
        "controller": str(controller or ""),
        "subject": str(subject),
        "detail": detail,
        **({"text": describe(record)} if text else {}),
    }


def link(record: Record) -> Record:
    return {"seq": record["seq"], "time": record["time"], "kind": record["kind"], "text": describe(record)}


def describe(record: Record) -> str:
    """One record in words, as a link of a why? chain says it."""
    kind = record["kind"]
    if record.get("compacted"):
        return f"{kind} (its details are no longer kept: the session keeps the fields of its newest records)"
    g = record.get
    worker = g("worker")
    by = f" (worker {worker})" if worker is not None else ""
    if kind == "action.start":
        return f"{_action_words(g('action'))} ({_source(g('source'))}, t={record['time']:.3f})"
    if kind == "action":
        state = "applied" if g("ok") else f"failed: {g('error')}"
        return f"{_action_words(g('action'))} {state}"
    if kind == "api.request":
        where = f"{g('namespace')}/{g('name')}" if g("namespace") and g("name") else g("name") or (
            f"in {g('namespace')}" if g("namespace") else ""
        )
        return f"{g('client')} sent {g('verb')} {g('resource')}{' ' + where if where else ''} (request {g('id')})"
    if kind == "api.response":
        words = f"the API server answered request {g('id')}: {g('code')}"
        if g("reason"):
            words += f" {g('reason')}"
        if g("fault") is not None:
            words += " (an injected fault)"
        return words
    if kind == "informer.event":
        handler = str(g("type"))
        resource = str(g("informer", "")).rsplit("/", 1)[-1]
        noun = _KIND_OF_RESOURCE.get(resource, resource)
        tomb = " (a tombstone)" if g("tombstone") else ""
        return f"{g('informer')} saw {g('key')} {_PAST.get(handler, handler)}{tomb}: its handlers ran ({handler}{noun})"
    if kind == "informer.deliver":
        return f"the watch delivered {g('events')} event(s) to {g('informer')} (resourceVersion {g('resourceVersion')})"
    if kind == "informer.relist":
        return f"{g('informer')} relisted: {g('reason')}"
    if kind == "informer.synced":
        return f"{g('informer')} synced ({g('items')} items)"
    if kind == "queue.add":
        return f"{g('key')} was added to the {g('queue')} queue (depth {g('depth')})"
    if kind == "queue.get":
        return f"worker {worker} took {g('key')} from the {g('queue')} queue" if worker is not None else (
            f"{g('key')} was taken from the {g('queue')} queue"
        )
    if kind == "queue.done":
        return f"{g('key')} done{by}"
    if kind == "queue.forget":
        return f"{g('key')} forgotten by the rate limiter"
    if kind == "queue.add_after":
        return f"{g('key')} will be added to the {g('queue')} queue in {_secs(g('delay'))}"
    if kind == "queue.add_rate_limited":
        return f"{g('key')} requeued rate-limited in {_secs(g('delay'))} (requeue {g('requeues')})"
    if kind == "sync.start" and g("handler") is not None:
        return f"operator {g('controller')}'s handler {g('handler')} on {g('key')} started (retry {g('retry')})"
    if kind == "sync.end" and g("handler") is not None:
        return f"operator {g('controller')}'s handler {g('handler')} on {g('key')} ended: " + (g("error") or "success")
    if kind == "sync.start":
        return f"sync #{record['seq']} of {g('key')} started{by}"
    if kind == "sync.stage":
        return f"sync of {g('key')}: stage {g('stage')}{_stage_words(record)}"
    if kind == "sync.request":
        pod = f" of {g('pod')}" if g("pod") else ""
        return f"the sync of {g('key')} issued {g('verb')} #{g('n')}{pod}"
    if kind == "sync.end":
        return f"sync of {g('key')} ended" + (f" with an error: {g('error')}" if g("error") else "")
    if kind == "sync.requeue":
        if g("decision") == "dropped":
            return f"{g('key')} dropped from the queue after {g('requeues')} requeues"
        return f"{g('key')} requeued after a failed sync (in {_secs(g('delay'))})"
    if kind == "expectations":
        return f"expectations of {g('key')}: {g('op')} (add={g('add')}, del={g('del')})"
    if kind == "pod.transition":
        return f"pod {g('namespace')}/{g('name')}: {g('from') or 'new'} → {g('to')}"
    if kind == "node.transition":
        return f"node {g('name')}: {g('from') or 'new'} → {g('to')}"
    if kind == "event":
        return f"Event {g('reason')} on {g('object')}: {g('message')}"
    if kind == "watch.fault":
        return f"watch fault {g('fault')} on {g('resource')}"
    if kind == "controller.restart":
        return f"the {g('controller')} controller restarted"
    if kind == "controller.log":
        return f"{g('controller')} logged: {g('message')}"
    if kind == "error":
        return f"an error was contained ({g('where')}): {g('error')}"
    if kind == "operator.handler":
        outcome = g("outcome")
        if outcome == "temporary":
            outcome = f"temporary error, retried in {g('delay')} s ({g('error')})"
        elif outcome in ("permanent", "error"):
            outcome = f"{outcome} ({g('error')})"
        return f"operator {g('operator')}'s handler {g('handler')} on {g('key')} (retry {g('retry')}): {outcome}"
    return str(kind)


def _stage_words(record: Record) -> str:
    common = ("time", "seq", "kind", "cause", "controller", "key", "worker", "stage")
    fields = {k: v for k, v in record.items() if k not in common}
    if record.get("stage") == "manage" and "action" in fields:
        words = f": {fields['action']}"
        if "count" in fields:
            words += f" {fields['count']}"
        if "have" in fields and "want" in fields:
            words += f" (have {fields['have']}, want {fields['want']})"
        return words
    return (" (" + ", ".join(f"{k}={_short(v, 40)}" for k, v in fields.items()) + ")") if fields else ""


def _action_words(action: Any) -> str:
    if not isinstance(action, dict) or not action:
        return "an action"
    verb = next(iter(action))
    body = action[verb]
    if not isinstance(body, dict):
        return str(verb)
    if verb == "apply":
        meta = body.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        return f"apply {body.get('kind')} {name}"
    parts = [str(verb)]
    for field in ("fault", "verb", "resource", "kind", "name", "selector", "replicas", "code", "reason", "controller"):
        if field in body and not isinstance(body[field], dict | list):
            parts.append(f"{field}={body[field]}" if field in ("replicas", "code", "selector") else str(body[field]))
    return " ".join(parts)


def _source(source: Any) -> str:
    if source in (None, "user"):
        return "you"
    return str(source)


def _secs(value: Any) -> str:
    return f"{value:.3f} s" if isinstance(value, int | float) else str(value)


def _short(value: Any, limit: int = 80) -> str:
    if isinstance(value, float):
        text = f"{value:.3f}" if math.isfinite(value) else str(value)
    elif isinstance(value, dict | list):
        text = json.dumps(value, separators=(",", ":"), default=str)
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"

"""One scenario under two configurations, and the differences between any two reports (issue 16 §4).

Guarantees
----------
* `compare(scenario, a, b)` runs the scenario twice, headless, with the same seed and the same
  timeline: world A with the partial `config` block `a` merged over the scenario's config, world B
  with `b`. A block is checked as a `config` action's body is (`check_config(..., partial=True)`);
  a bad one raises ScenarioError naming the side and the field (`--a: config.workers: must be >= 1`)
  before anything runs. The scenario's own `expect:` checks are not judged (they state what one
  configuration does). When `a` and `b` are the scenario's own `compare` blocks, the result has
  `labels` (the file's names of the two sides); `default_pair` gives those blocks, or DEFAULT_PAIR
  for a file without one.
* `diff_reports(report_a, report_b)` reads only sections every report has (docs/scenarios.md: `time`,
  `apiCalls`, `objects`, and the `statusHistory` addition), so it compares any two reports: two
  configurations, a fork beside its original, two seeds. It never mutates its inputs.
* Deterministic: the same two reports give the same summary, byte for byte (every list in a stated
  order; `json.dumps(..., sort_keys=True)` for text).
* Bounded: the work is linear in the two reports (plus a sort of the divergence candidates), and
  every list in the summary has a ceiling (the `MAX_*` constants); `truncated` says how many
  entries each capped list left out (0 when none).

Definitions (what each part of the summary means)
------------------------------------------------
calls
    Every entry of `apiCalls`, counted by (client, verb, resource, code). Rows with the largest
    difference |A - B| first, then by key.
events
    Every Event object, counted by (reason, type, source component), each counting its `count`
    (the correlator's count includes occurrences the spam filter never sent). Order as calls.
pods
    Live pods per owner at sample times. A pod is live from its successful `create` (in
    `apiCalls`) until the first successful `delete` of it (from then on it is terminating, and no
    controller counts it as active). Built from the report alone, so that any two reports compare;
    a trace subscription would see phases too, but a report at `?at=T` or from a fork has no trace.
    A pod's owner is its controller ownerReference when the pod is still in `objects`; for a pod
    gone by the end, the ReplicaSet (created by replicaset-controller) or ReplicationController
    (replication-controller) whose generated-name prefix (`<name>-`, cut as the API server cuts a
    generateName) its name starts with; else `none`. Owners are `Kind/namespace/name`. At most
    `MAX_SAMPLES` sample times, evenly spaced by a round step from 0 to the later report's time; a
    sample past a report's own time is null for that report.
status
    For every ReplicaSet and ReplicationController in `statusHistory`, the sequence of distinct
    status tuples (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas,
    terminatingReplicas, and the types of the conditions that are True) with the time each began:
    the report's status writes folded one after the other, a write that leaves the tuple as it was
    adds nothing. A field a report never wrote is null (v1.5 has no terminatingReplicas). The
    controller name maps to the kind it controls (the controller registry: `replicaset` →
    ReplicaSet, `replicationcontroller` → ReplicationController); an unknown name stays as it is.
divergences
    The moments where the two worlds start to differ. Time is cut into buckets of `bucket` seconds
    (default 1.0), compared over the time both reports have reached (0 to the earlier `time`):
    - calls: in each bucket, the multiset of (client, verb, resource, code) of the calls sent in
      it, watches left out. Names are ignored: generated pod names come from the seeded rng and
      differ as soon as the two worlds draw differently, which says nothing new; so do the times
      reflectors re-watch (client-go draws the watch timeout at random).
    - events: in each bucket, the multiset of (reason, type, component) of the Event writes sent
      in it (a `create` or `patch` of an Event in `apiCalls`, joined by name to the Event object).
    - pods: at the end of each bucket, the live-pod count of every owner.
    - status: at the end of each bucket, the status tuple of every owner (a field null on either
      side is not compared).
    Each of the four is equal or different in each bucket; a divergence is a bucket where it is
    different and the bucket before it was equal (the first bucket's predecessor counts as
    equal, and so does any bucket in which neither world had anything of that kind). Its `time` is
    the earliest moment inside the bucket of something that differs (a call or event write of a
    differing kind, a change of a differing owner), its `what` one line naming the largest
    difference (`replicaset-controller: A sent 10 create pods (403), B 4`; on a tie, a
    controller's before other clients', then the larger count), `+N more` when there are others.
    Ordered by time, then calls, events, pods, status. Two identical reports have none.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from controlplane import safeyaml
from controlplane.controllers.registry import CONTROLLERS, REPLICATION_CONTROLLER
from controlplane.runner import run
from controlplane.scenario import Scenario, ScenarioError, check_config, load_file

Obj = dict[str, Any]

# The default pair of the CLI and the compare page: the ReplicationControllers of the scenario
# under the v1.5 ReplicationManager (A) and under today's controller (B), docs/versions.md.
DEFAULT_PAIR: tuple[Obj, Obj] = (
    {"controllerVersion": {REPLICATION_CONTROLLER.name: "v1.5"}},
    {"controllerVersion": {REPLICATION_CONTROLLER.name: REPLICATION_CONTROLLER.default_version.version}},
)

DEFAULT_BUCKET = 1.0
MIN_BUCKET = 0.001
MAX_SAMPLES = 120
MAX_ROWS = 200  # calls and events rows each
MAX_OWNERS = 50  # owners in `pods` and in `status`
MAX_STATUS = 100  # status tuples per owner and side
MAX_DIVERGENCES = 100
MAX_CONFIG_TEXT = 64 * 1024  # a --a/--b text (a YAML flow mapping)
# Upstream's maxGeneratedNameLength (63 - 5): the part of a generateName the API server keeps.
MAX_GENERATED_PREFIX = 58
GENERATED_SUFFIX = 5
# A controller's client (its component) -> the kind it controls; its name -> that kind; its
# resource -> its kind (the registry's, in its order).
CLIENT_KINDS = {spec.component: spec.kind for spec in CONTROLLERS}
CONTROLLER_KINDS = {spec.name: spec.kind for spec in CONTROLLERS}
RESOURCE_KINDS = {spec.resource: spec.kind for spec in CONTROLLERS}
KIND_ORDER = ("calls", "events", "pods", "status")
STATUS_FIELDS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "terminatingReplicas")


# -- configurations ------------------------------------------------------------------------------


def check_block(raw: Any, side: str) -> Obj:
    """A partial config block, checked as a `config` action's body; ScenarioError naming
    `--<side>` and the field otherwise. Returns it normalised."""
    if raw is None:
        return {}
    try:
        return check_config(raw, "config", partial=True)
    except ScenarioError as exc:
        raise ScenarioError(f"--{side}: {exc}") from None


def parse_block(text: str, side: str) -> Obj:
    """A block written as YAML (`'whatIf: {slowStart: false}'`, `{}` or empty for the scenario's
    own config); ScenarioError (`--a: …`) for bad YAML or a bad block."""
    if len(text) > MAX_CONFIG_TEXT:
        raise ScenarioError(f"--{side}: longer than {MAX_CONFIG_TEXT // 1024} KiB")
    try:
        data = safeyaml.load(text) if text.strip() else {}
    except safeyaml.YAMLInputError as exc:
        raise ScenarioError(f"--{side}: not YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ScenarioError(f"--{side}: must be a mapping of config keys (e.g. 'workers: 2'), not {data!r:.60}")
    return check_block(data, side)


def merge_config(config: Mapping[str, Any], block: Mapping[str, Any]) -> Obj:
    """`config` with `block` merged over it as a `config` action merges: nested mappings
    (featureGates, whatIf, …) key by key, anything else replaced."""
    merged = copy.deepcopy(dict(config))
    for key, value in block.items():
        current = merged.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merged[key] = {**current, **copy.deepcopy(value)}
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def default_pair(scenario: Scenario | None) -> tuple[Obj, Obj]:
    """The pair to compare when none is given: the scenario's own `compare` blocks (a lesson
    states which two configurations it is about), else DEFAULT_PAIR."""
    if scenario is not None and scenario.compare is not None:
        return (copy.deepcopy(scenario.compare["a"]["config"]), copy.deepcopy(scenario.compare["b"]["config"]))
    return (copy.deepcopy(DEFAULT_PAIR[0]), copy.deepcopy(DEFAULT_PAIR[1]))


def pair_labels(scenario: Scenario, a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, str] | None:
    """The file's labels of its two sides when `a` and `b` are exactly its `compare` blocks, else None."""
    if scenario.compare is None:
        return None
    if (dict(a), dict(b)) != (scenario.compare["a"]["config"], scenario.compare["b"]["config"]):
        return None
    return scenario.compare["a"]["label"], scenario.compare["b"]["label"]


def with_config(scenario: Scenario, block: Mapping[str, Any]) -> Scenario:
    """The scenario with `block` merged over its config and without its checks."""
    return dataclasses.replace(scenario, config=merge_config(scenario.config, block), expect=[])


def describe_block(block: Mapping[str, Any]) -> str:
    """A block in one line, for labels: `whatIf.slowStart: false`; `defaults` when empty."""
    parts: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for key in sorted(value):
                walk(f"{prefix}.{key}" if prefix else key, value[key])
        else:
            text = "true" if value is True else "false" if value is False else str(value)
            parts.append(f"{prefix}: {text}")

    if block:
        walk("", dict(block))
    return ", ".join(parts) if parts else "defaults"


# -- running ------------------------------------------------------------------------------------


def compare(
    scenario: Scenario | str,
    a: Mapping[str, Any] | None,
    b: Mapping[str, Any] | None,
    *,
    seed: int | None = None,
    until: float | None = None,
    bucket: float = DEFAULT_BUCKET,
) -> Obj:
    """Run `scenario` (a Scenario, a file or a shipped name) under A and B and return
    `{"scenario", "seed", "until", "a", "b", "summary"}` (`summary` is `diff_reports` of the two
    reports). ScenarioError for a bad file or block, LimitError when a run reaches a ceiling."""
    block_a, block_b = check_block(a, "a"), check_block(b, "b")
    loaded = load_file(scenario) if isinstance(scenario, str) else scenario
    reports = [run(with_config(loaded, block), seed=seed, until=until).report for block in (block_a, block_b)]
    result = {
        "scenario": loaded.name,
        "seed": loaded.seed if seed is None else seed,
        "until": loaded.until if until is None else until,
        "a": block_a,
        "b": block_b,
        "summary": diff_reports(reports[0], reports[1], bucket=bucket),
    }
    labels = pair_labels(loaded, block_a, block_b)
    if labels is not None:  # the file's own pair (a lesson): its names for the two sides
        result["labels"] = {"a": labels[0], "b": labels[1]}
    return result


# -- reading a report ---------------------------------------------------------------------------


def _objects(report: Mapping[str, Any], kind: str) -> list[Obj]:
    objects = report.get("objects") or {}
    return list(objects.get(kind) or [])


def _calls(report: Mapping[str, Any]) -> list[Obj]:
    return list(report.get("apiCalls") or [])


def _ok(code: Any) -> bool:
    return isinstance(code, int) and 200 <= code < 300


def _owner_kind(controller: str) -> str:
    return CONTROLLER_KINDS.get(controller, controller)


class _Owners:
    """Who owns a pod (see "pods" in the module docstring)."""

    def __init__(self, report: Mapping[str, Any]) -> None:
        self.by_pod: dict[tuple[str, str], str] = {}
        for pod in _objects(report, "Pod"):
            meta = pod.get("metadata") or {}
            for ref in meta.get("ownerReferences") or []:
                if ref.get("controller"):
                    ns = meta.get("namespace") or ""
                    self.by_pod[(ns, meta.get("name") or "")] = f"{ref.get('kind')}/{ns}/{ref.get('name')}"
                    break
        # (kind, namespace) -> {generated-name prefix: owner name}
        self.prefixes: dict[tuple[str, str], dict[str, str]] = {}
        for kind in CONTROLLER_KINDS.values():
            for owner in _objects(report, kind):
                meta = owner.get("metadata") or {}
                self._add(kind, meta.get("namespace") or "", meta.get("name"))
        for call in _calls(report):
            created = RESOURCE_KINDS.get(call.get("resource") or "")
            if created is not None and call.get("verb") == "create" and _ok(call.get("code")):
                self._add(created, call.get("namespace") or "", call.get("name"))

    def _add(self, kind: str, namespace: str, name: Any) -> None:
        if isinstance(name, str) and name:
            self.prefixes.setdefault((kind, namespace), {})[f"{name}-"[:MAX_GENERATED_PREFIX]] = name

    def owner(self, namespace: str, name: str, client: str) -> str:
        found = self.by_pod.get((namespace, name))
        if found is not None:
            return found
        kind = CLIENT_KINDS.get(client)
        if kind is not None and len(name) > GENERATED_SUFFIX:
            owner = self.prefixes.get((kind, namespace), {}).get(name[:-GENERATED_SUFFIX])
            if owner is not None:
                return f"{kind}/{namespace}/{owner}"
        return "none"


def _pod_changes(report: Mapping[str, Any]) -> list[tuple[float, str, int]]:
    """(time, owner, live pods of that owner after the change), in call order."""
    owners = _Owners(report)
    live: dict[tuple[str, str], str] = {}
    counts: Counter[str] = Counter()
    out: list[tuple[float, str, int]] = []
    for call in _calls(report):
        if call.get("resource") != "pods" or not _ok(call.get("code")):
            continue
        namespace, name = call.get("namespace") or "", call.get("name")
        if not isinstance(name, str):
            continue
        key = (namespace, name)
        if call.get("verb") == "create" and key not in live:
            owner = live[key] = owners.owner(namespace, name, str(call.get("client")))
            counts[owner] += 1
        elif call.get("verb") == "delete" and key in live:
            owner = live.pop(key)
            counts[owner] -= 1
        else:
            continue
        out.append((float(call["time"]), owner, counts[owner]))
    return out


def _status_changes(report: Mapping[str, Any]) -> list[tuple[float, str, Obj]]:
    """(time, owner, status tuple) of every write that changed the tuple, by time then owner."""
    out: list[tuple[float, str, Obj]] = []
    history = report.get("statusHistory") or {}
    for controller in sorted(history):
        kind = _owner_kind(controller)
        for key in sorted(history[controller]):
            namespace, _, name = key.rpartition("/")
            owner = f"{kind}/{namespace}/{name}"
            status: Obj = {}
            previous: Obj | None = None
            for write in history[controller][key]:
                for field, value in (write.get("changed") or {}).items():
                    status[field] = value
                current = _status_tuple(status)
                if current != previous:
                    out.append((float(write["time"]), owner, current))
                    previous = current
    out.sort(key=lambda change: (change[0], change[1]))
    return out


def _status_tuple(status: Mapping[str, Any]) -> Obj:
    tuple_: Obj = {}
    for field in STATUS_FIELDS:
        value = status.get(field)
        # A count the controller never wrote is 0 (upstream omits zeros), except a field this
        # controller version never writes at all (terminatingReplicas before v1.33).
        tuple_[field] = value if value is not None else (None if field == "terminatingReplicas" else 0)
    conditions = status.get("conditions") or []
    tuple_["conditions"] = sorted(
        str(c.get("type")) for c in conditions if isinstance(c, dict) and c.get("status") == "True"
    )
    return tuple_


# -- the summary --------------------------------------------------------------------------------


def diff_reports(report_a: Mapping[str, Any], report_b: Mapping[str, Any], *, bucket: float = DEFAULT_BUCKET) -> Obj:
    """The summary of the differences between two reports (see the module docstring)."""
    if not (isinstance(bucket, int | float) and math.isfinite(bucket) and bucket >= MIN_BUCKET):
        raise ValueError(f"bucket: must be a finite number of seconds >= {MIN_BUCKET}")
    time_a, time_b = float(report_a.get("time") or 0.0), float(report_b.get("time") or 0.0)
    truncated: dict[str, int] = {}
    calls = _count_rows(
        ("client", "verb", "resource", "code"),
        _count(_calls(report_a), _call_key),
        _count(_calls(report_b), _call_key),
    )
    events = _count_rows(
        ("reason", "type", "component"),
        _event_counts(report_a),
        _event_counts(report_b),
    )
    calls, truncated["calls"] = _cap(calls, MAX_ROWS)
    events, truncated["events"] = _cap(events, MAX_ROWS)
    pods_a, pods_b = _pod_changes(report_a), _pod_changes(report_b)
    status_a, status_b = _status_changes(report_a), _status_changes(report_b)
    pods, truncated["owners"] = _pod_series(pods_a, pods_b, time_a, time_b)
    status, truncated["status"] = _status_history(status_a, status_b)
    horizon = min(time_a, time_b)
    divergences = [
        *_count_divergences("calls", _call_stream(report_a), _call_stream(report_b), horizon, bucket),
        *_count_divergences("events", _event_stream(report_a), _event_stream(report_b), horizon, bucket),
        *_state_divergences("pods", pods_a, pods_b, horizon, bucket),
        *_state_divergences("status", status_a, status_b, horizon, bucket),
    ]
    divergences.sort(key=lambda d: (d["time"], KIND_ORDER.index(d["kind"]), d["what"]))
    divergences, truncated["divergences"] = _cap(divergences, MAX_DIVERGENCES)
    return {
        "time": {"a": time_a, "b": time_b},
        "bucket": float(bucket),
        "calls": calls,
        "events": events,
        "pods": pods,
        "status": status,
        "divergences": divergences,
        "truncated": truncated,
    }


def _cap(items: list[Any], ceiling: int) -> tuple[list[Any], int]:
    return items[:ceiling], max(0, len(items) - ceiling)


def _call_key(call: Mapping[str, Any]) -> tuple[Any, ...]:
    return (str(call.get("client")), str(call.get("verb")), str(call.get("resource")), call.get("code"))


def _count(items: Iterable[Mapping[str, Any]], key: Any) -> Counter[tuple[Any, ...]]:
    return Counter(key(item) for item in items)


def _event_key(event: Mapping[str, Any]) -> tuple[str, str, str]:
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    return (str(event.get("reason") or ""), str(event.get("type") or ""), str(component))


def _event_counts(report: Mapping[str, Any]) -> Counter[tuple[Any, ...]]:
    counts: Counter[tuple[Any, ...]] = Counter()
    for event in _objects(report, "Event"):
        count = event.get("count")
        counts[_event_key(event)] += count if isinstance(count, int) and count > 0 else 1
    return counts


def _sort_key(key: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple("" if part is None else f"{part:>8}" if isinstance(part, int) else str(part) for part in key)


def _count_rows(fields: tuple[str, ...], a: Counter[tuple[Any, ...]], b: Counter[tuple[Any, ...]]) -> list[Obj]:
    keys = sorted(set(a) | set(b), key=lambda k: (-abs(a[k] - b[k]), _sort_key(k)))
    return [
        {**dict(zip(fields, key, strict=True)), "a": a[key], "b": b[key], "differs": a[key] != b[key]} for key in keys
    ]


def _sample_times(end: float) -> list[float]:
    """0, then a round step (1, 2 or 5 times 10^k s) up to `end`, at most MAX_SAMPLES, `end` last."""
    if end <= 0:
        return [0.0]
    raw = end / (MAX_SAMPLES - 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    count = int(end // step)
    times = [round(i * step, 9) for i in range(count + 1)]
    if times[-1] < end:
        times.append(end)
    return times[:MAX_SAMPLES]


def _series(changes: list[tuple[float, str, int]], owners: list[str], times: list[float], end: float) -> Obj:
    """Per owner (and `total`) the live count at each sample time; null past `end`."""
    values: dict[str, list[int | None]] = {owner: [] for owner in (*owners, "total")}
    counts: Counter[str] = Counter()
    total = 0
    index = 0
    for t in times:
        while index < len(changes) and changes[index][0] <= t:
            _, owner, count = changes[index]
            total += count - counts[owner]
            counts[owner] = count
            index += 1
        for owner in owners:
            values[owner].append(counts[owner] if t <= end else None)
        values["total"].append(total if t <= end else None)
    return values


def _pod_series(
    changes_a: list[tuple[float, str, int]], changes_b: list[tuple[float, str, int]], time_a: float, time_b: float
) -> tuple[Obj, int]:
    owners = sorted({owner for _, owner, _ in changes_a} | {owner for _, owner, _ in changes_b})
    shown, dropped = _cap(owners, MAX_OWNERS)
    times = _sample_times(max(time_a, time_b))
    series_a = _series(changes_a, shown, times, time_a)
    series_b = _series(changes_b, shown, times, time_b)
    return {
        "times": times,
        "total": {"a": series_a["total"], "b": series_b["total"]},
        "owners": {owner: {"a": series_a[owner], "b": series_b[owner]} for owner in shown},
    }, dropped


def _status_history(
    changes_a: list[tuple[float, str, Obj]], changes_b: list[tuple[float, str, Obj]]
) -> tuple[Obj, int]:
    owners = sorted({owner for _, owner, _ in changes_a} | {owner for _, owner, _ in changes_b})
    shown, dropped = _cap(owners, MAX_OWNERS)
    out: Obj = {}
    for owner in shown:
        sides: Obj = {}
        for side, changes in (("a", changes_a), ("b", changes_b)):
            entries = [{"time": t, **value} for t, who, value in changes if who == owner]
            sides[side], left_out = _cap(entries, MAX_STATUS)
            dropped += left_out
        out[owner] = sides
    return out, dropped


# -- divergences --------------------------------------------------------------------------------


def _call_stream(report: Mapping[str, Any]) -> list[tuple[float, tuple[Any, ...]]]:
    # Watches are left out: a reflector's re-watch time is drawn from the seeded rng, so it
    # moves as soon as the two worlds draw differently, whatever they do.
    return [(float(call["time"]), _call_key(call)) for call in _calls(report) if call.get("verb") != "watch"]


def _event_stream(report: Mapping[str, Any]) -> list[tuple[float, tuple[Any, ...]]]:
    """(time, (reason, type, component)) of every Event write in `apiCalls`."""
    by_name = {
        ((event.get("metadata") or {}).get("namespace") or "", (event.get("metadata") or {}).get("name")): event
        for event in _objects(report, "Event")
    }
    out: list[tuple[float, tuple[Any, ...]]] = []
    for call in _calls(report):
        if call.get("resource") == "events" and call.get("verb") in ("create", "patch") and _ok(call.get("code")):
            event = by_name.get((call.get("namespace") or "", call.get("name")))
            if event is not None:
                out.append((float(call["time"]), _event_key(event)))
    return out


def _bucket_of(t: float, width: float) -> int:
    return int(t // width)


def _what_counts(kind: str, key: tuple[Any, ...], na: int, nb: int) -> str:
    if kind == "calls":
        client, verb, resource, code = key
        return f"{client}: A sent {na} {verb} {resource} ({code}), B {nb}"
    reason, type_, component = key
    return f"A: {na} {reason} events ({type_}, {component}), B: {nb}"


def _count_divergences(
    kind: str,
    stream_a: list[tuple[float, tuple[Any, ...]]],
    stream_b: list[tuple[float, tuple[Any, ...]]],
    horizon: float,
    width: float,
) -> list[Obj]:
    buckets: dict[int, tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]], dict[tuple[Any, ...], float]]] = {}
    for side, stream in ((0, stream_a), (1, stream_b)):
        for t, key in stream:
            if t > horizon:
                continue
            entry = buckets.setdefault(_bucket_of(t, width), (Counter(), Counter(), {}))
            counts_a, counts_b, first = entry
            (counts_a if side == 0 else counts_b)[key] += 1
            if key not in first or t < first[key]:
                first[key] = t
    out: list[Obj] = []
    previous_equal, previous_index = True, None
    for index in sorted(buckets):
        if previous_index is not None and index != previous_index + 1:
            previous_equal = True  # the buckets between had nothing of this kind in either world
        counts_a, counts_b, first = buckets[index]
        differing = [key for key in first if counts_a[key] != counts_b[key]]
        if differing and previous_equal:
            # The largest difference first; on a tie, what a controller did before other clients.
            differing.sort(
                key=lambda k: (
                    -abs(counts_a[k] - counts_b[k]),
                    k[0] not in CLIENT_KINDS,
                    -max(counts_a[k], counts_b[k]),
                    _sort_key(k),
                )
            )
            top = differing[0]
            what = _what_counts(kind, top, counts_a[top], counts_b[top])
            if len(differing) > 1:
                what += f" (+{len(differing) - 1} more)"
            out.append({"time": min(first[k] for k in differing), "kind": kind, "what": what})
        previous_equal, previous_index = not differing, index
    return out


def _same(kind: str, a: Any, b: Any) -> bool:
    if kind == "pods":
        return bool((a or 0) == (b or 0))
    if a is None or b is None:
        return a is None and b is None
    return all(a[f] == b[f] for f in a if a[f] is not None and b.get(f) is not None)


def _what_state(kind: str, owner: str, a: Any, b: Any) -> str:
    if kind == "pods":
        return f"live pods of {owner}: A {a or 0}, B {b or 0}"
    if a is None or b is None:
        return f"status of {owner}: {'A' if b is None else 'B'} wrote one, {'B' if b is None else 'A'} none yet"
    fields = [f for f in a if a[f] is not None and b.get(f) is not None and a[f] != b[f]]
    parts = [f"{f} A {_shown(a[f])}, B {_shown(b[f])}" for f in fields]
    return f"status of {owner}: " + "; ".join(parts)


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def _state_divergences(
    kind: str,
    changes_a: list[tuple[float, str, Any]],
    changes_b: list[tuple[float, str, Any]],
    horizon: float,
    width: float,
) -> list[Obj]:
    """Divergences of a per-owner state (pods count, status tuple), judged at bucket ends."""
    merged = sorted(
        [(t, 0, i, owner, value) for i, (t, owner, value) in enumerate(changes_a) if t <= horizon]
        + [(t, 1, i, owner, value) for i, (t, owner, value) in enumerate(changes_b) if t <= horizon],
        key=lambda change: (change[0], change[1], change[2]),
    )
    state: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
    differing: set[str] = set()
    out: list[Obj] = []
    previous_equal = True
    position = 0
    while position < len(merged):
        index = _bucket_of(merged[position][0], width)
        changed_at: dict[str, float] = {}
        while position < len(merged) and _bucket_of(merged[position][0], width) == index:
            t, side, _, owner, value = merged[position]
            state[side][owner] = value
            changed_at.setdefault(owner, t)
            if _same(kind, state[0].get(owner), state[1].get(owner)):
                differing.discard(owner)
            else:
                differing.add(owner)
            position += 1
        # A bucket with no change leaves the state as it was: judged only where something changed.
        if differing and previous_equal:
            candidates = sorted((changed_at.get(owner, math.inf), owner) for owner in differing)
            t, owner = candidates[0]
            what = _what_state(kind, owner, state[0].get(owner), state[1].get(owner))
            if len(differing) > 1:
                what += f" (+{len(differing) - 1} more)"
            out.append({"time": t, "kind": kind, "what": what})
        previous_equal = not differing
    return out


# -- text ---------------------------------------------------------------------------------------


def table(result: Mapping[str, Any]) -> str:
    """`compare`'s result as aligned plain text: divergences, calls and events that differ, pods
    over time (at most 13 samples), status history side by side."""
    summary = result["summary"]
    lines = [
        f"compare: {result.get('scenario', '?')} (seed {result.get('seed', '?')}, until {summary['time']['a']:g} s)",
        f"  A{_label(result, 'a')}: {describe_block(result.get('a') or {})}",
        f"  B{_label(result, 'b')}: {describe_block(result.get('b') or {})}",
        "",
        "divergences (where A and B start to differ)",
    ]
    if summary["divergences"]:
        lines += [f"  t={d['time']:>10.3f}  {d['kind']:<7} {d['what']}" for d in summary["divergences"]]
    else:
        lines.append("  none: the two worlds did the same things")
    for title, fields, rows in (
        ("API calls", ("client", "verb", "resource", "code"), summary["calls"]),
        ("Events", ("reason", "type", "component"), summary["events"]),
    ):
        lines += ["", f"{title} (A, B; differing rows first)"]
        lines += _aligned(
            [
                [*(str(row[f]) for f in fields), str(row["a"]), str(row["b"]), "≠" if row["differs"] else ""]
                for row in rows
            ]
        )
    pods = summary["pods"]
    picks = _picks(len(pods["times"]), 13)
    lines += ["", "Live pods over time (A/B)"]
    header = ["t (s)", *(f"{pods['times'][i]:g}" for i in picks)]
    rows = [header]
    for name, series in (("total", pods["total"]), *pods["owners"].items()):
        rows.append([name, *(f"{_dash(series['a'][i])}/{_dash(series['b'][i])}" for i in picks)])
    lines += _aligned(rows)
    lines += ["", "Status history (time: replicas/fullyLabeled/ready/available[/terminating] conditions)"]
    for owner, sides in summary["status"].items():
        lines.append(f"  {owner}")
        width = max(len(sides["a"]), len(sides["b"]))
        rows = [[_status_text(sides["a"], i), _status_text(sides["b"], i)] for i in range(width)]
        lines += _aligned([["A", "B"], *rows], indent="    ")
    dropped = {k: v for k, v in summary["truncated"].items() if v}
    if dropped:
        lines += ["", "left out (ceilings): " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items()))]
    return "\n".join(lines)


def _label(result: Mapping[str, Any], side: str) -> str:
    labels = result.get("labels") or {}
    return f" ({labels[side]})" if side in labels else ""


def _picks(n: int, most: int) -> list[int]:
    if n <= most:
        return list(range(n))
    return sorted({round(i * (n - 1) / (most - 1)) for i in range(most)})


def _dash(value: Any) -> str:
    return "-" if value is None else str(value)


def _status_text(entries: list[Obj], i: int) -> str:
    if i >= len(entries):
        return ""
    e = entries[i]
    counts = "/".join(_dash(e[f]) for f in STATUS_FIELDS if f != "terminatingReplicas" or e[f] is not None)
    conditions = f" {','.join(e['conditions'])}" if e["conditions"] else ""
    return f"{e['time']:.3f}: {counts}{conditions}"


def _aligned(rows: list[list[str]], indent: str = "  ") -> list[str]:
    if not rows:
        return [f"{indent}(none)"]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]

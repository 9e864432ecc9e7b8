"""Panels: each partial of the debugger page, its template and the data it shows.

A panel id names what it shows (`queue-replicaset`, `truth:replicaset:default/web`). Its context
is built from the simulation's public snapshots and the frame builder's folded records, never
from private fields; the same template renders it for the first page load (through the viewer's
state message) and for every later frame. Everything here is a pure read.

Three refresh rules:
* ALWAYS and the per-controller panels are small: rendered every frame, sent when the HTML
  changed (ages and countdowns move with the clock);
* ON_CHANGE panels are rendered when a record made them dirty;
* focused panels (the inspector and cache-vs-truth of one key) exist while some viewer looks at
  that key.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from controlplane.expectations import EXPECTATIONS_TIMEOUT
from controlplane.labels import selector_from_label_selector, selector_from_set
from controlplane.nodes import POD_STATES as frames_states
from controlplane.podutil import is_pod_active
from controlplane.replicaset.replica_set import POD_CONTROLLER_INDEX, pod_controller_index_key
from controlplane.scenario import default_config
from controlplane.simulation import (
    CONTROLLER_REGISTRY,
    DEFAULT_CONTROLLER_VERSION,
    K15,
    NAMESPACE_INDEX,
    Kube,
    session_state,
)

Obj = dict[str, Any]


class Folds(Protocol):
    """What the panels read of the records a frame builder folded (`dashboard.host.frames`)."""

    pods: dict[str, list[Any]]  # "ns/name" -> [id, owner index, state index, node index]
    pod_ids: dict[str, int]
    owners: list[str]
    owner_index: dict[str, int]
    tiles: dict[int, dict[int, int]]
    nodes: list[str]
    node_index: dict[str, int]
    node_pods: dict[int, dict[int, int]]
    node_states: dict[str, str]
    transitions: list[list[Any]]
    narrations: dict[tuple[str, str], Any]
    latest: Any
    logs: dict[str, Any]


if TYPE_CHECKING:
    from controlplane.session.session import Session

    class Hosted(Session):
        """A session as the dashboard hosts it (`dashboard.host.hosted.HostedSimulation`): the
        panels read the session's state and the folds of its frame builder."""

        frames: Folds


ALWAYS = ("informers", "faults", "clients", "breakpoints", "timers")
ON_CHANGE = ("owners", "nodes", "actions", "inspector-latest")
# Each controller version's sync stages, with the upstream line each links to, and the line of
# its worker loop (the inspector's first and last rows): the controller registry's
# (controlplane.controllers, through the facade).
_VERSIONS = {version.version: version for spec in CONTROLLER_REGISTRY for version in spec.versions}
STAGES = {stage.name: stage for stage in _VERSIONS[DEFAULT_CONTROLLER_VERSION].stages}
PROCESS_NEXT_WORK_ITEM = _VERSIONS[DEFAULT_CONTROLLER_VERSION].worker_source
# The v1.5 ReplicationManager (config.controllerVersion.replicationcontroller: v1.5): the lines
# within a sync its narration links to besides its stages, at the pinned commit K15 (the
# verified anchors docs/versions.md cites).
_K15_RC = K15 + "pkg/controller/replication/replication_controller.go"
_K15_RC_UTILS = K15 + "pkg/controller/replication/replication_controller_utils.go"
_K15_UTILS = K15 + "pkg/controller/controller_utils.go"
_K15_REF = K15 + "pkg/controller/controller_ref_manager.go"
_K15_CACHE = K15 + "pkg/controller/lookup_cache.go"
K15_LINES = {
    "worker": _VERSIONS["v1.5"].worker_source,
    "forget": f"{_K15_RC}#L471",
    "add_rate_limited": f"{_K15_RC}#L475",
    "sleep": f"{_K15_RC}#L624",
    "requeue_not_synced": f"{_K15_RC}#L626",
    "delete_expectations": f"{_K15_RC}#L633",
    "satisfied_expectations": f"{_K15_UTILS}#L139",
    "list_everything": f"{_K15_RC}#L660",
    "list_selector": f"{_K15_RC}#L698",
    "filter_active_pods": f"{_K15_RC}#L704",
    "adopt_pod": f"{_K15_REF}#L106",
    "release_pod": f"{_K15_REF}#L121",
    "release_requeue": f"{_K15_RC}#L694",
    "manage_call": f"{_K15_RC}#L708",
    "expect_creations": f"{_K15_RC}#L510",
    "create_with_ref": f"{_K15_RC}#L527",
    "create_pods": f"{_K15_RC}#L529",
    "creation_observed": f"{_K15_RC}#L534",
    "created_by": f"{_K15_UTILS}#L399",
    "active_pods": f"{_K15_RC}#L563",
    "active_pods_less": f"{_K15_UTILS}#L647",
    "expect_deletions": f"{_K15_RC}#L579",
    "delete_pod": f"{_K15_RC}#L585",
    "deletion_observed": f"{_K15_RC}#L589",
    "calculate_status": f"{_K15_RC_UTILS}#L87",
    "calculate_status_call": f"{_K15_RC}#L713",
    "update_status": f"{_K15_RC_UTILS}#L33",
    "get_pod_controller": f"{_K15_RC}#L238",
    "is_cache_valid": f"{_K15_RC}#L278",
    "overlapping": f"{_K15_RC_UTILS}#L80",
    "matching_cache": f"{_K15_CACHE}#L56",
    "invalidate_all": f"{_K15_CACHE}#L88",
    "update_rc": f"{_K15_RC}#L303",
}
LIST_LIMIT = 50  # entries a list panel shows before "+N more"
TRUTH_LIMIT = 60


def queue_id(controller: str) -> str:
    return f"queue-{controller}"


def workers_id(controller: str) -> str:
    return f"workers-{controller}"


def expectations_id(controller: str) -> str:
    return f"expectations-{controller}"


def lookupcache_id(controller: str) -> str:
    return f"lookupcache-{controller}"


def inspector_id(controller: str, key: str) -> str:
    return f"inspector:{controller}:{key}"


def truth_id(controller: str, key: str) -> str:
    return f"truth:{controller}:{key}"


def pod_id(key: str) -> str:
    """The Pod tab's panel of one pod ("namespace/name"), live while a viewer has it open."""
    return f"pod:{key}"


def owner_panel_ids(controller: str, key: str) -> list[str]:
    """The panels of a page focused on one key (#19 §3): the controller's queue and expectations
    with only that key's entries (`queue-replicaset:default/web`), filtered before the lists are
    capped, so that a focused list shows the key's entries and not the first 50 of everyone's."""
    return [f"{queue_id(controller)}:{key}", f"{expectations_id(controller)}:{key}"]


def owner_label(kind: str, namespace: str | None, name: str) -> str:
    """The page's name for an owner (a timeline lane, a tile block, an owner card's
    `data-owner`): "Kind/name" in the default namespace, "Kind/namespace/name" in any other, so
    that two owners of one name in two namespaces are two lanes and two blocks, not one."""
    if not namespace or namespace == "default":
        return f"{kind}/{name}"
    return f"{kind}/{namespace}/{name}"


def owner_parts(label: str) -> tuple[str, str, str]:
    """(kind, namespace, name) of an `owner_label`."""
    parts = label.split("/", 2)
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    return parts[0], "default", parts[-1]


def is_focused_panel(panel_id: str) -> bool:
    return panel_id.startswith(("inspector:", "truth:", "pod:")) or (
        panel_id.startswith(("queue-", "expectations-")) and ":" in panel_id
    )


def template_of(panel_id: str) -> str:
    base = panel_id.split(":", 1)[0].split("-", 1)[0]
    return f"dashboard/_{base}.html"


def context(hosted: Hosted, panel_id: str) -> Obj:
    base, _, rest = panel_id.partition(":")
    if base.startswith(("queue-", "expectations-")):
        # `queue-replicaset` or, for a page focused on a key, `queue-replicaset:default/web`:
        # the same element on the page (dom_id), the key's entries only.
        kind, controller = base.split("-", 1)
        builder = queue if kind == "queue" else expectations
        only = rest or None
        return {
            "panel_id": panel_id,
            "dom_id": base,
            "only": only,
            "sim": hosted,
            **version(hosted, controller),
            **builder(hosted, controller, only),
        }
    if base.startswith(("workers-", "lookupcache-")):
        kind, controller = base.split("-", 1)
        builder = workers if kind == "workers" else lookupcache
        return {"panel_id": panel_id, "sim": hosted, **version(hosted, controller), **builder(hosted, controller)}
    if base in ("inspector", "truth"):
        controller, key = rest.split(":", 1)
        builder = inspector if base == "inspector" else truth
        return {"panel_id": panel_id, "sim": hosted, **builder(hosted, controller, key)}
    if base == "pod":
        namespace, name = rest.split("/", 1)
        return {"panel_id": panel_id, "sim": hosted, **pod_context(hosted, namespace, name)}
    if base == "inspector-latest":
        return {"panel_id": panel_id, "sim": hosted, **inspector(hosted, None, None)}
    return {"panel_id": panel_id, "sim": hosted, **_PANELS[base](hosted)}


# -- status (JSON, every frame) -------------------------------------------------------------------
def status(hosted: Hosted) -> Obj:
    """The session's state (`session_state`, the service's view model), with the pods the frame
    builder counts."""
    state: Obj = {}
    for key, value in session_state(hosted).items():
        state[key] = value
        if key == "revision":
            state["pods"] = len(hosted.frames.pods)
    return state


def version(hosted: Hosted, name: str) -> Obj:
    """What every controller panel's heading says of the version the controller runs."""
    running = hosted.sim.controllers[name].version
    return {"version": running, "v15": running != DEFAULT_CONTROLLER_VERSION}


# -- the controller side --------------------------------------------------------------------------
def queue(hosted: Hosted, name: str, only: str | None = None) -> Obj:
    """The workqueue; with `only` (a key), only that key's entries, each list filtered before it
    is capped (and where the key stands in the queue)."""
    c = hosted.sim.controllers[name]
    snap = c.queue.snapshot()
    now = hosted.sim.now
    workers = {str(w.key): w.id for w in c.workers if w.key is not None}

    def mine(key: Any) -> bool:
        return only is None or str(key) == only

    waiting = [
        {"key": w["key"], "readyAt": w["readyAt"], "in": max(0.0, w["readyAt"] - now)}
        for w in snap["waiting"]
        if mine(w["key"])
    ]
    requeues = [
        {"key": key, "count": n, "backoff": snap["backoff"].get(key, 0.0)}
        for key, n in snap["requeues"].items()
        if mine(key)
    ]
    processing = [
        {"key": p["key"], "for": now - p["startedAt"], "worker": workers.get(str(p["key"]))}
        for p in snap["processing"]
        if mine(p["key"])
    ]
    everyone = snap["queue"]
    queued = [k for k in everyone if mine(k)]
    position = next((i for i, k in enumerate(everyone) if str(k) == only), None) if only is not None else None
    in_queue = set(everyone)
    dirty_only = [k for k in snap["dirty"] if k not in in_queue and mine(k)]
    return {
        "position": position,
        "all_queued": len(everyone),
        "controller": name,
        "name": snap["name"],
        "manual": c.config.manual_workers,
        "queued": queued[:LIST_LIMIT],
        "queued_more": max(0, len(queued) - LIST_LIMIT),
        "dirty_processing": dirty_only[:LIST_LIMIT],
        "processing": processing[:LIST_LIMIT],
        "waiting": waiting[:LIST_LIMIT],
        "waiting_more": max(0, len(waiting) - LIST_LIMIT),
        "requeues": requeues[:LIST_LIMIT],
        "depth": snap["depth"],
        "adds": snap["adds"],
        "retries": snap["retries"],
    }


def workers(hosted: Hosted, name: str) -> Obj:
    c = hosted.sim.controllers[name]
    now = hosted.sim.now
    rows = [
        {
            "id": w.id,
            "key": w.key,
            "stage": w.stage,
            "for": now - w.since,
            "syncs": w.syncs,
            "surplus": w.id >= c.config.workers,
        }
        for w in c.workers
    ]
    return {
        "controller": name,
        "manual": c.config.manual_workers,
        "configured": c.config.workers,
        "workers": rows,
        "synced": bool(c.workers),
        "depth": len(c.queue.snapshot()["queue"]),
    }


def expectations(hosted: Hosted, name: str, only: str | None = None) -> Obj:
    """Every key's expectations record; with `only`, that key's (and its consistency rows)."""
    c = hosted.sim.controllers[name]
    rows = []
    keys = list(c.expectations.keys())
    total = len(keys)
    for key in keys if only is None else [k for k in keys if k == only]:
        snap = c.expectations.snapshot(key)
        if snap is None:
            continue
        age = snap["age"]
        satisfied = snap["fulfilled"] or snap["expired"] or not c.expectations.enabled
        rows.append(
            {
                "key": key,
                "add": snap["add"],
                "del": snap["del"],
                "uids": snap.get("uids", [])[:LIST_LIMIT],
                "uids_more": max(0, len(snap.get("uids", [])) - LIST_LIMIT),
                "age": age,
                "ttl_left": max(0.0, EXPECTATIONS_TIMEOUT - age),
                "ttl_pct": min(100.0, 100.0 * age / EXPECTATIONS_TIMEOUT),
                "expired": snap["expired"],
                "fulfilled": snap["fulfilled"],
                "satisfied": satisfied,
            }
        )
    consistency = []
    read = {
        "pods": c.pod_informer.indexer.last_store_sync_resource_version(),
        c.kind.group_resource: c.rs_informer.indexer.last_store_sync_resource_version(),
    }
    for owner, written in c.consistency.snapshot().items():
        if only is not None and str(owner) != only:
            continue
        for resource, rv in written.items():
            have = read.get(resource, "")
            consistency.append(
                {"owner": owner, "resource": resource, "written": rv, "read": have, "stale": _rv_gt(rv, have)}
            )
    # At most LIST_LIMIT rows, the blocking ones (the next sync may not create or delete) first;
    # the consistency store likewise. A page focused on a key sees that key's (`only`).
    shown = [r for r in rows if not r["satisfied"]] + [r for r in rows if r["satisfied"]]
    shown_consistency = [r for r in consistency if r["stale"]] + [r for r in consistency if not r["stale"]]
    return {
        "controller": name,
        "enabled": c.expectations.enabled,
        "rows": shown[:LIST_LIMIT],
        "rows_more": max(0, len(shown) - LIST_LIMIT),
        "total": total,
        "timeout": EXPECTATIONS_TIMEOUT,
        "gate": c.config.stale_controller_consistency and c.kind.kind == "ReplicaSet",
        "consistency": shown_consistency[:LIST_LIMIT],
        "consistency_more": max(0, len(consistency) - LIST_LIMIT),
    }


def lookupcache(hosted: Hosted, name: str) -> Obj:
    """The v1.5 ReplicationManager's MatchingCache (pod labels → RC): its newest entries and
    counters, with the controller's last `controller.log` lines (overlapping RCs). Empty for a
    version without one (the page then hides the panel)."""
    c = hosted.sim.controllers[name]
    cache = getattr(c, "lookup_cache", None)
    if cache is None:
        return {"controller": name, "cache": None}
    snap = cache.snapshot()
    lookups = snap["hits"] + snap["misses"]
    return {
        "controller": name,
        "cache": snap,
        "entries": [{**e, "selector": ",".join(f"{k}={v}" for k, v in e["labels"].items())} for e in snap["entries"]],
        "entries_more": max(0, snap["size"] - len(snap["entries"])),
        "hit_pct": 100.0 * snap["hits"] / lookups if lookups else None,
        "fill_pct": 100.0 * snap["size"] / snap["capacity"],
        "logs": list(reversed(hosted.frames.logs.get(name, ()))),
        "k15": K15_LINES,
    }


def _rv_gt(a: str, b: str) -> bool:
    try:
        return bool(b) and int(a) > int(b)
    except ValueError:
        return False


def informers(hosted: Hosted) -> Obj:
    sim = hosted.sim
    revision = sim.server.revision
    rows = []
    for name, c in sim.controllers.items():
        for informer in (c.pod_informer, c.rs_informer):
            snap = informer.snapshot(revision)
            snap["controller"] = name
            snap["store_count"] = sim.server.count(informer.resource)
            rows.append(snap)
    return {"rows": rows, "revision": revision}


# -- the cluster side -----------------------------------------------------------------------------
def owners(hosted: Hosted) -> Obj:
    sim = hosted.sim
    tiles = hosted.frames.tiles
    versions = {name: c.version for name, c in sim.controllers.items()}
    rows = []
    for resource, kind in (("replicasets", "ReplicaSet"), ("replicationcontrollers", "ReplicationController")):
        controller = "replicaset" if kind == "ReplicaSet" else "replicationcontroller"
        for obj in sim.server.objects(resource):
            meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
            owner = owner_label(kind, meta.get("namespace"), meta["name"])
            try:
                if kind == "ReplicaSet":
                    selector = str(selector_from_label_selector(spec.get("selector")))
                else:
                    selector = str(selector_from_set(spec.get("selector") or {}))
            except ValueError:
                selector = ""
            index = hosted.frames.owner_index.get(owner)
            rows.append(
                {
                    "kind": kind,
                    "short": "rs" if kind == "ReplicaSet" else "rc",
                    "controller": controller,
                    "version": versions.get(controller),
                    "namespace": meta.get("namespace"),
                    "name": meta["name"],
                    "key": f"{meta.get('namespace')}/{meta['name']}",
                    "owner": owner,
                    "desired": spec.get("replicas", 1),
                    "current": status.get("replicas", 0),
                    "ready": status.get("readyReplicas", 0),
                    "available": status.get("availableReplicas", 0),
                    "labelled": status.get("fullyLabeledReplicas", 0),
                    "terminating": status.get("terminatingReplicas"),
                    "generation": meta.get("generation"),
                    "observed": status.get("observedGeneration"),
                    "conditions": status.get("conditions") or [],
                    "selector": selector,
                    "deleting": bool(meta.get("deletionTimestamp")),
                    "min_ready": spec.get("minReadySeconds", 0),
                    "tiles": tiles.get(index, {}) if index is not None else {},
                }
            )
    orphans = sum(tiles.get(0, {}).values())
    return {"rows": rows, "orphans": orphans}


def nodes(hosted: Hosted) -> Obj:
    """From the frame builder's running counts (no pass over the pods): each node's Ready
    state, whether its kubelet runs, its taints, and its pods by state."""
    sim, frames = hosted.sim, hosted.frames
    terminal = {frames_states.index("Failed"), frames_states.index("Succeeded")}
    rows = []
    for name in sorted(sim.nodes.kubelets, key=_node_order):
        counts = frames.node_pods.get(frames.node_index.get(name, -1), {})
        node = sim.server.peek("nodes", None, name) or {}
        rows.append(
            {
                "name": name,
                "state": frames.node_states.get(name, "Unknown"),
                "kubelet": "running" if sim.nodes.kubelets[name].running else "stopped",
                "pods": sum(n for s, n in counts.items() if s not in terminal),
                "podStates": {frames_states[s]: n for s, n in sorted(counts.items())},
                "taints": [f"{t.get('key')}:{t.get('effect')}" for t in (node.get("spec") or {}).get("taints") or []],
            }
        )
    unscheduled = sum(frames.node_pods.get(0, {}).values())
    return {"rows": rows, "unscheduled": unscheduled, "compact": len(rows) > 12}


def faults(hosted: Hosted) -> Obj:
    sim = hosted.sim
    defaults = default_config()
    rules = [rule.describe() for rule in sim.faults.api_rules]
    paused = []
    for name, c in sim.controllers.items():
        for informer in (c.pod_informer, c.rs_informer):
            if informer.reflector.paused:
                paused.append({"controller": name, "informer": informer.name, "resource": informer.resource})
    node_names = sorted(sim.nodes.kubelets, key=_node_order)
    down = [name for name in node_names if not sim.nodes.kubelets[name].running]
    what_ifs = []
    for group in ("whatIf", "featureGates"):
        for key, value in sim.config[group].items():
            if value != defaults[group][key]:
                what_ifs.append({"group": group, "key": key, "value": value, "default": defaults[group][key]})
    versions = [
        {"controller": name, "value": chosen, "default": defaults["controllerVersion"][name]}
        for name, chosen in sim.config["controllerVersion"].items()
        if chosen != defaults["controllerVersion"][name]
    ]
    tuned = []
    for key in ("workers", "burstReplicas", "kubeApiQPS", "kubeApiBurst", "watchLatency", "apiLatency"):
        if sim.config[key] != defaults[key]:
            tuned.append({"key": key, "value": sim.config[key], "default": defaults[key]})
    return {
        "client_paused": Kube.of(hosted).paused_clients(),
        "rules": [r for r in rules if r["inForce"]],
        "spent": [r for r in rules if not r["inForce"]][-10:],
        "paused": paused,
        "down": down,
        "what_ifs": what_ifs,
        "tuned": tuned,
        "versions": versions,
        "gc_off": not sim.config["enableGarbageCollector"],
        "manual": list(sim.config["manualWorkers"]),
        "config": sim.config,
        "controllers": list(sim.controllers),
        "nodes": node_names,
    }


def clients(hosted: Hosted) -> Obj:
    """The Kubernetes API clients of this simulation (`k8s_ops.clients`: the host's bookkeeping,
    live; empty for a moment of the past, which no client watched)."""
    from dashboard.host import k8s_ops

    return {"rows": k8s_ops.clients(hosted)[:LIST_LIMIT]}


def _node_order(name: str) -> tuple[int, str]:
    number = name.rsplit("-", 1)[-1]
    return (int(number), name) if number.isdigit() else (0, name)


def breakpoints(hosted: Hosted) -> Obj:
    return {"items": [{**vars(bp), "description": bp.describe()} for bp in hosted.breakpoints.items], "hit": hosted.hit}


def timers(hosted: Hosted) -> Obj:
    sim = hosted.sim
    upcoming = sim.upcoming(6) if sim.started else []
    return {"timers": [{**t, "in": t["time"] - sim.now} for t in upcoming]}


ACTIONS_SHOWN = 100


def actions(hosted: Hosted) -> Obj:
    """The newest ACTIONS_SHOWN actions, oldest first: the one order of every log on the page
    (Events, Trace and API calls grow at the bottom too; docs/dashboard.md)."""
    entries = hosted.sim.actions[-ACTIONS_SHOWN:]
    return {"entries": entries, "total": len(hosted.sim.actions), "older": len(hosted.sim.actions) - len(entries)}


# -- one key: the inspector and cache vs truth ------------------------------------------------------
def inspector(hosted: Hosted, controller: str | None, key: str | None) -> Obj:
    frames = hosted.frames
    if controller is None or key is None:
        narration = frames.latest
        history: list[Any] = []
    else:
        syncs = list(frames.narrations.get((controller, key), ()))
        narration = syncs[-1] if syncs else None
        history = list(reversed(syncs[:-1]))
    return {
        "narration": narration,
        "history": history,
        **narration_tables(),
        "key": key,
        "controller": controller,
        "follow": controller is None,
    }


def narration_tables() -> Obj:
    """What the inspector links each version's stages to: v1.36's `SyncStage`s by name and its
    processNextWorkItem line, v1.5's `SyncStage`s by name and the K15 lines within a v1.5 sync."""
    return {
        "stages": STAGES,
        "process_next_work_item": PROCESS_NEXT_WORK_ITEM,
        "stages15": {stage.name: stage for stage in _VERSIONS["v1.5"].stages},
        "k15": K15_LINES,
    }


REQUEST_SCAN = 200_000  # the API call log is searched back this far for a pod's calls
REQUESTS_SHOWN = 30
MAX_TRANSITIONS_SHOWN = 200  # a pod's transitions in its detail (a crash-looping pod has many)


def pod_context(hosted: Hosted, namespace: str, name: str) -> Obj:
    """What the Pod tab shows of one pod, now: the one-off read above and the live panel
    (`pod_id`) the frames rebuild when a record touches the pod."""
    sim, frames = hosted.sim, hosted.frames
    obj = sim.server.peek("pods", namespace, name)
    key = f"{namespace}/{name}"
    pod_id = frames.pod_ids.get(key)
    history = []
    if sim.record_log is not None:
        # From the kept records, so that each transition has its seq: its why? and its moment.
        page = sim.records({"kind": "pod.transition", "key": key}, 0, MAX_TRANSITIONS_SHOWN)
        for row in page["rows"]:
            if row["subject"] == key:
                record = sim.record_log.get(row["seq"]) or {}
                owner_of = record.get("owner") or ""
                history.append({"time": row["time"], "owner": owner_of, "state": record.get("to"), "seq": row["seq"]})
    elif pod_id is not None:
        for t, pid, owner, state in frames.transitions:
            if pid == pod_id:
                history.append({"time": t, "owner": frames.owners[owner], "state": frames_states[state]})
    calls = []
    requests = sim.server.requests
    for index in range(len(requests) - 1, max(-1, len(requests) - 1 - REQUEST_SCAN), -1):
        record = requests[index]
        if (
            record["name"] == name
            and record["namespace"] == namespace
            and (record["resource"] or "").startswith("pods")
        ):
            calls.append(record.to_dict())
            if len(calls) >= REQUESTS_SHOWN:
                break
    calls.reverse()  # the newest REQUESTS_SHOWN, oldest first: the page's one order
    owner = None
    if obj is not None:
        for ref in obj["metadata"].get("ownerReferences") or ():
            if ref.get("controller"):
                owner = ref
    return {
        "namespace": namespace,
        "name": name,
        "pod": obj,
        "yaml": yaml.safe_dump(obj, sort_keys=False, default_flow_style=False) if obj is not None else "",
        "owner": owner,
        # The page's name for it (a focus target; "Kind/namespace/name" outside the default one).
        "owner_label": owner_label(str(owner.get("kind")), namespace, str(owner.get("name"))) if owner else "",
        "state": sim.nodes.pod_state(namespace, name),
        "node": (obj.get("spec") or {}).get("nodeName") if obj is not None else None,
        "history": history,
        "calls": calls,
    }


def truth(hosted: Hosted, controller: str, key: str) -> Obj:
    """Three columns for one controller key: the pods the API server has, the pods the
    controller's informer cache has, the pods its last sync counted — with the differences."""
    sim = hosted.sim
    c = sim.controllers.get(controller)
    empty = {"controller": controller, "key": key, "found": False}
    if c is None or key.count("/") != 1:
        return empty
    namespace, name = key.split("/", 1)
    rs = sim.server.peek(c.kind.resource, namespace, name)
    if rs is None:
        return empty
    uid = rs["metadata"].get("uid")
    try:
        selector = c.kind.selector(rs)
    except ValueError:
        selector = None

    v15 = c.version != DEFAULT_CONTROLLER_VERSION
    # v1.5 with the garbage collector off lists by selector alone, ownerReferences unread (R7.f).
    refs_read = not v15 or bool(getattr(c, "garbage_collector_enabled", True))

    def word(pod: Obj, meta: Obj) -> str | None:
        """The pod's word if this key's controller would consider it (its own, or an orphan
        its selector matches), else None."""
        for ref in (meta.get("ownerReferences") or ()) if refs_read else ():
            if ref.get("controller"):
                return _pod_word(pod) if ref.get("uid") == uid else None
        if selector is not None and selector.matches(meta.get("labels")):
            return _pod_word(pod)
        return None

    # The truth: every pod of the namespace in the API server's store, read without a request.
    server: dict[str, str] = {}
    for pod in sim.server.objects("pods"):
        meta = pod["metadata"]
        if meta.get("namespace") == namespace:
            w = word(pod, meta)
            if w is not None:
                server[meta["name"]] = w
    # The controller's cache, through the index its own sync uses (its pods, and the orphans
    # of the namespace), so that a 10,000-pod cache is not walked for one key. The v1.5
    # manager's cache has its own indexes: read its namespace.
    cache: dict[str, str] = {}
    indexer = c.pod_informer.indexer
    own = pod_controller_index_key(namespace, {"kind": c.kind.kind, "name": name, "uid": uid})
    lookups = [(POD_CONTROLLER_INDEX, own), (POD_CONTROLLER_INDEX, namespace)]
    if v15:
        lookups = [(NAMESPACE_INDEX, namespace)]
    for index_name, index_value in lookups:
        for pod in indexer.by_index(index_name, index_value):
            meta = pod["metadata"]
            w = word(pod, meta)
            if w is not None:
                cache[meta["name"]] = w
    ctx = c.last_syncs.get(key)
    counted = set(ctx.counted or []) if ctx is not None else set()
    names = sorted(set(server) | set(cache) | counted)
    rows = []
    for pod in names:
        # A row differs when the cache's word is not the API server's, or when the last sync's
        # count disagrees with what either side calls active: FilterActivePods counts only
        # active pods, so a Failed or terminating pod both sides agree on is rightly uncounted.
        in_count = pod in counted
        said = server.get(pod), cache.get(pod)
        miscounted = ctx is not None and any((word == "active") != in_count for word in said)
        rows.append(
            {
                "name": pod,
                "server": said[0],
                "cache": said[1],
                "counted": in_count,
                "differs": said[0] != said[1] or miscounted,
            }
        )
    differing = [r for r in rows if r["differs"]]
    shown = differing[:TRUTH_LIMIT] + [r for r in rows if not r["differs"]][: max(0, TRUTH_LIMIT - len(differing))]
    shown.sort(key=lambda r: r["name"])
    return {
        "controller": controller,
        "key": key,
        "namespace": namespace,
        "found": True,
        "desired": (rs.get("spec") or {}).get("replicas", 1),
        "server_active": sum(1 for v in server.values() if v == "active"),
        "server_total": len(server),
        "cache_active": sum(1 for v in cache.values() if v == "active"),
        "cache_total": len(cache),
        "counted": len(counted),
        "sync_time": ctx.start if ctx is not None else None,
        "differing": len(differing),
        "rows": shown,
        "hidden": len(rows) - len(shown),
        "cache_rv": c.pod_informer.indexer.last_store_sync_resource_version(),
        "server_rv": sim.server.revision,
        "paused": c.pod_informer.reflector.paused,
        "lag": c.pod_informer.lag(),
    }


def _pod_word(pod: Obj) -> str:
    if pod["metadata"].get("deletionTimestamp"):
        return "terminating"
    return "active" if is_pod_active(pod) else str((pod.get("status") or {}).get("phase", "inactive")).lower()


def fmt_seconds(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else str(value)


_PANELS = {
    "informers": informers,
    "owners": owners,
    "nodes": nodes,
    "faults": faults,
    "clients": clients,
    "breakpoints": breakpoints,
    "timers": timers,
    "actions": actions,
}

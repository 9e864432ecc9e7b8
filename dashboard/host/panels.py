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

from controlplane.simulation import (
    DEFAULT_CONTROLLER_VERSION,
    K15,
    SYNC_VERSIONS,
    Kube,
    session_state,
    views,
)
from controlplane.simulation import POD_STATES as frames_states

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
    status_series: dict[tuple[str, str], Any]  # (controller, key) -> [[time, replicas, ready, available]]
    latest: Any
    logs: dict[str, Any]


if TYPE_CHECKING:
    from controlplane.simulation import Session

    class Hosted(Session):
        """A session as the dashboard hosts it (`dashboard.host.hosted.HostedSimulation`): the
        panels read the session's state and the folds of its frame builder."""

        frames: Folds


ALWAYS = ("informers", "faults", "clients", "breakpoints", "timers")
ON_CHANGE = ("owners", "nodes", "actions", "inspector-latest")
# Each controller version's sync stages, with the upstream line each links to, and the line of
# its worker loop (the inspector's first and last rows): the controller registry's, by
# (controller, version) through the facade. A version name is not enough: v1.36 is the
# ReplicaSet controller's (and its RC adapter's) and the Deployment controller's, two tables.
_VERSIONS = SYNC_VERSIONS
_V15 = next(v for v in _VERSIONS.values() if v.narration == "v1.5")
# The default narration's table (the first controller told in v1.36's ReplicaSet words).
_DEFAULT = next(v for v in _VERSIONS.values() if v.narration == DEFAULT_CONTROLLER_VERSION)
STAGES = {stage.name: stage for stage in _DEFAULT.stages}
PROCESS_NEXT_WORK_ITEM = _DEFAULT.worker_source
# The v1.5 ReplicationManager (config.controllerVersion.replicationcontroller: v1.5): the lines
# within a sync its narration links to besides its stages, at the pinned commit K15 (the
# verified anchors docs/versions.md cites).
_K15_RC = K15 + "pkg/controller/replication/replication_controller.go"
_K15_RC_UTILS = K15 + "pkg/controller/replication/replication_controller_utils.go"
_K15_UTILS = K15 + "pkg/controller/controller_utils.go"
_K15_REF = K15 + "pkg/controller/controller_ref_manager.go"
_K15_CACHE = K15 + "pkg/controller/lookup_cache.go"
K15_LINES = {
    "worker": _V15.worker_source,
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


def rollout_id(controller: str, key: str) -> str:
    """The rollout panel of one owner whose children are owners themselves (a Deployment)."""
    return f"rollout:{controller}:{key}"


def owner_panel_ids(controller: str, key: str) -> list[str]:
    """The panels of a page focused on one key (#19 §3): the controller's queue and expectations
    with only that key's entries (`queue-replicaset:default/web`), filtered before the lists are
    capped, so that a focused list shows the key's entries and not the first 50 of everyone's;
    and for an owner of owners (a Deployment: `views.child_controllers`), its rollout."""
    ids = [f"{queue_id(controller)}:{key}", f"{expectations_id(controller)}:{key}"]
    if views.child_controllers(controller):
        ids.append(rollout_id(controller, key))
    return ids


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
    return panel_id.startswith(("inspector:", "truth:", "pod:", "rollout:")) or (
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
    if base == "rollout":
        controller, key = rest.split(":", 1)
        return {"panel_id": panel_id, "sim": hosted, **rollout(hosted, controller, key)}
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
    running = views.controller_version(hosted, name)
    return {"version": running, "v15": running != DEFAULT_CONTROLLER_VERSION}


# -- the controller side --------------------------------------------------------------------------
def queue(hosted: Hosted, name: str, only: str | None = None) -> Obj:
    """The workqueue; with `only` (a key), only that key's entries (`views.queue`)."""
    return views.queue(hosted, name, only, LIST_LIMIT)


def workers(hosted: Hosted, name: str) -> Obj:
    return views.workers(hosted, name)


def expectations(hosted: Hosted, name: str, only: str | None = None) -> Obj:
    """Every key's expectations record; with `only`, that key's (`views.expectations`)."""
    return views.expectations(hosted, name, only, LIST_LIMIT)


def lookupcache(hosted: Hosted, name: str) -> Obj:
    """The v1.5 ReplicationManager's MatchingCache (pod labels → RC): its newest entries and
    counters, with the controller's last `controller.log` lines (overlapping RCs). Empty for a
    version without one (the page then hides the panel)."""
    cache = views.lookup_cache(hosted, name)
    if cache is None:
        return {"controller": name, "cache": None}
    return {
        "controller": name,
        **cache,
        "logs": list(reversed(hosted.frames.logs.get(name, ()))),
        "k15": K15_LINES,
    }


def informers(hosted: Hosted) -> Obj:
    return views.informers(hosted)


# -- the cluster side -----------------------------------------------------------------------------
def owners(hosted: Hosted) -> Obj:
    """Every owner (`views.owners`) with the page's name for it and its pods' tiles."""
    tiles = hosted.frames.tiles
    rows = []
    for row in views.owners(hosted):
        owner = owner_label(row["kind"], row["namespace"], row["name"])
        index = hosted.frames.owner_index.get(owner)
        by = row.get("controlled_by")
        # An owner that is itself owned (a Deployment's ReplicaSet): the page groups its lane and
        # tiles under its parent, and focusing the parent shows them.
        parent = owner_label(str(by["kind"]), row["namespace"], str(by["name"])) if by else ""
        tiles_of = tiles.get(index, {}) if index is not None else {}
        rows.append({**row, "owner": owner, "parent": parent, "tiles": tiles_of})
    orphans = sum(tiles.get(0, {}).values())
    return {"rows": rows, "orphans": orphans, "kinds": [kind for _, kind, *_ in views.OWNER_KINDS]}


def nodes(hosted: Hosted) -> Obj:
    """From the frame builder's running counts (no pass over the pods): each node's Ready
    state, whether its kubelet runs, its taints, and its pods by state."""
    frames = hosted.frames
    terminal = {frames_states.index("Failed"), frames_states.index("Succeeded")}
    rows = []
    for node in views.nodes(hosted):
        name = node["name"]
        counts = frames.node_pods.get(frames.node_index.get(name, -1), {})
        rows.append(
            {
                "name": name,
                "state": frames.node_states.get(name, "Unknown"),
                "kubelet": node["kubelet"],
                "pods": sum(n for s, n in counts.items() if s not in terminal),
                "podStates": {frames_states[s]: n for s, n in sorted(counts.items())},
                "taints": node["taints"],
            }
        )
    unscheduled = sum(frames.node_pods.get(0, {}).values())
    return {"rows": rows, "unscheduled": unscheduled, "compact": len(rows) > 12}


def faults(hosted: Hosted) -> Obj:
    return {"client_paused": Kube.of(hosted).paused_clients(), **views.faults(hosted)}


def clients(hosted: Hosted) -> Obj:
    """The Kubernetes API clients of this simulation (`k8s_ops.clients`: the host's bookkeeping,
    live; empty for a moment of the past, which no client watched)."""
    from dashboard.host import k8s_ops

    return {"rows": k8s_ops.clients(hosted)[:LIST_LIMIT]}


def breakpoints(hosted: Hosted) -> Obj:
    return {"items": [{**vars(bp), "description": bp.describe()} for bp in hosted.breakpoints.items], "hit": hosted.hit}


OPERATOR_HANDLINGS_SHOWN = 50


def operators(hosted: Hosted) -> Obj:
    """The world's embedded kopf operators and their pending handlings (`views.operators`: kopf's
    progress annotations read from the store)."""
    return views.operators(hosted, OPERATOR_HANDLINGS_SHOWN)


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
        **narration_tables(narration, controller),
        "key": key,
        "controller": controller,
        "follow": controller is None,
    }


def narration_tables(narration: Any = None, controller: str | None = None) -> Obj:
    """What the inspector links a sync's stages to: the `SyncStage`s by name of the controller
    version that ran it (`narration`: None before any sync, then the table of `controller`'s
    running default), its worker loop's line, the words it is told in (`narrator`: the version's
    `narration`), and the K15 lines within a v1.5 sync."""
    if narration is not None:
        version = _VERSIONS.get((narration.controller, narration.version))
    elif controller is not None:
        version = _VERSIONS.get((controller, DEFAULT_CONTROLLER_VERSION))
    else:
        version = _DEFAULT
    if version is None:  # a controller this registry does not know: told as raw records
        version = _DEFAULT
    stages = {stage.name: stage for stage in version.stages}
    return {
        "stages": stages,
        "process_next_work_item": version.worker_source,
        "narrator": version.narration,
        "stages15": {stage.name: stage for stage in _V15.stages},
        "k15": K15_LINES,
    }


REQUESTS_SHOWN = 30
MAX_TRANSITIONS_SHOWN = 200  # a pod's transitions in its detail (a crash-looping pod has many)


def pod_context(hosted: Hosted, namespace: str, name: str) -> Obj:
    """What the Pod tab shows of one pod, now: the one-off read above and the live panel
    (`pod_id`) the frames rebuild when a record touches the pod."""
    frames = hosted.frames
    seen = views.pod(hosted, namespace, name, calls=REQUESTS_SHOWN, transitions=MAX_TRANSITIONS_SHOWN)
    obj, owner = seen["pod"], seen["owner"]
    history = seen["history"]
    if history is None:  # no records kept: the frame builder's folded transitions
        history = []
        pod_id = frames.pod_ids.get(f"{namespace}/{name}")
        if pod_id is not None:
            for t, pid, owner_index, state in frames.transitions:
                if pid == pod_id:
                    history.append({"time": t, "owner": frames.owners[owner_index], "state": frames_states[state]})
    return {
        "namespace": namespace,
        "name": name,
        "pod": obj,
        "yaml": yaml.safe_dump(obj, sort_keys=False, default_flow_style=False) if obj is not None else "",
        "owner": owner,
        # The page's name for it (a focus target; "Kind/namespace/name" outside the default one).
        "owner_label": owner_label(str(owner.get("kind")), namespace, str(owner.get("name"))) if owner else "",
        "state": seen["state"],
        "node": seen["node"],
        "history": history,
        "calls": seen["calls"],
    }


def truth(hosted: Hosted, controller: str, key: str) -> Obj:
    """Three columns for one controller key: the pods the API server has, the pods the
    controller's informer cache has, the pods its last sync counted (`views.truth`)."""
    return views.truth(hosted, controller, key, TRUTH_LIMIT)


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
    "operators": operators,
}


# -- a rollout (a page focused on an owner of owners: a Deployment) ----------------------------------
SPARK_W, SPARK_H = 160, 28  # a ReplicaSet's sparkline, in SVG units


def rollout(hosted: Hosted, controller: str, key: str) -> Obj:
    """The rollout of one Deployment (`views.rollout`), each ReplicaSet with sparklines of its
    replicas, ready and available as its syncs wrote them (the frame builder's `status_series`),
    over one shared window of virtual time so that old and new line up."""
    view = views.rollout(hosted, controller, key)
    if not view["found"]:
        return view
    series_of = getattr(hosted.frames, "status_series", {})
    now = view["now"]
    series = {r["key"]: list(series_of.get((r["controller"], r["key"]), ())) for r in view["replica_sets"]}
    starts = [s[0][0] for s in series.values() if s]
    t0 = min(starts) if starts else now
    span = max(now - t0, 1e-9)
    top = max([view["allowed"], 1] + [max(p[1], p[2], p[3]) for s in series.values() for p in s])
    for row in view["replica_sets"]:
        points = series[row["key"]]
        row["samples"] = len(points)
        row["spark"] = {
            name: _polyline(points, index, t0, span, top, now)
            for name, index in (("replicas", 1), ("ready", 2), ("available", 3))
        }
    view["window"] = {"from": t0, "to": now, "top": top, "w": SPARK_W, "h": SPARK_H}
    view["cmds"] = rollout_commands(view)
    return view


def rollout_commands(view: Obj) -> Obj:
    """The page's rollout actions on this Deployment, each an action of the session's vocabulary
    (`Simulation.check_action`) as kubectl's `rollout` verbs write it: pause / resume / restart
    as merge patches (`patch`), undo as kubectl's JSON patch of spec.template through the API
    (`request`). *set image* (a strategic merge patch of one container) and the image fault
    (a `config` action) are built by the page from their forms (static/dashboard/rollout.js)."""
    target = {"kind": view["kind"], "name": view["name"], "namespace": view["namespace"]}

    def patch(body: Obj) -> Obj:
        return {"op": "act", "action": {"patch": {**target, "patch": body}}}

    restart = {"template": {"metadata": {"annotations": {view["restarted_at_key"]: view["now_rfc3339"]}}}}
    cmds: Obj = {
        "pause": patch({"spec": {"paused": True}}),
        "resume": patch({"spec": {"paused": False}}),
        "restart": patch({"spec": restart}),
        "undo": None,
        "target": {"resource": view["resource"], "namespace": view["namespace"], "name": view["name"]},
    }
    if view["undo"] is not None:
        request = {
            "verb": "patch",
            "resource": view["resource"],
            "namespace": view["namespace"],
            "name": view["name"],
            "patchType": "json",
            "body": [{"op": "replace", "path": "/spec/template", "value": view["undo"]["template"]}],
        }
        cmds["undo"] = {"op": "act", "action": {"request": request}}
    return cmds


def _polyline(points: list[Any], index: int, t0: float, span: float, top: float, now: float) -> str:
    """SVG polyline points of a step function: each sample holds until the next, the last until now."""
    out: list[str] = []
    last = None
    for sample in points:
        x = (sample[0] - t0) / span * SPARK_W
        y = SPARK_H - sample[index] / top * (SPARK_H - 2) - 1
        if last is not None:
            out.append(f"{x:.1f},{last:.1f}")
        out.append(f"{x:.1f},{y:.1f}")
        last = y
    if last is not None:
        out.append(f"{SPARK_W:.1f},{last:.1f}")
    return " ".join(out)

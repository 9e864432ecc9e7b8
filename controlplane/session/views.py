"""What the debugger page shows of a session's world, as plain data: the view models the web
layer renders (`dashboard/host/panels.py` into partials, `frames.py` into frames, `search.py`
and `details.py` into answers). Part of the session service (`controlplane.session.service`):
the web layer reads a world through these and the service's methods, never through a
simulation's kernel, API server or controllers.

Everything here is a pure read of the world's public snapshots (queues, expectations, informers,
the API server's store and request log): nothing changes, no request is logged, no trace record
is written, no rng is drawn. Lists are capped at the `limit` the caller gives (what a panel
shows before "+N more").
"""

from __future__ import annotations

import copy
import json
from typing import Any

from controlplane.apiserver.resources import lookup
from controlplane.consistency import RealConsistencyStore
from controlplane.controllers.registry import REGISTRY
from controlplane.deployment import util as deployment_util
from controlplane.expectations import EXPECTATIONS_TIMEOUT
from controlplane.informers import NAMESPACE_INDEX
from controlplane.kernel import parse_rfc3339, rfc3339
from controlplane.labels import selector_from_label_selector, selector_from_set
from controlplane.podutil import is_pod_active
from controlplane.replicaset.replica_set import POD_CONTROLLER_INDEX, pod_controller_index_key
from controlplane.scenario import DEFAULT_CONTROLLER_VERSION, default_config
from controlplane.session.session import Session

Obj = dict[str, Any]

# The owners the page shows (resource, kind, controller, its short name, whether its selector is
# a LabelSelector): the registry's controllers, in its order. An apps/v1 kind's selector is a
# metav1.LabelSelector; the core group's (the RC's) a map of labels.
OWNER_KINDS = tuple(
    (spec.resource, spec.kind, spec.name, lookup(spec.resource).short_names[0], bool(spec.group))
    for spec in REGISTRY.specs
)
TUNED = ("workers", "burstReplicas", "kubeApiQPS", "kubeApiBurst", "watchLatency", "apiLatency")


# -- the world's shape ---------------------------------------------------------------------------
def controller_names(session: Session) -> list[str]:
    """The names of the controllers the world runs, in their order."""
    return list(session.sim.controllers)


def controller_version(session: Session, name: str) -> str:
    """The version controller `name` runs (config.controllerVersion); KeyError when it runs none."""
    return str(session.sim.controllers[name].version)


def controller_kinds(session: Session) -> dict[str, str]:
    """Each controller's owner kind ("ReplicaSet", ...), by controller name."""
    return {name: c.kind.kind for name, c in session.sim.controllers.items()}


def queue_depth(session: Session, name: str) -> int | None:
    """Controller `name`'s workqueue depth (None when the world runs no such controller)."""
    c = session.sim.controllers.get(name)
    return None if c is None else c.queue.metrics.depth


def request(session: Session, request_id: int) -> Any:
    """The API server's log entry of request `request_id` (`RequestRecord`: time, client, verb,
    resource, namespace, name, code)."""
    return session.sim.server.requests[request_id]


def peek(session: Session, resource: str, namespace: str | None, name: str) -> Obj | None:
    """The stored object, read without a request (None when there is none)."""
    obj: Obj | None = session.sim.server.peek(resource, namespace, name)
    return obj


def objects(session: Session, resource: str) -> Any:
    """Every stored object of `resource`, in key order, read without a request."""
    return session.sim.server.objects(resource)


# -- the controller side ---------------------------------------------------------------------------
def queue(session: Session, name: str, only: str | None, limit: int) -> Obj:
    """The workqueue; with `only` (a key), only that key's entries, each list filtered before it
    is capped (and where the key stands in the queue)."""
    c = session.sim.controllers[name]
    snap = c.queue.snapshot()
    now = session.sim.now
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
        "queued": queued[:limit],
        "queued_more": max(0, len(queued) - limit),
        "dirty_processing": dirty_only[:limit],
        "processing": processing[:limit],
        "waiting": waiting[:limit],
        "waiting_more": max(0, len(waiting) - limit),
        "requeues": requeues[:limit],
        "depth": snap["depth"],
        "adds": snap["adds"],
        "retries": snap["retries"],
    }


def workers(session: Session, name: str) -> Obj:
    c = session.sim.controllers[name]
    now = session.sim.now
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


def expectations(session: Session, name: str, only: str | None, limit: int) -> Obj:
    """Every key's expectations record; with `only`, that key's (and its consistency rows)."""
    c = session.sim.controllers[name]
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
                "uids": snap.get("uids", [])[:limit],
                "uids_more": max(0, len(snap.get("uids", [])) - limit),
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
    # At most `limit` rows, the blocking ones (the next sync may not create or delete) first;
    # the consistency store likewise. A page focused on a key sees that key's (`only`).
    shown = [r for r in rows if not r["satisfied"]] + [r for r in rows if r["satisfied"]]
    shown_consistency = [r for r in consistency if r["stale"]] + [r for r in consistency if not r["stale"]]
    return {
        "controller": name,
        "enabled": c.expectations.enabled,
        "rows": shown[:limit],
        "rows_more": max(0, len(shown) - limit),
        "total": total,
        "timeout": EXPECTATIONS_TIMEOUT,
        "gate": isinstance(getattr(c, "consistency", None), RealConsistencyStore),  # the gate is on and applies
        "consistency": shown_consistency[:limit],
        "consistency_more": max(0, len(consistency) - limit),
    }


def lookup_cache(session: Session, name: str) -> Obj | None:
    """The v1.5 ReplicationManager's MatchingCache (pod labels → RC): its snapshot, newest
    entries with their selectors, hit and fill percentages. None for a version without one."""
    cache = getattr(session.sim.controllers[name], "lookup_cache", None)
    if cache is None:
        return None
    snap = cache.snapshot()
    lookups = snap["hits"] + snap["misses"]
    return {
        "cache": snap,
        "entries": [{**e, "selector": ",".join(f"{k}={v}" for k, v in e["labels"].items())} for e in snap["entries"]],
        "entries_more": max(0, snap["size"] - len(snap["entries"])),
        "hit_pct": 100.0 * snap["hits"] / lookups if lookups else None,
        "fill_pct": 100.0 * snap["size"] / snap["capacity"],
    }


def _rv_gt(a: str, b: str) -> bool:
    try:
        return bool(b) and int(a) > int(b)
    except ValueError:
        return False


def informers(session: Session) -> Obj:
    sim = session.sim
    revision = sim.server.revision
    rows = []
    for name, c in sim.controllers.items():
        for informer in c.informers:
            snap = informer.snapshot(revision)
            snap["controller"] = name
            snap["store_count"] = sim.server.count(informer.resource)
            rows.append(snap)
    return {"rows": rows, "revision": revision}


# -- the cluster side ------------------------------------------------------------------------------
def owners(session: Session) -> list[Obj]:
    """Every ReplicaSet and ReplicationController: its spec, status and selector (as text; ""
    when it does not parse), with the version of the controller that syncs it."""
    sim = session.sim
    versions = {name: c.version for name, c in sim.controllers.items()}
    rows = []
    for resource, kind, controller, short, label_selector in OWNER_KINDS:
        for obj in sim.server.objects(resource):
            meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
            try:
                if label_selector:
                    selector = str(selector_from_label_selector(spec.get("selector")))
                else:
                    selector = str(selector_from_set(spec.get("selector") or {}))
            except ValueError:
                selector = ""
            rows.append(
                {
                    "kind": kind,
                    "short": short,
                    "controller": controller,
                    "version": versions.get(controller),
                    "namespace": meta.get("namespace"),
                    "name": meta["name"],
                    "key": f"{meta.get('namespace')}/{meta['name']}",
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
                    # Its controlling owner (a Deployment's ReplicaSet): {kind, name}, else None.
                    "controlled_by": next(
                        (
                            {"kind": ref.get("kind"), "name": ref.get("name")}
                            for ref in meta.get("ownerReferences") or ()
                            if ref.get("controller")
                        ),
                        None,
                    ),
                }
            )
    return rows


def node_order(name: str) -> tuple[int, str]:
    """Nodes in the page's order: by their number (node-2 before node-10)."""
    number = name.rsplit("-", 1)[-1]
    return (int(number), name) if number.isdigit() else (0, name)


def nodes(session: Session) -> list[Obj]:
    """Every node in `node_order`: whether its kubelet runs, and its taints."""
    sim = session.sim
    rows = []
    for name in sorted(sim.nodes.kubelets, key=node_order):
        node = sim.server.peek("nodes", None, name) or {}
        rows.append(
            {
                "name": name,
                "kubelet": "running" if sim.nodes.kubelets[name].running else "stopped",
                "taints": [f"{t.get('key')}:{t.get('effect')}" for t in (node.get("spec") or {}).get("taints") or []],
            }
        )
    return rows


def faults(session: Session) -> Obj:
    """The faults and changes in force: API fault rules (in force, and the last ten spent),
    paused informers, nodes down, image faults (`config.imageFaults`), what-ifs, feature gates,
    controller versions and knobs that differ from the defaults, the garbage collector off,
    manual workers."""
    sim = session.sim
    defaults = default_config()
    rules = [rule.describe() for rule in sim.faults.api_rules]
    paused = []
    for name, c in sim.controllers.items():
        for informer in c.informers:
            if informer.reflector.paused:
                paused.append({"controller": name, "informer": informer.name, "resource": informer.resource})
    node_names = sorted(sim.nodes.kubelets, key=node_order)
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
    for key in TUNED:
        if sim.config[key] != defaults[key]:
            tuned.append({"key": key, "value": sim.config[key], "default": defaults[key]})
    # config.imageFaults (the kubelets'): a `config` action replaces the whole mapping, so each
    # fault's removal is the mapping without it.
    image_faults = dict(sim.config.get("imageFaults") or {})
    images = [
        {"pattern": pattern, "fault": fault, "without": {p: f for p, f in image_faults.items() if p != pattern}}
        for pattern, fault in image_faults.items()
    ]
    return {
        "rules": [r for r in rules if r["inForce"]],
        "image_faults": images,
        "image_fault_map": image_faults,
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


# -- one pod, one key -------------------------------------------------------------------------------
REQUEST_SCAN = 200_000  # the API call log is searched back this far for a pod's calls


def pod(session: Session, namespace: str, name: str, *, calls: int, transitions: int) -> Obj:
    """One pod now: its stored object (None when there is none), its state, its controller's
    ownerReference, the newest `calls` API calls on it (oldest first), and — when the session
    keeps its records — its newest `transitions` state transitions, each with its record's seq
    (`history`; None when the session keeps no records)."""
    sim = session.sim
    obj = sim.server.peek("pods", namespace, name)
    key = f"{namespace}/{name}"
    history: list[Obj] | None = None
    if sim.record_log is not None:
        # From the kept records, so that each transition has its seq: its why? and its moment.
        history = []
        page = sim.records({"kind": "pod.transition", "key": key}, 0, transitions)
        for row in page["rows"]:
            if row["subject"] == key:
                record = sim.record_log.get(row["seq"]) or {}
                owner_of = record.get("owner") or ""
                history.append({"time": row["time"], "owner": owner_of, "state": record.get("to"), "seq": row["seq"]})
    found = []
    requests = sim.server.requests
    for index in range(len(requests) - 1, max(-1, len(requests) - 1 - REQUEST_SCAN), -1):
        entry = requests[index]
        if entry["name"] == name and entry["namespace"] == namespace and (entry["resource"] or "").startswith("pods"):
            found.append(entry.to_dict())
            if len(found) >= calls:
                break
    found.reverse()  # the newest `calls`, oldest first: the page's one order
    owner = None
    if obj is not None:
        for ref in obj["metadata"].get("ownerReferences") or ():
            if ref.get("controller"):
                owner = ref
    return {
        "pod": obj,
        "owner": owner,
        "state": sim.nodes.pod_state(namespace, name),
        "node": (obj.get("spec") or {}).get("nodeName") if obj is not None else None,
        "history": history,
        "calls": found,
    }


def truth(session: Session, controller: str, key: str, limit: int) -> Obj:
    """Three columns for one controller key: the pods the API server has, the pods the
    controller's informer cache has, the pods its last sync counted — with the differences
    (at most `limit` rows, the differing ones first)."""
    sim = session.sim
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
    for pod_name in names:
        # A row differs when the cache's word is not the API server's, or when the last sync's
        # count disagrees with what either side calls active: FilterActivePods counts only
        # active pods, so a Failed or terminating pod both sides agree on is rightly uncounted.
        in_count = pod_name in counted
        said = server.get(pod_name), cache.get(pod_name)
        miscounted = ctx is not None and any((said_word == "active") != in_count for said_word in said)
        rows.append(
            {
                "name": pod_name,
                "server": said[0],
                "cache": said[1],
                "counted": in_count,
                "differs": said[0] != said[1] or miscounted,
            }
        )
    differing = [r for r in rows if r["differs"]]
    shown = differing[:limit] + [r for r in rows if not r["differs"]][: max(0, limit - len(differing))]
    shown.sort(key=lambda r: str(r["name"]))
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


# -- a rollout: an owner of owners (a Deployment and its ReplicaSets) -------------------------------
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"  # kubectl rollout restart's


def child_controllers(name: str) -> list[str]:
    """The controllers whose kind controller `name` owns (the registry's `owns`): a Deployment's
    ReplicaSets' controller; [] for a controller whose children are pods."""
    try:
        return [spec.name for spec in REGISTRY.children_of(name)]
    except KeyError:
        return []


def rollout(session: Session, controller: str, key: str) -> Obj:
    """One Deployment's rollout now, from the API server's store (no request): its strategy and
    the surge and unavailability budget of the moment (maxSurge / maxUnavailable resolved by the
    controller's own `ResolveFenceposts`), its ReplicaSets by revision with their counts (the new
    one marked), its conditions with the progress deadline's countdown in virtual time, and what
    the page's rollout actions need (the containers for *set image*, the previous revision's
    template for *undo*, the virtual time for *restart*). `found` False when there is none."""
    sim = session.sim
    spec = REGISTRY.by_name(controller)
    empty: Obj = {"controller": controller, "key": key, "found": False, "kind": spec.kind}
    if key.count("/") != 1:
        return empty
    namespace, name = key.split("/", 1)
    d = sim.server.peek(spec.resource, namespace, name)
    if d is None:
        return empty
    meta, dspec, status = d["metadata"], d.get("spec") or {}, d.get("status") or {}
    uid = meta.get("uid")
    children = []
    for child in REGISTRY.children_of(controller):
        for rs in sim.server.objects(child.resource):
            rmeta = rs["metadata"]
            if rmeta.get("namespace") != namespace:
                continue
            if any(ref.get("controller") and ref.get("uid") == uid for ref in rmeta.get("ownerReferences") or ()):
                children.append((child, rs))
    new_rs = deployment_util.find_new_replica_set(d, [rs for _, rs in children])
    now = sim.now
    want = deployment_util.replicas(d)
    rolling = deployment_util.is_rolling_update(d)
    max_surge = deployment_util.max_surge(d)
    max_unavailable = deployment_util.max_unavailable(d)
    replica_sets = []
    for child, rs in children:
        rspec, rstatus = rs.get("spec") or {}, rs.get("status") or {}
        template = rspec.get("template") or {}
        replica_sets.append(
            {
                "controller": child.name,
                "kind": child.kind,
                "name": rs["metadata"]["name"],
                "key": f"{namespace}/{rs['metadata']['name']}",
                "revision": deployment_util.revision(rs),
                "new": new_rs is not None and rs["metadata"].get("uid") == new_rs["metadata"].get("uid"),
                "desired": rspec.get("replicas", 1),
                "replicas": rstatus.get("replicas", 0),
                "ready": rstatus.get("readyReplicas", 0),
                "available": rstatus.get("availableReplicas", 0),
                "images": [c.get("image") for c in (template.get("spec") or {}).get("containers") or ()],
                "template": template,
            }
        )
    replica_sets.sort(key=lambda r: (r["revision"], r["name"]), reverse=True)
    # Upstream's budget counts the ReplicaSets' spec.replicas (GetReplicaCountForReplicaSets:
    # reconcileNewReplicaSet scales the new one up while that sum is under replicas + maxSurge)
    # and their status.availableReplicas (GetAvailableReplicaCountForReplicaSets: old ones are
    # scaled down only while that sum is over replicas - maxUnavailable); `pods` is what exists.
    total = sum(r["desired"] for r in replica_sets)
    pods = sum(r["replicas"] for r in replica_sets)
    available = sum(r["available"] for r in replica_sets)
    conditions = []
    deadline = dspec.get("progressDeadlineSeconds") if deployment_util.has_progress_deadline(d) else None
    for cond in status.get("conditions") or ():
        row = {k: cond.get(k) for k in ("type", "status", "reason", "message", "lastUpdateTime")}
        row["deadline_in"] = None
        if (
            cond.get("type") == deployment_util.DEPLOYMENT_PROGRESSING
            and deadline is not None
            and cond.get("status") == "True"
            and cond.get("reason") != deployment_util.NEW_RS_AVAILABLE_REASON
            and cond.get("lastUpdateTime")
        ):
            # DeploymentTimedOut: strictly after lastUpdateTime + progressDeadlineSeconds.
            row["deadline_at"] = parse_rfc3339(cond["lastUpdateTime"]) + int(deadline)
            row["deadline_in"] = row["deadline_at"] - now
        conditions.append(row)
    # kubectl rollout undo (no --to-revision): the ReplicaSet of the revision before the current
    # one; its template, without the pod-template-hash label, becomes the Deployment's.
    current = deployment_util.revision(d)
    previous = [r for r in replica_sets if 0 < r["revision"] < current] if current else []
    undo = None
    if previous:
        target = max(previous, key=lambda r: r["revision"])
        template = copy.deepcopy(target["template"])
        labels = (template.get("metadata") or {}).get("labels") or {}
        labels.pop(deployment_util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
        undo = {"revision": target["revision"], "replicaSet": target["name"], "template": template}
    containers = [c.get("name") for c in ((dspec.get("template") or {}).get("spec") or {}).get("containers") or ()]
    return {
        **empty,
        "found": True,
        "namespace": namespace,
        "name": name,
        "resource": spec.resource,
        "revision": current,
        "generation": meta.get("generation"),
        "observed": status.get("observedGeneration"),
        "paused": bool(dspec.get("paused")),
        "strategy": deployment_util.strategy_type(d),
        "rolling": rolling,
        "desired": want,
        "max_surge": max_surge,
        "max_unavailable": max_unavailable,
        "max_surge_spec": ((dspec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxSurge"),
        "max_unavailable_spec": ((dspec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable"),
        "allowed": want + max_surge,
        "total": total,
        "pods": pods,
        "at_max": total >= want + max_surge,
        "at_min": available <= max(0, want - max_unavailable),
        "surge_used": max(0, total - want),
        "min_available": max(0, want - max_unavailable),
        "available": available,
        "status": {
            k: status.get(k, 0)
            for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
        },
        "replica_sets": replica_sets,
        "conditions": conditions,
        "deadline": deadline,
        "containers": containers,
        "undo": undo,
        "now": now,
        "now_rfc3339": rfc3339(now),
        "restarted_at": ((dspec.get("template") or {}).get("metadata") or {})
        .get("annotations", {})
        .get(RESTARTED_AT_ANNOTATION),
        "restarted_at_key": RESTARTED_AT_ANNOTATION,
    }


# -- embedded kopf operators ---------------------------------------------------------------------
OPERATOR_RESOURCES = (*REGISTRY.managed_resources(), "nodes", "namespaces")  # where handlings are looked for
MAX_SCANNED = 20_000  # objects read per operator (a panel, not a census)


def operators(session: Session, limit: int = 100) -> Obj:
    """The world's embedded kopf operators (`operators:`), each with its pending handlings: what
    kopf has stored about its handlers on each object and not yet finished, read from the store
    (kopf's per-object progress annotations, `<prefix>/<handler id>`, a JSON record: started,
    stopped, delayed, retries, success, failure, message). A handling is `delayed` (waits until
    `delayed` for a retry), `failed` (a permanent failure, kept), `done` (succeeded, not yet
    purged) or `running`. At most `limit` per operator (`more` counts the rest), in key order."""
    host = session.sim.operators
    if host is None:
        return {"operators": []}
    out = []
    for op in host.state():
        prefix = op["progressPrefix"]
        pending: list[Obj] = []
        more = 0
        scanned = 0
        if prefix is not None:
            start = prefix + "/"
            for resource in OPERATOR_RESOURCES:
                for obj in session.sim.server.objects(resource):
                    scanned += 1
                    if scanned > MAX_SCANNED:
                        break
                    meta = obj.get("metadata") or {}
                    if op["namespaces"] and meta.get("namespace") not in op["namespaces"]:
                        continue
                    for key, value in sorted((meta.get("annotations") or {}).items()):
                        record = _progress(key, value, start)
                        if record is None:
                            continue
                        if len(pending) >= limit:
                            more += 1
                            continue
                        namespace = meta.get("namespace")
                        pending.append(
                            {
                                "resource": resource,
                                "key": f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name")),
                                "handler": key[len(start) :],
                                **record,
                            }
                        )
        out.append({**op, "prefix": prefix, "pending": pending, "more": more, "truncated": scanned > MAX_SCANNED})
    return {"operators": out}


def _progress(key: str, value: Any, start: str) -> Obj | None:
    """One progress annotation as the panel shows it, or None when `key` is not one."""
    if not key.startswith(start) or not isinstance(value, str) or not value.startswith("{"):
        return None
    try:
        record = json.loads(value)
    except ValueError:
        return None
    if not isinstance(record, dict) or ("retries" not in record and "started" not in record):
        return None  # the diff base, or some other JSON of the module's own
    if record.get("failure"):
        state = "failed"
    elif record.get("success"):
        state = "done"
    elif record.get("delayed"):
        state = "delayed"
    else:
        state = "running"
    return {
        "state": state,
        "retries": int(record.get("retries") or 0),
        "started": record.get("started"),
        "stopped": record.get("stopped"),
        "delayed": record.get("delayed"),
        "purpose": record.get("purpose"),
        "message": record.get("message"),
    }

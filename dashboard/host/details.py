"""Details one viewer asks for: a pod (its object, owner, node, every state it went through, the
API calls that touched it) and the narrated syncs of one key. Pure reads, rendered as partials."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml
from django.template.loader import render_to_string

from controlplane.nodes import POD_STATES
from dashboard.host import panels
from dashboard.host.hosted import CommandError

if TYPE_CHECKING:
    from dashboard.host.hosted import HostedSimulation

Obj = dict[str, Any]

REQUEST_SCAN = 200_000  # the API call log is searched back this far for a pod's calls
REQUESTS_SHOWN = 30


def _name(cmd: Obj, key: str) -> str:
    value = cmd.get(key)
    if not isinstance(value, str) or not value or len(value) > 253:
        raise CommandError(f"{key}: required")
    return value


MAX_TRANSITIONS_SHOWN = 200  # a pod's transitions in its detail (a crash-looping pod has many)


def pod(hosted: HostedSimulation, cmd: Obj) -> Obj:
    namespace = cmd.get("namespace") or "default"
    name = _name(cmd, "name")
    if not isinstance(namespace, str) or len(namespace) > 63:
        raise CommandError("namespace: invalid")
    context = {"sim": hosted, "panel_id": panels.pod_id(f"{namespace}/{name}"), **pod_context(hosted, namespace, name)}
    return {"html": render_to_string("dashboard/_pod.html", context)}


def pod_context(hosted: HostedSimulation, namespace: str, name: str) -> Obj:
    """What the Pod tab shows of one pod, now: the one-off read above and the live panel
    (`panels.pod_id`) the frames rebuild when a record touches the pod."""
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
                history.append({"time": t, "owner": frames.owners[owner], "state": POD_STATES[state]})
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
        "owner_label": panels.owner_label(str(owner.get("kind")), namespace, str(owner.get("name"))) if owner else "",
        "state": sim.nodes.pod_state(namespace, name),
        "node": (obj.get("spec") or {}).get("nodeName") if obj is not None else None,
        "history": history,
        "calls": calls,
    }


def sync_history(hosted: HostedSimulation, cmd: Obj) -> Obj:
    controller = _name(cmd, "controller")
    key = _name(cmd, "key")
    if controller not in hosted.sim.controllers:
        raise CommandError(f"controller: no {controller} in this simulation")
    syncs = list(hosted.frames.narrations.get((controller, key), ()))
    wanted = cmd.get("sync")
    chosen = None
    if wanted is not None:
        chosen = next((n for n in syncs if n.id == wanted), None)
        if chosen is None:
            raise CommandError(f"sync {wanted} of {key} is no longer kept (the last {len(syncs)} are)")
    context = {
        "sim": hosted,
        "narration": chosen or (syncs[-1] if syncs else None),
        "history": list(reversed(syncs)),
        **panels.narration_tables(),
        "controller": controller,
        "key": key,
        "follow": False,
        "panel_id": f"syncs:{controller}:{key}",
    }
    return {"html": render_to_string("dashboard/_inspector.html", context)}

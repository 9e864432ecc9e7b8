"""Details one viewer asks for: a pod (its object, owner, node, every state it went through, the
API calls that touched it: `panels.pod_context`) and the narrated syncs of one key. Pure reads,
rendered as partials."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.template.loader import render_to_string

from controlplane.simulation import CommandError, views
from dashboard.host import panels

if TYPE_CHECKING:
    from dashboard.host.panels import Hosted

Obj = dict[str, Any]


def _name(cmd: Obj, key: str) -> str:
    value = cmd.get(key)
    if not isinstance(value, str) or not value or len(value) > 253:
        raise CommandError(f"{key}: required")
    return value


def pod(hosted: Hosted, cmd: Obj) -> Obj:
    namespace = cmd.get("namespace") or "default"
    name = _name(cmd, "name")
    if not isinstance(namespace, str) or len(namespace) > 63:
        raise CommandError("namespace: invalid")
    context = {
        "sim": hosted,
        "panel_id": panels.pod_id(f"{namespace}/{name}"),
        **panels.pod_context(hosted, namespace, name),
    }
    return {"html": render_to_string("dashboard/_pod.html", context)}


def sync_history(hosted: Hosted, cmd: Obj) -> Obj:
    controller = _name(cmd, "controller")
    key = _name(cmd, "key")
    if controller not in views.controller_names(hosted):
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
        **panels.narration_tables(chosen or (syncs[-1] if syncs else None), controller),
        "controller": controller,
        "key": key,
        "follow": False,
        "panel_id": f"syncs:{controller}:{key}",
    }
    return {"html": render_to_string("dashboard/_inspector.html", context)}

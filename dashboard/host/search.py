"""The page's search box (#19 §3): pods, owners and nodes by name, or by label selector.

`{op: "search", q: text}` is a read any viewer may ask. A query with `=`, `!`, `(` or the words
`in` / `notin` is a label selector in kubectl's `-l` syntax (`app=web,tier!=db`), parsed by the
core's own parser (upstream `labels.Parse`, through the facade); anything else matches names
(case-insensitive substring; `namespace/name` for pods and owners). The answer lists at most
RESULTS of each kind with the totals, and the tile ids of every matching pod (so that the page
can show just those tiles without a second request).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from controlplane.simulation import CONTROLLER_REGISTRY, POD_STATES, CommandError, parse_label_selector, views
from dashboard.host import panels

if TYPE_CHECKING:
    from dashboard.host.panels import Hosted

Obj = dict[str, Any]

MAX_QUERY = 256  # characters
RESULTS = 20  # of each kind listed
_SELECTOR = re.compile(r"[=!()]|\s(in|notin)\s")
OWNER_KINDS = tuple((spec.resource, spec.kind, spec.name) for spec in CONTROLLER_REGISTRY)  # the controllers' objects


def is_selector(query: str) -> bool:
    return bool(_SELECTOR.search(query))


def search(hosted: Hosted, cmd: Obj) -> Obj:
    query = cmd.get("q")
    if not isinstance(query, str) or len(query) > MAX_QUERY:
        raise CommandError(f"q: must be a text of at most {MAX_QUERY} characters")
    query = query.strip()
    if not query:
        raise CommandError("q: empty: type a name or a label selector (app=web,tier!=db)")
    selector = is_selector(query)
    if selector:
        try:
            parsed = parse_label_selector(query)
        except ValueError as exc:
            raise CommandError(f"q: not a label selector: {exc}") from None

        def match(meta: Obj, full: str) -> bool:
            return parsed.matches(meta.get("labels"))
    else:
        needle = query.lower()

        def match(meta: Obj, full: str) -> bool:
            return needle in full.lower()

    frames = hosted.frames
    pods: list[Obj] = []
    ids: list[int] = []
    total = 0
    for pod in views.objects(hosted, "pods"):
        meta = pod["metadata"]
        key = f"{meta.get('namespace')}/{meta['name']}"
        if not match(meta, key):
            continue
        total += 1
        entry = frames.pods.get(key)
        if entry is not None:
            ids.append(entry[0])
        if len(pods) < RESULTS:
            pods.append(
                {
                    "key": key,
                    "owner": frames.owners[entry[1]] if entry is not None else "",
                    "node": (pod.get("spec") or {}).get("nodeName") or "",
                    "state": POD_STATES[entry[2]] if entry is not None else "",
                }
            )
    owners: list[Obj] = []
    owners_total = 0
    running = views.controller_names(hosted)
    for resource, kind, controller in OWNER_KINDS:
        if controller not in running:
            continue
        for obj in views.objects(hosted, resource):
            meta = obj["metadata"]
            key = f"{meta.get('namespace')}/{meta['name']}"
            if not match(meta, key):
                continue
            owners_total += 1
            if len(owners) < RESULTS:
                owners.append(
                    {
                        "owner": panels.owner_label(kind, meta.get("namespace"), meta["name"]),
                        "controller": controller,
                        "key": key,
                    }
                )
    nodes: list[str] = []
    nodes_total = 0
    for node in views.objects(hosted, "nodes"):
        meta = node["metadata"]
        if match(meta, meta["name"]):
            nodes_total += 1
            if len(nodes) < RESULTS:
                nodes.append(meta["name"])
    return {
        "q": query,
        "selector": selector,
        "pods": pods,
        "podsTotal": total,
        "ids": ids,
        "owners": owners,
        "ownersTotal": owners_total,
        "nodes": nodes,
        "nodesTotal": nodes_total,
    }

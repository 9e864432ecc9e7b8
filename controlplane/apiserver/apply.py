"""Server-side apply (`application/apply-patch+yaml`): field ownership in `managedFields`.

Counterpart of apimachinery's `fieldmanager` + structured-merge-diff, reduced to what `kubectl
apply --server-side` relies on.

Guarantees
----------
* Each apply records the fields its configuration sets as the manager's `Apply` entry in
  `metadata.managedFields` (`fieldsType: FieldsV1`, the upstream set syntax: `f:<field>`, list
  items by merge key `k:{"name":"nginx"}`, set members `v:"x"`, `.` for an item itself). Lists
  without a merge key are atomic (owned as a whole).
* Conflicts: a field the configuration sets to a value other than the live one, which another
  `Apply` manager owns, is a 409 Conflict with one `FieldManagerConflict` cause per field (the
  message upstream prints), unless `force`; with `force` the other managers lose those fields.
* The configuration is merged into the live object with the strategic-merge list keys; fields
  this manager owned before, that its new configuration leaves out and no other manager owns, are
  removed (applying a configuration without a label drops the label).
* Writes that are not applies keep `managedFields` as they are (only apply requests record
  ownership here: the simulated controllers' writes are not tracked, so they never conflict).
"""

from __future__ import annotations

import json
from typing import Any

from controlplane.apiserver.errors import REASON_CONFLICT, ApiError
from controlplane.apiserver.patch import MERGE_KEYS, PRIMITIVE_MERGE_LISTS, strategic_merge_patch

Obj = dict[str, Any]
Path = tuple[str, ...]

# Metadata the server owns: never part of a manager's field set.
_SERVER_FIELDS = frozenset(
    {"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "deletionTimestamp", "selfLink"}
)


def field_set(config: Any, field: str | None = None) -> Obj:
    """The FieldsV1 tree of the fields `config` sets (`field` names the value's own key)."""
    if isinstance(config, dict):
        tree: Obj = {}
        for key, value in config.items():
            if key.startswith("$") or (field == "metadata" and key in _SERVER_FIELDS):
                continue
            if field is None and key in ("apiVersion", "kind", "status"):
                continue
            tree[f"f:{key}"] = field_set(value, key)
        return tree
    if isinstance(config, list) and field is not None:
        merge_key = MERGE_KEYS.get(field)
        if merge_key is not None and all(isinstance(i, dict) and merge_key in i for i in config):
            items: Obj = {}
            for item in config:
                items[_item_key(merge_key, item[merge_key])] = {".": {}, **field_set(item)}
            return items
        if field in PRIMITIVE_MERGE_LISTS:
            return {f"v:{json.dumps(item, separators=(',', ':'))}": {} for item in config}
    return {}


def _item_key(merge_key: str, value: Any) -> str:
    return "k:" + json.dumps({merge_key: value}, separators=(",", ":"))


def leaves(tree: Obj, prefix: Path = ()) -> list[Path]:
    """Every owned path of a FieldsV1 tree (a leaf, or an item's `.`)."""
    out: list[Path] = []
    for key, sub in tree.items():
        if key == ".":
            out.append(prefix)
        elif sub:
            out.extend(leaves(sub, (*prefix, key)))
        else:
            out.append((*prefix, key))
    return out


_MISSING = object()


def value_at(obj: Any, path: Path) -> Any:
    """The value at a FieldsV1 path in an object, or `_MISSING`."""
    value = obj
    for segment in path:
        kind, _, rest = segment.partition(":")
        if kind == "f":
            if not isinstance(value, dict) or rest not in value:
                return _MISSING
            value = value[rest]
        elif kind == "k":
            wanted = json.loads(rest)
            if not isinstance(value, list):
                return _MISSING
            match = [i for i in value if isinstance(i, dict) and all(i.get(k) == v for k, v in wanted.items())]
            if not match:
                return _MISSING
            value = match[0]
        elif kind == "v":
            member = json.loads(rest)
            return member if isinstance(value, list) and member in value else _MISSING
        else:
            return _MISSING
    return value


def _remove(obj: Any, path: Path) -> Any:
    """`obj` without the field at `path` (copies along the path; the input is shared)."""
    if not path or not isinstance(obj, dict | list):
        return obj
    kind, _, rest = path[0].partition(":")
    if kind == "f" and isinstance(obj, dict) and rest in obj:
        out = dict(obj)
        if len(path) == 1:
            del out[rest]
        else:
            out[rest] = _remove(obj[rest], path[1:])
        return out
    if kind == "k" and isinstance(obj, list):
        wanted = json.loads(rest)
        items = []
        for item in obj:
            if isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items()):
                if len(path) == 1:
                    continue
                item = _remove(item, path[1:])
            items.append(item)
        return items
    if kind == "v" and isinstance(obj, list):
        member = json.loads(rest)
        return [i for i in obj if i != member]
    return obj


def path_string(path: Path) -> str:
    """How upstream prints a field path in a conflict: `.spec.containers[name="nginx"].image`."""
    out = ""
    for segment in path:
        kind, _, rest = segment.partition(":")
        if kind == "f":
            out += "." + rest
        elif kind == "k":
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(rest).items()) + "]"
        elif kind == "v":
            out += f"[={rest}]"
    return out


def _tree_of(paths: list[Path]) -> Obj:
    tree: Obj = {}
    for path in paths:
        node = tree
        for segment in path:
            node = node.setdefault(segment, {})
    return tree


def _without(tree: Obj, doomed: set[Path]) -> Obj:
    kept = [p for p in leaves(tree) if p not in doomed]
    out = _tree_of([p for p in kept if p])
    # An item that is owned itself (its `.`) keeps the marker.
    for path in kept:
        node = out
        for segment in path:
            node = node.setdefault(segment, {})
        if path and path[-1].startswith("k:"):
            node["."] = {}
    return out


def apply(
    live: Obj | None,
    config: Obj,
    manager: str,
    api_version: str,
    now: str,
    *,
    force: bool,
) -> Obj:
    """The object after applying `config` as `manager` (None `live`: a create). Raises a 409
    Conflict ApiError for fields other managers own with other values, unless `force`."""
    new_set = field_set(config)
    new_paths = set(leaves(new_set))
    entries: list[Obj] = list(((live or {}).get("metadata") or {}).get("managedFields") or ())
    mine_before: set[Path] = set()
    others: list[tuple[Obj, set[Path]]] = []
    for entry in entries:
        paths = set(leaves(entry.get("fieldsV1") or {}))
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            mine_before = paths
        else:
            others.append((entry, paths))

    conflicts: list[tuple[str, str, Path]] = []
    if live is not None:
        for entry, paths in others:
            if entry.get("operation") != "Apply":
                continue
            for path in sorted(new_paths & paths):
                if not path or path[-1].startswith(("k:", "v:")):
                    continue  # an item's or a member's existence: both sides want it there
                if value_at(live, path) != value_at(config, path):
                    conflicts.append((str(entry.get("manager")), str(entry.get("apiVersion") or api_version), path))
    if conflicts and not force:
        raise _conflict_error(conflicts)
    doomed_by_manager: dict[str, set[Path]] = {}
    for other_manager, _, path in conflicts:
        doomed_by_manager.setdefault(other_manager, set()).add(path)

    merged = strategic_merge_patch(live, config) if live is not None else dict(config)
    still_owned = set().union(*(paths - doomed_by_manager.get(str(e.get("manager")), set()) for e, paths in others))
    for path in sorted(mine_before - new_paths, key=len, reverse=True):
        if path not in still_owned and not any(p[: len(path)] == path for p in new_paths):
            merged = _remove(merged, path)

    managed: list[Obj] = []
    mine_written = False
    for entry in entries:
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            same = entry.get("fieldsV1") == new_set and entry.get("apiVersion") == api_version
            managed.append(entry if same else _entry(manager, api_version, now, new_set))
            mine_written = True
            continue
        doomed = doomed_by_manager.get(str(entry.get("manager")))
        if doomed and entry.get("operation") == "Apply":
            remaining = _without(entry.get("fieldsV1") or {}, doomed)
            if remaining:
                managed.append({**entry, "fieldsV1": remaining})
            continue
        managed.append(entry)
    if not mine_written:
        managed.append(_entry(manager, api_version, now, new_set))
    meta = dict(merged.get("metadata") or {})
    meta["managedFields"] = managed
    merged["metadata"] = meta
    return merged


def _entry(manager: str, api_version: str, now: str, fields: Obj) -> Obj:
    return {
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }


def _conflict_error(conflicts: list[tuple[str, str, Path]]) -> ApiError:
    causes = [
        {"reason": "FieldManagerConflict", "message": f'conflict with "{m}" using {v}', "field": path_string(p)}
        for m, v, p in conflicts
    ]
    if len(conflicts) == 1:
        m, v, p = conflicts[0]
        message = f'Apply failed with 1 conflict: conflict with "{m}" using {v}: {path_string(p)}'
    else:
        by_manager: dict[tuple[str, str], list[str]] = {}
        for m, v, p in conflicts:
            by_manager.setdefault((m, v), []).append(path_string(p))
        parts = [
            f'conflicts with "{m}" using {v}:\n' + "\n".join(f"- {f}" for f in fields)
            for (m, v), fields in by_manager.items()
        ]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(parts)
    return ApiError(409, REASON_CONFLICT, message, {"causes": causes})

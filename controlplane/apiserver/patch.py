"""The three patch formats the API server applies: JSON merge, strategic merge, JSON patch.

Guarantees
----------
* `merge_patch` is RFC 7386 exactly (a `null` deletes, objects merge recursively, anything else
  replaces). Written here rather than taken from the `json-merge-patch` package because that
  package merges *in place* into the target, and the target is the server's shared object.
* `strategic_merge_patch` is apimachinery's `StrategicMergeMapPatch` for the fields the
  simulator's kinds declare (Pod, ReplicaSet, ReplicationController, Node, Event, Namespace):
  lists merged by their `patchMergeKey` (`MERGE_KEYS`: containers by `name`, ownerReferences by
  `uid`, conditions by `type`, ...), `finalizers` merged as a set, every other list replaced;
  the directives `$patch: delete|replace`, `$setElementOrder/<list>`, `$retainKeys` and
  `$deleteFromPrimitiveList/<list>`; and upstream's element order (items named by the patch in
  patch order, interleaved with server-only items by their server position; an item new to the
  list goes *before* the server-only items that follow it). Values taken wholesale from the patch
  lose their directive keys and nulls, as decoding into the typed object drops them upstream, so
  the release patch of spec §7 on a pod without ownerReferences leaves an ownerReference with
  only a `uid`, which validation then rejects (422), exactly as upstream.
* `json_patch` is RFC 6902 via the `jsonpatch` package.
* None of them mutates its inputs; untouched subtrees of the original are shared, not copied.
* Malformed patches raise `ApiError` with upstream's code (400, or 422 for a failed JSON patch
  operation).
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer

from controlplane.apiserver.errors import ApiError, bad_request, internal_error

MERGE_KEYS: dict[str, str] = {
    # patchMergeKey of the list fields of the served kinds (k8s.io/api struct tags).
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "conditions": "type",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "podIPs": "ip",
    "hostIPs": "ip",
    "hostAliases": "ip",
    "addresses": "type",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
}
PRIMITIVE_MERGE_LISTS = frozenset({"finalizers"})

_SET_ORDER = "$setElementOrder/"
_DELETE_FROM = "$deleteFromPrimitiveList/"


# -- JSON merge patch (RFC 7386) -----------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch; returns a new value sharing untouched parts of `target`."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge_patch(result.get(key), value)
        else:
            result[key] = value
    return result


# -- JSON patch (RFC 6902) -----------------------------------------------------------------


def json_patch(target: Any, operations: Any) -> Any:
    """Apply a JSON patch; 400 if the patch is malformed, 422 if an operation fails."""
    try:
        patch = jsonpatch.JsonPatch(operations)
    except (jsonpatch.InvalidJsonPatch, TypeError, AttributeError) as err:
        raise bad_request(str(err)) from err
    if not isinstance(operations, list) or any(not isinstance(op, dict) or "op" not in op for op in operations):
        raise bad_request("invalid JSON patch")
    try:
        return patch.apply(target)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as err:
        raise ApiError(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            {"causes": [{"reason": "UnexpectedServerResponse", "message": str(err)}]},
        ) from err


# -- strategic merge patch -----------------------------------------------------------------


def strategic_merge_patch(original: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a strategic merge patch to an object (apimachinery StrategicMergeMapPatch)."""
    if not isinstance(patch, dict):
        raise bad_request("invalid JSON document")
    return _merge_map(original, patch)


def strip_directives(value: Any) -> Any:
    """`value` without `$`-directive keys and null fields (what typed decoding keeps)."""
    if isinstance(value, dict):
        if not any(v is None or (k.startswith("$")) or isinstance(v, dict | list) for k, v in value.items()):
            return value
        return {k: strip_directives(v) for k, v in value.items() if v is not None and not k.startswith("$")}
    if isinstance(value, list):
        if not any(isinstance(v, dict | list) for v in value):
            return value
        return [strip_directives(v) for v in value]
    return value


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive is not None:
        if directive == "replace":
            # Don't merge: the patch (minus the directive) is the new value.
            replaced: dict[str, Any] = strip_directives({k: v for k, v in patch.items() if k != "$patch"})
            return replaced
        if directive == "delete":
            return {}
        raise internal_error(f"unknown patch type: {directive} in map: {patch}")

    result = dict(original) if original else {}

    retain = patch.get("$retainKeys")
    if retain is not None:
        if not isinstance(retain, list):
            raise bad_request("invalid patch format of retainKeys")
        for key, value in patch.items():
            if value is None or key.startswith(_DELETE_FROM) or key.startswith(_SET_ORDER) or key.startswith("$"):
                continue
            if key not in retain:
                raise bad_request("invalid patch format of retainKeys")
        result = {k: v for k, v in result.items() if k in retain}

    handled: set[str] = set()
    for key, order in patch.items():
        if not key.startswith(_SET_ORDER):
            continue
        field = key[len(_SET_ORDER) :]
        if not field or not isinstance(order, list):
            raise bad_request("invalid patch format of setElementOrder list")
        handled.add(field)
        _apply_element_order(result, patch, field, order)

    for key, value in patch.items():
        if key == "$patch" or key == "$retainKeys" or key.startswith(_SET_ORDER) or key in handled:
            continue
        if key.startswith(_DELETE_FROM):
            field = key[len(_DELETE_FROM) :]
            if not isinstance(value, list):
                raise bad_request("invalid patch format of primitive list")
            current = result.get(field)
            if isinstance(current, list):
                result[field] = [item for item in current if item not in value]
            continue
        if value is None:
            result.pop(key, None)
            continue
        if key not in result:
            result[key] = strip_directives(value)
            continue
        current = result[key]
        if isinstance(current, dict) and isinstance(value, dict):
            result[key] = _merge_map(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            result[key] = _merge_list(key, current, value)
        else:
            result[key] = strip_directives(value)
    return result


def _apply_element_order(result: dict[str, Any], patch: dict[str, Any], field: str, order: list[Any]) -> None:
    # mergePatchIntoOriginal: merge the list named by $setElementOrder, then order it by the
    # directive (patch order), keeping server-only items in their server order.
    found = result.get(field)
    patch_list = patch.get(field)
    original: list[Any] = found if isinstance(found, list) else []
    merged: list[Any]
    if isinstance(found, list) and not isinstance(patch_list, list):
        merged = found
    elif isinstance(patch_list, list) and not isinstance(found, list):
        merged = strip_directives(patch_list)
    elif isinstance(found, list) and isinstance(patch_list, list):
        merged = _merge_list(field, found, patch_list)
    else:
        return
    key_of = _key_function(field)
    wanted = {key_of(item) for item in order if _keyable(item, field)}
    patch_items = [item for item in merged if key_of(item) in wanted]
    server_only = [item for item in merged if key_of(item) not in wanted]
    result[field] = _normalize_order(patch_items, server_only, order, original, key_of)


def _keyable(item: Any, field: str) -> bool:
    merge_key = MERGE_KEYS.get(field)
    return not merge_key or (isinstance(item, dict) and merge_key in item)


def _key_function(field: str) -> Any:
    merge_key = MERGE_KEYS.get(field)
    if merge_key is None:
        return _scalar_key

    def key_of(item: Any) -> Any:
        if not isinstance(item, dict) or merge_key not in item:
            raise internal_error(f"map: {item} does not contain declared merge key: {merge_key}")
        return _scalar_key(item[merge_key])

    return key_of


def _scalar_key(value: Any) -> Any:
    # Merge-key values are scalars; make unhashable oddities comparable by their repr.
    return value if isinstance(value, str | int | float | bool) or value is None else repr(value)


def _merge_list(field: str, original: list[Any], patch: list[Any]) -> list[Any]:
    merge_key = MERGE_KEYS.get(field)
    if merge_key is None and field not in PRIMITIVE_MERGE_LISTS:
        return strip_directives(patch)  # type: ignore[no-any-return]
    if not original and not patch:
        return original
    if any(isinstance(item, list) for item in (*original, *patch)):
        raise ApiError(422, "Invalid", "lists of lists are not supported")

    if merge_key is None:
        # A list of scalars with patchStrategy merge: union, deduplicated.
        merged: list[Any] = []
        for item in (*original, *patch):
            if item not in merged:
                merged.append(item)
        in_patch = set(map(_scalar_key, patch))
        patch_items = [item for item in merged if _scalar_key(item) in in_patch]
        server_only = [item for item in merged if _scalar_key(item) not in in_patch]
        return _normalize_order(patch_items, server_only, patch, original, _scalar_key)

    key_of = _key_function(field)
    kept = list(original)
    plain: list[dict[str, Any]] = []
    replace = False
    for item in patch:
        if not isinstance(item, dict):
            raise internal_error(f"value for key {field} is not a map.")
        directive = item.get("$patch")
        if directive is None:
            plain.append(item)
        elif directive == "delete":
            if merge_key not in item:
                raise internal_error(f"map: {item} does not contain declared merge key: {merge_key}")
            doomed = _scalar_key(item[merge_key])
            kept = [o for o in kept if not (isinstance(o, dict) and _scalar_key(o.get(merge_key)) == doomed)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise internal_error("merging lists cannot yet be specified in the patch")
        else:
            raise internal_error(f"unknown patch type: {directive} in map: {item}")
    if replace:
        kept, plain = [strip_directives(item) for item in plain], []

    merged = list(kept)
    positions = {key_of(item): i for i, item in reversed(list(enumerate(merged)))}
    for item in plain:
        key = key_of(item)
        index = positions.get(key)
        if index is None:
            positions[key] = len(merged)
            merged.append(strip_directives(item))
        else:
            merged[index] = _merge_map(merged[index], item)
    in_patch = {key_of(item) for item in plain}
    patch_items = [item for item in merged if key_of(item) in in_patch]
    server_only = [item for item in merged if key_of(item) not in in_patch]
    return _normalize_order(patch_items, server_only, plain, kept, key_of)


def _normalize_order(
    patch_items: list[Any], server_only: list[Any], patch_order: list[Any], server_order: list[Any], key_of: Any
) -> list[Any]:
    """normalizeElementOrder + mergeSortedSlice: patch items in patch order, server-only items in
    server order, interleaved by server position; when either is new to the server list the
    patch item goes first."""
    patch_index = _first_positions(patch_order, key_of)
    server_index = _first_positions(server_order, key_of)
    big = len(patch_order) + 1
    patch_sorted = sorted(patch_items, key=lambda item: patch_index.get(key_of(item), big))
    server_sorted = sorted(server_only, key=lambda item: server_index.get(key_of(item), len(server_order) + 1))
    out: list[Any] = []
    i = j = 0
    while i < len(server_sorted) or j < len(patch_sorted):
        if j >= len(patch_sorted):
            out.append(server_sorted[i])
            i += 1
        elif i >= len(server_sorted):
            out.append(patch_sorted[j])
            j += 1
        else:
            left = server_index.get(key_of(server_sorted[i]), -1)
            right = server_index.get(key_of(patch_sorted[j]), -1)
            if left >= 0 and right >= 0 and left < right:
                out.append(server_sorted[i])
                i += 1
            else:
                out.append(patch_sorted[j])
                j += 1
    return out


def _first_positions(items: list[Any], key_of: Any) -> dict[Any, int]:
    positions: dict[Any, int] = {}
    for i, item in enumerate(items):
        try:
            key = key_of(item)
        except ApiError:
            continue
        positions.setdefault(key, i)
    return positions

"""Objects read with a key more than once: found where a request body is read (JSON or YAML),
carried with the request as plain data, and reported by the type check (apiserver/decode.py) as
upstream's strict decoding reports them (sigs.k8s.io/json: `duplicate field "spec.replicas"`;
sigs.k8s.io/yaml: `line 12: key "replicas" already set in map`).

Guarantees
----------
* `read_json(text)` reads JSON as `json.loads` does — the last value of a repeated key wins, as
  Go's decoder keeps it — and returns `(value, duplicates)`: the value holds plain dicts only.
  A body without a repeated key costs one small hook call per object, nothing more.
* `duplicates` is a list of `{"path": [...], "keys": [...]}` (YAML adds `"lines": [...]`), one per
  object that holds a key more than once, in document order: where the object is (keys and list
  indexes from the root), its keys in document order with the repeats, and for YAML the line of
  each. It is JSON, so a recorded request replays to the same answer. At most `MAX_OBJECTS`
  objects are listed (upstream reports at most 100 strict errors; decode reports 20).
* `mark(body, duplicates)` is the body with each listed object replaced by a `DuplicateKeys`
  (a dict subclass holding `order` and `lines`) — copies along the paths, nothing else copied or
  mutated; entries whose path does not lead to an object are ignored (a hand-written request).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

Obj = dict[str, Any]

MAX_OBJECTS: Final = 20
MAX_KEYS: Final = 1000  # keys of one listed object (its repeats are reported among the first)


class DuplicateKeys(dict[str, Any]):
    """An object read with a repeated key: the last value of each key, `order` (its keys in
    document order, repeats included) and `lines` (the line of each, YAML; empty for JSON)."""

    __slots__ = ("lines", "order")

    def __init__(self, items: Obj, order: list[str], lines: list[int] | None = None) -> None:
        super().__init__(items)
        self.order = order
        self.lines = lines or []


def read_json(text: str, parse_constant: Callable[[str], Any] | None = None) -> tuple[Any, list[Obj]]:
    """JSON `text` and the objects in it with a repeated key (see the module docstring)."""
    found = False

    def pairs(items: list[tuple[str, Any]]) -> Any:
        nonlocal found
        obj = dict(items)
        if len(obj) != len(items):
            found = True
            return DuplicateKeys(obj, [key for key, _ in items])
        return obj

    value = json.loads(text, object_pairs_hook=pairs, parse_constant=parse_constant)
    if not found:
        return value, []
    return collect_duplicates(value)


def collect_duplicates(value: Any) -> tuple[Any, list[Obj]]:
    """`value` with plain dicts in place of its `DuplicateKeys`, and their list (document order).
    Iterative: the value was read within the depth limit, but no recursion is needed."""
    found: list[Obj] = []
    root: list[Any] = [value]
    # (container, key or index in it, path to the value there)
    stack: list[tuple[Any, Any, list[Any]]] = [(root, 0, [])]
    while stack:
        container, at, path = stack.pop()
        item = container[at]
        if isinstance(item, DuplicateKeys):
            if len(found) < MAX_OBJECTS:
                entry: Obj = {"path": path, "keys": item.order[:MAX_KEYS]}
                if item.lines:
                    entry["lines"] = item.lines[:MAX_KEYS]
                found.append(entry)
            item = container[at] = dict(item)
        if isinstance(item, dict):
            stack.extend((item, key, [*path, key]) for key in reversed(list(item)))
        elif isinstance(item, list):
            stack.extend((item, i, [*path, i]) for i in range(len(item) - 1, -1, -1))
    return root[0], found


def mark(body: Any, duplicates: list[Obj]) -> Any:
    """`body` with the objects `duplicates` lists as `DuplicateKeys` (see the module docstring)."""
    for entry in duplicates[:MAX_OBJECTS]:
        path = entry.get("path")
        keys = entry.get("keys")
        lines = entry.get("lines")
        if not isinstance(path, list) or not isinstance(keys, list) or not all(type(k) is str for k in keys):
            continue
        body = _replace(body, path, keys, lines if isinstance(lines, list) else None)
    return body


def _replace(value: Any, path: list[Any], keys: list[str], lines: list[Any] | None) -> Any:
    if not path:
        if type(value) is not dict and not isinstance(value, DuplicateKeys):
            return value
        return DuplicateKeys(value, [key for key in keys if key in value], _lines(lines, keys, value))
    step, rest = path[0], path[1:]
    if isinstance(value, dict) and type(step) is str and step in value:
        replaced = _replace(value[step], rest, keys, lines)
        if replaced is value[step]:
            return value
        if isinstance(value, DuplicateKeys):
            return DuplicateKeys({**value, step: replaced}, value.order, value.lines)
        return {**value, step: replaced}
    if isinstance(value, list) and type(step) is int and 0 <= step < len(value):
        replaced = _replace(value[step], rest, keys, lines)
        return value if replaced is value[step] else [*value[:step], replaced, *value[step + 1 :]]
    return value


def _lines(lines: list[Any] | None, keys: list[str], value: Obj) -> list[int]:
    if lines is None or len(lines) != len(keys):
        return []
    return [int(line) if type(line) is int else 0 for key, line in zip(keys, lines, strict=True) if key in value]

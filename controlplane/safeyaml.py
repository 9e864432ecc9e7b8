"""Safe YAML reading for input from outside: scenario files and YAML the dashboard receives.

Guarantees
----------
* `load(text)` returns JSON-shaped data — dicts with string keys, lists, strings, ints of at
  most 64 bits, finite floats, booleans and None — or raises `YAMLInputError`, a `ValueError`
  whose message is one line naming where (`objects[0].metadata.labels: duplicate key "app"
  (line 12)`). No other exception escapes for any input text.
* Bounded: text of at most `MAX_SCENARIO_BYTES`; nesting of at most `MAX_YAML_DEPTH`;
  at most `MAX_YAML_NODES` nodes *after* alias expansion, counted while reading, so an alias
  bomb ("billion laughs") is refused before anything could expand it. A recursive alias
  (`&a [*a]`) is refused. Aliases are kept as shared references, as PyYAML does; consumers
  must not mutate what they read (nothing in the core does).
* Iterative: the document is built from the parser's event stream with an explicit stack, so
  no nesting depth can raise `RecursionError`, and no node graph is kept (memory follows the
  result, not the text). libyaml's C parser is used when PyYAML was built with it.
* Scalars resolve as PyYAML's `SafeLoader` resolves them (YAML 1.1: `yes` is true, `010` is
  8), except that timestamps stay strings, as kubectl's YAML-to-JSON conversion keeps them,
  and `=` is a string. Merge keys (`<<: *base`) work. Tags other than str, int, float, bool,
  null, map and seq are refused, as are duplicate keys (sigs.k8s.io/yaml refuses them too;
  with `duplicates=True` a mapping that repeats a key is a `duplicate_keys.DuplicateKeys` holding
  the last value and the line of each key, for an API body's strict decoding to report),
  non-string keys, `.nan` and `.inf` (JSON has no such numbers) and more than one document.
"""

from __future__ import annotations

import gc
import math
from typing import Any

import yaml
from yaml import events as ev
from yaml.constructor import SafeConstructor
from yaml.resolver import BaseResolver, Resolver

from controlplane.duplicate_keys import DuplicateKeys
from controlplane.limits import MAX_SCENARIO_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ, _MERGE = _TAG + "map", _TAG + "seq", _TAG + "merge"
_SCALAR_TAGS = frozenset({_STR, _INT, _FLOAT, _BOOL, _NULL})
_MAX_INT_TEXT = 80  # characters: 64 bits in binary with a sign, prefix and underscores fit
_PATH_PARTS_SHOWN = 12  # a path deeper than this is shown as its first and last parts

try:
    _Parser: Any = yaml.CSafeLoader
    WITH_LIBYAML = True
except AttributeError:  # PyYAML built without libyaml
    _Parser = yaml.SafeLoader
    WITH_LIBYAML = False


class YAMLInputError(ValueError):
    """Unreadable or refused YAML. `path` is where (`objects[0].spec`, "" for the document)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


class _Resolver(BaseResolver):
    """PyYAML's implicit resolvers without timestamp, `=` (value) and `!&*` (yaml) tags."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag in _SCALAR_TAGS or tag == _MERGE]
        for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }


_resolver = _Resolver()
_constructor = SafeConstructor()
_SCALAR_NODE = yaml.ScalarNode


class _Frame:
    __slots__ = ("anchor", "depth", "is_map", "key", "line", "merge_key", "merges", "value", "weight")

    def __init__(self, is_map: bool, anchor: str | None, line: int) -> None:
        self.is_map = is_map
        self.value: Any = {} if is_map else []
        self.anchor = anchor
        self.line = line
        self.weight = 1  # nodes, aliases expanded
        self.depth = 1  # levels of nesting, this one included
        self.key: str | None = None  # a mapping's key waiting for its value
        self.merge_key = False  # that key is `<<`
        self.merges: list[dict[str, Any]] | None = None


def _path(stack: list[_Frame]) -> str:
    parts: list[str] = []
    for frame in stack:
        if frame.is_map:
            if frame.key is not None:
                parts.append(f".{frame.key}" if parts else frame.key)
        else:
            parts.append(f"[{len(frame.value)}]")
    if len(parts) > _PATH_PARTS_SHOWN:
        parts = [*parts[: _PATH_PARTS_SHOWN // 2], "…", *parts[-_PATH_PARTS_SHOWN // 2 :]]
    return "".join(parts)


def _line(event: Any) -> int:
    mark = getattr(event, "start_mark", None)
    return int(mark.line) + 1 if mark is not None else 0


def load(text: str, *, duplicates: bool = False) -> Any:
    """Read one YAML document (see the module docstring). Empty text is None."""
    return _read(text, many=False, duplicates=duplicates)


def load_all(text: str, *, duplicates: bool = False) -> list[Any]:
    """Every document of a YAML stream (`---` between them), empty ones as None; the limits
    hold for the stream as a whole (anchors belong to their document, as YAML says)."""
    documents: list[Any] = _read(text, many=True, duplicates=duplicates)
    return documents


def _read(text: str, *, many: bool, duplicates: bool) -> Any:
    if len(text) > MAX_SCENARIO_BYTES:
        raise YAMLInputError("", f"larger than {MAX_SCENARIO_BYTES // (1024 * 1024)} MiB")
    enabled = gc.isenabled()
    gc.disable()  # building a large result would trigger collections that find nothing to free
    try:
        return _load(text, many, duplicates)
    except yaml.YAMLError as exc:
        raise YAMLInputError("", _yaml_error(exc)) from None
    finally:
        if enabled:
            gc.enable()


def _yaml_error(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"not valid YAML{where}: {problem}"


def _load(text: str, many: bool, duplicates: bool) -> Any:
    parser = _Parser(text)
    try:
        return _build(parser, many, duplicates)
    finally:
        parser.dispose()


def _build(parser: Any, many: bool, duplicates: bool) -> Any:
    stack: list[_Frame] = []
    anchors: dict[str, tuple[Any, int, int]] = {}  # anchor → (value, weight, depth)
    open_anchors: set[str] = set()
    total = 0
    documents = 0
    result: Any = None
    results: list[Any] = []
    get_event = parser.get_event
    while True:
        try:
            event = get_event()
        except yaml.YAMLError as exc:
            # PyYAML >= 6.0.4 has a nesting limit of its own (1,000 levels), which its scanner
            # can reach ahead of the events read here: the same refusal as ours, in our words.
            if "nesting depth" in str(getattr(exc, "problem", None) or exc):
                raise YAMLInputError(_path(stack), f"nested deeper than {MAX_YAML_DEPTH} levels") from None
            raise
        if event is None or isinstance(event, ev.StreamEndEvent):
            break
        value: Any
        if isinstance(event, ev.ScalarEvent):
            total += 1
            value = _scalar(event, stack)
            weight, depth = 1, 0
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1, 0)
        elif isinstance(event, ev.CollectionStartEvent):
            total += 1
            is_map = isinstance(event, ev.MappingStartEvent)
            tag = event.tag
            if tag not in (None, "!", _MAP if is_map else _SEQ):
                raise YAMLInputError(_path(stack), f"unsupported tag {tag} (line {_line(event)})")
            if len(stack) >= MAX_YAML_DEPTH:
                raise YAMLInputError(_path(stack), f"nested deeper than {MAX_YAML_DEPTH} levels")
            if total > MAX_YAML_NODES:
                raise YAMLInputError(_path(stack), f"more than {MAX_YAML_NODES} nodes")
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            stack.append(_Frame(is_map, event.anchor, _line(event)))
            continue
        elif isinstance(event, ev.CollectionEndEvent):
            frame = stack.pop()
            value = frame.value
            if frame.is_map and frame.key is not None:
                raise YAMLInputError(_path(stack), "mapping ends before its last value")  # not reachable
            if frame.merges:
                merged: dict[str, Any] = {}
                for source in reversed(frame.merges):  # the first merged mapping wins
                    merged.update(source)
                merged.update(value)
                value = merged
            weight, depth = frame.weight, frame.depth
            if frame.anchor is not None:
                open_anchors.discard(frame.anchor)
                anchors[frame.anchor] = (value, weight, depth)
        elif isinstance(event, ev.AliasEvent):
            name = event.anchor
            if name in open_anchors:
                raise YAMLInputError(_path(stack), f"recursive alias *{name} (line {_line(event)})")
            if name not in anchors:
                raise YAMLInputError(_path(stack), f"undefined alias *{name} (line {_line(event)})")
            value, weight, depth = anchors[name]
            total += weight
            if total > MAX_YAML_NODES:
                raise YAMLInputError(
                    _path(stack), f"more than {MAX_YAML_NODES} nodes once aliases are expanded (line {_line(event)})"
                )
            if len(stack) + depth > MAX_YAML_DEPTH:
                raise YAMLInputError(_path(stack), f"nested deeper than {MAX_YAML_DEPTH} levels once *{name} expands")
        elif isinstance(event, ev.DocumentStartEvent):
            documents += 1
            if documents > 1 and not many:
                raise YAMLInputError("", f"more than one YAML document (line {_line(event)})")
            anchors.clear()
            result = None
            continue
        elif isinstance(event, ev.DocumentEndEvent):
            results.append(result)
            continue
        else:  # StreamStart
            continue
        if not stack:
            result = value
            continue
        _add(stack, value, weight, depth, event, duplicates)
    return results if many else result


def _add(stack: list[_Frame], value: Any, weight: int, depth: int, event: Any, duplicates: bool = False) -> None:
    parent = stack[-1]
    parent.weight += weight
    if depth + 1 > parent.depth:
        parent.depth = depth + 1
    if not parent.is_map:
        parent.value.append(value)
        return
    if parent.key is None and not parent.merge_key:
        if type(value) is not str:
            where = _path(stack)
            if isinstance(value, bool):
                shown = f"the boolean {str(value).lower()} (YAML 1.1 reads yes/no/on/off as booleans)"
            elif isinstance(value, dict | list):
                shown = "a mapping" if isinstance(value, dict) else "a list"
            else:
                shown = repr(value)
            raise YAMLInputError(
                where, f"mapping keys must be strings, not {shown} (line {_line(event)}; quote it if it is a name)"
            )
        if value == "<<" and isinstance(event, ev.ScalarEvent) and event.tag is None and event.implicit[0]:
            parent.merge_key = True  # a plain `<<` resolves to the merge tag
            return
        mapping = parent.value
        if value in mapping:
            if not duplicates:
                raise YAMLInputError(_path(stack), f'duplicate key "{value}" (line {_line(event)})')
            if type(mapping) is not DuplicateKeys:
                mapping = parent.value = DuplicateKeys(mapping, list(mapping), [0] * len(mapping))
            mapping.order.append(value)
            mapping.lines.append(_line(event))
        elif type(mapping) is DuplicateKeys:
            mapping.order.append(value)
            mapping.lines.append(0)
        parent.key = value
        return
    if parent.merge_key:
        parent.merge_key = False
        sources = value if isinstance(value, list) else [value]
        if not all(isinstance(source, dict) for source in sources):
            raise YAMLInputError(
                _path(stack), f"a merge key (<<) takes a mapping or a list of them (line {_line(event)})"
            )
        if parent.merges is None:
            parent.merges = []
        parent.merges.extend(sources)
        return
    assert parent.key is not None
    parent.value[parent.key] = value
    parent.key = None


def _scalar(event: Any, stack: list[_Frame]) -> Any:
    text: str = event.value
    tag = event.tag
    if tag is None:
        tag = _resolver.resolve(_SCALAR_NODE, text, event.implicit)  # type: ignore[no-untyped-call]
    elif tag == "!":
        tag = _STR
    if tag in (_STR, _MERGE):
        return text
    node = _SCALAR_NODE(tag, text)
    try:
        if tag == _INT:
            if len(text) > _MAX_INT_TEXT:
                raise OverflowError
            number = _constructor.construct_yaml_int(node)
            if number.bit_length() > 64:
                raise OverflowError
            return number
        if tag == _FLOAT:
            real = _constructor.construct_yaml_float(node)
            if math.isfinite(real):
                return real
        if tag == _BOOL:
            return _constructor.construct_yaml_bool(node)
        if tag == _NULL:
            return None
    except OverflowError:
        raise YAMLInputError(_path(stack), f"integer {text[:40]} is out of range (line {_line(event)})") from None
    except (ValueError, KeyError, IndexError, TypeError):
        raise YAMLInputError(
            _path(stack), f"{text[:40]!r} is not a valid {tag[len(_TAG) :]} (line {_line(event)})"
        ) from None
    if tag == _FLOAT:
        raise YAMLInputError(
            _path(stack), f"{text} is not a finite number (line {_line(event)}; JSON has no NaN or infinity)"
        )
    if tag == _FLOAT:
        raise YAMLInputError(
            _path(stack), f"{text} is not a finite number (line {_line(event)}; JSON has no NaN or infinity)"
        )
    raise YAMLInputError(_path(stack), f"unsupported tag {tag} (line {_line(event)})")

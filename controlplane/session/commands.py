"""What a command may carry, read and checked before anything changes: `CommandError` (the one
refusal of a session's commands and reads) and the readers of their arguments — a YAML text of
manifests (`parse_manifests`), a time to run to (`_time`), a speed (`_speed`)."""

from __future__ import annotations

import math
from typing import Any

import yaml

from controlplane import safeyaml
from controlplane.apiserver.decode import duplicate_fields_error
from controlplane.duplicate_keys import collect_duplicates
from controlplane.limits import MAX_SECONDS

Obj = dict[str, Any]

SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0)
MAX_YAML = 256 * 1024
MAX_DOCUMENTS = 50
MAX_RUN_TO = 1e7  # seconds of virtual time one "run to" may cover


class CommandError(ValueError):
    """A command the host cannot carry out: the message says why; nothing changed."""


def parse_manifests(text: Any) -> list[Obj]:
    """The manifests of a YAML text (`---` between documents), or CommandError saying what is
    wrong. Read by `safeyaml`: bounded depth and nodes (aliases counted expanded), iteratively.
    A manifest with a repeated key is refused as the API server refuses it under
    fieldValidation=Strict, which the editor's apply uses (`yaml: unmarshal errors: …`)."""
    if not isinstance(text, str) or not text.strip():
        raise CommandError("yaml: paste one or more manifests")
    if len(text) > MAX_YAML:
        raise CommandError(f"yaml: longer than {MAX_YAML // 1024} KiB")
    try:
        # Built iteratively, within limits: libyaml's own composer recurses in C, and a few
        # hundred KiB of `[` crash the process before any RecursionError.
        docs = [doc for doc in safeyaml.load_all(text, duplicates=True) if doc is not None]
    except safeyaml.YAMLInputError as exc:
        raise CommandError(f"yaml: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CommandError(f"yaml: not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise CommandError("yaml: nested too deeply") from None
    if not docs:
        raise CommandError("yaml: no manifest in the text")
    if len(docs) > MAX_DOCUMENTS:
        raise CommandError(f"yaml: at most {MAX_DOCUMENTS} manifests at once")
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise CommandError(f"yaml: document {i + 1} is not a mapping (a manifest has apiVersion, kind, metadata …)")
        docs[i], duplicates = collect_duplicates(doc)
        error = duplicate_fields_error(docs[i], duplicates)
        if error is not None:
            raise CommandError(f"yaml: document {i + 1}: {error}")
    return docs


def _time(value: Any, now: float) -> float:
    """A virtual time to run to: a finite number after now (at most MAX_RUN_TO ahead)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise CommandError(f"t: must be a number of seconds (got {value!r})") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CommandError("t: must be a finite number of seconds")
    if value <= now:
        raise CommandError(f"t: must be later than now (t={now:.3f})")
    if value - now > MAX_RUN_TO:
        raise CommandError(f"t: at most {MAX_RUN_TO:g} s ahead")
    if value > MAX_SECONDS:
        raise CommandError(f"t: at most {MAX_SECONDS:.0f} (30 days): a session runs no further than a scenario's until")
    return math.floor(float(value) * 1000.0 + 1e-6) / 1000.0


_SPEED_LIST = ", ".join(f"{s:g}" for s in SPEEDS)


def _speed(value: Any) -> float:
    try:
        speed = float(value)
    except (TypeError, ValueError):
        raise CommandError(f"speed: must be one of {_SPEED_LIST} or max") from None
    if speed not in SPEEDS:
        raise CommandError(f"speed: must be one of {_SPEED_LIST} or max")
    return speed

"""The hostile-input corpus: bad input, each case with the outcome expected (issue 9, section 2).

Three files of cases, one loader. Any door into a simulation can feed the same cases: the
headless runner and the Python facade here (tests/controlplane/test_hostile_input.py), the
websocket, the YAML editor and the Kubernetes HTTP API later.

* `manifests.yaml` — bad objects. Each is fed to the runner as a scenario's only starting object
  (exit 2, one line naming `objects[0]`) and to the facade as an `apply` action (the API server's
  400/413/422 with causes, or refused before the server when `refused` is expected).
* `scenarios.yaml` — bad scenario files and arguments for the runner: exit 2 with one line that
  starts with `field` and contains every `contains`.
* `actions.yaml` — bad live actions for `Simulation.act` / `apply`, against the base world.

Every case leaves the world as it was: the tests compare `APIServer.digest()` before and after.

Values in the YAML may be generators, expanded by `expand`: `{$string: N}` (N x's),
`{$nested: N}` (lists nested N deep), `{$flow_nested: N}` (the text
of a scenario whose `objects` is a flow sequence nested N deep), `{$big_description: N}` (the
text of a scenario with an N-byte description), `{$alias_bomb: N}` (a mapping that shares one list of
9 items N levels deep: 9**N leaves once expanded, tiny as Python data or YAML with aliases).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

CORPUS_DIR = Path(__file__).resolve().parent
FILES = {"manifest": "manifests.yaml", "scenario": "scenarios.yaml", "action": "actions.yaml"}

BASE_MANIFESTS: dict[str, dict[str, Any]] = {
    "rs": {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "hostile", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "hostile"}},
            "template": {
                "metadata": {"labels": {"app": "hostile"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    },
    "rc": {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "hostile-rc", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"app": "hostile-rc"},
            "template": {
                "metadata": {"labels": {"app": "hostile-rc"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    },
    "pod": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hostile-pod", "namespace": "default", "labels": {"app": "solo"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    },
}

# The world the facade cases act on (and the runner cases' objects start from).
BASE_SCENARIO: dict[str, Any] = {
    "name": "hostile-input base world",
    "seed": 1,
    "config": {"nodes": 3},
    "objects": [
        {
            **copy.deepcopy(BASE_MANIFESTS["rs"]),
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                },
            },
        },
        {
            **copy.deepcopy(BASE_MANIFESTS["rc"]),
            "metadata": {"name": "legacy", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"app": "legacy"},
                "template": {
                    "metadata": {"labels": {"app": "legacy"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                },
            },
        },
    ],
    "until": 10,
}


@dataclass
class Case:
    """One corpus case. `input` is what is sent (a manifest, an action, a scenario with runner
    arguments); `expect` the outcome (see each file's header comment)."""

    kind: str
    id: str
    input: dict[str, Any]
    expect: dict[str, Any]
    tags: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}"


def load_cases(kind: str | None = None) -> list[Case]:
    """Every case of the corpus (or of one kind: manifest, scenario, action), in file order,
    with generators expanded and manifests built from their base."""
    cases: list[Case] = []
    for case_kind, name in FILES.items():
        if kind is not None and kind != case_kind:
            continue
        raw = yaml.safe_load((CORPUS_DIR / name).read_text())  # trusted test data: PyYAML's own loader
        for entry in raw:
            entry = dict(entry)
            case_id = entry.pop("id")
            expect = entry.pop("expect")
            tags = entry.pop("tags", [])
            if case_kind == "manifest":
                data: dict[str, Any] = {"manifest": build_manifest(entry)}
            else:
                data = {key: expand(value) for key, value in entry.items()}
            cases.append(Case(case_kind, case_id, data, expect, tags))
    ids = [str(case) for case in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return cases


def build_manifest(entry: dict[str, Any]) -> Any:
    """`manifest:` as given, or `base:` (rs, rc, pod) with `set: {path: value}` and `delete:
    [path]` applied; paths are dotted with list indexes (`spec.template.spec.containers[0].name`)."""
    if "manifest" in entry:
        return expand(entry["manifest"])
    manifest = copy.deepcopy(BASE_MANIFESTS[entry.get("base", "rs")])
    for path, value in (entry.get("set") or {}).items():
        _set(manifest, _split(path), expand(value))
    for path in entry.get("delete") or []:
        *parents, last = _split(path)
        _walk(manifest, parents).pop(last)
    return manifest


def expand(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "$string":
                return "x" * int(arg)
            if key == "$big_description":  # text: a scenario whose description is N bytes
                return 'description: "' + "x" * int(arg) + '"\n'
            if key == "$flow_nested":  # text: a flow sequence nested N deep under `objects`
                return "objects: " + "[" * int(arg) + "]" * int(arg) + "\n"
            if key == "$nested":
                nested: list[Any] = []
                for _ in range(int(arg)):
                    nested = [nested]
                return nested
            if key == "$alias_bomb":
                level: Any = ["lol"] * 9
                for _ in range(int(arg)):
                    level = [level] * 9
                return {"bomb": level}
        return {key: expand(item) for key, item in value.items()}
    if isinstance(value, list):
        return [expand(item) for item in value]
    return value


_INDEX = re.compile(r"\[(\d+)\]")


def _split(path: str) -> list[str | int]:
    parts: list[str | int] = []
    for piece in path.split("."):
        name, _, rest = piece.partition("[")
        if name:
            parts.append(name)
        parts.extend(int(i) for i in _INDEX.findall("[" + rest if rest else ""))
    return parts


def _walk(obj: Any, parts: list[str | int]) -> Any:
    for part in parts:
        obj = obj[part]
    return obj


def _set(obj: Any, parts: list[str | int], value: Any) -> None:
    *parents, last = parts
    target = obj
    for part in parents:
        if isinstance(part, str) and isinstance(target, dict) and not isinstance(target.get(part), dict | list):
            target[part] = {}
        target = target[part]
    target[last] = value

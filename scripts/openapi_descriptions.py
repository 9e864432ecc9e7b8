"""Write controlplane/apiserver/openapi_descriptions.json: upstream's field documentation for
every struct of the API server's type table (controlplane/apiserver/decode.py), which
controlplane/apiserver/openapi.py puts into the served OpenAPI schemas (`kubectl explain`).

The text comes from the installed official Python client (`kubernetes.client.models`), whose
models are generated from upstream Kubernetes' OpenAPI document: each model's docstring is the
type's description, each pydantic field's `description` the field's. The client drops the
description of a field whose type is another struct (`Pod.spec`, `PodSpec.affinity`); for those
the file keeps, under `types`, the description of that struct (the element's for a list or map),
which the schema shows in its place.

Usage: `.venv/bin/python scripts/openapi_descriptions.py` (writes the file), `--check` (exit 1
if the committed file is not what the installed client gives). Only the table's structs are
written, so the file changes when the table or the client does.
"""

from __future__ import annotations

import json
import pathlib
import sys
import typing
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controlplane.apiserver.openapi import DESCRIPTIONS_PATH, structs  # noqa: E402

# The client's class for a struct: its group prefix when two groups share a name
# (`CoreV1Event`), else `V1<Name>`.
_PREFIXES = {
    "io.k8s.api.core.v1": "CoreV1",
    "io.k8s.api.apps.v1": "AppsV1",
    "io.k8s.api.autoscaling.v1": "AutoscalingV1",
    "io.k8s.api.policy.v1": "PolicyV1",
    "io.k8s.apimachinery.pkg.apis.meta.v1": "MetaV1",
}


def _model(models: Any, package: str, name: str) -> Any:
    for candidate in (f"{_PREFIXES[package]}{name}", f"V1{name}"):
        model = getattr(models, candidate, None)
        if model is not None:
            return model
    raise SystemExit(f"openapi_descriptions: no model for {package}.{name} in kubernetes.client.models")


def _clean(text: str | None) -> str:
    return (text or "").strip()


def _type_description(model: Any) -> str:
    # The docstring is the description, then the generator's "Attributes:" boilerplate.
    doc = model.__doc__ or ""
    return _clean(doc.split("\n    Attributes:")[0].replace("\n    ", "\n"))


def _field_type_description(annotation: Any) -> str:
    """The description of the model a field's annotation names (through Optional, List, Dict)."""
    from pydantic import BaseModel

    pending = [annotation]
    while pending:
        current = pending.pop(0)
        if isinstance(current, type) and issubclass(current, BaseModel):
            return _type_description(current)
        pending.extend(typing.get_args(current))
    return ""


def generate() -> dict[str, Any]:
    import kubernetes
    from kubernetes.client import models

    schemas: dict[str, Any] = {}
    for go_type in structs():
        model = _model(models, go_type.package, go_type.name)
        by_json = {json_name: attr for attr, json_name in model.attribute_map.items()}
        properties: dict[str, str] = {}
        types: dict[str, str] = {}
        for field in go_type.fields:
            attr = by_json.get(field)
            if attr is None:
                continue
            description = _clean(model.model_fields[attr].description)
            if description:
                properties[field] = description
            elif fallback := _field_type_description(model.model_fields[attr].annotation):
                types[field] = fallback
        schemas[f"{go_type.package}.{go_type.name}"] = {
            "description": _type_description(model),
            "properties": properties,
            "types": types,
        }
    return {
        "attribution": (
            f"kubernetes Python client {kubernetes.__version__} (kubernetes.client.models), generated from "
            "upstream Kubernetes' OpenAPI document. Copyright The Kubernetes Authors, Apache License 2.0. "
            "Written by scripts/openapi_descriptions.py: do not edit by hand."
        ),
        "schemas": schemas,
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render(generate())
    if argv[1:] == ["--check"]:
        if DESCRIPTIONS_PATH.read_text() != text:
            print(
                f"{DESCRIPTIONS_PATH.relative_to(ROOT)} is stale: run scripts/openapi_descriptions.py", file=sys.stderr
            )
            return 1
        return 0
    if argv[1:]:
        print("usage: scripts/openapi_descriptions.py [--check]", file=sys.stderr)
        return 2
    DESCRIPTIONS_PATH.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The OpenAPI documents of the served kinds (kube-apiserver's `/openapi/v3/<group>/<version>`
and `/openapi/v2`), generated from the decoder's type table (decode.py), so that decoding, field
validation and the published schema are one source.

Guarantees
----------
* One OpenAPI 3.0 document per served group/version (`api/v1`, `apis/apps/v1`), each
  self-contained: `components.schemas` holds every struct its kinds reach, named as upstream
  names them (`io.k8s.api.core.v1.Pod`, `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`,
  `io.k8s.api.autoscaling.v1.Scale` for `/scale`, `io.k8s.api.policy.v1.Eviction`), a kind's
  schema carries `x-kubernetes-group-version-kind`; fields are typed as the table types them
  (`integer`/`int32`, `string`/`date-time` through `meta.v1.Time`, `Quantity`, arrays, maps), with
  upstream's `required` lists and the `enum`s validation.py enforces. A struct the simulator does
  not model (`map[string]interface {}`: probes, affinity …) is an object that keeps unknown fields.
* `paths` hold upstream's operations for every resource and subresource served (list, create,
  get, replace, patch, delete; `/status`, `/scale`, `/binding`, `/eviction`), each with its
  `x-kubernetes-group-version-kind` and `x-kubernetes-action`; writes take `dryRun`,
  `fieldManager` and `fieldValidation` (kubectl looks for `fieldValidation` on the `patch`
  operation before it sends `fieldValidation=Strict`). Patch bodies are declared as JSON patch,
  merge patch and apply patch, not strategic merge patch: kubectl then computes a strategic merge
  patch from its compiled-in Go types (exact upstream patch metadata) rather than from these
  schemas, which do not describe the unmodelled structs' merge keys.
* Descriptions are upstream's text, read from `openapi_descriptions.json` (written by
  scripts/openapi_descriptions.py from the official Python client's models; Apache-2.0, The
  Kubernetes Authors). A field whose own description the client lacks (most fields typed by
  another struct, `Pod.spec`, `PodSpec.affinity`) is described by its struct's description.
* `/openapi/v2` is the same schemas as one Swagger 2.0 JSON document (`definitions`, both groups).
* Documents are built once, on first use, and never change while the process runs.
"""

from __future__ import annotations

import functools
import json
import pathlib
from typing import Any, Final

from controlplane.apiserver import decode
from controlplane.apiserver.decode import META_V1, GoType
from controlplane.apiserver.resources import RESOURCES, ResourceInfo
from controlplane.version import GIT_VERSION

Obj = dict[str, Any]

DESCRIPTIONS_PATH: Final = pathlib.Path(__file__).with_name("openapi_descriptions.json")
TIME: Final = f"{META_V1}.Time"
QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INFO: Final = {"title": "Kubernetes", "version": GIT_VERSION}  # the one version (controlplane.version)

_SUBRESOURCE_TYPES: Final = {
    "scale": decode.SCALE,
    "binding": decode.BINDING,
    "eviction": decode.EVICTION,
}
_GROUP_OF_PACKAGE: Final = {
    decode.CORE_V1: "",
    decode.APPS_V1: "apps",
    decode.AUTOSCALING_V1: "autoscaling",
    decode.POLICY_V1: "policy",
}


def schema_name(go_type: GoType) -> str:
    """Upstream's OpenAPI name of a struct: `io.k8s.api.core.v1.Pod`."""
    return f"{go_type.package}.{go_type.name}"


def _reachable(roots: list[GoType]) -> list[GoType]:
    """The structs `roots` reach, each once, in the order met (depth first)."""
    found: dict[str, GoType] = {}

    def visit(go_type: GoType) -> None:
        if go_type.code == decode._STRUCT:
            name = schema_name(go_type)
            known = found.get(name)
            if known is not None:
                assert known.fields.keys() == go_type.fields.keys(), f"two structs named {name}"
                return
            found[name] = go_type
            for field in go_type.fields.values():
                visit(field)
        elif go_type.item is not None:
            visit(go_type.item)

    for root in roots:
        visit(root)
    return list(found.values())


def _kind_types(info: ResourceInfo) -> list[GoType]:
    return [decode.KINDS[info.plural], *(_SUBRESOURCE_TYPES[s] for s in info.subresources if s in _SUBRESOURCE_TYPES)]


def structs() -> list[GoType]:
    """Every struct of the served kinds and their subresources' kinds."""
    return _reachable([go_type for info in RESOURCES.values() for go_type in _kind_types(info)])


@functools.cache
def _descriptions() -> dict[str, Obj]:
    schemas: dict[str, Obj] = json.loads(DESCRIPTIONS_PATH.read_text())["schemas"]
    return schemas


def _gvk(go_type: GoType) -> Obj:
    return {"group": _GROUP_OF_PACKAGE[go_type.package], "kind": go_type.name, "version": "v1"}


class _Schemas:
    """Schemas of one document: `v3` chooses OpenAPI 3's `#/components/schemas/` references
    (a described reference as `allOf`, as upstream writes it) or Swagger 2's `#/definitions/`."""

    def __init__(self, v3: bool) -> None:
        self.v3 = v3
        self.prefix = "#/components/schemas/" if v3 else "#/definitions/"

    def ref(self, name: str) -> Obj:
        return {"$ref": self.prefix + name}

    def named(self, roots: list[GoType], kinds: set[str]) -> Obj:
        """Every struct `roots` reach, by upstream name, and the Time and Quantity schemas."""
        out: Obj = {}
        for go_type in _reachable(roots):
            name = schema_name(go_type)
            out[name] = self.struct(go_type, name in kinds)
        out[TIME] = {"type": "string", "format": "date-time"}
        out[QUANTITY] = {"oneOf": [{"type": "string"}, {"type": "number"}]} if self.v3 else {"type": "string"}
        return dict(sorted(out.items()))

    def struct(self, go_type: GoType, is_kind: bool) -> Obj:
        text = _descriptions()[schema_name(go_type)]
        schema: Obj = {"type": "object"}
        if text["description"]:
            schema["description"] = text["description"]
        own, types = text["properties"], text["types"]
        schema["properties"] = {
            field: self.field(field_type, own.get(field, ""), types.get(field, ""))
            for field, field_type in go_type.fields.items()
        }
        if go_type.required:
            schema["required"] = sorted(go_type.required)
        if is_kind:
            schema["x-kubernetes-group-version-kind"] = [_gvk(go_type)]
        return schema

    def field(self, go_type: GoType, description: str, type_description: str = "") -> Obj:
        """A field's schema. `type_description`: upstream's description of the field's type, for
        a field whose own the descriptions file lacks (see the module docstring)."""
        code = go_type.code
        if code in (decode._STRUCT, decode._TIME):
            name = schema_name(go_type) if code == decode._STRUCT else TIME
            if not description and code == decode._STRUCT:
                # The struct's own schema carries its description: a plain reference shows it
                # once (allOf would print it twice in `kubectl explain pods.spec`).
                description = _descriptions()[name]["description"]
                return {**self.ref(name), "description": description} if description else self.ref(name)
            if self.v3:
                schema: Obj = {"allOf": [self.ref(name)]}
                if code == decode._STRUCT:
                    schema["default"] = {}
            else:
                schema = self.ref(name)
        else:
            schema = self.value(go_type)
            description = description or type_description
        if description:
            schema["description"] = description
        return schema

    def value(self, go_type: GoType) -> Obj:
        """The schema of a value of `go_type` with no description of its own (an element)."""
        code = go_type.code
        if code == decode._STRUCT:
            return (
                {"allOf": [self.ref(schema_name(go_type))], "default": {}}
                if self.v3
                else self.ref(schema_name(go_type))
            )
        if code == decode._TIME:
            return self.ref(TIME)
        if code == decode._QUANTITY:
            return self.ref(QUANTITY)
        if code == decode._LIST:
            assert go_type.item is not None
            return {"type": "array", "items": self.value(go_type.item)}
        if code == decode._MAP:
            assert go_type.item is not None
            return {"type": "object", "additionalProperties": self.value(go_type.item)}
        if code == decode._STRING:
            return {"type": "string", "enum": list(go_type.enum)} if go_type.enum else {"type": "string"}
        if code == decode._INT:
            return {"type": "integer", "format": f"int{go_type.bits}"}
        if code == decode._BOOL:
            return {"type": "boolean"}
        if code == decode._OBJECT:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return {"x-kubernetes-preserve-unknown-fields": True}  # interface {}: any JSON value


# -- paths ------------------------------------------------------------------------------------------

_WRITE_PARAMETERS: Final = ("dryRun", "fieldManager", "fieldValidation")
_LIST_PARAMETERS: Final = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_DELETE_PARAMETERS: Final = ("dryRun", "gracePeriodSeconds", "propagationPolicy")
_INTEGER_PARAMETERS: Final = frozenset({"limit", "timeoutSeconds", "gracePeriodSeconds"})
_BOOLEAN_PARAMETERS: Final = frozenset({"allowWatchBookmarks", "sendInitialEvents", "watch", "force"})
_PATCH_TYPES: Final = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


def _parameter(name: str, v3: bool, where: str = "query") -> Obj:
    kind = "integer" if name in _INTEGER_PARAMETERS else "boolean" if name in _BOOLEAN_PARAMETERS else "string"
    param: Obj = {"name": name, "in": where, "uniqueItems": True}
    if where == "path":
        param["required"] = True
    if v3:
        param["schema"] = {"type": kind}
    else:
        param["type"] = kind
    return param


def _operation(
    schemas: _Schemas, action: str, verb: str, kind: GoType, op_id: str, body: GoType | None, params: tuple[str, ...]
) -> Obj:
    ref = schemas.ref(schema_name(kind))
    op: Obj = {"operationId": op_id, "x-kubernetes-action": action, "x-kubernetes-group-version-kind": _gvk(kind)}
    op["parameters"] = [_parameter(name, schemas.v3) for name in params]
    codes = {"post": ("200", "201", "202"), "delete": ("200", "202")}.get(verb, ("200",))
    if schemas.v3:
        media = _PATCH_TYPES if verb == "patch" else ("application/json", "application/yaml")
        if body is not None:
            op["requestBody"] = {"content": {m: {"schema": schemas.ref(schema_name(body))} for m in media}}
        op["responses"] = {
            code: {"description": "OK", "content": {"application/json": {"schema": ref}}} for code in codes
        }
    else:
        if body is not None:
            op["parameters"].append(
                {"name": "body", "in": "body", "required": True, "schema": schemas.ref(schema_name(body))}
            )
        if verb == "patch":
            op["consumes"] = list(_PATCH_TYPES)
        op["produces"] = ["application/json", "application/yaml"]
        op["responses"] = {code: {"description": "OK", "schema": ref} for code in codes}
    return op


def _paths(schemas: _Schemas, info: ResourceInfo) -> Obj:
    prefix = f"/apis/{info.group}/v1" if info.group else "/api/v1"
    kind = decode.KINDS[info.plural]
    scope = "Namespaced" if info.namespaced else ""
    collection = f"{prefix}/namespaces/{{namespace}}/{info.plural}" if info.namespaced else f"{prefix}/{info.plural}"
    item = f"{collection}/{{name}}"
    group = info.group.capitalize() or "Core"
    name = f"{group}V1{scope}{info.kind}"
    scope_params = [_parameter("namespace", schemas.v3, "path")] if info.namespaced else []

    def op(
        action: str,
        verb: str,
        op_id: str,
        *,
        body: GoType | None = None,
        of: GoType = kind,
        params: tuple[str, ...] = (),
    ) -> Obj:
        return _operation(schemas, action, verb, of, op_id, body, params)

    paths: Obj = {
        collection: {
            "get": op("list", "get", f"list{name}", params=_LIST_PARAMETERS),
            "post": op("post", "post", f"create{name}", body=kind, params=_WRITE_PARAMETERS),
            "parameters": scope_params,
        },
        item: {
            "get": op("get", "get", f"read{name}"),
            "put": op("put", "put", f"replace{name}", body=kind, params=_WRITE_PARAMETERS),
            "patch": op("patch", "patch", f"patch{name}", body=kind, params=(*_WRITE_PARAMETERS, "force")),
            "delete": op("delete", "delete", f"delete{name}", params=_DELETE_PARAMETERS),
            "parameters": [_parameter("name", schemas.v3, "path"), *scope_params],
        },
    }
    if info.namespaced:
        paths[f"{prefix}/{info.plural}"] = {"get": op("list", "get", f"list{group}V1{info.kind}ForAllNamespaces")}
    item_params = paths[item]["parameters"]
    for sub in info.subresources:
        title = sub.capitalize()
        if sub in ("status", "scale"):
            of = decode.SCALE if sub == "scale" else kind
            paths[f"{item}/{sub}"] = {
                "get": op("get", "get", f"read{name}{title}", of=of),
                "put": op("put", "put", f"replace{name}{title}", body=of, of=of, params=_WRITE_PARAMETERS),
                "patch": op(
                    "patch", "patch", f"patch{name}{title}", body=of, of=of, params=(*_WRITE_PARAMETERS, "force")
                ),
                "parameters": item_params,
            }
        elif sub in ("binding", "eviction"):
            of = _SUBRESOURCE_TYPES[sub]
            paths[f"{item}/{sub}"] = {
                "post": op("post", "post", f"create{name}{title}", body=of, of=of, params=_WRITE_PARAMETERS),
                "parameters": item_params,
            }
    return paths


def _document(groups: tuple[str, ...], v3: bool) -> Obj:
    schemas = _Schemas(v3)
    infos = [info for info in RESOURCES.values() if info.group in groups]
    roots = [go_type for info in infos for go_type in _kind_types(info)]
    kinds = {schema_name(go_type) for go_type in roots}
    paths: Obj = {}
    for info in infos:
        paths.update(_paths(schemas, info))
    named = schemas.named(roots, kinds)
    if v3:
        return {"openapi": "3.0.0", "info": INFO, "paths": paths, "components": {"schemas": named}}
    return {"swagger": "2.0", "info": INFO, "paths": paths, "definitions": named}


@functools.cache
def openapi_v3_documents() -> dict[str, Obj]:
    """The OpenAPI 3 document of each served group/version, by its path under /openapi/v3."""
    return {"api/v1": _document(("",), True), "apis/apps/v1": _document(("apps",), True)}


@functools.cache
def openapi_v2_document() -> Obj:
    """The Swagger 2.0 document of every served kind."""
    return _document(("", "apps"), False)

"""`/openapi/v2` in its protobuf form: the Swagger 2.0 document as a gnostic `openapi.v2.Document`.

kubectl asks for this form only (`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`)
when it validates a file client-side: always for a `kind: List` (no PATCH operation of the v3
documents is for `v1/List`, so its `fieldValidation` check falls back to the v2 schemas, item by
item), and for `kubectl explain --output plaintext-openapiv2`. kube-apiserver builds the same
bytes with kube-openapi's `ToProtoBinary` (JSON → gnostic `NewDocument` → proto.Marshal).

Guarantees
----------
* The fields are gnostic's `openapiv2/OpenAPIv2.proto` (field numbers and wire types); every key
  the JSON document uses is mapped, and a key this module does not know raises `ValueError`, so a
  change of the generated document cannot silently drop part of it.
* Vendor extensions (`x-kubernetes-group-version-kind`, …), `enum` values and defaults are
  gnostic `Any` messages with their value in the `yaml` field, written as JSON (a subset of YAML):
  kubectl reads the group/version/kind of each definition from there.
* The encoding is deterministic: fields in field-number order, maps in the document's key order.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]

# What kube-openapi's handler matches: the form kubectl 1.32 sends (the `@` one, kept there as
# deprecated) and its successor; the answer's Content-Type is always the latter, as the `@` is no
# valid media type (client-go's mime parsing refuses it).
CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
MEDIA_TYPES = (CONTENT_TYPE, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")

_VARINT, _FIXED64, _LENGTH = 0, 1, 2


def _varint(value: int) -> bytes:
    if value < 0:  # int64: ten bytes of two's complement, as protobuf writes it
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes(number: int, payload: bytes) -> bytes:
    return _tag(number, _LENGTH) + _varint(len(payload)) + payload


def _string(number: int, text: str) -> bytes:
    return _bytes(number, text.encode())


def _bool(number: int, value: bool) -> bytes:
    return _tag(number, _VARINT) + _varint(1 if value else 0)


def _any(number: int, value: Any) -> bytes:
    """A gnostic `Any` {value, yaml = 2}: the value as JSON text, which YAML readers take."""
    return _bytes(number, _string(2, json.dumps(value, separators=(",", ":"))))


def _named(number: int, name: str, value: bytes) -> bytes:
    """One `Named*` pair {name = 1, value = 2} of an ordered map."""
    return _bytes(number, _string(1, name) + _bytes(2, value))


# A field's encoder: (field number, JSON value) → bytes.
Field = tuple[int, Callable[[int, Any], bytes]]


def _scalar(kind: str) -> Callable[[int, Any], bytes]:
    def encode(number: int, value: Any) -> bytes:
        if kind == "string":
            return _string(number, value) if value else b""
        if kind == "strings":
            return b"".join(_string(number, item) for item in value)
        if kind == "bool":
            return _bool(number, value) if value else b""
        if kind == "double":
            return _tag(number, _FIXED64) + struct.pack("<d", float(value))
        if kind == "int":
            return _tag(number, _VARINT) + _varint(int(value))
        if kind == "anys":
            return b"".join(_any(number, item) for item in value)
        return _any(number, value)

    return encode


def _message(fields: dict[str, Field], vendor: int | None) -> Callable[[Obj], bytes]:
    """An encoder of one JSON object as the message whose fields `fields` maps (JSON key → field);
    `x-` keys go to the repeated NamedAny field `vendor`."""

    def encode(obj: Obj) -> bytes:
        parts: list[tuple[int, bytes]] = []
        for key, value in obj.items():
            if key.startswith("x-") and vendor is not None:
                parts.append((vendor, _bytes(vendor, _string(1, key) + _any(2, value))))
                continue
            if key not in fields:
                raise ValueError(f"openapi v2: no protobuf field for {key!r}")
            number, field = fields[key]
            parts.append((number, field(number, value)))
        parts.sort(key=lambda part: part[0])  # stable: a repeated field keeps its order
        return b"".join(data for _, data in parts)

    return encode


def _sub(encode: Callable[[Obj], bytes]) -> Callable[[int, Any], bytes]:
    return lambda number, value: _bytes(number, encode(value))


def _schema(obj: Obj) -> bytes:
    return _SCHEMA(obj)


def _type_item(number: int, value: str | list[str]) -> bytes:
    values = [value] if isinstance(value, str) else value
    return _bytes(number, b"".join(_string(1, v) for v in values))


def _items_item(number: int, value: Obj | list[Obj]) -> bytes:
    schemas = value if isinstance(value, list) else [value]
    return _bytes(number, b"".join(_bytes(1, _schema(s)) for s in schemas))


def _additional_properties(number: int, value: Obj | bool) -> bytes:
    if isinstance(value, bool):  # the oneof's boolean: written even when false
        return _bytes(number, _bool(2, value))
    return _bytes(number, _bytes(1, _schema(value)))


def _named_schemas(number: int, value: Obj) -> bytes:
    """`Properties` / `Definitions`: {additional_properties = 1: repeated NamedSchema}."""
    return _bytes(number, b"".join(_named(1, name, _schema(s)) for name, s in value.items()))


_SCHEMA = _message(
    {
        "$ref": (1, _scalar("string")),
        "format": (2, _scalar("string")),
        "title": (3, _scalar("string")),
        "description": (4, _scalar("string")),
        "default": (5, _scalar("any")),
        "multipleOf": (6, _scalar("double")),
        "maximum": (7, _scalar("double")),
        "exclusiveMaximum": (8, _scalar("bool")),
        "minimum": (9, _scalar("double")),
        "exclusiveMinimum": (10, _scalar("bool")),
        "maxLength": (11, _scalar("int")),
        "minLength": (12, _scalar("int")),
        "pattern": (13, _scalar("string")),
        "maxItems": (14, _scalar("int")),
        "minItems": (15, _scalar("int")),
        "uniqueItems": (16, _scalar("bool")),
        "maxProperties": (17, _scalar("int")),
        "minProperties": (18, _scalar("int")),
        "required": (19, _scalar("strings")),
        "enum": (20, _scalar("anys")),
        "additionalProperties": (21, _additional_properties),
        "type": (22, _type_item),
        "items": (23, _items_item),
        "allOf": (24, lambda number, value: b"".join(_bytes(number, _schema(s)) for s in value)),
        "properties": (25, _named_schemas),
        "readOnly": (27, _scalar("bool")),
        "example": (30, _scalar("any")),
    },
    vendor=31,
)

# Non-body parameters: QueryParameterSubSchema has `allowEmptyValue` at 5, which shifts the rest;
# PathParameterSubSchema and HeaderParameterSubSchema share one layout.
_QUERY = _message(
    {
        "required": (1, _scalar("bool")),
        "in": (2, _scalar("string")),
        "description": (3, _scalar("string")),
        "name": (4, _scalar("string")),
        "allowEmptyValue": (5, _scalar("bool")),
        "type": (6, _scalar("string")),
        "format": (7, _scalar("string")),
        "uniqueItems": (20, _scalar("bool")),
    },
    vendor=23,
)
_PATH_OR_HEADER = _message(
    {
        "required": (1, _scalar("bool")),
        "in": (2, _scalar("string")),
        "description": (3, _scalar("string")),
        "name": (4, _scalar("string")),
        "type": (5, _scalar("string")),
        "format": (6, _scalar("string")),
        "uniqueItems": (19, _scalar("bool")),
    },
    vendor=22,
)
_BODY = _message(
    {
        "description": (1, _scalar("string")),
        "name": (2, _scalar("string")),
        "in": (3, _scalar("string")),
        "required": (4, _scalar("bool")),
        "schema": (5, _sub(_schema)),
    },
    vendor=6,
)
_NON_BODY = {"header": (1, _PATH_OR_HEADER), "query": (3, _QUERY), "path": (4, _PATH_OR_HEADER)}


def _parameters(number: int, value: list[Obj]) -> bytes:
    """repeated ParametersItem {parameter = 1: Parameter {body = 1 | non_body = 2}, $ref = 2}."""
    out = []
    for param in value:
        if "$ref" in param:
            out.append(_bytes(number, _bytes(2, _string(1, param["$ref"]))))
            continue
        where = param.get("in")
        if where == "body":
            parameter = _bytes(1, _BODY(param))
        elif where in _NON_BODY:
            field, encode = _NON_BODY[where]
            parameter = _bytes(2, _bytes(field, encode(param)))
        else:
            raise ValueError(f"openapi v2: no protobuf form for a parameter in {where!r}")
        out.append(_bytes(number, _bytes(1, parameter)))
    return b"".join(out)


_RESPONSE = _message(
    {"description": (1, _scalar("string")), "schema": (2, lambda n, v: _bytes(n, _bytes(1, _schema(v))))},
    vendor=5,
)


def _responses(number: int, value: Obj) -> bytes:
    """Responses {response_code = 1: repeated NamedResponseValue, vendor_extension = 2}."""
    out = []
    for code, response in value.items():
        if code.startswith("x-"):
            out.append(_bytes(2, _string(1, code) + _any(2, response)))
        elif "$ref" in response:
            out.append(_named(1, code, _bytes(2, _string(1, response["$ref"]))))
        else:
            out.append(_named(1, code, _bytes(1, _RESPONSE(response))))
    return _bytes(number, b"".join(out))


_OPERATION = _message(
    {
        "tags": (1, _scalar("strings")),
        "summary": (2, _scalar("string")),
        "description": (3, _scalar("string")),
        "operationId": (5, _scalar("string")),
        "produces": (6, _scalar("strings")),
        "consumes": (7, _scalar("strings")),
        "parameters": (8, _parameters),
        "responses": (9, _responses),
        "schemes": (10, _scalar("strings")),
        "deprecated": (11, _scalar("bool")),
    },
    vendor=13,
)
_PATH_ITEM = _message(
    {
        "$ref": (1, _scalar("string")),
        **{verb: (number, _sub(_OPERATION)) for number, verb in enumerate(("get", "put", "post", "delete"), 2)},
        "options": (6, _sub(_OPERATION)),
        "head": (7, _sub(_OPERATION)),
        "patch": (8, _sub(_OPERATION)),
        "parameters": (9, _parameters),
    },
    vendor=10,
)


def _paths(number: int, value: Obj) -> bytes:
    """Paths {vendor_extension = 1, path = 2: repeated NamedPathItem}."""
    out = []
    for path, item in value.items():
        if path.startswith("x-"):
            out.append(_bytes(1, _string(1, path) + _any(2, item)))
        else:
            out.append(_named(2, path, _PATH_ITEM(item)))
    return _bytes(number, b"".join(out))


_INFO = _message(
    {"title": (1, _scalar("string")), "version": (2, _scalar("string")), "description": (3, _scalar("string"))},
    vendor=7,
)
_DOCUMENT = _message(
    {
        "swagger": (1, _scalar("string")),
        "info": (2, _sub(_INFO)),
        "host": (3, _scalar("string")),
        "basePath": (4, _scalar("string")),
        "schemes": (5, _scalar("strings")),
        "consumes": (6, _scalar("strings")),
        "produces": (7, _scalar("strings")),
        "paths": (8, _paths),
        "definitions": (9, _named_schemas),
    },
    vendor=16,
)


def encode_document(document: Obj) -> bytes:
    """The Swagger 2.0 `document` as a serialized gnostic `openapi.v2.Document`."""
    return _DOCUMENT(document)


def accepted(accept: str) -> bool:
    """Whether an Accept header asks for the protobuf form."""
    return any(part.split(";")[0].strip() in MEDIA_TYPES for part in accept.split(","))

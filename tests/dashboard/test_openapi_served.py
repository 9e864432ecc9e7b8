"""The OpenAPI documents over HTTP: the v3 index with hashed URLs under the simulation's path,
each document as generated, and /openapi/v2 as JSON or as gnostic protobuf (what kubectl's
client-side validation reads; tests/kubectl/test_explain_replace.py feeds it to the real kubectl)."""

from __future__ import annotations

import json

import pytest
from channels.testing import HttpCommunicator

from controlplane.simulation import openapi_v2_document, openapi_v3_documents
from dashboard.asgi import application
from dashboard.k8s import openapi_v2_proto

from .conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)
AUTH = (b"authorization", f"Bearer {TOKEN}".encode())
PROTOBUF_V2 = b"application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


async def get(path, *headers):
    comm = HttpCommunicator(application, "GET", path, headers=[AUTH, *headers])
    response = await comm.get_response(timeout=10)
    return response["status"], response["body"]


async def test_the_v3_index_points_at_each_group_versions_document(running_host):
    status, body = await get(f"/sim/demo/k8s/token/{TOKEN}/openapi/v3")
    assert status == 200
    paths = json.loads(body)["paths"]
    assert set(paths) == {"api/v1", "apis/apps/v1"}
    url = paths["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith(f"/sim/demo/k8s/token/{TOKEN}/openapi/v3/apis/apps/v1?hash=")
    status, body = await get(url)
    assert status == 200 and json.loads(body) == openapi_v3_documents()["apis/apps/v1"]


async def test_v2_is_json_or_protobuf_and_any_other_accept_is_404(running_host):
    status, body = await get("/openapi/v2", (b"accept", b"application/json"))
    assert status == 200 and json.loads(body) == openapi_v2_document()
    assert "io.k8s.api.core.v1.Pod" in json.loads(body)["definitions"]
    comm = HttpCommunicator(application, "GET", "/openapi/v2", headers=[AUTH, (b"accept", PROTOBUF_V2)])
    response = await comm.get_response(timeout=10)
    content_type = dict(response["headers"])[b"content-type"]
    assert (response["status"], content_type) == (200, b"application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    assert response["body"] == openapi_v2_proto.encode_document(openapi_v2_document())
    status, _ = await get("/openapi/v2", (b"accept", b"application/xml"))
    assert status == 404


def test_v2_protobuf_is_gnostics_document_wire_format():
    """Field numbers of gnostic's OpenAPIv2.proto: Document.swagger = 1, info = 2 {title = 1},
    definitions = 9 {repeated NamedSchema = 1 {name = 1, value = 2: Schema {description = 4,
    type = 22 {value = 1}, vendor_extension = 31 {name = 1, value = 2: Any {yaml = 2}}}}}."""
    doc = {
        "swagger": "2.0",
        "info": {"title": "K"},
        "definitions": {"a.B": {"type": "object", "description": "d", "x-k": [1]}},
    }
    schema = b"\x22\x01d" + b"\xb2\x01\x08\x0a\x06object" + b"\xfa\x01\x0c\x0a\x03x-k\x12\x05\x12\x03[1]"
    named = b"\x0a\x03a.B\x12" + bytes([len(schema)]) + schema
    definitions = b"\x0a" + bytes([len(named)]) + named
    expected = b"\x0a\x032.0" + b"\x12\x03\x0a\x01K" + b"\x4a" + bytes([len(definitions)]) + definitions
    assert openapi_v2_proto.encode_document(doc) == expected


def test_v2_protobuf_refuses_a_key_it_has_no_field_for():
    with pytest.raises(ValueError, match="no protobuf field for 'nullable'"):
        openapi_v2_proto.encode_document({"definitions": {"a": {"nullable": True}}})


def test_v2_protobuf_writes_negative_integers_as_protobuf_does():
    """int64 -1 is ten bytes of two's complement (and does not loop forever)."""
    schema = b"\x58" + b"\xff" * 9 + b"\x01"  # Schema.max_length = 11, varint
    named = b"\x0a\x01a\x12" + bytes([len(schema)]) + schema
    assert openapi_v2_proto.encode_document({"definitions": {"a": {"maxLength": -1}}}) == (
        b"\x4a" + bytes([len(named) + 2]) + b"\x0a" + bytes([len(named)]) + named
    )

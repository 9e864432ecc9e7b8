"""The OpenAPI documents over HTTP: the v3 index with hashed URLs under the simulation's path,
each document as generated, and /openapi/v2 as JSON only (a protobuf-only Accept is 404, which
kubectl tolerates and then uses its compiled-in types)."""

from __future__ import annotations

import json

import pytest
from channels.testing import HttpCommunicator

from controlplane.simulation import openapi_v2_document, openapi_v3_documents
from dashboard.asgi import application

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


async def test_v2_is_json_and_a_protobuf_only_request_is_404(running_host):
    status, body = await get("/openapi/v2", (b"accept", b"application/json"))
    assert status == 200 and json.loads(body) == openapi_v2_document()
    assert "io.k8s.api.core.v1.Pod" in json.loads(body)["definitions"]
    status, _ = await get("/openapi/v2", (b"accept", PROTOBUF_V2))
    assert status == 404

"""Request bodies on the wire: protobuf envelopes, media types, pods/eviction (issue 18 §1)."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.testing import HttpCommunicator

from dashboard.asgi import application
from dashboard.k8s import protobuf

from .conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)
AUTH = [(b"authorization", f"Bearer {TOKEN}".encode())]
PROTOBUF = [*AUTH, (b"content-type", b"application/vnd.kubernetes.protobuf")]


async def call(method, path, body=b"", headers=()):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    comm = HttpCommunicator(application, method, path, body=data, headers=list(headers))
    response = await comm.get_response(timeout=10)
    return response["status"], json.loads(response["body"]) if response["body"] else None


def envelope(api_version: str, kind: str, message: str, **fields) -> bytes:
    """A `k8s\\0` + runtime.Unknown body, encoded with the same message classes."""
    classes = protobuf._message_classes()
    inner = classes[message](**fields)
    unknown = classes["Unknown"](raw=inner.SerializeToString())
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    return protobuf.MAGIC + unknown.SerializeToString()


# kubectl 1.32's `create namespace x`, byte for byte (captured with -v=9).
KUBECTL_NAMESPACE = bytes.fromhex(
    "6b3873000a0f0a02763112094e616d657370616365"  # k8s\0, typeMeta {v1, Namespace}
    "12190a110a017812001a0022002a00320038004200"  # raw: metadata {name: x, the rest empty}
    "12001a020a00"  # spec {}, status {phase: ""}
    "1a002200"  # contentEncoding, contentType: ""
)


async def a_pod(host) -> str:
    """The name of a live pod of the demo (its controller creates them within a few seconds)."""
    server = host.sims["demo"].sim.server
    for _ in range(200):
        pods = [p for p in server.objects("pods") if not p["metadata"].get("deletionTimestamp")]
        if pods:
            return pods[0]["metadata"]["name"]
        await asyncio.sleep(0.05)
    raise AssertionError("the demo created no pod")


def _objects(host, resource):
    return [o["metadata"]["name"] for o in host.sims["demo"].sim.server.objects(resource)]


async def test_create_namespace_from_kubectls_protobuf_body(running_host):
    status, body = await call("POST", "/api/v1/namespaces?fieldManager=kubectl-create", KUBECTL_NAMESPACE, PROTOBUF)
    assert status == 201, body
    assert body["kind"] == "Namespace" and body["metadata"]["name"] == "x"
    assert "x" in _objects(running_host, "namespaces")


# kubectl 1.32's `create deployment web2 --image=nginx --replicas=3 --port=80`, byte for byte: every
# non-pointer field written, empty or not (captured behind a logging proxy).
KUBECTL_DEPLOYMENT = bytes.fromhex(
    "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412bc010a210a047765623212001a0022002a0032"
    "00380042005a0b0a036170701204776562321288010803120d0a0b0a036170701204776562321a6d0a1d0a0012001a"
    "0022002a003200380042005a0b0a03617070120477656232124c122e0a056e67696e7812056e67696e782a00320a0a"
    "001000185022002a0042006a007200800100880100900100a201001a00320042004a0052005800600068008201008a"
    "01009a0100c2010022020a00280038001a0c0800100018002000280038001a002200"
)


async def test_create_deployment_from_kubectls_protobuf_body(running_host):
    path = "/apis/apps/v1/namespaces/default/deployments?fieldManager=kubectl-create&fieldValidation=Strict"
    status, body = await call("POST", path, KUBECTL_DEPLOYMENT, PROTOBUF)
    assert status == 201, body
    assert body["kind"] == "Deployment" and body["metadata"]["labels"] == {"app": "web2"}
    spec = body["spec"]
    assert spec["replicas"] == 3 and spec["selector"] == {"matchLabels": {"app": "web2"}}
    [container] = spec["template"]["spec"]["containers"]
    assert (container["name"], container["image"], container["ports"]) == (
        "nginx",
        "nginx",
        [{"containerPort": 80, "protocol": "TCP"}],
    )
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert "web2" in _objects(running_host, "deployments")


def test_protobuf_deployment_fields_int_or_string_quantities_and_pointers():
    classes = protobuf._message_classes()
    spec = classes["DeploymentSpec"](replicas=0, revisionHistoryLimit=0)
    spec.strategy.rollingUpdate.maxSurge.type = 1
    spec.strategy.rollingUpdate.maxSurge.strVal = "50%"
    spec.strategy.rollingUpdate.maxUnavailable.intVal = 0
    container = spec.template.spec.containers.add(name="c", image="x")
    container.resources.limits["cpu"].string = "500m"
    inner = classes["Deployment"](spec=spec)
    unknown = classes["Unknown"](raw=inner.SerializeToString())
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = "apps/v1", "Deployment"
    _, _, obj = protobuf.decode(protobuf.MAGIC + unknown.SerializeToString(), ("Deployment",))
    # replicas 0 and revisionHistoryLimit 0 are pointers: set, so kept (not defaulted to 1 and 10).
    assert obj["spec"]["replicas"] == 0 and obj["spec"]["revisionHistoryLimit"] == 0
    assert obj["spec"]["strategy"] == {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": "50%"}}
    assert obj["spec"]["template"]["spec"]["containers"] == [
        {"name": "c", "image": "x", "resources": {"limits": {"cpu": "500m"}}}
    ]


async def test_a_protobuf_deployment_with_a_field_not_modelled_is_415_and_nothing_is_stored(running_host):
    classes = protobuf._message_classes()
    # A livenessProbe (Container field 10) holding {periodSeconds: 5} (Probe field 4).
    container = classes["Container"].FromString(
        classes["Container"](name="c", image="x").SerializeToString() + bytes.fromhex("52022005")
    )
    inner = classes["Deployment"]()
    inner.metadata.name = "probed"
    inner.spec.selector.matchLabels["app"] = "probed"
    inner.spec.template.metadata.labels["app"] = "probed"
    inner.spec.template.spec.containers.append(container)
    unknown = classes["Unknown"](raw=inner.SerializeToString())
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = "apps/v1", "Deployment"
    body = protobuf.MAGIC + unknown.SerializeToString()
    status, answer = await call("POST", "/apis/apps/v1/namespaces/default/deployments", body, PROTOBUF)
    assert status == 415 and answer["reason"] == "UnsupportedMediaType", answer
    assert "field number 10 of Container" in answer["message"] and "application/json" in answer["message"]
    assert "probed" not in _objects(running_host, "deployments")


async def test_a_protobuf_delete_options_body_is_honoured(running_host):
    name = await a_pod(running_host)
    body = envelope("v1", "DeleteOptions", "DeleteOptions", gracePeriodSeconds=0)
    status, answer = await call("DELETE", f"/api/v1/namespaces/default/pods/{name}", body, PROTOBUF)
    assert status == 200, answer
    assert name not in _objects(running_host, "pods")  # grace 0: gone at once


async def test_bad_protobuf_is_a_400_status_and_nothing_is_stored(running_host):
    before = _objects(running_host, "namespaces")
    for body, words in (
        (b"k8s\x00\xff\xff\xff", "could not be decoded"),
        (b'{"kind": "Namespace"}', "magic bytes"),
        (envelope("v1", "DeleteOptions", "DeleteOptions"), "expected a body of kind Namespace"),
    ):
        status, answer = await call("POST", "/api/v1/namespaces", body, PROTOBUF)
        assert status == 400 and answer["kind"] == "Status" and answer["reason"] == "BadRequest", answer
        assert words in answer["message"]
    assert _objects(running_host, "namespaces") == before


async def test_protobuf_of_a_kind_not_decoded_and_other_media_types_are_415(running_host):
    before = _objects(running_host, "namespaces")
    status, answer = await call("POST", "/api/v1/namespaces/default/pods", envelope("v1", "Pod", "Namespace"), PROTOBUF)
    assert status == 415 and answer["reason"] == "UnsupportedMediaType", answer
    assert "application/json" in answer["message"]
    status, answer = await call(
        "POST",
        "/api/v1/namespaces",
        {"metadata": {"name": "y"}},
        [*AUTH, (b"content-type", b"application/x-www-form-urlencoded")],
    )
    assert status == 415 and answer["reason"] == "UnsupportedMediaType"
    assert answer["message"].endswith(
        "accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )
    assert _objects(running_host, "namespaces") == before


async def test_eviction_deletes_the_pod_gracefully_and_answers_201_success(running_host):
    server = running_host.sims["demo"].sim.server
    name = await a_pod(running_host)
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}
    status, answer = await call("POST", f"/api/v1/namespaces/default/pods/{name}/eviction", eviction, AUTH)
    assert (status, answer) == (
        201,
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
    )
    evicted = server.peek("pods", "default", name)
    assert evicted is None or evicted["metadata"]["deletionTimestamp"]  # graceful: marked, the kubelet finishes


async def test_a_protobuf_eviction_with_delete_options_is_honoured(running_host):
    server = running_host.sims["demo"].sim.server
    name = await a_pod(running_host)
    classes = protobuf._message_classes()
    inner = classes["Eviction"]()
    inner.metadata.name = name
    inner.deleteOptions.gracePeriodSeconds = 0
    unknown = classes["Unknown"](raw=inner.SerializeToString())
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = "policy/v1", "Eviction"
    body = protobuf.MAGIC + unknown.SerializeToString()
    status, answer = await call("POST", f"/api/v1/namespaces/default/pods/{name}/eviction", body, PROTOBUF)
    assert status == 201, answer
    assert server.peek("pods", "default", name) is None  # gracePeriodSeconds 0: deleted at once


async def test_an_eviction_naming_another_pod_is_refused(running_host):
    server = running_host.sims["demo"].sim.server
    name = await a_pod(running_host)
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}}
    status, answer = await call("POST", f"/api/v1/namespaces/default/pods/{name}/eviction", eviction, AUTH)
    assert status == 400 and answer["message"] == "name in URL does not match name in Eviction object"
    assert server.peek("pods", "default", name)["metadata"].get("deletionTimestamp") is None
    status, answer = await call("POST", "/api/v1/namespaces/default/pods/nosuch/eviction", {}, AUTH)
    assert status == 404 and answer["message"] == 'pods "nosuch" not found'


async def test_discovery_lists_pods_eviction_as_policy_v1(running_host):
    _status, body = await call("GET", "/api/v1", b"", AUTH)
    entry = next(r for r in body["resources"] if r["name"] == "pods/eviction")
    assert (entry["group"], entry["version"], entry["kind"], entry["verbs"]) == ("policy", "v1", "Eviction", ["create"])

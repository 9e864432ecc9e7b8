"""The OpenAPI documents are generated from the decoder's type table (controlplane/apiserver/openapi.py)."""

from __future__ import annotations

import json

import pytest

from controlplane.apiserver import decode, openapi, validation
from controlplane.apiserver.resources import RESOURCES

V3 = openapi.openapi_v3_documents()
V2 = openapi.openapi_v2_document()
CORE = V3["api/v1"]["components"]["schemas"]
APPS = V3["apis/apps/v1"]["components"]["schemas"]


def refs(value):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield item
            else:
                yield from refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs(item)


def test_one_document_per_served_group_version():
    assert set(V3) == {"api/v1", "apis/apps/v1"}
    assert all(doc["openapi"].startswith("3.") for doc in V3.values())


@pytest.mark.parametrize(
    ("path", "name", "gvk"),
    [
        ("api/v1", "io.k8s.api.core.v1.Pod", {"group": "", "kind": "Pod", "version": "v1"}),
        (
            "api/v1",
            "io.k8s.api.core.v1.ReplicationController",
            {"group": "", "kind": "ReplicationController", "version": "v1"},
        ),
        ("api/v1", "io.k8s.api.core.v1.Node", {"group": "", "kind": "Node", "version": "v1"}),
        ("api/v1", "io.k8s.api.core.v1.Namespace", {"group": "", "kind": "Namespace", "version": "v1"}),
        ("api/v1", "io.k8s.api.core.v1.Event", {"group": "", "kind": "Event", "version": "v1"}),
        ("api/v1", "io.k8s.api.policy.v1.Eviction", {"group": "policy", "kind": "Eviction", "version": "v1"}),
        ("api/v1", "io.k8s.api.autoscaling.v1.Scale", {"group": "autoscaling", "kind": "Scale", "version": "v1"}),
        ("apis/apps/v1", "io.k8s.api.apps.v1.ReplicaSet", {"group": "apps", "kind": "ReplicaSet", "version": "v1"}),
        ("apis/apps/v1", "io.k8s.api.autoscaling.v1.Scale", {"group": "autoscaling", "kind": "Scale", "version": "v1"}),
    ],
)
def test_each_kind_has_its_upstream_schema_name_and_group_version_kind(path, name, gvk):
    assert V3[path]["components"]["schemas"][name]["x-kubernetes-group-version-kind"] == [gvk]


def test_meta_types_are_named_as_upstream_names_them():
    for name in ("ObjectMeta", "OwnerReference", "LabelSelector", "LabelSelectorRequirement", "Time"):
        assert f"io.k8s.apimachinery.pkg.apis.meta.v1.{name}" in APPS
    assert CORE["io.k8s.apimachinery.pkg.apis.meta.v1.Time"] == {"type": "string", "format": "date-time"}
    assert "io.k8s.apimachinery.pkg.api.resource.Quantity" in CORE


@pytest.mark.parametrize("doc", [*V3.values(), V2], ids=["v3 core", "v3 apps", "v2"])
def test_every_reference_resolves_inside_its_own_document(doc):
    prefix = "#/components/schemas/" if "openapi" in doc else "#/definitions/"
    named = doc["components"]["schemas"] if "openapi" in doc else doc["definitions"]
    found = set(refs(doc))
    assert found
    assert {ref.removeprefix(prefix) for ref in found} <= set(named)
    assert all(ref.startswith(prefix) for ref in found)


def test_the_schema_has_exactly_the_fields_the_decoder_accepts():
    for go_type in openapi.structs():
        properties = V2["definitions"][openapi.schema_name(go_type)]["properties"]
        assert list(properties) == list(go_type.fields), go_type.name


def test_field_types_follow_the_go_types():
    spec = APPS["io.k8s.api.apps.v1.ReplicaSetSpec"]["properties"]
    assert spec["replicas"]["type"] == "integer" and spec["replicas"]["format"] == "int32"
    assert spec["selector"]["$ref"] == "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"
    assert spec["selector"]["description"].startswith("A label selector is a label query")
    meta = APPS["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]
    assert meta["generation"]["format"] == "int64"
    assert meta["labels"] == {**meta["labels"], "type": "object", "additionalProperties": {"type": "string"}}
    assert meta["creationTimestamp"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}
    ]
    resources = CORE["io.k8s.api.core.v1.ResourceRequirements"]["properties"]
    assert resources["limits"]["additionalProperties"] == {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"
    }
    containers = CORE["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["type"] == "array"
    assert containers["items"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}]
    # A struct the simulator does not model keeps whatever it holds.
    probe = CORE["io.k8s.api.core.v1.Container"]["properties"]["livenessProbe"]
    assert probe["type"] == "object" and probe["x-kubernetes-preserve-unknown-fields"] is True


def test_enums_are_the_values_validation_enforces():
    container = CORE["io.k8s.api.core.v1.Container"]["properties"]
    assert container["imagePullPolicy"]["enum"] == validation.PULL_POLICIES
    assert container["terminationMessagePolicy"]["enum"] == validation.TERMINATION_MESSAGE_POLICIES
    port = CORE["io.k8s.api.core.v1.ContainerPort"]["properties"]
    assert port["protocol"]["enum"] == validation.PORT_PROTOCOLS
    pod_spec = CORE["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert pod_spec["restartPolicy"]["enum"] == validation.RESTART_POLICIES
    assert pod_spec["dnsPolicy"]["enum"] == validation.DNS_POLICIES


def test_required_fields_are_upstreams():
    from kubernetes.client import models

    for go_type in openapi.structs():
        prefix = {"io.k8s.api.core.v1": "CoreV1", "io.k8s.api.apps.v1": "AppsV1"}.get(go_type.package, "")
        model = getattr(models, f"{prefix}{go_type.name}", None) or getattr(models, f"V1{go_type.name}")
        upstream = {model.attribute_map[attr] for attr, field in model.model_fields.items() if field.is_required()}
        assert set(go_type.required) == upstream, go_type.name
    assert CORE["io.k8s.api.core.v1.Container"]["required"] == ["name"]
    assert APPS["io.k8s.api.apps.v1.ReplicaSetSpec"]["required"] == ["selector"]


def test_descriptions_are_upstreams_text():
    container = CORE["io.k8s.api.core.v1.Container"]
    assert container["description"] == "A single application container that you want to run within a pod."
    assert container["properties"]["imagePullPolicy"]["description"].startswith("Image pull policy. One of Always")
    # A field the client documents only through its type: its type's description.
    assert CORE["io.k8s.api.core.v1.Pod"]["properties"]["spec"] == {
        "$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec",
        "description": "PodSpec is a description of a pod.",
    }
    # A struct the simulator does not model: its type's description.
    affinity = CORE["io.k8s.api.core.v1.PodSpec"]["properties"]["affinity"]
    assert affinity["description"] == "Affinity is a group of affinity scheduling rules."


def test_the_descriptions_file_is_what_the_generator_writes():
    import importlib.util
    import pathlib

    script = pathlib.Path(openapi.__file__).parents[2] / "scripts" / "openapi_descriptions.py"
    spec = importlib.util.spec_from_file_location("openapi_descriptions", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert openapi.DESCRIPTIONS_PATH.read_text() == module.render(module.generate())
    assert "Apache License 2.0" in json.loads(openapi.DESCRIPTIONS_PATH.read_text())["attribution"]


@pytest.mark.parametrize("info", list(RESOURCES.values()), ids=lambda info: info.plural)
def test_every_resource_can_be_patched_with_field_validation(info):
    doc = V3["apis/apps/v1" if info.group else "api/v1"]
    prefix = f"/apis/{info.group}/v1" if info.group else "/api/v1"
    path = (
        f"{prefix}/namespaces/{{namespace}}/{info.plural}/{{name}}"
        if info.namespaced
        else f"{prefix}/{info.plural}/{{name}}"
    )
    patch = doc["paths"][path]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": info.group, "kind": info.kind, "version": "v1"}
    assert {"fieldValidation", "dryRun", "fieldManager"} <= {param["name"] for param in patch["parameters"]}
    # Strategic merge patch is left to kubectl's compiled-in types (see the module docstring).
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    assert {"get", "put", "delete"} <= set(doc["paths"][path])


def test_subresources_answer_with_their_own_kinds():
    item = "/api/v1/namespaces/{namespace}/pods/{name}"
    paths = V3["api/v1"]["paths"]
    assert paths[f"{item}/eviction"]["post"]["x-kubernetes-group-version-kind"]["kind"] == "Eviction"
    assert paths[f"{item}/binding"]["post"]["x-kubernetes-group-version-kind"]["kind"] == "Binding"
    assert paths[f"{item}/status"]["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Pod"
    scale = V3["apis/apps/v1"]["paths"]["/apis/apps/v1/namespaces/{namespace}/replicasets/{name}/scale"]
    assert scale["put"]["x-kubernetes-group-version-kind"] == {"group": "autoscaling", "kind": "Scale", "version": "v1"}


def test_a_table_struct_without_descriptions_is_an_error():
    orphan = decode._struct("NotUpstream", {"x": decode.STRING})
    with pytest.raises(KeyError):
        openapi._Schemas(True).struct(orphan, False)

"""Duplicate fields (strict decoding, sigs.k8s.io/json and sigs.k8s.io/yaml): a body read with a
repeated key is refused under fieldValidation=Strict, warned about under Warn, and keeps the last
value under Ignore; the repeats travel with the request as data (controlplane/duplicate_keys.py)."""

from __future__ import annotations

import json

import pytest

from controlplane import safeyaml
from controlplane.apiserver import ApiError, Request, decode
from controlplane.apiserver.resources import RESOURCES
from controlplane.duplicate_keys import collect_duplicates, mark, read_json
from controlplane.scenario import ScenarioError, check_request, load_scenario
from controlplane.simulation import Simulation
from tests.controlplane.test_apiserver import make_server

# Upstream's own case (test/integration/apiserver/field_validation_test.go), on a ReplicaSet.
BODY = """{
  "apiVersion": "apps/v1",
  "kind": "ReplicaSet",
  "metadata": {"name": "dupename", "name": "web", "labels": {"app": "web"}, "unknownMeta": "metaVal"},
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "replicas": 1,
    "replicas": 2,
    "selector": {"matchLabels": {"app": "web"}},
    "template": {
      "metadata": {"labels": {"app": "web"}},
      "spec": {"containers": [{
        "name": "nginx", "image": "nginx:latest", "unknownNested": "val1",
        "imagePullPolicy": "Always", "imagePullPolicy": "Never"
      }]}
    }
  }
}"""
STRICT = [
    'duplicate field "metadata.name"',
    'unknown field "metadata.unknownMeta"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
    'duplicate field "spec.replicas"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
]
YAML_BODY = """apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: dupename
  name: web
  unknownMeta: metaVal
  labels:
    app: web
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  replicas: 1
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never
"""


def create(server, body, duplicates, validation=None):
    options = {"fieldValidation": validation} if validation is not None else {}
    req = Request("kubectl", "create", "replicasets", None, "default", None, body, options, duplicates=duplicates)
    return req, server.handle(req)


def test_read_json_keeps_the_last_value_and_lists_where_keys_repeat():
    value, duplicates = read_json(BODY)
    assert value["metadata"]["name"] == "web" and value["spec"]["replicas"] == 2
    assert all(type(obj) is dict for obj in (value, value["metadata"], value["spec"]))
    assert duplicates == [
        {"path": ["metadata"], "keys": ["name", "name", "labels", "unknownMeta"]},
        {
            "path": ["spec"],
            "keys": ["unknown1", "unknownDupe", "unknownDupe", "replicas", "replicas", "selector", "template"],
        },
        {
            "path": ["spec", "template", "spec", "containers", 0],
            "keys": ["name", "image", "unknownNested", "imagePullPolicy", "imagePullPolicy"],
        },
    ]
    assert json.loads(json.dumps(duplicates)) == duplicates  # plain data: it is recorded and replayed
    assert read_json('{"a": {"b": 1}}') == ({"a": {"b": 1}}, [])


def test_strict_refuses_duplicate_and_unknown_fields_in_document_order_and_stores_nothing():
    _kernel, server = make_server()
    body, duplicates = read_json(BODY)
    with pytest.raises(ApiError) as err:
        create(server, body, duplicates, "Strict")
    assert err.value.code == 400
    assert err.value.message == (
        'ReplicaSet in version "v1" cannot be handled as a ReplicaSet: strict decoding error: ' + ", ".join(STRICT)
    )
    assert server.peek("replicasets", "default", "web") is None


def test_warn_warns_about_each_and_stores_the_last_values():
    _kernel, server = make_server()
    body, duplicates = read_json(BODY)
    req, stored = create(server, body, duplicates)
    assert req.warnings == STRICT
    assert stored["spec"]["replicas"] == 2
    assert stored["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Never"
    assert "unknownMeta" not in stored["metadata"]


def test_ignore_keeps_the_last_value_silently():
    _kernel, server = make_server()
    body, duplicates = read_json(BODY)
    req, stored = create(server, body, duplicates, "Ignore")
    assert req.warnings == [] and stored["spec"]["replicas"] == 2 and stored["metadata"]["name"] == "web"


def test_a_yaml_body_reports_its_repeated_keys_as_sigs_k8s_io_yaml_does():
    _kernel, server = make_server()
    body, duplicates = collect_duplicates(safeyaml.load(YAML_BODY, duplicates=True))
    assert body["spec"]["replicas"] == 2 and type(body["spec"]) is dict
    with pytest.raises(ApiError) as err:
        create(server, body, duplicates, "Strict")
    assert err.value.message == (
        'ReplicaSet in version "v1" cannot be handled as a ReplicaSet: strict decoding error: '
        "yaml: unmarshal errors:\n"
        '  line 5: key "name" already set in map\n'
        '  line 12: key "unknownDupe" already set in map\n'
        '  line 14: key "replicas" already set in map\n'
        '  line 28: key "imagePullPolicy" already set in map, '
        'unknown field "metadata.unknownMeta", unknown field "spec.unknown1", unknown field "spec.unknownDupe", '
        'unknown field "spec.template.spec.containers[0].unknownNested"'
    )
    req, _stored = create(server, body, duplicates, "Warn")
    assert req.warnings[:2] == ['line 5: key "name" already set in map', 'unknown field "metadata.unknownMeta"']


def test_without_the_option_yaml_still_refuses_repeated_keys():
    with pytest.raises(safeyaml.YAMLInputError, match='metadata: duplicate key "name" \\(line 5\\)'):
        safeyaml.load(YAML_BODY)


def test_a_repeated_label_is_a_duplicate_field_of_the_map():
    body, duplicates = read_json(
        '{"metadata": {"name": "web", "labels": {"app": "a", "app": "web"}}, "spec": {'
        '"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},'
        '"spec": {"containers": [{"name": "c", "image": "i"}]}}}}'
    )
    assert decode.check_body(RESOURCES["replicasets"], body, duplicates=duplicates) == [
        'duplicate field "metadata.labels[app]"'
    ]


def test_mark_copies_along_the_paths_only_and_ignores_paths_that_lead_nowhere():
    body, duplicates = read_json(BODY)
    marked = mark(body, [*duplicates, {"path": ["spec", "nowhere", 3], "keys": ["x", "x"]}])
    assert marked is not body and marked["spec"] is not body["spec"]
    assert marked["metadata"]["labels"] is body["metadata"]["labels"]
    assert marked["spec"]["selector"] is body["spec"]["selector"]
    assert type(body["spec"]) is dict  # nothing mutated


def test_a_request_action_carries_its_duplicates_and_replays_to_the_same_answer():
    body, duplicates = read_json(BODY)
    action = {
        "request": {
            "client": "kubectl/v1.32",
            "verb": "create",
            "resource": "replicasets",
            "namespace": "default",
            "body": body,
            "options": {"fieldValidation": "Strict"},
            "duplicates": duplicates,
        }
    }
    check_request(action["request"], "actions[0].request")
    sim = Simulation.from_file("demo")
    first = sim.apply(json.loads(json.dumps(action)), "kubectl")
    again = Simulation.from_file("demo").apply(json.loads(json.dumps(action)), "kubectl")
    assert first == again and first["response"][0] == 400
    assert 'duplicate field "spec.replicas"' in first["response"][1]["message"]


@pytest.mark.parametrize(
    ("duplicates", "error"),
    [
        ("x", "actions[0].request.duplicates: must be a list of at most 20 objects"),
        ([{"path": [], "keys": [1]}], "actions[0].request.duplicates[0].keys: must be a list of at most 1000 strings"),
        ([{"path": [-1], "keys": []}], "actions[0].request.duplicates[0].path: holds keys"),
        ([{"path": [], "keys": ["a"], "lines": [1, 2]}], "actions[0].request.duplicates[0].lines: must be a list"),
    ],
)
def test_a_request_actions_duplicates_are_checked(duplicates, error):
    request = {"verb": "create", "resource": "replicasets", "body": {}, "duplicates": duplicates}
    with pytest.raises(ScenarioError) as err:
        check_request(request, "actions[0].request")
    assert str(err.value).startswith(error)


SCENARIO = """name: duplicate
objects:
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: web, namespace: default}
  spec:
    replicas: 1
    replicas: 2
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec: {containers: [{name: c, image: nginx}]}
until: 10
"""


def test_a_scenario_object_with_a_repeated_key_is_the_api_servers_strict_refusal_on_one_line():
    with pytest.raises(ScenarioError) as err:
        load_scenario(SCENARIO)
    assert str(err.value) == (
        'objects[0]: ReplicaSet in version "v1" cannot be handled as a ReplicaSet: strict decoding error: '
        'yaml: unmarshal errors: line 8: key "replicas" already set in map'
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("name: a\nuntil: 3\nname: b\n", 'duplicate key "name" (line 3)'),
        ("name: a\nconfig:\n  nodes: 1\n  nodes: 2\n", 'config: duplicate key "nodes" (line 4)'),
        (
            "name: a\nactions:\n- at: 1\n  scale: {kind: ReplicaSet, name: web, replicas: 1, replicas: 2}\n",
            'actions[0].scale: duplicate key "replicas" (line 4)',
        ),
    ],
)
def test_a_repeated_key_elsewhere_in_a_scenario_names_the_key_and_line(text, error):
    with pytest.raises(ScenarioError) as err:
        load_scenario(text)
    assert str(err.value) == error


def patch(server, text, validation=None, patch_type="merge"):
    body, duplicates = read_json(text)
    options = {"fieldValidation": validation, "patchType": patch_type} if validation else {"patchType": patch_type}
    req = Request("kubectl", "patch", "replicasets", None, "default", "web", body, options, duplicates=duplicates)
    return req, server.handle(req)


def test_a_merge_patch_with_a_repeated_key_is_refused_warned_about_or_applied_with_the_last_value():
    _kernel, server = make_server()
    body, _ = read_json(BODY)
    create(server, body, [], "Ignore")
    revision = server.revision
    text = '{"spec": {"replicas": 5, "replicas": 7}, "metadata": {"labels": {"x": "1", "x": "2"}}}'
    with pytest.raises(ApiError) as err:
        patch(server, text, "Strict")
    assert (err.value.code, err.value.message) == (
        400,
        'strict decoding error: duplicate field "spec.replicas", duplicate field "metadata.labels.x"',
    )
    assert server.revision == revision
    req, patched = patch(server, text)
    assert req.warnings == ['duplicate field "spec.replicas"', 'duplicate field "metadata.labels.x"']
    assert patched["spec"]["replicas"] == 7 and patched["metadata"]["labels"]["x"] == "2"
    req, _ = patch(server, text.replace("7", "8"), "Ignore")
    assert req.warnings == [] and server.peek("replicasets", "default", "web")["spec"]["replicas"] == 8

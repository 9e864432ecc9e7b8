"""The body type check's fast path (decode._accept) accepts only what the full walk accepts, and
counts the same size: a property test over well-typed bodies of the shapes the simulated
components send (pod create, status write against the stored pod, binding, ReplicaSet) with
random values put in random places, and over the hostile-input corpus's manifests."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane.apiserver import decode
from controlplane.apiserver.resources import RESOURCES
from controlplane.limits import MAX_REQUEST_BYTES
from tests.controlplane.factories import rs_manifest
from tests.controlplane.test_hostile_input import SCALARS as HOSTILE_SCALARS
from tests.corpus import BASE_MANIFESTS, load_cases

CONDITION = {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-01-01T00:00:02Z"}
RUNNING = {"running": {"startedAt": "2026-01-01T00:00:02Z"}}
OWNER = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "name": "web",
    "uid": "e5446dd4-552b-42f6-be3e-dc0a1ef2a4f0",
    "controller": True,
    "blockOwnerDeletion": True,
}


def stored_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-2w2hg",
            "generateName": "web-",
            "namespace": "default",
            "uid": "62869515-0063-49d3-baaf-ec9202be8212",
            "resourceVersion": "4093",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "web"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "100m"}},
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                }
            ],
            "nodeName": "node-9",
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 300}],
        },
        "status": {"phase": "Pending", "conditions": [CONDITION], "qosClass": "BestEffort"},
    }


def status_write(stored: dict[str, Any]) -> dict[str, Any]:
    status = {
        "observedGeneration": 1,
        "phase": "Running",
        "conditions": [CONDITION, {**CONDITION, "type": "ContainersReady"}],
        "hostIP": "10.0.0.9",
        "hostIPs": [{"ip": "10.0.0.9"}],
        "podIP": "10.244.9.101",
        "podIPs": [{"ip": "10.244.9.101"}],
        "startTime": "2026-01-01T00:00:00Z",
        "containerStatuses": [
            {
                "name": "app",
                "state": RUNNING,
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": "docker.io/library/nginx:1.27",
                "imageID": "docker.io/library/nginx@sha256:cd44",
                "containerID": "containerd://9cf4",
                "started": True,
            }
        ],
        "qosClass": "BestEffort",
    }
    return {**stored, "status": status}


def binding() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web-2w2hg", "namespace": "default"},
        "target": {"kind": "Node", "name": "node-9"},
    }


# The hostile-input scalars, plus strings that are (nearly) times and quantities.
SCALARS = st.one_of(
    HOSTILE_SCALARS,
    st.sampled_from(["2026-01-01T00:00:00Z", "100m", "1Gi", "x1", "2026-13-01T00:00:00Z"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(0, 3)), inner, max_size=3),
    ),
    max_leaves=6,
)


def places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `value` (dict keys and list indexes)."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(places(item, (*path, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(places(item, (*path, i)))
    return found


def put(value: Any, path: tuple[Any, ...], new: Any, *, add: Any = None) -> Any:
    """A copy of `value` with `new` at `path` (with `add` set: a new key `add` in the dict at
    `path`), copying only the containers on the way (the rest stays shared, as a real write)."""
    if not path:
        if add is not None and isinstance(value, dict):
            return {**value, add: new}
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: put(value[head], rest, new, add=add)}
    items = list(value)
    items[head] = put(items[head], rest, new, add=add)
    return items


def outcome(value: Any, go_type: decode.GoType, stored: Any) -> tuple[bool, int | None]:
    """(the fast path accepted it, the walk's size if the walk found nothing wrong)."""
    fast = decode._accept(value, go_type, stored)
    walk = decode._Walk()
    try:
        walk.run(value, go_type, stored)
    except decode._Problem:
        return 0 <= fast <= MAX_REQUEST_BYTES, None
    clean = None if walk.causes else walk.size
    if 0 <= fast <= MAX_REQUEST_BYTES:
        assert clean is not None, f"the fast path accepted what the walk refuses: {walk.causes[:1]}"
        assert fast == clean
    return 0 <= fast <= MAX_REQUEST_BYTES, clean


def shapes() -> list[tuple[str, Any, Any, decode.GoType]]:
    stored = stored_pod()
    create = copy.deepcopy(stored)
    del create["status"], create["metadata"]["uid"], create["metadata"]["resourceVersion"]
    pod = decode.KINDS["pods"]
    return [
        ("create", create, None, pod),
        ("status", status_write(stored), stored, pod),
        ("binding", binding(), None, decode.BINDING),
        ("replicaset", rs_manifest(), None, decode.KINDS["replicasets"]),
    ]


def test_the_fast_path_accepts_the_bodies_the_components_send():
    for name, body, stored, go_type in shapes():
        accepted, clean = outcome(body, go_type, stored)
        assert accepted and clean is not None, name


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_path_accepts_nothing_the_walk_refuses(data):
    _name, body, stored, go_type = data.draw(st.sampled_from(shapes()))
    path = data.draw(st.sampled_from(places(body)))
    new = data.draw(VALUES)
    if data.draw(st.booleans()):
        mutated = put(body, path, new)
    else:
        mutated = put(body, path, new, add=data.draw(st.sampled_from(["name", "extra", "uid", "conditions", "x"])))
    outcome(mutated, go_type, stored)


def test_the_corpus_manifests_get_the_same_answer():
    info_of = {info.kind: info for info in RESOURCES.values()}
    bodies = [*BASE_MANIFESTS.values(), *(case.input["manifest"] for case in load_cases("manifest"))]
    for body in bodies:
        info = info_of.get(body.get("kind")) if isinstance(body, dict) else None
        if info is not None:
            outcome(body, decode.type_of(info), None)

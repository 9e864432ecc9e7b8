"""The sorted key index behind paged lists: every page equals what a full list of the store,
filtered after the continue key and cut at the limit, gives (the way lists were answered before
the index), through creates, deletes, namespace deletion and a history that no longer reaches."""

from __future__ import annotations

import base64
import json
import random

import pytest

from controlplane.apiserver import Request
from controlplane.apiserver.resources import lookup
from controlplane.scenario import parse_scenario
from controlplane.session.keyindex import KeyIndex, key_of
from controlplane.simulation import Kube, Simulation
from dashboard.host import k8s_ops
from dashboard.host.hosted import HostedSimulation

# Names and namespaces whose keys sort differently from a naive (namespace, name) order would
# if "/" were not the separator: "a-b" < "a" < "a0" < "ab" as keys, since "-" and "." sort before "/".
NAMESPACES = ["default", "a", "a-b", "a0", "ab", "kube-system"]
NAMES = ["x", "x-1", "x.1", "x0", "web-1", "web-10", "web-2", "z"]


def _hosted() -> HostedSimulation:
    sim = Simulation(parse_scenario({"name": "index", "objects": []}), seed=3)
    for ns in NAMESPACES:
        if sim.server.peek("namespaces", None, ns) is None:
            sim.server.create("namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    return HostedSimulation("index", sim, name="index", source="test")


def _pod(ns: str, name: str, app: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def _reference(hosted: HostedSimulation, cmd: dict) -> tuple[list[str], str]:
    """The keys and the continue key a page had before the index: the whole list, the keys after
    the continue key, cut at the limit."""
    options = {k: cmd[k] for k in ("labelSelector", "fieldSelector") if cmd.get(k)}
    request = Request("test", "list", cmd["resource"], None, cmd.get("namespace"), None, None, options)
    items = hosted.sim.server.read(request)["items"]
    if cmd.get("continue"):
        start = json.loads(base64.urlsafe_b64decode(cmd["continue"] + "=" * (-len(cmd["continue"]) % 4)))["start"]
        items = [obj for obj in items if key_of(obj) > start]
    limit = cmd.get("limit")
    last = ""
    if isinstance(limit, int) and 0 < limit < len(items):
        items = items[:limit]
        last = key_of(items[-1])
    return [key_of(obj) for obj in items], last


def _pages(hosted: HostedSimulation, cmd: dict) -> list[str]:
    """Every page of a list through k8s_ops, each checked against the reference; the keys."""
    seen: list[str] = []
    cmd = dict(cmd)
    while True:
        answer = k8s_ops.READS["k8s_list"](hosted, cmd)
        assert answer["code"] == 200, answer
        body = json.loads(answer["body"])
        keys = [key_of(obj) for obj in body["items"]]
        expected, last = _reference(hosted, cmd)
        assert keys == expected
        token = body["metadata"].get("continue", "")
        if last:
            assert json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))["start"] == last
        else:
            assert not token
        seen += keys
        if not token:
            return seen
        cmd["continue"] = token


def _full(hosted: HostedSimulation, **query: str) -> list[str]:
    request = Request("test", "list", "pods", None, query.pop("namespace", None), None, None, query)
    return [key_of(obj) for obj in hosted.sim.server.read(request)["items"]]


def test_pages_equal_the_full_list_cut_at_the_limit_in_etcd_key_order() -> None:
    hosted = _hosted()
    rng = random.Random(7)
    for ns in NAMESPACES:
        for name in NAMES:
            hosted.sim.server.create("pods", ns, _pod(ns, name, rng.choice(["web", "db"])))
    every = _full(hosted)
    assert every == sorted(every) and len(every) == len(NAMESPACES) * len(NAMES)
    for limit in (1, 3, 7, 48, 500, None):
        assert _pages(hosted, {"resource": "pods", "limit": limit}) == every
        assert _pages(hosted, {"resource": "pods", "limit": limit, "namespace": "a"}) == _full(hosted, namespace="a")
        assert _pages(hosted, {"resource": "pods", "limit": limit, "labelSelector": "app=db"}) == _full(
            hosted, labelSelector="app=db"
        )
        assert _pages(
            hosted, {"resource": "pods", "limit": limit, "namespace": "a-b", "fieldSelector": "metadata.name!=x0"}
        ) == _full(hosted, namespace="a-b", fieldSelector="metadata.name!=x0")
    # Cluster-scoped: keys "/<name>".
    names = [key_of(obj) for obj in hosted.sim.server.objects("namespaces")]
    assert _pages(hosted, {"resource": "namespaces", "limit": 2}) == names


def test_the_index_follows_creates_and_deletes_without_rebuilding_and_continuations_stay_valid() -> None:
    hosted = _hosted()
    server = hosted.sim.server
    for i in range(40):
        server.create("pods", "default", _pod("default", f"p-{i:03d}", "web"))
    first = json.loads(k8s_ops.READS["k8s_list"](hosted, {"resource": "pods", "limit": 10})["body"])
    token = first["metadata"]["continue"]
    index = Kube.of(hosted).key_index(lookup("pods"))
    assert index.rebuilds == 1
    # Between two pages: pods before and after the continue key come and go, others change.
    server.delete("pods", "default", "p-020", grace_period_seconds=0)
    server.delete("pods", "default", "p-005", grace_period_seconds=0)
    server.create("pods", "default", _pod("default", "p-0155", "web"))
    server.create("pods", "default", _pod("default", "p-000a", "web"))
    server.patch("pods", "default", "p-030", {"metadata": {"labels": {"app": "db"}}})
    second = json.loads(
        k8s_ops.READS["k8s_list"](hosted, {"resource": "pods", "limit": 10, "continue": token})["body"]
    )
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]  # the token's
    assert [key_of(o) for o in second["items"]] == _reference(
        hosted, {"resource": "pods", "limit": 10, "continue": token}
    )[0]
    assert "default/p-0155" in [key_of(o) for o in second["items"]]
    assert index.rebuilds == 1 and index.keys == _full(hosted)  # followed the events
    assert _pages(hosted, {"resource": "pods", "limit": 9}) == _full(hosted)
    assert _pages(hosted, {"resource": "pods", "limit": 9, "labelSelector": "app=db"}) == ["default/p-030"]


def test_a_deleted_namespace_takes_its_keys_with_it() -> None:
    hosted = _hosted()
    server = hosted.sim.server
    for ns in ("a", "a-b"):
        for name in NAMES:
            server.create("pods", ns, _pod(ns, name, "web"))
    assert _pages(hosted, {"resource": "pods", "limit": 5}) == _full(hosted)
    server.delete("namespaces", None, "a")
    hosted.sim.run_until(hosted.sim.now + 60)
    assert not [k for k in _full(hosted) if k.startswith("a/")]
    assert _pages(hosted, {"resource": "pods", "limit": 5}) == _full(hosted)
    assert _pages(hosted, {"resource": "namespaces", "limit": 2}) == [
        key_of(obj) for obj in server.objects("namespaces")
    ]


def test_the_index_rebuilds_when_the_history_no_longer_holds_the_events() -> None:
    hosted = _hosted()
    server = hosted.sim.server
    for i in range(10):
        server.create("pods", "default", _pod("default", f"p-{i}", "web"))
    index = KeyIndex(server, lookup("pods"))
    index.refresh()
    assert index.keys == _full(hosted) and index.rebuilds == 1
    server._history = type(server._history)(5)  # a short history: what the index missed is gone
    for i in range(10, 20):
        server.create("pods", "default", _pod("default", f"p-{i}", "web"))
    index.refresh()
    assert index.keys == _full(hosted) and index.rebuilds == 2
    # A key set changed behind the index's back (counts disagree): rebuilt, never served stale.
    index.keys.append("default/zz-ghost")
    index.revision = server.revision - 1
    server.delete("pods", "default", "p-3", grace_period_seconds=0)
    index.refresh()
    assert index.keys == _full(hosted) and index.rebuilds == 3


@pytest.mark.parametrize(
    ("cmd", "code", "reason"),
    [
        ({"resource": "daemonsets", "limit": 5}, 404, "NotFound"),
        ({"resource": "pods", "limit": 5, "labelSelector": "app in (("}, 400, "BadRequest"),
        ({"resource": "pods", "limit": 5, "fieldSelector": "spec.nope=1"}, 400, "BadRequest"),
        ({"resource": "pods", "limit": 5, "continue": "not-a-token"}, 400, "BadRequest"),
    ],
)
def test_list_errors_are_the_same_status(cmd: dict, code: int, reason: str) -> None:
    answer = k8s_ops.READS["k8s_list"](_hosted(), cmd)
    body = json.loads(answer["body"])
    assert (answer["code"], body["kind"], body["reason"], body["code"]) == (code, "Status", reason, code)

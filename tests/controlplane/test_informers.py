"""Informers: indexer, RealFIFO, reflector and shared informer against the simulated API server."""

import pytest

from controlplane.apiserver import APIServer, Client
from controlplane.informers import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    RealFIFO,
    ResourceEventHandler,
    SharedInformer,
    meta_namespace_index_func,
    split_meta_namespace_key,
)
from controlplane.kernel import Kernel


def pod(name, ns="default", rv="1", labels=None, node=""):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "labels": labels or {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeName": node},
    }


def node_index(obj):
    return (obj["spec"].get("nodeName", ""),)


# -- Indexer -----------------------------------------------------------------------------------


def test_indexer_keeps_indexes_exact_across_updates_and_deletes():
    idx = Indexer({"node": node_index})
    idx.add(pod("a", node="n1"))
    idx.add(pod("b", node="n1"))
    idx.update(pod("a", node="n2", rv="2"))
    assert [p["metadata"]["name"] for p in idx.by_index("node", "n1")] == ["b"]
    assert [p["metadata"]["name"] for p in idx.by_index("node", "n2")] == ["a"]
    idx.delete(pod("b", node="n1"))
    assert idx.by_index("node", "n1") == []
    assert idx.list_index_values("node") == ["n2"]


def test_indexer_remembers_the_last_resource_version_it_saw():
    idx = Indexer()
    idx.add(pod("a", rv="5"))
    idx.delete(pod("a", rv="9"))
    assert idx.last_store_sync_resource_version() == "9"
    idx.replace([pod("b", rv="3")], "12")
    assert idx.last_store_sync_resource_version() == "12"
    assert idx.list_keys() == ["default/b"]


def test_split_key_rejects_more_than_one_slash():
    assert split_meta_namespace_key("ns/name") == ("ns", "name")
    assert split_meta_namespace_key("node-1") == ("", "node-1")
    with pytest.raises(ValueError):
        split_meta_namespace_key("a/b/c")


# -- RealFIFO ----------------------------------------------------------------------------------


class Recorder:
    def __init__(self):
        self.calls = []
        self.synced = False

    def has_synced(self):
        return self.synced

    def on_add(self, obj, initial):
        self.calls.append(("add", obj["metadata"]["name"], initial))

    def on_update(self, old, new):
        self.calls.append(
            ("update", new["metadata"]["name"], old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])
        )

    def on_delete(self, obj):
        if isinstance(obj, DeletedFinalStateUnknown):
            self.calls.append(("delete-tombstone", obj.key))
        else:
            self.calls.append(("delete", obj["metadata"]["name"]))

    def on_replaced(self):
        self.synced = True

    def on_resync(self, objs):
        self.calls.append(("resync", len(objs)))


def test_fifo_delivers_every_notification_in_order_without_coalescing():
    k = Kernel()
    idx = Indexer()
    rec = Recorder()
    fifo = RealFIFO(k, idx, rec)
    fifo.add(pod("a", rv="1"))
    fifo.update(pod("a", rv="2"))
    fifo.update(pod("a", rv="3"))
    assert len(fifo) == 3
    k.run()
    assert rec.calls == [("add", "a", False), ("update", "a", "1", "2"), ("update", "a", "2", "3")]
    assert idx.get("default", "a")["metadata"]["resourceVersion"] == "3"


def test_fifo_replace_announces_vanished_objects_as_tombstones_before_updates():
    k = Kernel()
    idx = Indexer()
    rec = Recorder()
    fifo = RealFIFO(k, idx, rec)
    fifo.replace([pod("a", rv="1"), pod("b", rv="1")], "1")
    k.run()
    rec.calls.clear()
    fifo.replace([pod("b", rv="4"), pod("c", rv="4")], "4")
    k.run()
    assert rec.calls == [("delete-tombstone", "default/a"), ("update", "b", "1", "4"), ("add", "c", False)]
    assert idx.list_keys() == ["default/b", "default/c"]


def test_fifo_first_replace_marks_adds_as_initial_list():
    k = Kernel()
    rec = Recorder()
    fifo = RealFIFO(k, Indexer(), rec)
    fifo.replace([pod("a")], "1")
    k.run()
    assert rec.calls == [("add", "a", True)]


def test_fifo_processing_is_a_separate_kernel_event():
    k = Kernel()
    idx = Indexer()
    fifo = RealFIFO(k, idx, Recorder())
    fifo.add(pod("a"))
    assert len(idx) == 0
    assert k.step()
    assert len(idx) == 1


# -- with the API server -----------------------------------------------------------------------


def world(history_limit=None):
    k = Kernel(seed=1)
    server = APIServer(k, history_limit=history_limit) if history_limit else APIServer(k)
    client = Client(server, k, "test-controller", qps=None, latency=0.0)
    return k, server, client


def make_informer(k, client, latency=0.0):
    informer = SharedInformer(k, client, "pods", name="test/pods", watch_latency=latency)
    events = []
    informer.add_event_handler(
        ResourceEventHandler(
            lambda o: events.append(("add", o["metadata"]["name"])),
            lambda o, n: events.append(("update", n["metadata"]["name"])),
            lambda o: events.append(
                ("delete", o.key if isinstance(o, DeletedFinalStateUnknown) else o["metadata"]["name"])
            ),
        )
    )
    return informer, events


def create_pod(server, name, **kw):
    body = pod(name, **kw)
    body["metadata"].pop("resourceVersion")
    return server.create("pods", "default", body)


def test_informer_lists_then_watches_and_reports_synced():
    k, server, client = world()
    create_pod(server, "a")
    informer, events = make_informer(k, client)
    informer.start()
    assert not informer.has_synced()
    k.advance(0.1)
    assert informer.has_synced()
    create_pod(server, "b")
    k.advance(0.1)
    assert events == [("add", "a"), ("add", "b")]
    assert informer.indexer.list_keys() == ["default/a", "default/b"]
    assert informer.lag() == 0


def test_watch_latency_keeps_the_cache_behind_the_store_until_delivery():
    k, server, client = world()
    informer, _ = make_informer(k, client, latency=2.0)
    informer.start()
    k.advance(0.1)
    create_pod(server, "a")
    k.advance(1.0)
    assert "default/a" not in informer.indexer
    assert informer.snapshot(server.revision)["pendingDeliveries"] == 1
    k.advance(1.5)
    assert "default/a" in informer.indexer


def test_paused_informer_goes_stale_and_catches_up_on_resume():
    k, server, client = world()
    informer, events = make_informer(k, client)
    informer.start()
    k.advance(0.1)
    informer.reflector.pause()
    create_pod(server, "a")
    k.advance(30)
    assert len(informer.indexer) == 0
    assert informer.lag() == 1
    informer.reflector.resume()
    k.advance(0.1)
    assert events == [("add", "a")]


def test_dropped_watch_relists_and_announces_deletes_missed_as_tombstones():
    k, server, client = world()
    create_pod(server, "a")
    informer, events = make_informer(k, client)
    informer.start()
    k.advance(0.1)
    informer.reflector.pause()
    server.delete("pods", "default", "a", grace_period_seconds=0)
    informer.reflector.drop()
    informer.reflector.resume()
    k.advance(40)  # back-off is at most 1.6 s for the first retry
    assert ("delete", "default/a") in events
    assert informer.reflector.relists == 1
    assert len(informer.indexer) == 0


def test_rewatch_from_a_resource_version_older_than_history_gets_410_and_relists():
    k, server, client = world(history_limit=3)
    informer, events = make_informer(k, client)
    informer.start()
    k.advance(0.1)
    informer.reflector.pause()
    for i in range(6):
        create_pod(server, f"p{i}")
    # The watch times out after 300-600 s; re-watching from the stale resourceVersion is refused
    # with 410 Gone because only 3 events of history are kept, so the reflector relists.
    k.advance(700)
    assert informer.reflector.relists == 1
    assert informer.indexer.list_keys() == [f"default/p{i}" for i in range(6)]
    assert [e for e in events if e[0] == "add"] == [("add", f"p{i}") for i in range(6)]


def test_lag_ignores_writes_to_other_resources():
    k, server, client = world()
    informer, _ = make_informer(k, client)
    informer.start()
    k.advance(0.1)
    server.create(
        "replicasets",
        "default",
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "r"},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
            },
        },
    )
    k.advance(0.1)
    assert informer.lag() == 0


def test_namespace_index_is_always_present():
    k, _server, client = world()
    informer, _ = make_informer(k, client)
    assert informer.indexer.by_index(NAMESPACE_INDEX, "default") == []
    assert meta_namespace_index_func(pod("x", ns="kube-system")) == ("kube-system",)


def test_periodic_resync_sends_unchanged_objects_as_updates():
    k, server, client = world()
    create_pod(server, "a")
    informer = SharedInformer(k, client, "pods", name="test/pods", resync_period=10.0)
    seen = []
    informer.add_event_handler(ResourceEventHandler(update_func=lambda o, n: seen.append(o is n)))
    informer.start()
    k.advance(10.5)
    assert seen == [True]


def test_the_pod_controller_index_hint_skips_only_unchanged_owners():
    from controlplane.replicaset.replica_set import POD_CONTROLLER_INDEX, pod_controller_index

    def owner(uid):
        return [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": uid, "controller": True}]

    refs = owner("u1")
    idx = Indexer({POD_CONTROLLER_INDEX: pod_controller_index})
    v1 = {"metadata": {"name": "p", "namespace": "default", "ownerReferences": refs, "resourceVersion": "1"}}
    idx.add(v1)
    v2 = {**v1, "metadata": {**v1["metadata"], "resourceVersion": "2"}}  # same list: hint says unchanged
    assert pod_controller_index.unchanged(v1, v2)
    idx.update(v2)
    assert idx.by_index(POD_CONTROLLER_INDEX, "default/ReplicaSet/web/u1") == [v2]
    v3 = {**v2, "metadata": {**v2["metadata"], "ownerReferences": owner("u2")}}  # new list: reindexed
    assert not pod_controller_index.unchanged(v2, v3)
    idx.update(v3)
    assert idx.by_index(POD_CONTROLLER_INDEX, "default/ReplicaSet/web/u1") == []
    assert idx.by_index(POD_CONTROLLER_INDEX, "default/ReplicaSet/web/u2") == [v3]
    v4 = {**v3, "metadata": {k: v for k, v in v3["metadata"].items() if k != "ownerReferences"}}  # orphaned
    idx.update(v4)
    assert idx.by_index(POD_CONTROLLER_INDEX, "default") == [v4]
    assert idx.by_index(POD_CONTROLLER_INDEX, "default/ReplicaSet/web/u2") == []


def test_namespaced_keys_are_remembered_interned_and_bounded(monkeypatch):
    from controlplane.informers import store

    monkeypatch.setattr(store, "_KEYS", {})
    monkeypatch.setattr(store, "KEY_MEMO_LIMIT", 2)
    first = store.namespaced_key("default", "web-1")
    assert first == "default/web-1" and store.namespaced_key("default", "web-1") is first
    assert store.meta_namespace_key({"metadata": {"name": "web-1", "namespace": "default"}}) is first
    assert store.meta_namespace_key({"metadata": {"name": "node-1"}}) == "node-1"
    store.namespaced_key("default", "web-2")
    store.namespaced_key("default", "web-3")  # the table starts over at the limit
    assert len(store._KEYS["default"]) <= 2
    assert store.namespaced_key("default", "web-1") == "default/web-1"

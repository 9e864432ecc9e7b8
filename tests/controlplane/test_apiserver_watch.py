"""Watches: start rules, replay, 410, filtered ADDED/DELETED, latency, batching, pause/resume/drop."""

import pytest

from controlplane.apiserver import ApiError
from tests.controlplane.test_apiserver import make_server, pod_manifest


def open_watch(server, resource="pods", **kwargs):
    batches = []
    closed = []
    watch = server.watch(resource, **kwargs)
    watch.start(batches.append, closed.append)
    return watch, batches, closed


def flat(batches):
    return [(t, o["metadata"]["name"]) for batch in batches for t, o in batch]


def test_a_watch_without_resource_version_starts_with_every_object_as_added():
    kernel, server = make_server()
    server.create("pods", "default", pod_manifest(name="b"))
    server.create("pods", "default", pod_manifest(name="a"))
    _, batches, _ = open_watch(server)
    server.create("pods", "default", pod_manifest(name="c"))
    kernel.run()
    assert flat(batches) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]


def test_a_watch_from_zero_is_the_same_as_no_resource_version():
    kernel, server = make_server()
    server.create("pods", "default", pod_manifest(name="a"))
    _, batches, _ = open_watch(server, resource_version="0")
    kernel.run()
    assert flat(batches) == [("ADDED", "a")]


def test_a_watch_from_a_resource_version_replays_the_later_events():
    kernel, server = make_server()
    server.create("pods", "default", pod_manifest(name="a"))
    listed = server.list("pods")
    server.create("pods", "default", pod_manifest(name="b"))
    server.delete("pods", "default", "a")
    _, batches, _ = open_watch(server, resource_version=listed["metadata"]["resourceVersion"])
    kernel.run()
    assert flat(batches) == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_a_resource_version_older_than_the_history_is_410_expired():
    _, server = make_server(history_limit=3)
    for i in range(5):
        server.create("pods", "default", pod_manifest(name=f"p{i}"))
    assert server.revision == 7 and server.history_oldest_rv() == 5
    open_watch(server, resource_version="4")  # oldest retained - 1 still works
    with pytest.raises(ApiError) as err:
        server.watch("pods", resource_version="3")
    assert (err.value.code, err.value.reason) == (410, "Expired")
    assert err.value.message == "too old resource version: 3 (4)"
    assert server.requests[-1]["code"] == 410


def test_each_resource_keeps_its_own_history_so_events_never_push_pods_out():
    # kube-apiserver keeps one watch cache per resource (and none for Events): a burst of
    # Events does not shorten how far back a watch of pods can start.
    kernel, server = make_server(history_limit=3)
    server.create("pods", "default", pod_manifest(name="a"))
    since = server.revision - 1
    for i in range(5):
        server.create(
            "events",
            "default",
            {"metadata": {"name": f"e{i}"}, "involvedObject": {"kind": "Pod", "name": "a"}, "reason": "Started"},
        )
    _, batches, _ = open_watch(server, resource_version=str(since))
    kernel.run_until(1.0)
    assert flat(batches) == [("ADDED", "a")]
    with pytest.raises(ApiError) as err:  # the Events' own history holds their last 3 only
        server.watch("events", resource_version=str(since))
    assert err.value.message == f"too old resource version: {since} ({server.revision - 3})"
    # The whole stream (every resource) is complete only after the oldest event any dropped.
    assert server.history_oldest_rv() == server.revision - 2
    with pytest.raises(ApiError):
        server.events_after(since)
    held = server.events_after(server.revision - 3)
    assert [obj["metadata"]["name"] for _, _, _, obj, _ in held] == ["e2", "e3", "e4"]


def test_a_resource_version_not_reached_yet_is_504_too_large_resource_version():
    _, server = make_server()
    server.create("pods", "default", pod_manifest(name="a"))
    open_watch(server, resource_version=str(server.revision))  # the current one is fine
    with pytest.raises(ApiError) as err:
        server.watch("pods", resource_version="9")
    assert (err.value.code, err.value.reason) == (504, "Timeout")
    assert err.value.message == f"Timeout: Too large resource version: 9, current: {server.revision}"
    assert err.value.status()["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }
    assert server.requests[-1]["code"] == 504


def test_deleted_carries_the_last_state_with_a_new_resource_version():
    kernel, server = make_server()
    created = server.create("pods", "default", pod_manifest(name="a", node="n1", finalizers=["x.io/y"]))
    server.delete("pods", "default", "a", grace_period_seconds=0)
    _, batches, _ = open_watch(server, resource_version=created["metadata"]["resourceVersion"])
    server.patch("pods", "default", "a", {"metadata": {"finalizers": None}})
    kernel.run()
    events = [e for batch in batches for e in batch]
    assert [t for t, _ in events] == ["MODIFIED", "DELETED"]
    last = events[-1][1]
    assert last["metadata"]["resourceVersion"] == str(server.revision)
    assert last["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"


def test_a_filtered_watch_sees_objects_entering_and_leaving_the_selection():
    kernel, server = make_server()
    server.create("pods", "default", pod_manifest(name="a", labels={"app": "db"}))
    _, batches, _ = open_watch(server, label_selector="app=web")
    server.patch("pods", "default", "a", {"metadata": {"labels": {"app": "web"}}})
    server.patch("pods", "default", "a", {"metadata": {"labels": {"tier": "x"}}})
    last = server.patch("pods", "default", "a", {"metadata": {"labels": {"app": "db"}}})
    kernel.run()
    events = [e for batch in batches for e in batch]
    assert [(t, o["metadata"]["labels"]["app"]) for t, o in events] == [
        ("ADDED", "web"),
        ("MODIFIED", "web"),
        ("DELETED", "web"),
    ]
    # upstream cacheWatcher: the previous state, stamped with the new resourceVersion.
    assert events[-1][1]["metadata"]["resourceVersion"] == last["metadata"]["resourceVersion"]


def test_a_field_selected_watch_sees_a_pod_bound_to_its_node_as_added():
    kernel, server = make_server()
    server.create("pods", "default", pod_manifest(name="a"))
    _, batches, _ = open_watch(server, field_selector="spec.nodeName=node-1")
    server.create("pods", "default", {"metadata": {"name": "a"}, "target": {"name": "node-1"}}, subresource="binding")
    kernel.run()
    assert flat(batches) == [("ADDED", "a")]


def test_a_namespaced_watch_sees_only_its_namespace():
    kernel, server = make_server()
    server.create("namespaces", None, {"metadata": {"name": "other"}})
    _, batches, _ = open_watch(server, namespace="default")
    server.create("pods", "other", pod_manifest(name="x", namespace="other"))
    server.create("pods", "default", pod_manifest(name="y"))
    kernel.run()
    assert flat(batches) == [("ADDED", "y")]


def test_events_are_delivered_after_the_latency():
    kernel, server = make_server()
    _, batches, _ = open_watch(server, latency=0.05)
    server.create("pods", "default", pod_manifest(name="a"))
    kernel.advance(0.049)
    assert batches == []
    kernel.advance(0.001)
    assert flat(batches) == [("ADDED", "a")]


def test_events_due_at_one_instant_arrive_in_one_batch():
    kernel, server = make_server()
    _, batches, _ = open_watch(server, latency=0.05)
    for name in "abc":
        server.create("pods", "default", pod_manifest(name=name))
    kernel.advance(0.01)
    server.create("pods", "default", pod_manifest(name="d"))
    pending = kernel.pending()
    kernel.run()
    assert [len(batch) for batch in batches] == [3, 1]
    assert pending == 2  # one timer per delivery instant


def test_events_never_overtake_each_other_when_the_latency_drops():
    kernel, server = make_server()
    watch, batches, _ = open_watch(server, latency=1.0)
    server.create("pods", "default", pod_manifest(name="a"))
    watch.latency = 0.0
    server.create("pods", "default", pod_manifest(name="b"))
    kernel.run()
    assert flat(batches) == [("ADDED", "a"), ("ADDED", "b")]


def test_a_paused_watch_accumulates_and_resume_delivers_everything_at_once():
    kernel, server = make_server()
    watch, batches, _ = open_watch(server, latency=0.05)
    watch.pause()
    for name in "ab":
        server.create("pods", "default", pod_manifest(name=name))
    kernel.advance(10)
    assert batches == [] and watch.pending() == 2 and watch.paused
    watch.resume()
    kernel.advance(0)
    assert flat(batches) == [("ADDED", "a"), ("ADDED", "b")]
    assert watch.last_delivered_rv == server.revision


def test_a_dropped_watch_loses_its_pending_events_and_tells_the_consumer():
    kernel, server = make_server()
    watch, batches, closed = open_watch(server, latency=0.05)
    server.create("pods", "default", pod_manifest(name="a"))
    watch.drop()
    kernel.run()
    assert batches == [] and closed == ["dropped"]
    assert server.watches_for("pods") == []


def test_a_stopped_watch_delivers_nothing_more_and_does_not_call_back():
    kernel, server = make_server()
    watch, batches, closed = open_watch(server)
    watch.stop()
    server.create("pods", "default", pod_manifest(name="a"))
    kernel.run()
    assert batches == [] and closed == []


def test_nothing_is_delivered_before_start():
    kernel, server = make_server()
    watch = server.watch("pods", latency=0.05)
    server.create("pods", "default", pod_manifest(name="a"))
    kernel.run()
    assert watch.pending() == 1
    batches = []
    watch.start(batches.append)
    kernel.run()
    assert flat(batches) == [("ADDED", "a")]


def test_watches_for_lists_the_open_watches():
    _, server = make_server()
    first, _, _ = open_watch(server)
    second, _, _ = open_watch(server, namespace="default")
    assert server.watches_for("pods") == [first, second]
    assert server.requests[-1]["verb"] == "watch" and server.requests[-1]["code"] == 200

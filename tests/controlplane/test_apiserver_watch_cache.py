"""The watch cache window (watch_cache.py): which resourceVersions a watch of a resource may start
from, as kube-apiserver's watchCache sizes itself (grow while fresh, shrink when stale) and answers
`too old resource version` once it has dropped events."""

import pytest

from controlplane.apiserver import ApiError
from controlplane.apiserver.watch_cache import (
    EVENT_FRESH_DURATION,
    LOWER_BOUND_CAPACITY,
    UPPER_BOUND_CAPACITY,
    WatchCache,
)
from tests.controlplane.test_apiserver import make_server, pod_manifest


def fill(cache, first_rv, count, now):
    for rv in range(first_rv, first_rv + count):
        cache.update(rv, now)
    return first_rv + count


def test_a_cache_that_never_dropped_an_event_serves_every_version():
    cache = WatchCache()
    fill(cache, 1, LOWER_BOUND_CAPACITY, now=0.0)
    assert (len(cache), cache.capacity, cache.too_old_below()) == (100, 100, 0)


def test_a_full_cache_of_fresh_events_doubles_instead_of_dropping():
    cache = WatchCache()
    rv = fill(cache, 1, 450, now=0.0)  # 100 -> 200 -> 400 -> 800
    assert (len(cache), cache.capacity, cache.too_old_below()) == (450, 800, 0)
    fill(cache, rv, 3 * UPPER_BOUND_CAPACITY, now=1.0)
    assert cache.capacity == UPPER_BOUND_CAPACITY  # the upper bound holds even for fresh events
    assert len(cache) == UPPER_BOUND_CAPACITY and cache.too_old_below() > 0


def test_a_full_cache_whose_oldest_event_is_stale_drops_it():
    cache = WatchCache()
    rv = fill(cache, 1, 100, now=0.0)
    # The newest quarter is as old as the rest: stale too, but the capacity is at its lower bound.
    cache.update(rv, EVENT_FRESH_DURATION + 1)
    assert (len(cache), cache.capacity, cache.too_old_below()) == (100, 100, 1)


def test_a_full_cache_whose_newest_quarter_is_stale_halves():
    cache = WatchCache()
    rv = fill(cache, 1, 200, now=0.0)  # capacity 200, full
    assert cache.capacity == 200
    cache.update(rv, EVENT_FRESH_DURATION + 1)  # rv 201: shrink to the newest 100, drop one more
    assert (len(cache), cache.capacity, cache.too_old_below()) == (100, 100, 101)


def test_a_stale_oldest_with_a_fresh_newest_quarter_neither_grows_nor_shrinks():
    cache = WatchCache()
    rv = fill(cache, 1, 80, now=0.0)
    rv = fill(cache, rv, 20, now=70.0)  # the newest quarter (25 events) straddles both times
    rv = fill(cache, rv, 5, now=EVENT_FRESH_DURATION + 1)
    assert (len(cache), cache.capacity, cache.too_old_below()) == (100, 100, 5)


def test_a_watch_from_before_the_window_of_its_resource_is_410_too_old():
    kernel, server = make_server()
    first = server.revision + 1  # the server's own writes (the default namespace) came first
    for i in range(LOWER_BOUND_CAPACITY):
        server.create("pods", "default", pod_manifest(name=f"p{i}"))
    server.create("replicationcontrollers", "default", rc())
    kernel.advance(EVENT_FRESH_DURATION + 1)
    server.create("pods", "default", pod_manifest(name="late-1"))  # drops the first pod's event
    server.create("pods", "default", pod_manifest(name="late-2"))  # and the second's
    floor = first + 1  # the oldest deliverable event - 1
    assert server.too_old_below("pods") == floor
    server.watch("pods", resource_version=str(floor))  # still served
    with pytest.raises(ApiError) as err:
        server.watch("pods", resource_version="1")
    assert (err.value.code, err.value.reason) == (410, "Expired")
    assert err.value.message == f"too old resource version: 1 ({floor})"
    with pytest.raises(ApiError):
        server.events_after(1, "pods")  # the Kubernetes API's watches start from here
    assert len(server.events_after(1)) == server.revision - 1  # the history itself keeps them
    # Each resource has its own cache: the ReplicationControllers' dropped nothing.
    assert server.too_old_below("replicationcontrollers") == 0
    server.watch("replicationcontrollers", resource_version="1")


def test_the_window_is_the_same_on_every_run():
    def window():
        kernel, server = make_server(seed=4)
        first = server.revision + 1
        for i in range(250):
            kernel.advance(1.0)
            server.create("pods", "default", pod_manifest(name=f"p{i}"))
        # One event a second: the oldest of a full 100 is always stale (100 s) and the newest
        # quarter fresh (25 s), so the cache keeps the last 100 events of the 250.
        return server.too_old_below("pods") - first

    assert window() == window() == 149


def rc():
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "rc", "namespace": "default"},
        "spec": {
            "replicas": 0,
            "selector": {"app": "rc"},
            "template": {"metadata": {"labels": {"app": "rc"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }

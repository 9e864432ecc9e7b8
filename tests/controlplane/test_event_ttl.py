"""Events are forgotten after kube-apiserver's --event-ttl (config.eventTTL), as etcd forgets them:
each Event write is attached to a lease (storage/etcd3/lease_manager.go: `ttl` plus a reuse window
of min(5 % of ttl, 60 s), at most 1,000 objects per lease), and when the lease expires etcd
deletes the keys still attached to it; watches see DELETED."""

import math

import pytest

from controlplane.apiserver import APIServer
from controlplane.apiserver.server import LEASE_MAX_OBJECT_COUNT
from controlplane.kernel import Kernel
from controlplane.scenario import ScenarioError, check_config, parse_scenario
from controlplane.simulation import Simulation


def event(name, count=1):
    return {
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-0"},
        "reason": "Started",
        "message": "Started container web",
        "count": count,
        "type": "Normal",
    }


def names(server):
    return sorted(e["metadata"]["name"] for e in server.objects("events"))


def server_with_ttl(ttl):
    kernel = Kernel(seed=1)
    server = APIServer(kernel)
    server.event_ttl = ttl
    return kernel, server


def test_an_event_is_deleted_when_its_lease_expires_and_a_watch_sees_it_go():
    # ttl 100: the lease is granted for 100 + min(5, 60) = 105 s.
    kernel, server = server_with_ttl(100)
    watch = server.watch("events")
    seen = []
    watch.start(seen.extend)
    server.create("events", "default", event("a"))
    kernel.run_until(104.9)
    assert names(server) == ["a"]
    kernel.run_until(105.0)
    assert names(server) == []
    assert [(kind, obj["metadata"]["name"]) for kind, obj in seen] == [("ADDED", "a"), ("DELETED", "a")]
    deleted = seen[-1][1]
    assert deleted["metadata"]["resourceVersion"] == str(server.revision)  # a delete is a commit


def test_writes_within_the_reuse_window_share_a_lease_and_later_ones_get_their_own():
    kernel, server = server_with_ttl(100)
    server.create("events", "default", event("a"))
    kernel.run_until(4.0)
    server.create("events", "default", event("b"))  # now + ttl < 105: the first lease is reused
    kernel.run_until(5.0)
    server.create("events", "default", event("c"))  # now + ttl == 105: not `valid`, a new lease
    kernel.run_until(105.0)
    assert names(server) == ["c"]
    kernel.run_until(110.0)
    assert names(server) == []


def test_a_patch_moves_the_event_to_a_newer_lease():
    kernel, server = server_with_ttl(100)
    server.create("events", "default", event("a"))
    kernel.run_until(50.0)
    server.patch("events", "default", "a", {"count": 2}, patch_type="strategic")
    kernel.run_until(105.0)
    assert names(server) == ["a"]  # its current version is under the lease granted at t=50
    kernel.run_until(155.0)
    assert names(server) == []


def test_a_lease_holds_at_most_a_thousand_objects():
    kernel, server = server_with_ttl(100)
    for i in range(LEASE_MAX_OBJECT_COUNT + 1):
        server.create("events", "default", event(f"e{i:04d}"))
        if i == LEASE_MAX_OBJECT_COUNT - 1:
            kernel.run_until(1.0)  # the 1,001st write asks at t=1: a new lease, expiring at 106
    kernel.run_until(105.0)
    assert names(server) == [f"e{LEASE_MAX_OBJECT_COUNT:04d}"]
    kernel.run_until(106.0)
    assert names(server) == []


def test_expired_events_go_in_key_order_one_revision_each():
    kernel, server = server_with_ttl(100)
    for name in ("c", "a", "b"):
        server.create("events", "default", event(name))  # one lease
    before = server.revision
    kernel.run_until(105.0)
    deleted = [(rv, obj["metadata"]["name"]) for rv, kind, _, obj, _ in server.events_since(before)]
    assert deleted == [(before + 1, "a"), (before + 2, "b"), (before + 3, "c")]


def test_other_resources_have_no_lease():
    kernel, server = server_with_ttl(10)
    server.create("namespaces", "", {"metadata": {"name": "team"}})
    kernel.run_until(1000.0)
    assert server.peek("namespaces", None, "team") is not None


def test_a_simulation_forgets_its_events_after_config_event_ttl():
    scenario = parse_scenario(
        {
            "config": {"nodes": 1, "eventTTL": 30},
            "objects": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "web-0", "namespace": "default"},
                    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
                }
            ],
            "until": 100,
        }
    )
    sim = Simulation(scenario)
    sim.start()
    sim.advance(10.0)
    assert sim.server.count("events") > 0  # Scheduled, Pulling, Pulled, Created, Started
    sim.advance(30.0)  # the last of them was written before t=10: gone by 10 + 30 + 1
    assert sim.server.count("events") == 0
    assert sim.server.count("pods") == 1
    out = sim.apply({"config": {"eventTTL": 7200}})
    assert out["config"] == {"eventTTL": 7200.0}
    assert sim.server.event_ttl == 7200


@pytest.mark.parametrize(
    "value",
    [0, 0.5, -1, math.inf, math.nan, 10**12, "1h", True, None],
)
def test_event_ttl_is_a_bounded_number_of_seconds(value):
    with pytest.raises(ScenarioError) as err:
        check_config({"eventTTL": value})
    assert str(err.value).startswith("config.eventTTL")


def test_the_default_is_kube_apiservers_hour():
    assert check_config({})["eventTTL"] == 3600.0

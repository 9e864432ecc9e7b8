"""The Event recorder's correlator (client-go tools/record events_cache.go, spec §1 and §15)."""

from controlplane.apiserver import APIServer, Client
from controlplane.events import EventRecorder
from controlplane.kernel import Kernel

RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default", "uid": "u1"}}


def world():
    k = Kernel()
    server = APIServer(k)
    recorder = EventRecorder(
        k, Client(server, k, "replicaset-controller", qps=None, latency=0.0), "replicaset-controller"
    )
    return k, server, recorder


def settle(k):
    """Run until every post is answered (the client has no latency). Not `k.run()`: each Event's
    lease (kube-apiserver --event-ttl) keeps a timer until it expires."""
    k.run_until(k.now + 10)


def events(server):
    return sorted(server.objects("events"), key=lambda e: e["metadata"]["name"])


def test_an_event_is_posted_with_its_source_and_involved_object():
    k, server, rec = world()
    rec.event(RS, "Normal", "SuccessfulCreate", "Created pod: web-abcde")
    settle(k)
    (event,) = events(server)
    assert event["source"] == {"component": "replicaset-controller"}
    assert event["involvedObject"]["kind"] == "ReplicaSet"
    assert (event["reason"], event["message"], event["count"], event["type"]) == (
        "SuccessfulCreate",
        "Created pod: web-abcde",
        1,
        "Normal",
    )


def test_identical_events_become_a_count_patch():
    k, server, rec = world()
    for _ in range(3):
        rec.event(RS, "Warning", "FailedCreate", "Error creating: quota")
    settle(k)
    (event,) = events(server)
    assert event["count"] == 3
    verbs = [r["verb"] for r in server.requests if r["resource"] == "events"]
    assert verbs == ["create", "patch", "patch"]


def test_the_tenth_different_message_is_combined_into_one_event():
    k, server, rec = world()
    for i in range(12):
        rec.event(RS, "Normal", "SuccessfulCreate", f"Created pod: web-{i}")
        k.advance(100)  # a rolling window: 100 s apart is never a 600 s gap
    combined = [e for e in events(server) if e["message"].startswith("(combined from similar events): ")]
    assert len(events(server)) == 10
    assert len(combined) == 1
    assert combined[0]["count"] == 3
    assert combined[0]["message"] == "(combined from similar events): Created pod: web-11"


def test_a_quiet_gap_of_more_than_600_s_restarts_aggregation():
    k, server, rec = world()
    for i in range(9):
        rec.event(RS, "Normal", "SuccessfulCreate", f"Created pod: web-{i}")
    k.advance(601)
    rec.event(RS, "Normal", "SuccessfulCreate", "Created pod: web-9")
    settle(k)
    assert not [e for e in events(server) if e["message"].startswith("(combined")]


def test_spam_filter_drops_after_25_but_the_count_keeps_every_occurrence():
    k, server, rec = world()
    for _ in range(30):
        rec.event(RS, "Warning", "FailedCreate", "Error creating: quota")
    settle(k)
    assert events(server)[0]["count"] == 25
    assert rec.dropped == 5
    k.advance(301)  # one token refilled
    rec.event(RS, "Warning", "FailedCreate", "Error creating: quota")
    settle(k)
    assert events(server)[0]["count"] == 31


def test_a_patch_of_a_missing_event_falls_back_to_a_create():
    k, server, rec = world()
    rec.event(RS, "Warning", "FailedCreate", "Error creating: quota")
    settle(k)
    name = events(server)[0]["metadata"]["name"]
    server.delete("events", "default", name)
    rec.event(RS, "Warning", "FailedCreate", "Error creating: quota")
    settle(k)
    (event,) = events(server)
    assert event["count"] == 2
    codes = [(r["verb"], r["code"]) for r in server.requests if r["resource"] == "events" and r["client"] != "user"]
    assert codes == [("create", 201), ("patch", 404), ("create", 201)]


def test_a_stopped_recorder_posts_nothing_more():
    k, server, rec = world()
    rec.event(RS, "Normal", "SuccessfulCreate", "Created pod: a")
    rec.stop()
    rec.event(RS, "Normal", "SuccessfulCreate", "Created pod: b")
    settle(k)
    assert events(server) == []


def test_the_correlator_forgets_the_least_recently_used_of_4096_keys_as_upstream():
    # events_cache.go keeps its observations in lru.New(4096): an identical event whose record
    # was pushed out is created again instead of patched.
    from controlplane.events import MAX_LRU_CACHE_ENTRIES

    k, server, rec = world()
    rec.event(RS, "Warning", "FailedCreate", "Error creating: quota")
    for i in range(MAX_LRU_CACHE_ENTRIES):
        other = {**RS, "metadata": {**RS["metadata"], "name": f"rs-{i}", "uid": f"u-{i}"}}
        rec.event(other, "Normal", "SuccessfulCreate", "Created pod: x")
    rec.event(RS, "Warning", "FailedCreate", "Error creating: quota")
    settle(k)
    mine = [e for e in server.objects("events") if e["involvedObject"]["name"] == "web"]
    assert sorted(e["count"] for e in mine) == [1, 1]
    assert len(rec._log) == MAX_LRU_CACHE_ENTRIES


# -- Event volume of the node components (issue #18 §5) ----------------------------------------------
def test_event_volume_grows_by_five_per_pod_and_the_controllers_aggregate():
    from controlplane.scenario import Scenario, default_config
    from controlplane.simulation import Simulation
    from tests.controlplane.factories import rs_manifest

    config = default_config()
    config.update({"nodes": 2})
    sim = Simulation(Scenario(name="volume", seed=1, config=config, objects=[rs_manifest(replicas=200)]))
    sim.start()
    sim.run_until(60)
    items = sim.server.list("events", "default")["items"]
    by_source: dict[str, list[dict]] = {}
    for event in items:
        by_source.setdefault(event["source"]["component"], []).append(event)
    # The scheduler: one Scheduled per pod; each kubelet: Pulling, Pulled, Created, Started.
    assert len(by_source["default-scheduler"]) == 200
    assert len(by_source["kubelet"]) == 4 * 200
    assert {e["reason"] for e in by_source["kubelet"]} == {"Pulling", "Pulled", "Created", "Started"}
    # The controller's 200 SuccessfulCreate collapse after nine different messages into one
    # "(combined from similar events)" Event, and the spam filter lets 25 posts through for the
    # ReplicaSet (burst 25): ten Events with 25 occurrences between them.
    created = by_source["replicaset-controller"]
    assert len(created) == 10 and sum(e["count"] for e in created) == 25
    assert any(e["message"].startswith("(combined from similar events): Created pod: web-") for e in created)


def test_a_long_crash_loop_stays_a_handful_of_events_with_counts():
    from tests.controlplane.factories import bare_pod, node_world

    kernel, server, sim = node_world(nodes=1)
    server.event_ttl = 10**6  # 40 rounds of 301 s outlast the default hour: keep every Event
    server.create("pods", "default", bare_pod("web-0", containers=[{"name": "web", "image": "nginx:1.27"}]))
    kernel.advance(3)
    start = len(server.requests)
    for _ in range(40):
        sim.kubelets["node-1"].crash(server.get("pods", "default", "web-0"))
        kernel.advance(301)
    kubelet = [e for e in server.list("events", "default")["items"] if e["source"]["component"] == "kubelet"]
    assert sorted((e["reason"], e["message"][:20]) for e in kubelet) == [
        ("BackOff", "Back-off restarting "),
        ("Created", "Created container: w"),
        ("Pulled", 'Container image "ngi'),
        ("Pulled", "Successfully pulled "),
        ("Pulling", 'Pulling image "nginx'),
        ("Started", "Started container we"),
    ]
    # 4 occurrences a restart, but per pod a burst of 25 posts then one per 300 s (the spam
    # filter): the later restarts are patches of the same six Events, most of them dropped; the
    # one that gets the token each cycle (the Pulled before the restart) carries the full count.
    posts = [r for r in server.requests[start:] if r["resource"] == "events"]
    assert len(posts) <= 25 + kernel.now // 300 + 1
    present = next(e for e in kubelet if e["message"].startswith("Container image"))
    assert present["count"] == 40


def test_each_occurrence_is_traced_with_the_event_it_counts_into():
    """The trace's `event` record says what the correlator made of the occurrence: the Event it
    counts into, that Event's count now, and whether it was posted (create, patch) or dropped."""
    from controlplane.trace import Trace

    k = Kernel()
    server = APIServer(k)
    trace = Trace(k)
    seen = []
    trace.subscribe(seen.append)
    rec = EventRecorder(
        k, Client(server, k, "replicaset-controller", qps=None, latency=0.0), "replicaset-controller", trace=trace
    )
    for _ in range(27):
        rec.event(RS, "Warning", "FailedCreate", "Error creating: quota")
    rec.event(RS, "Normal", "SuccessfulCreate", "Created pod: web-abcde")
    settle(k)
    occurrences = [r for r in seen if r["kind"] == "event"]
    assert [r["count"] for r in occurrences] == [*range(1, 28), 1]
    assert [r["sent"] for r in occurrences] == ["create"] + ["patch"] * 24 + ["dropped"] * 2 + ["dropped"]
    stored = {e["reason"]: e for e in server.objects("events")}
    assert {r["name"] for r in occurrences[:27]} == {stored["FailedCreate"]["metadata"]["name"]}
    assert occurrences[-1]["name"] != occurrences[0]["name"] and "SuccessfulCreate" not in stored


def test_the_lru_keeps_the_most_recently_used_keys_as_an_ordered_dict_would():
    import random
    from collections import OrderedDict

    from controlplane.events import _LRU

    rng = random.Random(29)
    lru: _LRU[int, int] = _LRU(limit=50)
    reference: OrderedDict[int, int] = OrderedDict()
    for step in range(5_000):
        key = rng.randrange(120)
        if rng.random() < 0.5:
            got = lru.get(key)
            assert got == reference.get(key)
            if key in reference:
                reference.move_to_end(key)
        else:
            lru.add(key, step)
            reference[key] = step
            reference.move_to_end(key)
            if len(reference) > 50:
                reference.popitem(last=False)
        assert list(lru._entries.items()) == list(reference.items())

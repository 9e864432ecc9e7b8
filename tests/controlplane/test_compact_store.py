"""The store keeps Events as compact records (server._pack) and gives readers dicts: equal to
what was written, keys in the same order, a new dict at every read."""

import json
import pickle

from controlplane.apiserver import APIServer
from controlplane.apiserver.server import COMPACT_INTERNED, _pack, _unpack
from controlplane.kernel import Kernel


def event(name, *, message="Started container web", pod="web-0"):
    return {
        "metadata": {"name": name, "namespace": "default", "labels": {"b": "2", "a": "1"}},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod, "fieldPath": "spec.containers{web}"},
        "reason": "Started",
        "message": message,
        "source": {"component": "kubelet", "host": "node-1"},
        "count": 1,
        "type": "Normal",
    }


def test_a_record_unpacks_to_an_equal_dict_with_the_same_key_order():
    obj = {"z": 1, "a": {"y": [1, {"q": None}], "b": {}}, "m": "text", "n": 2.5, "t": True}
    record = _pack(obj, {}, {})
    assert record is not None
    back = _unpack(record)
    assert json.dumps(back) == json.dumps(obj)
    assert back is not obj and back["a"] is not obj["a"]


def test_an_object_with_a_tuple_inside_is_not_packed():
    assert _pack({"a": {"b": (1, 2)}}, {}, {}) is None
    assert _pack({"a": (1,)}, {}, {}) is None


def test_the_intern_tables_share_equal_parts_and_stay_bounded():
    shapes: dict = {}
    parts: dict = {}
    one = _pack(event("a"), shapes, parts)
    two = _pack(event("b"), shapes, parts)
    assert one is not None and two is not None
    assert one[0] is two[0]  # the key order
    assert one[5] is two[5]  # the source record
    assert one[1] is not two[1]  # metadata: every Event's own, never interned
    for index in range(3 * COMPACT_INTERNED):
        _pack(event(f"e{index}", pod=f"pod-{index}"), shapes, parts)
    assert len(parts) <= COMPACT_INTERNED and len(shapes) <= COMPACT_INTERNED


def test_the_store_keeps_events_as_records_and_reads_give_new_equal_dicts():
    server = APIServer(Kernel(seed=1))
    created = server.create("events", "default", event("a"))
    stored = server._store["events"]["default"]["a"]
    assert type(stored) is tuple
    got = server.get("events", "default", "a")
    assert json.dumps(got) == json.dumps(created)
    # A reader's dict is its own: changing it changes nothing stored.
    got["message"] = "changed"
    got["metadata"]["labels"]["a"] = "x"
    assert server.peek("events", "default", "a") == created
    assert [e["metadata"]["name"] for e in server.objects("events")] == ["a"]
    listed = server.list("events", "default")["items"]
    assert json.dumps(listed) == json.dumps([created])
    # The history holds the record too, and its readers get dicts.
    (_, kind, resource, obj, old) = server.history()[-1]
    assert (kind, resource, old) == ("ADDED", "events", None)
    assert json.dumps(obj) == json.dumps(created)


def test_a_patched_event_keeps_its_old_version_in_the_history_and_a_pickle_round_trips():
    server = APIServer(Kernel(seed=1))
    first = server.create("events", "default", event("a"))
    second = server.patch("events", "default", "a", {"count": 2}, patch_type="merge")
    assert second["count"] == 2
    (_, kind, _, obj, old) = server.history()[-1]
    assert kind == "MODIFIED"
    assert json.dumps(old) == json.dumps(first) and json.dumps(obj) == json.dumps(second)
    copy = pickle.loads(pickle.dumps(server))
    assert copy.digest() == server.digest()
    assert json.dumps(copy.get("events", "default", "a")) == json.dumps(second)


def test_pods_are_stored_as_dicts():
    server = APIServer(Kernel(seed=1))
    server.create("pods", "default", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert type(server._store["pods"]["default"]["p"]) is dict

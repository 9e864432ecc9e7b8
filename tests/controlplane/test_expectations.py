"""Expectations (spec §10): counts, fulfilment, the 5-minute expiry, UID tracking, the trace."""

import pytest

from controlplane.expectations import (
    EXPECTATIONS_TIMEOUT,
    ControllerExpectations,
    UIDTrackingControllerExpectations,
)
from controlplane.kernel import Kernel
from controlplane.trace import Trace

KEY = "default/web"


@pytest.fixture(params=[ControllerExpectations, UIDTrackingControllerExpectations])
def make(request):
    """Builds either implementation: the shared contract runs against both."""

    def build(clock, **kwargs):
        return request.param(clock, **kwargs)

    return build


def traced(kernel, make):
    trace = Trace(kernel)
    records = []
    trace.subscribe(records.append)
    return make(kernel, trace=trace, controller="replicaset"), records


# -- the shared contract -------------------------------------------------------------------------

def test_timeout_is_five_minutes():
    assert EXPECTATIONS_TIMEOUT == 300.0


def test_a_key_without_a_record_is_satisfied(make):
    exp = make(Kernel())
    assert exp.satisfied_expectations(KEY)
    assert exp.get_expectations(KEY) == (None, False)


def test_set_expectations_replaces_the_record_and_stamps_it_now(make):
    kernel = Kernel()
    exp = make(kernel)
    exp.set_expectations(KEY, 10, 30)
    kernel.advance(7)
    exp.set_expectations(KEY, 1, 2)
    record, exists = exp.get_expectations(KEY)
    assert exists
    assert record.key == KEY
    assert record.get_expectations() == (1, 2)
    assert record.timestamp == 7.0


def test_expect_creations_sets_add_and_clears_del(make):
    exp = make(Kernel())
    exp.set_expectations(KEY, 0, 4)
    exp.expect_creations(KEY, 3)
    assert exp.get_expectations(KEY)[0].get_expectations() == (3, 0)


def test_unfulfilled_expectations_are_not_satisfied(make):
    exp = make(Kernel())
    exp.expect_creations(KEY, 2)
    exp.creation_observed(KEY)
    assert not exp.satisfied_expectations(KEY)


def test_observing_every_creation_satisfies_expectations(make):
    exp = make(Kernel())
    exp.expect_creations(KEY, 2)
    exp.creation_observed(KEY)
    exp.creation_observed(KEY)
    assert exp.get_expectations(KEY)[0].fulfilled()
    assert exp.satisfied_expectations(KEY)


def test_counts_go_negative_and_negative_counts_are_fulfilled(make):
    # Upstream TestControllerExpectations: adds+1 creations observed leave add at -1.
    exp = make(Kernel())
    exp.set_expectations(KEY, 10, 0)
    for _ in range(11):
        exp.creation_observed(KEY)
    record, _ = exp.get_expectations(KEY)
    assert record.get_expectations() == (-1, 0)
    assert record.fulfilled()


def test_pending_deletions_keep_expectations_unsatisfied(make):
    exp = make(Kernel())
    exp.set_expectations(KEY, 1, 2)
    exp.creation_observed(KEY)
    assert not exp.satisfied_expectations(KEY)


def test_raise_and_lower_adjust_counts_and_keep_the_timestamp(make):
    kernel = Kernel()
    exp = make(kernel)
    exp.set_expectations(KEY, 2, 2)
    kernel.advance(5)
    exp.raise_expectations(KEY, 3, 1)
    exp.lower_expectations(KEY, 1, 4)
    record, _ = exp.get_expectations(KEY)
    assert record.get_expectations() == (4, -1)
    assert record.timestamp == 0.0


def test_raise_lower_and_observe_without_a_record_create_nothing(make):
    exp = make(Kernel())
    exp.raise_expectations(KEY, 3, 3)
    exp.lower_expectations(KEY, 1, 1)
    exp.creation_observed(KEY)
    assert exp.get_expectations(KEY) == (None, False)
    assert exp.keys() == []


def test_expectations_are_not_expired_at_exactly_300_seconds(make):
    kernel = Kernel()
    exp = make(kernel)
    exp.expect_creations(KEY, 1)
    kernel.advance(300)
    assert not exp.satisfied_expectations(KEY)


def test_expectations_expire_after_300_seconds(make):
    kernel = Kernel()
    exp = make(kernel)
    exp.expect_creations(KEY, 1)
    kernel.advance(300.001)
    assert exp.satisfied_expectations(KEY)
    assert exp.get_expectations(KEY)[1]  # expiry does not remove the record


def test_a_timer_set_for_the_timeout_fires_while_expectations_still_hold(make):
    # In floats (212.18 + 300) - 212.18 > 300; the timer must still see "not expired".
    kernel = Kernel()
    kernel.advance(212.18)
    exp = make(kernel)
    exp.expect_creations(KEY, 1)
    seen = []
    kernel.call_later(EXPECTATIONS_TIMEOUT, lambda: seen.append(exp.satisfied_expectations(KEY)))
    kernel.advance(EXPECTATIONS_TIMEOUT)
    assert seen == [False]


def test_delete_expectations_removes_the_record(make):
    exp = make(Kernel())
    exp.expect_creations(KEY, 5)
    exp.delete_expectations(KEY)
    assert exp.get_expectations(KEY) == (None, False)
    assert exp.satisfied_expectations(KEY)


def test_disabled_expectations_are_always_satisfied_but_still_kept(make):
    exp = make(Kernel())
    exp.enabled = False
    exp.expect_creations(KEY, 5)
    exp.creation_observed(KEY)
    assert exp.satisfied_expectations(KEY)
    assert exp.get_expectations(KEY)[0].get_expectations() == (4, 0)


def test_keys_lists_every_recorded_key_sorted(make):
    exp = make(Kernel())
    exp.expect_creations("ns/b", 1)
    exp.expect_creations("ns/a", 0)
    assert exp.keys() == ["ns/a", "ns/b"]


def test_snapshot_reports_counts_age_and_state(make):
    kernel = Kernel()
    exp = make(kernel)
    kernel.advance(20)
    exp.set_expectations(KEY, 2, 1)
    kernel.advance(301)
    snap = exp.snapshot(KEY)
    assert {k: snap[k] for k in ("add", "del", "timestamp", "age", "expired", "fulfilled")} == {
        "add": 2, "del": 1, "timestamp": 20.0, "age": 301.0, "expired": True, "fulfilled": False,
    }
    assert exp.snapshot("ns/none") is None


def test_each_change_emits_one_expectations_record(make):
    kernel = Kernel()
    exp, records = traced(kernel, make)
    exp.set_expectations(KEY, 2, 0)
    exp.raise_expectations(KEY, 1, 1)
    exp.lower_expectations(KEY, 0, 1)
    exp.creation_observed(KEY)
    exp.delete_expectations(KEY)
    assert [(r["kind"], r["controller"], r["key"], r["op"], r["add"], r["del"]) for r in records] == [
        ("expectations", "replicaset", KEY, "set", 2, 0),
        ("expectations", "replicaset", KEY, "raise", 3, 1),
        ("expectations", "replicaset", KEY, "lower", 3, 0),
        ("expectations", "replicaset", KEY, "creation_observed", 2, 0),
        ("expectations", "replicaset", KEY, "delete", 0, 0),
    ]


def test_calls_that_change_nothing_emit_nothing(make):
    exp, records = traced(Kernel(), make)
    exp.creation_observed(KEY)
    exp.lower_expectations(KEY, 1, 1)
    exp.delete_expectations(KEY)
    assert records == []


# -- the plain store -----------------------------------------------------------------------------

def test_plain_expect_deletions_sets_del_and_clears_add():
    exp = ControllerExpectations(Kernel())
    exp.set_expectations(KEY, 3, 0)
    exp.expect_deletions(KEY, 2)
    assert exp.get_expectations(KEY)[0].get_expectations() == (0, 2)


def test_plain_deletion_observed_counts_every_call():
    exp = ControllerExpectations(Kernel())
    exp.expect_deletions(KEY, 1)
    exp.deletion_observed(KEY)
    exp.deletion_observed(KEY)
    assert exp.get_expectations(KEY)[0].get_expectations() == (0, -1)


# -- UID tracking --------------------------------------------------------------------------------

def test_uid_expect_deletions_records_the_pod_keys_and_resets_add():
    exp = UIDTrackingControllerExpectations(Kernel())
    exp.expect_creations(KEY, 4)
    exp.expect_deletions(KEY, ["default/a", "default/b", "default/a"])
    assert exp.get_expectations(KEY)[0].get_expectations() == (0, 2)
    assert exp.get_uids(KEY) == {"default/a", "default/b"}


def test_uid_deletion_is_counted_once_across_terminating_update_and_delete():
    exp = UIDTrackingControllerExpectations(Kernel())
    exp.expect_deletions(KEY, ["default/a", "default/b"])
    exp.deletion_observed(KEY, "default/a")  # update that sets deletionTimestamp
    exp.deletion_observed(KEY, "default/a")  # the final delete event
    assert exp.get_expectations(KEY)[0].get_expectations() == (0, 1)
    assert exp.get_uids(KEY) == {"default/b"}
    assert not exp.satisfied_expectations(KEY)
    exp.deletion_observed(KEY, "default/b")
    assert exp.satisfied_expectations(KEY)


def test_uid_deletion_of_an_unexpected_pod_changes_nothing():
    exp = UIDTrackingControllerExpectations(Kernel())
    exp.expect_deletions(KEY, ["default/a"])
    exp.deletion_observed(KEY, "default/other")
    exp.deletion_observed("default/unknown-rs", "default/a")
    assert exp.get_expectations(KEY)[0].get_expectations() == (0, 1)
    assert exp.get_uids(KEY) == {"default/a"}


def test_uid_every_controller_is_satisfied_once_its_own_pods_are_deleted():
    # Upstream TestUIDExpectations: several controllers, each waiting on its own five pods.
    exp = UIDTrackingControllerExpectations(Kernel())
    pods = {f"default/rc-{i}": [f"default/pod{j}-rc-{i}" for j in range(5)] for i in range(4)}
    for key, keys in pods.items():
        exp.expect_deletions(key, keys)
    for key in ["default/rc-2", "default/rc-0", "default/rc-3", "default/rc-1"]:
        assert not exp.satisfied_expectations(key)
        for pod in pods[key]:
            exp.deletion_observed(key, pod)
        assert exp.satisfied_expectations(key)
        exp.delete_expectations(key)
        assert exp.get_uids(key) is None


def test_uid_get_uids_returns_a_copy():
    exp = UIDTrackingControllerExpectations(Kernel())
    exp.expect_deletions(KEY, ["default/a"])
    exp.get_uids(KEY).clear()
    assert exp.get_uids(KEY) == {"default/a"}


def test_uid_get_uids_is_none_without_a_record():
    assert UIDTrackingControllerExpectations(Kernel()).get_uids(KEY) is None


def test_uid_creations_are_not_tracked_by_key():
    exp = UIDTrackingControllerExpectations(Kernel())
    exp.expect_creations(KEY, 1)
    exp.creation_observed(KEY)
    assert exp.satisfied_expectations(KEY)
    assert exp.get_uids(KEY) is None


def test_uid_delete_expectations_drops_the_record_and_the_pod_keys():
    exp = UIDTrackingControllerExpectations(Kernel())
    exp.expect_deletions(KEY, ["default/a"])
    exp.delete_expectations(KEY)
    assert exp.get_expectations(KEY) == (None, False)
    assert exp.get_uids(KEY) is None


def test_uid_clobbering_pending_delete_keys_is_traced():
    exp, records = traced(Kernel(), lambda clock, **kw: UIDTrackingControllerExpectations(clock, **kw))
    exp.expect_deletions(KEY, ["default/a", "default/b"])
    exp.expect_deletions(KEY, ["default/c"])
    assert [r.get("clobbered", False) for r in records] == [False, True]
    assert records[1]["op"] == "expect_deletions"
    assert (records[1]["add"], records[1]["del"], records[1]["uids"]) == (0, 1, ["default/c"])
    assert exp.get_uids(KEY) == {"default/c"}


def test_uid_replacing_fully_observed_delete_keys_is_not_clobbering():
    exp, records = traced(Kernel(), lambda clock, **kw: UIDTrackingControllerExpectations(clock, **kw))
    exp.expect_deletions(KEY, ["default/a"])
    exp.deletion_observed(KEY, "default/a")
    exp.expect_deletions(KEY, ["default/b"])
    assert "clobbered" not in records[-1]


def test_uid_deletion_observed_is_traced_with_the_pod_key():
    exp, records = traced(Kernel(), lambda clock, **kw: UIDTrackingControllerExpectations(clock, **kw))
    exp.expect_deletions(KEY, ["default/a", "default/b"])
    exp.deletion_observed(KEY, "default/b")
    exp.deletion_observed(KEY, "default/b")
    assert [(r["op"], r["del"], r.get("pod")) for r in records] == [
        ("expect_deletions", 2, None),
        ("deletion_observed", 1, "default/b"),
    ]


def test_uid_snapshot_lists_the_pending_pod_keys_sorted():
    exp = UIDTrackingControllerExpectations(Kernel())
    exp.expect_deletions(KEY, ["default/b", "default/a"])
    assert exp.snapshot(KEY)["uids"] == ["default/a", "default/b"]


def test_plain_snapshot_has_no_uids():
    exp = ControllerExpectations(Kernel())
    exp.expect_deletions(KEY, 1)
    assert "uids" not in exp.snapshot(KEY)


def test_the_first_check_to_find_an_unfulfilled_record_expired_traces_it_once(make):
    kernel = Kernel()
    exp, records = traced(kernel, make)
    exp.expect_creations(KEY, 2)
    kernel.advance(EXPECTATIONS_TIMEOUT)
    assert exp.satisfied_expectations(KEY) is False
    kernel.advance(1.0)
    assert exp.satisfied_expectations(KEY) is True
    assert exp.satisfied_expectations(KEY) is True
    expired = [r for r in records if r["op"] == "expired"]
    assert len(expired) == 1
    assert (expired[0]["add"], expired[0]["del"], expired[0]["age"]) == (2, 0, EXPECTATIONS_TIMEOUT + 1.0)

"""Pod helpers: filters, readiness and availability, pods from templates, and the scale-down
ranking of spec §9 (cases from upstream TestSortingActivePodsWithRanks)."""

import math
import random

import pytest

from controlplane.kernel import parse_rfc3339, rfc3339
from controlplane.podutil import (
    controller_ref,
    filter_active_pods,
    filter_terminating_pods,
    find_min_next_pod_availability_check,
    find_min_next_pod_availability_simple_check,
    get_pod_from_template,
    get_pod_ready_condition,
    get_pods_ranked_by_related_pods_on_same_node,
    get_pods_to_delete,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    is_pod_terminating,
    max_container_restarts,
    max_sidecar_restarts,
    new_controller_ref,
    next_pod_availability_check,
    pod_deletion_cost,
    pod_key,
)

HOUR = 3600.0
NOW = 40 * 24 * HOUR
THEN_1_MONTH = NOW - 31 * 24 * HOUR
THEN_2_HOURS = NOW - 2 * HOUR
THEN_5_HOURS = NOW - 5 * HOUR
THEN_8_HOURS = NOW - 8 * HOUR
ZERO = None


def pod(
    name,
    node="node",
    phase="Running",
    ready=False,
    restarts=0,
    ready_since=ZERO,
    created=ZERO,
    annotations=None,
    uid="",
    deleting=False,
):
    """A pod shaped like upstream's test helper: ready pods get a Ready condition and one
    container status; ZERO (None) leaves a timestamp out, which is Go's zero time."""
    meta = {"name": name, "namespace": "default", "uid": uid}
    if created is not None:
        meta["creationTimestamp"] = rfc3339(created)
    if annotations:
        meta["annotations"] = annotations
    if deleting:
        meta["deletionTimestamp"] = rfc3339(NOW)
    status = {"phase": phase}
    if ready:
        condition = {"type": "Ready", "status": "True"}
        if ready_since is not None:
            condition["lastTransitionTime"] = rfc3339(ready_since)
        status["conditions"] = [condition]
        status["containerStatuses"] = [{"name": "app", "restartCount": restarts}]
    return {"metadata": meta, "spec": {"nodeName": node}, "status": status}


def ready_pod(name, since, uid):
    """A ready, unscheduled pod created a month ago: only its ready time and UID differ."""
    return pod(name, node="", ready=True, ready_since=since, created=THEN_1_MONTH, uid=uid)


def names(pods):
    return [p["metadata"]["name"] for p in pods]


def deletion_order(pods, related=None, now=NOW, **kwargs):
    """The full order get_pods_to_delete ranks `pods` in (it sorts whenever count < len)."""
    victims = get_pods_to_delete(pods, pods if related is None else related, len(pods) - 1, now, **kwargs)
    rest = [p for p in pods if p not in victims]
    return names(victims + rest)


def assert_deleted_first(lesser, greater, related=None, now=NOW, **kwargs):
    for pods in ([lesser, greater], [greater, lesser]):
        assert deletion_order(pods, related, now, **kwargs) == names([lesser, greater])


def assert_equivalent(a, b, now=NOW):
    assert deletion_order([a, b], now=now) == names([a, b])
    assert deletion_order([b, a], now=now) == names([b, a])


def colocated(node, count):
    """`count` active pods on `node`, to raise the rank of pods sharing that node."""
    return [pod(f"peer-{node}-{i}", node=node) for i in range(count)]


unscheduled = pod("unscheduled", node="", phase="Pending")
scheduled_pending = pod("pending", phase="Pending")
unknown_phase = pod("unknown-phase", phase="Unknown")
running_not_ready = pod("not-ready")
ready_no_ltt = pod("ready-no-last-transition-time", ready=True)
ready_now = pod("ready-now", ready=True, ready_since=NOW, created=NOW)
ready_then = pod("ready-then", ready=True, ready_since=THEN_1_MONTH, created=THEN_1_MONTH)
ready_now_high_restarts = pod("ready-high-restarts", ready=True, restarts=9001, ready_since=NOW, created=NOW)
ready_now_created_then = pod("ready-now-created-then", ready=True, ready_since=NOW, created=THEN_1_MONTH)


# -- filters and readiness -----------------------------------------------------------------------

def test_pod_key_is_namespace_slash_name():
    assert pod_key(pod("web-1")) == "default/web-1"


def test_active_pods_are_neither_terminal_nor_deleting():
    assert is_pod_active(pod("a", phase="Running"))
    assert is_pod_active(pod("a", phase="Pending"))
    assert not is_pod_active(pod("a", phase="Succeeded"))
    assert not is_pod_active(pod("a", phase="Failed"))
    assert not is_pod_active(pod("a", deleting=True))


def test_terminating_pods_are_deleting_but_not_yet_terminal():
    assert is_pod_terminating(pod("a", deleting=True))
    assert not is_pod_terminating(pod("a"))
    assert not is_pod_terminating(pod("a", phase="Failed", deleting=True))


def test_filters_keep_input_order():
    pods = [pod("a"), pod("b", phase="Succeeded"), pod("c", deleting=True), pod("d", phase="Pending")]
    assert names(filter_active_pods(pods)) == ["a", "d"]
    assert names(filter_terminating_pods(pods)) == ["c"]


def test_ready_means_a_ready_condition_with_status_true():
    assert is_pod_ready(pod("a", ready=True))
    assert not is_pod_ready(pod("a"))
    not_ready = pod("a")
    not_ready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    assert not is_pod_ready(not_ready)
    assert get_pod_ready_condition(not_ready) == {"type": "Ready", "status": "False"}
    assert get_pod_ready_condition(pod("a")) is None


def test_pod_is_available_exactly_min_ready_seconds_after_becoming_ready():
    p = pod("a", ready=True, ready_since=100.0)
    assert not is_pod_available(p, 10, 109.999)
    assert is_pod_available(p, 10, 110.0)


def test_available_with_zero_min_ready_seconds_needs_only_readiness():
    assert is_pod_available(pod("a", ready=True), 0, NOW)
    assert not is_pod_available(pod("a"), 0, NOW)


def test_ready_pod_without_transition_time_is_never_available_with_min_ready_seconds():
    assert not is_pod_available(pod("a", ready=True), 5, NOW)


def test_restarts_are_the_maximum_over_containers():
    p = pod("a", ready=True)
    p["status"]["containerStatuses"] = [{"name": "a", "restartCount": 3}, {"name": "b", "restartCount": 7}]
    assert max_container_restarts(p) == 7
    assert max_container_restarts(pod("a")) == 0


def test_sidecar_restarts_count_only_restartable_init_containers():
    p = pod("a", ready=True)
    p["spec"]["initContainers"] = [{"name": "side", "restartPolicy": "Always"}, {"name": "init"}]
    p["status"]["initContainerStatuses"] = [
        {"name": "side", "restartCount": 4},
        {"name": "init", "restartCount": 9},
    ]
    assert max_sidecar_restarts(p) == 4


# -- pod deletion cost ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "cost"),
    [
        ("10", 10),
        ("-5", -5),
        ("0", 0),
        ("-0", 0),
        ("2147483647", 2147483647),
        ("-2147483648", -2147483648),
        ("+10", 0),
        ("008", 0),
        ("00", 0),
        ("2147483648", 0),
        ("-2147483649", 0),
        ("", 0),
        ("-", 0),
        ("1_000", 0),
        (" 5", 0),
        ("5 ", 0),
        ("1.5", 0),
        ("abc", 0),
        ("\u0661", 0),  # an Arabic-Indic digit: Python's int() would accept it, Go's ParseInt does not
    ],
)
def test_pod_deletion_cost_parses_the_annotation_like_upstream(value, cost):
    p = pod("a", annotations={"controller.kubernetes.io/pod-deletion-cost": value})
    assert pod_deletion_cost(p) == cost


def test_pod_deletion_cost_defaults_to_zero():
    assert pod_deletion_cost(pod("a")) == 0


# -- controller references and pods from templates -----------------------------------------------

RS = {"metadata": {"name": "web", "namespace": "default", "uid": "rs-uid"}}


def test_new_controller_ref_names_the_owner_as_blocking_controller():
    assert new_controller_ref(RS, "apps/v1", "ReplicaSet") == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web",
        "uid": "rs-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def test_controller_ref_is_the_owner_reference_with_controller_true():
    ref = new_controller_ref(RS, "apps/v1", "ReplicaSet")
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c-uid"}
    obj = {"metadata": {"ownerReferences": [other, ref]}}
    assert controller_ref(obj) is ref
    assert controller_ref({"metadata": {"ownerReferences": [other]}}) is None
    assert controller_ref({"metadata": {}}) is None


TEMPLATE = {
    "metadata": {
        "labels": {"app": "web"},
        "annotations": {"note": "x"},
        "finalizers": ["example.com/keep"],
    },
    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
}


def test_pod_from_template_copies_metadata_and_shares_the_spec():
    ref = new_controller_ref(RS, "apps/v1", "ReplicaSet")
    created = get_pod_from_template(TEMPLATE, RS, ref)
    assert created == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "web-",
            "namespace": "default",
            "labels": {"app": "web"},
            "annotations": {"note": "x"},
            "ownerReferences": [ref],
            "finalizers": ["example.com/keep"],
        },
        "spec": TEMPLATE["spec"],
    }
    assert created["spec"] is TEMPLATE["spec"]
    assert created["metadata"]["labels"] is not TEMPLATE["metadata"]["labels"]


def test_pod_from_template_omits_empty_annotations_and_finalizers():
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {}}
    meta = get_pod_from_template(template, RS, None)["metadata"]
    assert meta == {"generateName": "web-", "namespace": "default", "labels": {"app": "web"}}


def test_pod_from_template_without_labels_is_refused():
    with pytest.raises(ValueError, match=r"^unable to create pods, no labels$"):
        get_pod_from_template({"metadata": {}, "spec": {}}, RS, None)


def test_generate_name_drops_the_dash_when_it_would_not_be_a_valid_prefix():
    parent = {"metadata": {"name": "a" * 254, "namespace": "default"}}
    assert get_pod_from_template(TEMPLATE, parent, None)["metadata"]["generateName"] == "a" * 254


def test_generate_name_keeps_the_dash_after_a_name_of_the_maximum_length():
    # Upstream's prefix check masks the trailing "-" by dropping two characters, so a 254-byte
    # "<253 chars>-" passes as a prefix.
    parent = {"metadata": {"name": "a" * 253, "namespace": "default"}}
    assert get_pod_from_template(TEMPLATE, parent, None)["metadata"]["generateName"] == "a" * 253 + "-"


# -- availability requeue helpers ([M]) ----------------------------------------------------------

def test_next_availability_check_is_the_time_left_until_available():
    p = pod("a", ready=True, ready_since=100.0)
    assert next_pod_availability_check(p, 30, 110.0) == 20.0


def test_next_availability_check_is_none_when_already_available_or_never_by_waiting():
    assert next_pod_availability_check(pod("a", ready=True, ready_since=100.0), 30, 130.0) is None
    assert next_pod_availability_check(pod("a", ready=True, ready_since=100.0), 0, 100.0) is None
    assert next_pod_availability_check(pod("a"), 30, 100.0) is None
    assert next_pod_availability_check(pod("a", ready=True), 30, 100.0) is None


def test_simple_check_picks_the_smallest_delay_and_the_first_pod_on_ties():
    a = pod("a", ready=True, ready_since=105.0)
    b = pod("b", ready=True, ready_since=102.0)
    c = pod("c", ready=True, ready_since=102.0)
    assert find_min_next_pod_availability_simple_check([a, b, c], 10, 104.0) == (8.0, b)
    assert find_min_next_pod_availability_simple_check([pod("x")], 10, 104.0) == (None, None)


def test_availability_check_recomputes_the_chosen_pod_at_now():
    pods = [pod("a", ready=True, ready_since=100.0), pod("b", ready=True, ready_since=104.0)]
    assert find_min_next_pod_availability_check(pods, 10, 101.0, 103.0) == 7.0


def test_availability_check_is_zero_when_the_pod_became_available_meanwhile():
    pods = [pod("a", ready=True, ready_since=100.0)]
    assert find_min_next_pod_availability_check(pods, 10, 101.0, 112.0) == 0.0


def test_availability_check_is_none_when_no_pod_is_waiting():
    assert find_min_next_pod_availability_check([pod("a")], 10, 101.0, 112.0) is None


# -- ranks ---------------------------------------------------------------------------------------

def test_rank_counts_active_related_pods_on_the_same_node():
    pods = [pod("a", node="n1"), pod("b", node="n2"), pod("c", node="")]
    related = [
        *pods,
        pod("d", node="n1"),
        pod("e", node="n1", phase="Failed"),
        pod("f", node="n1", deleting=True),
        pod("g", node=""),
    ]
    assert get_pods_ranked_by_related_pods_on_same_node(pods, related) == [2, 1, 2]


# -- the deletion ranking, key by key (spec §9.1) ------------------------------------------------

def test_unassigned_pods_go_first_whatever_their_rank():
    assert_deleted_first(unscheduled, scheduled_pending)
    assert_deleted_first(unscheduled, scheduled_pending, related=[scheduled_pending, *colocated("node", 3)])


def test_pending_goes_before_unknown_before_running():
    assert_deleted_first(scheduled_pending, unknown_phase)
    assert_deleted_first(unknown_phase, running_not_ready)


def test_a_pod_without_phase_ranks_as_pending():
    no_phase = pod("no-phase", phase="")
    assert_equivalent(no_phase, pod("pending-too", phase="Pending"))
    assert_deleted_first(no_phase, unknown_phase)


def test_not_ready_goes_before_ready():
    assert_deleted_first(running_not_ready, ready_no_ltt)


def test_lower_deletion_cost_goes_first_even_against_a_higher_rank():
    cheap = pod("low-deletion-cost", node="n1", ready=True, ready_since=NOW, created=THEN_1_MONTH,
                annotations={"controller.kubernetes.io/pod-deletion-cost": "10"})
    dear = pod("high-deletion-cost", node="n2", ready=True, ready_since=NOW, created=THEN_1_MONTH,
               annotations={"controller.kubernetes.io/pod-deletion-cost": "100"})
    assert_deleted_first(cheap, dear, related=[cheap, dear, *colocated("n2", 5)])


def test_invalid_deletion_costs_rank_as_zero():
    def costed(name, value):
        return pod(name, ready=True, ready_since=NOW, created=NOW,
                   annotations={"controller.kubernetes.io/pod-deletion-cost": value})

    assert_deleted_first(costed("minus-one", "-1"), costed("plus-ten", "+10"))
    assert_deleted_first(costed("leading-zeros", "008"), costed("one", "1"))


def test_deletion_cost_is_ignored_with_the_gate_off():
    cheap = pod("low-deletion-cost", node="n1", ready=True, ready_since=NOW, created=THEN_1_MONTH,
                annotations={"controller.kubernetes.io/pod-deletion-cost": "10"})
    dear = pod("high-deletion-cost", node="n2", ready=True, ready_since=NOW, created=THEN_1_MONTH,
               annotations={"controller.kubernetes.io/pod-deletion-cost": "100"})
    assert_deleted_first(dear, cheap, related=[cheap, dear, *colocated("n2", 1)], deletion_cost_enabled=False)


def test_more_colocated_related_pods_go_first():
    a = pod("crowded", node="n1", ready=True, ready_since=THEN_1_MONTH, created=THEN_1_MONTH)
    b = pod("alone", node="n2", ready=True, ready_since=NOW, created=NOW)
    assert_deleted_first(a, b, related=[a, b, *colocated("n1", 1)])


def test_ready_pod_with_zero_transition_time_goes_first_among_ready_pods():
    assert_deleted_first(ready_no_ltt, ready_now)


def test_rank_outweighs_ready_time():
    now_on_crowded = pod("ready-now-crowded", node="n1", ready=True, ready_since=NOW, created=NOW)
    no_ltt = pod("ready-no-ltt", node="n2", ready=True)
    assert_deleted_first(now_on_crowded, no_ltt, related=[now_on_crowded, no_ltt, *colocated("n1", 1)])


def test_more_recently_ready_goes_first():
    assert_deleted_first(ready_now, ready_then)


def test_ready_times_in_different_log2_buckets_order_by_bucket():
    # Ages in nanoseconds: 2 h -> bucket 42, 5 h -> 44, so the UIDs do not matter.
    two_hours = ready_pod("ready-2-hours", THEN_2_HOURS, uid="z")
    five_hours = ready_pod("ready-5-hours", THEN_5_HOURS, uid="a")
    assert_deleted_first(two_hours, five_hours)


def test_ready_times_in_one_log2_bucket_order_by_uid():
    # 5 h and 8 h are both bucket 44: the lower UID goes first, although it became ready earlier.
    five_hours = ready_pod("ready-5-hours", THEN_5_HOURS, uid="b")
    eight_hours = ready_pod("ready-8-hours", THEN_8_HOURS, uid="a")
    assert_deleted_first(eight_hours, five_hours)


def test_ready_times_in_one_bucket_with_equal_uids_are_equivalent():
    five_hours = pod("ready-5-hours", node="", ready=True, ready_since=THEN_5_HOURS, created=THEN_1_MONTH)
    eight_hours = pod("ready-8-hours", node="", ready=True, ready_since=THEN_8_HOURS, created=THEN_1_MONTH)
    assert_equivalent(five_hours, eight_hours)


def test_equal_ready_times_fall_through_to_restarts():
    assert_deleted_first(ready_now_high_restarts, ready_now)


def test_equal_restarts_fall_through_to_sidecar_restarts():
    plain = pod("plain", ready=True, ready_since=NOW, created=NOW)
    with_sidecar = pod("sidecar-restarts", ready=True, ready_since=NOW, created=NOW)
    with_sidecar["spec"]["initContainers"] = [{"name": "proxy", "restartPolicy": "Always"}]
    with_sidecar["status"]["initContainerStatuses"] = [{"name": "proxy", "restartCount": 2}]
    assert_deleted_first(with_sidecar, plain)


def test_newer_creation_goes_first():
    assert_deleted_first(ready_now, ready_now_created_then)


def test_creation_times_in_one_log2_bucket_order_by_uid():
    five_hours = pod("created-5-hours", node="", phase="Pending", created=THEN_5_HOURS, uid="b")
    eight_hours = pod("created-8-hours", node="", phase="Pending", created=THEN_8_HOURS, uid="a")
    assert_deleted_first(eight_hours, five_hours)


def test_creation_times_in_one_bucket_with_equal_uids_are_equivalent():
    # Upstream's equality case unscheduled5Hours / unscheduled8Hours.
    five_hours = pod("unscheduled-5-hours", node="", phase="Pending", created=THEN_5_HOURS)
    eight_hours = pod("unscheduled-8-hours", node="", phase="Pending", created=THEN_8_HOURS)
    assert_equivalent(five_hours, eight_hours)


def test_zero_creation_time_goes_first():
    assert_deleted_first(pod("no-creation-time"), pod("created", created=NOW))


def test_without_now_times_compare_plainly_newest_first():
    five_hours = ready_pod("ready-5-hours", THEN_5_HOURS, uid="b")
    eight_hours = ready_pod("ready-8-hours", THEN_8_HOURS, uid="a")
    assert_deleted_first(five_hours, eight_hours, now=None)
    assert_deleted_first(pod("ready-no-ltt", node="", ready=True), five_hours, now=None)


@pytest.mark.parametrize(
    "p",
    [unscheduled, scheduled_pending, unknown_phase, running_not_ready, ready_now_created_then, ready_now,
     ready_then, ready_now_high_restarts],
)
def test_a_pod_is_equivalent_to_itself(p):
    twin = {**p, "metadata": {**p["metadata"], "name": "twin"}}
    assert_equivalent(p, twin)


def test_every_key_together_gives_one_order_whatever_the_input_order():
    expected = [unscheduled, scheduled_pending, unknown_phase, running_not_ready, ready_no_ltt,
                ready_now_high_restarts, ready_now, ready_now_created_then, ready_then]
    shuffler = random.Random(7)
    for _ in range(20):
        pods = list(expected)
        shuffler.shuffle(pods)
        assert deletion_order(pods) == names(expected)


# -- ties and upstream's inconsistent comparisons ------------------------------------------------

def test_pods_equal_under_every_key_keep_their_input_order():
    pods = [pod(f"p{i}", ready=True, ready_since=NOW, created=NOW) for i in range(5)]
    assert names(get_pods_to_delete(pods, pods, 4, NOW)) == ["p0", "p1", "p2", "p3"]


def test_distinct_ready_times_in_one_bucket_order_by_uid_across_many_pods():
    base = NOW - 5 * HOUR
    pods = [
        pod("a", ready=True, ready_since=base, created=THEN_1_MONTH, uid="c"),
        pod("b", ready=True, ready_since=base + 60, created=THEN_1_MONTH, uid="a"),
        pod("c", ready=True, ready_since=base, created=THEN_1_MONTH, uid="b"),
    ]
    assert deletion_order(pods) == ["b", "c", "a"]


def test_equal_ready_times_keep_their_restart_order_inside_a_uid_ordered_bucket():
    # Upstream orders x before y (same ready time, more restarts) although x's UID is higher;
    # both go before z by UID. The only order respecting all three pairs is x, y, z.
    base = NOW - 5 * HOUR
    y = pod("y", ready=True, ready_since=base, created=THEN_1_MONTH, uid="a")
    x = pod("x", ready=True, restarts=5, ready_since=base, created=THEN_1_MONTH, uid="b")
    z = pod("z", ready=True, ready_since=base + 60, created=THEN_1_MONTH, uid="c")
    for pods in ([x, y, z], [z, y, x], [y, z, x]):
        assert deletion_order(pods) == ["x", "y", "z"]


def test_a_cycle_in_upstreams_comparison_still_gives_a_deterministic_order():
    # x before y (restarts), y before z (UID a < c), z before x (UID c < d): no order satisfies all.
    base = NOW - 5 * HOUR
    x = pod("x", ready=True, restarts=5, ready_since=base, created=THEN_1_MONTH, uid="d")
    y = pod("y", ready=True, ready_since=base, created=THEN_1_MONTH, uid="a")
    z = pod("z", ready=True, ready_since=base + 60, created=THEN_1_MONTH, uid="c")
    first = deletion_order([x, y, z])
    assert sorted(first) == ["x", "y", "z"]
    assert deletion_order([x, y, z]) == first


# -- get_pods_to_delete itself -------------------------------------------------------------------

def test_deleting_every_pod_keeps_the_input_order_unsorted():
    pods = [ready_then, unscheduled, ready_now]
    assert names(get_pods_to_delete(pods, pods, 3, NOW)) == ["ready-then", "unscheduled", "ready-now"]


def test_deleting_no_pod_returns_nothing():
    assert get_pods_to_delete([ready_now], [ready_now], 0, NOW) == []


def test_the_input_list_is_not_reordered():
    pods = [ready_then, unscheduled, ready_now]
    get_pods_to_delete(pods, pods, 1, NOW)
    assert names(pods) == ["ready-then", "unscheduled", "ready-now"]


# -- against a literal transcription of upstream's Less ------------------------------------------

def upstream_less(a, b, rank_a, rank_b, now):
    """`ActivePodsWithRanks.Less` transcribed key by key (default gates), on test pods."""
    def node(p):
        return p["spec"]["nodeName"]

    def time_of(value):
        return None if value is None else parse_rfc3339(value)

    def ready_time(p):
        return time_of(p["status"]["conditions"][0].get("lastTransitionTime")) if is_pod_ready(p) else None

    def bucket(t):
        age = round(now * 1e9) - round(t * 1e9)
        return int(math.log2(age)) if age > 0 else -1

    def after_or_zero(t1, t2):
        return t1 is None if t1 is None or t2 is None else t1 > t2

    def log_compare(t1, t2):
        if t1 is None or t2 is None:
            return after_or_zero(t1, t2)
        if bucket(t1) == bucket(t2):
            return a["metadata"]["uid"] < b["metadata"]["uid"]
        return bucket(t1) < bucket(t2)

    if node(a) != node(b) and (node(a) == "" or node(b) == ""):
        return node(a) == ""
    phase = {"Pending": 0, "Unknown": 1, "Running": 2}
    if phase[a["status"]["phase"]] != phase[b["status"]["phase"]]:
        return phase[a["status"]["phase"]] < phase[b["status"]["phase"]]
    if is_pod_ready(a) != is_pod_ready(b):
        return not is_pod_ready(a)
    if pod_deletion_cost(a) != pod_deletion_cost(b):
        return pod_deletion_cost(a) < pod_deletion_cost(b)
    if rank_a != rank_b:
        return rank_a > rank_b
    if is_pod_ready(a) and is_pod_ready(b) and ready_time(a) != ready_time(b):
        return log_compare(ready_time(a), ready_time(b))
    if max_container_restarts(a) != max_container_restarts(b):
        return max_container_restarts(a) > max_container_restarts(b)
    created_a = time_of(a["metadata"].get("creationTimestamp"))
    created_b = time_of(b["metadata"].get("creationTimestamp"))
    if created_a != created_b:
        return log_compare(created_a, created_b)
    return False


def random_pods(rng, count):
    """Pods that differ in few ways, so ties, shared buckets and UID decisions are frequent."""
    base = NOW - 5 * HOUR  # ages near 5 h share bucket 44
    uids = rng.sample(range(100), count)  # unique, as the API server makes them
    return [
        pod(
            f"p{i}",
            node=rng.choice(["", "n1", "n2"]),
            phase=rng.choice(["Pending", "Running", "Running", "Unknown"]),
            ready=rng.random() < 0.8,
            restarts=rng.choice([0, 0, 1, 2]),
            ready_since=rng.choice([ZERO, base, base + 60, base + 120, THEN_2_HOURS]),
            created=rng.choice([ZERO, THEN_1_MONTH, base, base + 1]),
            annotations=rng.choice([None, {"controller.kubernetes.io/pod-deletion-cost": "5"}]),
            uid=f"{uids[i]:02d}",
        )
        for i in range(count)
    ]


def has_cycle(pods, less):
    state = {}

    def visit(p):
        state[id(p)] = "open"
        for q in pods:
            if less(p, q) and (state.get(id(q)) == "open" or (id(q) not in state and visit(q))):
                return True
        state[id(p)] = "done"
        return False

    return any(id(p) not in state and visit(p) for p in pods)


def test_the_order_respects_every_pair_upstream_orders_whenever_some_order_can():
    rng = random.Random(2026)
    checked = 0
    for _ in range(600):
        pods = random_pods(rng, rng.randint(2, 8))
        ranks = get_pods_ranked_by_related_pods_on_same_node(pods, pods)
        rank = {p["metadata"]["name"]: r for p, r in zip(pods, ranks, strict=True)}

        def less(a, b, rank=rank):
            return upstream_less(a, b, rank[a["metadata"]["name"]], rank[b["metadata"]["name"]], NOW)

        if has_cycle(pods, less):  # upstream's comparison admits no order at all here
            continue
        order = get_pods_to_delete(pods, pods, len(pods) - 1, NOW)
        order += [p for p in pods if p not in order]
        for i, earlier in enumerate(order):
            for later in order[i + 1:]:
                assert not less(later, earlier)
        checked += 1
    assert checked > 500

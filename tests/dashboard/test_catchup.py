"""A viewer that fell behind is caught up with the frames it skipped, merged into one frame, not a
full state of the world (issue #19 Targets); panels only the clock changes are rebuilt at most
once a wall second."""

from __future__ import annotations

import json

from dashboard.host import frames as frames_module

from .test_hosted import frames_until_quiet, hosted, run_until, unpack_transitions


def _apply(view: dict, frame: dict) -> None:
    """What the page does with a frame, reduced to what it keeps."""
    view["seq"] = frame["seq"]
    view["status"] = frame["status"]
    view["panels"].update(frame["panels"])
    for log, html in frame["rows"].items():
        view["rows"][log] = view["rows"].get(log, "") + html
    canvas = frame.get("canvas") or {}
    view["canvas"].setdefault("tr", []).extend(unpack_transitions(canvas.get("tr", [])))
    for part in ("names", "nodes", "spans", "depth"):
        view["canvas"].setdefault(part, []).extend(canvas.get(part, []))
    for table in ("owners", "nodeNames", "keys"):
        if table in canvas:
            view["canvas"][table] = canvas[table]


def test_a_catch_up_is_the_skipped_frames_merged_not_the_world(monkeypatch):
    monkeypatch.setattr(frames_module, "STATUS_EVERY", 0.0)  # every step of the clock makes a frame
    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 2.0)
    frames_until_quiet(h)
    since = h.frames.seq
    skipped = []
    for t in (4.0, 6.0, 8.0, 10.0):
        run_until(h, t)
        skipped += frames_until_quiet(h)
    assert len(skipped) >= 4 and h.frames.seq == skipped[-1]["seq"]
    one_by_one = {"panels": {}, "rows": {}, "canvas": {}}
    for frame in skipped:
        _apply(one_by_one, frame)
    text = h.frames.catchup(since)
    merged = json.loads(text)
    assert merged["type"] == "frame" and merged["seq"] == h.frames.seq
    at_once = {"panels": {}, "rows": {}, "canvas": {}}
    _apply(at_once, merged)
    assert at_once == one_by_one
    assert one_by_one["canvas"]["tr"]  # pods changed in between: the tiles get every transition
    assert "pods" not in merged.get("canvas", {})  # not the whole pod table again
    assert h.frames.catchup(since) is text  # several viewers behind by the same frames: built once


def test_nothing_skipped_gives_an_empty_frame_at_the_current_seq():
    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 2.0)
    frames_until_quiet(h)
    merged = json.loads(h.frames.catchup(h.frames.seq))
    assert merged["seq"] == h.frames.seq and merged["panels"] == {} and merged["rows"] == {}
    assert "canvas" not in merged


def test_a_catch_up_the_kept_frames_no_longer_cover_is_refused(monkeypatch):
    monkeypatch.setattr(frames_module, "CATCHUP_FRAMES", 2)
    monkeypatch.setattr(frames_module, "STATUS_EVERY", 0.0)
    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 1.0)
    frames_until_quiet(h)
    since = h.frames.seq
    for t in (2.0, 3.0, 4.0, 5.0):
        run_until(h, t)
        frames_until_quiet(h)
    assert h.frames.seq - since > 2
    assert h.frames.catchup(since) is None  # the viewer needs a full state
    assert h.frames.catchup(h.frames.seq - 2) is not None  # the last two are kept
    assert h.frames.catchup(h.frames.seq + 1) is None  # a seq from the future: nothing to merge


def test_frames_dropped_while_nobody_watched_cannot_be_caught_up():
    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 2.0)
    frames_until_quiet(h)
    since = h.frames.seq
    h.viewers.clear()
    run_until(h, 4.0)
    h.frames.skip()  # the driver's doing while nobody watches: the pods' transitions are dropped
    h.viewers.add("viewer")
    assert h.frames.catchup(since) is None


def test_frames_keep_a_bounded_amount_of_text(monkeypatch):
    monkeypatch.setattr(frames_module, "CATCHUP_BYTES", 1)
    h = hosted()
    h.viewers.add("viewer")
    for t in (1.0, 2.0, 3.0):
        run_until(h, t)
        frames_until_quiet(h)
    assert len(h.frames.recent) == 1  # only the newest, whatever its size


def test_panels_only_the_clock_changes_are_rebuilt_at_most_once_a_second(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(frames_module.time, "perf_counter", lambda: clock[0])
    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 2.0)
    frames_until_quiet(h)
    built = dict(h.frames.built_at)
    assert "timers" in built and "expectations-replicaset" in built
    clock[0] += 0.5
    h.sim.run_until(h.sim.now + 0.5)
    h.frames.frame()
    assert h.frames.built_at["timers"] == built["timers"]  # half a second: not yet
    assert h.frames.built_at["expectations-replicaset"] == built["expectations-replicaset"]
    clock[0] += 0.6
    h.frames.frame()
    assert h.frames.built_at["timers"] > built["timers"]  # a second later: its ages move
    h.frames.dirty.add("inspector-latest")
    clock[0] += 0.1
    h.frames.frame(complete=True)  # the frame after a step carries every age at the new clock
    assert h.frames.built_at["expectations-replicaset"] == clock[0]


def test_a_frame_with_only_a_new_status_waits_a_fifth_of_a_second_and_is_owed(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(frames_module.time, "perf_counter", lambda: clock[0])
    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 2.0)
    frames_until_quiet(h)
    h.frames.owed = False
    seq = h.frames.seq
    h.sim.run_until(h.sim.now + 0.001)  # the clock moves, nothing else (no record)
    clock[0] += 0.05
    assert h.frames.frame() is None and h.frames.seq == seq
    assert h.frames.owed  # held back: the driver sends it once the simulation holds still
    assert json.loads(h.frames.frame(urgent=True))["status"]["t"] == h.sim.now  # a command's frame: at once
    h.sim.run_until(h.sim.now + 0.001)
    clock[0] += 0.05
    assert h.frames.frame() is None
    clock[0] += 0.2
    assert json.loads(h.frames.frame())["status"]["t"] == h.sim.now


def test_a_deployment_s_own_marks_reach_its_lane_in_frames_states_and_catch_ups():
    """An owner of owners' marks (its revision changes, its conditions flipping, its Events) are
    read from its writes and Events, in time order, each once: a frame at a time, merged in a
    catch-up, whole in a state."""
    h = hosted("deployment-rolling-update")
    h.viewers.add("viewer")
    run_until(h, 20.0)
    frames_until_quiet(h)
    since = h.frames.seq
    run_until(h, 45.0)
    skipped = frames_until_quiet(h)
    owners = json.loads(h.frames.state())["canvas"]["owners"]
    one_by_one = [m for f in skipped for m in (f.get("canvas") or {}).get("marks", [])]
    merged = json.loads(h.frames.catchup(since))
    assert merged["canvas"]["marks"] == one_by_one
    marks = json.loads(h.frames.state())["canvas"]["marks"]
    assert marks[-len(one_by_one) :] == one_by_one and len(marks) > len(one_by_one)
    assert [m[0] for m in marks] == sorted(m[0] for m in marks)
    assert {owners[m[1]] for m in marks} == {"Deployment/web"}
    said = [(m[2], m[3]) for m in marks]
    assert said.index(("rev", "1")) < said.index(("rev", "2"))
    assert said.count(("rev", "2")) == 1  # a change, not every write
    rev2 = next(m for m in marks if m[2:4] == ["rev", "2"])
    assert 30.0 <= rev2[0] < 31.0 and rev2[4] == "revision 1 → 2"
    progressing = [m[4].split(":")[0] for m in marks if m[3] == "Progressing=True"]
    assert progressing[-3:] == ["NewReplicaSetCreated", "ReplicaSetUpdated", "NewReplicaSetAvailable"]
    scaled = [m[4] for m in marks if m[2:4] == ["ev", "ScalingReplicaSet"]]
    assert "Scaled up replica set web-77768f5b79 from 0 to 3" in scaled
    assert scaled[-1] == "Scaled down replica set web-766486c5b6 from 1 to 0"


def test_the_rollout_budget_is_the_numbers_the_controller_compares():
    """views.rollout: the ReplicaSets' spec.replicas against replicas + maxSurge (upstream's
    GetReplicaCountForReplicaSets), their availableReplicas against replicas - maxUnavailable,
    and the pods their status.replicas count beside them."""
    from controlplane.simulation import views

    h = hosted("deployment-rolling-update")
    run_until(h, 33.0)
    r = views.rollout(h, "deployment", "default/web")
    sets = r["replica_sets"]
    assert (r["desired"], r["max_surge"], r["max_unavailable"]) == (10, 3, 2)
    assert r["total"] == sum(s["desired"] for s in sets) and r["allowed"] == 13
    assert r["pods"] == sum(s["replicas"] for s in sets)
    assert r["available"] == sum(s["available"] for s in sets) and r["min_available"] == 8
    assert r["at_max"] == (r["total"] >= 13) and r["at_min"] == (r["available"] <= 8)
    run_until(h, 60.0)
    done = views.rollout(h, "deployment", "default/web")
    assert (done["total"], done["available"], done["at_max"], done["at_min"]) == (10, 10, False, False)


def test_the_faults_in_force_list_each_image_fault_with_the_mapping_without_it():
    from controlplane.simulation import views

    h = hosted("lesson-rollout-stuck-image-pull", imageFaults={"nginx:9.9": "ErrImagePull", "busybox:*": "NeverReady"})
    faults = views.faults(h)
    assert faults["image_faults"] == [
        {"pattern": "nginx:9.9", "fault": "ErrImagePull", "without": {"busybox:*": "NeverReady"}},
        {"pattern": "busybox:*", "fault": "NeverReady", "without": {"nginx:9.9": "ErrImagePull"}},
    ]
    assert faults["image_fault_map"] == {"nginx:9.9": "ErrImagePull", "busybox:*": "NeverReady"}

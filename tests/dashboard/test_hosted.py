"""A hosted simulation: pacing slices, commands at the right virtual time, frames, breakpoints,
step goals, and the promise that an exported session replays to the identical report."""

from __future__ import annotations

import json

import pytest
import yaml

from controlplane.scenario import load_file, load_scenario
from controlplane.session import goals
from controlplane.session.commands import CommandError
from controlplane.simulation import Simulation, run_scenario
from dashboard.host.hosted import HostedSimulation


def unpack_transitions(packed):
    """What the page reads back of `frames.pack_transitions` (static/dashboard/pods.js,
    `CtrlscopeTransitions.each`): [[t in seconds, pod id, owner, state], ...]."""
    out, t, pod_id = [], 0, 0
    for i in range(0, len(packed) - 3, 4):
        t += packed[i]
        pod_id += packed[i + 1]
        out.append([round(t / 1000, 3), pod_id, packed[i + 2], packed[i + 3]])
    return out


def hosted(name="demo", **config):
    scenario = load_file(name)
    scenario.config.update(config)
    return HostedSimulation("t", Simulation(scenario), name=scenario.name, source=name)


def run_until(h, t):
    """Step the kernel event by event (checking breakpoints as the driver does) until time t."""
    while h.sim.now < t:
        nxt = h.sim.kernel.peek()
        if nxt is None or nxt > t:
            h.sim.run_until(t)
            break
        h.sim.step()
        h._after_event()


def drive(h, limit=100_000):
    """Let the driver work until it has nothing to do (a goal reached, a breakpoint hit)."""
    for _ in range(limit):
        if not h.busy:
            return
        h.run_slice()
    raise AssertionError("the driver never stopped")


def frames_until_quiet(h, limit=50):
    """Frames until nothing is left to send (a frame builds what fits its time budget)."""
    out = []
    for _ in range(limit):
        text = h.frames.frame()
        if text is None:
            return out
        out.append(json.loads(text))
    raise AssertionError("frames never stopped")


def test_frames_carry_what_changed_and_stop_when_nothing_did():
    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 5.0)
    frames = frames_until_quiet(h)
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    sent = set().union(*(f["panels"] for f in frames))
    assert {"owners", "nodes", "queue-replicaset", "workers-replicaset"} <= sent
    assert frames[0]["canvas"]["tr"] and frames[0]["rows"]["trace"]
    assert h.frames.frame() is None  # nothing moved
    run_until(h, 5.5)
    later = frames_until_quiet(h)
    assert "owners" not in set().union(*(f["panels"] for f in later))  # no pod changed state


def test_an_open_pod_is_a_live_panel_rebuilt_when_a_record_touches_that_pod():
    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 5.0)
    names = sorted(p["metadata"]["name"] for p in h.sim.server.objects("pods"))
    pod, other = [name for name in names if name.startswith("web-")][:2]
    assert h.command({"op": "focus", "pod": f"default/{pod}"}, viewer="viewer")["ok"]
    panel = f"pod:default/{pod}"
    first = set().union(*(f["panels"] for f in frames_until_quiet(h)))
    assert panel in first  # just opened: built at once
    # Another pod's crash leaves it alone; this one's crash rebuilds it with its new state.
    h.command({"op": "act", "action": {"podFault": {"name": other, "fault": "crash"}}})
    run_until(h, 6.0)
    assert panel not in set().union(*(f["panels"] for f in frames_until_quiet(h)))
    h.command({"op": "act", "action": {"podFault": {"name": pod, "fault": "crash"}}})
    run_until(h, 12.0)
    assert panel in h.frames.dirty
    # (The frame after a step builds every dirty panel; a running one builds it within its budget.)
    html = json.loads(h.frames.frame(complete=True))["panels"][panel]
    assert "CrashLoopBackOff" in html and f'id="{panel}"' in html
    # Keys left out keep their value; null closes the pod; a bad pod is refused by name.
    h.command({"op": "focus", "keys": [["replicaset", "default/web"]]}, viewer="viewer")
    assert panel in h.frames.focused_panel_ids()
    with pytest.raises(CommandError, match="focus: pod"):
        h.command({"op": "focus", "pod": "no-slash"}, viewer="viewer")
    assert panel in h.frames.focused_panel_ids()
    h.command({"op": "focus", "pod": None}, viewer="viewer")
    assert panel not in h.frames.focused_panel_ids() and h.open_pods == set()


def test_a_frame_builds_only_what_fits_its_time_budget(monkeypatch):
    from dashboard.host import frames as frames_module

    clock = [0.0]

    def perf_counter():  # every reading is 1 ms later: each panel "costs" about 2 ms
        clock[0] += 0.001
        return clock[0]

    monkeypatch.setattr(frames_module.time, "perf_counter", perf_counter)
    h = hosted()
    run_until(h, 5.0)
    first = json.loads(h.frames.frame())
    assert 1 <= len(first["panels"]) <= 3  # 4 ms of work: two or three panels
    left = set(h.frames.dirty)
    assert left  # the rest waits for the next frames ...
    sent = set(first["panels"])
    for _ in range(40):
        text = h.frames.frame()
        if text:
            sent |= set(json.loads(text)["panels"])
    assert left <= sent | set(h.frames.rendered)  # ... and comes


def test_an_urgent_frame_keeps_an_expensive_panel_out_of_the_way_but_not_forever(monkeypatch):
    from dashboard.host import frames as frames_module

    clock = [0.0]
    monkeypatch.setattr(frames_module.time, "perf_counter", lambda: clock[0])
    real_render = frames_module.FrameBuilder._render

    def render(self, panel_id):  # the owners panel costs 30 ms, every other panel 0.5 ms
        clock[0] += 0.030 if panel_id == "owners" else 0.0005
        return real_render(self, panel_id)

    monkeypatch.setattr(frames_module.FrameBuilder, "_render", render)
    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 5.0)
    frames_until_quiet(h)  # every panel built once: the builder knows their costs
    assert h.frames.cost["owners"] >= 0.030
    clock[0] += 10.0  # long enough for every panel to be eligible again
    built = dict(h.frames.built_at)
    h.frames.dirty.add("owners")  # alone: a normal frame would build it first, whatever it costs
    h.frames.frame(urgent=True)
    assert h.frames.built_at["owners"] == built["owners"] and "owners" in h.frames.dirty
    h.frames.dirty.add("queue-replicaset")
    h.frames.frame(urgent=True)
    assert h.frames.built_at["queue-replicaset"] > built["queue-replicaset"]  # what the user waits for
    assert "owners" in h.frames.dirty
    clock[0] += 2.5  # dirty for longer than twice STARVE: even an urgent frame builds it now
    h.frames.frame(urgent=True)
    assert h.frames.built_at["owners"] > built["owners"] and "owners" not in h.frames.dirty
    h.frames.dirty.add("owners")
    clock[0] += 10.0
    h.frames.frame()  # a normal frame builds its first panel whatever it costs
    assert "owners" not in h.frames.dirty


def test_canvas_deltas_grow_with_the_time_between_frames_so_the_pods_keep_up(monkeypatch):
    from dashboard.host import frames as frames_module

    clock = [100.0]
    monkeypatch.setattr(frames_module.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(frames_module, "TRANSITIONS_PER_FRAME", 3)
    monkeypatch.setattr(frames_module, "TRANSITIONS_PER_SECOND", 40)
    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 20.0)
    waiting = len(h.frames.transitions)
    assert waiting > 3 + 10 + 1
    clock[0] += 0.01  # a frame soon after the last carries the per-frame share ...
    first = json.loads(h.frames.frame())["canvas"]
    assert len(first["tr"]) == 3 * 4 and first["behind"] == waiting - 3  # (four integers each)
    clock[0] += 0.25  # ... one a quarter second later, 40/s x 0.25 s
    second = json.loads(h.frames.frame())["canvas"]
    assert len(second["tr"]) == 10 * 4 and second["behind"] == waiting - 13


def test_frames_coalesce_a_burst_into_one_bounded_frame():
    h = hosted()
    run_until(h, 40.0)  # hundreds of records, dozens of transitions
    frame = h.frames.frame()
    assert len(frame) < 100_000
    data = json.loads(frame)
    assert data["rows"]["trace"].count("<tr") <= 100
    assert data.get("skipped", {}).get("trace", 0) > 0


def test_commands_apply_at_the_current_virtual_time():
    h = hosted()
    run_until(h, 12.345)
    result = h.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 6}}})
    assert result["ok"] is True
    assert h.sim.actions[-1]["time"] == 12.345
    assert h.sim.actions[-1]["source"] == "user"


def test_bad_commands_are_refused_and_change_nothing():
    h = hosted()
    run_until(h, 3.0)
    before = (h.sim.now, h.sim.kernel.events, len(h.sim.actions), h.mode)
    for cmd in (
        {"op": "nope"},
        {"op": "__init__"},
        {"op": "run", "speed": 3},
        {"op": "speed", "speed": "fast"},
        {"op": "step", "what": "everything"},
        {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": "many"}}},
        {"op": "act", "action": "scale"},
        {"op": "breakpoint", "do": "add", "spec": {"kind": "dequeue"}},
        {"op": "breakpoint", "do": "remove", "id": 99},
        {"op": "focus", "keys": "default/web"},
        {"op": "orphan", "name": "no-such-pod"},
        {"op": "apply_yaml", "text": "a: [1, 2"},
        {"op": "apply_yaml", "text": "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
        )},  # an alias bomb: 9^9 nodes once expanded
    ):
        with pytest.raises(CommandError):
            h.command(cmd)
    assert (h.sim.now, h.sim.kernel.events, len(h.sim.actions), h.mode) == before


def test_a_breakpoint_pauses_right_after_the_matching_event_and_says_why():
    h = hosted()
    h.command({"op": "breakpoint", "do": "add", "spec": {"kind": "dequeue", "key": "default/web"}})
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert h.mode == "paused"
    assert h.hit["breakpoint"] == 1
    assert "took default/web" in h.hit["detail"]
    last = h.sim.recent[-1]
    assert last["kind"] in ("queue.get", "sync.start") and last.get("key") == "default/web"
    queued_get = [r for r in h.sim.recent if r["kind"] == "queue.get" and r["key"] == "default/web"]
    assert len(queued_get) == 1  # fired once: on the first dequeue, not later ones
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert h.breakpoints.items[0].hits == 2


def test_a_disabled_breakpoint_does_not_fire():
    h = hosted()
    h.command(
        {"op": "breakpoint", "do": "add", "spec": {"kind": "podState", "owner": "ReplicaSet/web", "state": "Ready"}}
    )
    h.command({"op": "breakpoint", "do": "toggle", "id": 1})
    h.command({"op": "step", "what": "timer"})
    drive(h)
    assert h.breakpoints.items[0].hits == 0


def test_breakpoint_before_the_kth_create_stops_with_the_request_unanswered():
    h = hosted()
    h.command({"op": "breakpoint", "do": "add", "spec": {"kind": "podWrite", "verb": "create", "n": 3}})
    h.command({"op": "run", "speed": "max"})
    drive(h)
    record = h.sim.recent[-1]
    assert record["kind"] == "sync.request" and record["n"] == 3
    assert "not yet answered" in h.hit["detail"]


def test_informer_lag_breakpoint():
    h = hosted()
    run_until(h, 5.0)
    h.command(
        {"op": "act", "action": {"watchFault": {"resource": "pods", "fault": "pause", "controller": "replicaset"}}}
    )
    h.command({"op": "breakpoint", "do": "add", "spec": {"kind": "informerLag", "resource": "pods", "above": 2}})
    h.command({"op": "act", "action": {"podFault": {"selector": "app=web", "count": 3, "fault": "delete"}}})
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert h.hit["breakpoint"] == 1
    assert "replicaset/pods is 3 changes behind" in h.hit["detail"]


def test_step_stage_and_step_sync_stop_at_the_next_one():
    h = hosted()
    h.command({"op": "step", "what": "stage"})
    drive(h)
    # The first step: the sync starts and reads the ReplicaSet from the cache (one event).
    assert [r["kind"] for r in list(h.sim.recent)[-2:]] == ["sync.start", "sync.stage"]
    assert h.sim.recent[-1]["stage"] == "get"
    h.command({"op": "step", "what": "stage"})
    drive(h)
    assert h.sim.recent[-1]["stage"] == "expectations"
    h.command({"op": "step", "what": "stage"})
    drive(h)
    assert h.sim.recent[-1]["stage"] == "list"
    key = h.sim.recent[-1]["key"]
    h.command({"op": "step", "what": "sync"})
    drive(h)
    # The same sync, to its end (the worker's Forget and Done run in that event too).
    ends = [r for r in list(h.sim.recent)[-4:] if r["kind"] == "sync.end"]
    assert [r["key"] for r in ends] == [key]
    assert h.hit["why"] == f"end of the sync of {key}"


def test_step_timer_runs_to_the_next_timer_and_step_event_runs_one():
    h = hosted()
    run_until(h, 5.0)
    upcoming = h.sim.upcoming(1)[0]
    h.command({"op": "step", "what": "timer"})
    drive(h)
    assert h.sim.now == upcoming["time"]
    events = h.sim.kernel.events
    h.command({"op": "step", "what": "event"})
    assert h.sim.kernel.events == events + 1


def test_run_until_idle_stops_when_queues_are_empty_and_caches_caught_up():
    h = hosted()
    h.command({"op": "step", "what": "idle"})
    drive(h)
    assert h.hit["why"] == "idle"
    for c in h.sim.controllers.values():
        snap = c.queue.snapshot()
        assert not snap["queue"] and not snap["processing"]
        assert c.pod_informer.lag() == 0


def test_pacing_runs_at_speed_against_the_wall_clock(monkeypatch):
    import dashboard.host.hosted as mod

    wall = [100.0]
    monkeypatch.setattr(mod.time, "perf_counter", lambda: wall[0])
    h = hosted()
    h.command({"op": "run", "speed": 10})
    wall[0] += 0.3
    h.run_slice()
    assert h.sim.now == pytest.approx(3.0)
    wall[0] += 0.0004
    h.run_slice()
    assert h.sim.now == 3.004  # targets are whole milliseconds


def test_a_slice_yields_within_its_budget():
    h = hosted("scale-up-and-down")
    h.command({"op": "run", "speed": "max"})
    import time

    start = time.perf_counter()
    h.run_slice()
    assert time.perf_counter() - start < 0.25  # 10 ms budget, generous for a loaded CI machine


def test_a_callback_that_raises_pauses_the_run_and_the_session_goes_on():
    h = hosted()
    h.sim.kernel.call_later(1.0, lambda: 1 / 0)  # a bug outside any sync or action
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert h.error is None and h.mode == "paused"
    assert h.hit["why"] == "the simulation contained an error (kernel)"
    assert "ZeroDivisionError" in h.hit["detail"]
    assert h.command({"op": "run", "speed": "max"})["ok"] is True


def test_a_host_bug_outside_the_simulation_pauses_it_with_its_error(monkeypatch):
    h = hosted()
    monkeypatch.setattr(h, "_after_event", lambda: 1 / 0)
    h.command({"op": "run", "speed": "max"})
    h.run_slice()
    assert h.error == "ZeroDivisionError: division by zero"
    assert h.mode == "paused" and not h.busy
    with pytest.raises(CommandError):
        h.command({"op": "run"})
    assert json.loads(h.frames.frame())["status"]["error"] == "ZeroDivisionError: division by zero"


def test_a_sync_that_raises_pauses_the_run_and_the_session_goes_on():
    h = hosted()

    async def broken(key, worker=None):
        raise RuntimeError("boom in sync")

    h.sim.controllers["replicaset"].sync_handler = broken
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert h.error is None and h.mode == "paused"
    assert h.hit["why"] == "the simulation contained an error (sync)"
    assert h.hit["detail"] == "RuntimeError: boom in sync"
    assert h.command({"op": "run", "speed": "max"})["ok"] is True  # the user can go on


def test_apply_yaml_refuses_deep_nesting_without_crashing_the_process():
    h = hosted()
    text = "[" * 120_000 + "]" * 120_000  # under the size limit; libyaml's composer would segfault
    with pytest.raises(CommandError, match="nested deeper than 100 levels"):
        h.command({"op": "apply_yaml", "text": text})


def test_apply_yaml_applies_each_document_and_reports_field_errors():
    h = hosted()
    run_until(h, 3.0)
    good = yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "cache", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "cache"}},
                "template": {
                    "metadata": {"labels": {"app": "cache"}},
                    "spec": {"containers": [{"name": "c", "image": "redis"}]},
                },
            },
        }
    )
    bad = good.replace("app: cache\n    spec", "app: other\n    spec").replace("name: cache", "name: broken")
    result = h.command({"op": "apply_yaml", "text": good + "---\n" + bad})
    assert result["ok"] is False
    assert result["results"][0] == {"ok": True, "object": "ReplicaSet/cache"}
    rejected = result["results"][1]
    assert rejected["code"] == 422 and rejected["causes"]
    assert h.sim.server.peek("replicasets", "default", "broken") is None


def test_orphan_relabels_a_pod_and_the_controller_releases_it():
    h = hosted()
    run_until(h, 5.0)
    pod = next(p for p in h.sim.server.objects("pods") if p["metadata"]["labels"].get("app") == "web")
    name = pod["metadata"]["name"]
    assert h.command({"op": "orphan", "name": name})["ok"] is True
    run_until(h, 8.0)
    pod = h.sim.server.peek("pods", "default", name)
    assert not [r for r in pod["metadata"].get("ownerReferences", []) if r.get("controller")]
    h.frames.frame()
    assert h.frames.owners[h.frames.pods[f"default/{name}"][1]] == ""


def ui_session():
    """The demo driven through the host's commands, as the page would."""
    h = hosted()
    c = h.command
    c({"op": "run", "speed": "max"})
    for _ in range(3):
        h.run_slice()
    c({"op": "pause"})
    run_until(h, 3.0)
    c({"op": "step", "what": "event"})
    c({"op": "act", "action": {"config": {"manualWorkers": ["replicaset"]}}})
    c({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 7}}})
    c({"op": "step", "what": "timer"})
    drive(h)
    c({"op": "act", "action": {"sync": {"controller": "replicaset"}}})
    c({"op": "step", "what": "stage"})
    drive(h)
    c(
        {
            "op": "act",
            "action": {"apiFault": {"verb": "create", "resource": "pods", "after": 1, "count": 2, "code": 403}},
        }
    )
    c({"op": "step", "what": "sync"})
    drive(h)
    c(
        {"op": "act", "action": {"sync": {"controller": "replicaset", "key": "default/web"}}}
    ) if "default/web" in h.sim.controllers["replicaset"].queue.snapshot()["queue"] else None
    run_until(h, h.sim.now + 2.0)
    c({"op": "act", "action": {"config": {"manualWorkers": []}}})
    c({"op": "act", "action": {"podFault": {"selector": "app=web", "count": 2, "fault": "crash"}}})
    c({"op": "act", "action": {"watchFault": {"resource": "pods", "fault": "pause"}}})
    run_until(h, h.sim.now + 3.0)
    name = next(
        iter(
            sorted(
                p["metadata"]["name"]
                for p in h.sim.server.objects("pods")
                if p["metadata"]["labels"].get("app") == "api"
            )
        )
    )
    c({"op": "orphan", "name": name})
    c({"op": "act", "action": {"watchFault": {"resource": "pods", "fault": "resume"}}})
    c({"op": "act", "action": {"liftFault": {"apiFault": 1}}})
    c(
        {
            "op": "apply_yaml",
            "text": (
                "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: extra}\nspec:\n  replicas: 2\n"
                "  selector: {app: extra}\n  template:\n    metadata: {labels: {app: extra}}\n"
                "    spec: {containers: [{name: x, image: busybox}]}\n"
            ),
        }
    )
    c({"op": "breakpoint", "do": "add", "spec": {"kind": "syncError"}})
    c({"op": "run", "speed": "max"})
    for _ in range(20):
        h.run_slice()
    c({"op": "pause"})
    c({"op": "act", "action": {"nodeFault": {"name": "node-1", "fault": "down"}}})
    run_until(h, h.sim.now + 50.0)
    return h


def test_an_exported_session_replays_headless_to_the_identical_report(tmp_path):
    h = ui_session()
    assert len(h.sim.actions) >= 12
    assert any("sync" in e["action"] for e in h.sim.actions)
    exported = h.export()
    path = tmp_path / "session.scenario.yaml"
    path.write_text(yaml.safe_dump(exported, sort_keys=False))
    assert load_scenario(path.read_text())  # a valid scenario file
    replay = run_scenario(str(path))
    assert json.dumps(replay) == json.dumps(h.report())


def test_status_says_mode_clock_seed_events_and_the_next_timer():
    h = hosted()
    run_until(h, 2.0)
    status = json.loads(h.frames.frame())["status"]
    assert status["t"] == 2.0 and status["seed"] == 1 and status["events"] == h.sim.kernel.events
    assert status["mode"] == "paused" and status["next"]["t"] > 2.0


def test_step_sync_is_refused_when_only_a_click_could_start_one():
    h = hosted()
    run_until(h, 1.0)
    # Every controller the demo runs (the Deployment controller too) waits for a click.
    every = ["replicaset", "replicationcontroller", "deployment"]
    h.command({"op": "act", "action": {"config": {"manualWorkers": every}}})
    run_until(h, 3.0)
    before = h.sim.now
    with pytest.raises(CommandError, match="sync next"):
        h.command({"op": "step", "what": "sync"})
    assert h.sim.now == before


# -- max, idle and the 30-day bound (issue 19 §2) ----------------------------------------------------
def test_max_on_an_idle_demo_stops_once_the_world_is_at_rest():
    h = hosted()
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert h.mode == "paused" and "idle" in h.hit["why"], h.hit
    assert h.sim.now < 600, h.sim.now  # not 212 days of heartbeats
    assert h.sim.settling() is None and goals.idle(h.sim)


def test_idle_waits_for_pods_still_starting():
    scenario = load_scenario(
        """
name: slow starts
config: {podStartup: 30}
objects:
  - apiVersion: apps/v1
    kind: ReplicaSet
    metadata: {name: web, namespace: default}
    spec:
      replicas: 3
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: app, image: nginx}]}
"""
    )
    h = HostedSimulation("t", Simulation(scenario), name=scenario.name, source="upload")
    run_until(h, 5.0)
    # The controller is done (every create answered), the pods are not.
    assert "starting, becoming ready or stopping" in (h.sim.settling() or "")
    assert not goals.idle(h.sim)
    h.command({"op": "step", "what": "idle"})
    drive(h)
    assert h.sim.now >= 30.0 and h.sim.settling() is None
    ready = [p for p in h.sim.server.objects("pods") if p["status"].get("phase") == "Running"]
    assert ready and all(
        c["status"] == "True" for p in ready for c in p["status"]["conditions"] if c["type"] == "Ready"
    )


def test_a_session_never_runs_past_the_bound_of_a_scenario_until():
    from controlplane.simulation import MAX_SECONDS

    h = hosted()
    with pytest.raises(CommandError, match="at most 2592000"):
        h.command({"op": "step", "what": "to", "t": MAX_SECONDS + 1})
    h.sim.run_until(MAX_SECONDS - 0.5)
    h.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 9}}})
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert h.sim.now == MAX_SECONDS and "30 days" in h.hit["why"], h.hit
    exported = h.export()
    assert exported["until"] <= MAX_SECONDS
    load_scenario(yaml.safe_dump(exported))  # the file format accepts it: the export replays


def test_apply_yaml_refuses_a_typo_with_the_strict_field_error_and_changes_nothing():
    # Issue 19 §5: `replcas: 8` was reported "applied" and scaled the ReplicaSet to 1.
    h = hosted()
    run_until(h, 3.0)
    before = h.sim.server.peek("replicasets", "default", "web")
    text = yaml.safe_dump({**before, "metadata": {"name": "web", "namespace": "default"}, "status": {}})
    typo = text.replace("replicas:", "replcas:", 1).replace("replcas: 4", "replcas: 8")
    assert "replcas: 8" in typo
    answer = h.command({"op": "apply_yaml", "text": typo})
    assert answer["ok"] is False
    assert answer["results"][0]["error"] == (
        'ReplicaSet in version "v1" cannot be handled as a ReplicaSet: '
        'strict decoding error: unknown field "spec.replcas"'
    )
    assert h.sim.server.peek("replicasets", "default", "web") is before


def test_failed_api_calls_and_warning_events_survive_a_busy_frames_cap():
    """A frame shows the newest rows of each log; older failed calls and Warning Events are kept
    before them (what someone debugging looks for), the rest counted as skipped."""
    from dashboard.host.frames import NOTABLE_PER_FRAME, ROWS_PER_FRAME

    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 3.0)
    frames_until_quiet(h)
    h.command({"op": "act", "action": {"apiFault": {"verb": "create", "resource": "pods", "count": 1, "code": 500}}})
    h.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 60}}})
    run_until(h, 12.0)
    frame = json.loads(h.frames.frame())
    api = frame["rows"]["api"]
    assert api.count("<tr") <= ROWS_PER_FRAME + NOTABLE_PER_FRAME
    assert frame["skipped"]["api"] > 0  # a busy frame: most rows were left out ...
    assert 'data-code="500"' in api  # ... not the failed create
    assert "FailedCreate" in frame["rows"]["events"]  # nor its Warning Event


def test_a_reconnecting_viewer_gets_the_newest_rows_in_state_of_each_log():
    """A state carries the newest ROWS_IN_STATE rows of each log (what a page that connects or
    resynchronises starts from), not one frame's worth."""
    from dashboard.host.frames import ROWS_IN_STATE, ROWS_PER_FRAME

    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 40.0)
    frames_until_quiet(h)
    rows = json.loads(h.frames.state())["rows"]
    kept = len(h.frames.trace_rows)
    assert ROWS_PER_FRAME < kept <= ROWS_IN_STATE
    assert rows["trace"].count("<tr") == kept


def test_transitions_go_out_packed_and_come_back_exactly():
    from dashboard.host import frames as frames_module

    h = hosted()
    h.viewers.add("viewer")
    run_until(h, 20.0)
    frames_until_quiet(h)
    state = json.loads(h.frames.state())
    packed = state["canvas"]["tr"]
    assert packed
    assert all(isinstance(n, int) for n in packed) and len(packed) == 4 * h.frames.sent_transitions
    assert unpack_transitions(packed) == h.frames.transitions[: h.frames.sent_transitions]
    # Times in milliseconds and pod ids as differences: shorter even in this small world (early
    # times, small ids); at 10,000 pods a transition is 8-12 characters instead of 20-25.
    plain = json.dumps(h.frames.transitions[: h.frames.sent_transitions], separators=(",", ":"))
    assert len(json.dumps(packed, separators=(",", ":"))) < 0.7 * len(plain)
    sample = [[0.0, 5, 1, 0], [12.5, 3, 2, 4], [12.5, 9, 0, 7], [1234.567, 9, 1, 2]]
    assert frames_module.pack_transitions(sample) == [0, 5, 1, 0, 12500, -2, 2, 4, 0, 6, 0, 7, 1222067, 0, 1, 2]
    assert unpack_transitions(frames_module.pack_transitions(sample)) == sample


# -- steps that cannot reach their goal, and max in front of the scenario's next action (#26 §4) -----
def manual_key_waiting():
    """The demo at rest past its timeline, then web scaled while the replicaset workers are
    manual: default/web sits in the replicaset queue, and only a click would sync it."""
    h = hosted()
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert not h.sim.timeline_pending and goals.idle(h.sim), h.hit
    h.command({"op": "act", "action": {"config": {"manualWorkers": ["replicaset"]}}})
    h.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 7}}})
    run_until(h, h.sim.now + 2.0)
    assert h.sim.controllers["replicaset"].queue.snapshot()["queue"] == ["default/web"]
    return h


@pytest.mark.parametrize("what", ["stage", "sync", "idle"])
def test_a_step_whose_goal_waits_for_a_manual_worker_stops_at_once_and_says_so(what):
    h = manual_key_waiting()
    before = h.sim.now
    h.command({"op": "step", "what": what})
    drive(h)
    assert h.mode == "paused" and h.goal is None
    assert h.sim.now - before < 60, f"ran {h.sim.now - before:.0f} virtual seconds"  # not the hour of heartbeats
    why = h.hit["why"]
    assert "not reached" in why and "default/web waits in the replicaset queue for a manual worker" in why, why
    assert "sync next" in why
    # Synced by hand, the step goes on as before.
    h.command({"op": "act", "action": {"sync": {"controller": "replicaset"}}})
    h.command({"op": "step", "what": "sync"})
    drive(h)
    assert h.hit["why"] == "end of the sync of default/web", h.hit


def test_a_stage_step_in_a_world_where_nothing_will_happen_stops_at_once():
    h = hosted()
    h.command({"op": "run", "speed": "max"})
    drive(h)
    before = h.sim.now
    h.command({"op": "step", "what": "stage"})
    drive(h)
    assert h.sim.now - before < 60, f"ran {h.sim.now - before:.0f} virtual seconds"
    assert "nothing will happen" in h.hit["why"], h.hit


def test_max_runs_on_through_a_quiet_gap_to_the_scenario_own_next_action():
    # The demo is at rest by t~10, its file scales web at t=30 and deletes a legacy pod at t=45:
    # max stopped "idle" in front of them.
    h = hosted()
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert not h.sim.timeline_pending, f"stopped at t={h.sim.now:.3f}: {h.hit['why']}"
    assert h.sim.now > 45 and "idle" in h.hit["why"]
    assert h.sim.server.peek("replicasets", "default", "web")["spec"]["replicas"] == 6


def test_max_stops_at_rest_when_only_a_manual_worker_could_go_on():
    h = manual_key_waiting()
    before = h.sim.now
    h.command({"op": "run", "speed": "max"})
    drive(h)
    assert h.sim.now - before < 60
    assert h.hit["why"].startswith("max: at rest; default/web waits in the replicaset queue"), h.hit


def test_a_stage_step_waits_for_a_periodic_resync_that_will_start_a_sync():
    # v1.5's ReplicationController resyncs every RC every 10 minutes: a stage step from a world at
    # rest reaches the sync that resync starts (within the step's hour), it does not give up.
    scenario = load_file("v15-resync-cadence")
    scenario.config["controllerVersion"] = {**scenario.config["controllerVersion"], "replicationcontroller": "v1.5"}
    h = HostedSimulation("t", Simulation(scenario), name=scenario.name, source="v15-resync-cadence")
    h.command({"op": "run", "speed": "max"})
    drive(h)
    start = h.sim.now
    h.command({"op": "step", "what": "stage"})
    drive(h)
    assert h.hit["why"] == "next sync stage", h.hit
    assert h.sim.now - start <= 600 + 1, h.sim.now - start

"""An embedded kopf operator in the debugger: each handler invocation is a sync (sync.start /
sync.end, controller: the operator's name), the requests it made are caused by it, a step
reaches the next one, a breakpoint fires on a handler, an outcome or a key, and the operator's
pending handlings are read from kopf's progress annotations."""

from __future__ import annotations

import json
import math
import pathlib

import pytest

from controlplane.scenario import load_file
from controlplane.session import views
from controlplane.session.session import Session
from controlplane.stepping import STEPS, Target, step_until
from controlplane.world import Simulation

from .test_operators import RETRYING as OPERATORS_RETRYING
from .test_operators import solo_world

pytest.importorskip("kopf")

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kopf-operator" / "scenario.yaml"

# The retrying module test_operators.py runs (a TemporaryError, then success; a PermanentError),
# and a handler that raises an exception on its first try.
RETRYING = (
    OPERATORS_RETRYING
    + """

@kopf.on.create("pods", id="broken")
def broken(retry, **_):
    if retry == 0:
        raise ValueError("a bug on the first try")
"""
)


def retrying_world(tmp_path: pathlib.Path, until: float = 20) -> Simulation:
    return Simulation(solo_world(tmp_path, "retrying", RETRYING, until))


def test_each_handler_invocation_is_a_sync_with_its_outcome_and_the_requests_it_caused(tmp_path):
    import jsonschema

    records: list[dict] = []
    sim = retrying_world(tmp_path)
    sim.subscribe(lambda r: records.append(dict(r)))
    try:
        sim.run_until(20)
    finally:
        sim.close()
    schema = json.loads((ROOT / "controlplane" / "trace.schema.json").read_text())
    starts = {r["seq"]: r for r in records if r["kind"] == "sync.start" and r["controller"] == "retrying"}
    ends = [r for r in records if r["kind"] == "sync.end" and r["controller"] == "retrying"]
    assert starts and len(ends) == len(starts)
    for end in ends:
        start = starts[end["cause"]]  # each end is caused by its start
        assert start["version"] == "kopf" and start["worker"] is None and start["expectations"] is None
        assert (start["key"], start["handler"], start["retry"]) == (end["key"], end["handler"], end["retry"])
        jsonschema.validate(start, schema)
        jsonschema.validate(end, schema)
    got = {(e["handler"], e["retry"]): e for e in ends}
    temporary = got[("first_later", 0)]
    assert temporary["outcome"] == "temporary" and temporary["delay"] == 3.0
    assert temporary["requeue"] == {"decision": "after", "delay": 3.0}
    assert temporary["error"] == "temporary: TemporaryError: not yet"
    assert got[("first_later", 1)]["outcome"] == "success" and got[("first_later", 1)]["error"] is None
    assert got[("never", 0)]["outcome"] == "permanent" and got[("never", 0)]["requeue"] == {"decision": "none"}
    crash = got[("broken", 0)]
    assert crash["outcome"] == "error" and "ValueError: a bug on the first try" in crash["traceback"]
    assert "def broken" not in crash["traceback"] and "retrying.py" in crash["traceback"]
    # kopf's patch of the successful retry's result is caused by that invocation's sync.start.
    success_start = got[("first_later", 1)]["cause"]
    patches = [
        r
        for r in records
        if r["kind"] == "api.request" and r["verb"] == "patch" and r["client"] == "kopf/retrying"
    ]
    assert any(p["cause"] == success_start for p in patches)
    assert all(p["cause"] in starts for p in patches)


def test_a_sync_step_naming_the_operator_reaches_its_next_handler_invocation():
    sim = Simulation(load_file(str(EXAMPLE)))
    try:
        first = step_until(sim, Target(STEPS["sync"], None, "operator"), 1_000_000)
        assert first is not None and first["kind"] == "sync.end" and first["controller"] == "operator"
        assert first["handler"] == "label_pod" and first["outcome"] == "success"
        second = step_until(sim, Target(STEPS["sync"], None, "operator"), 1_000_000)
        assert second is not None and second["seq"] > first["seq"] and second["controller"] == "operator"
    finally:
        sim.close()


def drive(s: Session, limit: int = 100_000) -> None:
    for _ in range(limit):
        if not s.busy:
            return
        s.advance(math.inf, lambda: False)
    raise AssertionError("the session never stopped")


def test_the_session_steps_handler_by_handler_and_breaks_on_a_handler_outcome(tmp_path):
    s = Session("t", retrying_world(tmp_path, until=60), name="retrying", source="retrying")
    s.start()
    try:
        assert s.command({"op": "step", "what": "sync", "controller": "retrying"})["ok"]
        drive(s)
        assert s.hit is not None and s.hit["detail"].startswith("operator retrying's handler ")
        with pytest.raises(Exception, match="controller names whose next sync"):
            s.command({"op": "step", "what": "stage", "controller": "retrying"})
        with pytest.raises(Exception, match="operator: must be one of this world's operators"):
            s.command({"op": "breakpoint", "do": "add", "spec": {"kind": "handler", "operator": "nope"}})
        with pytest.raises(Exception, match="outcome: must be"):
            s.command({"op": "breakpoint", "do": "add", "spec": {"kind": "handler", "outcome": "maybe"}})
        added = s.command(
            {
                "op": "breakpoint",
                "do": "add",
                "spec": {"kind": "handler", "operator": "retrying", "handler": "first_later", "outcome": "success"},
            }
        )
        assert added["description"] == "operator retrying's handler first_later ends with outcome success"
        s.command({"op": "run", "speed": "max"})
        drive(s)
        assert s.hit is not None and s.hit["breakpoint"] == added["id"]
        assert s.hit["detail"] == "operator retrying's handler first_later on default/solo (retry 1) ended success"
        assert s.sim.now >= 3.0  # the retry came 3 virtual seconds after the TemporaryError
    finally:
        s.sim.close()


def test_the_operator_panel_reads_kopfs_progress_annotations_from_the_store(tmp_path):
    s = Session("t", retrying_world(tmp_path, until=60), name="retrying", source="retrying")
    sim = s.sim
    try:
        sim.run_until(1.0)  # after the first invocations: first_later waits for its retry
        state = views.operators(s)
        [op] = state["operators"]
        assert op["name"] == "retrying" and op["prefix"] == "t.example"
        pending = {(p["key"], p["handler"]): p for p in op["pending"]}
        waiting = pending[("default/solo", "first_later")]
        assert waiting["retries"] == 1 and waiting["delayed"] is not None and waiting["state"] == "delayed"
        assert waiting["message"] == "not yet"
        assert pending[("default/solo", "never")]["state"] == "failed"
        sim.run_until(10.0)
        later = {(p["key"], p["handler"]): p for p in views.operators(s)["operators"][0]["pending"]}
        # Done, kept until every handler of the creation is (broken retries after kopf's 60 s).
        assert later[("default/solo", "first_later")]["state"] == "done"
        assert later[("default/solo", "broken")]["state"] == "delayed"
    finally:
        sim.close()

"""Trace export (controlplane/trace_export.py): JSON lines against their schema, the Perfetto file,
byte-identical exports, streaming."""

import io
import json

import jsonschema
import pytest

from controlplane.runner import run
from controlplane.scenario import load_file
from controlplane.trace_export import SCHEMA_FILE, SCHEMA_VERSION, JsonLinesTrace, PerfettoTrace


def export(name, until=30.0):
    scenario = load_file(name)
    lines, perfetto = io.StringIO(), io.StringIO()
    sinks = [
        JsonLinesTrace(lines, scenario=scenario.name, seed=scenario.seed),
        PerfettoTrace(perfetto, scenario=scenario.name, seed=scenario.seed),
    ]
    result = run(scenario, until=until, sinks=sinks)
    return result, lines.getvalue(), perfetto.getvalue()


@pytest.fixture(scope="module")
def demo():
    return export("demo")


@pytest.fixture(scope="module")
def schema():
    return json.loads(SCHEMA_FILE.read_text())


def test_every_line_validates_against_the_documented_schema(demo, schema):
    _, text, _ = demo
    validator = jsonschema.Draft202012Validator(schema)
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0] == {"schema": "ctrlscope-trace", "version": SCHEMA_VERSION, "scenario": "demo cluster", "seed": 1}
    for line in lines:
        errors = list(validator.iter_errors(line))
        assert errors == [], (line, errors[0].message)
    assert [r["seq"] for r in lines[1:]] == list(range(1, len(lines)))


def test_the_schema_documents_every_record_kind_a_run_emits(schema):
    _, text, _ = export("quota-slow-start", until=40)
    documented = {rule["if"]["properties"]["kind"]["const"] for rule in schema["$defs"]["record"]["allOf"]}
    emitted = {json.loads(line).get("kind") for line in text.splitlines()[1:]}
    assert emitted <= documented
    assert {"sync.requeue", "sync.stage", "pod.transition", "expectations", "action"} <= emitted


def test_a_line_missing_a_required_field_is_refused_by_the_schema(schema):
    record = {"time": 1.0, "seq": 3, "kind": "sync.end", "controller": "replicaset", "key": "default/web"}
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(record))


def test_the_perfetto_file_is_chrome_trace_json_with_the_required_keys(demo):
    _, _, text = demo
    trace = json.loads(text)
    assert trace["displayTimeUnit"] == "ms"
    events = trace["traceEvents"]
    for event in events:
        assert {"ph", "name", "pid", "tid"} <= set(event), event
        if event["ph"] != "M":
            assert isinstance(event["ts"], float | int) and event["ts"] >= 0
    phases = {e["ph"] for e in events}
    assert {"M", "X", "i", "C", "b", "e"} <= phases
    syncs = [e for e in events if e["ph"] == "X"]
    assert all(e["cat"] == "sync" and e["dur"] >= 0 and e["tid"] >= 1 for e in syncs)
    names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert {"controller replicaset", "controller replicationcontroller", "workqueues", "pods"} <= names
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"queue replicaset", "expectations default/web"} <= counters


def test_each_pod_is_an_async_slice_with_its_states_nested_and_every_slice_closed(demo):
    _, _, text = demo
    depth = {}
    for event in json.loads(text)["traceEvents"]:
        if event.get("cat") == "pod":
            depth[event["id"]] = depth.get(event["id"], 0) + (1 if event["ph"] == "b" else -1)
            assert 0 <= depth[event["id"]] <= 2
    assert depth and set(depth.values()) == {0}


def test_the_same_run_exports_byte_identical_files(demo):
    _, lines, perfetto = export("demo")
    assert (lines, perfetto) == demo[1:]


def test_exports_change_nothing_in_the_report(demo):
    result, _, _ = demo
    assert json.dumps(result.report) == json.dumps(run(load_file("demo"), until=30.0).report)


def test_records_are_written_as_they_are_emitted_not_at_the_end():
    scenario = load_file("scale-up-and-down")
    stream = io.StringIO()
    sink = JsonLinesTrace(stream, scenario=scenario.name, seed=0)
    seen = []

    class Probe:
        def write(self, record):
            seen.append(len(stream.getvalue()))

        def close(self, sim):
            pass

    run(scenario, until=20, sinks=[sink, Probe()])
    assert sink.records == len(seen) > 500
    assert seen == sorted(seen) and seen[0] < seen[-1]  # the file grows record by record
    assert not hasattr(sink, "_records")

"""A user's kopf operator inside the simulation (controlplane/operators, docs/operators.md):
examples/kopf-operator/operator.py, unmodified, on virtual time."""

import asyncio
import gc
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import warnings

import pytest

from controlplane.apiserver import http as api_http
from controlplane.kernel import Kernel
from controlplane.operators.loop import SimLoop, SimulationRefused
from controlplane.runner import run
from controlplane.scenario import ScenarioError, load_scenario, parse_scenario
from controlplane.session.timetravel import snapshot
from controlplane.world import Simulation

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kopf-operator"
OPERATOR = str(EXAMPLE / "operator.py")

RS = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a", "image": "x"}]}},
    },
}


def scenario(actions=(), until=30.0, **operator):
    return parse_scenario(
        {
            "seed": 3,
            "operators": [{"module": OPERATOR, "namespaces": ["default"], **operator}],
            "objects": [RS],
            "actions": list(actions),
            "until": until,
        }
    )


def labelled(report):
    return sorted(p["metadata"]["name"] for p in report["objects"]["Pod"] if p["metadata"]["labels"].get("seen-by"))


def kopf_calls(report, agent="kopf/operator"):
    return [(c["verb"], c["name"], c["code"]) for c in report["apiCalls"] if c["client"] == agent]


# -- the example, headless ------------------------------------------------------------------------------
def test_the_example_operator_labels_the_pods_through_the_request_log():
    report = run(scenario()).report
    assert len(labelled(report)) == 3
    calls = kopf_calls(report)
    assert calls[:2] == [("list", None, 200), ("watch", None, 200)]
    assert sorted(name for verb, name, code in calls if verb == "patch" and code == 200) == labelled(report)
    assert "errors" not in report


def test_the_shipped_example_scenario_passes_its_checks(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = run(load_scenario((EXAMPLE / "scenario.yaml").read_text()))
    assert result.checks and not result.failures


def _run_fresh(hash_seed, path, trace):
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "controlplane", "run", str(path), "--trace", str(trace)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr.decode()
    assert b"Task was destroyed" not in out.stderr and b"was never awaited" not in out.stderr
    return out.stdout, hashlib.sha256(trace.read_bytes()).hexdigest()


def test_the_same_scenario_gives_the_same_bytes_under_two_hash_seeds(tmp_path):
    """Two fresh interpreters, two PYTHONHASHSEEDs: the report and the trace are byte-identical
    (kopf's Events and progress annotations carry virtual time, its order does not depend on
    string hashes), through API errors, a dropped watch and a crash and restart."""
    path = tmp_path / "op.yaml"
    data = {
        "seed": 5,
        "operators": [{"module": OPERATOR, "namespaces": ["default"]}],
        "objects": [RS],
        "actions": [
            {"at": 0, "apiFault": {"verb": "patch", "resource": "pods", "code": 500, "count": 2, "client": "kopf"}},
            {"at": 10, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 6}},
            {"at": 15, "watchFault": {"resource": "pods", "fault": "drop", "client": "kopf"}},
            {"at": 20, "controllerFault": {"operator": "operator", "fault": "restart"}},
            {"at": 20, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 8}},
        ],
        "until": 40,
    }
    path.write_text(json.dumps(data))
    first, first_trace = _run_fresh(0, path, tmp_path / "a.jsonl")
    second, second_trace = _run_fresh(4242, path, tmp_path / "b.jsonl")
    assert first == second
    assert first_trace == second_trace
    report = json.loads(first)
    assert len(labelled(report)) == 8
    assert [code for verb, _, code in kopf_calls(report) if verb == "patch"].count(500) == 2


MULTI = """
import kopf


@kopf.on.startup()
def configure(settings, **_):
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="m.example")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="m.example")


@kopf.on.create("pods")
def pod_created(patch, **_):
    patch.metadata.labels["seen"] = "pod"


@kopf.on.create("replicasets")
def rs_created(patch, **_):
    patch.metadata.labels["seen"] = "rs"


@kopf.on.event("nodes")
def node_event(**_):
    pass


@kopf.timer("replicationcontrollers", interval=7)
def tick(**_):
    pass
"""


def test_an_operator_of_several_resources_in_several_namespaces_is_the_same_under_two_hash_seeds(tmp_path):
    """kopf keeps what it watches in sets of string-hashed values: its watchers start in a sorted
    order here (controlplane.operators.shims), not in the sets' order."""
    module = tmp_path / "multi.py"
    module.write_text(MULTI)
    rs = [{**RS, "metadata": {"name": "web", "namespace": ns}} for ns in ("default", "other")]
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in ("other", "third")]
    data = {
        "seed": 2,
        "operators": [{"module": str(module), "namespaces": ["default", "other", "third"]}],
        "objects": [*namespaces, *rs],
        "until": 20,
    }
    path = tmp_path / "multi.yaml"
    path.write_text(json.dumps(data))
    first, first_trace = _run_fresh(0, path, tmp_path / "a.jsonl")
    second, second_trace = _run_fresh(3, path, tmp_path / "b.jsonl")
    assert (first, first_trace) == (second, second_trace)
    report = json.loads(first)
    watched = {(c["resource"], c["namespace"]) for c in report["apiCalls"] if c["verb"] == "watch"}
    assert {("pods", "third"), ("replicasets", "other"), ("nodes", None)} <= watched
    assert {p["metadata"]["labels"].get("seen") for p in report["objects"]["Pod"]} == {"pod"}


# -- faults aimed at it ------------------------------------------------------------------------------------
def test_an_api_fault_aimed_at_the_operators_client_fails_only_its_requests_and_it_retries():
    fault = {"verb": "patch", "resource": "pods", "code": 500, "count": 3, "client": "kopf/operator"}
    report = run(scenario([{"at": 0, "apiFault": fault}])).report
    patches = [(name, code) for verb, name, code in kopf_calls(report) if verb == "patch"]
    assert [code for _, code in patches[:3]] == [500, 500, 500]
    assert len(labelled(report)) == 3
    assert all(c["code"] != 500 for c in report["apiCalls"] if not c["client"].startswith("kopf"))


def test_a_dropped_watch_makes_the_operator_relist_and_catch_up():
    actions = [
        {"at": 5, "watchFault": {"resource": "pods", "fault": "drop", "client": "kopf"}},
        {"at": 6, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}},
    ]
    report = run(scenario(actions)).report
    verbs = [verb for verb, _, _ in kopf_calls(report)]
    assert verbs.count("list") == 2  # the first list, and the relist after the 410
    assert len(labelled(report)) == 5


def test_a_paused_watch_leaves_new_pods_unlabelled_until_it_is_resumed():
    paused = [
        {"at": 5, "watchFault": {"resource": "pods", "fault": "pause", "client": "kopf"}},
        {"at": 6, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}},
    ]
    assert len(labelled(run(scenario(paused)).report)) == 3
    resumed = [*paused, {"at": 20, "watchFault": {"resource": "pods", "fault": "resume", "client": "kopf"}}]
    assert len(labelled(run(scenario(resumed)).report)) == 5


def test_its_user_agent_is_the_one_the_scenario_gives():
    report = run(scenario(userAgent="labeller/1.0")).report
    assert kopf_calls(report, "labeller/1.0")[:1] == [("list", None, 200)]
    assert kopf_calls(report) == []


# -- bad operators ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("operator", "message"),
    [
        ({"module": "no/such/operator.py"}, "operators[0].module: no such file"),
        ({"module": "operator.txt"}, "operators[0].module: must be the path of a Python file"),
        ({"module": 3}, "operators[0].module: must be a string"),
        ({"module": OPERATOR, "namespaces": "default"}, "operators[0].namespaces: must be a list"),
        ({"module": OPERATOR, "namespaces": ["Not_A_Label"]}, "operators[0].namespaces[0]: must be a namespace name"),
        ({"module": OPERATOR, "userAgent": ""}, "operators[0].userAgent: must be 1 to"),
        ({"module": OPERATOR, "settings": {"watching": 5}}, "operators[0].settings.watching: must be a mapping"),
        ({"module": OPERATOR, "settings": {"watching": {"x": {"a": 1}}}}, "operators[0].settings.watching.x: must be"),
        ({"module": OPERATOR, "settings": {"batching": {"batch_window": float("nan")}}}, "batch_window"),
        ({"module": OPERATOR, "replicas": 2}, "operators[0].replicas: unknown key"),
    ],
)
def test_a_bad_operator_entry_is_a_scenario_error_naming_it(operator, message):
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_scenario({"operators": [operator]})


def test_two_operators_may_not_share_a_user_agent_or_a_name():
    with pytest.raises(ScenarioError, match=r"operators\[1\]\.userAgent: 'kopf/operator' is another operator's"):
        parse_scenario({"operators": [{"module": OPERATOR}, {"module": OPERATOR}]})
    with pytest.raises(ScenarioError, match=r"operators\[1\]\.module: another operator's module is also called"):
        parse_scenario({"operators": [{"module": OPERATOR}, {"module": OPERATOR, "userAgent": "other/1"}]})


def test_a_module_that_fails_to_import_is_a_scenario_error_naming_it(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import kopf\nraise RuntimeError('no config here')\n")
    sim = Simulation(parse_scenario({"operators": [{"module": str(broken)}]}))
    with pytest.raises(ScenarioError, match=r"operators\[0\]\.module: broken.py could not be imported: RuntimeError"):
        sim.start()
    sim.close()


def test_an_unknown_kopf_setting_is_a_scenario_error_naming_it():
    sim = Simulation(scenario(settings={"watching": {"no_such_knob": 1}}))
    with pytest.raises(ScenarioError, match=r"operators\[0\]\.settings\.watching\.no_such_knob"):
        sim.start()
    sim.close()


def test_the_cli_refuses_a_bad_operator_with_one_line_and_exit_code_2(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps({"operators": [{"module": "missing.py"}]}))
    out = subprocess.run(
        [sys.executable, "-m", "controlplane", "run", str(path)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [out.stderr.strip()]
    assert "operators[0].module: no such file" in out.stderr


# -- the world's end and time travel -------------------------------------------------------------------
def test_the_world_ends_the_operator_cleanly(recwarn):
    gc.collect()  # what earlier tests dropped (their worlds' unstarted kernel tasks) warns now, not below
    recwarn.clear()
    sim = Simulation(scenario())
    sim.run_until(10)
    loop = sim.operators.operators[0].loop
    sim.close()
    gc.collect()
    assert loop.is_closed()
    assert asyncio.all_tasks(loop) == set()
    assert sim.operators.errors == []
    assert not [str(w.message) for w in recwarn if "destroyed" in str(w.message) or "never awaited" in str(w.message)]
    assert asyncio._get_running_loop() is None
    sim.close()  # idempotent


def test_a_world_with_an_operator_cannot_be_snapshotted_and_says_why():
    sim = Simulation(scenario())
    sim.run_until(5)
    try:
        assert not snapshot.quiescent(sim.kernel)  # the keyframe seeker never takes one
        with pytest.raises(snapshot.SnapshotError, match="embedded operator cannot be snapshotted"):
            snapshot.dumps(sim)
    finally:
        sim.close()
    assert sim.kernel.guests == 0


def test_an_exported_session_keeps_its_operators():
    sim = Simulation(scenario())
    sim.run_until(2)
    try:
        exported = sim.export_scenario()
        assert exported["operators"] == [{"module": OPERATOR, "namespaces": ["default"]}]
        assert parse_scenario(exported).operators == exported["operators"]
    finally:
        sim.close()


# -- the loop ------------------------------------------------------------------------------------------
def test_the_loop_runs_on_the_kernels_clock_one_entry_per_step():
    kernel = Kernel(1)
    loop = SimLoop(kernel)
    seen = []

    async def sleeper():
        seen.append(loop.time())
        await asyncio.sleep(2.5)
        seen.append((loop.time(), asyncio.get_running_loop() is loop))
        return "done"

    task = loop.create_task(sleeper())
    kernel.run_until(10)
    assert task.result() == "done"
    assert seen == [0.0, (2.5, True)]
    assert kernel.now == 10
    assert asyncio._get_running_loop() is None  # put back after every step
    loop.close()


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda loop: loop.getaddrinfo("example.com", 443), "getaddrinfo('example.com', 443)"),
        (lambda loop: loop.create_connection(asyncio.Protocol, "example.com", 80), "create_connection('example.com'"),
        (lambda loop: loop.sock_connect(None, ("1.2.3.4", 80)), "sock_connect"),
        (lambda loop: loop.create_unix_connection(asyncio.Protocol, "/var/run/docker.sock"), "create_unix_connection"),
    ],
)
def test_network_calls_are_refused_naming_the_call(call, named):
    kernel = Kernel(1)
    loop = SimLoop(kernel)
    task = loop.create_task(call(loop))
    kernel.run_until(1)
    with pytest.raises(SimulationRefused, match=named.replace("(", r"\(").replace(")", r"\)")):
        task.result()
    loop.close()


def test_executors_run_inline_and_threads_cannot_call_in():
    kernel = Kernel(1)
    loop = SimLoop(kernel)
    import threading

    async def handler():
        return await loop.run_in_executor(None, threading.get_ident)

    task = loop.create_task(handler())
    kernel.run_until(1)
    assert task.result() == threading.get_ident()
    with pytest.raises(SimulationRefused, match="call_soon_threadsafe"):
        loop._write_to_self()
    loop.close()


def test_inside_a_step_the_clock_and_randomness_are_the_worlds():
    import random
    import time
    import uuid

    from controlplane.operators.shims import StepShims

    def draws(seed):
        kernel = Kernel(seed)
        loop = SimLoop(kernel)
        loop.step_hooks.append(StepShims(loop, f"seed-{seed}"))
        got = []

        async def user_code():
            await asyncio.sleep(1.25)
            got.extend([time.time(), time.monotonic(), random.random(), str(uuid.uuid4()), os.urandom(4).hex()])

        loop.create_task(user_code())
        state = random.getstate()
        kernel.run_until(2)
        assert random.getstate() == state  # the host's random is untouched
        loop.close()
        return got

    first, again = draws(1), draws(1)
    assert first == again
    assert first[1] == 1.25
    assert first[0] == pytest.approx(1767225601.25)  # 2026-01-01T00:00:01.25Z
    assert draws(2)[2:] != first[2:]
    assert time.time() > 1_700_000_000 and time.monotonic() != 1.25  # the host's again


def test_the_dashboard_and_the_operator_share_one_http_mapping():
    """The one mapping of a path to its target, as both doors use it."""
    target = api_http.resource_target("", ["namespaces", "default", "pods", "web-1", "status"])
    assert (target.info.plural, target.namespace, target.name, target.subresource) == (
        "pods",
        "default",
        "web-1",
        "status",
    )
    with pytest.raises(api_http.HttpFailure) as caught:
        api_http.patch_type({"content-type": "text/plain"})
    assert caught.value.code == 415


def test_no_unhandled_warning_is_left_by_a_run():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(scenario(until=5))
        gc.collect()
    assert not [w for w in caught if "Task" in str(w.message) or "coroutine" in str(w.message)]


SOLO_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "solo", "namespace": "default"},
    "spec": {"containers": [{"name": "a", "image": "x"}]},
}


def solo_world(tmp_path, name, text, until):
    """A scenario of one pod (`solo`) and one operator: the module `text` written as `name`.py."""
    module = tmp_path / f"{name}.py"
    module.write_text(text)
    return parse_scenario({"operators": [{"module": str(module)}], "objects": [SOLO_POD], "until": until})


# -- handlers in the trace --------------------------------------------------------------------------------
RETRYING = """
import kopf


@kopf.on.startup()
def configure(settings, **_):
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="t.example")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="t.example")


@kopf.on.create("pods")
def first_later(retry, patch, **_):
    if retry == 0:
        raise kopf.TemporaryError("not yet", delay=3)
    patch.metadata.labels["handled"] = "yes"


@kopf.on.create("pods", id="never")
def never(**_):
    raise kopf.PermanentError("no")
"""


def test_each_handler_invocation_is_a_trace_record_and_a_delayed_retry_waits_virtual_seconds(tmp_path):
    import jsonschema

    records = []
    sim = Simulation(solo_world(tmp_path, "retrying", RETRYING, 20))
    sim.subscribe(lambda r: records.append(dict(r)) if r["kind"] == "operator.handler" else None)
    try:
        sim.run_until(20)
        pod_now = sim.server.peek("pods", "default", "solo")
    finally:
        sim.close()
    got = [(r["handler"], r["retry"], r["outcome"], r["delay"], r["time"]) for r in records]
    first = [g for g in got if g[0] == "first_later"]
    assert [g[:4] for g in first] == [("first_later", 0, "temporary", 3.0), ("first_later", 1, "success", None)]
    assert 3.0 <= first[1][4] - first[0][4] < 3.1  # virtual seconds, as asked: kopf's clock is the world's
    assert ("never", 0, "permanent", None) in [g[:4] for g in got]
    assert all(r["key"] == "default/solo" and r["operator"] == "retrying" for r in records)
    assert pod_now["metadata"]["labels"]["handled"] == "yes"
    schema = json.loads((ROOT / "controlplane" / "trace.schema.json").read_text())
    for record in records:
        jsonschema.validate(record, schema)


def test_a_world_stepped_from_inside_another_asyncio_loop_keeps_the_operator_to_itself():
    """The dashboard steps worlds from its own asyncio loop: the operator's steps put that loop
    back, and its async generators are its loop's, not the outer one's (no errors when either
    loop ends)."""
    outer_errors = []

    async def dashboard():
        outer = asyncio.get_running_loop()
        outer.set_exception_handler(lambda loop, context: outer_errors.append(context))
        outer_hooks = sys.get_asyncgen_hooks()
        sim = Simulation(scenario())
        try:
            sim.run_until(10)
            assert asyncio.get_running_loop() is outer
            assert sys.get_asyncgen_hooks() == outer_hooks
            assert len(labelled(sim.report())) == 3
            assert not outer._asyncgens  # none of kopf's watch generators
        finally:
            sim.close()
        return sim.operators.errors

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert asyncio.run(dashboard()) == []
        gc.collect()
    assert outer_errors == []
    assert not [w for w in caught if "Task" in str(w.message) or "coroutine" in str(w.message)]


def test_an_event_the_operator_posts_is_in_the_world_with_a_virtual_timestamp(tmp_path):
    text = (
        "import kopf\n\n\n"
        '@kopf.on.create("pods")\n'
        "def announce(body, **_):\n"
        '    kopf.info(body, reason="Seen", message="the operator saw it")\n'
    )
    report = run(solo_world(tmp_path, "announcer", text, 5)).report
    assert ("create", None, 201) in [(v, None, c) for v, _, c in kopf_calls(report, "kopf/announcer")]
    seen = [e for e in report["objects"]["Event"] if e["reason"] == "Seen"]
    assert len(seen) == 1
    assert seen[0]["firstTimestamp"].startswith("2026-01-01T00:00:00.")  # the world's clock, not the host's


def test_a_handler_that_starts_a_thread_is_reported(tmp_path):
    text = (
        "import threading\nimport kopf\n\n\n"
        '@kopf.on.create("pods")\n'
        "def spawn(**_):\n"
        "    event = threading.Event()\n"
        "    threading.Thread(target=event.wait, args=(5,), daemon=True).start()\n"
    )
    report = run(solo_world(tmp_path, "threaded", text, 2)).report
    assert any("starting a thread is refused" in e["error"] for e in report.get("errors", []))


def test_the_door_answers_http_as_the_api_does():
    """aiohttp over the in-memory door, as kopf uses it: discovery (with what kopf waits for),
    Statuses for what the API refuses, and a write in the request log under the User-Agent."""
    import aiohttp

    from controlplane.operators.transport import MAX_CONNECTIONS, Door

    sim = Simulation(parse_scenario({"objects": [RS]}))
    sim.start()
    loop = SimLoop(sim.kernel)
    loop.doors["api"] = Door(sim.kernel, sim._client("door-test/1"), watch_latency=0.0)
    answers = {}

    async def client():
        connector = aiohttp.UnixConnector(path="api")
        async with aiohttp.ClientSession(connector=connector, headers={"User-Agent": "door-test/1"}) as session:

            async def ask(method, path, **kw):
                async with session.request(method, "http://sim" + path, **kw) as response:
                    answers[(method, path, kw.get("headers", {}).get("Content-Type"))] = (
                        response.status,
                        await response.json(),
                    )

            await ask("GET", "/apis")
            await ask("GET", "/apis/apiextensions.k8s.io/v1")
            await ask("GET", "/api/v1/namespaces/default/pods/nope")
            await ask("GET", "/api/v1/nodes/x/y/z")
            await ask(
                "PATCH",
                "/apis/apps/v1/namespaces/default/replicasets/web",
                data=b"{}",
                headers={"Content-Type": "text/plain"},
            )
            await ask(
                "PATCH",
                "/apis/apps/v1/namespaces/default/replicasets/web",
                data=b'{"metadata": {"labels": {"x": "y"}}}',
                headers={"Content-Type": "application/merge-patch+json"},
            )
            await ask("POST", "/api/v1/namespaces/default/pods", data=b"x" * (3 * 1024 * 1024 + 1))

    task = loop.create_task(client())
    sim.kernel.run_until(5)
    task.result()
    loop.close()
    groups = [g["name"] for g in answers[("GET", "/apis", None)][1]["groups"]]
    assert groups == ["apps", "apiextensions.k8s.io"]
    crds = answers[("GET", "/apis/apiextensions.k8s.io/v1", None)][1]["resources"]
    assert [r["name"] for r in crds] == ["customresourcedefinitions"]
    assert answers[("GET", "/api/v1/namespaces/default/pods/nope", None)][0] == 404
    assert answers[("GET", "/api/v1/nodes/x/y/z", None)][1]["reason"] == "NotFound"
    bad = answers[("PATCH", "/apis/apps/v1/namespaces/default/replicasets/web", "text/plain")]
    assert (bad[0], bad[1]["reason"]) == (415, "UnsupportedMediaType")
    ok = answers[("PATCH", "/apis/apps/v1/namespaces/default/replicasets/web", "application/merge-patch+json")]
    assert (ok[0], ok[1]["metadata"]["labels"]["x"]) == (200, "y")
    assert answers[("POST", "/api/v1/namespaces/default/pods", None)][0] == 413
    logged = [(c["client"], c["verb"], c["code"]) for c in sim.server.requests if c["client"] == "door-test/1"]
    assert logged == [("door-test/1", "get", 404), ("door-test/1", "patch", 200)]
    assert MAX_CONNECTIONS >= 16


def test_a_handler_record_reads_in_words_in_the_trace_view():
    from controlplane.causes import describe, trace_row

    record = {
        "seq": 9,
        "time": 1.0,
        "cause": 3,
        "kind": "operator.handler",
        "operator": "operator",
        "key": "default/web-1",
        "handler": "label_pod",
        "retry": 1,
        "started": 1.0,
        "outcome": "temporary",
        "delay": 3.0,
        "error": "TemporaryError: not yet",
    }
    assert describe(record) == (
        "operator operator's handler label_pod on default/web-1 (retry 1): temporary error, retried in 3.0 s "
        "(TemporaryError: not yet)"
    )
    assert (trace_row(record)["controller"], trace_row(record)["subject"]) == ("operator", "default/web-1")


# -- the operator crashes and restarts --------------------------------------------------------------------
def test_a_restarted_operator_forgets_everything_but_what_it_wrote_and_carries_on():
    """`controllerFault {operator, fault: restart}`: its connections end, its memory goes, its
    module is imported afresh; it relists, finds its progress in the pods' annotations (nothing
    to redo for the pods it labelled) and labels the pods created after."""
    actions = [
        {"at": 5, "controllerFault": {"operator": "operator", "fault": "restart"}},
        {"at": 5, "scale": {"kind": "ReplicaSet", "name": "web", "replicas": 5}},
    ]
    records = []
    sim = Simulation(scenario(actions))
    sim.subscribe(lambda r: records.append(dict(r)) if r["kind"] in ("controller.restart", "action") else None)
    try:
        sim.run_until(30)
        report = sim.report()
    finally:
        sim.close()
    assert len(labelled(report)) == 5
    verbs = [verb for verb, _, _ in kopf_calls(report)]
    assert verbs.count("list") == 2 and verbs.count("watch") == 2  # the first start, then the restart's
    patches = [name for verb, name, code in kopf_calls(report) if verb == "patch" and code == 200]
    assert len(patches) == 5  # the three labelled before the crash are not handled again
    assert {"controller": "operator", "reason": "fault"}.items() <= next(
        r for r in records if r["kind"] == "controller.restart"
    ).items()
    assert "errors" not in report


def test_a_restart_of_an_operator_the_world_does_not_have_fails_as_an_action():
    with pytest.raises(ScenarioError, match=r"actions\[0\]\.controllerFault\.operator: must be an operator's name"):
        parse_scenario({"actions": [{"at": 1, "controllerFault": {"operator": "a b", "fault": "restart"}}]})
    sim = Simulation(scenario())
    try:
        sim.run_until(1)
        result = sim.apply({"controllerFault": {"operator": "nobody", "fault": "restart"}})
    finally:
        sim.close()
    assert result["ok"] is False and "operator nobody is not running" in result["error"]

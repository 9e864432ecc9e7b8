"""The Client: token bucket (client-go flowcontrol), request latency, answers through the kernel."""

import pytest

from controlplane.apiserver import ApiError, Client
from tests.controlplane.test_apiserver import make_server, pod_manifest


def run(kernel, coro):
    task = kernel.spawn(coro, "test")
    kernel.run()
    return task.result()


def test_the_31st_call_in_one_instant_is_sent_50_ms_later():
    kernel, server = make_server()
    client = Client(server, kernel, "replicaset-controller", qps=20.0, burst=30, latency=0.0)
    for i in range(31):
        kernel.spawn(client.get("namespaces", None, "default"), f"get-{i}")
    kernel.run()
    times = [r["time"] for r in server.requests]
    assert times[:30] == [0.0] * 30
    assert times[30] == pytest.approx(0.05)


def test_the_bucket_refills_at_qps():
    kernel, server = make_server()
    client = Client(server, kernel, "c", qps=20.0, burst=30, latency=0.0)
    for i in range(32):
        kernel.spawn(client.get("namespaces", None, "default"), f"get-{i}")
    kernel.run()
    assert [r["time"] for r in server.requests][30:] == pytest.approx([0.05, 0.10])


def test_no_qps_means_no_client_side_limit():
    kernel, server = make_server()
    client = Client(server, kernel, "c", qps=None, latency=0.0)
    for i in range(100):
        kernel.spawn(client.get("namespaces", None, "default"), f"get-{i}")
    kernel.run()
    assert {r["time"] for r in server.requests} == {0.0}


def test_qps_can_change_at_run_time():
    kernel, server = make_server()
    client = Client(server, kernel, "c", qps=1.0, burst=1, latency=0.0)
    for i in range(2):
        kernel.spawn(client.get("namespaces", None, "default"), f"get-{i}")
    kernel.run()
    client.qps = 10.0
    kernel.spawn(client.get("namespaces", None, "default"), "later")
    kernel.run()
    assert [r["time"] for r in server.requests] == pytest.approx([0.0, 1.0, 1.1])


def test_the_answer_arrives_after_the_latency_and_the_request_records_the_send_time():
    kernel, server = make_server()
    client = Client(server, kernel, "kubelet", latency=0.005)
    seen = []

    async def call():
        pod = await client.create("pods", "default", pod_manifest())
        seen.append((kernel.now, pod["metadata"]["name"]))

    kernel.spawn(call(), "call")
    kernel.advance(0.004)
    assert server.count("pods") == 0
    kernel.run()
    assert seen == [(0.005, "web-1")]
    assert server.requests[-1] == {
        "time": 0.0,
        "client": "kubelet",
        "verb": "create",
        "resource": "pods",
        "namespace": "default",
        "name": "web-1",
        "code": 201,
    }


def test_latency_hooks_add_to_the_latency():
    kernel, server = make_server()
    server.latency_hooks.append(lambda req: 1.0 if req.verb == "get" else 0.0)
    client = Client(server, kernel, "c", latency=0.005)
    done = []

    async def call():
        await client.get("namespaces", None, "default")
        done.append(kernel.now)

    kernel.spawn(call(), "call")
    kernel.run()
    assert done == [pytest.approx(1.005)]


def test_errors_reach_the_caller_as_api_errors():
    kernel, server = make_server()
    client = Client(server, kernel, "c")

    async def call():
        try:
            await client.get("pods", "default", "missing")
        except ApiError as err:
            return err.code
        return None

    assert run(kernel, call()) == 404
    assert server.requests[-1]["code"] == 404


def test_client_methods_mirror_the_server_verbs():
    kernel, server = make_server()
    client = Client(server, kernel, "c", latency=0.0)

    async def script():
        await client.create("pods", "default", pod_manifest())
        await client.patch("pods", "default", "web-1", {"metadata": {"labels": {"a": "b"}}})
        listed = await client.list("pods", "default", label_selector="a=b")
        await client.delete("pods", "default", "web-1", grace_period_seconds=0)
        return [p["metadata"]["name"] for p in listed["items"]]

    assert run(kernel, script()) == ["web-1"]
    assert [(r["verb"], r["code"]) for r in server.requests] == [
        ("create", 201),
        ("patch", 200),
        ("list", 200),
        ("delete", 200),
    ]
    assert {r["client"] for r in server.requests} == {"c"}


def test_a_client_watch_is_recorded_with_its_user_agent():
    _, server = make_server()
    client = Client(server, server.kernel, "replicaset-controller")
    client.watch("pods", latency=0.05)
    assert server.requests[-1]["client"] == "replicaset-controller"
    assert server.watches_for("pods")[0].latency == 0.05

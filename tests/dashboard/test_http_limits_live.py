"""What a connection can make a real Daphne hold (dashboard.http_limits): a request whose headers
never finish is answered 408 and closed, at most so many connections wait for their headers,
and a body over the limit is refused as it arrives, not after it was received and queued whole.

Against `python -m dashboard.serve` and plain `daphne`, with the header timeout made small."""

from __future__ import annotations

import socket
import threading
import time

import psutil
import pytest

from .live_server import SERVERS, live_server

SECRET = "http-limits-token-0123456789"
WAIT = 60.0  # generous: how long a closed connection may take to say so on a busy machine


def _server_process(port: int) -> psutil.Process:
    for child in psutil.Process().children(recursive=True):
        if f"-p {port} " in " ".join(child.cmdline()) + " ":
            return child
    raise AssertionError(f"no server process on port {port}")


def _read_to_close(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a reset counts as a close)."""
    sock.settimeout(WAIT)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


@pytest.fixture(params=list(SERVERS.values()), ids=list(SERVERS))
def quick_timeout(request, tmp_path):
    with live_server(tmp_path, request.param, SECRET, env={"CTRLSCOPE_HEADER_TIMEOUT": "1"}) as port:
        yield port


def test_a_request_whose_headers_drip_in_is_answered_408_and_closed(quick_timeout):
    """A byte every 0.2 s resets any idle timeout: only a header deadline ends it."""
    sock = socket.create_connection(("127.0.0.1", quick_timeout))
    closed = threading.Event()

    def drip() -> None:
        head = b"GET /sim/demo/status.json HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 10_000
        for byte in head:
            if closed.is_set():
                return
            try:
                sock.send(bytes([byte]))
            except OSError:
                return
            closed.wait(0.2)

    dripping = threading.Thread(target=drip, daemon=True)
    dripping.start()
    try:
        answer = _read_to_close(sock)
    except TimeoutError:
        pytest.fail(f"the server still holds a connection whose headers never finished after {WAIT} s")
    finally:
        closed.set()
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"did not arrive within 1 s" in answer


def test_requests_sent_at_once_are_answered_on_a_kept_connection_and_a_late_next_one_gets_408(quick_timeout):
    with socket.create_connection(("127.0.0.1", quick_timeout)) as sock:
        for _ in range(2):  # keep-alive: the second request on the same connection too
            sock.sendall(b"GET /sim/demo/status.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            sock.settimeout(WAIT)
            head = sock.recv(65536)
            assert head.startswith(b"HTTP/1.1 200 "), head[:200]
        sock.sendall(b"GET /sim/demo/status.json HTTP/1.1\r\n")  # a third begins, never ends
        try:
            answer = _read_to_close(sock)
        except TimeoutError:
            pytest.fail("a kept-alive connection holds a half-sent request")
    assert b"HTTP/1.1 408 " in answer, answer[-300:]  # (after whatever was left of the second answer)


def test_past_the_cap_the_connection_waiting_longest_for_its_headers_is_closed(tmp_path):
    env = {"CTRLSCOPE_HEADER_TIMEOUT": "3600", "CTRLSCOPE_MAX_UNFINISHED": "5"}
    with live_server(tmp_path, SERVERS["dashboard.serve"], SECRET, env=env) as port:
        first = socket.create_connection(("127.0.0.1", port))
        first.sendall(b"GET / HTTP/1.1\r\n")  # and never more
        server = _server_process(port)
        deadline = time.monotonic() + WAIT
        while not any(c.laddr.port == port and c.status == "ESTABLISHED" for c in server.net_connections()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        others = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
        try:
            answer = _read_to_close(first)
        except TimeoutError:
            pytest.fail("six connections wait for their headers and none was closed")
        finally:
            for sock in [first, *others]:
                sock.close()
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        import requests

        assert requests.get(f"http://127.0.0.1:{port}/sim/demo/status.json", timeout=WAIT).status_code == 200


def test_a_declared_oversized_body_is_refused_before_it_is_sent(quick_timeout):
    with socket.create_connection(("127.0.0.1", quick_timeout)) as sock:
        sock.sendall(
            b"POST /sim/demo/k8s/api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 524288000\r\n\r\n"
        )
        try:
            answer = _read_to_close(sock)
        except TimeoutError:
            pytest.fail("a 500 MiB declared body got no answer before it was sent")
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"100 Continue" not in answer
    assert b"larger than the limit of 4194304 bytes" in answer


def test_a_chunked_oversized_body_is_refused_as_it_arrives_and_costs_no_memory(quick_timeout):
    """64 MiB chunked (no declared length): the server answers 413 once 4 MiB passed, and its
    memory does not grow by the body's size (before: Daphne queued all of it in memory)."""
    port = quick_timeout
    server = _server_process(port)
    before = server.memory_info().rss
    peak = [before]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            peak[0] = max(peak[0], server.memory_info().rss)
            sampling.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    sock = socket.create_connection(("127.0.0.1", port))
    chunk = b"%x\r\n" % (1 << 20) + b"x" * (1 << 20) + b"\r\n"

    def send() -> None:
        try:
            sock.sendall(
                b"POST /sim/demo/k8s/api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            for _ in range(64):
                sock.sendall(chunk)
            sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # refused and closed while sending: what is tested

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        answer = _read_to_close(sock)
    finally:
        sock.close()
        sender.join(WAIT)
        sampling.set()
        sampler.join()
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    grown = peak[0] - before
    assert grown < 32 * 2**20, f"the server's memory grew by {grown / 2**20:.0f} MiB for a refused 64 MiB body"

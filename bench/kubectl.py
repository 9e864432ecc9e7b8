"""Benchmark: the real kubectl against a live ctrlscope server.

1. `kubectl get pods -A` (a Table, paged by kubectl's `limit=500`) over N pods (default 10,000):
   wall seconds of the whole command, best and median of `--runs` runs with a warm discovery cache.
2. The delay from a pod's creation by the ReplicaSet controller (simulation at 1x) to its line in
   `kubectl get pods -w`: a scale-up by one is sent (a raw HTTP PATCH, so kubectl's own start-up is
   not counted) at wall time T; the controller's create request is answered at virtual time v
   after the scale's virtual time s; the watch line is read at wall time L. The delay is
   `(L - T) - (v - s)`: the wall time the line took beyond the virtual time the simulation needed.
3. What watching clients cost a churning simulation: the N-pod simulation, paused, is scaled down
   by `--churn` pods and run to `--window` virtual seconds later at full speed, then scaled back up
   and run again; each such step is timed (wall seconds from the scale to the paused clock at its
   target). Steps alternate in pairs (down, up) between no watcher and `--watchers` clients each
   watching every pod (`/api/v1/pods?watch=true` from the current resourceVersion, one socket
   each, read and counted by threads of this process); the slowdown is the median watched step over the
   median unwatched one, minus one.

Prints one JSON line with the figures and the machine and interpreter.

Usage: .venv/bin/python bench/kubectl.py [--pods 10000] [--runs 5] [--samples 10]
       [--watchers 20] [--churn 500] [--window 30] [--pairs 3] [--no-watch] [--no-get] [--no-churn]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import requests
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOKEN = "bench-token-0123456789"  # at least 16 characters (settings refuses a weak token)
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


def world(pods: int, nodes: int) -> dict:
    return {
        "name": "kubectl bench",
        "seed": 1,
        "config": {"nodes": nodes, "podStartup": 0.5, "kubeApiQPS": -1, "kubeletQPS": -1, "schedulerQPS": -1},
        "objects": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": "big", "namespace": "default"},
                "spec": {
                    "replicas": pods,
                    "selector": {"matchLabels": {"app": "big"}},
                    "template": {
                        "metadata": {"labels": {"app": "big"}},
                        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
                    },
                },
            }
        ],
        "until": 36000,
    }


class Server:
    def __init__(self, tmp: pathlib.Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "CTRLSCOPE_DB_PATH": str(tmp / "db.sqlite3"),
            "CTRLSCOPE_STATE_DIR": str(tmp / "state"),
            "CTRLSCOPE_TLS_PORT": "0",  # plain http only: no second port (http + 443) to collide
            "CTRLSCOPE_TOKEN": TOKEN,
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        }
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--no-input"],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
        )
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dashboard.serve",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "dashboard.asgi:application",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(self.url + "/version", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.session = requests.Session()
        self.session.get(f"{self.url}/?token={TOKEN}", timeout=10)

    def start(self, scenario: dict) -> str:
        page = self.session.get(f"{self.url}/sim/new", timeout=10).text
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
        answer = self.session.post(
            f"{self.url}/sim/new",
            data={"csrfmiddlewaretoken": csrf, "run": "1"},
            files={"file": ("w.yaml", yaml.safe_dump(scenario), "application/yaml")},
            headers={"Referer": self.url + "/", "Origin": self.url},
            allow_redirects=False,
            timeout=60,
        )
        return re.search(r"/sim/([^/]+)/", answer.headers["Location"])[1]

    def command(self, sim_id: str, cmd: dict) -> None:
        """One host command through the dashboard's websocket, as the page sends it."""
        import websocket

        ws = websocket.create_connection(
            f"ws://127.0.0.1:{self.port}/ws/sim/{sim_id}/?token={TOKEN}", origin=self.url, timeout=30
        )
        try:
            ws.send(json.dumps({"type": "cmd", "id": 1, "cmd": cmd}))
            while True:
                message = _ws_message(ws)
                if message.get("type") == "reply":
                    return
        finally:
            ws.close()

    def api(self, sim_id: str) -> str:
        return f"{self.url}/sim/{sim_id}/k8s/token/{TOKEN}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


def _ws_message(ws) -> dict:
    """One message of the dashboard's websocket: a long one arrives as `{"type": "parts", "n": N}`
    and N raw slices (dashboard.consumers.send_text)."""
    text = ws.recv()
    message = json.loads(text) if isinstance(text, str) and text.startswith("{") else {}
    if message.get("type") == "parts":
        message = json.loads("".join(ws.recv() for _ in range(int(message["n"]))))
    return message


def kubeconfig(path: pathlib.Path, server: str) -> None:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
                "current-context": "c",
            }
        )
    )


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


TABLE_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def time_get_pods(env: dict, runs: int, *flags: str) -> tuple[list[float], int]:
    """Wall seconds of `runs` runs of `kubectl get pods -A` (after one that fills the discovery
    cache), and the rows the last one printed."""
    times, rows = [], 0
    for _ in range(runs + 1):
        start = time.perf_counter()
        out = subprocess.run(
            [KUBECTL, "get", "pods", "-A", *flags], env=env, capture_output=True, text=True, check=True
        )
        times.append(time.perf_counter() - start)
        rows = out.stdout.count("\n") - 1
    return times[1:], rows


class Replay:
    """kubectl's floor: a trivial threaded HTTP/1.1 server in this process that forwards each new
    request (path, query, Accept) once to the live server and answers every repeat from the bytes
    it kept. After a warm-up run every answer of `kubectl get pods -A` (each page, its continue
    token) is served as stored bytes: what is left is kubectl's own cost and the loopback."""

    def __init__(self, upstream: str) -> None:
        import http.server

        cache: dict[tuple[str, str], tuple[int, str, bytes]] = {}
        session = requests.Session()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                accept = self.headers.get("Accept", "")
                key = (self.path, accept)
                if key not in cache:
                    answer = session.get(upstream + self.path, headers={"Accept": accept}, timeout=60)
                    cache[key] = (answer.status_code, answer.headers.get("Content-Type", ""), answer.content)
                code, content_type, body = cache[key]
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Viewer:
    """A dashboard page looking at the simulation (its websocket, frames read as they come), so the
    host builds frames of it while kubectl lists."""

    def __init__(self, server: Server, sim_id: str) -> None:
        import websocket

        self.ws = websocket.create_connection(
            f"ws://127.0.0.1:{server.port}/ws/sim/{sim_id}/?token={TOKEN}", origin=server.url, timeout=60
        )
        self.messages = 0
        self.stopped = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with contextlib.suppress(Exception):
            while not self.stopped:
                _ws_message(self.ws)
                self.messages += 1

    def close(self) -> int:
        self.stopped = True
        with contextlib.suppress(Exception):
            self.ws.close()
        self.thread.join(timeout=10)
        return self.messages


def time_pages(session: requests.Session, api: str, runs: int) -> list[float]:
    """The server's own share: wall seconds to fetch every page kubectl fetches (same Accept, the
    same `limit=500` and continue tokens, one keep-alive connection), with no client-side
    throttling and no printing."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        token = ""
        while True:
            query = "limit=500" + (f"&continue={token}" if token else "")
            answer = session.get(f"{api}/api/v1/pods?{query}", headers={"Accept": TABLE_ACCEPT}, timeout=60)
            answer.raise_for_status()
            token = answer.json()["metadata"].get("continue", "")
            if not token:
                break
        times.append(time.perf_counter() - start)
    return times


def bench_floor(api: str, env: dict, tmp: pathlib.Path, runs: int) -> dict:
    replay = Replay(api)
    try:
        kubeconfig(tmp / "kc-floor", replay.url)
        subprocess.run(
            [KUBECTL, "get", "pods", "-A"],
            env={**env, "KUBECONFIG": str(tmp / "kc-floor")},
            capture_output=True,
            check=True,
        )  # the pages are fetched and kept
        times, _ = time_get_pods({**env, "KUBECONFIG": str(tmp / "kc-floor")}, runs)
    finally:
        replay.stop()
    return {
        "kubectl_floor_best_s": round(min(times), 3),
        "kubectl_floor_median_s": round(statistics.median(times), 3),
        "kubectl_floor_s": [round(t, 3) for t in times],
    }


def bench_get(server: Server, env: dict, pods: int, runs: int) -> dict:
    sim = server.start(world(pods, max(3, pods // 100)))
    api = server.api(sim)

    def created() -> bool:
        rs = server.session.get(f"{api}/apis/apps/v1/namespaces/default/replicasets/big", timeout=30).json()
        return (rs.get("status") or {}).get("readyReplicas") == pods

    wait_for(created, 900, f"{pods} pods ready")
    time.sleep(2.0)  # the last status updates settle

    def measure() -> tuple[list[float], int]:
        return time_get_pods(env, runs)

    load_before = [round(x, 2) for x in os.getloadavg()]
    running, rows = measure()
    pages = time_pages(server.session, api, runs)
    one_request, _ = time_get_pods(env, runs, "--chunk-size=0")
    viewer = Viewer(server, sim)
    time.sleep(2.0)  # its first state is sent
    try:
        viewed, _ = time_get_pods(env, runs)
        viewed_pages = time_pages(server.session, api, runs)
    finally:
        viewer_messages = viewer.close()
    # Paused, the dashboard builds no frames for this simulation (~0.1 s each at 10,000 pods).
    figures: dict = {}
    try:
        server.command(sim, {"op": "pause"})
        time.sleep(1.0)
        paused, _ = measure()
        figures = {
            "get_pods_paused_best_s": round(min(paused), 3),
            "get_pods_paused_median_s": round(statistics.median(paused), 3),
            "get_pods_paused_s": [round(t, 3) for t in paused],
        }
    except OSError as exc:  # the websocket may refuse a viewer of a 10,000-pod state
        figures = {"pause_failed": str(exc)}
    figures.update(bench_floor(api, env, pathlib.Path(env["TMPDIR"]), runs))
    return {
        **figures,
        "get_pods_rows": rows,
        "get_pods_running_best_s": round(min(running), 3),
        "get_pods_running_median_s": round(statistics.median(running), 3),
        "get_pods_running_s": [round(t, 3) for t in running],
        "pages_unthrottled_best_s": round(min(pages), 3),
        "pages_unthrottled_median_s": round(statistics.median(pages), 3),
        "get_pods_viewer_best_s": round(min(viewed), 3),
        "get_pods_viewer_median_s": round(statistics.median(viewed), 3),
        "get_pods_viewer_s": [round(t, 3) for t in viewed],
        "pages_unthrottled_viewer_best_s": round(min(viewed_pages), 3),
        "pages_unthrottled_viewer_median_s": round(statistics.median(viewed_pages), 3),
        "viewer_messages": viewer_messages,
        "get_pods_chunk0_running_best_s": round(min(one_request), 3),
        "get_pods_chunk0_running_median_s": round(statistics.median(one_request), 3),
        "load_avg_before_get": load_before,
        "load_avg_after_get": [round(x, 2) for x in os.getloadavg()],
    }


def bench_watch(server: Server, env: dict, samples: int) -> dict:
    scenario = world(1, 3)
    scenario["objects"][0]["metadata"]["name"] = "w"
    scenario["objects"][0]["spec"]["selector"]["matchLabels"] = {"app": "w"}
    scenario["objects"][0]["spec"]["template"]["metadata"]["labels"] = {"app": "w"}
    sim = server.start(scenario)
    api = server.api(sim)
    watch = subprocess.Popen(
        [KUBECTL, "get", "pods", "-w", "-l", "app=w", "--no-headers"], env=env, stdout=subprocess.PIPE, text=True
    )
    seen: dict[str, float] = {}

    def read() -> None:
        for line in watch.stdout:
            name = line.split()[0]
            seen.setdefault(name, time.monotonic())

    threading.Thread(target=read, daemon=True).start()
    wait_for(lambda: len(seen) == 1, 30, "the first pod")
    delays = []
    headers = {"Content-Type": "application/merge-patch+json", "User-Agent": "bench"}
    for replicas in range(2, samples + 2):
        time.sleep(0.3)
        before = set(seen)
        sent = time.monotonic()
        server.session.patch(
            f"{api}/apis/apps/v1/namespaces/default/replicasets/w/scale",
            data=json.dumps({"spec": {"replicas": replicas}}),
            headers=headers,
            timeout=10,
        )
        wait_for(lambda: len(seen) > len(before), 10, "the watch line")  # noqa: B023
        name = next(n for n in seen if n not in before)
        report = server.session.get(f"{server.url}/sim/{sim}/report.json", timeout=30).json()
        scale_v = [a["time"] for a in report["actions"] if "request" in a["action"]][-1]
        create_v = next(c["time"] for c in report["apiCalls"] if c["verb"] == "create" and c["name"] == name)
        # The create is answered apiLatency after it was sent: the pod exists from then.
        virtual = create_v + 0.005 - scale_v
        delays.append((seen[name] - sent) - virtual)
    watch.terminate()
    return {
        "watch_delay_median_ms": round(statistics.median(delays) * 1000, 1),
        "watch_delay_max_ms": round(max(delays) * 1000, 1),
        "watch_samples": len(delays),
    }


class Watchers:
    """`count` clients each watching every pod from `resource_version` on a socket of its own,
    reading and counting the bytes as they come (plain HTTP/1.1, chunked; the socket is
    shut down to stop, which also wakes a thread blocked reading)."""

    def __init__(self, api: str, count: int, resource_version: str) -> None:
        parts = urllib.parse.urlsplit(api)
        self.address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.request = (
            f"GET {parts.path}/api/v1/pods?watch=true&resourceVersion={resource_version} HTTP/1.1\r\n"
            f"Host: {self.address[0]}:{self.address[1]}\r\nUser-Agent: bench-watcher\r\n\r\n"
        ).encode()
        self.received = [0] * count
        self.sockets: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._watch, args=(i,), daemon=True) for i in range(count)]
        for thread in self.threads:
            thread.start()

    def _watch(self, i: int) -> None:
        with contextlib.suppress(OSError), socket.create_connection(self.address, timeout=600) as sock:
            self.sockets.append(sock)
            sock.sendall(self.request)
            while chunk := sock.recv(65536):
                self.received[i] += len(chunk)

    def close(self) -> list[int]:
        for sock in list(self.sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self.threads:
            thread.join(timeout=10)
        return self.received


def bench_churn(server: Server, pods: int, watchers: int, churn: int, window: float, pairs: int) -> dict:
    sim = server.start(world(pods, max(3, pods // 100)))
    api = server.api(sim)

    def ready() -> bool:
        rs = server.session.get(f"{api}/apis/apps/v1/namespaces/default/replicasets/big", timeout=30).json()
        return (rs.get("status") or {}).get("readyReplicas") == pods

    wait_for(ready, 900, f"{pods} pods ready")
    server.command(sim, {"op": "pause"})
    time.sleep(1.0)

    def now() -> float:
        return float(server.session.get(f"{server.url}/sim/{sim}/status.json", timeout=30).json()["t"])

    def step(replicas: int) -> float:
        target = round(now() + window, 3)
        start = time.perf_counter()
        scale = {"kind": "ReplicaSet", "name": "big", "replicas": replicas}
        server.command(sim, {"op": "act", "action": {"scale": scale}})
        server.command(sim, {"op": "step", "what": "to", "t": target})
        while now() < target - 1e-6:
            time.sleep(0.05)
        return time.perf_counter() - start

    alone: list[float] = []
    watched: list[float] = []
    received: list[int] = []
    load_before = [round(x, 2) for x in os.getloadavg()]
    for pair in range(2 * pairs):
        watching = pair % 2 == 1
        group = None
        if watching:
            listed = server.session.get(f"{api}/api/v1/pods?limit=1", timeout=30).json()
            group = Watchers(api, watchers, listed["metadata"]["resourceVersion"])
            time.sleep(1.0)  # every watch open
        try:
            for replicas in (pods - churn, pods):
                (watched if watching else alone).append(step(replicas))
        finally:
            if group is not None:
                time.sleep(0.5)  # the last events read
                received.extend(group.close())
    alone_median, watched_median = statistics.median(alone), statistics.median(watched)
    return {
        "churn_pods": churn,
        "churn_window_virtual_s": window,
        "churn_watchers": watchers,
        "churn_step_alone_s": [round(t, 3) for t in alone],
        "churn_step_watched_s": [round(t, 3) for t in watched],
        "churn_step_alone_median_s": round(alone_median, 3),
        "churn_step_watched_median_s": round(watched_median, 3),
        "churn_slowdown_pct": round(100.0 * (watched_median / alone_median - 1.0), 1),
        "churn_watch_bytes_per_watcher": {"min": min(received), "max": max(received)} if received else None,
        "load_avg_before_churn": load_before,
        "load_avg_after_churn": [round(x, 2) for x in os.getloadavg()],
    }


def machine() -> dict:
    model = ""
    with contextlib.suppress(OSError, StopIteration), open("/proc/cpuinfo") as cpuinfo:
        model = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    version = subprocess.run([KUBECTL, "version", "--client"], capture_output=True, text=True).stdout.split("\n")[0]
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "kubectl": version,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--no-watch", action="store_true", help="skip the watch delay")
    parser.add_argument("--no-get", action="store_true", help="skip get pods -A")
    parser.add_argument("--no-churn", action="store_true", help="skip the watchers' cost to a churning simulation")
    parser.add_argument("--watchers", type=int, default=20)
    parser.add_argument("--churn", type=int, default=500, help="pods deleted, then created, per pair of steps")
    parser.add_argument("--window", type=float, default=30.0, help="virtual seconds each step runs")
    parser.add_argument("--pairs", type=int, default=3, help="pairs of steps per condition")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = pathlib.Path(tmp_name)
        server = Server(tmp)
        try:
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin"),
                "HOME": tmp_name,
                "KUBECACHEDIR": str(tmp / "cache"),
                "TMPDIR": tmp_name,
            }
            figures: dict = {"bench": "kubectl", "pods": args.pods}
            watch_env = {**env, "KUBECONFIG": str(tmp / "kc-watch")}
            get_env = {**env, "KUBECONFIG": str(tmp / "kc-get")}
            # The watch delay first, while the server has nothing else to do.
            kubeconfig(tmp / "kc-watch", "placeholder")
            orig = server.start
            sims: list[str] = []

            def start(scenario: dict) -> str:
                sim_id = orig(scenario)
                sims.append(sim_id)
                kubeconfig(tmp / ("kc-watch" if len(sims) == 1 else "kc-get"), server.api(sim_id))
                return sim_id

            server.start = start  # type: ignore[method-assign]
            if args.no_watch:
                sims.append("")  # the next simulation started is the list's
            else:
                figures.update(bench_watch(server, watch_env, args.samples))
            if not args.no_get:
                figures.update(bench_get(server, get_env, args.pods, args.runs))
            if not args.no_churn:
                figures.update(bench_churn(server, args.pods, args.watchers, args.churn, args.window, args.pairs))
            figures.update(machine())
        finally:
            server.stop()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

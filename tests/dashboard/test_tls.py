"""dashboard.tls: the CA and server certificate made on first start and reused; the TLS port's
setting; `python -m dashboard.serve`'s TLS endpoint; `manage.py kubeconfig`'s refusals."""

from __future__ import annotations

import datetime
import ipaddress
import os
import pathlib
import stat
import subprocess
import sys
import threading

import pytest
from cryptography import x509
from twisted.internet.endpoints import _parse

from dashboard import tls
from dashboard.serve import with_tls

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _cert(path: pathlib.Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _names(cert: x509.Certificate) -> set[str]:
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(n) for n in san.get_values_for_type(x509.IPAddress)} | set(san.get_values_for_type(x509.DNSName))


def test_first_start_makes_a_ca_and_a_server_certificate_with_private_keys(tmp_path):
    old = os.umask(0)  # the keys' mode does not depend on the umask
    try:
        files = tls.ensure_server_files(tmp_path / "state", ["ctrlscope.example", "10.1.2.3"])
    finally:
        os.umask(old)
    state = tmp_path / "state"
    for name in ("ca.key", "server.key"):
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600, name
    assert (
        files.cert == state / "server.crt" and files.key == state / "server.key" and files.ca_cert == state / "ca.crt"
    )
    ca, server = _cert(state / "ca.crt"), _cert(state / "server.crt")
    server.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not server.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert _names(server) == {"127.0.0.1", "::1", "localhost", "ctrlscope.example", "10.1.2.3"}
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("10.1.2.3") in san.get_values_for_type(x509.IPAddress)  # an IP SAN, not a DNS name
    assert list(state.glob(".*.tmp")) == []


def test_later_starts_reuse_them(tmp_path):
    state = tmp_path / "state"
    tls.ensure_server_files(state, ["127.0.0.1"])
    before = {p.name: p.read_bytes() for p in state.iterdir()}
    tls.ensure_server_files(state, ["localhost"])
    assert tls.ca_pem(state) == before["ca.crt"]
    assert {p.name: p.read_bytes() for p in state.iterdir()} == before


def test_the_server_certificate_is_remade_by_the_same_ca_for_a_new_host_or_near_its_end(tmp_path, monkeypatch):
    state = tmp_path / "state"
    tls.ensure_server_files(state)
    ca, first = (state / "ca.crt").read_bytes(), (state / "server.crt").read_bytes()
    tls.ensure_server_files(state, ["devbox.local"])
    second = (state / "server.crt").read_bytes()
    assert second != first and (state / "ca.crt").read_bytes() == ca
    assert "devbox.local" in _names(_cert(state / "server.crt"))
    _cert(state / "server.crt").verify_directly_issued_by(_cert(state / "ca.crt"))
    # Less than RENEW_BEFORE left: remade.
    monkeypatch.setattr(tls, "RENEW_BEFORE", datetime.timedelta(days=tls.SERVER_DAYS + 1))
    tls.ensure_server_files(state, ["devbox.local"])
    assert (state / "server.crt").read_bytes() != second and (state / "ca.crt").read_bytes() == ca


def test_a_server_certificate_of_another_ca_or_a_mismatched_key_is_remade(tmp_path):
    state, other = tmp_path / "state", tmp_path / "other"
    tls.ensure_server_files(state)
    tls.ensure_server_files(other)
    (state / "server.crt").write_bytes((other / "server.crt").read_bytes())
    tls.ensure_server_files(state)
    _cert(state / "server.crt").verify_directly_issued_by(_cert(state / "ca.crt"))
    (state / "server.key").write_bytes((other / "server.key").read_bytes())
    tls.ensure_server_files(state)
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key((state / "server.key").read_bytes(), password=None)
    assert key.public_key() == _cert(state / "server.crt").public_key()


def test_processes_starting_at_once_make_one_ca(tmp_path):
    state = tmp_path / "state"
    results: list[bytes] = []
    threads = [threading.Thread(target=lambda: results.append(tls.ca_pem(state))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and len(set(results)) == 1 and results[0] == (state / "ca.crt").read_bytes()


@pytest.mark.parametrize(
    ("value", "http_port", "expected"),
    [("", 8000, 8443), ("", 0, 0), ("", 65400, 0), ("0", 8000, 0), ("9443", 8000, 9443)],
)
def test_the_tls_port(monkeypatch, value, http_port, expected):
    monkeypatch.setenv("CTRLSCOPE_TLS_PORT", value)
    assert tls.tls_port(http_port) == expected


@pytest.mark.parametrize(
    ("value", "problem"), [("x", "not a port number"), ("70000", "not a port"), ("-1", "not a port")]
)
def test_a_bad_tls_port_names_the_variable(monkeypatch, value, problem):
    monkeypatch.setenv("CTRLSCOPE_TLS_PORT", value)
    with pytest.raises(ValueError, match=f"^CTRLSCOPE_TLS_PORT: .*{problem}"):
        tls.tls_port(8000)


def test_the_endpoint_escapes_what_twisted_would_split(tmp_path):
    state = tmp_path / "a:b=c"
    files = tls.ensure_server_files(state)
    args, kwargs = _parse(tls.endpoint("::1", 8443, files))
    assert args == ["ssl"]
    assert kwargs == {"port": "8443", "interface": "::1", "privateKey": str(files.key), "certKey": str(files.cert)}


def test_serve_adds_the_tls_endpoint_unless_told_otherwise(monkeypatch, tmp_path):
    monkeypatch.setattr("dashboard.settings.STATE_DIR", tmp_path / "state")
    monkeypatch.delenv("CTRLSCOPE_TLS_PORT", raising=False)
    monkeypatch.delenv("CTRLSCOPE_HOST", raising=False)
    args = with_tls(["-p", "8100", "dashboard.asgi:application"])
    assert args[:4] == ["-b", "127.0.0.1", "-p", "8100"] and args[4] == "-e"
    assert (
        args[5].startswith("ssl:port=8543:interface=127.0.0.1:privateKey=") and args[-1] == "dashboard.asgi:application"
    )
    assert (tmp_path / "state" / "server.key").exists()
    own = ["-e", "tcp:port=9000", "dashboard.asgi:application"]
    assert with_tls(own) == own
    monkeypatch.setenv("CTRLSCOPE_TLS_PORT", "0")
    assert with_tls(["-p", "8100", "x:app"]) == ["-p", "8100", "x:app"]


def _run(args: list[str], tmp_path: pathlib.Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTRLSCOPE_") and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update(
        CTRLSCOPE_STATE_DIR=str(tmp_path / "state"),
        CTRLSCOPE_DB_PATH=str(tmp_path / "db.sqlite3"),
        CTRLSCOPE_TOKEN="a-token-long-enough-0123",
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        PYTHONPATH=str(ROOT),
        **extra,
    )
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_serve_refuses_a_bad_tls_port_in_one_line(tmp_path):
    result = _run([sys.executable, "-m", "dashboard.serve", "-p", "8100"], tmp_path, CTRLSCOPE_TLS_PORT="eighty")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "ctrlscope: CTRLSCOPE_TLS_PORT: not a port number: 'eighty'\n"


KUBECONFIG = [sys.executable, "manage.py", "kubeconfig"]


@pytest.mark.parametrize(
    ("args", "extra", "problem"),
    [
        (["--server", "http://127.0.0.1:8000"], {}, "--server: the kubeconfig is for the TLS port and needs https://"),
        (["--server", "ftp://x"], {}, "--server: must start with http:// or https://"),
        (["--sim", "Not_An_Id"], {}, "--sim: not a simulation id"),
        ([], {"CTRLSCOPE_TLS_PORT": "0"}, "CTRLSCOPE_TLS_PORT: the server serves no TLS port"),
        ([], {"CTRLSCOPE_TLS_PORT": "99999"}, "CTRLSCOPE_TLS_PORT: 99999 is not a port"),
        ([], {"CTRLSCOPE_PORT": "http"}, "CTRLSCOPE_PORT: not a port number"),
    ],
)
def test_kubeconfig_refuses_bad_input_naming_it(tmp_path, args, extra, problem):
    result = _run([*KUBECONFIG, *args], tmp_path, **extra)
    assert result.returncode == 2 and result.stdout == "", result
    assert problem in result.stderr and "Traceback" not in result.stderr


def test_kubeconfig_without_a_server_running_lists_the_demo(tmp_path):
    import base64

    import yaml

    result = _run(KUBECONFIG, tmp_path, CTRLSCOPE_PORT="8100")  # no database yet: the demo alone
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    assert [c["name"] for c in config["contexts"]] == ["ctrlscope-demo"]
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:8543"
    assert base64.b64decode(cluster["certificate-authority-data"]) == (tmp_path / "state" / "ca.crt").read_bytes()
    old = yaml.safe_load(_run([*KUBECONFIG, "--insecure-path-token", "--sim", "x1"], tmp_path).stdout)
    assert old["clusters"][0]["cluster"] == {
        "server": "http://127.0.0.1:8000/sim/x1/k8s/token/a-token-long-enough-0123"
    }
    assert old["current-context"] == "ctrlscope-x1"

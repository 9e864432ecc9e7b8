"""The Kubernetes API's TLS: a CA and a server certificate of ctrlscope's own, kept beside the token.

client-go sends a kubeconfig user's bearer token only over TLS, so the API is served on a second,
TLS port as well (`python -m dashboard.serve`, `./scripts/run`), and `manage.py kubeconfig`
gives clients the CA to trust (`certificate-authority-data`) and the token as `user.token`.

Guarantees
----------
* On first use the state dir (`CTRLSCOPE_STATE_DIR`, `.ctrlscope/` by default) gets `ca.crt`,
  `ca.key`, `server.crt` and `server.key`: ECDSA P-256 keys, written 0600 (created with that mode,
  never widened), certificates 0644. Later starts reuse them.
* The CA is never replaced once written (a kubeconfig made with it stays valid; delete `ca.key`
  and `ca.crt` to start over). The server certificate is made again, signed by the same CA, when
  it does not name every host asked for (127.0.0.1, ::1, localhost and the configured host), was
  not signed by this CA, or has less than 30 days left.
* Two processes starting at once make one set: creation holds an exclusive `flock` on
  `tls.lock` in the state dir, and every file is written whole (a temporary file renamed).
"""

from __future__ import annotations

import datetime
import fcntl
import ipaddress
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT, CA_KEY = "ca.crt", "ca.key"
SERVER_CERT, SERVER_KEY = "server.crt", "server.key"
DEFAULT_HOSTS = ("127.0.0.1", "::1", "localhost")
CA_DAYS = 3650
SERVER_DAYS = 825  # the longest validity Apple's and browsers' TLS clients accept
RENEW_BEFORE = datetime.timedelta(days=30)
MAX_HOSTS = 16  # names in one certificate (the configured host plus the defaults)


@dataclass(frozen=True)
class ServerFiles:
    cert: Path
    key: Path
    ca_cert: Path


def default_port(http_port: int) -> int:
    """The TLS port when CTRLSCOPE_TLS_PORT does not say: the http port + 443 (8000 -> 8443);
    none (0) beside an ephemeral http port (`-p 0`) or one too high to shift."""
    return http_port + 443 if 0 < http_port <= 65535 - 443 else 0


def tls_port(http_port: int) -> int:
    """CTRLSCOPE_TLS_PORT (0: no TLS port), else `default_port`. ValueError names the variable."""
    raw = os.environ.get("CTRLSCOPE_TLS_PORT", "")
    if raw == "":
        port = default_port(http_port)
    else:
        try:
            port = int(raw)
        except ValueError:
            raise ValueError(f"CTRLSCOPE_TLS_PORT: not a port number: {raw!r}") from None
    if port == 0:
        return 0
    if not 1 <= port <= 65535:
        raise ValueError(f"CTRLSCOPE_TLS_PORT: {port} is not a port (1-65535, or 0 for none)")
    return port


def ca_pem(state_dir: Path) -> bytes:
    """The CA certificate (PEM), made on first use."""
    with _locked(state_dir):
        return _ensure_ca(state_dir)[0].public_bytes(serialization.Encoding.PEM)


def ensure_server_files(state_dir: Path, hosts: Iterable[str] = ()) -> ServerFiles:
    """The server certificate and key for `hosts` (plus the defaults), signed by the CA; made
    or remade as the module docstring says."""
    wanted = _names([*DEFAULT_HOSTS, *hosts])
    with _locked(state_dir):
        ca_cert, ca_key = _ensure_ca(state_dir)
        cert_path, key_path = state_dir / SERVER_CERT, state_dir / SERVER_KEY
        if not _server_still_good(cert_path, key_path, ca_cert, wanted):
            key = ec.generate_private_key(ec.SECP256R1())
            cert = _server_certificate(key, ca_cert, ca_key, wanted)
            _write(key_path, _key_pem(key), 0o600)
            _write(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)
        return ServerFiles(cert_path, key_path, state_dir / CA_CERT)


def endpoint(host: str, port: int, files: ServerFiles) -> str:
    """Daphne's (Twisted's) endpoint description for the TLS port; `:`, `=` and `\\` in the
    values are escaped as Twisted's endpoint parser wants."""

    def quoted(value: str) -> str:
        return value.replace("\\", "\\\\").replace(":", "\\:").replace("=", "\\=")

    key, cert = quoted(str(files.key)), quoted(str(files.cert))
    return f"ssl:port={port}:interface={quoted(host)}:privateKey={key}:certKey={cert}"


# -- making and checking ---------------------------------------------------------------------------
def _names(hosts: Iterable[str]) -> tuple[str, ...]:
    names: list[str] = []
    for host in hosts:
        name = host.strip().strip("[]").lower()
        if not name or name in ("0.0.0.0", "::"):  # a wildcard bind: clients use a real address
            continue
        if name not in names:
            names.append(name)
    if len(names) > MAX_HOSTS:
        raise ValueError(f"CTRLSCOPE_HOST: at most {MAX_HOSTS} names in the server certificate")
    return tuple(names)


def _subject_alt_names(names: Iterable[str]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    for name in names:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            out.append(x509.DNSName(name))
    return out


def _ensure_ca(state_dir: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert_path, key_path = state_dir / CA_CERT, state_dir / CA_KEY
    if cert_path.exists() and key_path.exists():
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{key_path}: not the EC key ctrlscope writes")
        return cert, key
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ctrlscope CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write(key_path, _key_pem(key), 0o600)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return cert, key


def _server_certificate(
    key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    names: tuple[str, ...],
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ctrlscope")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=SERVER_DAYS))
        .add_extension(x509.SubjectAlternativeName(_subject_alt_names(names)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )


def _server_still_good(cert_path: Path, key_path: Path, ca_cert: x509.Certificate, names: tuple[str, ...]) -> bool:
    if not (cert_path.exists() and key_path.exists()):
        return False
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    if key.public_key() != cert.public_key():
        return False
    if cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC) < RENEW_BEFORE:
        return False
    try:
        present = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    return all(name in present for name in _subject_alt_names(names))


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, mode: int) -> None:
    """Whole or not at all: a temporary file created with `mode` (a key is never readable by
    others, not even for a moment), then renamed over `path`."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)  # O_CREAT's mode passes through the umask; this does not widen it
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def _locked(state_dir: Path) -> Iterator[None]:
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(state_dir / "tls.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)

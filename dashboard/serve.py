"""`python -m dashboard.serve [daphne's options]`: Daphne serving ctrlscope, with an access log
that never shows the access token.

Daphne's own access log prints every request's path and query: `/?token=…` (the URL the run
command prints) and `/sim/<id>/k8s/token/<token>/…` (every kubectl request made with the
`--insecure-path-token` kubeconfig; the TLS one sends the token in a header).
`redact_access_logs()` makes Daphne's access log generator write them with `token=` values and
`/token/<…>` segments redacted, as the application decodes them (`dashboard.redact.redact_target`:
`?tok%65n=` is the token too). This command applies it before Daphne starts; `dashboard.asgi`
applies it too when Daphne imports the application, so a plain `daphne dashboard.asgi:application`
is covered as well. Request headers (`Authorization`) are never logged by Daphne; application
logs go through the redacting handler of settings.LOGGING. Without arguments:
`dashboard.asgi:application` on 127.0.0.1:8000.

It also serves the same application over TLS on a second port (`dashboard.tls`: the CA and the
server certificate, made on first start in the state dir): `CTRLSCOPE_TLS_PORT`, by default the
http port + 443 (8443 beside 8000); `CTRLSCOPE_TLS_PORT=0` serves plain http only, and so do
arguments that name their own endpoints (`-e`, `-u`, `--fd`). The certificate names 127.0.0.1,
::1, localhost, the bound host and `CTRLSCOPE_HOST`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from daphne.access import AccessLogGenerator
from daphne.cli import CommandLineInterface

from dashboard.redact import redact_target

APPLICATION = "dashboard.asgi:application"


def redact_access_logs() -> None:
    """Every Daphne access log of this process redacts the token from the paths it writes
    (once; again is a no-op)."""
    if getattr(AccessLogGenerator, "ctrlscope_redacts", False):
        return
    write = AccessLogGenerator.__call__

    def redacting(self: AccessLogGenerator, protocol: str, action: str, details: dict[str, Any]) -> None:
        if "path" in details:
            details = {**details, "path": redact_target(str(details["path"]))}
        write(self, protocol, action, details)

    AccessLogGenerator.__call__ = redacting  # type: ignore[method-assign]
    AccessLogGenerator.ctrlscope_redacts = True  # type: ignore[attr-defined]


def with_tls(args: list[str]) -> list[str]:
    """Daphne's arguments plus the TLS endpoint (`-e ssl:...`), as the module docstring says.
    ValueError names what is wrong (the port variable, the certificate's hosts)."""
    from dashboard import tls
    from dashboard.settings import STATE_DIR

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-b", "--bind", dest="host")
    parser.add_argument("-p", "--port", type=int)
    parser.add_argument("-e", "--endpoint", action="append")
    parser.add_argument("-u", "--unix-socket")
    parser.add_argument("--fd", type=int)
    known, _ = parser.parse_known_args(args)
    if known.endpoint or known.unix_socket or known.fd is not None:
        return args
    host, port = known.host or "127.0.0.1", known.port if known.port is not None else 8000
    secure = tls.tls_port(port)
    if not secure:
        return args
    files = tls.ensure_server_files(STATE_DIR, [host, os.environ.get("CTRLSCOPE_HOST", "")])
    # Daphne listens on -b/-p only when no -e is given: name them again.
    return ["-b", host, "-p", str(port), "-e", tls.endpoint(host, secure, files), *args]


def main(argv: list[str] | None = None) -> None:
    from dashboard.asgi_limits import answer_oversized_websocket_messages
    from dashboard.http_limits import bound_http_connections

    redact_access_logs()
    answer_oversized_websocket_messages()
    bound_http_connections()
    args = list(sys.argv[1:] if argv is None else argv) or ["-b", "127.0.0.1", "-p", "8000", APPLICATION]
    try:
        args = with_tls(args)
    except ValueError as exc:
        sys.stderr.write(f"ctrlscope: {exc}\n")
        raise SystemExit(2) from None
    CommandLineInterface().run(args)


if __name__ == "__main__":
    main()

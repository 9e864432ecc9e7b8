"""`python -m dashboard.serve [daphne's options]`: Daphne serving ctrlscope, with an access log
that never shows the access token.

Daphne's own access log prints every request's path and query: `/?token=…` (the URL the run
command prints) and `/sim/<id>/k8s/token/<token>/…` (every kubectl request, from the kubeconfig).
`redact_access_logs()` makes Daphne's access log generator write them with `token=` values and
`/token/<…>` segments redacted. This command applies it before Daphne starts; `dashboard.asgi`
applies it too when Daphne imports the application, so a plain `daphne dashboard.asgi:application`
is covered as well. Request headers (`Authorization`) are never logged by Daphne; application
logs go through the redacting handler of settings.LOGGING. Without arguments:
`dashboard.asgi:application` on 127.0.0.1:8000.
"""

from __future__ import annotations

import sys
from typing import Any

from daphne.access import AccessLogGenerator
from daphne.cli import CommandLineInterface

from dashboard.redact import redact

APPLICATION = "dashboard.asgi:application"


def redact_access_logs() -> None:
    """Every Daphne access log of this process redacts the token from the paths it writes
    (once; again is a no-op)."""
    if getattr(AccessLogGenerator, "ctrlscope_redacts", False):
        return
    write = AccessLogGenerator.__call__

    def redacting(self: AccessLogGenerator, protocol: str, action: str, details: dict[str, Any]) -> None:
        if "path" in details:
            details = {**details, "path": redact(str(details["path"]))}
        write(self, protocol, action, details)

    AccessLogGenerator.__call__ = redacting  # type: ignore[method-assign]
    AccessLogGenerator.ctrlscope_redacts = True  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> None:
    redact_access_logs()
    args = list(sys.argv[1:] if argv is None else argv)
    CommandLineInterface().run(args or ["-b", "127.0.0.1", "-p", "8000", APPLICATION])


if __name__ == "__main__":
    main()

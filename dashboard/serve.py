"""`python -m dashboard.serve [daphne's options]`: Daphne serving ctrlscope, with an access log
that never shows the access token.

Daphne's own access log prints every request's path and query: `/?token=…` (the URL the run
command prints) and `/sim/<id>/k8s/token/<token>/…` (every kubectl request, from the kubeconfig).
Here the same log is written with `token=` values and `/token/<…>` segments redacted; request
headers (`Authorization`) are never logged by Daphne. Application logs go through the redacting
handler of settings.LOGGING. Without arguments: `dashboard.asgi:application` on 127.0.0.1:8000.
"""

from __future__ import annotations

import sys
from typing import Any

from daphne.access import AccessLogGenerator
from daphne.cli import CommandLineInterface
from daphne.server import Server

from dashboard.redact import redact

APPLICATION = "dashboard.asgi:application"


class RedactingAccessLog(AccessLogGenerator):  # type: ignore[misc]
    def __call__(self, protocol: str, action: str, details: dict[str, Any]) -> None:
        if "path" in details:
            details = {**details, "path": redact(str(details["path"]))}
        super().__call__(protocol, action, details)


class RedactingServer(Server):  # type: ignore[misc]
    def __init__(self, *args: Any, action_logger: Any = None, **kwargs: Any) -> None:
        if isinstance(action_logger, AccessLogGenerator) and not isinstance(action_logger, RedactingAccessLog):
            action_logger = RedactingAccessLog(action_logger.stream)
        super().__init__(*args, action_logger=action_logger, **kwargs)


class ServeCommand(CommandLineInterface):  # type: ignore[misc]
    server_class = RedactingServer


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    ServeCommand().run(args or ["-b", "127.0.0.1", "-p", "8000", APPLICATION])


if __name__ == "__main__":
    main()

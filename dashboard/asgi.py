"""ASGI entry point: pages, the Kubernetes API and websockets in one process.

The host (the running simulations) starts on the first scope, or as soon as Daphne's reactor
runs: Daphne sends no lifespan events, and `./scripts/run` promises a demo already running.
"""

import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from channels.routing import ProtocolTypeRouter, URLRouter
from channels.sessions import CookieMiddleware, SessionMiddleware
from django.core.asgi import get_asgi_application

django_asgi_app = get_asgi_application()

from dashboard.access import InstanceCookiesWebsocket, SameOriginWebsocket  # noqa: E402
from dashboard.asgi_limits import BodyLimit, StartHost, answer_oversized_websocket_messages  # noqa: E402
from dashboard.http_limits import bound_http_connections  # noqa: E402
from dashboard.k8s.api import KubernetesAPI, RefuseWebsocket  # noqa: E402
from dashboard.routing import websocket_urlpatterns  # noqa: E402

application = StartHost(
    ProtocolTypeRouter(
        {
            "http": BodyLimit(KubernetesAPI(django_asgi_app)),
            # Only the dashboard's own pages (or a client that is no browser) may open a websocket.
            # Streams into a pod (exec, attach, port-forward) go nowhere: see RefuseWebsocket.
            # The session comes from this instance's cookie (InstanceCookiesWebsocket).
            "websocket": RefuseWebsocket(
                SameOriginWebsocket(
                    CookieMiddleware(InstanceCookiesWebsocket(SessionMiddleware(URLRouter(websocket_urlpatterns))))
                )
            ),
        }
    )
)


def _start_with_daphne() -> None:
    """Under Daphne, start the host once its reactor (and asyncio loop) runs."""
    if "twisted.internet.reactor" not in sys.modules or "daphne.server" not in sys.modules:
        return
    from twisted.internet import reactor

    from dashboard.instance import exit_if_damaged
    from dashboard.serve import redact_access_logs

    # A damaged database file would answer 500 to every request: one line and exit code 2,
    # now, before Daphne listens.
    exit_if_damaged()

    redact_access_logs()  # a plain `daphne dashboard.asgi:application` never logs the token either
    answer_oversized_websocket_messages()  # nor drops a page over one oversized message
    bound_http_connections()  # nor holds a slow request's socket or an oversized body

    def start() -> None:
        from dashboard.host import ensure_started
        from dashboard.instance import DatabaseInUse, claim_database

        # Once the reactor runs (a process that merely imports this module, a test say, claims
        # nothing), before the first request is served: one server per database.
        try:
            claim_database()
        except DatabaseInUse as exc:
            sys.stderr.write(f"ctrlscope: {exc}\n")
            sys.stderr.flush()
            os._exit(2)  # nothing has started yet: no simulation, no request
        ensure_started()

    reactor.callLater(0, start)  # type: ignore[attr-defined]


_start_with_daphne()

"""`python manage.py kubeconfig [--sim ID] [--server URL] [--insecure-path-token]`: a kubeconfig
for this server.

By default, for the TLS port (`dashboard.tls`): one cluster and one context per running
simulation, both named `ctrlscope-<id>` (the demo's server is the root, `https://127.0.0.1:8443`,
every other one's `https://127.0.0.1:8443/sim/<id>/k8s`), each cluster with
`certificate-authority-data` (ctrlscope's CA, made on first use beside the token), one user
`ctrlscope` whose `token` is the access token: client-go sends it as `Authorization: Bearer`, so
no URL carries it and `kubectl get --raw /metrics` or `kubectl proxy` work as on a cluster. The
current context is `--sim`'s, else the demo's, else the first running one's. The simulation
`--sim` names is listed even when no server runs it yet; without a database (or with no running
simulation) the demo alone is.

`--insecure-path-token` prints the older form for the plain http port: one simulation, the token
in the server URL's path (`http://127.0.0.1:8000/sim/<id>/k8s/token/<token>`), because kubectl
sends no credentials at all over plain http (client-go's clientcmd merges the user's token only for
TLS transports). Its user entry carries the token too, for clients that do send it over http (the
Python client). The context's namespace is `default` in both forms.
"""

from __future__ import annotations

import base64
import os
import re
from typing import Any
from urllib.parse import quote

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from dashboard import tls

SIM_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
DEMO = "demo"
MAX_CONTEXTS = 1000  # running simulations listed (a process hosts at most 20)


def kubeconfig(server: str, sim_id: str, token: str) -> dict[str, Any]:
    """The path-token form (`--insecure-path-token`)."""
    server = server.rstrip("/")
    name = "ctrlscope" if sim_id == DEMO else f"ctrlscope-{sim_id}"
    url = f"{server}/sim/{sim_id}/k8s/token/{quote(token, safe='')}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": "ctrlscope", "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "ctrlscope", "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }


def tls_kubeconfig(server: str, sim_ids: list[str], current: str, ca_pem: bytes, token: str) -> dict[str, Any]:
    """The TLS form: a context per simulation in `sim_ids`, `current` the current one."""
    server = server.rstrip("/")
    ca_data = base64.b64encode(ca_pem).decode("ascii")
    clusters, contexts = [], []
    for sim_id in sim_ids:
        name = f"ctrlscope-{sim_id}"
        # The demo answers at the root as well (dashboard.k8s.api.route): kubectl proxy, which
        # drops the server URL's path unless --append-server-path, reaches it as on a cluster.
        url = server if sim_id == DEMO else f"{server}/sim/{sim_id}/k8s"
        clusters.append({"name": name, "cluster": {"server": url, "certificate-authority-data": ca_data}})
        contexts.append({"name": name, "context": {"cluster": name, "user": "ctrlscope", "namespace": "default"}})
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": [{"name": "ctrlscope", "user": {"token": token}}],
        "contexts": contexts,
        "current-context": f"ctrlscope-{current}",
        "preferences": {},
    }


def running_simulations() -> list[str]:
    """Ids of the simulations some server runs now (the registry's live rows); [] without a database."""
    from dashboard.models import SimulationRecord

    try:
        return list(SimulationRecord.alive().order_by("created").values_list("id", flat=True)[:MAX_CONTEXTS])
    except DatabaseError:  # not migrated yet: no server has run here
        return []


def _default_host() -> str:
    host = os.environ.get("CTRLSCOPE_HOST", "127.0.0.1")
    if host in ("0.0.0.0", "::", ""):  # a wildcard bind: connect to the loopback
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


class Command(BaseCommand):
    help = "Print a kubeconfig for kubectl and the Kubernetes clients: one context per running simulation."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--sim", default=None, help="the current context's simulation id (default: demo)")
        parser.add_argument(
            "--server",
            default=None,
            help="the server's base URL (default https://127.0.0.1:<CTRLSCOPE_TLS_PORT>, "
            "or http://127.0.0.1:<CTRLSCOPE_PORT> with --insecure-path-token)",
        )
        parser.add_argument(
            "--insecure-path-token",
            action="store_true",
            help="the older form for the plain http port: one simulation, the token in the server URL's path",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        sim_id = options["sim"]
        if sim_id is not None and not SIM_ID.match(sim_id):
            raise CommandError(f"--sim: not a simulation id: {sim_id!r}", returncode=2)
        server = options["server"]
        if server is not None and not server.startswith(("http://", "https://")):
            raise CommandError(f"--server: must start with http:// or https:// (got {server!r})", returncode=2)
        token = settings.CTRLSCOPE_TOKEN
        if options["insecure_path_token"]:
            server = server or f"http://{_default_host()}:{os.environ.get('CTRLSCOPE_PORT', '8000')}"
            config = kubeconfig(server, sim_id or DEMO, token)
        else:
            if server is None:
                server = f"https://{_default_host()}:{self._tls_port()}"
            elif not server.startswith("https://"):
                raise CommandError(
                    f"--server: the kubeconfig is for the TLS port and needs https:// (got {server!r}); "
                    "--insecure-path-token makes one for plain http",
                    returncode=2,
                )
            sims = running_simulations()
            current = sim_id or (DEMO if DEMO in sims or not sims else sims[0])
            ordered = [s for s in (DEMO, *sims, current) if s == current or s in sims]
            ordered = list(dict.fromkeys(ordered))  # the demo first, then by start, each once
            config = tls_kubeconfig(server, ordered, current, tls.ca_pem(settings.STATE_DIR), token)
        self.stdout.write(yaml.safe_dump(config, sort_keys=False), ending="")

    @staticmethod
    def _tls_port() -> int:
        raw = os.environ.get("CTRLSCOPE_PORT", "8000")
        if not raw.isdigit() or not 0 <= int(raw) <= 65535:
            raise CommandError(f"CTRLSCOPE_PORT: not a port number: {raw!r}", returncode=2)
        try:
            port = tls.tls_port(int(raw))
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if not port:
            raise CommandError(
                "CTRLSCOPE_TLS_PORT: the server serves no TLS port (0); "
                "--insecure-path-token makes a kubeconfig for plain http",
                returncode=2,
            )
        return port

"""`python manage.py kubeconfig [--sim ID] [--server URL]`: a kubeconfig for this server.

The cluster's server URL is the simulation's prefix with the access token in the path
(`http://127.0.0.1:8000/sim/<id>/k8s/token/<token>`; the demo by default): kubectl sends no
credentials at all over plain http (client-go's clientcmd merges the user's token only for TLS
transports), so a token in the kubeconfig's user alone would never reach the server. The user
entry carries the token too, for clients that do send it (the Python client sends
`Authorization: Bearer` over http). The context's namespace is `default`.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import quote

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

SIM_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def kubeconfig(server: str, sim_id: str, token: str) -> dict[str, Any]:
    server = server.rstrip("/")
    name = "ctrlscope" if sim_id == "demo" else f"ctrlscope-{sim_id}"
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


class Command(BaseCommand):
    help = "Print a kubeconfig for kubectl and the Kubernetes clients (the demo by default)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--sim", default="demo", help="a simulation id (default: demo)")
        default = f"http://{os.environ.get('CTRLSCOPE_HOST', '127.0.0.1')}:{os.environ.get('CTRLSCOPE_PORT', '8000')}"
        parser.add_argument("--server", default=default, help=f"the server's base URL (default {default})")

    def handle(self, *args: Any, **options: Any) -> None:
        sim_id = options["sim"]
        if not SIM_ID.match(sim_id):
            raise CommandError(f"--sim: not a simulation id: {sim_id!r}")
        server = options["server"]
        if not server.startswith(("http://", "https://")):
            raise CommandError(f"--server: must start with http:// or https:// (got {server!r})")
        config = kubeconfig(server, sim_id, settings.CTRLSCOPE_TOKEN)
        self.stdout.write(yaml.safe_dump(config, sort_keys=False), ending="")

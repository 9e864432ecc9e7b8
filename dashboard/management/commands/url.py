"""`python manage.py url [--host H] [--port P]`: the address to open, with the access token."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Print the dashboard's URL with its access token (what ./scripts/run prints)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"http://{options['host']}:{options['port']}/sim/demo/?token={settings.CTRLSCOPE_TOKEN}")

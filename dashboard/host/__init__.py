"""The simulations this process hosts, and the doors to them (see `host.py`)."""

from dashboard.host.host import (
    Damaged,
    Host,
    HostError,
    command_channel,
    ensure_started,
    get_host,
    request,
    request_stream,
    request_watch,
    send_watch_command,
    viewers_group,
    watch_channel,
)
from dashboard.host.reads import Busy, NoAnswer

__all__ = [
    "Busy",
    "Damaged",
    "Host",
    "HostError",
    "NoAnswer",
    "command_channel",
    "ensure_started",
    "get_host",
    "request",
    "request_stream",
    "request_watch",
    "send_watch_command",
    "viewers_group",
    "watch_channel",
]

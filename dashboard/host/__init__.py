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
    viewers_group,
)
from dashboard.host.reads import Busy

__all__ = [
    "Busy",
    "Damaged",
    "Host",
    "HostError",
    "command_channel",
    "ensure_started",
    "get_host",
    "request",
    "request_stream",
    "viewers_group",
]

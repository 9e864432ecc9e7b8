"""The simulations this process hosts, and the doors to them (see `host.py`)."""

from dashboard.host.host import (
    Host,
    HostError,
    command_channel,
    ensure_started,
    get_host,
    request,
    viewers_group,
)

__all__ = ["Host", "HostError", "command_channel", "ensure_started", "get_host", "request", "viewers_group"]

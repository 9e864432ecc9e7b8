"""The simulations this process hosts, and the doors to them (see `host.py`).

The host's ops that need the host itself are served by the modules above it, registered here
(`host.HOST_OPS`): `fork` (`forks.py`) and `pair` (`pairs.py`), so imports run forks, pairs ->
host, never back.
"""

from dashboard.host import forks, pairs
from dashboard.host.host import (
    HOST_OPS,
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

HOST_OPS.update({"fork": forks.op, "pair": pairs.op})

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

"""Every ceiling on input from outside, in one place (documented in docs/scenarios.md, "Limits").

Guarantees
----------
* Every number a scenario file, a dashboard action or an API body can carry into the simulation
  is finite and bounded by a constant here: integers the upstream API types as int32 are int32;
  times and durations are at most `MAX_SECONDS`; counts are at most the ceiling named here.
* Three things a run can grow without any one number being large — pods, nodes and kernel events
  — have a per-run ceiling, `RunLimits`, which whoever *runs* a simulation sets (the headless
  runner's `--max-pods`, `--max-nodes`, `--max-events`; the dashboard's host). A scenario file
  cannot raise them: a file is input, the ceilings protect the machine that runs it.
* Nothing here reads the environment or the clock: the limits are data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

MAX_INT32: Final = 2**31 - 1
MAX_INT64: Final = 2**63 - 1

# -- reading a file ----------------------------------------------------------------------------
MAX_SCENARIO_BYTES: Final = 64 * 1024 * 1024
"""A scenario file (or a YAML text sent by the dashboard) larger than this is refused unread."""
MAX_YAML_DEPTH: Final = 100
"""Nesting of mappings and sequences, aliases counted at the depth they expand to. A manifest
needs about 15; the limit keeps every recursive consumer (merge patches, JSON encoding) safe."""
MAX_YAML_NODES: Final = 2_000_000
"""Scalars, mappings and sequences in a YAML document, each alias counted as the nodes it stands
for: a "billion laughs" alias bomb is refused while it is read, before anything expands it."""
MAX_OBJECTS: Final = 10_000
"""Starting objects in one scenario."""
MAX_ACTIONS: Final = 100_000
"""Actions in one scenario's timeline."""

# -- numbers -----------------------------------------------------------------------------------
MAX_SECONDS: Final = 30 * 24 * 3600.0
"""Virtual seconds: `until`, `--until`, an action's `at`, and every duration (latencies, delays,
grace periods, resync). 30 days of virtual time is far past any controller timeout."""
MAX_HANDLER_SLOWNESS: Final = 3600.0
"""The most `controllerFault {operator, fault: slow, seconds}` charges one handler invocation."""
MIN_RESYNC_PERIOD: Final = 1.0
"""client-go's minimumResyncPeriod: a non-zero informer resync period is at least one second."""
MIN_QPS: Final = 0.01
"""A positive client QPS below this would space requests days apart."""
MAX_QPS: Final = 1_000_000.0
MAX_SEED: Final = MAX_INT64
MAX_WORKERS: Final = 1_000
MAX_NODES: Final = 100_000
"""The most nodes a config may name at all; `RunLimits.nodes` is the (lower) ceiling of a run."""
MAX_LOOKUP_CACHE_SIZE: Final = 1 << 20
"""The most entries of the v1.5 ReplicationManager's lookup cache (`config.lookupCacheSize`)."""
MAX_IMAGE_FAULTS: Final = 100
"""The most patterns of `config.imageFaults`."""
MAX_IMAGE_PATTERN: Final = 256
"""The most characters of one `config.imageFaults` pattern."""

# -- API request bodies ------------------------------------------------------------------------
MAX_CLIENT: Final = 512
"""Characters of a User-Agent kept as a request's client (and of a fault's `client` prefix)."""
MAX_REQUEST_BYTES: Final = 3 * 1024 * 1024
"""kube-apiserver's maxRequestBodyBytes: a larger body is refused with 413."""
MAX_OBJECT_DEPTH: Final = MAX_YAML_DEPTH
"""Nesting of an API body (the YAML limit, for bodies that arrive as Python or JSON data)."""


def nested_deeper_than(value: Any, limit: int = MAX_OBJECT_DEPTH) -> bool:
    """Whether JSON-like data nests deeper than `limit` levels (the value itself is level 1, an
    item of a list or mapping one more), counted without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


@dataclass(frozen=True, slots=True)
class RunLimits:
    """Ceilings on one run, set by whoever runs it (never by the scenario).

    * `pods`: live pods at once. A scenario whose ReplicaSets and ReplicationControllers ask for
      more (each at the largest `replicas` it is ever given, plus bare pods) is refused before it
      starts; at run time (a live scale), pod creates beyond it are refused by the API server
      with 403 "exceeded quota", as a ResourceQuota would, and the controller backs off.
    * `nodes`: simulated nodes (`config.nodes`, also through a `config` action).
    * `events`: kernel events (callbacks) run in all; when reached the simulation halts with a
      message instead of running on (`Simulation.halted`).
    """

    pods: int = 100_000
    nodes: int = 5_000
    events: int = 20_000_000


DEFAULT_RUN_LIMITS: Final = RunLimits()

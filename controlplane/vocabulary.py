"""The words the scenario format, its checks and the world share: the kinds a scenario can name,
the API resource of each, and the error an invalid scenario raises (docs/scenarios.md).

It sits below `controlplane.scenario` (which validates files with it), `controlplane.checks`
(which the scenario calls to validate its `expect:` list) and `controlplane.world`, so that
none of them has to import another for these.
"""

from __future__ import annotations

from typing import Any

from controlplane.controllers.registry import CONTROLLERS


class ScenarioError(ValueError):
    """An invalid scenario: the message is one line naming the field."""


# The kinds a scenario's objects, actions and checks name -> their API resource: the controllers'
# kinds (the registry's, in its order), then the others.
KIND_RESOURCES = {
    **{spec.kind: spec.resource for spec in CONTROLLERS},
    "Pod": "pods",
    "Node": "nodes",
    "Namespace": "namespaces",
    "Event": "events",
}
KINDS = tuple(KIND_RESOURCES)


def type_name(value: Any) -> str:
    """The name of a value's type as a scenario file spells it (in error messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__

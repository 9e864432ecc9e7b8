"""The consistency store (pkg/controller/util/consistency, spec §14, feature gate
`StaleControllerConsistencyReplicaSet`, beta and on in v1.36).

Guarantee: after the controller writes (a pod create, an adopt/release patch, an RS status update),
`ensure_ready(owner)` fails with `ConsistencyError` until every informer store it reads has caught up
with the largest resourceVersion the controller wrote for that owner. The sync is then refused and
the key requeued with rate limiting — the controller never acts on a cache older than its own writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class ConsistencyError(Exception):
    def __init__(self, read_rv: str, wrote_rv: str, group_resource: str) -> None:
        super().__init__(
            f"read version: {read_rv} is not as new as written version: {wrote_rv} for group resource {group_resource}"
        )
        self.read_rv = read_rv
        self.wrote_rv = wrote_rv
        self.group_resource = group_resource


def compare_resource_version(a: str, b: str) -> int:
    """-1, 0, 1 like apimachinery `CompareResourceVersion`; ValueError if either is unparsable."""
    ia, ib = int(a), int(b)
    return (ia > ib) - (ia < ib)


class ConsistencyStore(Protocol):
    def wrote_at(self, owner: str, owner_uid: str, group_resource: str, rv: str) -> None: ...
    def ensure_ready(self, owner: str) -> ConsistencyError | None: ...
    def clear(self, owner: str, owner_uid: str) -> None: ...


class NoopConsistencyStore:
    """The store when the gate is off: always ready."""

    def wrote_at(self, owner: str, owner_uid: str, group_resource: str, rv: str) -> None:
        return None

    def ensure_ready(self, owner: str) -> ConsistencyError | None:
        return None

    def clear(self, owner: str, owner_uid: str) -> None:
        return None

    def snapshot(self) -> dict[str, dict[str, str]]:
        return {}


class RealConsistencyStore:
    """`read_versions` maps a group resource ("pods", "apps/replicasets") to a function returning
    that informer store's last synced resourceVersion ("" when unknown)."""

    def __init__(self, read_versions: dict[str, Callable[[], str]]) -> None:
        self._read_versions = read_versions
        self._records: dict[str, tuple[str, dict[str, str]]] = {}

    def wrote_at(self, owner: str, owner_uid: str, group_resource: str, rv: str) -> None:
        record = self._records.get(owner)
        if record is None or record[0] != owner_uid:
            record = (owner_uid, {})
            self._records[owner] = record
        written = record[1]
        current = written.get(group_resource)
        if current is None:
            written[group_resource] = rv
            return
        try:
            if compare_resource_version(rv, current) > 0:
                written[group_resource] = rv
        except ValueError:
            written[group_resource] = rv  # unparsable: keep the new value, as upstream

    def ensure_ready(self, owner: str) -> ConsistencyError | None:
        record = self._records.get(owner)
        if record is None:
            return None
        for group_resource, wrote_rv in record[1].items():
            read = self._read_versions.get(group_resource)
            read_rv = read() if read is not None else ""
            if not read_rv:
                continue
            try:
                if compare_resource_version(wrote_rv, read_rv) > 0:
                    return ConsistencyError(read_rv, wrote_rv, group_resource)
            except ValueError:
                continue
        del self._records[owner]
        return None

    def clear(self, owner: str, owner_uid: str) -> None:
        record = self._records.get(owner)
        if record is not None and (owner_uid == "" or record[0] == owner_uid):
            del self._records[owner]

    def snapshot(self) -> dict[str, dict[str, str]]:
        return {owner: dict(written) for owner, (_, written) in sorted(self._records.items())}

"""Controller expectations: what a controller waits to observe before it syncs a key again.

Counterpart of `ControllerExpectations` and `UIDTrackingControllerExpectations` in upstream
`pkg/controller/controller_utils.go` (spec §10).

Guarantees
----------
* A record ``{add, del, timestamp}`` per controller key. `set_expectations` replaces the record
  and stamps it with the clock's `now`; `raise_expectations` / `lower_expectations` adjust the
  counts of an existing record (never create one) and leave the timestamp alone. Counts may go
  negative, as upstream's atomic counters do.
* `satisfied_expectations(key)` is True when there is no record, when the record is fulfilled
  (``add <= 0 and del <= 0``) or when it has expired (strictly more than `EXPECTATIONS_TIMEOUT`
  seconds old). With `enabled = False` (the "what-if expectations off" knob) it is always True,
  while the bookkeeping goes on so the UI can still show it.
* The UID-tracking variant remembers which pod keys ("ns/name") it expects to see deleted and
  counts each of them once, so a pod's graceful-deletion update and its final delete event do
  not lower `del` twice.
* Every change emits one trace record of kind ``expectations`` (fields controller, key, op, add,
  del: the counts after the change). Calls that change nothing emit nothing, except that the
  first `satisfied_expectations` call to find an unfulfilled record expired emits op
  ``expired`` (with its `age`): the instant the record stops blocking syncs.
* `satisfied_reason(key)` says, without side effects, which of upstream's cases answers:
  ``fulfilled``, ``expired``, ``noRecord``, ``waiting`` or ``disabled``; the controllers put it in
  their `expectations` sync stage as `why`.

Time is virtual: the clock is anything with a float `.now` (the Kernel is one). Upstream reads
the wall clock here (spec §18); the simulator drives it from the one virtual clock.
"""

from __future__ import annotations

from typing import Any, Protocol

from controlplane.kernel import vtime
from controlplane.trace import NULL_TRACE, Trace

EXPECTATIONS_TIMEOUT = 300.0
"""Seconds after which unmet expectations stop blocking a sync (upstream `ExpectationsTimeout`)."""


class Clock(Protocol):
    now: float


class ControlleeExpectations:
    """The expectations of one controller key. Live: later calls on the store change it."""

    __slots__ = ("add", "dele", "expiry_seen", "key", "timestamp")

    def __init__(self, key: str, add: int, dele: int, timestamp: float) -> None:
        self.key = key
        self.add = add
        self.dele = dele
        self.timestamp = timestamp
        self.expiry_seen = False  # an `expired` record was emitted for this record

    def get_expectations(self) -> tuple[int, int]:
        """``(add, del)``: creations and deletions still expected."""
        return self.add, self.dele

    def fulfilled(self) -> bool:
        return self.add <= 0 and self.dele <= 0

    def expired(self, now: float) -> bool:
        # Written as `now > timestamp + timeout` rather than `now - timestamp > timeout`: a timer
        # set with `kernel.call_later(EXPECTATIONS_TIMEOUT, ...)` fires at exactly
        # `vtime(timestamp + EXPECTATIONS_TIMEOUT)`, and at that instant the record must not yet count
        # as expired (upstream's comparison is strict), whatever float rounding the subtraction
        # would bring.
        return now > vtime(self.timestamp + EXPECTATIONS_TIMEOUT)

    def __repr__(self) -> str:
        return f"<ControlleeExpectations {self.key} add={self.add} del={self.dele} at={self.timestamp}>"


class ControllerExpectations:
    """A store of `ControlleeExpectations` keyed by controller key (upstream's plain variant)."""

    def __init__(self, clock: Clock, *, trace: Trace | None = None, controller: str = "") -> None:
        self.clock = clock
        self.trace = trace if trace is not None else NULL_TRACE
        self.controller = controller
        self.enabled = True
        self._records: dict[str, ControlleeExpectations] = {}

    # -- reading ----------------------------------------------------------------------------
    def get_expectations(self, key: str) -> tuple[ControlleeExpectations | None, bool]:
        record = self._records.get(key)
        return record, record is not None

    def satisfied_reason(self, key: str) -> str:
        """Why `satisfied_expectations(key)` answers as it does at this instant, as upstream's
        `SatisfiedExpectations` logs it: ``fulfilled`` ("Controller expectations fulfilled"),
        ``expired`` ("Controller expectations expired": unfulfilled, older than the timeout),
        ``noRecord`` ("Controller either never recorded expectations, or the ttl expired"),
        ``waiting`` ("Controller still waiting on expectations": not satisfied), or
        ``disabled`` (the what-if that turns expectations off). A pure read: it emits nothing."""
        if not self.enabled:
            return "disabled"
        record = self._records.get(key)
        if record is None:
            return "noRecord"
        if record.fulfilled():
            return "fulfilled"
        return "expired" if record.expired(self.clock.now) else "waiting"

    def satisfied_expectations(self, key: str) -> bool:
        """Whether the controller may sync `key` now (see the module docstring)."""
        if not self.enabled:
            return True
        record = self._records.get(key)
        if record is None:
            return True
        if record.fulfilled():
            return True
        if not record.expired(self.clock.now):
            return False
        # Upstream logs "Controller expectations expired" here: the moment an unfulfilled record
        # stops blocking a sync. The trace says so once per record.
        if not record.expiry_seen:
            record.expiry_seen = True
            if self.trace.enabled:
                self._emit(key, "expired", record.add, record.dele, age=self.clock.now - record.timestamp)
        return True

    def keys(self) -> list[str]:
        """Every key that has a record, sorted."""
        return sorted(self._records)

    def snapshot(self, key: str) -> dict[str, Any] | None:
        """The record of `key` as plain data for the UI and the report; None without a record."""
        record = self._records.get(key)
        if record is None:
            return None
        now = self.clock.now
        return {
            "add": record.add,
            "del": record.dele,
            "timestamp": record.timestamp,
            "age": now - record.timestamp,
            "expired": record.expired(now),
            "fulfilled": record.fulfilled(),
        }

    # -- writing ----------------------------------------------------------------------------
    def set_expectations(self, key: str, add: int, dele: int) -> None:
        """Replace the record of `key` with ``{add, del}`` stamped now."""
        self._set(key, add, dele, "set")

    def expect_creations(self, key: str, adds: int) -> None:
        self._set(key, adds, 0, "set")

    def expect_deletions(self, key: str, dels: int) -> None:
        self._set(key, 0, dels, "expect_deletions")

    def creation_observed(self, key: str) -> None:
        """A pod creation for `key` was observed (or a create failed and will never be)."""
        self._adjust(key, -1, 0, "creation_observed")

    def deletion_observed(self, key: str) -> None:
        self._adjust(key, 0, -1, "deletion_observed")

    def raise_expectations(self, key: str, add: int, dele: int) -> None:
        self._adjust(key, add, dele, "raise")

    def lower_expectations(self, key: str, add: int, dele: int) -> None:
        self._adjust(key, -add, -dele, "lower")

    def delete_expectations(self, key: str) -> None:
        if self._records.pop(key, None) is not None and self.trace.enabled:
            # After a delete there are no expectations, which behaves as add = del = 0.
            self._emit(key, "delete", 0, 0)

    # -- shared with UIDTrackingControllerExpectations ---------------------------------------
    def _set(self, key: str, add: int, dele: int, op: str, **fields: Any) -> None:
        self._records[key] = ControlleeExpectations(key, add, dele, self.clock.now)
        if self.trace.enabled:
            self._emit(key, op, add, dele, **fields)

    def _adjust(self, key: str, add: int, dele: int, op: str, **fields: Any) -> None:
        record = self._records.get(key)
        if record is None:
            # Upstream's Raise/Lower only touch an existing record: observing a pod for a
            # controller that expects nothing is not an expectation.
            return
        record.add += add
        record.dele += dele
        if self.trace.enabled:
            self._emit(key, op, record.add, record.dele, **fields)

    def _emit(self, key: str, op: str, add: int, dele: int, **fields: Any) -> None:
        fields["del"] = dele
        self.trace.emit("expectations", controller=self.controller, key=key, op=op, add=add, **fields)


class UIDTrackingControllerExpectations:
    """Expectations that also remember which pod keys are expected to be deleted.

    Wraps a `ControllerExpectations` (as upstream embeds the interface) and adds one capability:
    `expect_deletions` takes the pod keys and `deletion_observed` takes the pod key, lowering
    `del` only the first time each expected key is seen. Creations are not tracked by key.
    """

    def __init__(self, clock: Clock, *, trace: Trace | None = None, controller: str = "") -> None:
        self._expectations = ControllerExpectations(clock, trace=trace, controller=controller)
        # key -> pod keys still expected to be deleted. A second store beside the counts, as
        # upstream's uidStore: `set_expectations` leaves it alone, `delete_expectations` clears both.
        self._uids: dict[str, set[str]] = {}

    @property
    def clock(self) -> Clock:
        return self._expectations.clock

    @property
    def controller(self) -> str:
        return self._expectations.controller

    @property
    def enabled(self) -> bool:
        return self._expectations.enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        self._expectations.enabled = value

    # -- delegated unchanged ----------------------------------------------------------------
    def get_expectations(self, key: str) -> tuple[ControlleeExpectations | None, bool]:
        return self._expectations.get_expectations(key)

    def satisfied_expectations(self, key: str) -> bool:
        return self._expectations.satisfied_expectations(key)

    def satisfied_reason(self, key: str) -> str:
        return self._expectations.satisfied_reason(key)

    def set_expectations(self, key: str, add: int, dele: int) -> None:
        self._expectations.set_expectations(key, add, dele)

    def expect_creations(self, key: str, adds: int) -> None:
        self._expectations.expect_creations(key, adds)

    def creation_observed(self, key: str) -> None:
        self._expectations.creation_observed(key)

    def raise_expectations(self, key: str, add: int, dele: int) -> None:
        self._expectations.raise_expectations(key, add, dele)

    def lower_expectations(self, key: str, add: int, dele: int) -> None:
        self._expectations.lower_expectations(key, add, dele)

    def keys(self) -> list[str]:
        return self._expectations.keys()

    # -- UID tracking -----------------------------------------------------------------------
    def get_uids(self, key: str) -> set[str] | None:
        """A copy of the pod keys still expected to be deleted for `key`; None if none recorded."""
        uids = self._uids.get(key)
        return None if uids is None else set(uids)

    def expect_deletions(self, key: str, pod_keys: list[str]) -> None:
        """Expect the deletion of exactly these pods; replaces the record (so `add` becomes 0)."""
        expected = set(pod_keys)
        existing = self._uids.get(key)
        # Upstream logs "Clobbering existing delete keys" and carries on; the trace says so.
        clobbered = bool(existing)
        self._uids[key] = expected
        if self._expectations.trace.enabled:
            extra: dict[str, Any] = {"uids": sorted(expected)}
            if clobbered:
                extra["clobbered"] = True
            self._expectations._set(key, 0, len(expected), "expect_deletions", **extra)
        else:
            self._expectations._set(key, 0, len(expected), "expect_deletions")

    def deletion_observed(self, key: str, pod_key: str) -> None:
        """Pod `pod_key` was seen deleted (or terminating). Counted once, and only if expected."""
        uids = self._uids.get(key)
        if uids is None or pod_key not in uids:
            return
        uids.discard(pod_key)
        self._expectations._adjust(key, 0, -1, "deletion_observed", pod=pod_key)

    def delete_expectations(self, key: str) -> None:
        self._expectations.delete_expectations(key)
        self._uids.pop(key, None)

    def snapshot(self, key: str) -> dict[str, Any] | None:
        snap = self._expectations.snapshot(key)
        if snap is not None:
            uids = self._uids.get(key)
            if uids is not None:
                snap["uids"] = sorted(uids)
        return snap

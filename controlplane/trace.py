"""The trace: every internal step of the simulation as one structured record.

A record is a plain dict: ``{"time": <virtual s>, "seq": <n>, "kind": <str>, "cause": <seq |
None>, ...fields}``. `seq` numbers records in emission order, so two records at the same instant
keep their order. The UI and the report draw from records, never from private fields of the core.

Causes
------
`cause` is the `seq` of the record that caused this one, always an earlier record, or None for a
root (the scenario's starting objects, a user's or the scenario's action, a timer nobody caused).
It is set when the record is written, never reconstructed from timing: the kernel carries a
*current cause* through callbacks and tasks like an async context (controlplane.kernel), and
the few points that start a causal step make their record the current cause (`Trace.begin`):

  action                   a root; what the action does (its requests, faults, pod transitions)
                           is caused by it
  api.request              caused by whoever sent it (a sync.request, a kubelet or scheduler step,
                           an action); the server's write, and so the watch event and every
                           informer.deliver / informer.event / pod.transition / node.transition
                           it brings, carry the request's seq (through `revision_cause`)
  api.response             caused by its api.request
  informer.event           the handlers run with it as the current cause: queue.add is caused by it
  queue.get                caused by the queue.add that made the key dirty (or the add_after /
                           add_rate_limited whose timer added it); the worker's step starts here
  sync.start               caused by the queue.get that handed the key out (a kopf handler's: by
                           the step of the operator's loop that ran it, whose cause is the write
                           whose watch event woke it); the requests the handler's worker task
                           sends, kopf's patch of its result included, are caused by it
  sync.stage, sync.end     caused by their sync.start
  sync.request             caused by the stage that issued it; its api.request by it
  event                    caused by the step that recorded it (the api.request answered, a sync)
  expectations, error, controller.*  caused by the current step

Emitting is free when nobody listens: hot paths test ``trace.enabled`` before building fields.

Kinds (the vocabulary; fields after the colon):
  queue.add / queue.get / queue.done: queue, key [, worker], depth (queued items after the step)
  queue.forget: queue, key
  queue.add_after: queue, key, delay          queue.add_rate_limited: queue, key, delay, requeues
  informer.deliver: informer, events, resourceVersion (one watch delivery, a batch)
  informer.event: informer, type (add/update/delete), key [, tombstone]
  informer.relist: informer, reason           informer.synced: informer, items
  watch.fault: resource, fault, informers [, client (a `watchFault {client}`: no informer, the
    external watches whose User-Agent starts with it)]
  api.request: id, client, verb, resource, namespace, name
  api.response: id, code [, reason, fault (the seq of the action.start of the apiFault that
              injected this answer: a side cause, see Causes)]
  expectations: controller, key, op, add, del [, uids, pod, clobbered, age]
              (op: set, expect_deletions, creation_observed, deletion_observed, raise, lower,
              delete, expired)
  sync.start: controller, key, worker, expectations ({add, del} of the key's record, or None)
              [, version (the v1.5 ReplicationManager's: "v1.5" or "v1.5-late"; "kopf" for an
              embedded operator's handler invocation, whose controller is the operator's name, worker
              and expectations None, with handler (kopf's id) and retry)]
  sync.stage: controller, key, worker, stage (consistency, get, expectations, selector, list,
              claim, manage, batch, delete, status, requeue; the v1.5 ReplicationManager's:
              podStoreSynced, get, expectations, list, classify, adopt, release, manage, create,
              delete, status; each version's in controlplane.controllers.stages), and the stage's
              own fields
              (consistency: ready, error, verdict, groupResource, readVersion, wroteVersion;
              batch: size, succeeded, failed, error; create: issued, succeeded, failed, error;
              status: written, status, changed)
  sync.request: controller, key, worker, verb (create/delete), n, pod (the n-th pod write a
              sync issues, before the API server has it)
  sync.end: controller, key, worker, start, error, expectations (after), consistency (ready,
              stale, off, or None), requeue ({decision: rateLimited | after, delay | none |
              immediate (v1.5: re-added while the pod store has not synced)})
              [, a kopf handler's: handler, retry, outcome (success, temporary, permanent, error),
              delay (a TemporaryError's), traceback (an unexpected exception's); its error is
              "<outcome>: <exception>" and requeue kopf's decision (after the delay, none, or
              rateLimited: kopf's backoff)]
  sync.requeue: controller, key, worker, decision (rateLimited), delay, requeues (the worker
              requeued a failed sync's key with the rate limiter; decision dropped, delay None:
              the Deployment controller's handleErr gave the key up after maxRetries requeues)
  controller.restart: controller [, reason (config), previousVersion, version, garbageCollector:
              a config action restarted it with another version or other flags]
  controller.log: controller, level, message (a log line a reader of upstream looks for, e.g.
              v1.5's "user error! more than one replication controller is selecting pods")
  pod.transition: namespace, name, node, owner ("Kind/name" of its controller or None), from, to
  node.transition: name, from, to
  event: component, type, reason, object, message (a Kubernetes Event was recorded)
  action.start: action, source (an action is about to be applied: a root of the causes, and the
              cause of everything the action does; written before it acts)
  action: action, ok, ... (a user or scenario action was applied, with its result; caused by its
              action.start)
  operator.handler: operator, key, handler, retry, started, outcome (success, temporary,
              permanent, error), delay, error (one invocation of an embedded kopf operator's
              handler ended, controlplane.operators.host; `started` is when it began)
  error: where, error [, controller, key, worker | action | task] (something raised where it
              should not have and was contained: `where` is sync (a sync raised: it counts as
              failed and its key is requeued rate-limited), action (an action raised: logged as
              failed), kernel (a scheduled callback or process raised; the rest runs on) or
              limit (a run ceiling was reached: the simulation halts))
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from types import EllipsisType
from typing import Any, Protocol

Record = dict[str, Any]
Subscriber = Callable[[Record], None]

MAX_REVISION_CAUSES = 4_000_000  # revisions whose cause is remembered (8 bytes each); oldest forgotten


class Clock(Protocol):
    now: float


class _Context:
    """Where the current cause lives when the clock is not a Kernel (a test's fake clock)."""

    __slots__ = ("cause",)

    def __init__(self) -> None:
        self.cause: int | None = None


class Trace:
    """Fan-out of records to subscribers. `enabled` is True while anyone subscribes.

    `cause` is the current cause (see the module docstring); it lives on the kernel when the
    clock is one, so that it flows through kernel callbacks and tasks.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._context: Any = clock if hasattr(clock, "cause") else _Context()
        self._subscribers: list[Subscriber] = []
        self.seq = 0
        self.enabled = False
        # The cause of each committed revision (0: none), from `_revision_base` on: a watch
        # event carries its revision, so whoever receives it finds the request that wrote it.
        self._revision_causes = array("q")
        self._revision_base = 0

    @property
    def cause(self) -> int | None:
        return self._context.cause  # type: ignore[no-any-return]

    @cause.setter
    def cause(self, seq: int | None) -> None:
        self._context.cause = seq

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Deliver every later record to `fn`; returns a function that unsubscribes."""
        self._subscribers.append(fn)
        self.enabled = True

        def unsubscribe() -> None:
            if fn in self._subscribers:
                self._subscribers.remove(fn)
            self.enabled = bool(self._subscribers)

        return unsubscribe

    def emit(self, kind: str, cause: int | EllipsisType | None = ..., /, **fields: Any) -> int | None:
        """Record one step; returns its `seq` (None when nobody listens). `cause` defaults to the
        current cause; pass it when the record's cause is known otherwise (a queue item's add)."""
        if not self.enabled:
            return None
        self.seq += 1
        seq = self.seq
        record: Record = {
            "time": self._clock.now,
            "seq": seq,
            "kind": kind,
            "cause": self._context.cause if cause is ... else cause,
        }
        record.update(fields)
        for fn in list(self._subscribers):
            fn(record)
        return seq

    def begin(self, kind: str, cause: int | EllipsisType | None = ..., /, **fields: Any) -> int | None:
        """`emit`, and the record becomes the current cause: a causal step starts here (an action
        applied, a request handled, a queue item taken). Returns the seq."""
        seq = self.emit(kind, cause, **fields)
        if seq is not None:
            self._context.cause = seq
        return seq

    # -- revisions --------------------------------------------------------------------------
    def note_revision(self, revision: int) -> None:
        """The current cause wrote `revision` (the API server calls this on each commit while
        the trace is on)."""
        causes = self._revision_causes
        if not causes:
            self._revision_base = revision
        index = revision - self._revision_base
        if index < len(causes):
            return  # not a new revision (cannot happen with one server; kept total)
        if index > len(causes):
            causes.extend([0] * (index - len(causes)))  # revisions committed while nobody traced
        causes.append(self._context.cause or 0)
        if len(causes) > MAX_REVISION_CAUSES:
            drop = MAX_REVISION_CAUSES // 4
            del causes[:drop]
            self._revision_base += drop

    def revision_cause(self, resource_version: Any) -> int | None:
        """The seq of the record that caused the write of `resource_version` (an int or the
        string of `metadata.resourceVersion`), or None when unknown (forgotten, or not traced)."""
        try:
            index = int(resource_version) - self._revision_base
        except (TypeError, ValueError):
            return None
        causes = self._revision_causes
        if 0 <= index < len(causes):
            return causes[index] or None
        return None


class _NullClock:
    now = 0.0


NULL_TRACE = Trace(_NullClock())
"""A trace nobody subscribes to, for components built without one (tests, benchmarks)."""

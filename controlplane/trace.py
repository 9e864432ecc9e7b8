"""The trace: every internal step of the simulation as one structured record.

A record is a plain dict: ``{"time": <virtual s>, "seq": <n>, "kind": <str>, ...fields}``.
`seq` numbers records in emission order, so two records at the same instant keep their order.
The UI and the report draw from records, never from private fields of the core.

Emitting is free when nobody listens: hot paths test ``trace.enabled`` before building fields.

Kinds (the vocabulary; fields after the colon):
  queue.add / queue.get / queue.done: queue, key [, worker], depth (queued items after the step)
  queue.forget: queue, key
  queue.add_after: queue, key, delay          queue.add_rate_limited: queue, key, delay, requeues
  informer.deliver: informer, events, resourceVersion (one watch delivery, a batch)
  informer.event: informer, type (add/update/delete), key [, tombstone]
  informer.relist: informer, reason           informer.synced: informer, items
  watch.fault: resource, fault, informers
  api.request: id, client, verb, resource, namespace, name
  api.response: id, code [, reason]
  expectations: controller, key, op, add, del [, uids, pod, clobbered, age]
              (op: set, expect_deletions, creation_observed, deletion_observed, raise, lower,
              delete, expired)
  sync.start: controller, key, worker, expectations ({add, del} of the key's record, or None)
              [, version (the v1.5 ReplicationManager's: "v1.5" or "v1.5-late")]
  sync.stage: controller, key, worker, stage (consistency, get, expectations, selector, list,
              claim, manage, batch, delete, status, requeue; the v1.5 ReplicationManager's are
              controlplane.replication.STAGES: podStoreSynced, get, expectations, list, classify,
              adopt, release, manage, create, delete, status), and the stage's own fields
              (consistency: ready, error, verdict, groupResource, readVersion, wroteVersion;
              batch: size, succeeded, failed, error; create: issued, succeeded, failed, error;
              status: written, status, changed)
  sync.request: controller, key, worker, verb (create/delete), n, pod (the n-th pod write a
              sync issues, before the API server has it)
  sync.end: controller, key, worker, start, error, expectations (after), consistency (ready,
              stale, off, or None), requeue ({decision: rateLimited | after, delay | none |
              immediate (v1.5: re-added while the pod store has not synced)})
  sync.requeue: controller, key, worker, decision (rateLimited), delay, requeues (the worker
              requeued a failed sync's key with the rate limiter)
  controller.restart: controller [, reason (config), previousVersion, version, garbageCollector:
              a config action restarted it with another version or other flags]
  controller.log: controller, level, message (a log line a reader of upstream looks for, e.g.
              v1.5's "user error! more than one replication controller is selecting pods")
  pod.transition: namespace, name, node, owner ("Kind/name" of its controller or None), from, to
  node.transition: name, from, to
  event: component, type, reason, object, message (a Kubernetes Event was recorded)
  action: action, ok, ... (a user or scenario action was applied, with its result)
  error: where, error [, controller, key, worker | action | task] (something raised where it
              should not have and was contained: `where` is sync (a sync raised: it counts as
              failed and its key is requeued rate-limited), action (an action raised: logged as
              failed), kernel (a scheduled callback or process raised; the rest runs on) or
              limit (a run ceiling was reached: the simulation halts))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

Record = dict[str, Any]
Subscriber = Callable[[Record], None]


class Clock(Protocol):
    now: float


class Trace:
    """Fan-out of records to subscribers. `enabled` is True while anyone subscribes."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._subscribers: list[Subscriber] = []
        self.seq = 0
        self.enabled = False

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Deliver every later record to `fn`; returns a function that unsubscribes."""
        self._subscribers.append(fn)
        self.enabled = True

        def unsubscribe() -> None:
            if fn in self._subscribers:
                self._subscribers.remove(fn)
            self.enabled = bool(self._subscribers)

        return unsubscribe

    def emit(self, kind: str, **fields: Any) -> None:
        if not self.enabled:
            return
        self.seq += 1
        record: Record = {"time": self._clock.now, "seq": self.seq, "kind": kind}
        record.update(fields)
        for fn in list(self._subscribers):
            fn(record)


class _NullClock:
    now = 0.0


NULL_TRACE = Trace(_NullClock())
"""A trace nobody subscribes to, for components built without one (tests, benchmarks)."""

"""Event recording: the client-go `tools/record` broadcaster and correlator on the kernel.

Guarantees
----------
* `recorder.event(obj, type, reason, message)` returns at once; the Event reaches the API server
  later through the recorder's client (same client, and so the same token bucket, as the
  controller — as in kube-controller-manager), one request at a time, in order.
* The correlator behaves as upstream's `EventCorrelator` (events_cache.go, spec §1), in its order:
  1. aggregate: once 10 different messages with the same source, object, type and reason have
     been seen, with no gap of more than 600 s between them, further ones become one event with
     message "(combined from similar events): <message>";
  2. observe: an event identical to one seen before (same key) becomes a PATCH of `count`,
     `lastTimestamp` and `message`; the count includes occurrences the spam filter dropped;
  3. spam filter: per source+object a token bucket of burst 25 refilled 1 token / 300 s; an event
     without a token is not sent.
  Each of the three remembers at most `MAX_LRU_CACHE_ENTRIES` (4096) keys, least recently used
  first out, as upstream's `lru.New(maxLruCacheEntries)`: a long run does not keep one record per
  pod it ever created.
  A patch of an event that does not exist (never sent, or deleted) falls back to a create.
* A failed post is dropped (upstream retries up to 12 times, 10 s apart; not modelled — noted in
  docs/architecture.md).
"""

from __future__ import annotations

import functools
import math
import weakref
from collections import deque
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Generic, TypeVar

from controlplane.interning import intern, keep
from controlplane.kernel import EPOCH, Future, Kernel, NotQuiescent, resumable, rfc3339
from controlplane.trace import NULL_TRACE, Trace

SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
COMBINED_PREFIX = "(combined from similar events): "
MAX_LRU_CACHE_ENTRIES = 4096  # events_cache.go maxLruCacheEntries
_EPOCH_NS = int(EPOCH.timestamp()) * 1_000_000_000
# Events made per kernel: the last part of every Event name. Upstream names an Event
# "<object>.<UnixNano hex>"; on a virtual clock several components record at the same instant,
# so a count shared by all the recorders of one simulation keeps the names apart.
_NAMES_MADE: weakref.WeakKeyDictionary[Kernel, list[int]] = weakref.WeakKeyDictionary()


# Parts of Event bodies shared between Events (stored objects are immutable by convention): the
# same message text ("Started container web") and involvedObject (the Events about one container
# at one resourceVersion) are one object each, not one per Event (controlplane.interning).
_TEXTS: dict[str, str] = {}
_INVOLVED: dict[tuple[str, ...], dict[str, Any]] = {}
_SHARED_LIMIT = 4096


@lru_cache(maxsize=1024)
def _stamp(second: int) -> str:
    return rfc3339(second)


class _Bucket:
    __slots__ = ("last", "tokens")

    def __init__(self, now: float) -> None:
        self.tokens = float(SPAM_BURST)
        self.last = now

    def take(self, now: float) -> bool:
        self.tokens = min(float(SPAM_BURST), self.tokens + (now - self.last) * SPAM_QPS)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    """groupcache's `lru.Cache` as the correlator uses it: `get` and `add` make a key the most
    recently used; adding beyond `limit` keys drops the least recently used one. A plain dict in
    use order (a key used again is moved to the end): an OrderedDict's links cost ~60 bytes more
    per key, and a process holds one recorder per kubelet."""

    __slots__ = ("_entries", "_limit")

    def __init__(self, limit: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self._entries: dict[K, V] = {}
        self._limit = limit

    def get(self, key: K) -> V | None:
        entries = self._entries
        value = entries.pop(key, None)
        if value is not None:
            entries[key] = value
        return value

    def add(self, key: K, value: V) -> None:
        entries = self._entries
        entries.pop(key, None)
        entries[key] = value
        if len(entries) > self._limit:
            del entries[next(iter(entries))]

    def __len__(self) -> int:
        return len(self._entries)


# An outbox entry: verb ("create" or "patch"), the Event's name and namespace, its involvedObject's
# kind, namespace, name, uid, fieldPath, apiVersion and resourceVersion, then reason, message,
# firstTimestamp, lastTimestamp, count, type. A tuple, not the Event's dict: a recorder whose
# client is slower than its component (the scheduler, binding thousands of pods a second) holds
# many, and the dict is built when the entry is posted.
_Entry = tuple[str, str, str, str, str, str, str, str, str, str, str, str, str, str, int, str]


class EventRecorder:
    """Records Events about objects for one component (`source.component`)."""

    def __init__(
        self, kernel: Kernel, client: Any, component: str, *, host: str = "", trace: Trace | None = None
    ) -> None:
        """`host`: `source.host` (a kubelet's node name); empty for control-plane components."""
        self.kernel = kernel
        self.client = client
        self.component = component
        self.host = host
        self.source = {"component": component, "host": host} if host else {"component": component}
        self.trace = trace or NULL_TRACE
        # The correlator's three caches, keyed as upstream's without the source (every key of one
        # recorder has the same source): the spam filter's buckets (per object); the
        # aggregator's records `(last seen, message, ...)`, the distinct messages oldest first
        # (aggregateRecord); the observations `(count, firstTimestamp, name)` (eventLog; the
        # resourceVersion upstream also keeps is not needed: patches carry none).
        self._spam: _LRU[tuple[str, ...], _Bucket] = _LRU()
        self._aggregate: _LRU[tuple[str, ...], tuple[Any, ...]] = _LRU()
        self._log: _LRU[Any, tuple[int, str, str]] = _LRU()
        # Events waiting to be posted, oldest first: `_Entry` tuples (see _body).
        self._outbox: deque[_Entry] = deque()
        self._posting = False
        self._names = _NAMES_MADE.setdefault(kernel, [0])
        self._stopped = False
        self.dropped = 0

    def stop(self) -> None:
        """The component stopped: events not yet posted are lost, as with a killed process."""
        self._stopped = True
        self.dropped += len(self._outbox)
        self._outbox.clear()

    def event(self, obj: dict[str, Any], event_type: str, reason: str, message: str, *, field_path: str = "") -> None:
        """`field_path`: the part of the object the event is about (`spec.containers{web}`),
        as `involvedObject.fieldPath`."""
        if self._stopped:
            return
        meta = obj["metadata"]
        now = self.kernel.now
        if field_path:  # one string for every Event about a container of that name
            field_path = intern(_TEXTS, field_path, field_path, _SHARED_LIMIT)
        obj_key = (obj.get("kind", ""), meta.get("namespace", ""), meta["name"], meta.get("uid", ""), field_path)
        occurrence = message
        stamp = _stamp(math.floor(now))
        message = intern(_TEXTS, message, message, _SHARED_LIMIT)
        # 1. aggregate (EventAggregate): the similar-event record resets after 600 s of quiet.
        agg_key = (*obj_key, event_type, reason)
        record = self._aggregate.get(agg_key)
        if record is None or now - record[0] > AGGREGATE_INTERVAL:
            seen: tuple[str, ...] = (message,)
        else:
            seen = record[1:]
            if message not in seen:
                seen = (*seen, message)
        dedup_key: Any
        if len(seen) >= AGGREGATE_MAX_EVENTS:
            # Keep the set from growing (upstream PopAny; here the oldest, deterministically).
            seen = seen[1:]
            message = COMBINED_PREFIX + message
            dedup_key = agg_key
        else:
            dedup_key = (agg_key, message)
        self._aggregate.add(agg_key, (now, *seen))
        # 2. observe (eventObserve): every occurrence counts, even one the spam filter drops next.
        log = self._log.get(dedup_key)
        if log is not None:
            count, first, name = log[0] + 1, log[1], log[2]
            verb = "patch"
        else:
            self._names[0] += 1
            count, first = 1, stamp
            name = f"{obj_key[2]}.{_EPOCH_NS + int(now * 1e9) + self._names[0]:x}"
            verb = "create"
        self._log.add(dedup_key, (count, first, name))
        # 3. spam filter (creates and patches alike): per source+object, burst 25, 1 per 300 s.
        # getSpamKey: source and involved object, without the field path.
        spam_key = obj_key[:4]
        bucket = self._spam.get(spam_key)
        if bucket is None:
            bucket = _Bucket(now)
            self._spam.add(spam_key, bucket)
        sent = bucket.take(now)
        if self.trace.enabled:
            # The occurrence, with what the correlator made of it: the Event it counts into
            # (`name`, its `count` now) and whether it is posted (`sent`: create or patch) or not
            # (`dropped` by the spam filter; the Event's count still includes it).
            self.trace.emit(
                "event",
                component=self.component,
                type=event_type,
                reason=reason,
                object=f"{obj_key[0]}/{obj_key[1]}/{obj_key[2]}",
                message=occurrence,
                name=name,
                count=count,
                sent=verb if sent else "dropped",
            )
        if not sent:
            self.dropped += 1
            return
        # The Event as this occurrence makes it (makeEvent), its name, first timestamp and count
        # from the observation: what a patch's fallback create sends.
        kind, namespace, obj_name, uid, _ = obj_key
        self._outbox.append(
            (
                verb,
                name,
                namespace or "default",
                kind,
                namespace,
                obj_name,
                uid,
                field_path,
                obj.get("apiVersion", ""),
                meta.get("resourceVersion", ""),
                reason,
                message,
                first,
                stamp,
                count,
                event_type,
            )
        )
        if not self._posting:
            self._posting = True
            self.kernel.spawn(self._post_all(), name=f"events/{self.component}")

    def _body(self, entry: _Entry) -> dict[str, Any]:
        """The Event an outbox entry stands for, as the API receives it."""
        _, name, namespace, kind, obj_ns, obj_name, uid, field_path, api_version, rv = entry[:10]
        reason, message, first, last, count, event_type = entry[10:]
        ref = entry[3:10]
        involved = _INVOLVED.get(ref)
        if involved is None:  # one dict for the Events about one object at one version
            involved = {
                "kind": kind,
                "namespace": obj_ns,
                "name": obj_name,
                "uid": uid,
                "apiVersion": api_version,
                "resourceVersion": rv,
            }
            if field_path:
                involved["fieldPath"] = field_path
            keep(_INVOLVED, ref, involved, _SHARED_LIMIT)
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "source": self.source,
            "firstTimestamp": first,
            "lastTimestamp": last,
            "count": count,
            "type": event_type,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }

    async def _post_all(self, parked: tuple[str, _Entry, str, Callable[[], Any]] | None = None) -> None:
        """Post the outbox, oldest first. `parked`: restored from a snapshot with a request in
        flight (`resumable`, below): the entry's verb and entry, the verb of the request and
        how to continue it."""
        from controlplane.apiserver import ApiError, is_not_found

        while parked is not None or self._outbox:
            sending: str | None = None
            resume: Callable[[], Any] | None = None
            if parked is not None:
                (verb, event, sending, resume), parked = parked, None
            else:
                event = self._outbox.popleft()
                verb = event[0]
            namespace = event[2]
            try:
                if verb == "patch" and sending != "create":
                    patch = {"count": event[14], "lastTimestamp": event[13], "message": event[11]}
                    try:
                        if resume is not None:
                            await resume()
                        else:
                            await self.client.patch("events", namespace, event[1], patch, patch_type="strategic")
                        continue
                    except ApiError as err:
                        if not is_not_found(err):
                            raise
                        # The event was never created (spam-filtered) or is gone: create it
                        # instead, as client-go's recordEvent does.
                    resume = None
                if resume is not None:
                    await resume()
                else:
                    await self.client.create("events", namespace, self._body(event))
            except ApiError:
                self.dropped += 1
        self._posting = False


def _resume_posting(frames: list[dict[str, Any]], fut: Future | None) -> Any:
    from controlplane.apiserver.client import Client

    posting, request = frames
    if fut is not None and fut is not request["future"]:
        raise NotQuiescent("an event recorder awaits something other than its request's answer")
    if "verb" not in posting or "event" not in posting:
        raise NotQuiescent("an event recorder is between two entries of its outbox")
    client: Client = request["self"]
    req = request["req"]
    go_on = functools.partial(client.request, req, parked=fut if fut is not None else True)
    return functools.partial(posting["self"]._post_all, parked=(posting["verb"], posting["event"], req.verb, go_on))


def _declare() -> None:
    from controlplane.apiserver.client import Client

    # A recorder posting is parked while its request waits for the rate limiter or for the
    # answer (a snapshot can hold it): see kernel.resumable.
    resumable(EventRecorder._post_all, Client.request, resume=_resume_posting)


_declare()

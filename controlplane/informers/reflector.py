"""Reflector: keeps a FIFO in step with the API server by list + watch (client-go `reflector.go`,
spec §3.1).

Guarantees
----------
* `ListAndWatch`: list (→ one `ReplacedAll`), then watch from the list's resourceVersion; every watch
  event goes to the FIFO in order and advances `last_sync_resource_version`.
* A watch that times out (random in [300 s, 600 s) from the kernel rng, as upstream's
  `TimeoutSeconds`) is re-opened from the last synced resourceVersion without a relist.
* A watch that cannot start (410 Gone: the resourceVersion is older than the server's history) or
  that is dropped — the server ends it with an error, which is what `Watch.drop()` models —
  relists, after the upstream back-off (0.8 s doubling to 30 s, jitter 1.0, reset after 2 min of
  calm). That relist is where `DeletedFinalStateUnknown` tombstones come from. (A watch that ends
  cleanly, like ours at their timeout, is re-opened without a relist, as upstream.)
* Pausing is a property of the reflector, not of one watch: a paused informer stays paused across
  re-watches until resumed (the "stale view" fault).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from controlplane.kernel import Cancelled, Future, Kernel, NotQuiescent, Task, resumable
from controlplane.trace import NULL_TRACE, Trace

if TYPE_CHECKING:
    from controlplane.informers.fifo import RealFIFO

BACKOFF_INITIAL = 0.8
BACKOFF_CAP = 30.0
BACKOFF_FACTOR = 2.0
BACKOFF_JITTER = 1.0
BACKOFF_RESET = 120.0
MIN_WATCH_TIMEOUT = 300.0


class Reflector:
    """List + watch one resource into a RealFIFO. Run it with `start()`; `stop()` ends it."""

    def __init__(
        self,
        kernel: Kernel,
        client: Any,
        resource: str,
        fifo: RealFIFO,
        *,
        name: str,
        namespace: str | None = None,
        watch_latency: float = 0.0,
        trace: Trace | None = None,
    ) -> None:
        self.kernel = kernel
        self.client = client
        self.server = client.server
        self.resource = resource
        self.namespace = namespace
        self.fifo = fifo
        self.name = name
        self.trace = trace or NULL_TRACE
        self.watch_latency = watch_latency
        self.last_sync_resource_version = ""
        self.paused = False
        self.pauses = 0  # pause() calls so far: tells one pause from a later one
        self.relists = 0
        self.state = "idle"  # idle, listing, watching, backoff, stopped
        self._watch: Any = None
        self._closed: Future | None = None
        self._task: Task | None = None
        self._stopped = False
        self._backoff = BACKOFF_INITIAL
        self._last_backoff_start: float | None = None

    # -- control ----------------------------------------------------------------------------
    def start(self) -> None:
        self._task = self.kernel.spawn(self._run(), name=f"reflector/{self.name}")

    def stop(self) -> None:
        self._stopped = True
        self.state = "stopped"
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def pause(self) -> None:
        self.paused = True
        self.pauses += 1
        if self._watch is not None:
            self._watch.pause()

    def resume(self) -> None:
        self.paused = False
        if self._watch is not None:
            self._watch.resume()

    def drop(self) -> None:
        """The server ends the watch (connection lost): the reflector relists after back-off."""
        if self._watch is not None:
            self._watch.drop()

    def set_watch_latency(self, seconds: float) -> None:
        self.watch_latency = seconds
        if self._watch is not None:
            self._watch.latency = seconds

    def pending(self) -> int:
        """Events committed by the server but not yet handed to the FIFO."""
        return int(self._watch.pending()) if self._watch is not None else 0

    # -- the loop ---------------------------------------------------------------------------
    async def _run(self, parked: tuple[Any, Future, Any] | None = None, *, backing_off: bool = False) -> None:
        """ListAndWatch, again after a back-off while not stopped. Restored from a snapshot:
        `parked`, while watching (`(watch, closed, timer)` of `_list_and_watch`'s wait), or
        `backing_off`, in the back-off's sleep (the task's pending timer ends it)."""
        try:
            if backing_off:
                await self.kernel.sleep(0)  # yields at once; the restored task's timer wakes it
            while parked is not None or not self._stopped:
                await self._list_and_watch(parked)
                parked = None
                if self._stopped:
                    break
                self.state = "backoff"
                await self.kernel.sleep(self._next_backoff())
        except Cancelled:
            pass

    def _next_backoff(self) -> float:
        # wait.NewExponentialBackoffManager: reset after BACKOFF_RESET of calm, then jittered steps.
        now = self.kernel.now
        if self._last_backoff_start is None or now - self._last_backoff_start > BACKOFF_RESET:
            self._backoff = BACKOFF_INITIAL
        self._last_backoff_start = now
        duration = self._backoff
        self._backoff = min(self._backoff * BACKOFF_FACTOR, BACKOFF_CAP)
        return duration + self.kernel.rng.random() * BACKOFF_JITTER * duration

    async def _list_and_watch(self, parked: tuple[Any, Future, Any] | None = None) -> None:
        from controlplane.apiserver import ApiError

        if parked is None:
            self.state = "listing"
            try:
                listed = await self.client.list(self.resource, self.namespace)
            except ApiError as exc:
                self._emit_relist(f"list failed: {exc.code} {exc.reason}")
                return
            rv = listed["metadata"]["resourceVersion"]
            self.fifo.replace(list(listed["items"]), rv)
            self.last_sync_resource_version = rv
        while parked is not None or not self._stopped:
            if parked is not None:
                (watch, closed, timer), parked = parked, None
            else:
                opened = self._open_watch()
                if opened is None:
                    return
                watch, closed, timer = opened
            reason = await closed
            timer.cancel()
            self._watch = None
            if reason != "timeout":
                self._emit_relist(f"watch {reason}")
                return
            watch.stop()

    def _open_watch(self) -> tuple[Any, Future, Any] | None:
        """Start a watch from the last synced resourceVersion: `(watch, closed, timeout timer)`,
        or None when it cannot start (the caller relists)."""
        from controlplane.apiserver import ApiError

        try:
            watch = self.server.watch(
                self.resource,
                self.namespace,
                resource_version=self.last_sync_resource_version,
                latency=self.watch_latency,
                client=self.client.user_agent,
            )
        except ApiError as exc:
            # 410 Gone ("too old resource version"): relist (spec §3.1).
            self._emit_relist(f"watch failed: {exc.code} {exc.reason}")
            return None
        self._watch = watch
        self.state = "watching"
        if self.paused:
            watch.pause()
        closed = self.kernel.create_future()
        self._closed = closed
        watch.start(self._on_events, self._on_close)
        timeout = MIN_WATCH_TIMEOUT * (1.0 + self.kernel.rng.random())
        timer = self.kernel.call_later(timeout, self._on_timeout, watch)
        return watch, closed, timer

    def _on_timeout(self, watch: Any) -> None:
        if self._watch is watch and self._closed is not None and not self._closed.done():
            self._closed.set_result("timeout")

    def _on_close(self, reason: str) -> None:
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(reason)

    def _on_events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        self.fifo.extend_from_watch(events)
        if events:
            self.last_sync_resource_version = events[-1][1]["metadata"]["resourceVersion"]
        if self.trace.enabled:
            self.trace.emit(
                "informer.deliver",
                self.trace.revision_cause(self.last_sync_resource_version) if events else ...,
                informer=self.name,
                events=len(events),
                resourceVersion=self.last_sync_resource_version,
            )

    def _emit_relist(self, reason: str) -> None:
        self.relists += 1
        if self.trace.enabled:
            self.trace.emit("informer.relist", informer=self.name, reason=reason)


def _resume_watching(frames: list[dict[str, Any]], fut: Future | None) -> Any:
    run, list_and_watch = frames
    if fut is not list_and_watch["closed"]:
        raise NotQuiescent("a reflector awaits something other than the end of its watch")
    parked = (list_and_watch["watch"], fut, list_and_watch["timer"])
    return functools.partial(run["self"]._run, parked=parked)


def _resume_backing_off(frames: list[dict[str, Any]], fut: Future | None) -> Any:
    (run,) = frames
    if fut is not None:
        raise NotQuiescent("a reflector awaits something other than its back-off")
    return functools.partial(run["self"]._run, backing_off=True)


# A reflector watching, or backing off before it lists again, is parked (a snapshot can hold
# it): see kernel.resumable.
resumable(Reflector._run, Reflector._list_and_watch, resume=_resume_watching)
resumable(Reflector._run, resume=_resume_backing_off)

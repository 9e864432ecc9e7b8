"""The client simulated components use to call the API server (client-go's REST client).

Guarantees
----------
* Client-side rate limiting as client-go's `flowcontrol.NewTokenBucketRateLimiter(qps, burst)`,
  i.e. `golang.org/x/time/rate.Limiter` with `Wait()`: each call reserves one token at the instant
  it is made and sleeps until the token is due. The bucket starts full. At 20 QPS / burst 30 the
  31st call made at one instant is sent 0.05 s later. `qps` None or <= 0 disables the limiter.
* A call is *sent* when its token is granted (`Request.sent_at`), and the server handles it
  `latency + extra` seconds later, where `extra` is the sum of `server.latency_hooks(req)`. The
  answer (object or `ApiError`) reaches the awaiting coroutine at that same instant. The latency
  path costs one kernel callback per request.
* `qps`, `burst` and `latency` may be changed at any time; a change applies to later calls.
* Causes (controlplane.trace): the request carries the caller's current cause to the server
  (its api.request is caused by it), and once the answer is back the caller's current cause is
  the api.response, so an Event recorded about a failed create is caused by the 403.
* A Client never mutates the objects it returns (they are the server's shared dicts: callers
  must not mutate them either).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from controlplane.apiserver.errors import ApiError
from controlplane.apiserver.server import Request, query_options

if TYPE_CHECKING:
    from controlplane.apiserver.server import APIServer
    from controlplane.apiserver.watch import Watch
    from controlplane.kernel import Future, Kernel

Obj = dict[str, Any]
Reply = Coroutine[Any, Any, Any]  # what a verb returns: await it for the server's answer


class TokenBucketRateLimiter:
    """`rate.Limiter(qps, burst)` driven by the virtual clock; `reserve()` is `Reserve().Delay()`."""

    __slots__ = ("_burst", "_clock", "_last", "_qps", "_tokens")

    def __init__(self, qps: float, burst: int, clock: Any) -> None:
        self._clock = clock
        self._qps = float(qps)
        self._burst = int(burst)
        self._tokens = float(burst)
        self._last: float = clock.now

    def _advance(self, now: float) -> float:
        last = min(self._last, now)
        tokens = self._tokens + (now - last) * self._qps
        return min(tokens, float(self._burst))

    def reserve(self) -> float:
        """Take one token now; return how long the caller must wait before acting (seconds)."""
        now = self._clock.now
        tokens = self._advance(now) - 1.0
        self._last = now
        self._tokens = tokens
        return -tokens / self._qps if tokens < 0 else 0.0

    @property
    def qps(self) -> float:
        return self._qps

    @qps.setter
    def qps(self, value: float) -> None:
        # rate.Limiter.SetLimit: account the tokens earned at the old rate first.
        now = self._clock.now
        self._tokens = self._advance(now)
        self._last = now
        self._qps = float(value)

    @property
    def burst(self) -> int:
        return self._burst

    @burst.setter
    def burst(self, value: int) -> None:
        now = self._clock.now
        self._tokens = self._advance(now)
        self._last = now
        self._burst = int(value)

    def tokens(self) -> float:
        """Tokens available now (negative while callers are queued): for display."""
        return self._advance(self._clock.now)


class Client:
    """An API client with its own user agent, token bucket and request latency.

    Every method takes the arguments of the server's convenience method of the same name (the
    client supplies `client=`). Awaiting a call returns the server's answer or raises ApiError.
    """

    def __init__(
        self,
        server: APIServer,
        kernel: Kernel,
        user_agent: str,
        *,
        qps: float | None = 20.0,
        burst: int = 30,
        latency: float = 0.005,
    ) -> None:
        self.server = server
        self.kernel = kernel
        self.user_agent = user_agent
        self.latency = latency
        self._burst = burst
        self._limiter: TokenBucketRateLimiter | None = None
        self._qps: float | None = None
        self.qps = qps
        # Bound once: a bound method per request would live until the response arrives.
        self._deliver_callback = self._deliver

    # -- knobs ------------------------------------------------------------------------------
    @property
    def qps(self) -> float | None:
        return self._qps

    @qps.setter
    def qps(self, value: float | None) -> None:
        self._qps = value
        if value is None or value <= 0:
            self._limiter = None
        elif self._limiter is None:
            self._limiter = TokenBucketRateLimiter(value, self._burst, self.kernel)
        else:
            self._limiter.qps = value

    @property
    def burst(self) -> int:
        return self._burst

    @burst.setter
    def burst(self, value: int) -> None:
        self._burst = value
        if self._limiter is not None:
            self._limiter.burst = value

    @property
    def rate_limiter(self) -> TokenBucketRateLimiter | None:
        return self._limiter

    # -- the request path -------------------------------------------------------------------
    async def request(self, req: Request, parked: Future | bool | None = None) -> Any:
        """Send `req` (its `client` is overwritten with this client's user agent). `parked`: the
        request is restored from a snapshot (`resumable`, below): True while it waited for the
        rate limiter, else the future of its answer."""
        kernel = self.kernel
        if parked is None:
            req.client = self.user_agent
            limiter = self._limiter
            if limiter is not None:
                wait = limiter.reserve()
                if wait > 0:
                    await kernel.sleep(wait)
        elif parked is True:
            await kernel.sleep(0)  # yields at once; the restored task's pending timer wakes it
        if parked is None or parked is True:
            req.sent_at = kernel.now
            delay = self.latency
            hooks = self.server.latency_hooks
            if hooks:
                extra: float = 0  # summed as sum() would (from int 0), without a generator per request
                for hook in hooks:
                    extra += hook(req)
                delay += extra
            future = kernel.create_future()
            kernel.call_later(delay, self._deliver_callback, req, future)
        else:
            assert not isinstance(parked, bool)
            future = parked
        try:
            return await future
        finally:
            # What the caller does next is caused by the answer it heard (controlplane.trace).
            if req.answer_seq is not None:
                kernel.cause = req.answer_seq

    def _deliver(self, req: Request, future: Future) -> None:
        try:
            result = self.server.handle(req)
        except ApiError as err:
            future.set_exception_inline(err)
            return
        # The response arrives: the awaiting coroutine continues at once (one kernel event per
        # request, as this module promises).
        future.set_result_inline(result)

    # -- verbs ------------------------------------------------------------------------------
    # Plain methods returning `request`'s coroutine, not coroutines themselves: `await
    # client.get(...)` is the same, with one coroutine frame fewer per request (hot path).
    def create(self, resource: str, namespace: str | None, body: Obj, *, subresource: str | None = None) -> Reply:
        return self.request(
            Request(self.user_agent, "create", resource, subresource, namespace, _body_name(body, subresource), body)
        )

    def get(self, resource: str, namespace: str | None, name: str, *, subresource: str | None = None) -> Reply:
        return self.request(Request(self.user_agent, "get", resource, subresource, namespace, name))

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Reply:
        options = query_options(label_selector=label_selector or None, field_selector=field_selector or None)
        return self.request(Request(self.user_agent, "list", resource, None, namespace, None, None, options))

    def update(
        self, resource: str, namespace: str | None, name: str, body: Obj, *, subresource: str | None = None
    ) -> Reply:
        return self.request(Request(self.user_agent, "update", resource, subresource, namespace, name, body))

    def patch(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> Reply:
        return self.request(
            Request(self.user_agent, "patch", resource, subresource, namespace, name, patch, {"patchType": patch_type})
        )

    def delete(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> Reply:
        options = query_options(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
        )
        return self.request(Request(self.user_agent, "delete", resource, None, namespace, name, None, options))

    def watch(
        self,
        resource: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        latency: float = 0.0,
    ) -> Watch:
        """Open a watch at once (not rate limited: a watch is a long-running request)."""
        return self.server.watch(
            resource,
            namespace,
            resource_version=resource_version,
            label_selector=label_selector,
            field_selector=field_selector,
            latency=latency,
            client=self.user_agent,
        )


def _body_name(body: Any, subresource: str | None) -> str | None:
    # A binding is created on the pod it names; a plain create has the name in the body
    # (possibly empty: generateName).
    if isinstance(body, dict):
        meta = body.get("metadata")
        if isinstance(meta, dict):
            name = meta.get("name")
            return name if isinstance(name, str) and name else None
    return None

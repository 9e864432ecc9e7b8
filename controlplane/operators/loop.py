"""`SimLoop`: an asyncio event loop that is a guest of the kernel, so that a user's asyncio
operator (kopf) runs on virtual time, one deterministic step at a time.

Guarantees
----------
* Its clock is the kernel's: `time()` is `kernel.now` (virtual seconds), and its resolution is
  one nanosecond, the kernel's grid (not the host's clock resolution).
* One kernel entry at a time, at asyncio's earliest due work: now when its ready queue holds a
  callback, else the earliest live timer (rounded up to the kernel's nanosecond grid). Each entry
  runs one `_run_once` of asyncio (every callback ready at that instant, in asyncio's FIFO
  order, then the timers due), then arms the next entry. The kernel never passes an instant
  while the ready queue holds work, so at one instant kernel callbacks and loop steps alternate
  in the kernel's `(time, seq)` order: the same inputs give the same interleaving.
* A step sets itself as the running loop and puts back the loop that was running before (a world
  may be stepped from inside the dashboard's own asyncio loop), and the same for the thread's async
  generator hooks: the operator's async generators are this loop's and are finalized on it.
  During a step the determinism shims are on (`controlplane.operators.shims`).
* No selector and no I/O: connections are in memory (`create_unix_connection` to a path the host
  registered, `controlplane.operators.transport`). `getaddrinfo`, `getnameinfo`,
  `create_connection`, `create_server`, `create_datagram_endpoint`, `sock_*`, subprocesses and
  `call_soon_threadsafe` from another thread are refused with a `SimulationRefused` naming the
  call; a step that leaves more threads running than it found raises one after it (the world
  reports it as an `error` record). `run_in_executor` runs the function at once, on the loop's
  thread (a sync kopf handler is one atomic step at one instant), whatever executor is given.
* OS signal handlers are accepted and never fire (no OS signal reaches a simulated operator);
  a callback that would send a signal (`signal.pthread_kill`, kopf's hung-exit kill) is refused.
* `detach()` ends the partnership with the kernel: the loop then runs on a clock of its own from
  the kernel's last instant (`run_detached`), so that a world's end can run an operator's shutdown
  to its end without moving the world.
"""

from __future__ import annotations

import asyncio
import heapq
import signal
import sys
import threading
from asyncio import events
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from controlplane.kernel import vtime

if TYPE_CHECKING:
    from controlplane.kernel import Kernel, Timer

NANOSECOND = 1e-9
# asyncio's BaseEventLoop, for the internals typeshed does not declare (`_call_soon`, `_ready`,
# `_scheduled`, `_run_once`, `_thread_id`, ...): their shape has held since Python 3.7, and
# tests/controlplane/test_operators.py pins it.
_BASE: Any = asyncio.BaseEventLoop
MAX_DETACHED_STEPS = 100_000  # loop steps a detached shutdown may take (then it is abandoned)


class SimulationRefused(RuntimeError):
    """A call a simulated operator may not make (a socket, a DNS lookup, a thread, a process)."""


def _refuse(call: str, why: str = "the operator runs inside the simulation, which has no network") -> SimulationRefused:
    return SimulationRefused(f"{call} is refused: {why}")


UNPICKLABLE = (
    "a world with an embedded operator cannot be snapshotted (its asyncio coroutines cannot be pickled): "
    "go back by replaying from the start"
)


class Unpicklable:
    """What holds an operator's asyncio state: pickling it (a keyframe) fails saying why."""

    def __reduce__(self) -> Any:
        raise TypeError(UNPICKLABLE)


class _NoSelector:
    """What asyncio's `_run_once` asks for I/O events: never any."""

    def select(self, timeout: float | None = None) -> list[Any]:
        return []

    def close(self) -> None:
        pass


class SimLoop(Unpicklable, asyncio.BaseEventLoop):
    """An asyncio loop whose clock and scheduling are the kernel's (module docstring).

    `step_hooks`: context managers entered around each step (the determinism shims)."""

    def __init__(self, kernel: Kernel, *, name: str = "operator") -> None:
        super().__init__()
        self._kernel = kernel
        kernel.guests += 1  # never quiescent while this loop is open (no pickled keyframes)
        self.name = name
        self._clock_resolution = NANOSECOND
        self._selector = _NoSelector()
        self._entry: Timer | None = None
        self._entry_when = float("inf")
        self._detached: float | None = None  # the loop's own clock once detached
        self._stepping = False
        self.steps = 0
        self.doors: dict[str, Any] = {}  # unix path -> the in-memory server behind it (transport.Door)
        self.step_hooks: list[Callable[[], Any]] = []
        self.errors: list[dict[str, Any]] = []  # exceptions asyncio reported (exception handler)
        self.set_exception_handler(_keep_error)

    @property
    def _internals(self) -> Any:
        """This loop as asyncio's BaseEventLoop internals (module `_BASE`)."""
        return self

    # -- the clock -----------------------------------------------------------------------------
    def time(self) -> float:
        return self._kernel.now if self._detached is None else self._detached

    # -- being woken by asyncio ------------------------------------------------------------------
    def _call_soon(self, callback: Any, args: Any, context: Any) -> Any:
        handle = _BASE._call_soon(self, callback, args, context)
        if not self._stepping:
            self._arm()
        return handle

    def call_at(self, when: float, callback: Any, *args: Any, context: Any = None) -> Any:
        if callback is signal.pthread_kill:
            raise _refuse("signal.pthread_kill", "a simulated operator is stopped by its world, never killed")
        handle = super().call_at(when, callback, *args, context=context)
        if not self._stepping:
            self._arm()
        return handle

    def _due(self) -> float | None:
        """When asyncio next has work: now with a ready callback, else its earliest timer."""
        if self._internals._ready:
            return self.time()
        scheduled = self._drop_cancelled_heads()
        if scheduled:
            when = scheduled[0]._when
            due = vtime(when)
            if due < when:
                due = vtime(due + NANOSECOND)
            return max(due, self.time())
        return None

    def _drop_cancelled_heads(self) -> list[Any]:
        """asyncio's timer heap without its cancelled heads (asyncio's `_run_once` drops them
        too; left there they would only wake the loop early)."""
        base = self._internals
        scheduled: list[Any] = base._scheduled
        while scheduled and scheduled[0]._cancelled:
            handle = heapq.heappop(scheduled)
            handle._scheduled = False
            base._timer_cancelled_count = max(0, base._timer_cancelled_count - 1)
        return scheduled

    def _arm(self) -> None:
        if self._detached is not None or self.is_closed():
            return
        due = self._due()
        if due is None:
            return
        entry = self._entry
        if entry is not None and entry.active and self._entry_when <= due:
            return
        if entry is not None:
            entry.cancel()
        self._entry_when = due
        self._entry = self._kernel.call_at(due, self._step)

    # -- one step ----------------------------------------------------------------------------------
    def _step(self) -> None:
        self._entry = None
        self._entry_when = float("inf")
        try:
            self.run_step()
        finally:
            self._arm()

    def run_step(self) -> None:
        """One `_run_once` of asyncio as the running loop, with the step hooks on."""
        if self.is_closed():
            return
        base = self._internals
        previous = events._get_running_loop()
        outer_hooks = sys.get_asyncgen_hooks()
        # The operator's async generators are this loop's (and finalized on it), not those of a
        # loop the world is stepped from (the dashboard's): the hooks are per thread.
        sys.set_asyncgen_hooks(firstiter=base._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook)
        events._set_running_loop(self)
        base._thread_id = threading.get_ident()
        self._stepping = True
        hooks = [hook() for hook in self.step_hooks]
        threads = threading.active_count()
        try:
            for hook in hooks:
                hook.__enter__()
            self.steps += 1
            base._run_once()
        finally:
            for hook in reversed(hooks):
                hook.__exit__(None, None, None)
            self._stepping = False
            base._thread_id = None
            events._set_running_loop(previous)
            sys.set_asyncgen_hooks(*outer_hooks)
        if threading.active_count() > threads:
            # It runs beside the world now, on the host's clock: the run is no longer
            # deterministic, and the world says so (an `error` record, through the kernel).
            raise _refuse("starting a thread", "a simulated operator has no threads; this run is not deterministic")

    def _asyncgen_finalizer_hook(self, agen: Any) -> None:
        """An async generator of the operator's collected unfinished: closed by a task on this
        loop (asyncio's own hook would go through `call_soon_threadsafe`, refused here)."""
        self._internals._asyncgens.discard(agen)
        if not self.is_closed():
            self.call_soon(self.create_task, agen.aclose())

    # -- the end ------------------------------------------------------------------------------------
    def detach(self) -> None:
        """Stop being driven by the kernel; the clock stays at the kernel's instant until
        `run_detached` moves it."""
        if self._detached is None:
            self._detached = self._kernel.now
        if self._entry is not None:
            self._entry.cancel()
            self._entry = None

    def run_detached(self, done: Callable[[], bool], max_steps: int = MAX_DETACHED_STEPS) -> bool:
        """Run steps on the loop's own clock (jumping to each next timer) until `done()`; False
        when the loop has no more work or `max_steps` ran out first."""
        self.detach()
        for _ in range(max_steps):
            if done():
                return True
            if not self._internals._ready:
                scheduled = self._drop_cancelled_heads()
                if not scheduled:
                    return done()
                assert self._detached is not None
                self._detached = max(self._detached, scheduled[0]._when)
            self.run_step()
        return done()

    def close(self) -> None:
        if not self.is_closed():
            self._kernel.guests -= 1
        super().close()

    # -- what runs inline ---------------------------------------------------------------------------
    def run_in_executor(self, executor: Any, func: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """The function, run now on the loop's thread; a done future of its result."""
        self._internals._check_closed()
        future: asyncio.Future[Any] = self.create_future()
        try:
            future.set_result(func(*args))
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            future.set_exception(exc)
        return future

    def set_default_executor(self, executor: Any) -> None:
        pass  # nothing runs in an executor here (run_in_executor)

    def add_signal_handler(self, sig: int, callback: Callable[..., Any], *args: Any) -> None:
        pass  # no OS signal reaches a simulated operator

    def remove_signal_handler(self, sig: int) -> bool:
        return False

    # -- what is refused ----------------------------------------------------------------------------
    def _write_to_self(self) -> None:
        raise _refuse("call_soon_threadsafe from another thread", "a simulated operator has no threads")

    def _process_events(self, event_list: list[Any]) -> None:
        pass  # (there are never any: _NoSelector)

    async def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        raise _refuse(f"getaddrinfo({host!r}, {port!r})")

    async def getnameinfo(self, sockaddr: Any, flags: int = 0) -> Any:
        raise _refuse(f"getnameinfo({sockaddr!r})")

    async def create_connection(self, protocol_factory: Any, host: Any = None, port: Any = None, **kw: Any) -> Any:
        raise _refuse(f"create_connection({host!r}, {port!r})")

    async def create_server(self, protocol_factory: Any, host: Any = None, port: Any = None, **kw: Any) -> Any:
        raise _refuse(f"create_server({host!r}, {port!r})")

    async def create_unix_server(self, protocol_factory: Any, path: Any = None, **kw: Any) -> Any:
        raise _refuse(f"create_unix_server({path!r})")

    async def create_datagram_endpoint(self, protocol_factory: Any, *args: Any, **kw: Any) -> Any:
        raise _refuse("create_datagram_endpoint")

    async def connect_accepted_socket(self, protocol_factory: Any, sock: Any, **kw: Any) -> Any:
        raise _refuse("connect_accepted_socket")

    async def sock_connect(self, sock: Any, address: Any) -> None:
        raise _refuse(f"sock_connect({address!r})")

    async def sock_recv(self, sock: Any, nbytes: int) -> bytes:
        raise _refuse("sock_recv")

    async def sock_recv_into(self, sock: Any, buf: Any) -> int:
        raise _refuse("sock_recv_into")

    async def sock_sendall(self, sock: Any, data: Any) -> None:
        raise _refuse("sock_sendall")

    async def sock_accept(self, sock: Any) -> Any:
        raise _refuse("sock_accept")

    async def sock_sendfile(self, sock: Any, file: Any, *args: Any, **kw: Any) -> int:
        raise _refuse("sock_sendfile")

    async def subprocess_exec(self, protocol_factory: Any, *args: Any, **kw: Any) -> Any:
        raise _refuse("subprocess_exec", "a simulated operator starts no processes")

    async def subprocess_shell(self, protocol_factory: Any, cmd: Any, **kw: Any) -> Any:
        raise _refuse("subprocess_shell", "a simulated operator starts no processes")

    def add_reader(self, fd: Any, callback: Any, *args: Any) -> None:
        raise _refuse("add_reader")

    def add_writer(self, fd: Any, callback: Any, *args: Any) -> None:
        raise _refuse("add_writer")

    # -- the in-memory door -------------------------------------------------------------------------
    async def create_unix_connection(
        self, protocol_factory: Callable[[], asyncio.BaseProtocol], path: str | None = None, **kw: Any
    ) -> tuple[asyncio.Transport, asyncio.BaseProtocol]:
        """A connection to the in-memory server registered at `path` (`doors`): what
        `aiohttp.UnixConnector(path)` opens. Any other path is refused."""
        door = self.doors.get(path or "")
        if door is None:
            raise _refuse(f"create_unix_connection({path!r})", "only the simulated API server's door is open")
        protocol = protocol_factory()
        transport = door.connect(self, protocol)
        return transport, protocol


def _keep_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio's exception handler: keep what it reports (an exception nobody retrieved, a
    callback that raised) for the host to report, instead of logging it to the host's stderr."""
    assert isinstance(loop, SimLoop)
    exc = context.get("exception")
    entry = {"message": str(context.get("message") or ""), "error": f"{type(exc).__name__}: {exc}" if exc else ""}
    if len(loop.errors) < 100:
        loop.errors.append(entry)

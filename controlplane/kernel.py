"""The kernel: one virtual clock and one scheduler for everything in controlplane.

Guarantees
----------
* Time moves only inside `step()`, `advance()` and `run_until()`. Nothing here reads the wall
  clock; `now` is float seconds of virtual time since `EPOCH`.
* Virtual time is exact to the nanosecond: every instant the kernel schedules is `vtime(t)`, the
  float nearest to a whole number of nanoseconds, so `now` prints as the decimal it is (0.115,
  never 0.11500000000000002, which adding 0.005 to 0.11 in floats gives) and two paths to the
  same instant meet at the same float. Code that keeps a time it will compare with `now` (a due
  time, a ready time) computes it with `vtime` too.
* Callbacks run in `(time, seq)` order: two callbacks due at the same instant run in the order
  they were scheduled. With the same seed and the same inputs every run is identical.
* Processes are coroutines (`async def`) that await kernel futures: `kernel.sleep(d)`,
  a `Future` resolved by someone else, or another `Task`. A coroutine never runs outside a
  kernel callback, so there is no concurrency, only interleaving at `await` points — exactly
  the points where upstream's goroutines could be preempted by the things we model (an API
  round trip, a watch delivery, a timer).
* `rng` is the only randomness: a `Random` seeded with the kernel's seed.
* `call_at_end_of_instant(t, fn)` runs `fn` at `t` after every other callback due at `t`,
  including the ones those schedule for `t`: the well-defined point at which actions (a
  scenario's timeline, a dashboard button, a kubectl write) are applied, so that an action taken
  live at `t` and the same action replayed from a file at `t` see the same world.

This is the hot loop of every benchmark: entries are `Timer`s, lists `[time, seq, fn, args,
lane, cause]` (a list so the heap compares them natively and a timer can be cancelled in place by
clearing `fn`; the entry is the handle callers get back, so scheduling allocates one object, not
two). Two kinds of entries skip the heap's O(log n) push and pop, and the loop merges them back
so that the order is exactly the one a single heap gives:
* entries due at the current instant (`call_soon`, about half of all) wait in a FIFO: they are
  in `(time, seq)` order already;
* `call_later(delay)` entries wait in a FIFO *lane* per distinct delay (every API request has
  the client's latency, every pod start the kubelet's start-up delay): the clock never goes
  back, so a lane is in `(time, seq)` order too, and only its head is in the heap. The heap
  then holds a few dozen entries instead of one per pending timer of a 100,000-pod run.

Causality (the trace's `cause`, see controlplane.trace)
-------------------------------------------------------
`kernel.cause` is the *current cause*: the `seq` of the trace record that caused whatever runs
now, or None. It flows like an async context: every entry captures it when it is scheduled and
the loop restores it when the entry runs; a task captures it when it awaits (and when it is
spawned) and gets it back when it resumes, whoever woke it. Code that starts a causal step (an
action applied, a request handled, a queue item taken) sets it; everything the step schedules or
emits then carries it. The kernel only carries the number: one list slot per entry and one
attribute store per callback, paid whether anyone traces or not (docs/performance.md measures it).

Snapshots (controlplane.session.timetravel.snapshot)
---------------------------------
A kernel and everything it schedules pickles, except a coroutine. `tasks` holds the tasks not
finished; a task whose coroutine chain is suspended in a place declared with `resumable` (a
long-lived loop waiting for work, a request waiting for its answer or its rate limiter) pickles
as the recipe of its continuation, and `thaw_tasks` rebuilds it around the same future or
pending sleep. A world where every task is so *parked* can be snapshotted; any other raises
`NotQuiescent`.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import math
from collections import deque
from collections.abc import Callable, Coroutine, Generator
from datetime import UTC, datetime, timedelta
from random import Random
from types import CodeType, CoroutineType
from typing import Any

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
END_OF_INSTANT = 1 << 62  # sequence offset of `call_at_end_of_instant` entries
NS_PER_SECOND = 1e9


def vtime(t: float) -> float:
    """`t` (virtual seconds: an instant or a duration) at the kernel's resolution, 1 ns: the float
    nearest to a whole number of nanoseconds (see the module docstring)."""
    return round(t * NS_PER_SECOND) / NS_PER_SECOND


Rng = Random


def seeded_rng(seed: int) -> Rng:
    """A `Random` of its own for pure seeded generators outside a simulation (the fault swarm's
    scenario generator): the kernel stays the one module that constructs one."""
    return Random(seed)


def rfc3339(t: float) -> str:
    """The RFC 3339 timestamp (whole seconds, as metav1.Time serialises) of virtual time `t`."""
    return _rfc3339_second(math.floor(t))


@functools.lru_cache(maxsize=4096)
def _rfc3339_second(second: int) -> str:
    # Memoised: strftime costs more than the rest of a status write, and every object written
    # in the same second then shares one timestamp string.
    return (EPOCH + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(value: str) -> float:
    """Virtual seconds of an RFC 3339 timestamp (inverse of `rfc3339`); ValueError if malformed."""
    text = value.replace("Z", "+00:00")
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp {value!r} has no timezone")
    return (parsed - EPOCH).total_seconds()


class Cancelled(Exception):
    """Thrown into a task's coroutine when the task is cancelled."""


class _Lane(deque["Timer"]):
    """The FIFO of pending `call_later(delay)` entries of one delay (see the module docstring)."""

    __slots__ = ("delay",)

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Lane, (self.delay,), None, iter(self))


class Timer(list[Any]):
    """A scheduled callback; `cancel()` makes the kernel skip it. It is the kernel's own queue
    entry `[time, seq, fn, args, lane, cause]` (see the module docstring): do not use it as a list."""

    __slots__ = ()

    @property
    def when(self) -> float:
        return float(self[0])

    @property
    def active(self) -> bool:
        return self[2] is not None

    def cancel(self) -> None:
        self[2] = None


class _NoWaiters(list[Any]):
    """The type of `_NO_WAITERS`: a snapshot keeps it the one shared object (pickled by name)."""

    __slots__ = ()

    def __reduce__(self) -> str:
        return "_NO_WAITERS"


_NO_WAITERS: list[Any] = _NoWaiters()  # shared and never appended to: see Future.add_done_callback


class Future:
    """A value that will be set once. Awaiting it suspends the task until it is set.

    States: pending, then done with a result or an exception. Waiters are resumed by the kernel
    at the instant the future is resolved (scheduled, never inline, so resolving a future from
    inside a task never re-enters another task).
    """

    __slots__ = ("_done", "_exception", "_result", "_waiters", "kernel")

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._done = False
        self._result: Any = None
        self._exception: BaseException | None = None
        # _NO_WAITERS until someone waits (most tasks are never awaited) and once resolved.
        self._waiters: list[Callable[[Future], None]] = _NO_WAITERS

    def done(self) -> bool:
        return self._done

    def result(self) -> Any:
        if not self._done:
            raise RuntimeError("future is not done")
        if self._exception is not None:
            raise self._exception
        return self._result

    def set_result(self, value: Any = None) -> None:
        if self._done:
            raise RuntimeError("future already done")
        self._done = True
        self._result = value
        self._wake()

    def set_exception(self, exc: BaseException) -> None:
        if self._done:
            raise RuntimeError("future already done")
        self._done = True
        self._exception = exc
        self._wake()

    def set_result_inline(self, value: Any = None) -> None:
        """Resolve and resume the waiters right now, not in a later callback of the same instant.

        Only for a future resolved by a plain kernel callback that exists to deliver it (an API
        response arriving): the waiter would run next at the same instant anyway, and this saves a
        heap round trip on the hottest path. Inside a task it falls back to `set_result`, so one
        task never runs inside another.
        """
        if self.kernel._task_depth:
            self.set_result(value)
            return
        if self._done:
            raise RuntimeError("future already done")
        self._done = True
        self._result = value
        waiters, self._waiters = self._waiters, _NO_WAITERS
        for fn in waiters:
            fn(self)

    def set_exception_inline(self, exc: BaseException) -> None:
        """`set_exception` with the waking rule of `set_result_inline`."""
        if self.kernel._task_depth:
            self.set_exception(exc)
            return
        if self._done:
            raise RuntimeError("future already done")
        self._done = True
        self._exception = exc
        waiters, self._waiters = self._waiters, _NO_WAITERS
        for fn in waiters:
            fn(self)

    def add_done_callback(self, fn: Callable[[Future], None]) -> None:
        """Call `fn(self)` (scheduled at the instant of resolution) once the future is done."""
        if self._done:
            self.kernel.call_soon(fn, self)
        elif self._waiters is _NO_WAITERS:
            self._waiters = [fn]
        else:
            self._waiters.append(fn)

    def remove_done_callback(self, fn: Callable[[Future], None]) -> None:
        with contextlib.suppress(ValueError):
            self._waiters.remove(fn)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, _NO_WAITERS
        for fn in waiters:
            self.kernel.call_soon(fn, self)

    def __await__(self) -> Generator[Any, None, Any]:
        if not self._done:
            yield self
        return self.result()


class _Sleep:
    """Awaitable for `Kernel.sleep`: the task reschedules itself, no Future needed."""

    __slots__ = ("delay",)

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def __await__(self) -> Generator[Any, None, None]:
        yield self


class Task(Future):
    """A coroutine driven by the kernel. It is itself a Future of the coroutine's result.

    `state` is for display: "ready", "waiting", "sleeping", "done", "failed" or "cancelled".
    """

    __slots__ = ("_awaiting", "_cancel_requested", "_cause", "_timer", "coro", "name", "state")

    def __init__(self, kernel: Kernel, coro: Coroutine[Any, Any, Any], name: str) -> None:
        super().__init__(kernel)
        self.coro = coro
        # The task's own current cause (see the module docstring): the spawner's, then whatever
        # the task itself set when it last yielded.
        self._cause: int | None = kernel.cause
        self.name = name
        self.state = "ready"
        self._awaiting: Future | None = None
        # Scheduled as the plain function with the task as argument, and the task is itself the
        # done-callback of what it awaits (`__call__`): no bound method allocated per step.
        self._timer: Timer | None = kernel.call_soon(Task._resume, self, None)
        self._cancel_requested = False
        kernel.tasks[self] = None

    def cancel(self) -> bool:
        """Throw `Cancelled` into the coroutine at the current instant. False if already done."""
        if self._done or self._cancel_requested:
            return False
        self._cancel_requested = True
        if self._awaiting is not None:
            self._awaiting.remove_done_callback(self)
            self._awaiting = None
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.kernel.call_soon(Task._resume, self, None)
        return True

    def __call__(self, fut: Future) -> None:
        """The awaited future `fut` is done: resume (see __init__)."""
        if self._awaiting is not fut:
            return  # cancelled after the future resolved: the cancellation resumes the task
        self._awaiting = None
        self._resume(fut)

    def _resume(self, fut: Future | None) -> None:
        if self._done:
            return
        self._timer = None
        self.state = "ready"
        kernel = self.kernel
        kernel._task_depth += 1
        # The task's context, not its waker's; the caller's comes back afterwards (a task can be
        # resumed inline by `set_result_inline`).
        outer, kernel.cause = kernel.cause, self._cause
        try:
            if self._cancel_requested:
                self._cancel_requested = False
                yielded = self.coro.throw(Cancelled())
            elif fut is not None and fut._exception is not None:
                yielded = self.coro.throw(fut._exception)
            else:
                yielded = self.coro.send(fut._result if fut is not None else None)
        except StopIteration as stop:
            kernel._task_depth -= 1
            self._cause, kernel.cause = kernel.cause, outer
            self.state = "done"
            del kernel.tasks[self]
            self.set_result(stop.value)
            return
        except Cancelled as exc:
            kernel._task_depth -= 1
            self._cause, kernel.cause = kernel.cause, outer
            self.state = "cancelled"
            del kernel.tasks[self]
            self.set_exception(exc)
            return
        except Exception as exc:
            kernel._task_depth -= 1
            self._cause, kernel.cause = kernel.cause, outer
            self.state = "failed"
            del kernel.tasks[self]
            self.set_exception(exc)
            self.kernel.task_failed(self, exc)
            return
        kernel._task_depth -= 1
        self._cause, kernel.cause = kernel.cause, outer
        if type(yielded) is _Sleep:
            self.state = "sleeping"
            self._timer = self.kernel.call_later(yielded.delay, Task._resume, self, None)
        elif isinstance(yielded, Future):
            self.state = "waiting"
            self._awaiting = yielded
            yielded.add_done_callback(self)
        else:
            error = TypeError(f"task {self.name} awaited {yielded!r}, not a kernel future")
            self.state = "failed"
            del kernel.tasks[self]
            self.coro.close()
            self.set_exception(error)
            self.kernel.task_failed(self, error)

    def __del__(self) -> None:
        # A simulation dropped before this task's first step: close the coroutine quietly
        # (otherwise Python warns that it was never awaited).
        if not getattr(self, "_done", True) and type(getattr(self, "coro", None)) is CoroutineType:
            self.coro.close()

    # -- snapshots (controlplane.session.timetravel.snapshot) ------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """A task pickles with its coroutine replaced: a finished one by None, a parked one by
        how to build its continuation (`resumable`); any other raises `NotQuiescent`."""
        state = {name: getattr(self, name) for name in (*Future.__slots__, *Task.__slots__)}
        state["coro"] = None if self._done else _Resume(_continuation(self))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        if isinstance(state.get("coro"), _Resume):
            if _thawing is None:
                raise RuntimeError("a parked task is unpickled by controlplane.session.timetravel.snapshot.loads only")
            _thawing.append(self)

    def __repr__(self) -> str:
        return f"<Task {self.name} {self.state}>"


class NotQuiescent(Exception):
    """A task is suspended where no `resumable` declaration knows how to continue it (in the
    middle of a sync, a kubelet's pod sync, a scheduler's bind), or is about to run: the world
    cannot be snapshotted now."""


# Resumption of parked tasks (see `resumable`): the chain of code objects from the task's
# coroutine to the one awaiting the future -> how to continue it.
_RESUMABLE: dict[tuple[CodeType, ...], Callable[[list[dict[str, Any]], Future | None], Callable[[], Any]]] = {}
_thawing: list[Task] | None = None  # the parked tasks of the snapshot being loaded


def resumable(
    *functions: Callable[..., Any], resume: Callable[[list[dict[str, Any]], Future | None], Callable[[], Any]]
) -> None:
    """Declare a *parking place*: a long-lived loop (a controller's worker waiting for a key, an
    informer waiting on its watch) suspended with the chain of coroutines `functions` (the
    task's own first), the last awaiting a kernel future directly or sleeping. `resume(frames,
    fut)` gets the locals of each frame and the awaited future (None for a sleep) and returns a
    picklable callable (a `functools.partial` of a bound method) that builds a coroutine which,
    run to its first suspension, awaits that same future (or sleeps: the task's pending timer
    wakes it) and then goes on exactly as the suspended chain would.

    A snapshot (controlplane.session.timetravel.snapshot) is possible when every live task is parked in a declared
    place: nothing half-done is then in flight, and everything else is data."""
    _RESUMABLE[tuple(fn.__code__ for fn in functions)] = resume


class _Resume:
    """A parked task's coroutine in a snapshot: the callable that rebuilds it."""

    __slots__ = ("build",)

    def __init__(self, build: Callable[[], Any]) -> None:
        self.build = build

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Resume, (self.build,))


def _parked_chain(task: Task) -> tuple[Callable[[list[dict[str, Any]], Future | None], Callable[[], Any]], list[Any]]:
    """The `resumable` declaration of the place `task` is parked in, and its coroutines (the
    task's own first); NotQuiescent when it is not parked in a declared place. Parked: waiting
    on a future not resolved yet, or sleeping (its timer pending)."""
    awaited = task._awaiting
    timer = task._timer
    if task._cancel_requested:
        raise NotQuiescent(f"task {task.name} is being cancelled")
    if task.state == "waiting" and awaited is not None and timer is None:
        if awaited._done:  # woken: its resumption is scheduled
            raise NotQuiescent(f"task {task.name} is about to resume")
        bottom = Future.__await__.__code__
    elif task.state == "sleeping" and awaited is None and timer is not None and timer[2] is not None:
        bottom = _Sleep.__await__.__code__
    else:
        raise NotQuiescent(f"task {task.name} is {task.state}")
    chain: list[Any] = []
    awaiting: Any = task.coro
    while type(awaiting) is CoroutineType:
        chain.append(awaiting)
        awaiting = awaiting.cr_await
    codes = tuple(coro.cr_code for coro in chain)
    resume = _RESUMABLE.get(codes)
    if resume is None or getattr(awaiting, "gi_code", None) is not bottom:
        where = " / ".join(code.co_qualname for code in codes)
        raise NotQuiescent(f"task {task.name} is suspended in {where}")
    return resume, chain


def parked(task: Task) -> bool:
    """`task` is parked in a declared place (see `resumable`): a snapshot can hold it."""
    try:
        _parked_chain(task)
    except NotQuiescent:
        return False
    return True


def _continuation(task: Task) -> Callable[[], Any]:
    resume, chain = _parked_chain(task)
    frames = []
    for coro in chain:
        frame = coro.cr_frame
        assert frame is not None  # a suspended coroutine has its frame
        frames.append(frame.f_locals)
    return resume(frames, task._awaiting)


def thaw_tasks(load: Callable[[], Any]) -> Any:
    """Run `load` (an unpickling) and then start the continuation of each parked task it
    restored: run to its first suspension, it must await the future the task was waiting on (or,
    for a sleeping task, sleep: its pending timer wakes it)."""
    global _thawing
    if _thawing is not None:
        raise RuntimeError("thaw_tasks is not re-entrant")
    tasks: list[Task] = []
    _thawing = tasks
    try:
        loaded = load()
    finally:
        _thawing = None
    for task in tasks:
        resume: Any = task.coro
        coro = resume.build()
        yielded = coro.send(None)
        if yielded is not task._awaiting and not (task._awaiting is None and type(yielded) is _Sleep):
            coro.close()
            raise RuntimeError(f"the continuation of task {task.name} did not park on its future")
        task.coro = coro
    return loaded


class Kernel:
    """Virtual clock + scheduler + seeded rng. See the module docstring for the guarantees."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.now = 0.0
        self.rng = Random(seed)
        self._heap: list[Timer] = []
        # Entries scheduled for the instant that was current when they were scheduled, in seq
        # order (so in (time, seq) order too): see the module docstring.
        self._ready: deque[Timer] = deque()
        # delay -> the lane of pending call_later(delay) entries; only a lane's head is in the
        # heap. Empty lanes are dropped (delays drawn at random would otherwise pile up).
        self._lanes: dict[float, _Lane] = {}
        self._seq = 0
        self.failures: list[tuple[Task, BaseException]] = []
        self._task_depth = 0  # > 0 while a task's coroutine is running
        self.tasks: dict[Task, None] = {}  # the tasks not finished, in spawn order
        self.cause: int | None = None  # the current cause (see the module docstring)
        self.events = 0  # callbacks run so far (cancelled entries are not events)
        # A ceiling on `events`: once reached, step() runs nothing and returns False, and
        # run_until()/advance() return early with the clock at the last event run.
        self.event_limit: int | None = None
        # When True (the default), a task that dies with an exception re-raises it out of
        # step()/advance(): a bug in a process must not silently stop part of the simulation.
        self.raise_task_failures = True
        # Event loops hosted on this kernel (an embedded operator's asyncio loop,
        # controlplane.operators): their coroutines cannot be pickled, so a kernel with one is
        # never quiescent (controlplane.session.timetravel.snapshot.quiescent).
        self.guests = 0

    # -- scheduling -------------------------------------------------------------------------
    def call_at(self, when: float, fn: Callable[..., Any], *args: Any) -> Timer:
        self._seq += 1
        when = round(when * NS_PER_SECOND) / NS_PER_SECOND  # vtime, inlined (hot path)
        if when > self.now:
            timer = Timer((when, self._seq, fn, args, None, self.cause))
            heapq.heappush(self._heap, timer)
        else:
            timer = Timer((self.now, self._seq, fn, args, None, self.cause))
            self._ready.append(timer)
        return timer

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> Timer:
        self._seq += 1
        if delay > 0:
            when = round((self.now + delay) * NS_PER_SECOND) / NS_PER_SECOND  # vtime, inlined
            if when > self.now:
                lane = self._lanes.get(delay)
                if lane is None:
                    lane = self._lanes[delay] = _Lane(delay)
                timer = Timer((when, self._seq, fn, args, lane, self.cause))
                if not lane:
                    heapq.heappush(self._heap, timer)  # the lane's new head
                lane.append(timer)
                return timer
        timer = Timer((self.now, self._seq, fn, args, None, self.cause))
        self._ready.append(timer)
        return timer

    def call_at_end_of_instant(self, when: float, fn: Callable[..., Any], *args: Any) -> Timer:
        """Run `fn` at `when` (the current instant if earlier) once every other callback due at
        `when` has run, including those scheduled meanwhile for `when`. Several such callbacks at
        one instant run in scheduling order, each after the regular callbacks the previous one
        scheduled for that instant."""
        self._seq += 1
        # The same heap, with a sequence number above every regular one: (time, seq) order puts
        # the entry after all regular entries of its instant, and the hot loop pays nothing.
        timer = Timer((max(vtime(when), self.now), END_OF_INSTANT + self._seq, fn, args, None, self.cause))
        heapq.heappush(self._heap, timer)
        return timer

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> Timer:
        self._seq += 1
        timer = Timer((self.now, self._seq, fn, args, None, self.cause))
        self._ready.append(timer)
        return timer

    # -- processes --------------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "task") -> Task:
        """Start a coroutine as a task; its first step runs at the current instant."""
        return Task(self, coro, name)

    def create_future(self) -> Future:
        return Future(self)

    def sleep(self, delay: float) -> _Sleep:
        """`await kernel.sleep(d)` resumes the calling task `d` virtual seconds later."""
        return _Sleep(delay)

    def task_failed(self, task: Task, exc: BaseException) -> None:
        self.failures.append((task, exc))
        if self.raise_task_failures:
            raise exc

    # -- running ----------------------------------------------------------------------------
    def _first(self) -> Timer | None:
        """The next entry in (time, seq) order, cancelled or not, left in place; None if none."""
        heap, ready = self._heap, self._ready
        if ready and (not heap or ready[0] < heap[0]):
            return ready[0]
        return heap[0] if heap else None

    def _remove_first(self) -> Timer:
        heap, ready = self._heap, self._ready
        if ready and (not heap or ready[0] < heap[0]):
            return ready.popleft()
        return self._pop_heap()

    def _pop_heap(self) -> Timer:
        """Pop the heap's head; if it heads a lane, the lane's next entry takes its place."""
        heap = self._heap
        entry = heapq.heappop(heap)
        lane = entry[4]
        if lane is not None:
            lane.popleft()
            if lane:
                heapq.heappush(heap, lane[0])
            else:
                del self._lanes[lane.delay]
        return entry

    def next_entry(self) -> tuple[float, Callable[..., Any], tuple[Any, ...]] | None:
        """`(time, fn, args)` of the next live callback (dropping cancelled ones at the head)."""
        if self.peek() is None:
            return None
        first = self._first()
        assert first is not None
        return first[0], first[2], first[3]

    def peek(self) -> float | None:
        """Time of the next live callback, or None when nothing is scheduled."""
        first = self._first()
        while first is not None and first[2] is None:
            self._remove_first()
            first = self._first()
        return first[0] if first is not None else None

    @property
    def limit_reached(self) -> bool:
        """The `event_limit` is reached: nothing more runs until it is raised."""
        return self.event_limit is not None and self.events >= self.event_limit

    def step(self) -> bool:
        """Run exactly one callback (moving the clock to its time). False when none is left
        (or the event limit is reached)."""
        if self.limit_reached:
            return False
        while self._first() is not None:
            when, _, fn, args, _, cause = self._remove_first()
            if fn is None:
                continue
            self.now = when
            self.events += 1
            self.cause = cause
            try:
                fn(*args)
            finally:
                self.cause = None  # outside the loop nothing caused what runs next
            return True
        return False

    def advance(self, seconds: float) -> None:
        """Run every callback due up to `now + seconds` (including ones scheduled meanwhile,
        each at its own time) and leave the clock at `now + seconds`."""
        self.run_until(self.now + seconds)

    def run_until(self, t: float) -> None:
        t = vtime(t)
        heap, ready, lanes = self._heap, self._ready, self._lanes
        pop, push, popleft = heapq.heappop, heapq.heappush, ready.popleft
        limit = math.inf if self.event_limit is None else self.event_limit
        try:
            while True:
                if self.events >= limit:
                    return  # the clock stays at the last event run
                # The earlier of the two heads in (time, seq) order: `_first` and `_pop_heap`,
                # inlined (hot loop).
                if ready and (not heap or ready[0] < heap[0]):
                    if ready[0][0] > t:
                        break
                    entry = popleft()
                elif heap and heap[0][0] <= t:
                    entry = pop(heap)
                    lane = entry[4]
                    if lane is not None:
                        lane.popleft()
                        if lane:
                            push(heap, lane[0])
                        else:
                            del lanes[lane.delay]
                else:
                    break
                fn = entry[2]
                if fn is None:
                    continue
                self.now = entry[0]
                self.events += 1
                self.cause = entry[5]
                fn(*entry[3])
        finally:
            self.cause = None  # outside the loop nothing caused what runs next
        if t > self.now:
            self.now = t

    def run(self, max_events: int | None = None) -> int:
        """Run until nothing is scheduled (or `max_events` callbacks ran); returns the count."""
        n = 0
        while (max_events is None or n < max_events) and self.step():
            n += 1
        return n

    def upcoming(
        self, limit: int, after: float | None = None
    ) -> list[tuple[float, Callable[..., Any], tuple[Any, ...]]]:
        """The next `limit` live callbacks due strictly after `after` (default: now), in run
        order, as `(time, fn, args)`. A pure read for display: it walks the heap from its root
        in order (a second small heap of positions, following each lane from its head), O(k log k)
        for k entries visited, instead of sorting the whole heap."""
        horizon = self.now if after is None else after
        heap = self._heap
        out: list[tuple[float, Callable[..., Any], tuple[Any, ...]]] = []
        # (entry, position, lane): a heap position when lane is None, else a position in lane.
        frontier: list[tuple[Timer, int, _Lane | None]] = [(heap[0], 0, None)] if heap else []
        while frontier and len(out) < limit:
            entry, i, lane = heapq.heappop(frontier)
            if entry[2] is not None and entry[0] > horizon:
                out.append((entry[0], entry[2], entry[3]))
            if lane is None:
                for child in (2 * i + 1, 2 * i + 2):
                    if child < len(heap):
                        heapq.heappush(frontier, (heap[child], child, None))
                lane, i = entry[4], 0  # a lane's head: its successors follow
            if lane is not None and i + 1 < len(lane):
                heapq.heappush(frontier, (lane[i + 1], i + 1, lane))
        return out

    def pending(self) -> int:
        """Number of live scheduled callbacks (cancelled ones excluded). O(n): for display, not
        for the hot path."""
        heads = sum(1 for entry in self._heap if entry[2] is not None and entry[4] is None)
        in_lanes = sum(1 for lane in self._lanes.values() for entry in lane if entry[2] is not None)
        return heads + in_lanes + sum(1 for entry in self._ready if entry[2] is not None)

"""Expensive reads without starving the process: bounded in number, in size per message, and in
their share of the event loop.

Guarantees
----------
* **Capped.** A process asks at most `Gate.slots` expensive reads of one kind at a time (the
  report and the scenario export: 1, 4 waiting; Kubernetes lists: 4, 256 waiting), queues at
  most `Gate.queue` more for
  at most `Gate.wait` seconds each, and turns the rest away with `Busy` (HTTP 429 with
  `Retry-After`, as kube-apiserver's max-in-flight limit does).
* **Chunked.** The host answers them as text in messages of at most `CHUNK` characters: the
  answer's text is made at once (an atomic snapshot of the simulation; the report by
  `Simulation.report_json`, which encodes the stored objects where they are instead of copying
  them), then sent part by part, never more than `AHEAD` messages ahead of the requester in
  this process. No message holds a Python object tree (the in-memory channel layer deep-copies
  every message).
* **A fair share.** The host's reads get at most `READ_SHARE` of the event loop's time while
  anything else wants it: after every `SLICE` of work on them, the reader hands the loop to the
  others for as long again, while they use it (`Pacer`), so the simulations'
  driving tasks, frames, commands and other requests run in between. Reads wait in the host's
  own queue (at most `MAX_QUEUED`, and `MAX_QUEUED_EACH` from one requester: a websocket
  viewer asks without a gate; beyond, an immediate "busy" answer); commands, status and the
  viewers' state are answered by the listener meanwhile.
* **Built aside.** A report's text is made in a forked child of the process (`built_aside`)
  while the event loop goes on (at the same CPU priority: niced, on a machine loaded by other
  work it was starved past the requester's 10 s wait for the answer's first part): the child
  sees the world exactly as it was at the fork (copy-on-write), so the text is byte for byte
  the one the loop would have made.
  Built on the loop it was one uninterruptible step of 0.35-0.45 s at 10,000 pods, and 10
  concurrent report.json halved a 1x simulation (0.48x). Where `os.fork` is missing or fails,
  the text is made on the loop as before. The child costs, while it builds, its copies of the
  pages it touches (reference counts are writes: at 3,000 pods ~30 MB of a 77 MB world) and the
  text, which it writes to a pipe a part at a time.
* **Released.** A requester that gives up (timeout, client gone) marks its reply channel
  abandoned: the host stops sending to it and whatever it holds is dropped at once; after a
  burst of big answers, the process gives freed heap back to the system (`trim`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import ctypes.util
import gc
import os
import signal
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer

Obj = dict[str, Any]

CHUNK = 256 * 1024  # characters of an answer per channel message
AHEAD = 8  # messages the host may be ahead of a requester in this process (2 MiB)
SLICE = 0.005  # seconds of serialising between two chances for the loop to run something else
READ_SHARE = 0.5  # of the event loop's time, at most, for the host's expensive reads (while others want it)
IDLE_ROUND = 0.0002  # seconds: a round of the loop this short found nobody else ready
LONG_DEBT = 0.05  # seconds: a debt this large after a read (a frame's interval) is slept off
SEND_WAIT = 10.0  # seconds the host waits for room in a reply channel before giving up on it
ABANDONED_FOR = 120.0  # seconds an abandoned reply channel is remembered
MAX_QUEUED = 256  # expensive reads waiting in one simulation's host queue (from all processes) ...
MAX_QUEUED_EACH = 2  # ... and from one requester (a websocket viewer's channel asks without a gate)
STREAMED = frozenset({"report", "export", "k8s_list", "records"})  # answered by `answer`, as text in chunks


class Busy(Exception):
    """Too many expensive reads are in flight or waiting: try again after `retry_after` s."""

    def __init__(self, what: str, retry_after: int) -> None:
        super().__init__(f"too many {what} requests at once: try again in {retry_after} s")
        self.retry_after = retry_after


class NoAnswer(LookupError):
    """The simulation's host did not answer within the time given: it is busy (a 10,000-pod step,
    a loaded machine), or the process hosting it is gone. Not "no such simulation": a door that
    checked the session exists answers 503 (the pages) or 504 (the Kubernetes API), not 404."""


class Gate:
    """At most `slots` holders at once, at most `queue` waiting (each at most `wait` seconds).
    Plain futures rather than an asyncio.Semaphore: bound to whichever loop awaits them."""

    def __init__(self, what: str, slots: int, queue: int, wait: float, retry_after: int) -> None:
        self.what, self.slots, self.queue, self.wait, self.retry_after = what, slots, queue, wait, retry_after
        self.held = 0
        self.waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> None:
        if self.held < self.slots and not self.waiters:
            self.held += 1
            return
        if len(self.waiters) >= self.queue:
            raise Busy(self.what, self.retry_after)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.wait)
        except BaseException as exc:
            with contextlib.suppress(ValueError):
                self.waiters.remove(waiter)
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over just as this waiter gave up
            else:
                waiter.cancel()
            if isinstance(exc, TimeoutError):
                raise Busy(self.what, self.retry_after) from None
            raise

    def release(self) -> None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes to the waiter: `held` stays
                return
        self.held -= 1


GATES: dict[str, Gate] = {}


def gate(op: str) -> Gate | None:
    if not GATES:
        reports = Gate("report and export", slots=1, queue=4, wait=30.0, retry_after=5)
        # A report of the past (`report.json?at=T`) runs headless in a child process: one per
        # server process at a time (the machine's cores are the simulations'), 4 waiting.
        past = Gate("report of the past", slots=1, queue=4, wait=30.0, retry_after=5)
        GATES.update(
            {
                "report": reports,
                "export": reports,
                "k8s_list": Gate("list", 4, 256, 30.0, 1),
                "report_at": past,
                # The complete trace view scrolls by pages: a filter's first page scans the log.
                "records": Gate("trace records", 2, 32, 30.0, 1),
            }
        )
    return GATES.get(op)


# -- the requester's side ------------------------------------------------------------------------------
_abandoned: dict[str, float] = {}


def abandon(layer: Any, reply_to: str) -> None:
    """The requester will not read `reply_to` again: drop what it holds, and tell the host of
    this process (a host in another process stops when the channel stays full)."""
    now = time.monotonic()
    for channel, since in list(_abandoned.items()):
        if now - since > ABANDONED_FOR:
            del _abandoned[channel]
    if isinstance(layer, InMemoryChannelLayer):
        _abandoned[reply_to] = now
        layer.channels.pop(reply_to, None)


def abandoned(reply_to: str | None) -> bool:
    return reply_to is not None and reply_to in _abandoned


def forget(layer: Any, reply_to: str | None) -> None:
    """After the host's last message to `reply_to`: if the requester gave up, drop it."""
    if reply_to is not None and _abandoned.pop(reply_to, None) is not None and isinstance(layer, InMemoryChannelLayer):
        layer.channels.pop(reply_to, None)


class Answer:
    """A streamed answer: `head` (ok, error, code…), then its text in parts. Read `text()` to
    its end or `aclose()` it: either frees the requester's slot (`close`, called once)."""

    def __init__(self, head: Obj, first: str, more: bool, parts: AsyncIterator[str], close: Any = None) -> None:
        self.head, self.first, self.more = head, first, more
        self._parts = parts
        self._close = close

    async def text(self) -> AsyncIterator[str]:
        try:
            yield self.first
            async for part in self._parts:
                yield part
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        await self._parts.aclose()  # type: ignore[attr-defined]
        close, self._close = self._close, None
        if close is not None:
            close()


async def receive(layer: Any, channel: str, timeout: float) -> Obj:
    try:
        message: Obj = await asyncio.wait_for(layer.receive(channel), timeout)
    except TimeoutError:
        raise NoAnswer(f"the simulation did not answer within {timeout:g} s") from None
    return message


# -- the host's side -------------------------------------------------------------------------------------
class Pacer:
    """Keeps the host's reads to `READ_SHARE` of the loop while anything else wants it.

    Every slice of reads' work owes the others (1 / READ_SHARE - 1) times as long (`debt`).
    `pause()` pays it in rounds of the loop -- every other ready task runs once a round -- for as
    long as they keep it busy; a round that finds nobody else ready (the simulation waits for its
    next timer, no frame is due, no request is in) ends the payment, so a read alone on an idle
    server is not slowed down. `settle()`, after each read, pays a debt left by long
    uninterrupted work (building a big report is one step) by sleeping it off: the next long step
    waits, and timers that fell due meanwhile (frames, a 1x simulation) get their turn. The work
    is reported to `account` (the host's total)."""

    def __init__(self, account: Any = None) -> None:
        self.account = account
        self.since = time.monotonic()
        self.debt = 0.0  # seconds of loop time the reads owe the others

    def start(self) -> None:
        self.since = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self.since >= SLICE

    async def pause(self) -> None:
        work = time.monotonic() - self.since
        if self.account is not None:
            self.account(work)
        self.debt += work * (1.0 / READ_SHARE - 1.0)
        while self.debt > 0:
            before = time.monotonic()
            await asyncio.sleep(0)  # one round of every other ready callback
            took = time.monotonic() - before
            self.debt -= took
            if took < IDLE_ROUND:
                break  # nobody else wanted the loop
        self.debt = max(0.0, self.debt)  # a round that ran over is not banked
        self.since = time.monotonic()

    async def settle(self) -> None:
        if self.debt >= LONG_DEBT:
            await asyncio.sleep(self.debt)
        self.debt = 0.0
        self.since = time.monotonic()


FORK_BUILDS = hasattr(os, "fork") and os.environ.get("CTRLSCOPE_FORK_REPORTS", "1") != "0"
# Seconds a child may take to build: a 10,000-pod report takes seconds, even on a loaded machine.
# A child forked while another thread of the server held a lock (a logging handler's, say) could
# wait for it for ever; past this it is killed and the text is built on the loop after all.
ASIDE_TIMEOUT = 120.0


async def built_aside(build: Callable[[], str]) -> str:
    """`build()`, run in a forked child while the loop goes on (module docstring: *Built
    aside*). Call it where `build()` would have run: the child sees the world as it is at this
    moment; nothing the child does reaches the parent but the text. On the loop when there is
    no fork, or the child fails."""
    if not FORK_BUILDS:
        return build()
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return build()
    try:
        with warnings.catch_warnings():
            # (the child runs only `build` and writes to the pipe: no lock another thread held)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return build()
    if pid == 0:  # the child: build, write, leave without running anything of the parent's
        code = 1
        try:
            os.close(read_end)
            gc.disable()  # no finalizer of the parent's objects runs here
            text = build()
            for start in range(0, len(text), 1 << 20):  # encoded a part at a time: no second copy
                data = memoryview(text[start : start + (1 << 20)].encode())
                while data:
                    data = data[os.write(write_end, data) :]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    collected = asyncio.get_running_loop().run_in_executor(None, _collect, read_end, pid)
    try:
        data, status = await asyncio.wait_for(asyncio.shield(collected), ASIDE_TIMEOUT)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # its pipe closes: the collecting thread ends
        data, status = await collected
    if status != 0:
        return build()
    return data.decode()


def _collect(fd: int, pid: int) -> tuple[bytes, int]:
    """In a thread: everything the child writes, then its exit status."""
    parts = []
    try:
        while chunk := os.read(fd, 1 << 20):
            parts.append(chunk)
    finally:
        os.close(fd)
        _, status = os.waitpid(pid, 0)
    return b"".join(parts), status


def text_pieces(text: str) -> Iterator[str]:
    for start in range(0, len(text), CHUNK):
        yield text[start : start + CHUNK]


async def _send(layer: Any, channel: str, message: Obj) -> bool:
    """Send one part, waiting (boundedly) while the requester is `AHEAD` behind or the channel
    is full. False when the requester gave up or never made room."""
    deadline = time.monotonic() + SEND_WAIT
    while not abandoned(channel):
        queue = getattr(layer, "channels", {}).get(channel) if isinstance(layer, InMemoryChannelLayer) else None
        if queue is None or queue.qsize() < AHEAD:
            try:
                await layer.send(channel, message)
                return True
            except ChannelFull:
                pass
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return False


async def stream(layer: Any, message: Obj, head: Obj, pieces: Iterator[str], pacer: Pacer) -> None:
    """Send `head` and the text of `pieces` to the message's `reply_to`, in parts of about
    `CHUNK` characters, pausing (`pacer`) every `SLICE` of work."""
    global _untrimmed
    reply_to = message.get("reply_to")
    if not reply_to:
        return
    buffer: list[str] = []
    size = 0
    first = True
    pieces = iter(pieces)
    while True:
        piece = next(pieces, None)
        if piece is not None:
            buffer.append(piece)
            size += len(piece)
            if size < CHUNK:
                if pacer.due():
                    await pacer.pause()
                    if abandoned(reply_to):
                        return
                continue
        text, more = "".join(buffer), piece is not None
        buffer, size = [], 0
        if first:
            op = (message.get("cmd") or {}).get("op")
            part: Obj = {"type": "sim.reply", "id": message.get("id"), "op": op, "result": head}
            first = False
        else:
            part = {"type": "sim.part"}
        part.update(text=text, more=more, parts=True)
        if more:
            _untrimmed = True
        if not await _send(layer, reply_to, part) or not more:
            return
        if pacer.due():
            await pacer.pause()


_untrimmed = False  # a big answer went out since the last trim


def trim(*, if_needed: bool = False) -> None:
    """Give the heap's free pages back to the system (glibc; elsewhere nothing). With
    `if_needed` (the heartbeat's, after the server wrote the answers out), only when a big
    answer went out since the last such trim."""
    global _untrimmed
    if if_needed:
        if not _untrimmed:
            return
        _untrimmed = False
    if _libc is not None:
        _libc.malloc_trim(0)


def _load_libc() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        # Blocks of 128 KiB and more (the parts of big answers, the server's write buffers)
        # come from mmap and go back to the system when freed: glibc's default raises this
        # threshold to the largest block freed so far, and such blocks then stay in the heap.
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mallopt(M_MMAP_THRESHOLD, 128 * 1024)
    except (OSError, AttributeError):
        return None
    return libc


M_MMAP_THRESHOLD = -3  # glibc's malloc.h
_libc = _load_libc()

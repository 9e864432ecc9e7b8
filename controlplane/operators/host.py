"""`OperatorHost`: the world's embedded operators (a scenario's `operators:` key), each a user's
kopf module running unmodified on its own `SimLoop`, talking to the simulated API server through
its own `Client` and in-memory door.

Guarantees
----------
* kopf and aiohttp are imported only when a world has an operator: the rest of ctrlscope needs
  neither.
* Each operator: its module is imported (from its path, under a name of its own) while a fresh
  `kopf.OperatorRegistry` is kopf's default, so its bare `@kopf.on...` decorators land in that
  registry and nowhere else; a login handler of ours gives kopf an `aiohttp.ClientSession` over
  `aiohttp.UnixConnector` to the door (kopf's documented custom-session hook); kopf runs as
  `kopf.operator(...)`, standalone (no peering: no hostname, no wall-clock lease), with an
  explicit identity, the scenario's namespaces (cluster-wide without), an asyncio future as its
  stop flag, and settings pre-filled by the host (no resource scanning, no hung-exit kill), then
  the scenario's `settings`. Its User-Agent is `userAgent` (default `kopf/<name>`): the request
  log, `apiFault {client}` and `watchFault {client}` see it under that name.
* Its randomness is its own (`StepShims`, seeded from the world's seed and the operator's index).
* `stop()` (the world's end): the stop flag is set, the loop is detached from the kernel (the
  world does not move) and run on its own clock to the end of kopf's shutdown, the aiohttp
  sessions are closed, every task left is cancelled and finished, the loop closed, the module
  forgotten and the process-wide shims put back. No "Task was destroyed" warnings.
* What kopf or the loop reports as failed (the operator's root task ending, an exception asyncio
  caught) becomes an `error` trace record through `report_error`.
* A world with an operator cannot be pickled (asyncio coroutines cannot be): the host, its loops,
  doors and connections raise a TypeError saying so, which the snapshot turns into a `SnapshotError`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib.util
import inspect
import itertools
import logging
import pathlib
import random
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controlplane.operators import oracle
from controlplane.operators.loop import SimLoop, Unpicklable
from controlplane.operators.shims import ProcessShims, StepShims
from controlplane.operators.transport import Door
from controlplane.vocabulary import ScenarioError

if TYPE_CHECKING:
    from controlplane.apiserver.client import Client
    from controlplane.kernel import Kernel

Obj = dict[str, Any]
_MODULE_NAMES = itertools.count(1)  # a fresh module name per import (two worlds, one process)
SERVER = "http://simulated-apiserver"


@dataclass
class Operator:
    """One embedded operator (module docstring)."""

    index: int
    name: str
    path: pathlib.Path
    namespaces: list[str]
    user_agent: str
    settings: Obj
    loop: SimLoop | None = None
    door: Door | None = None
    module: types.ModuleType | None = None
    module_name: str = ""
    stop_flag: Any = None
    root: Any = None
    sessions: list[Any] = field(default_factory=list)
    shims: StepShims | None = None
    ended: str | None = None  # why the root task ended before the world did
    restarts: int = 0  # `controllerFault {operator, fault: restart}`s so far
    stopping: bool = False  # its loop is being ended (the world's end, or a crash)
    kopf_settings: Any = None  # kopf's OperatorSettings it runs with (its startup handlers' changes too)
    registry: Any = None  # its kopf.OperatorRegistry (this start's)
    handlers: list[tuple[list[Any], int, Any]] = field(default_factory=list)  # (list, index, as declared)
    slow: float = 0.0  # `controllerFault {operator, fault: slow, seconds}`: the most one invocation is charged
    slowed: bool = False  # its handlers are wrapped to be charged (since its first slow fault)
    slow_rng: Any = None  # draws each invocation's charge (seeded from the world's seed and its index)
    oracles: list[tuple[str, Any]] = field(default_factory=list)  # its module's (controlplane.operators.oracle)


def operator_name(spec: Obj) -> str:
    """An operator's name: its module's file name without `.py`."""
    return pathlib.PurePath(str(spec["module"])).stem


def module_path(raw: str, where: str) -> pathlib.Path:
    """The file an operator's `module` names; ScenarioError when it is not a readable .py file."""
    path = pathlib.Path(raw).expanduser()
    if path.suffix != ".py":
        raise ScenarioError(f"{where}: {raw!r} is not a Python file (it must end in .py)")
    if not path.is_file():
        raise ScenarioError(f"{where}: no such file {raw!r} (a path relative to the directory the run starts in)")
    return path.resolve()


class OperatorHost(Unpicklable):
    """The embedded operators of one world (module docstring)."""

    def __init__(
        self,
        kernel: Kernel,
        specs: list[Obj],
        *,
        seed: int,
        client: Callable[[str], Client],
        watch_latency: float,
        report_error: Callable[[str, str], None],
        trace: Any = None,
    ) -> None:
        self.kernel = kernel
        self.trace = trace
        self.seed = seed
        self._client = client
        self.watch_latency = watch_latency
        self.report_error = report_error
        self.operators: list[Operator] = []
        for i, spec in enumerate(specs):
            name = operator_name(spec)
            path = module_path(str(spec["module"]), f"operators[{i}].module")
            self.operators.append(
                Operator(
                    index=i,
                    name=name,
                    path=path,
                    namespaces=list(spec.get("namespaces") or []),
                    user_agent=str(spec.get("userAgent") or f"kopf/{name}"),
                    settings=dict(spec.get("settings") or {}),
                )
            )
        self.started = False
        self.stopped = False

    # -- start ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Import every operator's module and start it (ScenarioError naming the operator when its
        module cannot be imported or a setting does not exist)."""
        if self.started:
            return
        self.started = True
        for op in self.operators:
            self._start(op)

    def _start(self, op: Operator) -> None:
        import aiohttp
        import kopf

        where = f"operators[{op.index}]"
        registry = kopf.OperatorRegistry()
        op.module_name = f"ctrlscope_operator_{next(_MODULE_NAMES)}_{op.name}"
        op.module = self._import(op, registry, where)
        loop = SimLoop(self.kernel, name=op.name)
        op.loop = loop
        op.door = Door(self.kernel, self._client(op.user_agent), watch_latency=self.watch_latency)
        path = f"ctrlscope-apiserver-{op.index}"
        loop.doors[path] = op.door
        loop.set_task_factory(op.door.task_factory)
        op.shims = StepShims(loop, f"ctrlscope-operator:{self.seed}:{op.index}")
        loop.step_hooks.append(op.shims)
        ProcessShims.acquire((op.module,))
        user_agent = op.user_agent

        async def login(**_: Any) -> Any:
            session = aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(path=path), headers={"User-Agent": user_agent}
            )
            op.sessions.append(session)
            return kopf.AiohttpSession(aiohttp_session=session, server=SERVER, default_namespace="default")

        kopf.on.login(registry=registry, id="ctrlscope-login")(login)
        op.registry = registry
        op.handlers = _resource_handlers(registry, kopf)
        self._wrap(op)
        settings = kopf.OperatorSettings()
        settings.scanning.disabled = True
        settings.process.ultimate_exiting_timeout = None
        _apply_settings(settings, op.settings, f"{where}.settings")
        op.kopf_settings = settings
        op.stop_flag = loop.create_future()
        coroutine = kopf.operator(
            registry=registry,
            settings=settings,
            standalone=True,
            identity=f"ctrlscope-{op.name}",  # type: ignore[arg-type]
            namespaces=op.namespaces,
            clusterwide=not op.namespaces,
            stop_flag=op.stop_flag,
        )
        op.root = loop.create_task(coroutine, name=f"operator {op.name}")
        op.root.add_done_callback(lambda task, op=op: self._ended(op, task))

    def _import(self, op: Operator, registry: Any, where: str) -> types.ModuleType:
        from kopf._core.intents import registries

        spec = importlib.util.spec_from_file_location(op.module_name, op.path)
        if spec is None or spec.loader is None:
            raise ScenarioError(f"{where}.module: {op.path} cannot be imported")
        module = importlib.util.module_from_spec(spec)
        previous = registries.get_default_registry()
        registries.set_default_registry(registry)
        sys.modules[op.module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(op.module_name, None)
            text = str(exc).splitlines()[0] if str(exc) else ""
            raise ScenarioError(
                f"{where}.module: {op.path.name} could not be imported: {type(exc).__name__}: {text[:300]}"
            ) from None
        finally:
            registries.set_default_registry(previous)
        try:
            op.oracles = oracle.collect(module)
        except ValueError as exc:
            sys.modules.pop(op.module_name, None)
            raise ScenarioError(f"{where}.module: {op.path.name} could not be imported: ValueError: {exc}") from None
        return module

    def _wrap(self, op: Operator) -> None:
        """Its resource handlers as kopf calls them: as declared, charged a seeded virtual duration
        once the operator has been slowed, and traced (syncs, `operator.handler`) when the world
        traces. (Its door is open: the requests its handlers send are caused by their syncs.)"""
        import kopf

        door = op.door
        assert door is not None, "an operator's handlers are wrapped once its door is open"
        for handlers, i, declared in op.handlers:
            fn = declared.fn
            if op.slowed:
                fn = _slowed(fn, op)
            if self.trace is not None:
                fn = _traced(fn, str(declared.id), op.name, self.trace, kopf, self.kernel, door)
            handlers[i] = dataclasses.replace(declared, fn=fn)

    def _ended(self, op: Operator, task: Any) -> None:
        if self.stopped or op.stopping or op.root is not task:  # the world's end, or a crash
            return
        if task.cancelled():
            op.ended = "cancelled"
        elif task.exception() is not None:
            exc = task.exception()
            op.ended = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        else:
            op.ended = "exited"
        self.report_error(f"operator {op.name}", f"the operator stopped before the world ended: {op.ended}")

    def has(self, name: str) -> bool:
        return any(op.name == name for op in self.operators)

    def restart(self, name: str) -> int:
        """`controllerFault {operator: name, fault: restart}`: the operator crashes now (its tasks
        cancelled, its connections and watches gone, its memory dropped) and starts again at the
        same instant with its module imported afresh: what it knew survives only in what it wrote
        to the API (kopf's progress and diff-base annotations). Returns its restarts so far."""
        op = next(op for op in self.operators if op.name == name)
        if op.loop is not None and not op.loop.is_closed():
            self._stop(op, crash=True)
            self._forget(op)
        op.restarts += 1
        for attr in ("loop", "door", "stop_flag", "root", "shims"):
            setattr(op, attr, None)
        op.sessions, op.ended, op.stopping = [], None, False
        if self.trace is not None and self.trace.enabled:
            self.trace.emit("controller.restart", controller=op.name, reason="fault")
        self._start(op)
        return op.restarts

    def _forget(self, op: Operator) -> None:
        if op.module is not None:
            sys.modules.pop(op.module_name, None)
            ProcessShims.release()
            op.module = None

    # -- faults -------------------------------------------------------------------------------------
    def slow(self, name: str, seconds: float) -> None:
        """`controllerFault {operator: name, fault: slow, seconds}`: from now on each invocation of
        its resource handlers is charged a virtual duration drawn from [0, seconds] by the
        operator's own generator (seeded from the world's seed and its index): the handler's
        result reaches kopf that much later. `seconds: 0` lifts it. A restart keeps it."""
        op = next(op for op in self.operators if op.name == name)
        op.slow = float(seconds)
        if op.slow > 0 and not op.slowed:
            op.slowed = True
            op.slow_rng = random.Random(f"ctrlscope-slow:{self.seed}:{op.index}")
            if op.registry is not None:
                self._wrap(op)

    def oracles(self) -> list[tuple[str, str, Any]]:
        """Every operator's oracles, as (operator, oracle name, predicate), in the scenario's and
        each module's order."""
        return [(op.name, name, fn) for op in self.operators for name, fn in op.oracles]

    def store(self, server: Any) -> oracle.Store:
        """What an oracle reads (controlplane.operators.oracle.Store)."""
        return oracle.Store(server, self.kernel.now)

    def client_watch_fault(self, entry: Obj) -> None:
        """A `watchFault {client}` entry: to every operator whose User-Agent it names."""
        for op in self.operators:
            if op.door is not None:
                op.door.watch_fault(entry)

    # -- stop -------------------------------------------------------------------------------------
    def stop(self) -> None:
        """The world's end (module docstring). Idempotent."""
        if self.stopped:
            return
        self.stopped = True
        try:
            for op in self.operators:
                if op.loop is not None:
                    self._stop(op)
        finally:
            for op in self.operators:
                self._forget(op)

    def _stop(self, op: Operator, *, crash: bool = False) -> None:
        # What kopf logs while it shuts down (requests cut short by the door closing) is not
        # part of the run: the `kopf` logger is quiet meanwhile.
        op.stopping = True
        kopf_logger = logging.getLogger("kopf")
        level = kopf_logger.level
        kopf_logger.setLevel(logging.CRITICAL)
        try:
            self._shutdown(op, crash=crash)
        finally:
            kopf_logger.setLevel(level)

    def _shutdown(self, op: Operator, *, crash: bool = False) -> None:
        """The end of one operator's loop, on its own clock (`SimLoop.run_detached`): the world's
        end sets kopf's stop flag and lets kopf shut down; a crash closes its door first (its
        connections end under it) and cancels its root task."""
        loop = op.loop
        assert loop is not None
        loop.detach()
        if crash:
            if op.door is not None:
                op.door.close()
            if op.root is not None:
                op.root.cancel()
        elif op.stop_flag is not None and not op.stop_flag.done():
            op.stop_flag.set_result(None)
        if op.root is not None:
            loop.run_detached(op.root.done)  # kopf cancels its watches and workers, which close their connections
        if op.door is not None:
            op.door.close()

        async def close_sessions() -> None:
            for session in op.sessions:
                await session.close()
            await loop.shutdown_asyncgens()

        closing = loop.create_task(close_sessions(), name="close sessions")
        loop.run_detached(closing.done)
        left = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in sorted(left, key=lambda t: t.get_name()):
            task.cancel()
        loop.run_detached(lambda: all(task.done() for task in left))
        for task in (op.root, closing, *left):
            if task is not None and task.done() and not task.cancelled():
                task.exception()  # retrieved: no "exception was never retrieved" at collection
        loop.close()

    def state(self) -> list[Obj]:
        """Each operator as the debugger's operator panel shows it: name, userAgent, namespaces
        (empty: cluster-wide), restarts, ended (why its root task ended early, or None) and
        where kopf keeps its per-object progress: `progressPrefix`, the annotation prefix of an
        `AnnotationsProgressStorage` (None when its progress is kept elsewhere: status, or a
        storage of the module's own)."""
        out = []
        for op in self.operators:
            storage = getattr(getattr(op.kopf_settings, "persistence", None), "progress_storage", None)
            prefix = _annotation_prefix(storage)
            out.append(
                {
                    "name": op.name,
                    "userAgent": op.user_agent,
                    "namespaces": list(op.namespaces),
                    "restarts": op.restarts,
                    "ended": op.ended,
                    "progressPrefix": prefix,
                }
            )
        return out

    @property
    def errors(self) -> list[Obj]:
        """What asyncio reported inside the operators' loops (their exception handler)."""
        return [{"operator": op.name, **e} for op in self.operators if op.loop is not None for e in op.loop.errors]


def _annotation_prefix(storage: Any) -> str | None:
    """The annotation prefix of kopf's progress storage `storage` (an
    `AnnotationsProgressStorage`, or a `SmartProgressStorage`'s annotations half), else None."""
    import kopf

    if isinstance(storage, kopf.MultiProgressStorage):
        for inner in storage.storages:
            prefix = _annotation_prefix(inner)
            if prefix is not None:
                return prefix
        return None
    if isinstance(storage, kopf.AnnotationsProgressStorage):
        prefix = storage.prefix
        return str(prefix) if prefix else None
    return None


def _resource_handlers(registry: Any, kopf: Any) -> list[tuple[list[Any], int, Any]]:
    """The resource handlers of `registry` (on.create/update/delete/resume/field, on.event,
    timers; not daemons, which live until the end) as declared: (its list, its index, handler).
    Each is wrapped (`OperatorHost._wrap`; `_traced`) so that every invocation is a sync for the
    debugger: `sync.start` when it begins (controller: the operator's name, key namespace/name,
    worker None, expectations None, version "kopf", handler: kopf's id, retry), `sync.end` when it
    ends (caused by the start; error: None on success, else the outcome's words; requeue: kopf's
    decision; and handler, retry, outcome, delay, traceback), then the `operator.handler` record:
    operator, key, handler, retry, started (virtual time it began), outcome (success, temporary,
    permanent, error), delay (a TemporaryError's), error (the exception's type and first line).
    The requests its worker task sends from its start on (the handler's own, and kopf's patch of
    its result) are caused by its `sync.start` (`Door.handler_causes`)."""
    out: list[tuple[list[Any], int, Any]] = []
    for sub in (registry._changing, registry._watching, registry._spawning):
        handlers = sub._handlers
        for i, handler in enumerate(handlers):
            if isinstance(handler, kopf._core.intents.handlers.DaemonHandler):
                continue
            out.append((handlers, i, handler))
    return out


def _slowed(fn: Callable[..., Any], op: Operator) -> Callable[..., Any]:
    """`fn` charged a virtual duration per invocation while its operator is slow (`OperatorHost.slow`):
    an async handler that runs `fn` (a sync one inline), then sleeps on virtual time, whatever
    `fn`'s outcome, before kopf sees it."""
    is_async = inspect.iscoroutinefunction(fn)

    async def charge() -> None:
        if op.slow > 0 and op.slow_rng is not None:
            seconds = round(op.slow_rng.uniform(0.0, op.slow), 3)
            if seconds > 0:
                await asyncio.sleep(seconds)

    async def slowed(*args: Any, **kwargs: Any) -> Any:
        try:
            result = (await fn(*args, **kwargs)) if is_async else fn(*args, **kwargs)
        except asyncio.CancelledError:
            raise
        except BaseException:
            await charge()
            raise
        await charge()
        return result

    slowed.__name__ = getattr(fn, "__name__", "handler")
    slowed.__qualname__ = getattr(fn, "__qualname__", slowed.__name__)
    return slowed


MAX_TRACEBACK = 4000  # characters of a failed handler's traceback kept in its sync.end


def _traced(
    fn: Callable[..., Any], handler_id: str, operator: str, trace: Any, kopf: Any, clock: Any, door: Door
) -> Callable[..., Any]:
    def key_of(kwargs: dict[str, Any]) -> str:
        namespace, name = kwargs.get("namespace"), kwargs.get("name")
        return f"{namespace}/{name}" if namespace else str(name)

    def begin(kwargs: dict[str, Any]) -> int | None:
        if not trace.enabled:
            return None
        seq: int | None = trace.emit(
            "sync.start",
            controller=operator,
            key=key_of(kwargs),
            worker=None,
            expectations=None,
            version="kopf",
            handler=handler_id,
            retry=int(kwargs.get("retry") or 0),
        )
        try:
            task = asyncio.current_task()
        except RuntimeError:
            task = None
        if task is not None and seq is not None:
            door.handler_causes[task] = seq
        return seq

    def record(kwargs: dict[str, Any], started: float, start_seq: int | None, exc: BaseException | None) -> None:
        if not trace.enabled:
            return
        key = key_of(kwargs)
        retry = int(kwargs.get("retry") or 0)
        outcome, delay, error, tb = "success", None, None, None
        requeue: dict[str, Any] | None = None
        if isinstance(exc, kopf.TemporaryError):
            outcome, delay = "temporary", exc.delay
            requeue = {"decision": "after", "delay": float(delay)} if delay is not None else None
        elif isinstance(exc, kopf.PermanentError):
            outcome = "permanent"
            requeue = {"decision": "none"}
        elif exc is not None:
            outcome = "error"
            requeue = {"decision": "rateLimited"}
        if exc is not None:
            text = str(exc).splitlines()[0] if str(exc) else ""
            error = f"{type(exc).__name__}: {text[:300]}".rstrip(": ")
            if outcome == "error":
                tb = "".join(traceback.format_exception(exc))[-MAX_TRACEBACK:]
        if start_seq is not None:
            trace.emit(
                "sync.end",
                start_seq,
                controller=operator,
                key=key,
                worker=None,
                start=started,
                error=None if exc is None else f"{outcome}: {error}",
                expectations=None,
                consistency=None,
                requeue=requeue,
                handler=handler_id,
                retry=retry,
                outcome=outcome,
                delay=delay,
                traceback=tb,
            )
        trace.emit(
            "operator.handler",
            operator=operator,
            key=key,
            handler=handler_id,
            retry=retry,
            started=started,
            outcome=outcome,
            delay=delay,
            error=error,
        )

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def traced_async(*args: Any, **kwargs: Any) -> Any:
            started = clock.now
            start_seq = begin(kwargs)
            try:
                result = await fn(*args, **kwargs)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                record(kwargs, started, start_seq, exc)
                raise
            record(kwargs, started, start_seq, None)
            return result

        return traced_async

    @functools.wraps(fn)
    def traced(*args: Any, **kwargs: Any) -> Any:
        started = clock.now
        start_seq = begin(kwargs)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            record(kwargs, started, start_seq, exc)
            raise
        record(kwargs, started, start_seq, None)
        return result

    return traced


def _apply_settings(settings: Any, values: Obj, where: str) -> None:
    """The scenario's `settings: {section: {field: value}}` onto kopf's OperatorSettings;
    ScenarioError naming an unknown section or field."""
    for section, fields in values.items():
        target = getattr(settings, section, None)
        if target is None or section.startswith("_"):
            raise ScenarioError(f"{where}.{section}: kopf's settings have no section {section!r}")
        for name, value in fields.items():
            if name.startswith("_") or not hasattr(target, name):
                raise ScenarioError(f"{where}.{section}.{name}: kopf's {section} settings have no {name!r}")
            setattr(target, name, value)

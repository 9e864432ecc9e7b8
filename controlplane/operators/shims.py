"""The determinism shims of an embedded operator: what makes a user's asyncio code, and kopf,
read the world's virtual clock and seeded randomness instead of the host's.

Guarantees
----------
* kopf's three wall-clock reads that reach request bodies or its retry timing (the Events'
  timestamps, the "touch" patch, the progress annotations' `started`/`delayed`, all
  `datetime.datetime.now`) read virtual time: the `datetime` name of those modules is a
  stand-in whose `datetime.now/utcnow/today` are `EPOCH + loop.time()` while an operator's loop
  runs (the host's clock otherwise). Installed with the first operator of the process and put
  back with the last (`ProcessShims`).
* During each step of an operator's loop (`StepShims`, entered by `SimLoop.run_step`):
  `time.time/time_ns/monotonic/monotonic_ns/perf_counter/perf_counter_ns` read virtual time
  (seconds since `EPOCH` for `time.time`), the module-global `random` draws from the operator's
  own generator (seeded from the world's seed and the operator's index, never from the host),
  `uuid.uuid4` and `os.urandom` draw from it too. After the step every one of them is the
  host's again, and the global `random`'s state is what it was before the step.
* kopf spawns its watchers (and peerings) in a sorted order of resources and namespaces, not in
  the order of its sets of string-hashed values, which would follow `PYTHONHASHSEED`.
* The `kopf` logger's level is fixed (INFO) while an operator runs: which records become
  Events (`settings.posting.level`) must not depend on the host's logging configuration.

Not covered (named in docs/operators.md): `datetime.datetime.now()` called from user code (the
C type cannot be patched; user modules that `import datetime` get the stand-in too, those that
`from datetime import datetime` do not), `from time import time` bound before the operator
starts, `secrets` and `random.SystemRandom` (the OS's entropy), and the hash seed (set
`PYTHONHASHSEED` for code that iterates sets of strings; kopf's own order-sensitive sets are
fine, see tests/controlplane/test_operators.py).
"""

from __future__ import annotations

import asyncio
import datetime as _datetime
import logging
import os
import random
import sys
import time
import types
import uuid
from typing import Any

from controlplane.kernel import EPOCH

# kopf's modules whose `datetime.datetime.now` reaches what it sends or when it retries.
KOPF_CLOCK_MODULES = (
    "kopf._cogs.clients.events",
    "kopf._core.actions.application",
    "kopf._core.actions.progression",
)
KOPF_LOG_LEVEL = logging.INFO
_EPOCH_SECONDS = EPOCH.timestamp()


def _virtual_now() -> float | None:
    """Virtual seconds since EPOCH of the operator loop running now, None outside one."""
    from controlplane.operators.loop import SimLoop

    loop = asyncio._get_running_loop()
    return loop.time() if isinstance(loop, SimLoop) else None


class VirtualDatetime(_datetime.datetime):
    """`datetime.datetime` whose `now`, `utcnow` and `today` read an operator's virtual clock
    while its loop runs (they return plain `datetime.datetime`s)."""

    @classmethod
    def now(cls, tz: _datetime.tzinfo | None = None) -> _datetime.datetime:  # type: ignore[override]
        seconds = _virtual_now()
        if seconds is None:
            return _datetime.datetime.now(tz)
        moment = EPOCH + _datetime.timedelta(seconds=seconds)
        return moment.astimezone(tz) if tz is not None else moment.replace(tzinfo=None)

    @classmethod
    def utcnow(cls) -> _datetime.datetime:  # type: ignore[override]
        return cls.now(_datetime.UTC).replace(tzinfo=None)

    @classmethod
    def today(cls) -> _datetime.datetime:  # type: ignore[override]
        return cls.now()


def _datetime_module() -> types.ModuleType:
    module = types.ModuleType("datetime", "the datetime module, with an operator's virtual clock")
    module.__dict__.update({k: v for k, v in vars(_datetime).items() if not k.startswith("__")})
    module.datetime = VirtualDatetime  # type: ignore[attr-defined]
    return module


VIRTUAL_DATETIME = _datetime_module()


class ProcessShims:
    """The shims installed once per process while any operator runs (a count of users)."""

    users = 0
    _saved: list[tuple[Any, str, Any]] = []
    _log_level = logging.NOTSET

    @classmethod
    def acquire(cls, user_modules: tuple[types.ModuleType, ...] = ()) -> None:
        if cls.users == 0:
            for name in KOPF_CLOCK_MODULES:
                module = sys.modules.get(name)
                if module is not None and getattr(module, "datetime", None) is _datetime:
                    cls._saved.append((module, "datetime", _datetime))
                    module.datetime = VIRTUAL_DATETIME  # type: ignore[attr-defined]
            orchestration = sys.modules.get("kopf._core.reactor.orchestration")
            if orchestration is not None:
                for name in ("spawn_missing_watchers", "spawn_missing_peerings"):
                    original = getattr(orchestration, name, None)
                    if original is not None:
                        cls._saved.append((orchestration, name, original))
                        setattr(orchestration, name, _in_order(original))
            kopf_logger = logging.getLogger("kopf")
            cls._log_level = kopf_logger.level
            kopf_logger.setLevel(KOPF_LOG_LEVEL)
        for module in user_modules:
            if getattr(module, "datetime", None) is _datetime:
                cls._saved.append((module, "datetime", _datetime))
                module.datetime = VIRTUAL_DATETIME  # type: ignore[attr-defined]
        cls.users += 1

    @classmethod
    def release(cls) -> None:
        cls.users -= 1
        if cls.users > 0:
            return
        cls.users = 0
        for module, name, value in reversed(cls._saved):
            setattr(module, name, value)
        cls._saved.clear()
        logging.getLogger("kopf").setLevel(cls._log_level)


def _in_order(spawn: Any) -> Any:
    """kopf's `spawn_missing_watchers` / `spawn_missing_peerings`, given its resources and
    namespaces sorted: kopf passes sets of string-hashed values, whose order (and so the order of
    the watchers' first LISTs) would follow `PYTHONHASHSEED`."""

    async def in_order(**kwargs: Any) -> Any:
        for key in ("watched_resources", "resources"):
            if key in kwargs:
                kwargs[key] = sorted(kwargs[key], key=lambda r: (r.group, r.version, r.plural))
        for key in ("watched_namespaces", "namespaces"):
            if key in kwargs:
                kwargs[key] = sorted(kwargs[key], key=lambda n: "" if n is None else str(n))
        return await spawn(**kwargs)

    in_order.__wrapped__ = spawn  # type: ignore[attr-defined]
    return in_order


_TIME_NAMES = ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns")


class StepShims:
    """Entered around each step of one operator's loop (module docstring). Holds the operator's
    own random generator across steps."""

    def __init__(self, loop: asyncio.AbstractEventLoop, seed: str) -> None:
        self._loop = loop
        self.rng = random.Random(seed)  # a str seed hashes with SHA-512: the same under any hash seed
        self._outer_state: Any = None
        self._saved: list[tuple[Any, str, Any]] = []

    def __call__(self) -> StepShims:
        return self

    def __enter__(self) -> StepShims:
        loop, rng = self._loop, self.rng
        self._outer_state = random.getstate()
        random.setstate(rng.getstate())
        patches: list[tuple[Any, str, Any]] = [
            (time, "time", lambda: _EPOCH_SECONDS + loop.time()),
            (time, "time_ns", lambda: round((_EPOCH_SECONDS + loop.time()) * 1e9)),
            (time, "monotonic", loop.time),
            (time, "monotonic_ns", lambda: round(loop.time() * 1e9)),
            (time, "perf_counter", loop.time),
            (time, "perf_counter_ns", lambda: round(loop.time() * 1e9)),
            (uuid, "uuid4", lambda: uuid.UUID(int=random.getrandbits(128), version=4)),
            (os, "urandom", lambda n: random.randbytes(n)),
        ]
        saved = self._saved
        for module, name, value in patches:
            saved.append((module, name, getattr(module, name)))
            setattr(module, name, value)
        return self

    def __exit__(self, *exc: Any) -> None:
        for module, name, value in reversed(self._saved):
            setattr(module, name, value)
        self._saved.clear()
        self.rng.setstate(random.getstate())
        random.setstate(self._outer_state)
        self._outer_state = None

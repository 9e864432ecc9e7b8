"""What a benchmark figure was measured on: every bench prints this as its `machine` object, so a
figure can be compared only with one from the same kind of machine and interpreter. And other
work on that machine, when a bench or a test wants it busy (`busy_cores`)."""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import subprocess
import sys
import sysconfig
from collections.abc import Iterator


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    config_args = sysconfig.get_config_var("CONFIG_ARGS") or ""
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "pgo": "--enable-optimizations" in config_args,
        "lto": "--with-lto" in config_args,
        "gc_thresholds": list(gc.get_threshold()),
        "load_avg": list(os.getloadavg()),
    }


SPIN = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def busy_cores(count: int | None = None, seconds: float = 300.0) -> Iterator[int]:
    """Other work on the machine: `count` processes (default: one per core) spinning in a busy
    loop beside the block, each ending by itself after `seconds` and killed when the block is
    left. Yields how many spin."""
    count = count if count is not None else os.cpu_count() or 2
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN, str(seconds)]) for _ in range(count)]
    try:
        yield count
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()

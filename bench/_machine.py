"""What a benchmark figure was measured on: every bench prints this as its `machine` object, so a
figure can be compared only with one from the same kind of machine and interpreter."""

from __future__ import annotations

import gc
import os
import platform
import sys
import sysconfig


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

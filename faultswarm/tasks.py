"""The unit of work a pool or Dask worker runs: one seed, start to verdict, as plain data.

Plain dicts in and out, so the same function travels to a process pool and to a Dask worker
alike (one code path); nothing here touches the terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from controlplane.oracles import compare_digests
from controlplane.swarm import generate, run_case, run_scenario_checked, shrink

Obj = dict[str, Any]


def run_seed(seed: int, quiet: float, config: Obj, twice: bool, want_shrink: bool, base: Obj | None = None) -> Obj:
    """Generate and run the case of `seed`. With `twice`, run it again in a fresh interpreter with
    another PYTHONHASHSEED and compare the trace digests (the determinism oracle). With
    `want_shrink`, a failing case is also shrunk to a minimal one that fails the same oracle.
    `base` ({operators, objects}, the CLI's `--base`) puts operators in every case."""
    case = generate(seed, quiet=quiet, config=config, base=base)
    result = run_case(case, digest=twice)
    violations = [v.as_dict() for v in result.violations]
    checked = list(result.checked)
    outcome: Obj = {
        "seed": seed,
        "violations": violations,
        "voided": result.voided,
        "checked": checked,
        "lift": case.lift_time,
        "checks": list(case.checks),
        "events": result.events,
    }
    if twice:
        other = digest_in_fresh_interpreter(case.scenario(), case.lift_time, quiet, hash_seed=seed % 4093 + 1)
        checked.append("determinism")
        problem = compare_digests(result.digest, other)
        if problem is not None:
            violations.append({"oracle": "determinism", "object": "trace", "time": result.end, "message": problem})
    if violations:
        outcome["scenario"] = case.scenario()
        if want_shrink:
            oracle = violations[0]["oracle"]
            if oracle != "determinism":
                small = shrink(case, lambda c: any(v.oracle == oracle for v in run_case(c).violations))
                outcome["shrunk"] = small.scenario()
                outcome["shrunk_lift"] = small.lift_time
    return outcome


def digest_in_fresh_interpreter(scenario: Obj, lift_time: float, quiet: float, *, hash_seed: int) -> str | None:
    """The trace digest of `scenario` computed by another Python process (another hash seed, so
    set and dict orders that depend on string hashing would show)."""
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed)}
    payload = json.dumps({"scenario": scenario, "lift": lift_time, "quiet": quiet})
    done = subprocess.run(
        [sys.executable, "-m", "faultswarm.rerun"], input=payload, capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        return f"rerun failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
    return done.stdout.strip() or None


def replay(scenario: Obj, lift_time: float, quiet: float) -> Obj:
    """Run a scenario (a failing case written to a file) under the oracles."""
    result = run_scenario_checked(scenario, lift_time=lift_time, quiet=quiet)
    return {"violations": [v.as_dict() for v in result.violations], "voided": result.voided, "checked": result.checked}

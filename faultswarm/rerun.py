"""`python -m faultswarm.rerun`: read {scenario, lift, quiet} as JSON on stdin, run it under the
oracles with a trace digest, print the digest (the determinism oracle's second run)."""

from __future__ import annotations

import json
import sys

from controlplane.swarm import run_scenario_checked


def main() -> int:
    job = json.load(sys.stdin)
    result = run_scenario_checked(job["scenario"], lift_time=job["lift"], quiet=job["quiet"], digest=True)
    print(result.digest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

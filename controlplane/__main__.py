"""`python -m controlplane run FILE [--seed N] [--until SECONDS]`: run a scenario headless and print
its JSON report (DESIGN §2.2). An invalid scenario exits 2 with one line on stderr naming the field;
so does a run that reaches a ceiling (`--max-pods`, `--max-nodes`, `--max-events`, see
controlplane.limits). No input prints a traceback: an unexpected exception is one line too (exit 1,
`CTRLSCOPE_TRACEBACK=1` shows it)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from controlplane import limits
from controlplane.scenario import ScenarioError, library


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: {message}\n")
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m controlplane", description="ctrlscope's headless simulation")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run a scenario and print its JSON report")
    run.add_argument("file", help="a scenario file, or the name of a shipped scenario (e.g. demo)")
    run.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    run.add_argument("--until", type=float, default=None, help="virtual seconds to run (default: the file's)")
    defaults = limits.DEFAULT_RUN_LIMITS
    run.add_argument("--max-pods", type=int, default=defaults.pods, help=f"pod ceiling (default {defaults.pods})")
    run.add_argument("--max-nodes", type=int, default=defaults.nodes, help=f"node ceiling (default {defaults.nodes})")
    run.add_argument(
        "--max-events", type=int, default=defaults.events, help=f"kernel event ceiling (default {defaults.events})"
    )
    sub.add_parser("list", help="list the shipped scenarios")
    args = parser.parse_args(argv)
    if args.command == "list":
        for entry in library():
            print(f"{entry['id']:<28} {entry['name']}")
        return 0
    problem = _check_arguments(args)
    if problem is not None:
        sys.stderr.write(f"{problem}\n")
        return 2
    from controlplane.simulation import run_scenario

    run_limits = limits.RunLimits(pods=args.max_pods, nodes=args.max_nodes, events=args.max_events)
    try:
        report = run_scenario(args.file, seed=args.seed, until=args.until, limits=run_limits)
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    except Exception as exc:  # a bug: one line, never a traceback for a user to read
        if os.environ.get("CTRLSCOPE_TRACEBACK"):
            raise
        sys.stderr.write(
            f"internal error: {type(exc).__name__}: {str(exc)[:300]} (CTRLSCOPE_TRACEBACK=1 shows where)\n"
        )
        return 1
    json.dump(report, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


def _check_arguments(args: argparse.Namespace) -> str | None:
    """The one-line reason an argument is out of range, or None."""
    until = args.until
    if until is not None:
        if not math.isfinite(until):
            return f"--until: must be a finite number of seconds, not {until}"
        if until <= 0:
            return "--until: must be > 0"
        if until > limits.MAX_SECONDS:
            return f"--until: must be <= {int(limits.MAX_SECONDS)} (30 days of virtual time)"
    if args.seed is not None and not 0 <= args.seed <= limits.MAX_SEED:
        return f"--seed: must be between 0 and {limits.MAX_SEED}"
    for flag, value in (
        ("--max-pods", args.max_pods),
        ("--max-nodes", args.max_nodes),
        ("--max-events", args.max_events),
    ):
        if value < 0:
            return f"{flag}: must be >= 0"
    return None


if __name__ == "__main__":
    raise SystemExit(main())

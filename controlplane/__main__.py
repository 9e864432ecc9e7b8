"""`python -m controlplane run FILE [--seed N] [--until SECONDS]`: run a scenario headless and print
its JSON report (docs/scenarios.md); FILE `-` reads the scenario from stdin. An invalid scenario exits 2
with one line on stderr naming the field; so does a run that reaches a ceiling (`--max-pods`,
`--max-nodes`, `--max-events`, see controlplane.limits). A scenario whose checks fail prints one
line per failed check on stderr and exits 1. `--trace FILE` / `--perfetto FILE` stream the run's
trace to a file (docs/scenarios.md). `--side a|b` runs a file with a `compare` block under that
side's config and judges that side's checks (exit 2 for a file without one). No input prints a
traceback: an unexpected exception is one line too (exit 1, `CTRLSCOPE_TRACEBACK=1` shows it).

`python -m controlplane test [PATH…] [--junit-xml FILE] [-j N]`: run every scenario file with
checks under the paths (default: the shipped library) in parallel, print a summary table; exit 1
when a check fails, 2 when a file is invalid.

`python -m controlplane compare FILE [--a CONFIG] [--b CONFIG] [--seed N] [--until S] [--table]`:
run the scenario under two partial config blocks (YAML flow mappings; default: the file's
`compare` pair, else `controlplane.compare.DEFAULT_PAIR`) and print the differences as JSON, or as a table
(docs/compare.md). A bad file, block or argument exits 2 with one line (`--a: config.workers: must
be >= 1`).

`python -m controlplane replay FILE --until T`: replay a session's recording (JSON: `scenario`,
`seed`, `actions`, as `Simulation.recording()` gives it; `-` for stdin) to the virtual time T and
print the report the session gave at T (docs/time-travel.md). A bad recording exits 2 with one
line naming the field.

`python -m controlplane swarm …` runs the fault swarm (issue 9): its host, with the process pool,
Dask and the wall clock, lives outside controlplane, in `faultswarm`."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys

from controlplane import limits
from controlplane.scenario import ScenarioError, check_seed, library


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: {message}\n")
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["swarm"]:
        from faultswarm.cli import main as swarm_main

        return swarm_main(args_in[1:])
    parser = _Parser(prog="python -m controlplane", description="ctrlscope's headless simulation")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run a scenario and print its JSON report")
    run.add_argument("file", help="a scenario file, the name of a shipped scenario (e.g. demo), or - for stdin")
    run.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    run.add_argument("--until", type=float, default=None, help="virtual seconds to run (default: the file's)")
    run.add_argument(
        "--side",
        choices=("a", "b"),
        default=None,
        help="run a file with a compare block under that side's config, judging that side's checks",
    )
    run.add_argument("--trace", metavar="FILE", help="write every trace record to FILE as JSON lines")
    run.add_argument("--perfetto", metavar="FILE", help="write the run to FILE in Chrome trace-event format")
    defaults = limits.DEFAULT_RUN_LIMITS
    run.add_argument("--max-pods", type=int, default=defaults.pods, help=f"pod ceiling (default {defaults.pods})")
    run.add_argument("--max-nodes", type=int, default=defaults.nodes, help=f"node ceiling (default {defaults.nodes})")
    run.add_argument(
        "--max-events", type=int, default=defaults.events, help=f"kernel event ceiling (default {defaults.events})"
    )
    test = sub.add_parser("test", help="run the scenario files with checks under the paths")
    test.add_argument("paths", nargs="*", help="files, directories or shipped names (default: the library)")
    test.add_argument("--junit-xml", metavar="FILE", help="write a JUnit XML report to FILE")
    test.add_argument("-j", "--jobs", type=int, default=None, help="parallel processes (default: one per CPU)")
    test.add_argument(
        "--list", action="store_true", help="print the runs (file and side) and their number of checks; run nothing"
    )
    cmp = sub.add_parser("compare", help="run a scenario under two configs and print their differences")
    cmp.add_argument("file", help="a scenario file, or the name of a shipped scenario")
    cmp.add_argument("--a", default=None, metavar="CONFIG", help="config block of world A, as YAML (default: see docs)")
    cmp.add_argument("--b", default=None, metavar="CONFIG", help="config block of world B, as YAML (default: see docs)")
    cmp.add_argument("--seed", type=int, default=None, help="override the scenario's seed (both worlds)")
    cmp.add_argument("--until", type=float, default=None, help="virtual seconds to run (default: the file's)")
    cmp.add_argument("--table", action="store_true", help="print an aligned table instead of JSON")
    rep = sub.add_parser("replay", help="replay a session's recording (JSON) to a time and print its JSON report")
    rep.add_argument("file", help="a recording as JSON (scenario, seed, actions), or - for stdin")
    rep.add_argument("--until", type=float, required=True, help="the virtual time to replay to (seconds)")
    sub.add_parser("list", help="list the shipped scenarios")
    sub.add_parser("swarm", help="seeded fault schedules under the oracles (see `swarm --help`)")
    args = parser.parse_args(argv)
    if args.command == "list":
        for entry in library():
            print(f"{entry['id']:<28} {entry['name']}")
        return 0
    if args.command == "test":
        return _test(args)
    problem = _check_arguments(args)
    if problem is not None:
        sys.stderr.write(f"{problem}\n")
        return 2
    try:
        if args.command == "replay":
            return _replay(args)
        return _compare(args) if args.command == "compare" else _run(args)
    except Exception as exc:  # a bug: one line, never a traceback for a user to read
        if os.environ.get("CTRLSCOPE_TRACEBACK"):
            raise
        sys.stderr.write(
            f"internal error: {type(exc).__name__}: {str(exc)[:300]} (CTRLSCOPE_TRACEBACK=1 shows where)\n"
        )
        return 1


def _run(args: argparse.Namespace) -> int:
    from controlplane.runner import TraceSink, run
    from controlplane.scenario import for_side, load_file, load_scenario
    from controlplane.trace_export import JsonLinesTrace, PerfettoTrace

    try:
        scenario = load_scenario(_stdin_text()) if args.file == "-" else load_file(args.file)
        if args.side is not None:
            scenario = for_side(scenario, args.side)
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    seed = scenario.seed if args.seed is None else args.seed
    with contextlib.ExitStack() as files:
        sinks: list[TraceSink] = []
        for path, sink in ((args.trace, JsonLinesTrace), (args.perfetto, PerfettoTrace)):
            if path:
                stream = files.enter_context(open(path, "w", encoding="utf-8"))
                sinks.append(sink(stream, scenario=scenario.name, seed=seed))
        try:
            run_limits = limits.RunLimits(pods=args.max_pods, nodes=args.max_nodes, events=args.max_events)
            result = run(scenario, seed=args.seed, until=args.until, sinks=sinks, limits=run_limits)
        except ScenarioError as exc:
            sys.stderr.write(f"{exc}\n")
            return 2
    json.dump(result.report, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    for failure in result.failures:
        sys.stderr.write(f"FAIL {failure.line()}\n")
    return 1 if result.failures else 0


def _replay(args: argparse.Namespace) -> int:
    """`replay FILE --until T`: the one replay path (`Replay.from_recording`) run headless to T;
    the report is the one the session gave at T, byte for byte (the dashboard's
    `report.json?at=T` runs this in a process of its own)."""
    from controlplane.session.timetravel.replay import Replay

    try:
        if args.file == "-":
            text = _stdin_text()
        else:
            with open(args.file, "rb") as stream:
                data = stream.read(limits.MAX_SCENARIO_BYTES + 1)
            if len(data) > limits.MAX_SCENARIO_BYTES:
                raise ScenarioError(f"{args.file}: larger than {limits.MAX_SCENARIO_BYTES // (1024 * 1024)} MiB")
            text = data.decode("utf-8")
        try:
            recording = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ScenarioError(f"{args.file}: not JSON: {str(exc)[:200]}") from None
        past = Replay.from_recording(recording, index=False)
        past.run_to_time(args.until)
    except (OSError, UnicodeDecodeError) as exc:
        sys.stderr.write(f"{args.file}: cannot be read: {exc}\n")
        return 2
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    if past.sim.halted is not None:
        sys.stderr.write(f"the replay stopped: {past.sim.halted}\n")
        return 2
    sys.stdout.write(past.sim.report_json())
    sys.stdout.write("\n")
    return 0


def _stdin_text() -> str:
    """The scenario of `run -`: at most limits.MAX_SCENARIO_BYTES of UTF-8 from stdin (the
    dashboard's `report.json?at=T` pipes the session cut at T)."""
    data = sys.stdin.buffer.read(limits.MAX_SCENARIO_BYTES + 1)
    if len(data) > limits.MAX_SCENARIO_BYTES:
        raise ScenarioError(f"-: larger than {limits.MAX_SCENARIO_BYTES // (1024 * 1024)} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"-: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def _compare(args: argparse.Namespace) -> int:
    from controlplane.compare import compare, default_pair, parse_block, table
    from controlplane.scenario import load_file

    try:
        scenario = load_file(args.file)
        defaults = default_pair(scenario)
        blocks = [
            default if text is None else parse_block(text, side)
            for side, text, default in (("a", args.a, defaults[0]), ("b", args.b, defaults[1]))
        ]
        result = compare(scenario, blocks[0], blocks[1], seed=args.seed, until=args.until)
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    if args.table:
        sys.stdout.write(table(result) + "\n")
    else:
        json.dump(result, sys.stdout, separators=(",", ":"), sort_keys=True)
        sys.stdout.write("\n")
    return 0


def _test(args: argparse.Namespace) -> int:
    from controlplane.testing import (
        ERROR,
        FAILED,
        SKIPPED,
        Outcome,
        discover,
        junit_xml,
        planned_runs,
        run_suite,
        summary_table,
    )

    try:
        paths = discover(args.paths)
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    if args.list:
        runs = planned_runs(paths)
        if not runs:
            sys.stderr.write(f"no scenario file with checks under {', '.join(args.paths) or 'the library'}\n")
            return 2
        for shown, checks in runs:
            if isinstance(checks, int):
                print(f"{shown}  ({checks} check{'s' if checks != 1 else ''})")
            else:
                print(f"{shown}  (invalid: running it says why)")
        print(f"{len(runs)} scenarios")
        return 0
    tty = sys.stderr.isatty()

    def progress(outcome: Outcome, done: int, total: int) -> None:
        if outcome.status == SKIPPED and not tty:
            return
        line = f"[{done}/{total}] {outcome.status.upper()} {outcome.shown}"
        sys.stderr.write(f"\r\033[K{line}" if tty else f"{line}\n")
        sys.stderr.flush()

    outcomes = run_suite(paths, args.jobs, progress)
    if tty:
        sys.stderr.write("\n")
    if not any(o.status != SKIPPED for o in outcomes):
        sys.stderr.write(f"no scenario file with checks under {', '.join(args.paths) or 'the library'}\n")
        return 2
    print(summary_table(outcomes))
    for outcome in outcomes:
        if outcome.status in (FAILED, ERROR):
            print(f"\n{outcome.shown}\n{outcome.detail()}")
    if args.junit_xml:
        with open(args.junit_xml, "w", encoding="utf-8") as out:
            out.write(junit_xml(outcomes))
    if any(o.status == ERROR for o in outcomes):
        return 2
    return 1 if any(o.status == FAILED for o in outcomes) else 0


def _check_arguments(args: argparse.Namespace) -> str | None:
    """The one-line reason an argument is out of range, or None."""
    until = args.until
    if until is not None:
        if not math.isfinite(until):
            return f"--until: must be a finite number of seconds, not {until}"
        if until < 0 or (until == 0 and args.command != "replay"):
            return "--until: must be >= 0" if args.command == "replay" else "--until: must be > 0"
        if until > limits.MAX_SECONDS:
            return f"--until: must be <= {int(limits.MAX_SECONDS)} (30 days of virtual time)"
    if getattr(args, "seed", None) is not None:
        try:
            check_seed(args.seed, "--seed")
        except ScenarioError as exc:
            return str(exc)
    for flag, value in (
        ("--max-pods", getattr(args, "max_pods", 0)),
        ("--max-nodes", getattr(args, "max_nodes", 0)),
        ("--max-events", getattr(args, "max_events", 0)),
    ):
        if value < 0:
            return f"{flag}: must be >= 0"
    return None


if __name__ == "__main__":
    raise SystemExit(main())

"""`python -m controlplane run FILE [--seed N] [--until SECONDS]`: run a scenario headless and print
its JSON report (DESIGN §2.2). An invalid scenario exits 2 with one line on stderr naming the field;
a scenario whose checks fail prints one line per failed check on stderr and exits 1.
`--trace FILE` / `--perfetto FILE` stream the run's trace to a file (docs/scenarios.md).

`python -m controlplane test [PATH…] [--junit-xml FILE] [-j N]`: run every scenario file with
checks under the paths (default: the shipped library) in parallel, print a summary table; exit 1
when a check fails, 2 when a file is invalid.

`python -m controlplane swarm …` runs the fault swarm (issue 9): its host, with the process pool,
Dask and the wall clock, lives outside controlplane, in `faultswarm`."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from controlplane.scenario import ScenarioError, library


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
    run.add_argument("file", help="a scenario file, or the name of a shipped scenario (e.g. demo)")
    run.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    run.add_argument("--until", type=float, default=None, help="virtual seconds to run (default: the file's)")
    run.add_argument("--trace", metavar="FILE", help="write every trace record to FILE as JSON lines")
    run.add_argument("--perfetto", metavar="FILE", help="write the run to FILE in Chrome trace-event format")
    test = sub.add_parser("test", help="run the scenario files with checks under the paths")
    test.add_argument("paths", nargs="*", help="files, directories or shipped names (default: the library)")
    test.add_argument("--junit-xml", metavar="FILE", help="write a JUnit XML report to FILE")
    test.add_argument("-j", "--jobs", type=int, default=None, help="parallel processes (default: one per CPU)")
    sub.add_parser("list", help="list the shipped scenarios")
    sub.add_parser("swarm", help="seeded fault schedules under the oracles (see `swarm --help`)")
    args = parser.parse_args(argv)
    if args.command == "list":
        for entry in library():
            print(f"{entry['id']:<28} {entry['name']}")
        return 0
    if args.command == "test":
        return _test(args)
    if args.until is not None and args.until <= 0:
        sys.stderr.write("--until: must be > 0\n")
        return 2
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    from controlplane.runner import TraceSink, run
    from controlplane.scenario import load_file
    from controlplane.trace_export import JsonLinesTrace, PerfettoTrace

    try:
        scenario = load_file(args.file)
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
            result = run(scenario, seed=args.seed, until=args.until, sinks=sinks)
        except ScenarioError as exc:
            sys.stderr.write(f"{exc}\n")
            return 2
    json.dump(result.report, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    for failure in result.failures:
        sys.stderr.write(f"FAIL {failure.line()}\n")
    return 1 if result.failures else 0


def _test(args: argparse.Namespace) -> int:
    from controlplane.testing import ERROR, FAILED, SKIPPED, Outcome, discover, junit_xml, run_suite, summary_table

    try:
        paths = discover(args.paths)
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    tty = sys.stderr.isatty()

    def progress(outcome: Outcome, done: int, total: int) -> None:
        if outcome.status == SKIPPED and not tty:
            return
        line = f"[{done}/{total}] {outcome.status.upper()} {outcome.path}"
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
            print(f"\n{outcome.path}\n{outcome.detail()}")
    if args.junit_xml:
        with open(args.junit_xml, "w", encoding="utf-8") as out:
            out.write(junit_xml(outcomes))
    if any(o.status == ERROR for o in outcomes):
        return 2
    return 1 if any(o.status == FAILED for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`python -m controlplane run FILE [--seed N] [--until SECONDS]`: run a scenario headless and print
its JSON report (DESIGN §2.2). An invalid scenario exits 2 with one line on stderr naming the field.

`python -m controlplane swarm …` runs the fault swarm (issue 9): its host, with the process pool,
Dask and the wall clock, lives outside controlplane, in `faultswarm`."""

from __future__ import annotations

import argparse
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
    sub.add_parser("list", help="list the shipped scenarios")
    sub.add_parser("swarm", help="seeded fault schedules under the oracles (see `swarm --help`)")
    args = parser.parse_args(argv)
    if args.command == "list":
        for entry in library():
            print(f"{entry['id']:<28} {entry['name']}")
        return 0
    if args.until is not None and args.until <= 0:
        sys.stderr.write("--until: must be > 0\n")
        return 2
    from controlplane.simulation import run_scenario

    try:
        report = run_scenario(args.file, seed=args.seed, until=args.until)
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    json.dump(report, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

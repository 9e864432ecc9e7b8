"""`python -m controlplane swarm`: run seeded fault schedules under the oracles (issue 9 §1).

    python -m controlplane swarm --seeds 1-1000 [--workers N] [--quiet S] [--config K=V …]
                                 [--controllers NAME,…] [--base SCENARIO] [--out DIR] [--shrink]
                                 [--scheduler tcp://HOST:8786]
    python -m controlplane swarm --replay FILE [--quiet S]

Exit status: 0 when every oracle held, 1 on any violation, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

import yaml

from controlplane import safeyaml
from controlplane.oracles import LIVENESS, ORACLES, ROLLOUT_LIVENESS, ROLLOUT_SAFETY, SAFETY
from controlplane.scenario import ScenarioError, check_config, load_scenario
from controlplane.swarm import DEFAULT_QUIET, SWARM_RESYNC_PERIOD, lift_time_of
from faultswarm.tasks import replay, run_seed

Obj = dict[str, Any]
PROG = "python -m controlplane swarm"
DEFAULT_OUT = "swarm-failures"
DEFAULT_TWICE_EVERY = 20


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def parse_seeds(text: str) -> list[int]:
    """`1-1000`, `7`, `1-10,20,30-40` → the seeds in order, each once."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                low, high = (int(x) for x in part.split("-", 1))
                if high < low:
                    raise ValueError
                seeds.extend(range(low, high + 1))
            else:
                seeds.append(int(part))
        except ValueError:
            raise UsageError(f"--seeds: {part!r} is not a seed or a range like 1-1000") from None
    if any(s < 0 for s in seeds):
        raise UsageError("--seeds: seeds must be >= 0")
    return list(dict.fromkeys(seeds))


def parse_config(pairs: Iterable[str]) -> Obj:
    """`K=V` pairs (V in YAML: `whatIf.expectations=false`, `resyncPeriod=0`) → a config mapping,
    checked as a scenario's `config` is."""
    out: Obj = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--config: {pair!r} is not KEY=VALUE")
        try:
            value = safeyaml.load(raw)
        except safeyaml.YAMLInputError as exc:
            raise UsageError(f"--config: {key}: {exc}") from None
        node = out
        *parents, leaf = key.split(".")
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = value
    try:
        return check_config(out, "--config", partial=True)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None


def parse_controllers(text: str) -> Obj:
    """`--controllers replicaset,replicationcontroller,deployment` → `{"controllers": [...]}`,
    checked as a scenario's `config.controllers` is."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise UsageError(f"--controllers: {text!r} is not a comma-separated list of controller names")
    try:
        checked = check_config({"controllers": names}, "--controllers")
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    return {"controllers": checked["controllers"]}


def build_parser() -> _Parser:
    parser = _Parser(prog=PROG, description="Seeded fault schedules under ctrlscope's oracles (issue 9).")
    parser.add_argument("--seeds", default="1-100", help="seeds to run: 1-1000, 7, or 1-10,20 (default 1-100)")
    parser.add_argument("--workers", type=int, default=None, help="local worker processes (default: CPU count)")
    parser.add_argument("--quiet", type=float, default=DEFAULT_QUIET, help="seconds of calm after the lift")
    parser.add_argument("--config", action="append", default=[], metavar="K=V", help="override a config key")
    parser.add_argument(
        "--controllers",
        default=None,
        metavar="NAME,…",
        help="the controllers the cases run (config.controllers); naming deployment also draws Deployments, "
        "their rollouts and faults aimed at them (without it every seed's case is unchanged)",
    )
    parser.add_argument(
        "--base",
        default=None,
        metavar="SCENARIO",
        help="a scenario with operators: every case runs its operators and starts with its objects, and faults "
        "aimed at the operators are drawn too (restarts, slow handlers, stale watches, API errors); their "
        "oracles are checked beside the built-in ones",
    )
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"where failing scenarios go (default {DEFAULT_OUT})")
    parser.add_argument("--shrink", action="store_true", help="also write a minimal failing scenario")
    parser.add_argument("--scheduler", default=None, metavar="tcp://HOST:8786", help="run on a Dask cluster")
    parser.add_argument(
        "--twice-every",
        type=int,
        default=DEFAULT_TWICE_EVERY,
        metavar="N",
        help=f"run every N-th seed twice for the determinism oracle (default {DEFAULT_TWICE_EVERY}; 0: never)",
    )
    parser.add_argument("--replay", metavar="FILE", help="run one scenario file (a written failure) under the oracles")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        args = build_parser().parse_args(argv)
        if args.quiet <= 0 or args.quiet != args.quiet or args.quiet == float("inf"):
            raise UsageError("--quiet: must be a finite number of seconds > 0")
        if args.workers is not None and args.workers < 1:
            raise UsageError("--workers: must be >= 1")
        if args.replay:
            return _replay(args.replay, args.quiet, out, err)
        seeds = parse_seeds(args.seeds)
        config = parse_config(args.config)
        if args.controllers is not None:
            config = {**config, **parse_controllers(args.controllers)}
        base = parse_base(args.base) if args.base is not None else None
    except UsageError as exc:
        err.write(f"{PROG}: {exc}\n")
        return 2
    return Swarm(seeds, args, config, out, err, base).run()


def parse_base(path: str) -> Obj:
    """`--base FILE`: a scenario with `operators:` → {operators, objects} as the file writes them
    (its modules' paths stay relative to the directory the swarm starts in)."""
    try:
        text = Path(path).read_text()
        parsed = load_scenario(text)
    except (OSError, ScenarioError) as exc:
        raise UsageError(f"--base: {path}: {exc}") from None
    if not parsed.operators:
        raise UsageError(f"--base: {path}: has no operators: (the base of an operator swarm names at least one)")
    data = safeyaml.load(text)
    return {"operators": data["operators"], "objects": list(data.get("objects") or [])}


def _replay(path: str, quiet: float, out: TextIO, err: TextIO) -> int:
    try:
        text = Path(path).read_text()
        load_scenario(text)  # one clear line for an invalid file
    except (OSError, ScenarioError) as exc:
        err.write(f"{PROG}: {path}: {exc}\n")
        return 2
    scenario = safeyaml.load(text)  # load_scenario read it already: within limits
    result = replay(scenario, lift_time_of(scenario), quiet)
    for v in result["violations"]:
        out.write(f"VIOLATION {v['oracle']} {v['object']} t={v['time']:g}: {v['message']}\n")
    for oracle, reason in sorted(result["voided"].items()):
        out.write(f"voided    {oracle}: {reason}\n")
    out.write(f"{len(result['violations'])} violations; oracles checked: {', '.join(result['checked'])}\n")
    return 1 if result["violations"] else 0


class Swarm:
    """One swarm run: submit every seed, collect outcomes as they complete, report."""

    def __init__(
        self, seeds: list[int], args: argparse.Namespace, config: Obj, out: TextIO, err: TextIO, base: Obj | None = None
    ) -> None:
        self.seeds = seeds
        self.base = base
        self.args = args
        self.config = config
        self.out = out
        self.err = err
        self.outcomes: list[Obj] = []
        self.resync = float(config.get("resyncPeriod", SWARM_RESYNC_PERIOD))

    def run(self) -> int:
        args = self.args
        where = f"Dask cluster {args.scheduler}" if args.scheduler else f"{self._workers()} local worker processes"
        resync_note = (
            f"resyncPeriod {self.resync:g} s (finite by default: two faithful upstream stalls end only at a "
            "resync, see docs/scenarios.md)"
            if self.resync > 0
            else "resyncPeriod 0 (no resync: liveness is voided where a faithful stall may last forever)"
        )
        self.err.write(
            f"fault swarm: {len(self.seeds)} seeds on {where}; quiet period {args.quiet:g} s; {resync_note}\n"
        )
        started = time.monotonic()
        try:
            for outcome in self._progress(self._execute()):
                self.outcomes.append(outcome)
        except KeyboardInterrupt:
            self.err.write("interrupted: reporting the seeds that finished\n")
        elapsed = time.monotonic() - started
        self.outcomes.sort(key=lambda o: o["seed"])
        failures = [o for o in self.outcomes if o["violations"]]
        for outcome in failures:
            self._write_failure(outcome)
        self._table(elapsed, where)
        return 1 if failures else 0

    def _workers(self) -> int:
        import os

        return int(self.args.workers or os.cpu_count() or 1)

    def _task_args(self, seed: int) -> tuple[Any, ...]:
        every = self.args.twice_every
        twice = bool(every) and seed % every == 0
        return (seed, self.args.quiet, self.config, twice, self.args.shrink, self.base)

    def _execute(self) -> Iterator[Obj]:
        """Submit every seed to the executor and yield outcomes as they complete. The local pool
        and Dask's Client share the futures interface, so this is the one code path for both."""
        if self.args.scheduler:
            from distributed import Client, as_completed

            with Client(self.args.scheduler) as client:  # type: ignore[no-untyped-call]
                futures = [client.submit(run_seed, *self._task_args(s), pure=False) for s in self.seeds]
                for future in as_completed(futures):  # type: ignore[no-untyped-call]
                    yield future.result()
            return
        with concurrent.futures.ProcessPoolExecutor(max_workers=self._workers()) as pool:
            futures = [pool.submit(run_seed, *self._task_args(s)) for s in self.seeds]
            try:
                for future in concurrent.futures.as_completed(futures):
                    yield future.result()
            finally:
                for future in futures:
                    future.cancel()

    def _progress(self, outcomes: Iterator[Obj]) -> Iterator[Obj]:
        if self.args.no_progress:
            yield from outcomes
            return
        from tqdm import tqdm  # type: ignore[import-untyped]

        failed = 0
        with tqdm(total=len(self.seeds), unit="seed", file=self.err, desc="swarm", dynamic_ncols=True) as bar:
            for outcome in outcomes:
                failed += bool(outcome["violations"])
                bar.set_postfix(failed=failed, refresh=False)
                bar.update(1)
                yield outcome

    # -- output ---------------------------------------------------------------------------------
    def _write_failure(self, outcome: Obj) -> None:
        directory = Path(self.args.out)
        directory.mkdir(parents=True, exist_ok=True)
        seed = outcome["seed"]
        path = directory / f"swarm-seed-{seed}.yaml"
        first = outcome["violations"][0]
        _dump(path, outcome["scenario"], first, self.args.quiet)
        lines = [
            f"FAIL seed {seed}: {first['oracle']} {first['object']} at t={first['time']:g}: {first['message']}",
        ]
        for v in outcome["violations"][1:4]:
            lines.append(f"     also {v['oracle']} {v['object']} at t={v['time']:g}: {v['message']}")
        if len(outcome["violations"]) > 4:
            lines.append(f"     … {len(outcome['violations']) - 4} more")
        lines.append(f"  replay:   {PROG} --replay {path} --quiet {self.args.quiet:g}")
        lines.append(f"  scenario: {path}")
        lines.append(
            f"  dashboard: upload it at http://127.0.0.1:8000/sim/new?pause_before={first['time']:g}"
            f"&mark={first['oracle']} (paused just before, the violation pinned on the timeline)"
        )
        if "shrunk" in outcome:
            small = directory / f"swarm-seed-{seed}.shrunk.yaml"
            _dump(small, outcome["shrunk"], first, self.args.quiet)
            lines.append(f"  shrunk:   {small} ({len(outcome['shrunk']['actions'])} actions)")
        self.out.write("\n".join(lines) + "\n")

    def _table(self, elapsed: float, where: str) -> None:
        outcomes = self.outcomes
        by_oracle: Counter[str] = Counter()
        seeds_failed: Counter[str] = Counter()
        checked: Counter[str] = Counter()
        voided: Counter[str] = Counter()
        reasons: dict[str, Counter[str]] = {}
        for o in outcomes:
            for v in o["violations"]:
                by_oracle[v["oracle"]] += 1
            for oracle in {v["oracle"] for v in o["violations"]}:
                seeds_failed[oracle] += 1
            checked.update(set(o["checked"]))
            for oracle, reason in o["voided"].items():
                voided[oracle] += 1
                reasons.setdefault(oracle, Counter())[reason] += 1
        failed = sum(1 for o in outcomes if o["violations"])
        rate = len(outcomes) / elapsed * 60 if elapsed > 0 else 0.0
        twice = checked["determinism"]
        w = self.out.write
        w("\n")
        w(f"seeds run      {len(outcomes)} of {len(self.seeds)} ({where})\n")
        w(f"seeds failed   {failed}\n")
        w(f"wall time      {elapsed:.1f} s    seeds/minute {rate:.0f}\n")
        w(f"quiet period   {self.args.quiet:g} s after the lift; resyncPeriod {self.resync:g} s\n")
        w(f"determinism    {twice} seeds run twice (second run in a fresh interpreter, another hash seed)\n")
        w("\n")
        w(f"{'oracle':<22}{'family':<13}{'seeds checked':>14}{'voided':>8}{'violations':>12}{'seeds':>7}\n")
        for oracle in (*ORACLES, *sorted(set(checked) - set(ORACLES))):
            family = (
                "safety"
                if oracle in SAFETY or oracle in ROLLOUT_SAFETY
                else "liveness"
                if oracle in LIVENESS or oracle in ROLLOUT_LIVENESS
                else "run"
                if oracle in ORACLES
                else "operator"
            )
            w(
                f"{oracle:<22} {family:<12}{checked[oracle]:>14}{voided[oracle]:>8}"
                f"{by_oracle[oracle]:>12}{seeds_failed[oracle]:>7}\n"
            )
        for oracle in ORACLES:
            for reason, n in sorted(reasons.get(oracle, Counter()).items()):
                w(f"voided in {n} seeds: {oracle}: {reason}\n")
        w(f"\n{'FAILED' if failed else 'OK'}: {sum(by_oracle.values())} violations in {failed} seeds\n")


def _dump(path: Path, scenario: Obj, violation: Obj, quiet: float) -> None:
    header = (
        f"# Written by the fault swarm. Violation: {violation['oracle']} {violation['object']} at "
        f"t={violation['time']:g}.\n"
        f"# Replay: {PROG} --replay {path} --quiet {quiet:g}\n"
        f"# Or run it headless (no oracles): python -m controlplane run {path}\n"
    )
    path.write_text(header + yaml.safe_dump(scenario, sort_keys=False, width=110))


if __name__ == "__main__":
    raise SystemExit(main())

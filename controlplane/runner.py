"""One scenario run headless, with its checks and trace exports: what `python -m controlplane run`,
`python -m controlplane test` and the pytest plugin share.

Guarantees
----------
* The report is the simulation's report (docs/scenarios.md), plus a `checks` section when the scenario
  has checks; checks and exports only read, so the rest is byte for byte the report of the same
  run without them.
* A file with a `compare` block judges the checks without a `side` and, run as one side
  (`scenario.for_side`), that side's checks; the `checks` section lists exactly those judged.
* Exporters see every trace record from the first (they subscribe before the world is built) and
  are closed when the run ends, even when it fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from controlplane.checks import Checker, CheckResult, parse_checks
from controlplane.gcpolicy import simulation_gc
from controlplane.limits import RunLimits
from controlplane.scenario import Scenario, for_side, load_file
from controlplane.trace import Record
from controlplane.world import LimitError, Simulation

Obj = dict[str, Any]


class TraceSink(Protocol):
    """Receives every record of a run (`write`), then `close()` once at the end."""

    def write(self, record: Record) -> None: ...
    def close(self, sim: Simulation) -> None: ...


@dataclass
class RunResult:
    report: Obj
    checks: list[CheckResult]

    @property
    def failures(self) -> list[CheckResult]:
        return [result for result in self.checks if not result.ok]


def run(
    scenario: Scenario,
    *,
    seed: int | None = None,
    until: float | None = None,
    sinks: Sequence[TraceSink] = (),
    limits: RunLimits | None = None,
) -> RunResult:
    """Run `scenario` to `until` (the file's unless given) and judge its checks, under the
    GC policy of running simulations (controlplane.gcpolicy). LimitError (a ScenarioError) when
    the scenario asks for more than `limits` or the run reaches one."""
    sim = Simulation(scenario, seed=seed, limits=limits)
    checks = [c for c in parse_checks(scenario.expect) if c.side is None or c.side == scenario.side]
    checker = Checker(sim, checks)
    unsubscribes = [sim.subscribe(sink.write) for sink in sinks]
    try:
        checker.start()
        with simulation_gc():
            sim.run_until(scenario.until if until is None else until)
        if sim.halted is not None:
            raise LimitError(f"until: {sim.halted}")
        results = checker.finish()
        report = sim.report()
    finally:
        for unsubscribe in unsubscribes:
            unsubscribe()
        for sink in sinks:
            sink.close(sim)
        sim.close()  # its embedded operators stop (after the report: nothing in the world moves)
    if scenario.expect:
        report["checks"] = [result.to_json() for result in results]
    return RunResult(report, results)


def run_file(
    name_or_path: str,
    *,
    seed: int | None = None,
    until: float | None = None,
    sinks: Sequence[TraceSink] = (),
    limits: RunLimits | None = None,
    side: str | None = None,
) -> RunResult:
    """`run` on a scenario file or the name of a shipped scenario, as side `side` of its compare
    block when given (ScenarioError if invalid, or for a side of a file without one)."""
    scenario = load_file(name_or_path)
    if side is not None:
        scenario = for_side(scenario, side)
    return run(scenario, seed=seed, until=until, sinks=sinks, limits=limits)


def run_scenario(
    name_or_path: str, *, seed: int | None = None, until: float | None = None, limits: RunLimits | None = None
) -> Obj:
    """Load, run to `until` (the file's unless given) and return the report (with a `checks`
    section when the scenario has checks). ScenarioError if the file is invalid, LimitError (one)
    if the run asks for or reaches more than `limits`. The headless entry for scripts and
    notebooks, re-exported by the facade (`controlplane.simulation.run_scenario`)."""
    return run_file(name_or_path, seed=seed, until=until, limits=limits).report

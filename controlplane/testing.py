"""Scenarios as tests: `python -m controlplane test [PATH…]` and what the pytest plugin shares.

Guarantees
----------
* `discover(paths)`: every `*.yaml` / `*.yml` file under each directory (recursively, sorted),
  each file named, and each shipped scenario named by its id (`demo`), in that order without
  repeats; no path means the shipped library.
* `run_one(path)` never raises for a bad scenario: the outcome says `error` with the one-line
  reason (`expect[2].path: ...`). A file without checks is `skipped` by the suite runner (the
  plugin still runs it: a scenario that loads and runs is a passing smoke test).
* `run_suite` runs files in parallel processes and returns outcomes in discovery order, so the
  table and the JUnit file do not depend on which process finished first. A file with a
  `compare` block is run once per side (`--side a`, then `--side b`), each judging its checks.
* No wall clock: the table shows virtual seconds (controlplane never reads the wall clock).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from controlplane.scenario import SCENARIO_DIR, SIDES, ScenarioError, for_side, load_file, resolve

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"


@dataclass
class Outcome:
    path: str
    status: str  # passed | failed | error | skipped
    checks: int = 0
    failures: list[str] = field(default_factory=list)  # one line per failed check
    error: str | None = None
    virtual: float = 0.0  # virtual seconds run
    side: str | None = None  # the compare side run (`--side`), None for the file's own config

    @property
    def replay(self) -> str:
        return f"python -m controlplane run {self.path}" + (f" --side {self.side}" if self.side else "")

    @property
    def shown(self) -> str:
        """The file, and the side when one was run (`x.scenario.yaml --side a`)."""
        return self.path + (f" --side {self.side}" if self.side else "")

    def detail(self) -> str:
        """What went wrong, for a failure report: the failed checks (or the error) and the replay."""
        lines = [self.error] if self.error else [f"{len(self.failures)} of {self.checks} checks failed:"]
        lines += [f"  {line}" for line in self.failures]
        lines.append(f"replay: {self.replay}")
        return "\n".join(line for line in lines if line is not None)


def discover(paths: Iterable[str]) -> list[str]:
    found: list[str] = []
    for given in list(paths) or [str(SCENARIO_DIR)]:
        path = Path(given)
        if path.is_dir():
            found += sorted(str(p) for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        else:
            found.append(str(resolve(given)))
    return list(dict.fromkeys(_shown(path) for path in found))


def _shown(path: str) -> str:
    """Relative to the working directory when below it (shorter table lines and replay commands)."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def sides_of(path: str) -> tuple[str | None, ...]:
    """What to run of a file: each side of its `compare` block, or (None,) for the file's own
    config (also for a file that does not load: its run reports the reason)."""
    try:
        scenario = load_file(path)
    except ScenarioError:
        return (None,)
    return SIDES if scenario.compare is not None else (None,)


def has_checks(path: str) -> bool:
    """Whether the file has an `expect:` list (ScenarioError if the file is invalid)."""
    return bool(load_file(path).expect)


def planned_runs(paths: list[str]) -> list[tuple[str, int | str]]:
    """What `run_suite(paths)` would run, without running it: each file with checks once, or once
    per side of its compare block, shown as its outcome would be, with its number of checks
    ("invalid" for a file that does not load: its run reports the reason)."""
    runs: list[tuple[str, int | str]] = []
    for path in paths:
        try:
            checks: int | str = len(load_file(path).expect)
        except ScenarioError:
            checks = "invalid"
        if checks == 0:
            continue
        runs += [(Outcome(path, PASSED, side=side).shown, checks) for side in sides_of(path)]
    return runs


def run_one(path: str, *, skip_without_checks: bool = False, side: str | None = None) -> Outcome:
    """Run one scenario file with its checks (in this process); as side `side` of its compare
    block when given."""
    from controlplane.runner import run

    try:
        scenario = load_file(path)
        if skip_without_checks and not scenario.expect:
            return Outcome(path, SKIPPED, side=side)
        if side is not None:
            scenario = for_side(scenario, side)
        result = run(scenario)
    except ScenarioError as exc:
        return Outcome(path, ERROR, error=f"{path}: {exc}", side=side)
    failures = [r.line() for r in result.failures]
    return Outcome(
        path,
        FAILED if failures else PASSED,
        len(result.checks),
        failures,
        virtual=float(result.report["time"]),
        side=side,
    )


def _run_checked(job: tuple[str, str | None]) -> Outcome:
    return run_one(job[0], skip_without_checks=True, side=job[1])


def run_suite(
    paths: list[str], jobs: int | None = None, progress: Callable[[Outcome, int, int], None] | None = None
) -> list[Outcome]:
    """Run every file of `paths` that has checks, `jobs` at a time (default: one per CPU); a
    file with a compare block once per side."""
    work = [(path, side) for path in paths for side in sides_of(path)]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(work) or 1))
    outcomes: dict[tuple[str, str | None], Outcome] = {}
    if jobs == 1:
        for job in work:
            outcomes[job] = _run_checked(job)
            if progress is not None:
                progress(outcomes[job], len(outcomes), len(work))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(_run_checked, job): job for job in work}
            for future in as_completed(futures):
                outcomes[futures[future]] = future.result()
                if progress is not None:
                    progress(outcomes[futures[future]], len(outcomes), len(work))
    return [outcomes[job] for job in work]


def summary_table(outcomes: list[Outcome]) -> str:
    ran = [o for o in outcomes if o.status != SKIPPED]
    rows = [("result", "checks", "failed", "virtual s", "scenario")]
    for o in ran:
        if o.status == ERROR:
            rows.append(("ERROR", "-", "-", "-", o.shown))
        else:
            rows.append((o.status.upper()[:4], str(o.checks), str(len(o.failures)), f"{o.virtual:g}", o.shown))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in (1, 2, 3)] + [row[4]]
        lines.append("  ".join(cells))
    counts = {s: sum(o.status == s for o in outcomes) for s in (PASSED, FAILED, ERROR, SKIPPED)}
    lines.append(
        f"{len(ran)} scenarios: {counts[PASSED]} passed, {counts[FAILED]} failed, {counts[ERROR]} errors"
        + (f" ({counts[SKIPPED]} files without checks skipped)" if counts[SKIPPED] else "")
    )
    return "\n".join(lines)


def junit_xml(outcomes: list[Outcome]) -> str:
    """One <testcase> per scenario file (the pytest plugin's granularity)."""
    ran = [o for o in outcomes if o.status != SKIPPED]
    suite = ET.Element(
        "testsuite",
        name="ctrlscope scenarios",
        tests=str(len(ran)),
        failures=str(sum(o.status == FAILED for o in ran)),
        errors=str(sum(o.status == ERROR for o in ran)),
        skipped="0",
    )
    for o in ran:
        name = Path(o.path).name + (f"::{o.side}" if o.side else "")
        case = ET.SubElement(suite, "testcase", classname=str(Path(o.path).parent), name=name, file=o.path)
        if o.status == FAILED:
            failure = ET.SubElement(case, "failure", message=f"{len(o.failures)} of {o.checks} checks failed")
            failure.text = o.detail()
        elif o.status == ERROR:
            error = ET.SubElement(case, "error", message=o.error or "invalid scenario")
            error.text = o.detail()
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

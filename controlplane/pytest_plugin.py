"""The pytest plugin (entry point `pytest11`, no conftest needed): `pytest my-scenarios/` collects
each `*.scenario.yaml` file as one test item that runs the scenario and judges its checks; a file
with a `compare` block as two items, `<file>::a` and `<file>::b`, each running that side's config
and judging its checks (the unsided ones and its own).

A failure shows each failed check on one line (check, time, wanted, got) and the command that
replays the run; an invalid file fails with its one-line reason (`expect[2].path: ...`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlplane.testing import FAILED, PASSED, Outcome, run_one, sides_of

SUFFIX = ".scenario.yaml"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SUFFIX):
        collector: ScenarioFile = ScenarioFile.from_parent(parent, path=file_path)
        return collector
    return None


class ScenarioFailed(Exception):
    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.detail())
        self.outcome = outcome


class ScenarioFile(pytest.File):
    def collect(self) -> Any:
        sides = sides_of(str(self.path))
        if sides == (None,):
            yield ScenarioItem.from_parent(self, name=self.path.name[: -len(SUFFIX)])
            return
        for side in sides:
            yield ScenarioItem.from_parent(self, name=side, side=side)


class ScenarioItem(pytest.Item):
    def __init__(self, *, side: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.side = side

    def runtest(self) -> None:
        outcome = run_one(str(self.path), side=self.side)
        if outcome.status not in (PASSED,):
            raise ScenarioFailed(outcome)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailed):
            outcome = excinfo.value.outcome
            head = "scenario checks failed" if outcome.status == FAILED else "invalid scenario"
            side = f" (side {self.side})" if self.side else ""
            return f"{head}: {self.path}{side}\n{outcome.detail()}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        shown = self.path.name[: -len(SUFFIX)] + (f" side {self.side}" if self.side else "")
        return self.path, None, f"scenario {shown}"

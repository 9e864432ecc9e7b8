"""The pytest plugin (entry point `pytest11`, no conftest needed): `pytest my-scenarios/` collects
each `*.scenario.yaml` file as one test item that runs the scenario and judges its checks.

A failure shows each failed check on one line (check, time, wanted, got) and the command that
replays the run; an invalid file fails with its one-line reason (`expect[2].path: ...`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlplane.testing import FAILED, PASSED, Outcome, run_one

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
        yield ScenarioItem.from_parent(self, name=self.path.name[: -len(SUFFIX)])


class ScenarioItem(pytest.Item):
    def runtest(self) -> None:
        outcome = run_one(str(self.path))
        if outcome.status not in (PASSED,):
            raise ScenarioFailed(outcome)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailed):
            outcome = excinfo.value.outcome
            head = "scenario checks failed" if outcome.status == FAILED else "invalid scenario"
            return f"{head}: {self.path}\n{outcome.detail()}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"scenario {self.name}"

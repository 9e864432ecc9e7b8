"""The sync inspector's upstream links point at a line of a file at an immutable ref (a commit or
a release tag), never at a whole file or a moving branch (issue #19 §3)."""

from __future__ import annotations

import re

from controlplane.session import stages
from dashboard.host import panels

from .test_v15 import hosted, inspector, run_until

# github.com/<owner>/<repo>/blob/<40-hex commit or vX.Y.Z tag>/<path>.go#L<n>
PINNED_LINE = re.compile(
    r"https://github\.com/[\w.-]+/kubernetes/blob/(?:[0-9a-f]{40}|v\d+\.\d+\.\d+)/[\w/.-]+\.go#L[1-9]\d*"
)


def pinned(url: str) -> bool:
    return PINNED_LINE.fullmatch(url) is not None


def test_every_v1_36_stage_links_a_line_at_a_pinned_ref():
    tables = panels.narration_tables()
    urls = {stage: url for stage, (_, url) in tables["stages"].items()}
    urls["processNextWorkItem"] = tables["process_next_work_item"]
    assert set(urls) >= {"consistency", "get", "expectations", "list", "claim", "manage", "status", "requeue"}
    assert {stage: url for stage, url in urls.items() if not pinned(url)} == {}


def test_the_v1_36_lines_are_the_ones_read_at_the_pinned_commits():
    # The numbers counted in the upstream text at the pinned commits (panels' comment block).
    rs_go = (
        "https://github.com/pohly/kubernetes/blob/bf9daf44a97ad65b76745a63fbaa302200b4d492/"
        "pkg/controller/replicaset/replica_set.go"
    )
    consistency_go = (
        "https://github.com/kubernetes/kubernetes/blob/d7ce957d8a8729e0e9c2e365288277d742491a5b/"
        "pkg/controller/util/consistency/consistency.go"
    )
    lines = {stage: url for stage, (_, url) in stages.STAGES.items()}
    assert lines == {
        "consistency": f"{consistency_go}#L123",
        "get": f"{rs_go}#L752",
        "expectations": f"{rs_go}#L763",
        "selector": f"{rs_go}#L764",
        "list": f"{rs_go}#L771",
        "claim": f"{rs_go}#L833",
        "manage": f"{rs_go}#L623",
        "batch": f"{rs_go}#L861",
        "delete": f"{rs_go}#L684",
        "status": f"{rs_go}#L798",
        "requeue": f"{rs_go}#L813",
    }
    assert f"{rs_go}#L601" == stages.PROCESS_NEXT_WORK_ITEM


def test_the_v1_5_links_stay_pinned_lines_too():
    tables = panels.narration_tables()
    urls = [stage.source for stage in tables["stages15"].values()] + list(tables["k15"].values())
    assert [url for url in urls if not pinned(url)] == []


def test_a_rendered_v1_36_sync_links_only_pinned_lines():
    h = hosted()
    run_until(h, 1.0)
    markup = inspector(h)
    assert "processNextWorkItem" in markup
    hrefs = re.findall(r'<a href="(https://github\.com/[^"]+)"', markup)
    assert stages.PROCESS_NEXT_WORK_ITEM in hrefs
    assert len(hrefs) > 3
    assert [url for url in hrefs if not pinned(url)] == []

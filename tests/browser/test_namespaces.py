"""Owners of one name in two namespaces, in a real browser: two cards, two timeline lanes, two
tile blocks, and focusing one shows its pods only (they used to share one lane and one block)."""

from __future__ import annotations

import pathlib

import yaml
from playwright.sync_api import Page, expect

from .conftest import shot
from .test_dashboard import errors, run_to, stop  # noqa: F401 - the errors fixture
from .test_ui10k import start_fleet


def rs(namespace: str, replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }


def test_one_name_in_two_namespaces_is_two_owners_on_the_page(
    page: Page,
    live_server_url: str,
    tmp_path: pathlib.Path,
    errors,  # noqa: F811
):
    doc = {
        "name": "two-namespaces",
        "seed": 1,
        "config": {"nodes": 3},
        "objects": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
            rs("default", 2),
            rs("team-a", 3),
        ],
    }
    path = tmp_path / "two-namespaces.scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    sim = start_fleet(page, live_server_url, path)
    run_to(page, 20)
    expect(page.locator("#owners article[data-owner='ReplicaSet/web']")).to_have_count(1)
    team = page.locator("#owners article[data-owner='ReplicaSet/team-a/web']")
    expect(team).to_have_count(1)
    page.wait_for_function("() => window.CtrlscopeTimeline.drawn().length === 2")
    lanes = sorted(page.evaluate("() => window.CtrlscopeTimeline.drawn().map(d => d.owner)"))
    assert lanes == ["ReplicaSet/team-a/web", "ReplicaSet/web"]
    blocks = sorted(page.evaluate("() => window.CtrlscopePods.labels().map(g => g.owner)"))
    assert blocks == ["ReplicaSet/team-a/web", "ReplicaSet/web"]
    shot(page, "dashboard-namespaces")
    team.locator("a.owner-name").click()
    expect(page.locator("#focus-chip")).to_contain_text("team-a/web")
    page.wait_for_function("() => window.CtrlscopePods.layout().shown === 3")
    assert page.evaluate("() => window.CtrlscopeTimeline.drawn().map(d => d.owner)") == ["ReplicaSet/team-a/web"]
    stop(page, live_server_url, sim)

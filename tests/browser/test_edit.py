"""Edit like kubectl edit, in the browser: open an owner prefilled, review the dry-run diff,
apply; a typo is refused by strict field validation, a stale edit by a conflict."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .conftest import shot
from .test_dashboard import command, errors, run_to, start, stop  # noqa: F401 - the errors fixture


def test_edit_an_owner_review_the_diff_and_apply(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start(page, live_server_url)
    run_to(page, 3)
    card = page.locator("#owners article[data-owner='ReplicaSet/web']")
    card.locator("[data-edit]").click()
    expect(page.locator("#tab-yaml")).to_be_visible()
    expect(page.locator("#edit-what")).to_have_text("ReplicaSet default/web")
    text = page.locator("#yaml-text").input_value()
    assert "kind: ReplicaSet" in text and "managedFields" not in text and "  replicas: 4" in text

    # A typo: the dry run refuses it with kube-apiserver's strict decoding error; nothing changes.
    page.fill("#yaml-text", text.replace("  replicas: 4", "  replcas: 8", 1))
    page.click("#edit-review")
    expect(page.locator("#yaml-result")).to_contain_text('unknown field "spec.replcas"')
    expect(page.locator("#edit-diff")).to_be_hidden()
    page.click("#yaml-form button[type=submit]")
    expect(page.locator("#yaml-result")).to_contain_text('unknown field "spec.replcas"')
    expect(card.locator("[data-k='ReplicaSet/web/desired']")).to_have_text("4")

    # The fix: the review shows the diff, and the page has not changed the object yet.
    page.fill("#yaml-text", text.replace("  replicas: 4", "  replicas: 7", 1))
    page.click("#edit-review")
    expect(page.locator("#edit-diff .del", has_text="replicas")).to_have_text("-  replicas: 4")
    expect(page.locator("#edit-diff .add", has_text="replicas")).to_have_text("+  replicas: 7")
    expect(page.locator("#yaml-result")).to_contain_text("dry run")
    shot(page, "dashboard-edit-diff")
    expect(card.locator("[data-k='ReplicaSet/web/desired']")).to_have_text("4")
    page.click("#yaml-form button[type=submit]")
    expect(page.locator("#yaml-result")).to_contain_text("updated ReplicaSet/web")
    expect(card.locator("[data-k='ReplicaSet/web/desired']")).to_have_text("7")
    expect(page.locator("#edit-bar")).to_be_hidden()
    stop(page, live_server_url, sim)


def test_an_edit_of_an_object_that_changed_since_is_a_conflict(page: Page, live_server_url: str, errors):  # noqa: F811
    sim = start(page, live_server_url)
    run_to(page, 3)
    page.click("#drawer-tabs [data-tab=tab-yaml]")
    page.fill("#edit-open input[name=name]", "web")
    page.click("#edit-open button[type=submit]")
    expect(page.locator("#edit-what")).to_have_text("ReplicaSet default/web")
    text = page.locator("#yaml-text").input_value()
    assert command(page, {"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 6}}})["ok"]
    run_to(page, 4)
    page.fill("#yaml-text", text.replace("  replicas: 4", "  replicas: 9", 1))
    page.click("#yaml-form button[type=submit]")
    expect(page.locator("#yaml-result")).to_contain_text("409")
    expect(page.locator("#yaml-result")).to_contain_text("the object has been modified")
    expect(page.locator("#owners [data-k='ReplicaSet/web/desired']")).to_have_text("6")
    stop(page, live_server_url, sim)

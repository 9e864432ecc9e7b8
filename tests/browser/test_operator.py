"""A user's kopf operator in the debugger (docs/operators.md, "In the debugger"): the example's
scenario uploaded (its module from the server's operator directory), the operator's panel, a
step to its next handler invocation, that invocation read in the inspector (handler, outcome,
the API calls it made, why? back to the handler), and a breakpoint on a handler's outcome set in
the breakpoint form."""

from __future__ import annotations

import pathlib

import yaml
from playwright.sync_api import Page, expect

from .conftest import ROOT, shot
from .test_dashboard import command, errors, run_to, stop  # noqa: F401 - errors is a fixture
from .test_ui10k import start_fleet

SETTLED = "() => window.ctrlscope.status.mode === 'paused' && !window.ctrlscope.status.goal"


def example(tmp_path: pathlib.Path) -> pathlib.Path:
    """examples/kopf-operator/scenario.yaml as an upload: its module relative to the server's
    operator directory (CTRLSCOPE_OPERATOR_DIR, the example's directory here)."""
    doc = yaml.safe_load((ROOT / "examples" / "kopf-operator" / "scenario.yaml").read_text())
    doc["operators"][0]["module"] = "operator.py"
    path = tmp_path / "kopf-example.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_step_to_a_handler_read_it_and_break_on_its_outcome(page: Page, live_server_url: str, errors, tmp_path):  # noqa: F811
    sim = start_fleet(page, live_server_url, example(tmp_path))
    operators = page.locator("#operators")
    expect(operators).to_be_visible()
    expect(operators).to_contain_text("kopf/operator")
    # Step handler by handler: the operator panel's button runs to the end of its next handler.
    operators.get_by_role("button", name="next handler").click()
    page.wait_for_function(f"() => window.ctrlscope.status.t > 0 && ({SETTLED})()")
    expect(page.locator("#st-hit")).to_contain_text("handler label_pod")
    page.click("[data-tab=tab-inspector]")
    inspector = page.locator("[data-slot=inspector]")
    expect(inspector.locator(".kopf-handler")).to_have_text("label_pod")
    expect(inspector.locator(".kopf-operator")).to_have_text("operator")
    expect(inspector).to_contain_text("Returned: success")
    key = inspector.locator("h2 code").first.inner_text()
    assert key.startswith("default/web-")
    # The patch kopf sends for it, and the retries of the injected 500s: the calls it made.
    inspector.locator("a.kopf-pin").click()  # the inspector keeps to this pod's handlings
    run_to(page, 5)
    expect(inspector.locator("h2 code").first).to_have_text(key)
    calls = inspector.locator("table.kopf-calls")
    expect(calls).to_contain_text("patch")
    expect(calls).to_contain_text("200")
    shot(page, "operator-handler-inspector")
    # why? on a call: the chain runs back through the handler to the write that woke it.
    calls.locator("a.why").first.click()
    chain = page.locator("#why-body")
    expect(chain).to_contain_text("handler label_pod on default/web-")
    expect(chain).to_contain_text("api.request")
    page.keyboard.press("Escape")
    # A breakpoint on a handler's outcome, through the form.
    page.click("[data-tab=tab-breakpoints]")
    page.select_option("#bp-kind", "handler")
    form = page.locator("#form-breakpoint")
    form.locator("input[name=operator]").fill("operator")
    form.locator("select[name=outcome]").select_option("success")
    form.locator("button[type=submit]").click()
    expect(page.locator("#breakpoints")).to_contain_text("operator operator's handler ends with outcome success")
    # The scale-up at t=20 brings two pods: the first handler that ends well stops the run.
    page.click("#btn-run")
    expect(page.locator("#breakpoints .banner.hit")).to_contain_text("Breakpoint #1 fired")
    expect(page.locator("#breakpoints .banner.hit")).to_contain_text("handler label_pod on default/web-")
    assert page.evaluate("() => window.ctrlscope.status.t") >= 20
    # Its pending handlings: none left, each pod's progress purged once labelled.
    expect(operators).to_contain_text("Pending handlings")
    stop(page, live_server_url, sim)

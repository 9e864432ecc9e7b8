"""A damaged recording in a real browser (issue 26 §3): after a restart the home page lists it
with what is wrong and a delete that works; the healthy session beside it came back, and stops
and re-opens as ever. A real Daphne process killed with -9, a real SQLite file."""

from __future__ import annotations

import signal
import sqlite3

from playwright.sync_api import Page, expect

from tests.dashboard.test_damaged import _new, _scale, _written
from tests.dashboard.test_instance import TOKEN, _serving, env  # noqa: F401 - `env` is a fixture
from tests.dashboard.test_restore import _browser


def test_a_damaged_recording_is_listed_and_deleted_and_the_healthy_one_reopens(page: Page, env, tmp_path):  # noqa: F811
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    db = env["CTRLSCOPE_DB_PATH"]
    with _serving(env, tmp_path / "first.log", end=signal.SIGKILL) as port:
        opener, csrf = _browser(port)
        bad, healthy = _new(opener, port, csrf, db), _new(opener, port, csrf, db)
        for sim_id in (bad, healthy):
            assert _scale(port, sim_id, 5) == 200
            _written(db, sim_id, 1)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE dashboard_recording SET start = 'garbage' WHERE id = ?", (bad,))
    with _serving(env, tmp_path / "again.log") as port:
        home = f"http://127.0.0.1:{port}/"
        page.goto(f"{home}?token={TOKEN}")
        row = page.locator(f'tr[data-damaged="{bad}"]')
        expect(row).to_contain_text("start: not JSON (Expecting value at character 0): found 'garbage'")
        expect(page.locator("#sim-list")).to_contain_text(healthy)  # back, running (paused)
        row.get_by_role("link", name="delete").click()
        confirm = f"Delete the recording of scale up and down ({bad}), damaged"
        expect(page.locator("#confirm-text")).to_contain_text(confirm)
        page.locator("#confirm-form button[type=submit]").click()
        page.wait_for_url(home)
        expect(page.locator(f'tr[data-damaged="{bad}"]')).to_have_count(0)
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM dashboard_recording WHERE id = ?", (bad,)).fetchone() == (0,)
        # The healthy one: stop it, then re-open it from the list.
        page.goto(f"{home}sim/{healthy}/stop")
        page.locator("#confirm-form button[type=submit]").click()
        page.wait_for_url(home)
        page.locator(f'tr[data-recording="{healthy}"]').get_by_role("button", name="re-open").click()
        page.wait_for_url(f"{home}sim/{healthy}/")
        expect(page.locator("body")).to_contain_text("re-opened from its recording at t=0.999; replayed 1 actions")
    assert errors == []

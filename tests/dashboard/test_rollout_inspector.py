"""The Deployment sync inspector tells every stage of a rolling update in words: no stage falls
through to its raw record (the create that answered was shown as JSON)."""

from __future__ import annotations

from django.template.loader import render_to_string

from dashboard.host import panels

from .test_hosted import hosted, run_until
from .test_v15 import text


def test_every_stage_of_a_rolling_update_is_told_in_words_the_created_replica_set_too():
    h = hosted("deployment-rolling-update")
    run_until(h, 30.1)  # the image set at t=30: revision 2's ReplicaSet created (20 syncs are kept)
    syncs = list(h.frames.narrations[("deployment", "default/web")])
    told = [
        text(render_to_string("dashboard/_inspector.html", {**panels.narration_tables(n), "narration": n}))
        for n in syncs
    ]
    assert all('"stage":' not in said for said in told), next(s for s in told if '"stage":' in s)
    created = [said for said in told if "The create answered" in said]
    assert any("web-77768f5b79 exists, revision 2." in c for c in created), created

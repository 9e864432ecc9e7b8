"""A rolling update read on the page: the Deployment sync inspector tells every stage in words (no
stage falls through to its raw record: the create that answered was shown as JSON), and the Pod
tab of a pod the rollout deleted says it is gone and whose it was (it said "an orphan")."""

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


def test_a_deleted_pods_tab_says_it_is_gone_and_whose_it_was_not_an_orphan():
    """A pod the ReplicaSet controller deleted (a rollout scaled its ReplicaSet to 0) has no
    object, so no ownerReference to read: its tab said "No controller (an orphan)"."""
    h = hosted("deployment-rolling-update")
    run_until(h, 60.0)  # revision 1's ReplicaSet scaled to 0, its pods deleted
    gone = next(
        row["subject"]
        for row in h.sim.records({"kind": "pod.transition"}, 0, 100_000)["rows"]
        if row["subject"].startswith("default/web-766486c5b6-")
        and h.sim.server.peek("pods", "default", row["subject"].split("/")[1]) is None
    )
    said = text(render_to_string("dashboard/_pod.html", panels.pod_context(h, "default", gone.split("/")[1])))
    assert "an orphan" not in said
    assert "Gone from the API server; its controller was ReplicaSet/web-766486c5b6" in said

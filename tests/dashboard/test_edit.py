"""Edit like `kubectl edit`: open the stored object, preview the update as a server dry run with
its diff, apply it as a recorded update that carries the resourceVersion it was opened at."""

from __future__ import annotations

import json

import pytest
import yaml

from controlplane.session import edit
from controlplane.session.commands import CommandError
from controlplane.simulation import run_scenario
from tests.dashboard.test_hosted import hosted, run_until


def _opened(h, kind="ReplicaSet", name="web", namespace="default"):
    return edit.open_edit(h, {"kind": kind, "name": name, "namespace": namespace})


def _scaled(text: str, replicas: int) -> str:
    obj = yaml.safe_load(text)
    obj["spec"]["replicas"] = replicas
    return yaml.safe_dump(obj, sort_keys=False)


def test_open_shows_the_stored_object_without_managed_fields():
    h = hosted()
    run_until(h, 3.0)
    opened = _opened(h)
    stored = h.sim.server.peek("replicasets", "default", "web")
    assert opened["resourceVersion"] == stored["metadata"]["resourceVersion"]
    shown = yaml.safe_load(opened["yaml"])
    assert shown["spec"] == stored["spec"] and shown["status"] == stored["status"]
    assert "managedFields" not in shown["metadata"]


def test_preview_is_a_dry_run_with_the_diff_and_changes_nothing():
    h = hosted()
    run_until(h, 3.0)
    opened = _opened(h)
    before = h.sim.server.peek("replicasets", "default", "web")
    actions, revision = len(h.sim.actions), h.sim.server.revision
    answer = edit.preview(
        h, {**opened, "kind": "ReplicaSet", "original": opened["yaml"], "text": _scaled(opened["yaml"], 7)}
    )
    assert answer["valid"] and answer["changes"]
    diff = answer["diff"].splitlines()
    assert any(line.startswith("-  replicas: ") for line in diff)
    assert "+  replicas: 7" in diff
    assert h.sim.server.peek("replicasets", "default", "web") == before
    assert (len(h.sim.actions), h.sim.server.revision) == (actions, revision)


def test_preview_refuses_an_unknown_field_as_strict_validation_does():
    h = hosted()
    run_until(h, 3.0)
    opened = _opened(h)
    text = opened["yaml"].replace("  replicas:", "  replcas:", 1)
    answer = edit.preview(h, {**opened, "kind": "ReplicaSet", "original": opened["yaml"], "text": text})
    assert answer["valid"] is False and answer["code"] == 400
    assert 'unknown field "spec.replcas"' in answer["error"]


def test_apply_is_a_recorded_update_and_the_export_replays_it(tmp_path):
    h = hosted()
    run_until(h, 3.0)
    opened = _opened(h)
    result = h.command(
        {
            "op": "edit_apply",
            **opened,
            "kind": "ReplicaSet",
            "original": opened["yaml"],
            "text": _scaled(opened["yaml"], 5),
        }
    )
    assert result["ok"], result
    assert h.sim.server.peek("replicasets", "default", "web")["spec"]["replicas"] == 5
    logged = h.sim.actions[-1]["action"]
    assert logged["request"]["verb"] == "update" and logged["request"]["options"] == {"fieldValidation": "Strict"}
    run_until(h, 20.0)
    path = tmp_path / "session.scenario.yaml"
    path.write_text(yaml.safe_dump(h.export(), sort_keys=False))
    assert json.dumps(run_scenario(str(path))) == json.dumps(h.report())


def test_apply_after_the_object_changed_is_a_conflict_and_writes_nothing():
    h = hosted()
    run_until(h, 3.0)
    opened = _opened(h)
    h.command({"op": "act", "action": {"scale": {"kind": "ReplicaSet", "name": "web", "replicas": 6}}})
    run_until(h, 3.5)  # the scale is applied once the events of its instant have run
    result = h.command(
        {
            "op": "edit_apply",
            **opened,
            "kind": "ReplicaSet",
            "original": opened["yaml"],
            "text": _scaled(opened["yaml"], 9),
        }
    )
    assert result["ok"] is False and result["code"] == 409
    assert "the object has been modified" in result["error"]
    assert h.sim.server.peek("replicasets", "default", "web")["spec"]["replicas"] == 6


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t, "Edit cancelled, no changes made."),
        (lambda t: t.replace("name: web", "name: other", 1), "At least one of apiVersion, kind and name was changed"),
        (lambda t: t.replace("kind: ReplicaSet", "kind: ReplicationController", 1), "At least one of apiVersion"),
        (lambda t: t + "---\n" + t, "an edit is of one object"),
        (lambda t: "spec: [", "yaml: not valid YAML"),
        (lambda t: t.replace("  replicas: 4", "  replicas: 4\n  replicas: 5", 1), 'key "replicas" already set in map'),
    ],
)
def test_an_edit_kubectl_would_refuse_is_refused_and_changes_nothing(change, message):
    h = hosted()
    run_until(h, 3.0)
    opened = _opened(h)
    before, actions = h.sim.server.peek("replicasets", "default", "web"), len(h.sim.actions)
    cmd = {**opened, "kind": "ReplicaSet", "original": opened["yaml"], "text": change(opened["yaml"])}
    with pytest.raises(CommandError, match=message):
        edit.preview(h, cmd)
    with pytest.raises(CommandError, match=message):
        h.command({"op": "edit_apply", **cmd})
    assert h.sim.server.peek("replicasets", "default", "web") == before and len(h.sim.actions) == actions


@pytest.mark.parametrize(
    ("cmd", "message"),
    [
        ({"kind": "DaemonSet", "name": "web"}, "kind: one of"),
        ({"kind": "Event", "name": "web"}, "kind: one of"),
        ({"kind": "ReplicaSet", "name": ""}, "name:"),
        ({"kind": "ReplicaSet", "name": "nope"}, 'replicasets "nope" not found'),
        ({"kind": "Pod", "name": "x" * 300}, "name:"),
    ],
)
def test_open_names_what_is_wrong(cmd, message):
    h = hosted()
    run_until(h, 1.0)
    with pytest.raises(CommandError, match=message):
        edit.open_edit(h, cmd)


def test_nodes_are_edited_without_a_namespace():
    h = hosted()
    run_until(h, 1.0)
    node = next(iter(h.sim.server.objects("nodes")))["metadata"]["name"]
    opened = _opened(h, kind="Node", name=node, namespace=None)
    assert opened["namespace"] is None
    obj = yaml.safe_load(opened["yaml"])
    obj["spec"]["unschedulable"] = True
    result = h.command(
        {"op": "edit_apply", **opened, "kind": "Node", "original": opened["yaml"], "text": yaml.safe_dump(obj)}
    )
    assert result["ok"], result
    assert h.sim.server.peek("nodes", None, node)["spec"]["unschedulable"] is True

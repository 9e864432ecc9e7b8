"""The YAML editor refuses a manifest with a repeated key as the API server refuses it under
fieldValidation=Strict (the editor's apply uses Strict), before anything is applied."""

from __future__ import annotations

import pytest

from controlplane.scenario import load_file
from controlplane.session.commands import CommandError
from controlplane.simulation import Simulation
from dashboard.host.hosted import HostedSimulation

MANIFEST = """apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: dup
  namespace: default
spec:
  replicas: 1
  replicas: 4
  selector: {matchLabels: {app: dup}}
  template:
    metadata: {labels: {app: dup}}
    spec: {containers: [{name: c, image: nginx}]}
"""


def test_apply_yaml_refuses_a_repeated_key_with_the_strict_message_and_applies_nothing():
    h = HostedSimulation("t", Simulation(load_file("demo")), name="demo", source="demo")
    actions = len(h.sim.actions)
    with pytest.raises(CommandError) as err:
        h.command({"op": "apply_yaml", "text": f"{MANIFEST}---\n{MANIFEST.replace('dup', 'other')}"})
    assert str(err.value) == (
        'yaml: document 1: ReplicaSet in version "v1" cannot be handled as a ReplicaSet: strict decoding error: '
        'yaml: unmarshal errors:\n  line 8: key "replicas" already set in map'
    )
    assert len(h.sim.actions) == actions and h.sim.server.peek("replicasets", "default", "dup") is None
    applied = h.command({"op": "apply_yaml", "text": MANIFEST.replace("  replicas: 1\n", "")})
    assert applied["ok"] is True and h.sim.server.peek("replicasets", "default", "dup")["spec"]["replicas"] == 4

"""controlplane.safeyaml: what it reads like PyYAML's SafeLoader, what it refuses, and its bounds."""

from __future__ import annotations

import time

import pytest
import yaml

from controlplane import safeyaml
from controlplane.limits import MAX_YAML_DEPTH
from controlplane.safeyaml import YAMLInputError, load
from controlplane.scenario import SCENARIO_DIR


def test_reads_every_shipped_scenario_as_pyyaml_does():
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        text = path.read_text()
        assert load(text) == yaml.safe_load(text), path.name


def test_uses_libyaml_when_pyyaml_has_it():
    assert hasattr(yaml, "CSafeLoader") == safeyaml.WITH_LIBYAML


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("a: yes", {"a": True}),
        ("a: 010", {"a": 8}),
        ("a: 0x1F", {"a": 31}),
        ("a: 1_000", {"a": 1000}),
        ("a: 1.5", {"a": 1.5}),
        ("a: ~", {"a": None}),
        ("a: 2026-01-01", {"a": "2026-01-01"}),  # timestamps stay strings, as kubectl keeps them
        ("a: =", {"a": "="}),
        ("a: !!str 5", {"a": "5"}),
        ('"<<": 1', {"<<": 1}),
        ("", None),
    ],
)
def test_scalars_resolve_as_yaml_1_1_except_timestamps(text, value):
    assert load(text) == value


def test_merge_keys_and_anchors():
    data = load("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\nl: [*b, *b]\n")
    assert data["d"] == {"x": 1, "y": 3}
    assert data["l"][0] is data["l"][1] is data["base"]  # shared, as PyYAML shares them


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: .nan", "a: .nan is not a finite number"),
        ("a: [1, -.inf]", "a[1]: -.inf is not a finite number"),
        ("a: 1\na: 2", 'duplicate key "a" (line 2)'),
        ("on: 1", "mapping keys must be strings, not the boolean true"),
        ("? [a]\n: b", "mapping keys must be strings, not a list"),
        ("x: &a [*a]", "x[0]: recursive alias *a"),
        ("x: *b", "x: undefined alias *b"),
        ("a: !!set {x}", "a: unsupported tag tag:yaml.org,2002:set"),
        ("a: !foo x", "a: unsupported tag !foo"),
        ("a: !!int x", "a: 'x' is not a valid int"),
        ("a: 18446744073709551616", "a: integer 18446744073709551616 is out of range"),
        ("---\na: 1\n---\nb: 2", "more than one YAML document (line 3)"),
        ("a: [", "not valid YAML"),
        ("<<: 5", "a merge key (<<) takes a mapping or a list of them"),
    ],
)
def test_refuses_with_one_line_naming_where(text, message):
    with pytest.raises(YAMLInputError) as caught:
        load(text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_nesting_is_bounded_without_recursion():
    with pytest.raises(YAMLInputError, match=f"nested deeper than {MAX_YAML_DEPTH} levels"):
        load("[" * 100_000 + "]" * 100_000)
    assert load("[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH) is not None


def test_an_alias_counts_at_the_depth_it_expands_to():
    deep = "[" * 60 + "]" * 60
    with pytest.raises(YAMLInputError, match="once \\*d expands"):
        load(f"d: &d {deep}\nx: " + "[" * 50 + "*d" + "]" * 50)


def test_an_alias_bomb_is_refused_while_reading():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, name = chr(96 + i), chr(97 + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    started = time.monotonic()
    with pytest.raises(YAMLInputError, match="once aliases are expanded"):
        load("\n".join(lines))
    assert time.monotonic() - started < 5


def test_a_50_mb_file_loads_in_seconds():
    text = (
        'description: "'
        + "x" * 50_000_000
        + '"\nactions:\n'
        + "".join(
            f"  - {{at: {i}, scale: {{kind: ReplicaSet, name: web, replicas: {i % 5}}}}}\n" for i in range(20_000)
        )
    )
    started = time.monotonic()
    data = load(text)
    assert len(data["actions"]) == 20_000
    assert time.monotonic() - started < 20


def test_load_all_reads_every_document_with_anchors_per_document():
    assert safeyaml.load_all("a: &x 1\nb: *x\n---\n---\nc: 2\n") == [{"a": 1, "b": 1}, None, {"c": 2}]
    with pytest.raises(YAMLInputError, match="undefined alias"):
        safeyaml.load_all("a: &x 1\n---\nb: *x\n")
    with pytest.raises(YAMLInputError, match="nested deeper than"):
        safeyaml.load_all("a: 1\n---\n" + "[" * 120_000 + "]" * 120_000)

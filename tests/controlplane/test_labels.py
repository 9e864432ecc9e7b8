from __future__ import annotations

import pytest

from controlplane.labels import (
    Requirement,
    everything,
    new_requirement,
    nothing,
    parse,
    selector_from_label_selector,
    selector_from_set,
)

VALUE_HINT = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
KEY_NAME_HINT = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


# -- string syntax ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "requirement"),
    [
        ("a=b", Requirement("a", "=", ["b"])),
        ("a==b", Requirement("a", "==", ["b"])),
        ("a!=b", Requirement("a", "!=", ["b"])),
        ("a in (y,x)", Requirement("a", "in", ["x", "y"])),
        ("a notin (x)", Requirement("a", "notin", ["x"])),
        ("a", Requirement("a", "exists", [])),
        ("!a", Requirement("a", "!", [])),
        ("a>1", Requirement("a", "gt", ["1"])),
        ("a<1", Requirement("a", "lt", ["1"])),
        ("example.com/a=b", Requirement("example.com/a", "=", ["b"])),
    ],
)
def test_each_syntax_form_parses_to_its_requirement(text, requirement):
    assert parse(text).requirements == (requirement,)


def test_comma_joins_requirements_sorted_by_key():
    assert [r.key for r in parse("c=1,a=2,b").requirements] == ["a", "b", "c"]


def test_whitespace_around_tokens_is_ignored():
    assert str(parse(" a = b ,\tc  in ( y , x )\n")) == "a=b,c in (x,y)"


def test_missing_exact_value_means_the_empty_value():
    assert parse("a=").requirements == (Requirement("a", "=", [""]),)


def test_empty_parentheses_hold_the_empty_value():
    assert parse("a in ()").requirements == (Requirement("a", "in", [""]),)


def test_empty_entries_in_a_value_list_are_the_empty_value():
    assert parse("a in (x,,y,)").requirements == (Requirement("a", "in", ["", "x", "y"]),)


def test_in_and_notin_are_identifiers_outside_operator_position():
    assert parse("in in (notin)").requirements == (Requirement("in", "in", ["notin"]),)


def test_empty_string_selects_everything():
    assert parse("").empty()


@pytest.mark.parametrize(
    "text",
    [
        "a=b",
        "a==b",
        "a!=b",
        "a in (x,y)",
        "a notin (x)",
        "a",
        "!a",
        "a>1",
        "a in ()",
        "a=b,c in (x,y),!d,e",
        "example.com/a notin (,x)",
    ],
)
def test_string_round_trips(text):
    assert str(parse(text)) == text


def test_string_normalises_order_of_keys_and_values():
    assert str(parse("z notin (b,a),a=1")) == "a=1,z notin (a,b)"


# -- string syntax errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b,", "found '', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
    ],
)
def test_syntax_errors_name_the_offending_token(text, message):
    with pytest.raises(ValueError) as raised:
        parse(text)
    assert str(raised.value) == message


def test_invalid_key_in_string_is_rejected_with_the_validation_message():
    with pytest.raises(ValueError) as raised:
        parse("-a=b")
    assert str(raised.value) == (
        'unable to parse requirement: <nil>: Invalid value: "-a": name part ' + KEY_NAME_HINT
    )


def test_invalid_value_in_string_is_rejected_with_its_path():
    with pytest.raises(ValueError) as raised:
        parse("a=-b")
    assert (
        str(raised.value) == 'unable to parse requirement: values[0][a]: Invalid value: "-b": ' + VALUE_HINT
    )


def test_several_invalid_values_are_aggregated_in_brackets():
    with pytest.raises(ValueError) as raised:
        parse("a in (-x,-y)")
    assert str(raised.value) == (
        "unable to parse requirement: ["
        f'values[0][a]: Invalid value: "-x": {VALUE_HINT}, '
        f'values[1][a]: Invalid value: "-y": {VALUE_HINT}]'
    )


def test_value_over_63_characters_is_rejected():
    with pytest.raises(ValueError, match="must be no more than 63 characters"):
        parse("a=" + "v" * 64)


def test_gt_needs_an_integer():
    with pytest.raises(ValueError) as raised:
        parse("a>x")
    assert str(raised.value) == (
        "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, "
        "the value must be an integer"
    )


# -- matching -----------------------------------------------------------------------------------


def test_equality_matches_only_the_same_value():
    selector = parse("app=web")
    assert (selector.matches({"app": "web"}), selector.matches({"app": "db"}), selector.matches({})) == (
        True,
        False,
        False,
    )


def test_not_equals_matches_when_the_key_is_absent():
    assert parse("app!=web").matches({"tier": "fe"})


def test_not_equals_rejects_the_excluded_value():
    assert not parse("app!=web").matches({"app": "web"})


def test_notin_matches_when_the_key_is_absent():
    assert parse("app notin (web,db)").matches({})


def test_notin_rejects_a_listed_value():
    assert not parse("app notin (web,db)").matches({"app": "db"})


def test_in_matches_any_listed_value():
    assert parse("app in (web,db)").matches({"app": "db"})


def test_in_does_not_match_when_the_key_is_absent():
    assert not parse("app in (web,db)").matches({"tier": "fe"})


def test_exists_matches_any_value_including_empty():
    assert parse("app").matches({"app": ""})


def test_does_not_exist_matches_when_absent():
    assert parse("!app").matches({"tier": "fe"})


def test_does_not_exist_rejects_a_present_key():
    assert not parse("!app").matches({"app": ""})


def test_gt_compares_as_integers():
    assert (parse("n>9").matches({"n": "10"}), parse("n<9").matches({"n": "10"})) == (True, False)


def test_gt_does_not_match_a_non_integer_label():
    assert not parse("n>1").matches({"n": "ten"})


def test_requirements_are_anded():
    selector = parse("app=web,tier in (fe,be),!canary")
    assert (
        selector.matches({"app": "web", "tier": "fe"}),
        selector.matches({"app": "web", "canary": "1"}),
    ) == (
        True,
        False,
    )


def test_none_labels_are_treated_as_no_labels():
    assert (parse("!app").matches(None), parse("app=web").matches(None)) == (True, False)


def test_equality_fast_path_requires_every_pair():
    selector = selector_from_label_selector({"matchLabels": {"app": "web", "tier": "fe"}})
    assert (selector.matches({"app": "web", "tier": "fe", "x": "y"}), selector.matches({"app": "web"})) == (
        True,
        False,
    )


def test_everything_matches_any_labels():
    assert (everything().matches(None), everything().matches({"a": "b"}), everything().empty()) == (
        True,
        True,
        True,
    )


def test_nothing_matches_no_labels_and_is_not_empty():
    assert (nothing().matches({}), nothing().matches(None), nothing().empty(), str(nothing())) == (
        False,
        False,
        False,
        "",
    )


# -- LabelSelector conversion --------------------------------------------------------------------


def test_none_label_selector_selects_nothing():
    assert selector_from_label_selector(None) == nothing()


def test_empty_label_selector_selects_everything():
    assert selector_from_label_selector({}).empty()


def test_label_selector_with_empty_fields_selects_everything():
    assert selector_from_label_selector({"matchLabels": {}, "matchExpressions": []}).empty()


def test_match_labels_print_as_single_equals():
    assert (
        str(selector_from_label_selector({"matchLabels": {"tier": "fe", "app": "web"}})) == "app=web,tier=fe"
    )


def test_match_labels_and_expressions_combine_sorted_by_key():
    selector = selector_from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "track", "operator": "NotIn", "values": ["canary"]},
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "tier", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        }
    )
    assert str(selector) == "app=web,env in (dev,prod),!legacy,tier,track notin (canary)"


def test_label_selector_matches_like_its_string_form():
    selector = selector_from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "track", "operator": "NotIn", "values": ["canary"]}],
        }
    )
    assert (selector.matches({"app": "web"}), selector.matches({"app": "web", "track": "canary"})) == (
        True,
        False,
    )


def test_unknown_operator_is_rejected_by_name():
    with pytest.raises(ValueError) as raised:
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "Foo", "values": ["x"]}]})
    assert str(raised.value) == '"Foo" is not a valid label selector operator'


def test_in_without_values_is_rejected():
    with pytest.raises(ValueError) as raised:
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})
    assert str(raised.value) == (
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    )


def test_notin_without_values_is_rejected():
    with pytest.raises(ValueError, match="values set can't be empty"):
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "NotIn"}]})


def test_exists_with_values_is_rejected():
    with pytest.raises(ValueError) as raised:
        selector_from_label_selector(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]}
        )
    assert str(raised.value) == (
        'values: Invalid value: []string{"x", "y"}: values set must be empty for exists and does not exist'
    )


def test_does_not_exist_with_values_is_rejected():
    with pytest.raises(ValueError, match="values set must be empty"):
        selector_from_label_selector(
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["x"]}]}
        )


def test_invalid_match_labels_key_is_rejected_with_its_field():
    with pytest.raises(ValueError) as raised:
        selector_from_label_selector({"matchLabels": {"-app": "web"}})
    assert str(raised.value) == 'key: Invalid value: "-app": name part ' + KEY_NAME_HINT


def test_invalid_match_labels_value_is_rejected_with_its_field():
    with pytest.raises(ValueError) as raised:
        selector_from_label_selector({"matchLabels": {"app": "v" * 64}})
    assert str(raised.value) == (
        f'values[0][app]: Invalid value: "{"v" * 64}": must be no more than 63 characters'
    )


def test_non_string_match_label_value_is_rejected():
    with pytest.raises(ValueError, match="must be strings"):
        selector_from_label_selector({"matchLabels": {"replicas": 3}})


# -- sets and requirements -------------------------------------------------------------------------


def test_selector_from_set_is_equality_only():
    assert str(selector_from_set({"b": "2", "a": "1"})) == "a=1,b=2"


def test_selector_from_empty_or_none_set_selects_everything():
    assert (selector_from_set({}).empty(), selector_from_set(None).empty()) == (True, True)


def test_new_requirement_rejects_an_unknown_operator():
    with pytest.raises(ValueError) as raised:
        new_requirement("a", "~", ["x"])
    assert str(raised.value) == (
        'operator: Unsupported value: "~": supported values: '
        '"in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"'
    )


def test_add_returns_a_new_selector_with_the_requirement():
    base = parse("b=1")
    assert (str(base.add(new_requirement("a", "exists"))), str(base)) == ("a,b=1", "b=1")


def test_selectors_with_the_same_requirements_are_equal():
    assert parse("a=1,b in (y,x)") == parse("b in (x,y), a=1")

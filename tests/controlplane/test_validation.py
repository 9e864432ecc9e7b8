from __future__ import annotations

from controlplane.validation import (
    error_string,
    field_invalid,
    go_quote,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_labels,
)

SUBDOMAIN_HINT = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_HINT = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
KEY_NAME_HINT = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_HINT = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


# -- label values ---------------------------------------------------------------------------


def test_empty_label_value_is_valid():
    assert is_valid_label_value("") == []


def test_label_value_of_63_characters_is_valid():
    assert is_valid_label_value("v" * 63) == []


def test_label_value_of_64_characters_exceeds_the_limit():
    assert is_valid_label_value("v" * 64) == ["must be no more than 63 characters"]


def test_label_value_starting_with_a_dash_gets_the_regex_hint():
    assert is_valid_label_value("-web") == [VALUE_HINT]


def test_label_value_too_long_and_malformed_reports_both():
    assert is_valid_label_value("v" * 63 + "-") == ["must be no more than 63 characters", VALUE_HINT]


def test_label_value_length_is_counted_in_utf8_bytes():
    assert is_valid_label_value("é" * 32)[0] == "must be no more than 63 characters"


def test_label_value_with_trailing_newline_is_invalid():
    assert is_valid_label_value("web\n") == [VALUE_HINT]


# -- qualified names (label keys) ------------------------------------------------------------


def test_plain_label_key_is_valid():
    assert is_qualified_name("app.kubernetes.io_Name-1") == []


def test_label_key_with_dns_subdomain_prefix_is_valid():
    assert is_qualified_name("example.com/MyName") == []


def test_label_key_name_part_of_64_characters_exceeds_the_limit():
    assert is_qualified_name("k" * 64) == ["name part must be no more than 63 characters"]


def test_label_key_prefix_of_253_characters_is_valid():
    prefix = ".".join(["a" * 63] * 4)[:253]
    assert len(prefix) == 253
    assert is_qualified_name(prefix + "/name") == []


def test_label_key_prefix_of_254_characters_exceeds_the_subdomain_limit():
    prefix = ".".join(["a" * 63] * 4)[:251] + "aaa"
    assert len(prefix) == 254
    assert is_qualified_name(prefix + "/name") == ["prefix part must be no more than 253 characters"]


def test_label_key_prefix_must_be_lowercase_subdomain():
    assert is_qualified_name("Example.com/name") == ["prefix part " + SUBDOMAIN_HINT]


def test_label_key_with_empty_prefix_is_rejected():
    assert is_qualified_name("/name") == ["prefix part must be non-empty"]


def test_label_key_with_empty_name_reports_empty_and_regex():
    assert is_qualified_name("") == ["name part must be non-empty", "name part " + KEY_NAME_HINT]


def test_label_key_with_two_slashes_is_rejected_whole():
    assert is_qualified_name("a/b/c") == [
        "a valid label key " + KEY_NAME_HINT + " with an optional DNS subdomain prefix and '/' "
        "(e.g. 'example.com/MyName')"
    ]


def test_label_key_name_starting_with_a_dot_gets_the_regex_hint():
    assert is_qualified_name("example.com/.name") == ["name part " + KEY_NAME_HINT]


# -- DNS names --------------------------------------------------------------------------------


def test_dns1123_subdomain_with_uppercase_gets_the_regex_hint():
    assert is_dns1123_subdomain("Web") == [SUBDOMAIN_HINT]


def test_dns1123_subdomain_of_253_characters_is_valid():
    assert is_dns1123_subdomain("a" * 253) == []


def test_dns1123_subdomain_of_254_characters_exceeds_the_limit():
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


def test_dns1123_label_with_dots_says_so():
    assert is_dns1123_label("web.default") == ["must not contain dots"]


def test_dns1123_label_of_64_characters_exceeds_the_limit():
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]


def test_dns1123_label_ending_in_a_dash_gets_the_regex_hint():
    assert is_dns1123_label("web-") == [LABEL_HINT]


def test_name_ending_in_a_dash_is_invalid_without_prefix():
    assert name_is_dns_subdomain("web-", prefix=False) == [SUBDOMAIN_HINT]


def test_generate_name_may_end_in_a_dash():
    assert name_is_dns_subdomain("web-", prefix=True) == []


def test_generate_name_masking_replaces_the_last_two_characters():
    # upstream maskTrailingDash: name[:len-2] + "a", so "a.-" is checked as "aa"
    assert name_is_dns_subdomain("a.-", prefix=True) == []


def test_generate_name_of_254_characters_ending_in_a_dash_is_valid():
    assert name_is_dns_subdomain("a" * 253 + "-", prefix=True) == []


def test_generate_name_of_a_lone_dash_is_invalid():
    assert name_is_dns_subdomain("-", prefix=True) == [SUBDOMAIN_HINT]


def test_dns_label_generate_name_may_end_in_a_dash():
    assert name_is_dns_label("ns-", prefix=True) == []


def test_dns_label_name_ending_in_a_dash_is_invalid_without_prefix():
    assert name_is_dns_label("ns-", prefix=False) == [LABEL_HINT]


# -- field causes ----------------------------------------------------------------------------


def test_valid_labels_have_no_causes():
    assert validate_labels({"app": "web", "example.com/tier": ""}, "metadata.labels") == []


def test_none_labels_have_no_causes():
    assert validate_labels(None, "metadata.labels") == []


def test_invalid_label_value_becomes_a_field_value_invalid_cause():
    assert validate_labels({"app": "-web"}, "metadata.labels") == [
        {
            "type": "FieldValueInvalid",
            "message": 'Invalid value: "-web": ' + VALUE_HINT,
            "field": "metadata.labels",
        }
    ]


def test_invalid_key_and_value_give_one_cause_per_message_key_first():
    causes = validate_labels({"k" * 64: "v" * 64}, "metadata.labels")
    assert [c["message"] for c in causes] == [
        f'Invalid value: "{"k" * 64}": name part must be no more than 63 characters',
        f'Invalid value: "{"v" * 64}": must be no more than 63 characters',
    ]


def test_causes_follow_label_insertion_order():
    causes = validate_labels({"b": "-1", "a": "-2"}, "spec.template.metadata.labels")
    assert [c["message"][:19] for c in causes] == ['Invalid value: "-1"', 'Invalid value: "-2"']


def test_bad_value_is_quoted_like_go():
    assert go_quote('say "hi"\n') == '"say \\"hi\\"\\n"'


def test_error_string_prefixes_the_field_path():
    assert error_string(field_invalid("key", "x", "bad")) == 'key: Invalid value: "x": bad'


def test_error_string_of_a_nil_path_prints_nil():
    assert error_string(field_invalid("", "x", "bad")) == '<nil>: Invalid value: "x": bad'

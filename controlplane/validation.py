"""Name, label-key and label-value validation with upstream's exact messages.

Counterpart of apimachinery `pkg/util/validation` (with `pkg/api/validate/content`, where the
label-key and label-value checks live since v1.34), of the generic name functions in
`pkg/api/validation/generic.go`, and of `ValidateLabels` in `pkg/apis/meta/v1/validation`.

Guarantees
----------
* Every `is_*` / `name_is_*` function returns a list of error message strings, empty when the
  value is valid; the strings are upstream's, byte for byte (including `RegexError`'s odd
  double space before " or "), so a user comparing with a real cluster sees the same text.
* Lengths are measured in UTF-8 bytes, as Go's `len` does.
* Regexes match the whole string (Go's `^...$` without a multi-line flag never accepts a
  trailing newline; Python's `$` would, so everything here uses `fullmatch`).
* The functions are safe to call from anywhere. The only state is a bounded memo of the label
  sets `validate_labels` found valid, which saves work and never changes a result.

`field_invalid` and `error_string` mirror `field.Invalid` and `field.Error.Error()`: the API
server turns a cause into a Status cause, and labels.py uses them to build the messages of
`NewRequirement`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final, TypedDict


class Cause(TypedDict):
    """One `metav1.StatusCause` of a 422 Invalid answer (`field.Error` as the server sends it)."""

    type: str
    message: str
    field: str


FIELD_VALUE_INVALID: Final = "FieldValueInvalid"
FIELD_VALUE_NOT_SUPPORTED: Final = "FieldValueNotSupported"

DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
LABEL_KEY_NAME_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63

_LABEL_KEY_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_ERR_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT: Final = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_ERR_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_ERR_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)

_label_key_re = re.compile(_LABEL_KEY_FMT)
_label_value_re = re.compile(_LABEL_VALUE_FMT)
_dns1123_label_re = re.compile(_DNS1123_LABEL_FMT)
_dns1123_subdomain_re = re.compile(_DNS1123_SUBDOMAIN_FMT)


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream `RegexError`, including its "'a',  or 'b'" double space."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def empty_error() -> str:
    return "must be non-empty"


def _byte_len(value: str) -> int:
    return len(value) if value.isascii() else len(value.encode())


_LABEL_KEY_REGEX_ERROR: Final = regex_error(
    _LABEL_KEY_ERR_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"
)
_LABEL_VALUE_REGEX_ERROR: Final = regex_error(
    _LABEL_VALUE_ERR_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"
)
_DNS1123_LABEL_REGEX_ERROR: Final = regex_error(
    _DNS1123_LABEL_ERR_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"
)
_DNS1123_SUBDOMAIN_REGEX_ERROR: Final = regex_error(
    _DNS1123_SUBDOMAIN_ERR_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"
)


def is_dns1123_label(value: str) -> list[str]:
    """Upstream `IsDNS1123Label`: at most 63 bytes of [a-z0-9-], alphanumeric at both ends."""
    errs: list[str] = []
    if _byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if _dns1123_label_re.fullmatch(value) is None:
        # A valid subdomain that is not a valid label can only be so because of its dots.
        if _dns1123_subdomain_re.fullmatch(value) is not None:
            errs.append("must not contain dots")
        else:
            errs.append(_DNS1123_LABEL_REGEX_ERROR)
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """Upstream `IsDNS1123Subdomain`: at most 253 bytes of dot-separated DNS labels."""
    errs: list[str] = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if _dns1123_subdomain_re.fullmatch(value) is None:
        errs.append(_DNS1123_SUBDOMAIN_REGEX_ERROR)
    return errs


def is_qualified_name(value: str) -> list[str]:
    """Upstream `IsQualifiedName` (= `content.IsLabelKey`): `[prefix/]name`.

    The optional prefix is a DNS subdomain (≤253); the name is ≤63 bytes of [A-Za-z0-9-_.],
    alphanumeric at both ends. Messages carry "prefix part " / "name part " as upstream.
    """
    if _label_key_re.fullmatch(value) is not None and len(value) <= LABEL_KEY_NAME_MAX_LENGTH:
        return []  # the common case: no prefix, valid name (the regex admits ASCII only)
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + _LABEL_KEY_REGEX_ERROR
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + empty_error())
    elif _byte_len(name) > LABEL_KEY_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(LABEL_KEY_NAME_MAX_LENGTH))
    if _label_key_re.fullmatch(name) is None:
        errs.append("name part " + _LABEL_KEY_REGEX_ERROR)
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """Upstream `IsValidLabelValue`: empty, or ≤63 bytes shaped like a label-key name."""
    errs: list[str] = []
    if _byte_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if _label_value_re.fullmatch(value) is None:
        errs.append(_LABEL_VALUE_REGEX_ERROR)
    return errs


def _mask_trailing_dash(name: str) -> str:
    # Upstream maskTrailingDash is `name[:len(name)-2] + "a"`: it drops the last *two*
    # characters, not one, so "ab-" is checked as "aa" and a 254-byte generateName ending in
    # '-' passes the 253 limit. Reproduced as is. A lone "-" panics upstream (slice bound -1);
    # here it is left unmasked and so rejected.
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    """`ValidateNameFunc` for DNS-subdomain names (pods, ReplicaSets, RCs, ...).

    `prefix` is true for a `generateName`, where a trailing '-' is allowed because the server
    appends a random suffix.
    """
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    """`ValidateNameFunc` for DNS-label names (namespaces); `prefix` as in `name_is_dns_subdomain`."""
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


# -- field errors -------------------------------------------------------------------------

_GO_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_quote(value: str) -> str:
    """Go's `%q` of a string (`strconv.Quote`): how upstream shows a bad value in a message."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    out: list[str] = []
    for ch in value:
        escaped = _GO_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def go_value(value: object) -> str:
    """How `field.Error.ErrorBody` prints a bad value: `%q` for strings, `%#v` for []string."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        if not value:
            return "[]string(nil)"
        return "[]string{" + ", ".join(go_quote(str(item)) for item in value) + "}"
    return str(value)


def field_invalid(field: str, value: object, detail: str) -> Cause:
    """`field.Invalid(path, value, detail)` as the cause the API server sends."""
    return {
        "type": FIELD_VALUE_INVALID,
        "message": f"Invalid value: {go_value(value)}: {detail}",
        "field": field,
    }


def field_not_supported(field: str, value: object, valid_values: Iterable[str]) -> Cause:
    """`field.NotSupported(path, value, validValues)`."""
    message = f"Unsupported value: {go_value(value)}"
    quoted = [go_quote(v) for v in valid_values]
    if quoted:
        message += ": supported values: " + ", ".join(quoted)
    return {"type": FIELD_VALUE_NOT_SUPPORTED, "message": message, "field": field}


def error_string(cause: Cause) -> str:
    """`field.Error.Error()`: "<field>: <message>" (a nil path prints as "<nil>")."""
    return f"{cause['field'] or '<nil>'}: {cause['message']}"


# Label sets found valid before (every pod of a ReplicaSet has the same labels); bounded.
_valid_label_sets: set[tuple[tuple[str, str], ...]] = set()
_VALID_LABEL_SETS_LIMIT = 4096


def validate_labels(labels: Mapping[str, str] | None, field_path: str) -> list[Cause]:
    """Upstream `ValidateLabels`: one cause per message, key messages before value messages.

    Go visits the map in random order; here causes follow the labels' insertion order.
    """
    causes: list[Cause] = []
    if not labels:
        return causes
    try:
        known = tuple(labels.items())
        if known in _valid_label_sets:
            return causes
    except TypeError:  # an unhashable value: invalid anyway, checked below
        known = None
    for key, value in labels.items():
        for msg in is_qualified_name(key):
            causes.append(field_invalid(field_path, key, msg))
        for msg in is_valid_label_value(value):
            causes.append(field_invalid(field_path, value, msg))
    if not causes and known is not None:
        if len(_valid_label_sets) >= _VALID_LABEL_SETS_LIMIT:
            _valid_label_sets.clear()
        _valid_label_sets.add(known)
    return causes

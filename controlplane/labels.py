"""Label selectors: the kubectl string syntax, `metav1.LabelSelector` conversion, matching.

Counterpart of apimachinery `pkg/labels` (selector.go: `Parse`, `Requirement`,
`internalSelector`, `SelectorFromSet`, `Everything`, `Nothing`) and of
`metav1.LabelSelectorAsSelector`.

Guarantees
----------
* `parse` accepts exactly what upstream's lexer and parser accept (`a=b`, `a==b`, `a!=b`,
  `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, comma = AND, spaces, tabs and newlines
  anywhere between tokens, upstream's empty-value quirks: `a in ()` and `a in (x,)` contain the
  empty value, `a=` means `a=""`) and rejects the rest with upstream's error text.
* Every key and value is validated (validation.py); an invalid selector raises `ValueError`
  whose message is upstream's error string, which names the bad token or value.
* `selector_from_label_selector(None)` selects nothing, `({})` selects everything.
* A `Selector` is immutable; its requirements are sorted by key (stable: ties keep input
  order, which is what Go's insertion sort does for the small selectors seen in practice), so
  `str()` is deterministic: `a=b,c in (x,y),!d`.
* `Selector.matches` follows `Requirement.Matches`: `!=`, `notin` and `!key` match when the key
  is absent; `None` labels are treated as no labels. Selectors made only of equality
  requirements (every `matchLabels` selector, i.e. every ReplicaSet in practice) match with one
  dict lookup per requirement and no method calls: this runs for every pod on every sync.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from controlplane.validation import (
    Cause,
    error_string,
    field_invalid,
    field_not_supported,
    go_quote,
    is_qualified_name,
    is_valid_label_value,
)

# selection.Operator values, spelled as upstream so traces and reprs read the same.
IN: Final = "in"
NOT_IN: Final = "notin"
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="
EXISTS: Final = "exists"
DOES_NOT_EXIST: Final = "!"
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"

_BINARY_OPERATORS: Final = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_VALID_OPERATORS: Final = (*_BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST)

# metav1.LabelSelectorOperator → selection.Operator
_LABEL_SELECTOR_OPERATORS: Final = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}

_EMPTY_LABELS: Final[Mapping[str, str]] = {}

# strconv.ParseInt(s, 10, 64) accepts an optional sign and decimal digits only.
_INT_RE: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _parse_int64(value: str) -> int | None:
    if _INT_RE.fullmatch(value) is None:
        return None
    number = int(value)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


class Requirement:
    """One `key operator values` term of a selector (upstream `labels.Requirement`).

    Build validated ones with `new_requirement`; the constructor itself checks nothing (as a
    Go struct literal). `values` keeps the order it was given in; `str()` sorts them.
    """

    __slots__ = ("_value_set", "key", "operator", "values")

    key: str
    operator: str
    values: tuple[str, ...]
    _value_set: frozenset[str]

    def __init__(self, key: str, operator: str, values: Iterable[str] = ()) -> None:
        self.key = key
        self.operator = operator
        self.values = tuple(values)
        self._value_set = frozenset(self.values)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Upstream `Requirement.Matches`: absent keys satisfy only `notin`, `!=` and `!`."""
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            value = labels.get(self.key)
            return value is not None and value in self._value_set
        if op in (NOT_IN, NOT_EQUALS):
            value = labels.get(self.key)
            return value is None or value not in self._value_set
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            value = labels.get(self.key)
            if value is None or len(self.values) != 1:
                return False
            have, want = _parse_int64(value), _parse_int64(self.values[0])
            if have is None or want is None:
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        """Upstream `Requirement.String()`: `!k`, `k`, `k=v`, `k!=v`, `k in (a,b)`, `k>1`."""
        op = self.operator
        if op == EXISTS:
            return self.key
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        values = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if op in (IN, NOT_IN):
            return f"{self.key} {op} ({values})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(op, op)
        return f"{self.key}{symbol}{values}"

    def __repr__(self) -> str:
        return f"Requirement({self.key!r}, {self.operator!r}, {self.values!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirement):
            return NotImplemented
        return (self.key, self.operator, self.values) == (other.key, other.operator, other.values)

    def __hash__(self) -> int:
        return hash((self.key, self.operator, self.values))


def _aggregate(causes: list[Cause]) -> str:
    """`utilerrors.Aggregate.Error()`: one message alone, several as "[a, b]", duplicates once."""
    messages = list(dict.fromkeys(error_string(cause) for cause in causes))
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


def new_requirement(key: str, operator: str, values: Iterable[str] = ()) -> Requirement:
    """Upstream `NewRequirement`: a validated requirement, or ValueError with every problem.

    In/NotIn need at least one value, =/==/!= exactly one, Exists/DoesNotExist none, gt/lt one
    integer; the key must be a qualified name and every value a valid label value.
    """
    vals = tuple(values)
    causes: list[Cause] = []
    key_errors = is_qualified_name(key)
    if key_errors:
        causes.append(field_invalid("key", key, "; ".join(key_errors)))
    if operator in (IN, NOT_IN):
        if not vals:
            causes.append(
                field_invalid("values", vals, "for 'in', 'notin' operators, values set can't be empty")
            )
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(vals) != 1:
            causes.append(
                field_invalid("values", vals, "exact-match compatibility requires one single value")
            )
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if vals:
            causes.append(
                field_invalid("values", vals, "values set must be empty for exists and does not exist")
            )
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(vals) != 1:
            causes.append(
                field_invalid("values", vals, "for 'Gt', 'Lt' operators, exactly one value is required")
            )
        for i, value in enumerate(vals):
            if _parse_int64(value) is None:
                causes.append(
                    field_invalid(
                        f"values[{i}]", value, "for 'Gt', 'Lt' operators, the value must be an integer"
                    )
                )
    else:
        causes.append(field_not_supported("operator", operator, _VALID_OPERATORS))
    for i, value in enumerate(vals):
        value_errors = is_valid_label_value(value)
        if value_errors:
            causes.append(field_invalid(f"values[{i}][{key}]", value, "; ".join(value_errors)))
    if causes:
        raise ValueError(_aggregate(causes))
    return Requirement(key, operator, vals)


class Selector:
    """An AND of requirements (upstream `internalSelector`), or the selector of nothing.

    Immutable; build one with `parse`, `selector_from_label_selector`, `selector_from_set`,
    `everything()` or `nothing()`.
    """

    __slots__ = ("_equality", "_selects_nothing", "requirements")

    requirements: tuple[Requirement, ...]
    # (key, value) pairs when every requirement is an equality (=, ==, or `in` with one
    # value); None otherwise. `()` for everything.
    _equality: tuple[tuple[str, str], ...] | None
    _selects_nothing: bool

    def __init__(self, requirements: Iterable[Requirement] = (), *, selects_nothing: bool = False) -> None:
        self.requirements = tuple(sorted(requirements, key=_by_key))
        self._selects_nothing = selects_nothing
        equality: list[tuple[str, str]] | None = [] if not selects_nothing else None
        for r in self.requirements:
            if equality is None:
                break
            if len(r.values) == 1 and r.operator in (EQUALS, DOUBLE_EQUALS, IN):
                equality.append((r.key, r.values[0]))
            else:
                equality = None
        self._equality = tuple(equality) if equality is not None else None

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether every requirement matches `labels` (None counts as no labels)."""
        equality = self._equality
        if equality is not None:
            if not labels:
                return not equality
            for key, value in equality:  # noqa: SIM110 (an all() generator costs ~2x here)
                if labels.get(key) != value:
                    return False
            return True
        if self._selects_nothing:
            return False
        if labels is None:
            labels = _EMPTY_LABELS
        for requirement in self.requirements:  # noqa: SIM110 (hot path, as above)
            if not requirement.matches(labels):
                return False
        return True

    def empty(self) -> bool:
        """True when the selector does not restrict anything (it selects everything)."""
        return not self.requirements and not self._selects_nothing

    def add(self, *requirements: Requirement) -> Selector:
        """A new selector with `requirements` ANDed in (upstream `Add`); nothing stays nothing."""
        if self._selects_nothing:
            return self
        return Selector((*self.requirements, *requirements))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        if self._selects_nothing:
            return "labels.nothing()"
        return f"labels.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return self._selects_nothing == other._selects_nothing and self.requirements == other.requirements

    def __hash__(self) -> int:
        return hash((self._selects_nothing, self.requirements))


def _by_key(requirement: Requirement) -> str:
    return requirement.key


_EVERYTHING: Final = Selector()
_NOTHING: Final = Selector(selects_nothing=True)


def everything() -> Selector:
    """The selector that matches every label set (also what `parse("")` returns)."""
    return _EVERYTHING


def nothing() -> Selector:
    """The selector that matches nothing; `str()` is "" and `empty()` is False."""
    return _NOTHING


def selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """Upstream `SelectorFromSet`: `key=value` for each entry; None or {} selects everything.

    Like upstream it does not validate (the RC lister uses it on stored, validated selectors).
    """
    if not labels:
        return _EVERYTHING
    return Selector(Requirement(key, EQUALS, (value,)) for key, value in labels.items())


def selector_from_label_selector(label_selector: Mapping[str, Any] | None) -> Selector:
    """Upstream `metav1.LabelSelectorAsSelector`.

    None selects nothing; a selector with neither `matchLabels` nor `matchExpressions` selects
    everything. Raises ValueError with upstream's message for an unknown operator
    (`"Foo" is not a valid label selector operator`) or an invalid requirement.
    """
    if label_selector is None:
        return _NOTHING
    if not isinstance(label_selector, Mapping):
        raise ValueError(f"a label selector must be a mapping, not {type(label_selector).__name__}")
    match_labels = label_selector.get("matchLabels") or {}
    expressions = label_selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise ValueError("matchLabels must be a mapping of label keys to values")
    if not isinstance(expressions, list | tuple):
        raise ValueError("matchExpressions must be a list")
    if not match_labels and not expressions:
        return _EVERYTHING
    requirements: list[Requirement] = []
    for key, value in match_labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"matchLabels[{key!s}]: key and value must be strings, got {value!r}")
        requirements.append(new_requirement(key, EQUALS, (value,)))
    for i, expression in enumerate(expressions):
        if not isinstance(expression, Mapping):
            raise ValueError(f"matchExpressions[{i}] must be a mapping with key, operator and values")
        raw_operator = str(expression.get("operator") or "")
        operator = _LABEL_SELECTOR_OPERATORS.get(raw_operator)
        if operator is None:
            raise ValueError(f"{go_quote(raw_operator)} is not a valid label selector operator")
        values = expression.get("values") or ()
        key = expression.get("key") or ""
        if (
            not isinstance(key, str)
            or not isinstance(values, list | tuple)
            or not all(isinstance(v, str) for v in values)
        ):
            raise ValueError(f"matchExpressions[{i}]: key must be a string and values a list of strings")
        requirements.append(new_requirement(key, operator, values))
    return Selector(requirements)


# -- the string syntax ---------------------------------------------------------------------
#
# A faithful port of upstream's Lexer and Parser: the error texts depend on their exact token
# boundaries (e.g. "!=" and "==" are scanned greedily; "in"/"notin" are keywords only where an
# operator may stand, identifiers everywhere else).

_IDENTIFIER: Final = "identifier"
_END: Final = "end"
_ERROR: Final = "error"
_CLOSED_PAR: Final = ")"
_OPEN_PAR: Final = "("
_COMMA: Final = ","
_NOT: Final = "!"
_DOUBLE_EQUALS: Final = "=="
_EQUALS: Final = "="
_GREATER: Final = ">"
_LESS: Final = "<"
_NOT_EQUALS: Final = "!="
_IN: Final = "in"
_NOT_IN: Final = "notin"

# string2token: every literal that is a token of its own.
_TOKENS: Final = {
    ")": _CLOSED_PAR,
    ",": _COMMA,
    "!": _NOT,
    "==": _DOUBLE_EQUALS,
    "=": _EQUALS,
    ">": _GREATER,
    "in": _IN,
    "<": _LESS,
    "!=": _NOT_EQUALS,
    "notin": _NOT_IN,
    "(": _OPEN_PAR,
}
_WHITESPACE: Final = frozenset(" \t\r\n")
_SPECIAL: Final = frozenset("=!(),><")
# A NUL byte ends the input for upstream's lexer (its read() returns 0 at the end).
_EOF: Final = "\0"

_OPERATOR_TOKENS: Final = {
    _IN: IN,
    _EQUALS: EQUALS,
    _DOUBLE_EQUALS: DOUBLE_EQUALS,
    _GREATER: GREATER_THAN,
    _LESS: LESS_THAN,
    _NOT_IN: NOT_IN,
    _NOT_EQUALS: NOT_EQUALS,
}


def _lex(text: str) -> list[tuple[str, str]]:
    """All (token, literal) pairs of `text`, ending with the end-of-string token."""
    items: list[tuple[str, str]] = []
    n = len(text)
    pos = 0
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n or text[pos] == _EOF:
            items.append((_END, ""))
            return items
        if text[pos] in _SPECIAL:
            # Longest run of special symbols that is still a token ("!=" but not "=(").
            start = pos
            token, literal = _ERROR, ""
            while pos < n and text[pos] in _SPECIAL:
                candidate = text[start : pos + 1]
                found = _TOKENS.get(candidate)
                if found is not None:
                    token, literal = found, candidate
                elif token != _ERROR:
                    break
                pos += 1
            if pos < n and text[pos] == _EOF:
                pos += 1  # upstream's read() consumes the NUL that ends a token
            if token == _ERROR:
                literal = f"error expected: keyword found '{text[start:pos]}'"
            items.append((token, literal))
            continue
        start = pos
        while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE and text[pos] != _EOF:
            pos += 1
        word = text[start:pos]
        if pos < n and text[pos] == _EOF:
            pos += 1
        items.append((_TOKENS.get(word, _IDENTIFIER), word))


class _Parser:
    __slots__ = ("items", "position")

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.position = 0

    def lookahead(self, values: bool = True) -> tuple[str, str]:
        token, literal = self.items[self.position]
        # In a value context the keywords "in" and "notin" are plain identifiers.
        if values and token in (_IN, _NOT_IN):
            token = _IDENTIFIER
        return token, literal

    def consume(self, values: bool = True) -> tuple[str, str]:
        item = self.lookahead(values)
        self.position += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self.lookahead()
            if token in (_IDENTIFIER, _NOT):
                try:
                    requirements.append(self.parse_requirement())
                except ValueError as err:
                    raise ValueError(f"unable to parse requirement: {err}") from None
                token, literal = self.consume()
                if token == _END:
                    return requirements
                if token == _COMMA:
                    next_token, next_literal = self.lookahead()
                    if next_token != _IDENTIFIER and next_token != _NOT:
                        raise ValueError(f"found '{next_literal}', expected: identifier after ','")
                else:
                    raise ValueError(f"found '{literal}', expected: ',' or 'end of string'")
            elif token == _END:
                return requirements
            else:
                raise ValueError(f"found '{literal}', expected: !, identifier, or 'end of string'")

    def parse_requirement(self) -> Requirement:
        key, operator = self.parse_key_and_infer_operator()
        if operator in (EXISTS, DOES_NOT_EXIST):
            return new_requirement(key, operator, ())
        operator = self.parse_operator()
        values = self.parse_values() if operator in (IN, NOT_IN) else self.parse_exact_value()
        return new_requirement(key, operator, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        operator = ""
        token, literal = self.consume()
        if token == _NOT:
            operator = DOES_NOT_EXIST
            token, literal = self.consume()
        if token != _IDENTIFIER:
            raise ValueError(f"found '{literal}', expected: identifier")
        key_errors = is_qualified_name(literal)
        if key_errors:
            # Upstream validates with the parser's (nil) field path, hence "<nil>: ...".
            raise ValueError(error_string(field_invalid("", literal, "; ".join(key_errors))))
        next_token, _ = self.lookahead()
        if next_token in (_END, _COMMA) and operator != DOES_NOT_EXIST:
            operator = EXISTS
        return literal, operator

    def parse_operator(self) -> str:
        token, literal = self.consume(values=False)
        operator = _OPERATOR_TOKENS.get(token)
        if operator is None:
            raise ValueError(f"found '{literal}', expected: {', '.join(_BINARY_OPERATORS)}")
        return operator

    def parse_values(self) -> set[str]:
        token, literal = self.consume()
        if token != _OPEN_PAR:
            raise ValueError(f"found '{literal}' expected: '('")
        token, literal = self.lookahead()
        if token in (_IDENTIFIER, _COMMA):
            values = self.parse_identifiers_list()
            if self.consume()[0] != _CLOSED_PAR:
                raise ValueError(f"found '{literal}', expected: ')'")
            return values
        if token == _CLOSED_PAR:
            # "()" is the set holding only the empty value.
            self.consume()
            return {""}
        raise ValueError(f"found '{literal}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        # Empty entries ("(,a)", "(a,,b)", "(a,)") stand for the empty value, as upstream.
        values: set[str] = set()
        while True:
            token, literal = self.consume()
            if token == _IDENTIFIER:
                values.add(literal)
                next_token, next_literal = self.lookahead()
                if next_token == _COMMA:
                    continue
                if next_token == _CLOSED_PAR:
                    return values
                raise ValueError(f"found '{next_literal}', expected: ',' or ')'")
            if token == _COMMA:
                if not values:
                    values.add("")
                next_token, _ = self.lookahead()
                if next_token == _CLOSED_PAR:
                    values.add("")
                    return values
                if next_token == _COMMA:
                    values.add("")
            else:
                raise ValueError(f"found '{literal}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        token, _ = self.lookahead()
        if token in (_END, _COMMA):
            return {""}  # "a=" selects a == ""
        token, literal = self.consume()
        if token == _IDENTIFIER:
            return {literal}
        raise ValueError(f"found '{literal}', expected: identifier")


def parse(selector: str) -> Selector:
    """Upstream `labels.Parse`: the kubectl `-l` syntax, e.g. `app=web,tier in (a,b),!canary`.

    "" selects everything. Raises ValueError with upstream's message on invalid input.
    """
    requirements = _Parser(selector).parse()
    if not requirements:
        return _EVERYTHING
    return Selector(requirements)

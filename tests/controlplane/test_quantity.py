"""Resource quantities (controlplane/quantity.py)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controlplane.quantity import milli_value, parse_quantity, value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4", Fraction(4)),
        ("100m", Fraction(1, 10)),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("128Mi", Fraction(128 * 2**20)),
        ("16Gi", Fraction(16 * 2**30)),
        ("2G", Fraction(2 * 10**9)),
        ("1e3", Fraction(1000)),
        ("1E-2", Fraction(1, 100)),
        ("250u", Fraction(250, 10**6)),
        ("-1k", Fraction(-1000)),
    ],
)
def test_quantities_parse_to_their_exact_value(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "5Xi", "1e", "1e999", "m"])
def test_malformed_quantities_are_refused_with_a_reason(text):
    with pytest.raises(ValueError, match=r"\S"):
        parse_quantity(text)


def test_milli_value_and_value_round_up_like_quantity():
    assert milli_value("100m") == 100
    assert milli_value("0.0001") == 1  # MilliValue rounds up
    assert value("1.5") == 2
    assert value("16Gi") == 17179869184

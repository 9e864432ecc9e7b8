"""Resource quantities (apimachinery `resource.Quantity`): "100m", "0.5", "128Mi", "1e3", "2G".

Guarantees
----------
* `parse_quantity(text)` is the exact value as a `Fraction`, or `ValueError` naming the problem:
  a number (optionally signed, with a decimal point) followed by at most one suffix — binary
  (Ki Mi Gi Ti Pi Ei), decimal (n u m "" k M G T P E) or a decimal exponent (e3, E-2) — as
  `resource.ParseQuantity` accepts. Exponents beyond ±100 are refused rather than computed (the
  input is outside data; upstream caps a Quantity's scale the same way, far below that).
* `milli_value(text)` is the value in thousandths rounded up (`Quantity.MilliValue`, used for
  CPU); `value(text)` the value rounded up to a whole number (`Quantity.Value`, used for memory
  and pod counts). Both are memoised: every pod of a template carries the same strings.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_NUMBER = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
MAX_EXPONENT = 100


def parse_quantity(text: str) -> Fraction:
    """The exact value of a quantity string (see the module docstring)."""
    match = _NUMBER.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"quantities must match the regular expression: {text!r} is not a number with a suffix")
    number, suffix = match.groups()
    value: Fraction = Fraction(number)
    if suffix in _BINARY:
        return value * Fraction(1024) ** _BINARY[suffix]
    if suffix in _DECIMAL:
        return value * Fraction(10) ** _DECIMAL[suffix]
    exp = _EXPONENT.fullmatch(suffix)
    if exp is None:
        raise ValueError(f"unable to parse quantity's suffix {suffix!r}")
    power = int(exp.group(1))
    if abs(power) > MAX_EXPONENT:
        raise ValueError(f"quantity exponent {power} is out of range (at most {MAX_EXPONENT})")
    return value * Fraction(10) ** power


@lru_cache(maxsize=1024)
def milli_value(text: str) -> int:
    """Thousandths of the quantity, rounded up (CPU in millicores)."""
    return math.ceil(parse_quantity(text) * 1000)


@lru_cache(maxsize=1024)
def value(text: str) -> int:
    """The quantity rounded up to a whole number (memory in bytes, a pod count)."""
    return math.ceil(parse_quantity(text))

"""Kubernetes resource quantities (``500m``, ``2Gi``, ``1e3``) parsed to exact fractions for comparisons.

Only what the validation rules need: parse, compare, test divisibility. Returns None for an unparsable value
so the caller can name the field.
"""

from __future__ import annotations

import re
from fractions import Fraction

_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?")
_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def parse(raw: object) -> Fraction | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return Fraction(raw)
    if isinstance(raw, float):
        return Fraction(raw).limit_denominator(10**9)
    if not isinstance(raw, str) or len(raw) > 64:
        return None
    match = _QUANTITY.fullmatch(raw.strip())
    if match is None:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix[:1] in ("e", "E"):
        return number * Fraction(10) ** int(suffix[1:])
    return number * _SUFFIX[suffix]

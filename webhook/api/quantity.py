"""Kubernetes resource quantities with exact arithmetic.

Owns: parsing the quantity grammar (``500m``, ``1.5``, ``8Gi``, ``1e3``, ``100M`` ...), exact sums and
multiples, comparison, and formatting back to Kubernetes' canonical string.
Must not: use floating point anywhere, or accept a malformed value silently.

A quantity is held as an integer number of nano-units. Kubernetes itself cannot represent anything finer
than ``1n`` (it rounds smaller fractions up), so integers in nano-units are exact for every value the API
server can store, and integer arithmetic keeps the scheduler's hot path cheap.
"""

from __future__ import annotations

import enum
import re
from typing import Final

NANO: Final = 10**9

_DECIMAL_SUFFIX: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIX: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_NUMBER: Final = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$")
_EXPONENT: Final = re.compile(r"^[eE]([+-]?[0-9]+)$")
# Kubernetes caps quantities far below this; the bound only stops "1e999999" from building a huge integer.
_MAX_EXPONENT: Final = 40
# No real quantity comes near this; Python refuses to parse integers of more than 4,300 digits at all, and a
# long one costs quadratic time, so anything longer is rejected before int() sees it.
MAX_DIGITS: Final = 100


class InvalidQuantity(ValueError):
    """A value that is not a Kubernetes quantity; the message names the value."""

    def __init__(self, value: object, why: str) -> None:
        shown = repr(value)
        if len(shown) > 80:  # a message a person can read, not the 5,000 digits they were sent
            shown = f"{shown[:40]}... ({len(shown)} characters)"
        super().__init__(f"invalid quantity {shown}: {why}")
        self.value = value


class Format(enum.Enum):
    """How a quantity prints, as in Kubernetes: kept from the parsed text, and from the left operand of a sum."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


class Quantity:
    """An exact quantity: ``nano`` nano-units. Equality and order are by value; 1000m == 1."""

    __slots__ = ("fmt", "nano")

    nano: int
    fmt: Format

    def __init__(self, nano: int, fmt: Format = Format.DECIMAL_SI) -> None:
        object.__setattr__(self, "nano", nano)
        object.__setattr__(self, "fmt", fmt)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    @classmethod
    def from_units(cls, units: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        return cls(units * NANO, fmt)

    @classmethod
    def from_milli(cls, milli: int) -> Quantity:
        return cls(milli * 10**6, Format.DECIMAL_SI)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and other.nano == self.nano

    def __hash__(self) -> int:
        return hash(self.nano)

    def __lt__(self, other: Quantity) -> bool:
        return self.nano < other.nano

    def __le__(self, other: Quantity) -> bool:
        return self.nano <= other.nano

    def __gt__(self, other: Quantity) -> bool:
        return self.nano > other.nano

    def __ge__(self, other: Quantity) -> bool:
        return self.nano >= other.nano

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.nano + other.nano, self.fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.nano - other.nano, self.fmt)

    def __mul__(self, factor: int) -> Quantity:
        return Quantity(self.nano * factor, self.fmt)

    __rmul__ = __mul__

    def __neg__(self) -> Quantity:
        return Quantity(-self.nano, self.fmt)

    def __bool__(self) -> bool:
        return self.nano != 0

    def __repr__(self) -> str:
        return f"Quantity({format_quantity(self)!r})"

    def __str__(self) -> str:
        return format_quantity(self)

    def milli_value(self) -> int:
        """Rounded up to whole milli-units, as Kubernetes' ``MilliValue``."""
        return -((-self.nano) // 10**6)

    def value(self) -> int:
        """Rounded up to whole units, as Kubernetes' ``Value``."""
        return -((-self.nano) // NANO)


ZERO: Final = Quantity(0)


def parse_quantity(raw: object) -> Quantity:
    """Parse a quantity from its wire form: a string, or an int/float where YAML wrote a bare number."""
    if isinstance(raw, bool):
        raise InvalidQuantity(raw, "a boolean is not a quantity")
    if isinstance(raw, int):
        return Quantity(raw * NANO)
    if isinstance(raw, float):
        # repr() gives the shortest text that round-trips, so 0.1 parses as the decimal 0.1, not its binary value.
        return parse_quantity(repr(raw))
    if not isinstance(raw, str):
        raise InvalidQuantity(raw, f"expected a string or number, got {type(raw).__name__}")
    text = raw.strip()
    match = _NUMBER.match(text)
    if not text or match is None:
        raise InvalidQuantity(raw, "empty")
    sign, whole, frac, suffix = match.group(1), match.group(2), match.group(3) or "", match.group(4)
    if not whole and not frac:
        raise InvalidQuantity(raw, "no digits")
    if len(whole) + len(frac) > MAX_DIGITS:
        raise InvalidQuantity(raw, f"more than {MAX_DIGITS} digits")
    fmt, numerator, denominator = _scale(raw, suffix)
    digits = int((whole or "0") + frac)
    numerator *= digits * NANO
    denominator *= 10 ** len(frac)
    # Kubernetes rounds anything finer than a nano-unit up (away from zero), never to zero.
    nano = -((-numerator) // denominator)
    return Quantity(-nano if sign == "-" else nano, fmt)


def _scale(raw: object, suffix: str) -> tuple[Format, int, int]:
    """(format, numerator, denominator) of the multiplier a suffix stands for."""
    if suffix in _BINARY_SUFFIX:
        return Format.BINARY_SI, 2 ** _BINARY_SUFFIX[suffix], 1
    if suffix in _DECIMAL_SUFFIX:
        exp = _DECIMAL_SUFFIX[suffix]
        return Format.DECIMAL_SI, 10 ** max(exp, 0), 10 ** max(-exp, 0)
    exponent = _EXPONENT.match(suffix)
    if exponent is None:
        raise InvalidQuantity(raw, f"unknown suffix {suffix!r}")
    exp = int(exponent.group(1))
    if abs(exp) > _MAX_EXPONENT:
        raise InvalidQuantity(raw, f"exponent {exp} out of range")
    return Format.DECIMAL_EXPONENT, 10 ** max(exp, 0), 10 ** max(-exp, 0)


def format_quantity(q: Quantity) -> str:
    """Kubernetes' canonical text: the largest suffix that keeps the number whole (``1500m``, ``2k``, ``72Gi``)."""
    nano = q.nano
    if nano == 0:
        return "0"
    sign = "-" if nano < 0 else ""
    mag = abs(nano)
    # Binary suffixes only for whole numbers of at least 1024, as Kubernetes does; otherwise decimal.
    if q.fmt is Format.BINARY_SI and mag % NANO == 0 and mag >= 1024 * NANO:
        units = mag // NANO
        best_suffix, best_value = "", units
        for suffix, shift in _BINARY_SUFFIX.items():
            if units % (1 << shift) == 0:
                best_suffix, best_value = suffix, units >> shift
        return f"{sign}{best_value}{best_suffix}"
    exp = -9
    while exp < 18 and mag % 10 ** (exp + 12) == 0:
        exp += 3
    mantissa = mag // 10 ** (exp + 9)
    if q.fmt is Format.DECIMAL_EXPONENT:
        return f"{sign}{mantissa}" + (f"e{exp}" if exp else "")
    suffix = next(s for s, e in _DECIMAL_SUFFIX.items() if e == exp)
    return f"{sign}{mantissa}{suffix}"

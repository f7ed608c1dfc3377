"""Quantities as the validation rules compare them: exact fractions, or None so the caller can name the field.

Parsing is ``webhook.api.quantity``'s; this only adapts its answer to the rules' needs.
"""

from __future__ import annotations

from fractions import Fraction

from webhook.api.quantity import InvalidQuantity, parse_quantity


def parse(raw: object) -> Fraction | None:
    try:
        return Fraction(parse_quantity(raw).nano, 10**9)
    except InvalidQuantity:
        return None

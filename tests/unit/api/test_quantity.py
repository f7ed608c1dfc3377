"""Quantities: the Kubernetes grammar, exact arithmetic, canonical formatting, clear errors."""

from __future__ import annotations

import pytest

from webhook.api.quantity import NANO, Format, InvalidQuantity, Quantity, format_quantity, parse_quantity


@pytest.mark.parametrize(
    ("text", "nano"),
    [
        pytest.param("500m", 500 * 10**6, id="milli"),
        pytest.param("1.5", 1_500_000_000, id="decimal-fraction"),
        pytest.param("8Gi", 8 * 2**30 * NANO, id="gibi"),
        pytest.param("1Ki", 1024 * NANO, id="kibi"),
        pytest.param("1e3", 1000 * NANO, id="exponent"),
        pytest.param("1E-3", 10**6, id="negative-exponent"),
        pytest.param("100M", 100 * 10**6 * NANO, id="mega"),
        pytest.param("2k", 2000 * NANO, id="kilo"),
        pytest.param("1n", 1, id="nano"),
        pytest.param("3u", 3000, id="micro"),
        pytest.param(".5", NANO // 2, id="leading-dot"),
        pytest.param("5.", 5 * NANO, id="trailing-dot"),
        pytest.param("+7", 7 * NANO, id="plus-sign"),
        pytest.param("-2", -2 * NANO, id="minus-sign"),
        pytest.param("0.1n", 1, id="below-nano-rounds-up"),
        pytest.param(4, 4 * NANO, id="yaml-integer"),
        pytest.param(0.1, NANO // 10, id="yaml-float-is-decimal"),
        pytest.param("1.5Gi", 1536 * 2**20 * NANO, id="fractional-binary"),
    ],
)
def test_parses(text: str | int | float, nano: int) -> None:
    assert parse_quantity(text).nano == nano


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("abc", id="letters"),
        pytest.param("1.2.3", id="two-dots"),
        pytest.param("5Gb", id="unknown-suffix"),
        pytest.param("m", id="suffix-only"),
        pytest.param("1e", id="bare-e"),
        pytest.param("1e999999", id="huge-exponent"),
        pytest.param(" 1 2", id="inner-space"),
        pytest.param(True, id="boolean"),
        pytest.param(None, id="null"),
        pytest.param([1], id="list"),
    ],
)
def test_rejects_with_the_value_in_the_message(text: object) -> None:
    with pytest.raises(InvalidQuantity) as err:
        parse_quantity(text)
    assert repr(text) in str(err.value)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("1500m", "1500m", id="milli-kept"),
        pytest.param("1000m", "1", id="whole-milli"),
        pytest.param("1.5", "1500m", id="fraction-to-milli"),
        pytest.param("2000", "2k", id="kilo-canonical"),
        pytest.param("1500", "1500", id="no-fractional-kilo"),
        pytest.param("8Gi", "8Gi", id="binary-kept"),
        pytest.param("1.5Gi", "1536Mi", id="binary-whole"),
        pytest.param("1024Mi", "1Gi", id="binary-up"),
        pytest.param("512Ki", "512Ki", id="binary-kibi"),
        pytest.param("100Mi", "100Mi", id="binary-mebi"),
        pytest.param("0.5Ki", "512", id="binary-small-goes-decimal"),
        pytest.param("1e3", "1e3", id="exponent-kept"),
        pytest.param("0", "0", id="zero"),
        pytest.param("-500m", "-500m", id="negative"),
    ],
)
def test_formats_canonically(text: str, canonical: str) -> None:
    assert format_quantity(parse_quantity(text)) == canonical


def test_equal_values_are_equal_whatever_the_spelling() -> None:
    assert parse_quantity("1000m") == parse_quantity("1") == parse_quantity("1e0")
    assert hash(parse_quantity("1Ki")) == hash(parse_quantity("1024"))


def test_arithmetic_is_exact_and_keeps_the_left_format() -> None:
    total = parse_quantity("16Gi") * 4 + parse_quantity("8Gi")
    assert total == parse_quantity("72Gi")
    assert str(total) == "72Gi"
    # 0.1 + 0.2 is exactly 0.3: no floating point anywhere.
    assert parse_quantity("0.1") + parse_quantity("0.2") == parse_quantity("0.3")
    assert (parse_quantity("1") - parse_quantity("250m")).fmt is Format.DECIMAL_SI
    assert str(parse_quantity("1") - parse_quantity("250m")) == "750m"


def test_rounding_helpers_round_up() -> None:
    assert parse_quantity("1500500n").milli_value() == 2
    assert parse_quantity("1.2").value() == 2
    assert Quantity.from_milli(250) == parse_quantity("250m")


def test_is_immutable() -> None:
    with pytest.raises(AttributeError):
        parse_quantity("1").nano = 5

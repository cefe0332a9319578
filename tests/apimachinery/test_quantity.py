"""Kubernetes quantities: parsing, exact sums and the canonical text the API server prints."""

from __future__ import annotations

from fractions import Fraction

import pytest

from lavalog.apimachinery.quantity import Notation, Quantity, QuantityError


@pytest.mark.parametrize(
    ("text", "value", "notation"),
    [
        pytest.param("500m", Fraction(1, 2), Notation.DECIMAL_SI, id="millicores"),
        pytest.param("2", Fraction(2), Notation.DECIMAL_SI, id="integer"),
        pytest.param(2, Fraction(2), Notation.DECIMAL_SI, id="yaml-int"),
        pytest.param(0.5, Fraction(1, 2), Notation.DECIMAL_SI, id="yaml-float"),
        pytest.param("1.5", Fraction(3, 2), Notation.DECIMAL_SI, id="decimal-point"),
        pytest.param(".5", Fraction(1, 2), Notation.DECIMAL_SI, id="leading-point"),
        pytest.param("1Gi", Fraction(2**30), Notation.BINARY_SI, id="gibibyte"),
        pytest.param("512Mi", Fraction(2**29), Notation.BINARY_SI, id="mebibytes"),
        pytest.param("1G", Fraction(10**9), Notation.DECIMAL_SI, id="gigabyte"),
        pytest.param("4k", Fraction(4000), Notation.DECIMAL_SI, id="kilo"),
        pytest.param("1E", Fraction(10**18), Notation.DECIMAL_SI, id="exa-not-exponent"),
        pytest.param("1e3", Fraction(1000), Notation.DECIMAL_EXPONENT, id="exponent"),
        pytest.param("1E3", Fraction(1000), Notation.DECIMAL_EXPONENT, id="capital-exponent"),
        pytest.param("5e-3", Fraction(5, 1000), Notation.DECIMAL_EXPONENT, id="negative-exponent"),
        pytest.param("-1", Fraction(-1), Notation.DECIMAL_SI, id="negative"),
        pytest.param("100n", Fraction(1, 10**7), Notation.DECIMAL_SI, id="nano"),
        pytest.param(
            "1.0000000001", Fraction(1000000001, 10**9), Notation.DECIMAL_SI, id="rounds-up"
        ),
    ],
)
def test_parse(text: str | int | float, value: Fraction, notation: Notation) -> None:
    assert Quantity.parse(text) == Quantity(value, notation)


@pytest.mark.parametrize("text", ["", "m", "1 Gi", "1K", "1Mb", "1e", "1.2.3", "Gi", "abc"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(text)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("500m", "500m"),
        ("0.5", "500m"),
        ("1.5", "1500m"),
        ("2000m", "2"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("0", "0"),
        ("0Gi", "0"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1536Mi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("1.5Ki", "1536"),
        ("512Ki", "512Ki"),
        ("2048Ki", "2Mi"),
        ("1023", "1023"),
        ("12e6", "12e6"),
        ("1000Ki", "1000Ki"),
        ("1G", "1G"),
        ("1e3", "1e3"),
        ("1.5e3", "1500"),
        ("12e-4", "1200e-6"),
        ("100n", "100n"),
        ("-1500m", "-1500m"),
    ],
)
def test_canonical_text(text: str, canonical: str) -> None:
    assert str(Quantity.parse(text)) == canonical


@pytest.mark.parametrize(
    ("terms", "total"),
    [
        pytest.param(["500m", "500m", "1"], "2", id="cpu-to-whole"),
        pytest.param(["1", "500m"], "1500m", id="cpu-mixed"),
        pytest.param(["1Gi", "512Mi"], "1536Mi", id="memory-binary"),
        pytest.param(["1Gi", "1Gi", "2Gi"], "4Gi", id="memory-gib"),
        pytest.param(["1G", "1Gi"], "2073741824", id="first-notation-wins"),
        pytest.param(["0", "1Gi"], "1Gi", id="zero-takes-other-notation"),
        pytest.param(["1", "1", "1", "1"], "4", id="gpus"),
    ],
)
def test_sum_keeps_kubernetes_notation(terms: list[str], total: str) -> None:
    quantities = [Quantity.parse(t) for t in terms]
    result = quantities[0]
    for q in quantities[1:]:
        result = result + q
    assert str(result) == total


@pytest.mark.parametrize(
    ("text", "count", "product"),
    [
        ("500m", 3, "1500m"),
        ("512Mi", 4, "2Gi"),
        ("1", 0, "0"),
        ("250m", 4, "1"),
        ("1.5Gi", 1, "1536Mi"),
    ],
)
def test_multiply(text: str, count: int, product: str) -> None:
    assert str(Quantity.parse(text) * count) == product


def test_one_value_prints_by_its_notation_whichever_printed_first() -> None:
    """The canonical text is cached: by value and notation, not by value alone."""
    binary = Quantity(Fraction(2048), Notation.BINARY_SI)
    decimal = Quantity(Fraction(2048), Notation.DECIMAL_SI)
    exponent = Quantity(Fraction(2000), Notation.DECIMAL_EXPONENT)

    assert [str(binary), str(decimal)] == ["2Ki", "2048"]
    assert [str(decimal), str(binary)] == ["2048", "2Ki"]
    assert str(Quantity(Fraction(2000), Notation.DECIMAL_SI)) == "2k"
    assert str(exponent) == "2e3"

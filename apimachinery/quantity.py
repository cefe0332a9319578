"""Kubernetes resource quantities ("500m", "1Gi", "2", "1e3"): exact values, canonical text.

The one parser of quantities, for the product and the simulated cluster alike. A
PodGroup's `minResources` and a quota's usage are sums a scheduler or the API server
compares and that users read, so they are computed exactly (a `Fraction`, never a float)
and printed the way the API server prints a `resource.Quantity`: "1500m", "3Gi",
"1536Mi", "2". As in
Kubernetes a quantity remembers the notation it was written in (decimal SI, binary SI or
decimal exponent) and a sum keeps the notation of its first non-zero term.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction


class Notation(StrEnum):
    """How a quantity is printed (`resource.Format`)."""

    DECIMAL_SI = "DecimalSI"  # 500m, 2, 4k, 1G
    BINARY_SI = "BinarySI"  # 512Ki, 1Gi
    DECIMAL_EXPONENT = "DecimalExponent"  # 1e3, 5e-3


_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}
_SYNTAX = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
#: Kubernetes keeps nine decimal places and rounds anything finer away from zero.
_NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    """Text that is not a Kubernetes quantity."""


@dataclass(frozen=True, slots=True)
class Quantity:
    value: Fraction
    notation: Notation = Notation.DECIMAL_SI

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        """Parse "500m", "1Gi", "1.5", "2e3" (YAML numbers too), as `resource.ParseQuantity`."""
        return _parse(str(text).strip())

    def __add__(self, other: Quantity) -> Quantity:
        notation = other.notation if self.value == 0 else self.notation
        return Quantity(self.value + other.value, notation)

    def __mul__(self, times: int) -> Quantity:
        if times == 1:
            return self  # most gangs take one pod of a task: no Fraction made for it
        return Quantity(self.value * times, self.notation)

    def __str__(self) -> str:
        """The canonical form `resource.Quantity.String()` prints."""
        return _canonical(self.value, self.notation)


@functools.lru_cache(maxsize=4096)
def _canonical(value: Fraction, notation: Notation) -> str:
    """Cached, as `_parse`: a PodGroup's `minResources` prints the same few sums for every
    Job of a shape, and the exact decimal form takes a Fraction division per digit."""
    if value == 0:
        return "0"
    if notation is Notation.BINARY_SI and value.denominator == 1:
        if abs(value) >= 1024:
            return _binary(value.numerator)
        return _decimal(value, Notation.DECIMAL_SI)
    return _decimal(value, Notation.DECIMAL_SI if notation is Notation.BINARY_SI else notation)


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Quantity:
    """Cached: the schedulers and quotas read the same few quantities over and over, and a
    quantity never changes."""
    match = _SYNTAX.fullmatch(text)
    if match is None or not (match.group(2) or match.group(3)):
        raise QuantityError(f"quantities must match the regular expression: {text!r}")
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    number = Fraction(int(whole or "0") * 10 ** len(fraction) + int(fraction or "0"))
    number /= 10 ** len(fraction)
    if sign == "-":
        number = -number
    if suffix in _DECIMAL:
        value, notation = number * Fraction(10) ** _DECIMAL[suffix], Notation.DECIMAL_SI
    elif suffix in _BINARY:
        value, notation = number * 1024 ** _BINARY[suffix], Notation.BINARY_SI
    elif exponent := _EXPONENT.fullmatch(suffix):
        value = number * Fraction(10) ** int(exponent.group(1))
        notation = Notation.DECIMAL_EXPONENT
    else:
        raise QuantityError(f"unable to parse quantity's suffix: {text!r}")
    return Quantity(_round_to_nano(value), notation)


def _round_to_nano(value: Fraction) -> Fraction:
    nanos = value / _NANO
    rounded = math.ceil(nanos) if value > 0 else math.floor(nanos)
    return rounded * _NANO


def _binary(value: int) -> str:
    power = 0
    while value % 1024 == 0 and power < max(_BINARY_SUFFIX):
        value //= 1024
        power += 1
    return f"{value}{_BINARY_SUFFIX.get(power, '')}"


def _decimal(value: Fraction, notation: Notation) -> str:
    """Integer mantissa with the exponent lowered to a multiple of three (no trailing zeros
    beyond that), as `AsCanonicalBytes` does."""
    exponent = -9
    mantissa = int(value / _NANO)
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    mantissa *= 10 ** (exponent % 3)
    exponent -= exponent % 3
    if exponent == 0:
        return str(mantissa)
    if notation is Notation.DECIMAL_SI and exponent in _DECIMAL_SUFFIX:
        return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"
    return f"{mantissa}e{exponent}"

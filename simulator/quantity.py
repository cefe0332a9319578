"""Kubernetes resource quantities ("500m", "32Gi", "8") and resource vectors.

The scheduler compares requests with free capacity per resource name; floats are
exact enough for the sizes a simulated cluster deals with. What the API server prints
(quota usage, its error messages) uses `Quantity`, exact and canonical as
`resource.Quantity` is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from typing import Any

Resources = dict[str, float]

_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


def parse(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    match = _QUANTITY.match(str(value).strip())
    if not match or match.group(2) not in _SUFFIX:
        raise ValueError(f"invalid quantity {value!r}")
    return float(match.group(1)) * _SUFFIX[match.group(2)]


def parse_map(values: Mapping[str, Any] | None) -> Resources:
    return {name: parse(v) for name, v in (values or {}).items()}


def parse_flag(text: str) -> dict[str, str]:
    """`cpu=8,memory=32Gi` -> {"cpu": "8", "memory": "32Gi"} (validated)."""
    out: dict[str, str] = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"expected NAME=QUANTITY, got {item!r}")
        parse(value)
        out[name.strip()] = value.strip()
    return out


def add(total: Resources, more: Mapping[str, float], sign: float = 1.0) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0.0) + sign * value


def total(vectors: Iterable[Mapping[str, float]]) -> Resources:
    out: Resources = {}
    for v in vectors:
        add(out, v)
    return out


def fits(request: Mapping[str, float], free: Mapping[str, float]) -> bool:
    """Whether `request` fits in `free`; a resource absent from `free` has none."""
    return all(value <= free.get(name, 0.0) + 1e-9 for name, value in request.items() if value > 0)


def within(
    request: Mapping[str, float], limit: Mapping[str, float], used: Mapping[str, float]
) -> bool:
    """Whether `used + request` stays within `limit` for every resource `limit` names."""
    return all(request.get(n, 0.0) + used.get(n, 0.0) <= cap + 1e-9 for n, cap in limit.items())


def shortfall(request: Mapping[str, float], free: Mapping[str, float]) -> list[str]:
    return [n for n, v in request.items() if v > 0 and v > free.get(n, 0.0) + 1e-9]


def pod_requests(pod: Mapping[str, Any]) -> Resources:
    """What a pod asks for: the sum of its containers' requests (limits when no request),
    the largest init container if larger, plus one `pods` slot."""
    spec = pod.get("spec", {})

    def container(c: Mapping[str, Any]) -> Resources:
        res = c.get("resources") or {}
        return parse_map({**(res.get("limits") or {}), **(res.get("requests") or {})})

    out = total(container(c) for c in spec.get("containers", ()))
    for init in spec.get("initContainers", ()):
        for name, value in container(init).items():
            out[name] = max(out.get(name, 0.0), value)
    out["pods"] = 1.0
    return out


# exact quantities, as the API server adds and prints them -------------------------------


class Format(StrEnum):
    """How a quantity prints (resource.Format): the suffix family it was written in."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")
#: resource.ParseQuantity's grammar: a number, then a suffix
_EXACT = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
#: the finest precision a quantity keeps; finer values are rounded up (resource.Nano)
_NANO = 10**9


@dataclass(frozen=True, slots=True)
class Quantity:
    """A `resource.Quantity`: an exact value and the format it prints in. Sums keep the
    format of their left side unless that is zero (`Quantity.Add`), and `str` is the
    canonical form the API server writes (`CanonicalizeBytes`): 1500m, 1536Mi, 2k."""

    value: Fraction
    format: Format = Format.DECIMAL_SI

    @classmethod
    def parse(cls, written: Any) -> Quantity:
        match = _EXACT.match(str(written).strip())
        if not match:
            raise ValueError(f"invalid quantity {written!r}")
        number, suffix = Fraction(Decimal(match.group(1))), match.group(2)
        if suffix in _BINARY:
            factor, fmt = Fraction(1024) ** _BINARY.index(suffix), Format.BINARY_SI
            if not suffix:
                fmt = Format.DECIMAL_SI
        elif suffix in _DECIMAL.values():
            exponent = next(e for e, s in _DECIMAL.items() if s == suffix)
            factor, fmt = Fraction(10) ** exponent, Format.DECIMAL_SI
        elif found := _EXPONENT.match(suffix):
            factor, fmt = Fraction(10) ** int(found.group(1)), Format.DECIMAL_EXPONENT
        else:
            raise ValueError(f"invalid quantity {written!r}")
        value = number * factor
        nanos = value * _NANO
        if nanos.denominator != 1:  # rounded up to the nano, as ParseQuantity does
            value = Fraction(math.ceil(nanos), _NANO)
        return cls(value, fmt)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, self.format if self.value else other.format)

    def __str__(self) -> str:
        if not self.value:
            return "0"
        fmt, value = self.format, self.value
        if fmt is Format.BINARY_SI and (-1024 < value < 1024 or value.denominator != 1):
            fmt = Format.DECIMAL_SI  # small or fractional: not rounded to a binary suffix
        if fmt is Format.BINARY_SI:
            number, power = int(value), 0
            while number % 1024 == 0 and power < len(_BINARY) - 1:
                number, power = number // 1024, power + 1
            return f"{number}{_BINARY[power]}"
        mantissa, exponent = int(value * _NANO), -9
        while mantissa % 10 == 0:
            mantissa, exponent = mantissa // 10, exponent + 1
        mantissa, exponent = mantissa * 10 ** (exponent % 3), exponent - exponent % 3
        if fmt is Format.DECIMAL_EXPONENT:
            return f"{mantissa}e{exponent}" if exponent else str(mantissa)
        return f"{mantissa}{_DECIMAL.get(exponent, '')}"


def exact_map(values: Mapping[str, Any] | None) -> dict[str, Quantity]:
    return {name: Quantity.parse(v) for name, v in (values or {}).items()}


def printed(values: Mapping[str, Quantity]) -> dict[str, str]:
    """Quantities as the API server writes them."""
    return {name: str(q) for name, q in values.items()}

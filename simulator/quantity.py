"""Kubernetes resource quantities ("500m", "32Gi", "8") and resource vectors.

The scheduler compares requests with free capacity per resource name; floats are
exact enough for the sizes a simulated cluster deals with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
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

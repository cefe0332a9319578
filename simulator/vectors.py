"""Resource vectors as the simulated schedulers add and compare them.

Quantities are read once, exactly (`apimachinery`), and what a pod requests is Kubernetes'
rule (`apimachinery.resources.pod_requests`); the schedulers then do their sums in
floats, as Volcano's `api.Resource` does (float64 milli-values), with a tolerance for
the rounding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lavalog.apimachinery import resources
from lavalog.apimachinery.quantity import Quantity

Resources = dict[str, float]

#: what rounding may leave between two sums that are equal
_TOLERANCE = 1e-9


def parse(value: Any) -> float:
    """One quantity ("500m", "32Gi", 8) as a number; `QuantityError` if it is none."""
    return float(Quantity.parse(value).value)


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
    for name, value in request.items():  # a loop, not all(...): called per node per pod
        if value > 0 and value > free.get(name, 0.0) + _TOLERANCE:
            return False
    return True


def within(
    request: Mapping[str, float], limit: Mapping[str, float], used: Mapping[str, float]
) -> bool:
    """Whether `used + request` stays within `limit` for every resource `limit` names."""
    return all(
        request.get(n, 0.0) + used.get(n, 0.0) <= cap + _TOLERANCE for n, cap in limit.items()
    )


def shortfall(request: Mapping[str, float], free: Mapping[str, float]) -> list[str]:
    return [n for n, v in request.items() if v > 0 and v > free.get(n, 0.0) + _TOLERANCE]


def pod_requests(pod: Mapping[str, Any]) -> Resources:
    """What a pod asks of a node (`PodRequests`: containers, the largest init container,
    sidecars, overhead), plus one `pods` slot."""
    out = {name: float(q.value) for name, q in resources.pod_requests(pod.get("spec", {})).items()}
    out["pods"] = 1.0
    return out

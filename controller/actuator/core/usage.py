"""What one pod counts for in a quota, as the PodGroup's `minResources` adds it up.

Volcano sums `GetPodQuotaUsage` over the pods of a gang: Kubernetes' pod quota usage
(`PodUsageFunc`: `pods`, `count/pods`, `cpu` and `requests.cpu`, `limits.cpu`, the same
for memory and ephemeral storage, hugepages, `requests.<extended>`), plus each extended
resource under its own name (`nvidia.com/gpu`) so the scheduler can compare it with
node capacity. One difference, on purpose: a container's requests default to its limits
first, as the API server does when it creates the pod (Volcano reads the raw template,
so a GPU given only in `limits` is missing from its sum; see docs/actuator.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lavalog.apimachinery.quantity import Quantity

ResourceList = dict[str, Quantity]

_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_REQUESTS = "requests."
_ONE = Quantity.parse("1")


def add(total: Mapping[str, Quantity], more: Mapping[str, Quantity]) -> ResourceList:
    """Sum per resource (`quota.Add`)."""
    result = dict(total)
    for name, quantity in more.items():
        result[name] = result[name] + quantity if name in result else quantity
    return result


def times(resources: Mapping[str, Quantity], count: int) -> ResourceList:
    return {name: quantity * count for name, quantity in resources.items()}


def pod_usage(spec: Mapping[str, Any]) -> ResourceList:
    """The quota usage of a pod with this `spec`, before it runs."""
    requests = _pod_total(spec, "requests")
    limits = _pod_total(spec, "limits")
    usage: ResourceList = {"count/pods": _ONE, "pods": _ONE}
    for name in _COMPUTE:
        if name in requests:
            usage[name] = usage[_REQUESTS + name] = requests[name]
        if name in limits:
            usage["limits." + name] = limits[name]
    for name, quantity in requests.items():
        if name.startswith("hugepages-") or _is_extended(name):
            usage[name] = usage[_REQUESTS + name] = quantity
    return usage


def _is_extended(name: str) -> bool:
    return "/" in name and "kubernetes.io/" not in name and not name.startswith(_REQUESTS)


def _pod_total(spec: Mapping[str, Any], kind: str) -> ResourceList:
    """Containers add up; an init container runs alone, so only the largest counts; a
    sidecar (init container with `restartPolicy: Always`) keeps running beside everything
    started after it (`resourcehelper.PodRequests` / `PodLimits`)."""
    total = _sum(_container_resources(c, kind) for c in spec.get("containers") or ())
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for container in spec.get("initContainers") or ():
        own = _container_resources(container, kind)
        if container.get("restartPolicy") == "Always":
            total = add(total, own)
            sidecars = add(sidecars, own)
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, add(own, sidecars))
    return _max(total, init_peak)


def _container_resources(container: Mapping[str, Any], kind: str) -> ResourceList:
    resources = container.get("resources") or {}
    limits = {k: Quantity.parse(v) for k, v in (resources.get("limits") or {}).items()}
    if kind == "limits":
        return limits
    requests = {k: Quantity.parse(v) for k, v in (resources.get("requests") or {}).items()}
    return {**limits, **requests}


def _sum(lists: Iterable[Mapping[str, Quantity]]) -> ResourceList:
    total: ResourceList = {}
    for resources in lists:
        total = add(total, resources)
    return total


def _max(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """Per resource, the larger; on a tie the first stays (`maxResourceList`)."""
    result = dict(a)
    for name, quantity in b.items():
        if name not in result or quantity.value > result[name].value:
            result[name] = quantity
    return result

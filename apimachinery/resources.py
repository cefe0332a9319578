"""Resource lists (`v1.ResourceList`) as Kubernetes adds them up, exact (`Quantity`).

What a pod requests and what it costs in a quota are computed once here, for both users:
the actuator sums a gang's pods into its PodGroup's `minResources` (Volcano's
`GetPodQuotaUsage`), and the simulated API server charges pods to ResourceQuotas and its
schedulers place them. Sources: `resourcehelper.PodRequests`/`PodLimits`
(component-helpers), `podComputeUsageHelper` (pkg/quota/v1/evaluator/core/pods.go),
`SetDefaults_Pod` and `IsExtendedResourceName` (pkg/apis/core).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from lavalog.apimachinery.quantity import Quantity

ResourceList = dict[str, Quantity]

ONE = Quantity.parse("1")
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_REQUESTS = "requests."


def parse(values: Mapping[str, Any] | None) -> ResourceList:
    """A resource list as written (`{"cpu": "500m", "memory": 1}`), exact."""
    return {name: Quantity.parse(value) for name, value in (values or {}).items()}


def printed(values: Mapping[str, Quantity]) -> dict[str, str]:
    """A resource list as the API server writes it: each quantity in its canonical form."""
    return {name: str(quantity) for name, quantity in values.items()}


def add(total: Mapping[str, Quantity], more: Mapping[str, Quantity]) -> ResourceList:
    """Sum per resource (`quota.Add`)."""
    result = dict(total)
    for name, quantity in more.items():
        result[name] = result[name] + quantity if name in result else quantity
    return result


def times(resources: Mapping[str, Quantity], count: int) -> ResourceList:
    return {name: quantity * count for name, quantity in resources.items()}


def larger(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """Per resource, the larger; on a tie the first stays (`maxResourceList`)."""
    result = dict(a)
    for name, quantity in b.items():
        if name not in result or quantity.value > result[name].value:
            result[name] = quantity
    return result


def is_extended(name: str) -> bool:
    """`IsExtendedResourceName`: a domain-qualified name outside `kubernetes.io/`
    (`nvidia.com/gpu`), not a quota name (`requests.`, `limits.`, `count/`)."""
    prefixes = ("kubernetes.io/", _REQUESTS, "limits.", "count/")
    return "/" in name and "kubernetes.io/" not in name and not name.startswith(prefixes)


def defaulted_requests(resources: Mapping[str, Any]) -> dict[str, Any]:
    """A container's requests as the API server stores them: a resource with a limit and
    no request requests its limit (`SetDefaults_Pod`)."""
    requests = dict(resources.get("requests") or {})
    for name, value in (resources.get("limits") or {}).items():
        requests.setdefault(name, value)
    return requests


def pod_requests(spec: Mapping[str, Any]) -> ResourceList:
    """What a pod with this spec requests (`PodRequests`): its containers' requests added
    up; an init container runs alone, so only the largest counts; a sidecar (an init
    container with `restartPolicy: Always`) keeps running beside everything started after
    it; then the pod's `overhead`. Requests as stored: defaulted to the limits."""
    requests = _pod_total(spec, lambda c: defaulted_requests(c.get("resources") or {}))
    return add(requests, parse(spec.get("overhead")))


def pod_limits(spec: Mapping[str, Any]) -> ResourceList:
    """The limits of a pod with this spec (`PodLimits`): added up as requests are, with
    the `overhead` added to the limits it names."""
    limits = _pod_total(spec, lambda c: (c.get("resources") or {}).get("limits"))
    overhead = parse(spec.get("overhead"))
    return {
        name: limit + overhead[name] if name in overhead else limit
        for name, limit in limits.items()
    }


def compute_usage(requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]) -> ResourceList:
    """What a running pod costs in a quota (`podComputeUsageHelper`): `pods`, cpu, memory
    and ephemeral storage under their names and `requests.`/`limits.`, hugepages, and an
    extended resource under `requests.<name>`."""
    usage: ResourceList = {"pods": ONE}
    for name in _COMPUTE:
        if name in requests:
            usage[name] = usage[_REQUESTS + name] = requests[name]
        if name in limits:
            usage["limits." + name] = limits[name]
    for name, quantity in requests.items():
        if name.startswith("hugepages-"):
            usage[name] = usage[_REQUESTS + name] = quantity
        elif is_extended(name):
            usage[_REQUESTS + name] = quantity
    return usage


def _pod_total(
    spec: Mapping[str, Any], resources_of: Callable[[Mapping[str, Any]], Mapping[str, Any] | None]
) -> ResourceList:
    total = _sum(parse(resources_of(c)) for c in spec.get("containers") or ())
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for container in spec.get("initContainers") or ():
        own = parse(resources_of(container))
        if container.get("restartPolicy") == "Always":
            total = add(total, own)
            sidecars = add(sidecars, own)
            init_peak = larger(init_peak, sidecars)
        else:
            init_peak = larger(init_peak, add(own, sidecars))
    return larger(total, init_peak)


def _sum(lists: Iterable[Mapping[str, Quantity]]) -> ResourceList:
    total: ResourceList = {}
    for resources in lists:
        total = add(total, resources)
    return total

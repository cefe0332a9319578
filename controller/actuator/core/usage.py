"""What one pod counts for in a quota, as the PodGroup's `minResources` adds it up.

Volcano sums `GetPodQuotaUsage` over the pods of a gang: Kubernetes' pod quota usage
(`PodUsageFunc`: `count/pods`, and the compute usage of `apimachinery.resources`), plus
each extended resource under its own name (`nvidia.com/gpu`) so the scheduler can compare
it with node capacity. The pod is not created yet, so its requests are those the API
server will store: defaulted to its limits (Volcano reads the raw template, so a GPU given
only in `limits` is missing from its sum; see docs/actuator.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lavalog.apimachinery import resources
from lavalog.apimachinery.resources import ResourceList


def pod_usage(spec: Mapping[str, Any]) -> ResourceList:
    """The quota usage of a pod with this `spec`, before it runs."""
    requests = resources.pod_requests(spec)
    usage = {"count/pods": resources.ONE}
    usage.update(resources.compute_usage(requests, resources.pod_limits(spec)))
    for name, quantity in requests.items():
        if resources.is_extended(name):
            usage[name] = quantity
    return usage

"""Pod status vocabulary shared by the API (binding), the scheduler and the kubelet."""

from __future__ import annotations

from typing import Any

from lavalog.simulator import registry
from lavalog.simulator.errors import ApiError
from lavalog.simulator.objects import Objects

Obj = dict[str, Any]

TERMINAL = ("Succeeded", "Failed")


def is_terminal(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase") in TERMINAL


def set_condition(
    obj: Obj,
    kind: str,
    status: bool,
    now: str,
    *,
    reason: str = "",
    message: str = "",
    heartbeat: bool = False,
) -> None:
    """Set a condition in `obj.status.conditions`, keeping lastTransitionTime if unchanged.

    `heartbeat`: a node condition, which carries `lastHeartbeatTime` (pod conditions'
    `lastProbeTime` is always null, which the API server drops)."""
    conditions: list[Obj] = obj.setdefault("status", {}).setdefault("conditions", [])
    value = "True" if status else "False"
    new: Obj = {"type": kind, "status": value, "lastTransitionTime": now}
    if heartbeat:
        new["lastHeartbeatTime"] = now
    if reason:
        new["reason"] = reason
    if message:
        new["message"] = message
    for i, old in enumerate(conditions):
        if old.get("type") == kind:
            if old.get("status") == value:
                new["lastTransitionTime"] = old.get("lastTransitionTime", now)
            conditions[i] = new
            return
    conditions.append(new)


def bind(objects: Objects, namespace: str, name: str, node: str) -> None:
    """Assign a pod to a node, once, as the `binding` subresource does."""
    pod = objects.get(registry.POD, namespace, name)
    bound = pod["spec"].get("nodeName")
    if bound:
        raise ApiError(409, "Conflict", f'pod {name} is already assigned to node "{bound}"')
    if pod["metadata"].get("deletionTimestamp"):
        raise ApiError(
            409, "Conflict", f"pod {name} is being deleted, cannot be assigned to a host"
        )
    now = objects.clock.timestamp()

    def assign(stored: Obj) -> Obj:
        pod = {**stored, "spec": {**stored["spec"], "nodeName": node}}
        set_condition(own_conditions(pod), "PodScheduled", True, now)
        return pod

    objects.rewrite(registry.POD, namespace, name, assign)


def own_conditions(obj: Obj) -> Obj:
    """`obj` (a copy of a stored object, sharing its parts) with a status and a condition
    list of its own, which `set_condition` may change."""
    status = obj["status"] = dict(obj.get("status") or {})
    status["conditions"] = list(status.get("conditions") or ())
    return obj

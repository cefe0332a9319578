"""Disruptions: who ends a pod that did nothing wrong, and the `DisruptionTarget`
condition each one writes on it first.

Kubernetes marks a pod it is about to disrupt with `DisruptionTarget=True` and a reason
saying who did it, patched onto the pod's status *before* the pod is deleted or
terminated, so that whoever watches the pod (a Job controller's podFailurePolicy,
lavalog) can tell a disruption from a failure of the pod's own:

- `EvictionByEvictionAPI`: the API server's `pods/eviction`
  (registry/core/pod/storage/eviction.go), then a graceful delete;
- `PreemptionByScheduler`: vc-scheduler evicting a victim to preempt or reclaim
  (scheduler/cache/cache.go `defaultEvictor.Evict`), then a delete;
- `DeletionByTaintManager`: the taint eviction controller, for a NoExecute taint the
  pod does not tolerate (`taints.py`), then a delete;
- `TerminationByKubelet`: the kubelet evicting a pod under node pressure
  (`kubelet.py`), which ends Failed with reason Evicted.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from lavalog.simulator import registry
from lavalog.simulator.errors import conflict
from lavalog.simulator.objects import Objects
from lavalog.simulator.recorder import EventRecorder
from lavalog.simulator.store import Obj

DISRUPTION_TARGET = "DisruptionTarget"


class DisruptionReason(StrEnum):
    """`DisruptionTarget` reasons (k8s.io/api/core/v1 `PodReason*`)."""

    EVICTION_BY_EVICTION_API = "EvictionByEvictionAPI"
    PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
    DELETION_BY_TAINT_MANAGER = "DeletionByTaintManager"
    TERMINATION_BY_KUBELET = "TerminationByKubelet"


#: the Eviction API's message (eviction.go `addConditionAndDeletePod`)
EVICTION_API_MESSAGE = "Eviction API: evicting"
#: the taint eviction controller's (tainteviction `addConditionAndDeletePod`)
TAINT_MANAGER_MESSAGE = "Taint manager: deleting due to NoExecute taint"


def disruption(reason: DisruptionReason, message: str) -> Obj:
    return {"type": DISRUPTION_TARGET, "status": "True", "reason": reason, "message": message}


def update_condition(status: Obj, condition: Mapping[str, Any], now: str) -> bool:
    """`podutil.UpdatePodCondition`: set `condition` in `status`, its lastTransitionTime
    now unless its status is unchanged; False when nothing changed."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    new = {**condition, "lastTransitionTime": now}
    for i, old in enumerate(conditions):
        if old.get("type") == new["type"]:
            if old.get("status") == new["status"]:
                new["lastTransitionTime"] = old.get("lastTransitionTime", now)
            conditions[i] = new
            return any(old.get(k) != new.get(k) for k in ("status", "reason", "message"))
    conditions.append(new)
    return True


def mark_then_delete(
    objects: Objects,
    namespace: str,
    name: str,
    *conditions: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
) -> None:
    """Patch `conditions` onto the pod's status, then delete it with `options`
    (`gracePeriodSeconds`, `preconditions`): the order every disruptor keeps."""
    options = options or {}
    pod = objects.get(registry.POD, namespace, name)
    meta = pod["metadata"]
    for field, value in (options.get("preconditions") or {}).items():
        if value not in (None, meta.get(field)):
            raise conflict(registry.POD.plural, name)
    now = objects.clock.timestamp()

    def mark(obj: Obj) -> None:
        for condition in conditions:
            update_condition(obj.setdefault("status", {}), condition, now)

    objects.mutate(registry.POD, namespace, name, mark)
    objects.delete(
        registry.POD,
        namespace,
        name,
        grace_period=options.get("gracePeriodSeconds"),
        preconditions={"uid": meta["uid"]},
    )


def evict_by_api(
    objects: Objects, namespace: str, name: str, options: Mapping[str, Any] | None
) -> None:
    """The `pods/eviction` subresource (no PodDisruptionBudget is consulted)."""
    condition = disruption(DisruptionReason.EVICTION_BY_EVICTION_API, EVICTION_API_MESSAGE)
    mark_then_delete(objects, namespace, name, condition, options=options)


def preempt(
    objects: Objects, recorder: EventRecorder, namespace: str, name: str, reason: str
) -> None:
    """vc-scheduler evicting a pod to preempt (`reason` "preempt") or reclaim
    ("reclaim") for another: a Normal `Evict` Event with the reason on the pod's
    PodGroup, a Warning `Evict` on the pod, its Ready condition False (reason `Evict`)
    and `DisruptionTarget` in one status update, then a delete."""
    pod = objects.get(registry.POD, namespace, name)
    group = (pod["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name")
    podgroup = objects.find(registry.PODGROUP, namespace, group) if group else None
    if podgroup is not None:
        recorder.record(podgroup, "Normal", "Evict", reason)
    evicted = f"Pod is evicted, because of {reason}"
    recorder.record(pod, "Warning", "Evict", evicted)
    scheduler = pod["spec"].get("schedulerName", "")
    mark_then_delete(
        objects,
        namespace,
        name,
        {"type": "Ready", "status": "False", "reason": "Evict", "message": evicted},
        disruption(
            DisruptionReason.PREEMPTION_BY_SCHEDULER,
            f"{scheduler}: preempting to accommodate a higher priority pod",
        ),
    )

"""Kubernetes Events written by the simulated scheduler and kubelet, as client-go's
EventRecorder writes them.

`kubectl describe` and anyone debugging a waiting job read these: `Scheduled` /
`FailedScheduling` on pods (kube-scheduler, Volcano's scheduler), `Unschedulable` on a
PodGroup (Volcano), `Pulled` / `Created` / `Started` / `Killing` / `BackOff` on pods
(kubelet). A repeat of the same event (same object, type, reason, message, source)
bumps `count` and `lastTimestamp` of the one Event, as client-go's correlator does,
instead of adding another.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from lavalog.simulator import registry
from lavalog.simulator.errors import ApiError
from lavalog.simulator.objects import Objects

Obj = dict[str, Any]
#: how many recent events are remembered for aggregation (client-go keeps 4096)
_REMEMBERED = 4096


class EventRecorder:
    """Records Events from one component (`default-scheduler`, `volcano`, `kubelet`)."""

    def __init__(self, objects: Objects, component: str) -> None:
        self.objects = objects
        self.component = component
        self._recent: OrderedDict[tuple[str, ...], tuple[str, str]] = OrderedDict()

    def record(
        self,
        obj: Obj,
        type_: str,
        reason: str,
        message: str,
        *,
        field_path: str = "",
        host: str = "",
    ) -> None:
        """An Event about `obj`; dropped if it cannot be written (a namespace going away),
        as a real recorder drops it."""
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        key = (meta["uid"], type_, reason, message, field_path, host)
        now = self.objects.clock.timestamp()
        try:
            if key in self._recent:
                self._recent.move_to_end(key)
                if self._bump(*self._recent[key], now):
                    return
            involved: Obj = {
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "name": meta["name"],
                "uid": meta["uid"],
                "resourceVersion": meta.get("resourceVersion", ""),
            }
            if meta.get("namespace"):
                involved["namespace"] = namespace
            if field_path:
                involved["fieldPath"] = field_path
            source = {"component": self.component, **({"host": host} if host else {})}
            event = {
                "metadata": {"generateName": f"{meta['name']}.", "namespace": namespace},
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "type": type_,
                "source": source,
                "count": 1,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "reportingComponent": self.component,
                "reportingInstance": host or self.component,
            }
            created = self.objects.create(registry.EVENT, namespace, event).obj
        except ApiError:
            return
        self._recent[key] = (namespace, created["metadata"]["name"])
        if len(self._recent) > _REMEMBERED:
            self._recent.popitem(last=False)

    def _bump(self, namespace: str, name: str, now: str) -> bool:
        """Count a repeat on the Event already written; False if it is gone."""
        if self.objects.find(registry.EVENT, namespace, name) is None:
            return False

        def again(event: Obj) -> None:
            event["count"] = int(event.get("count") or 1) + 1
            event["lastTimestamp"] = now

        self.objects.mutate(registry.EVENT, namespace, name, again)
        return True

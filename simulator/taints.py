"""The taint eviction controller (pkg/controller/tainteviction): a pod on a node with
`NoExecute` taints is deleted when it does not tolerate them all, at once, or after the
shortest `tolerationSeconds` of the tolerations it uses (none: never).

Every pod tolerates `node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable`
for 300 s unless it says otherwise (the DefaultTolerationSeconds admission plugin,
`defaults.py`), so the pods of a lost node are deleted five simulated minutes after it
was tainted. Before the delete, a Normal `TaintManagerEviction` Event "Marking for
deletion Pod NS/NAME" and the pod's `DisruptionTarget` condition (reason
`DeletionByTaintManager`); an eviction the taint's removal cancels first says
"Cancelling deletion of Pod NS/NAME".
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Iterable, Mapping
from typing import Any

from lavalog.simulator import registry
from lavalog.simulator.background import BackgroundLoop
from lavalog.simulator.disruption import (
    TAINT_MANAGER_MESSAGE,
    DisruptionReason,
    disruption,
    mark_then_delete,
)
from lavalog.simulator.errors import ApiError
from lavalog.simulator.objects import Objects
from lavalog.simulator.recorder import EventRecorder
from lavalog.simulator.selectors import Selector
from lavalog.simulator.store import Change, Key, Obj, key_of

CONTROLLER = "taint-eviction-controller"
_ALL = Selector()


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """`Toleration.ToleratesTaint`."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def toleration_seconds(
    tolerations: Iterable[Mapping[str, Any]], taints: Iterable[Mapping[str, Any]]
) -> float:
    """How long a pod may stay (`GetMatchingTolerations`, `getMinTolerationTime`): 0
    when a taint is not tolerated, the shortest tolerationSeconds of the tolerations
    used, infinity when none of those has one."""
    tolerations = list(tolerations)
    used = []
    for taint in taints:
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return 0.0
        used.extend(matching)
    seconds = [t["tolerationSeconds"] for t in used if t.get("tolerationSeconds") is not None]
    if not seconds:
        return math.inf
    return float(max(0, min(seconds)))


def _no_execute(node: Obj | None) -> list[Obj]:
    taints = ((node or {}).get("spec") or {}).get("taints") or ()
    return [t for t in taints if t.get("effect") == "NoExecute"]


class TaintEviction(BackgroundLoop):
    """Watches nodes' NoExecute taints and the pods bound to them."""

    task_name = "simulator-taint-eviction"

    def __init__(self, objects: Objects) -> None:
        super().__init__()
        self.objects = objects
        self.events = EventRecorder(objects, CONTROLLER)
        #: pod -> its pending eviction
        self._scheduled: dict[Key, asyncio.Task[None]] = {}
        self._work: asyncio.Queue[tuple[str, Key | None]] = asyncio.Queue()
        objects.store.subscribe(self._observe)

    def _observe(self, change: Change) -> None:
        obj = change.entry.obj
        if change.resource is registry.NODE:
            if _no_execute(obj) != _no_execute(change.old) or change.type == "DELETED":
                self._work.put_nowait((obj["metadata"]["name"], None))
        elif change.resource is registry.POD:
            node = obj["spec"].get("nodeName")
            if change.type == "DELETED":
                self._cancel(key_of(obj), quietly=True)
            elif node and node != ((change.old or {}).get("spec") or {}).get("nodeName"):
                self._work.put_nowait((node, key_of(obj)))

    async def _run(self) -> None:
        while True:
            node, pod = await self._work.get()
            taints = _no_execute(self.objects.find(registry.NODE, "", node))
            for key in [pod] if pod is not None else self._pods_on(node):
                self._process(key, taints)

    def _pods_on(self, node: str) -> list[Key]:
        return [
            key_of(e.obj)
            for e in self.objects.store.scan(registry.POD, None, _ALL)
            if e.obj["spec"].get("nodeName") == node
        ]

    def _process(self, key: Key, taints: list[Obj]) -> None:
        """`processPodOnNode`."""
        pod = self.objects.find(registry.POD, *key)
        if pod is None:
            return
        if not taints:
            self._cancel(key)
            return
        seconds = toleration_seconds(pod["spec"].get("tolerations") or (), taints)
        if math.isinf(seconds):
            self._cancel(key)
        elif key not in self._scheduled:
            task = asyncio.create_task(self._evict_after(key, seconds))
            self._scheduled[key] = task

    def _cancel(self, key: Key, *, quietly: bool = False) -> None:
        task = self._scheduled.pop(key, None)
        if task is None:
            return
        task.cancel()
        pod = self.objects.find(registry.POD, *key)
        if pod is not None and not quietly:
            message = f"Cancelling deletion of Pod {key[0]}/{key[1]}"
            self.events.record(pod, "Normal", "TaintManagerEviction", message)

    async def _evict_after(self, key: Key, seconds: float) -> None:
        """`deletePodHandler`: the Event, then the condition, then the delete."""
        await self.objects.clock.sleep(seconds)
        self._scheduled.pop(key, None)
        pod = self.objects.find(registry.POD, *key)
        if pod is None:
            return
        self.events.record(
            pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key[0]}/{key[1]}"
        )
        condition = disruption(DisruptionReason.DELETION_BY_TAINT_MANAGER, TAINT_MANAGER_MESSAGE)
        with contextlib.suppress(ApiError):  # gone meanwhile
            mark_then_delete(self.objects, *key, condition)

    async def stop(self) -> None:
        for task in self._scheduled.values():
            task.cancel()
        self._scheduled.clear()
        await super().stop()

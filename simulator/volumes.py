"""The volume binder: every new PersistentVolumeClaim is bound at once, as a cluster
with a dynamic provisioner binds it.

A claim goes `Bound` with a `volumeName` (`pvc-<uid>`) and the capacity and access
modes it asked for, so Volcano jobs with `volumes` run; a pod naming a claim that
does not exist is not scheduled (see `scheduler.py`). No PersistentVolume objects are
kept: nothing lavalog reads looks at them.
"""

from __future__ import annotations

from lavalog.simulator import registry
from lavalog.simulator.background import WorkQueue
from lavalog.simulator.store import Change, Key, Obj, key_of


class VolumeBinder(WorkQueue[Key]):
    """Binds pending claims; `start()` inside the loop, `stop()` to end."""

    task_name = "simulator-volume-binder"

    def _observe(self, change: Change) -> None:
        if change.resource is registry.PVC and change.type == "ADDED":
            self._queue.put_nowait(key_of(change.entry.obj))

    def _handle(self, key: Key) -> None:
        self.objects.mutate(registry.PVC, *key, _bind)


def _bind(claim: Obj) -> None:
    spec = claim.setdefault("spec", {})
    spec.setdefault("volumeName", f"pvc-{claim['metadata']['uid']}")
    status = claim.setdefault("status", {})
    status["phase"] = "Bound"
    status["accessModes"] = list(spec.get("accessModes") or ["ReadWriteOnce"])
    requested = (spec.get("resources") or {}).get("requests") or {}
    if "storage" in requested:
        status["capacity"] = {"storage": requested["storage"]}

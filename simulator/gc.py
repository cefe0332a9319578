"""Garbage collection: owner references, foreground deletion and namespace cleanup.

As in Kubernetes, this runs after the fact: deleting a Job removes the Job at once and
its pods, PodGroup, Services, ConfigMaps and Secrets shortly after, each through a
normal (graceful) delete, so watchers see the same sequence a real cluster produces.
An object created for an owner that is already gone (a controller acting on a stale
view of a deleted Job) is collected too, as the real collector does.
"""

from __future__ import annotations

import contextlib

from lavalog.simulator import registry
from lavalog.simulator.background import WorkQueue
from lavalog.simulator.errors import ApiError
from lavalog.simulator.selectors import Selector
from lavalog.simulator.store import Change, Obj

FOREGROUND = "foregroundDeletion"
_EVERYTHING = Selector()


class GarbageCollector(WorkQueue[Change]):
    """Reacts to store changes; call `start()` inside the event loop, `stop()` to end."""

    task_name = "simulator-gc"

    def _observe(self, change: Change) -> None:
        meta = change.entry.obj["metadata"]
        if (
            (change.type == "ADDED" and meta.get("ownerReferences"))
            or change.type == "DELETED"
            or (
                meta.get("deletionTimestamp")
                and (
                    change.resource is registry.NAMESPACE
                    or FOREGROUND in (meta.get("finalizers") or ())
                )
            )
        ):
            self._queue.put_nowait(change)

    def _handle(self, change: Change) -> None:
        obj = change.entry.obj
        meta = obj["metadata"]
        if change.type == "ADDED":
            self._collect_if_orphaned(change.resource, obj)
        elif change.type == "DELETED":
            self._delete_dependents(meta["uid"])
            self._release_owners(obj)
            if meta.get("namespace"):
                self._finish_namespace(meta["namespace"])
        elif meta.get("deletionTimestamp"):
            if change.resource is registry.NAMESPACE:
                self._empty_namespace(meta["name"])
            elif FOREGROUND in (meta.get("finalizers") or ()):
                self._delete_dependents(meta["uid"])
                self._release_owners(obj)

    def _delete_dependents(self, owner_uid: str) -> None:
        for resource, (namespace, name) in self.objects.store.dependents(owner_uid):
            self._delete(resource, namespace, name)

    def _collect_if_orphaned(self, resource: registry.ResourceType, dependent: Obj) -> None:
        """A new object whose owners are all gone is deleted; one that keeps an owner loses
        the references to those gone (`attemptToDeleteItem`: dangling owners, none solid:
        delete; some solid: patch the dangling references away)."""
        meta = dependent["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        refs = meta.get("ownerReferences") or []
        dangling = [ref for ref in refs if self._dangling(ref, namespace)]
        if not dangling:
            return
        if len(dangling) == len(refs):
            self._delete(resource, namespace, name, uid=meta["uid"])
            return
        gone = {ref["uid"] for ref in dangling}

        def drop_dangling(obj: Obj) -> None:
            kept = [r for r in obj["metadata"].get("ownerReferences") or [] if r["uid"] not in gone]
            obj["metadata"]["ownerReferences"] = kept

        with contextlib.suppress(ApiError):
            self.objects.mutate(resource, namespace, name, drop_dangling)

    def _owner(self, ref: Obj, namespace: str) -> tuple[registry.ResourceType | None, Obj | None]:
        """The kind `ref` names (None: one this cluster does not serve) and the owner
        itself (None: gone, or another object of that name)."""
        resource = registry.by_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
        if resource is None:
            return None, None
        owner = self.objects.find(resource, namespace if resource.namespaced else "", ref["name"])
        if owner is None or owner["metadata"]["uid"] != ref["uid"]:
            return resource, None
        return resource, owner

    def _dangling(self, ref: Obj, namespace: str) -> bool:
        """The owner is known to be gone (an unknown kind is left alone, as by a
        collector that cannot look it up)."""
        resource, owner = self._owner(ref, namespace)
        return resource is not None and owner is None

    def _release_owners(self, dependent: Obj) -> None:
        """Drop the foreground finalizer of owners whose last dependent is gone."""
        namespace = dependent["metadata"].get("namespace", "")
        for ref in dependent["metadata"].get("ownerReferences") or ():
            resource, owner = self._owner(ref, namespace)
            if resource is None or owner is None:
                continue
            if FOREGROUND in (
                owner["metadata"].get("finalizers") or ()
            ) and not self.objects.store.dependents(ref["uid"]):
                self.objects.mutate(resource, namespace, ref["name"], _drop_foreground)

    def _empty_namespace(self, namespace: str) -> None:
        self.objects.mutate(registry.NAMESPACE, "", namespace, _terminating)
        for resource in registry.RESOURCES:
            if resource.namespaced:
                for entry in list(self.objects.store.scan(resource, namespace, _EVERYTHING)):
                    self._delete(resource, namespace, entry.obj["metadata"]["name"])
        self._finish_namespace(namespace)

    def _finish_namespace(self, namespace: str) -> None:
        ns = self.objects.find(registry.NAMESPACE, "", namespace)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        for resource in registry.RESOURCES:
            if resource.namespaced and next(
                self.objects.store.scan(resource, namespace, _EVERYTHING), None
            ):
                return
        self.objects.mutate(registry.NAMESPACE, "", namespace, _drop_spec_finalizers)

    def _delete(
        self, resource: registry.ResourceType, namespace: str, name: str, *, uid: str = ""
    ) -> None:
        """Delete the object (only the one of `uid`, when given: by the time the work is
        done another object may have taken the name)."""
        with contextlib.suppress(ApiError):
            self.objects.delete(
                resource, namespace, name, preconditions={"uid": uid} if uid else None
            )


def _drop_foreground(obj: Obj) -> None:
    obj["metadata"]["finalizers"] = [f for f in obj["metadata"]["finalizers"] if f != FOREGROUND]


def _terminating(obj: Obj) -> None:
    obj.setdefault("status", {})["phase"] = "Terminating"


def _drop_spec_finalizers(obj: Obj) -> None:
    obj.setdefault("spec", {})["finalizers"] = []

"""The API server's own record of every pod it created and deleted.

A chaos run asks it whether the controller ever made a pod twice: the controller's
logs and the Kafka topics can be wrong in the same way the controller is, the store
cannot. `GET /sim/pods/created` returns the record.
"""

from __future__ import annotations

from typing import Any

from lavalog.simulator import registry
from lavalog.simulator.store import Change, Store

VERSION_ANNOTATION = "volcano.sh/job-version"


class PodCreations:
    """Each pod creation in order: name, uid, job version and the resourceVersions at
    which the pod was created and (once it is) deleted."""

    def __init__(self, store: Store) -> None:
        self.records: list[dict[str, Any]] = []
        self._by_uid: dict[str, dict[str, Any]] = {}
        store.subscribe(self._on_change)

    def _on_change(self, change: Change) -> None:
        if change.resource is not registry.POD:
            return
        meta = change.entry.obj["metadata"]
        if change.type == "ADDED":
            record = {
                "namespace": meta.get("namespace", ""),
                "name": meta["name"],
                "uid": meta["uid"],
                "jobVersion": (meta.get("annotations") or {}).get(VERSION_ANNOTATION),
                "createdVersion": change.rv,
                "deletedVersion": None,
            }
            self.records.append(record)
            self._by_uid[meta["uid"]] = record
        elif change.type == "DELETED" and (found := self._by_uid.pop(meta["uid"], None)):
            found["deletedVersion"] = change.rv

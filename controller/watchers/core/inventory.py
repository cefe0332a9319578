"""After every list of pods: each job's pods that exist, as a PodsListed fact.

A pod deleted while no watcher ran (between two leaders, during a restart) shows up in
no watch event; the decider would remember it for ever. After each list the pod watcher
publishes, for every Job, the pods the list showed, and the decider forgets the rest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import msgspec

from lavalog.controller.watchers.core.changes import Change, ChangeType
from lavalog.controller.watchers.core.objects import Job, Pod
from lavalog.controller.watchers.core.translate import job_owner
from lavalog.events.observations import PodsListed
from lavalog.events.topics import job_key


class PodInventory:
    """The pods of each job (by job uid) seen by the pod watch and not seen deleted."""

    def __init__(self) -> None:
        self._by_job: dict[str, dict[str, str]] = {}

    def apply(self, changes: Iterable[Change[Pod]]) -> None:
        for change in changes:
            meta = change.obj.metadata
            owner = job_owner(meta)
            if owner is None:
                continue
            pods = self._by_job.setdefault(owner.uid, {})
            if change.type is ChangeType.DELETED:
                if pods.get(meta.name) == meta.uid:
                    del pods[meta.name]
            else:
                pods[meta.name] = meta.uid

    def listing(self, jobs: Iterable[Job], time: float) -> list[PodsListed]:
        """One PodsListed per job; its id is the same whenever the same pods are listed."""
        facts = []
        for job in jobs:
            meta = job.metadata
            pods = dict(sorted(self._by_job.get(meta.uid, {}).items()))
            digest = hashlib.sha256(msgspec.json.encode(pods)).hexdigest()[:16]
            facts.append(
                PodsListed(
                    id=f"podslisted/{meta.uid}/{digest}",
                    key=job_key(meta.namespace, meta.name),
                    job_uid=meta.uid,
                    time=time,
                    pods=pods,
                )
            )
        return facts

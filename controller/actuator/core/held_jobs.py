"""The Jobs the actuator holds: the newest version of each it has read, written or watched.

Volcano's job controller reads Jobs from its informer's cache, never from the API server;
the actuator does likewise (`service.job_informer`), so that a job's first status write
or pod create needs no read of its own. What is held may be behind the API server (a
watch lags a little): a status write on a stale resourceVersion is refused (409) and
read again, and a pod create checks the held Job's generation against the decision's.

Newest wins: a watch may deliver a change after the answer to a later write of the same
Job was held, and must not take its place. kube-apiserver's resourceVersions are etcd
revisions, decimal integers that grow with every write; one that is not a number is
taken as newer. Finished Jobs (Completed, Failed, Terminated) are held apart, only the
`finished` most recent: no pod is created for them again, but their status is written
a few times more as their pods end (the counts change), and a Job not held costs a read
per write; so memory stays flat as jobs finish.

Incarnations known to be gone (a read found none or another uid, the watch saw one
deleted, a list left one out) are remembered by uid, the `gone` most recent: a uid never
comes back, so the decisions still queued about a deleted Job (its pods' ends, say) are
skipped without a read each, as Volcano's controller drops a request whose Job is not in
its cache. Pure.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from lavalog.controller.actuator.core.lru import Lru
from lavalog.events.volcano.api import FINISHED_PHASES

Obj = dict[str, Any]

#: finished Jobs held, the most recently finished or written
FINISHED = 1_000
#: uids of Jobs known to be gone, the most recently learnt (about 100 bytes each)
GONE = 10_000


class HeldJobs:
    """At most `size` Jobs by job key (`namespace/name`), and `finished` finished ones, the
    least recently used dropped."""

    def __init__(self, size: int, *, finished: int = FINISHED, gone: int = GONE) -> None:
        self._jobs: Lru[str, Obj] = Lru(size)
        self._finished: Lru[str, Obj] = Lru(finished)
        self._gone: Lru[str, bool] = Lru(gone)

    @property
    def size(self) -> int:
        return self._jobs.size

    def __len__(self) -> int:
        return len(self._jobs) + len(self._finished)

    def get(self, key: str, uid: str) -> Obj | None:
        """The Job held under `key` if it is the incarnation `uid`."""
        job = self._held(key)
        return job if job is not None and uid_of(job) == uid else None

    def hold(self, job: Obj) -> None:
        """Hold `job` unless a newer version of it is held; a finished Job apart."""
        key = key_of(job)
        held = self._held(key)
        if held is not None and is_newer(held, job):
            return
        if phase_of(job) in FINISHED_PHASES:
            self._jobs.drop(key)
            self._finished.put(key, job)
        else:
            self._finished.drop(key)
            self._jobs.put(key, job)

    def drop(self, key: str, uid: str = "") -> None:
        """Let go of the Job under `key` (only if it is the incarnation `uid`, when given)."""
        if not uid or self.get(key, uid) is not None:
            self._jobs.drop(key)
            self._finished.drop(key)

    def deleted(self, key: str, uid: str) -> None:
        """The incarnation `uid` of the Job under `key` is gone for good."""
        self.drop(key, uid)
        self.gone(uid)

    def gone(self, uid: str) -> None:
        """Remember that no Job has `uid` any more (a read found none, or another)."""
        if uid:
            self._gone.put(uid, True)

    def is_gone(self, uid: str) -> bool:
        return uid in self._gone

    def clear(self) -> None:
        """Let go of the Jobs held (what is gone stays gone)."""
        self._jobs.clear()
        self._finished.clear()

    def keep_only(self, keys: Collection[str]) -> None:
        """Let go of every Job whose key is not in `keys` (a complete list of the Jobs):
        those were deleted."""
        for jobs in (self._jobs, self._finished):
            for key in [key for key in jobs if key not in keys]:
                self.gone(uid_of(jobs.get(key) or {}))
                jobs.drop(key)

    def _held(self, key: str) -> Obj | None:
        return self._jobs.get(key) or self._finished.get(key)


def is_newer(held: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Whether `held` is a later version than `other` (a later write of the same object)."""
    mine, theirs = _version(held), _version(other)
    return mine.isdigit() and theirs.isdigit() and int(mine) > int(theirs)


def key_of(job: Mapping[str, Any]) -> str:
    meta = job.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def uid_of(job: Mapping[str, Any]) -> str:
    return str((job.get("metadata") or {}).get("uid", ""))


def _version(job: Mapping[str, Any]) -> str:
    return str((job.get("metadata") or {}).get("resourceVersion", ""))


def phase_of(job: Mapping[str, Any]) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase", ""))

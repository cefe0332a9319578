"""What a job incarnation's list row and its timeline both lead with, drawn one way.

The job list (`projections.core.summary`) and the timeline (`projections.core.timeline`)
open with the same figures of a folded history: who the job is, where it waits, its
phase and why, its times, retries and version. They are declared and computed here once,
so the two views cannot disagree about a job.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from lavalog.events.topics import split_job_key
from lavalog.projections.core.history import JobHistory
from lavalog.projections.core.wire import Time


class JobHeadline(msgspec.Struct, frozen=True, kw_only=True):
    uid: str
    key: str
    namespace: str
    name: str
    queue: str
    phase: str
    #: the reason the job entered its current phase
    reason: str
    submitted: Time | None
    updated: Time
    finished: Time | None
    deleted: Time | None
    retry_count: int
    version: int
    queue_wait: float | None
    run_time: float
    running_since: Time | None
    #: which incarnation of the key this is, from 1 (the store's to number)
    incarnation: int = 1


View = TypeVar("View", bound=JobHeadline)


def headline(history: JobHistory, view: type[View], **rest: Any) -> View:
    """A `view` of `history`: the headline figures, and `rest` for the view's own fields."""
    namespace, name = split_job_key(history.key)
    return view(
        uid=history.uid,
        key=history.key,
        namespace=namespace,
        name=name,
        queue=history.queue,
        phase=history.phase,
        reason=history.phases[-1].reason if history.phases else "",
        submitted=history.submitted,
        updated=history.updated,
        finished=history.finished,
        deleted=history.deleted,
        retry_count=history.retry_count,
        version=history.version,
        queue_wait=history.queue_wait,
        run_time=history.run_time,
        running_since=history.running_since,
        **rest,
    )

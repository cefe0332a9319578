"""One row per job incarnation: what the job list filters, sorts and counts on.

Computed from the history alone (no join), so the store can refresh it for every job a
batch touched without building whole timelines.
"""

from __future__ import annotations

import msgspec

from events.topics import split_job_key
from events.volcano import Action
from projections.core.history import JobHistory
from projections.core.wire import Time

#: Actions that count as restarts in the job list and in `/metrics`: every Restart* one.
RESTART_ACTIONS = frozenset(action for action in Action if action.value.startswith("Restart"))


class JobSummary(msgspec.Struct, frozen=True, kw_only=True):
    uid: str
    key: str
    namespace: str
    name: str
    queue: str
    phase: str
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
    pods: int
    restarts: int
    incarnation: int = 1


def summarize(history: JobHistory) -> JobSummary:
    """The list row of one job incarnation (its `incarnation` number is the store's to set)."""
    namespace, name = split_job_key(history.key)
    return JobSummary(
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
        pods=len(history.attempts),
        restarts=sum(
            1
            for mark in history.marks
            if mark.type == "ActionDecided" and mark.action in RESTART_ACTIONS
        ),
    )

"""The fold of `lavalog.observed`: what the watchers saw of a job, its pods and PodGroup.

Writes only the history's observed fields (submission, spec, attempts, PodGroup,
commands), so the result does not depend on how the two topics interleave.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lavalog.events.observations import (
    CommandIssued,
    JobDeleted,
    JobObserved,
    PodDeleted,
    PodGroupObserved,
    PodObserved,
    PodsListed,
)
from lavalog.events.volcano.api import PodPhase
from lavalog.projections.core.history import JobHistory
from lavalog.projections.core.records import CommandRecord, PodAttempt, PodGroupPoint

_TERMINAL_POD_PHASES = frozenset({PodPhase.SUCCEEDED, PodPhase.FAILED})


def _job_observed(history: JobHistory, event: JobObserved) -> None:
    if history.submitted is None or event.time < history.submitted:
        history.submitted = event.time
    if event.generation >= history.generation:
        history.generation = event.generation
        queue = event.spec.get("queue")
        history.spec_queue = queue if isinstance(queue, str) else ""
        history.tasks = {
            str(task.get("name", "")): int(task.get("replicas", 0))
            for task in event.spec.get("tasks", ())
            if isinstance(task, dict)
        }


def _job_deleted(history: JobHistory, event: JobDeleted) -> None:
    history.deleted = event.time


def _attempt(history: JobHistory, event: PodObserved | PodDeleted) -> PodAttempt:
    attempt = history.attempts.get(event.pod_uid)
    if attempt is None:
        attempt = PodAttempt(
            uid=event.pod_uid,
            name=event.pod,
            task=event.task,
            index=event.index,
            job_version=event.job_version,
            first_seen=event.time,
        )
        history.attempts[event.pod_uid] = attempt
    return attempt


def _pod_observed(history: JobHistory, event: PodObserved) -> None:
    attempt = _attempt(history, event)
    attempt.phase = event.phase
    attempt.restart_count = max(attempt.restart_count, event.restart_count)
    attempt.node = event.node or attempt.node
    attempt.reason = event.reason or attempt.reason
    attempt.message = event.message or attempt.message
    attempt.container = event.container or attempt.container
    attempt.containers = event.containers or attempt.containers
    attempt.disruption = event.disruption or attempt.disruption
    if event.exit_code is not None:
        attempt.exit_code = event.exit_code
    clock = attempt.pod_clock
    if event.created is not None:
        clock.created = event.created
    if event.scheduled is not None:
        clock.scheduled = event.scheduled
    if event.started is not None:
        clock.started = event.started
    if event.finished is not None:
        clock.finished = event.finished
    # on the log's clock: the first observation that shows each fact
    if attempt.scheduled is None and (event.scheduled is not None or event.node):
        attempt.scheduled = event.time
    if attempt.started is None and (event.started is not None or event.phase == PodPhase.RUNNING):
        attempt.started = event.time
    if attempt.finished is None and (
        event.finished is not None or event.phase in _TERMINAL_POD_PHASES
    ):
        attempt.finished = event.time


def _pod_deleted(history: JobHistory, event: PodDeleted) -> None:
    attempt = _attempt(history, event)
    attempt.deleted = event.time
    attempt.phase = event.phase or attempt.phase
    attempt.reason = event.reason or attempt.reason
    attempt.node = event.node or attempt.node
    attempt.container = event.container or attempt.container
    attempt.containers = event.containers or attempt.containers
    attempt.disruption = event.disruption or attempt.disruption
    if event.exit_code is not None:
        attempt.exit_code = event.exit_code


def _pods_listed(history: JobHistory, event: PodsListed) -> None:
    """Attempts a fresh list no longer shows were deleted while nobody watched."""
    alive = set(event.pods.values())
    for uid, attempt in history.attempts.items():
        if attempt.deleted is None and uid not in alive:
            attempt.deleted = event.time
            attempt.reason = attempt.reason or "GoneUnseen"


def _podgroup_observed(history: JobHistory, event: PodGroupObserved) -> None:
    phase = "Deleted" if event.deleted else event.phase
    if not history.podgroup or history.podgroup[-1].phase != phase:
        history.podgroup.append(PodGroupPoint(time=event.time, phase=phase, reason=event.reason))


def _command_issued(history: JobHistory, event: CommandIssued) -> None:
    history.commands.append(
        CommandRecord(
            id=event.id,
            time=event.time,
            command=event.command,
            action=event.action,
            reason=event.reason,
        )
    )


OBSERVATION_HANDLERS: dict[type, Callable[[JobHistory, Any], None]] = {
    JobObserved: _job_observed,
    JobDeleted: _job_deleted,
    PodObserved: _pod_observed,
    PodDeleted: _pod_deleted,
    PodsListed: _pods_listed,
    PodGroupObserved: _podgroup_observed,
    CommandIssued: _command_issued,
}

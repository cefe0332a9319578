"""The fold of `lavalog.decisions`: the phases, revisions and decisions the decider took.

Writes only the history's decided fields (phases, revisions, marks, kills, creates, the
PodGroup's queue), so the result does not depend on how the two topics interleave.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec.structs import replace

from lavalog.events.causes import policy_label
from lavalog.events.decisions import (
    ActionDecided,
    AnyDecision,
    JobDelete,
    JobRejected,
    PhaseChanged,
    PodGroupCreate,
    PodsCreate,
    PodsKill,
    PodsReplace,
    RestartBackoffDelay,
    TimerCancelled,
    TimerScheduled,
)
from lavalog.projections.core.history import JobHistory
from lavalog.projections.core.records import (
    DecisionMark,
    PhaseInterval,
    PodCreate,
    PodKill,
    Revision,
)


def _phase_changed(history: JobHistory, event: PhaseChanged) -> None:
    if history.phases and history.phases[-1].end is None:
        history.phases[-1] = replace(history.phases[-1], end=event.time)
    history.phases.append(
        PhaseInterval(
            phase=event.phase,
            start=event.time,
            previous=event.previous,
            reason=event.reason,
            message=event.message,
            cause=event.cause,
        )
    )
    last = history.revisions[-1] if history.revisions else None
    if last is None or (last.retry_count, last.version) != (event.retry_count, event.version):
        history.revisions.append(
            Revision(
                time=event.time,
                retry_count=event.retry_count,
                version=event.version,
                cause=event.cause,
            )
        )


def _mark(history: JobHistory, event: AnyDecision, **fields: Any) -> None:
    """Put a decision on the timeline, under its own type name."""
    history.marks.append(
        DecisionMark(
            id=event.id, type=type(event).__name__, time=event.time, cause=event.cause, **fields
        )
    )


def _delayable(event: ActionDecided | TimerScheduled) -> dict[str, Any]:
    """What an action and a timer that delays one have in common."""
    return {
        "action": event.action,
        "trigger": event.trigger,
        "task": event.task,
        "pod": event.pod,
        "exit_code": event.exit_code,
        "policy": policy_label(event.policy),
        "timer_id": event.timer_id,
        "failure": event.failure or None,
    }


def _action_decided(history: JobHistory, event: ActionDecided) -> None:
    _mark(history, event, **_delayable(event), uncounted=event.uncounted is True)


def _timer_scheduled(history: JobHistory, event: TimerScheduled) -> None:
    """A timer the restart backoff set (or lengthened) says so: "delayed 40s by ..."."""
    reason = str(event.backoff) if isinstance(event.backoff, RestartBackoffDelay) else ""
    _mark(history, event, **_delayable(event), fire_at=event.fire_at, reason=reason)


def _timer_cancelled(history: JobHistory, event: TimerCancelled) -> None:
    _mark(history, event, reason=event.reason, timer_id=event.timer_id)


def _job_rejected(history: JobHistory, event: JobRejected) -> None:
    _mark(history, event, reason="; ".join(str(error) for error in event.errors))


def _job_delete(history: JobHistory, event: JobDelete) -> None:
    _mark(history, event, action="DeleteJob", reason=event.reason)


def _pods_kill(history: JobHistory, event: PodsKill | PodsReplace) -> None:
    history.kills.append(
        PodKill(
            decision=event.id,
            time=event.time,
            cause=event.cause,
            reason=event.reason,
            pods=event.pods,
        )
    )


def _pods_replace(history: JobHistory, event: PodsReplace) -> None:
    """Both a kill (it ends the attempts it names) and a create (it starts the next ones)."""
    _pods_kill(history, event)
    _pods_create(history, event)


def _pods_create(history: JobHistory, event: PodsCreate | PodsReplace) -> None:
    history.creates.append(
        PodCreate(
            decision=event.id,
            time=event.time,
            job_version=event.job_version,
            pods=tuple(pod.name for pod in event.pods),
        )
    )


def _podgroup_create(history: JobHistory, event: PodGroupCreate) -> None:
    history.podgroup_queue = event.queue


DECISION_HANDLERS: dict[type, Callable[[JobHistory, Any], None]] = {
    PhaseChanged: _phase_changed,
    ActionDecided: _action_decided,
    TimerScheduled: _timer_scheduled,
    TimerCancelled: _timer_cancelled,
    JobRejected: _job_rejected,
    JobDelete: _job_delete,
    PodsKill: _pods_kill,
    PodsCreate: _pods_create,
    PodsReplace: _pods_replace,
    PodGroupCreate: _podgroup_create,
}

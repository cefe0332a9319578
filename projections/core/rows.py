"""Rows of the store's index tables derived from single events (pure).

Both tables are append-only and each row depends on one event of one topic, so they
come out the same whatever the order in which the two topics were consumed.
"""

from __future__ import annotations

from lavalog.events.causes import policy_label
from lavalog.events.codec import LogEvent
from lavalog.events.decisions import ActionDecided
from lavalog.events.observations import PodObserved
from lavalog.events.topics import split_job_key
from lavalog.events.volcano.api import PodPhase
from lavalog.projections.core.timeline import EVICTION_REASONS

ActionRow = tuple[str, str, str, float, str, str, int | None, str]
FailureRow = tuple[str, str, str, float, str, int | None]

#: The only event types that give rows: a caller that sees a million events asks the
#: functions below of these alone.
INDEXED_TYPES = frozenset({ActionDecided, PodObserved})


def action_row(event: LogEvent) -> ActionRow | None:
    """(id, job_uid, namespace, time, action, trigger, exit_code, policy) of an action."""
    if not isinstance(event, ActionDecided):
        return None
    namespace, _ = split_job_key(event.key)
    return (
        event.id,
        event.job_uid,
        namespace,
        event.time,
        event.action,
        event.trigger,
        event.exit_code,
        policy_label(event.policy),
    )


def failure_reason(event: PodObserved) -> str:
    """Kubernetes' reason when it gave one, else the exit code."""
    if event.reason and event.reason != "Error":
        return event.reason
    if event.exit_code is not None:
        return f"ExitCode:{event.exit_code}"
    return event.reason or "Failed"


def failure_row(event: LogEvent) -> FailureRow | None:
    """(pod_uid, job_uid, namespace, time, reason, exit_code) of a failed or evicted pod."""
    if not isinstance(event, PodObserved):
        return None
    if event.phase != PodPhase.FAILED and event.reason not in EVICTION_REASONS:
        return None
    namespace, _ = split_job_key(event.key)
    return (
        event.pod_uid,
        event.job_uid,
        namespace,
        event.time,
        failure_reason(event),
        event.exit_code,
    )

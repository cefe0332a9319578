"""Taking over Jobs another controller ran (Volcano's job controller, switched off).

A Job seen for the first time may already carry a status: Volcano ran it. The decider
starts from that status (phase, reason, version, retryCount, conditions,
runningDuration), not from nothing, so a running job keeps its PodGroup and pods, a
finished job stays finished, and no counter goes back to zero. A job in a transient
phase (Restarting, Aborting, Completing, Terminating) goes on from it as Volcano would:
its phase handler syncs it.

Which pods exist is learnt from the watchers, which list the kinds in parallel: facts
about pods and PodGroups may come before their Job (kept as `early` facts, folded in
when the Job comes), and the pods are known for sure only once a pod list
(`PodsListed`) has shown them. Until then the job is not decided at all: no pod is
created that may already exist, no phase is left on half a picture, and Commands that
come meanwhile are carried out afterwards.
"""

from __future__ import annotations

from msgspec.structs import replace

from lavalog.controller.decider.core.state import EarlyFact, JobState
from lavalog.events.observations import (
    AnyObservation,
    CommandIssued,
    JobDeleted,
    PodDeleted,
    PodGroupObserved,
    PodObserved,
    PodsListed,
)
from lavalog.events.timestamps import from_rfc3339
from lavalog.events.volcano.api import JobStatus


def take_over(state: JobState, status: JobStatus | None, now: float) -> JobState:
    """`state` (a Job just seen at `now`) started from the status another controller left."""
    if status is None or not status.state.phase:
        return state
    since = status.state.last_transition_time
    last_transition = (_seconds(since) if since else 0.0) or now
    phase = status.state.phase
    return replace(
        state,
        phase=phase,
        reason=status.state.reason,
        message=status.state.message,
        last_transition=last_transition,
        version=status.version,
        retry_count=status.retry_count,
        conditions=status.conditions,
        running_duration=status.running_duration,
        status=status,
        pods_unknown=True,
    )


def keep_early(state: JobState, event: AnyObservation) -> JobState:
    """While no Job is known under the name: remember what may be about to matter."""
    early = state.early
    if isinstance(event, PodObserved):
        early = _put(early, f"pod/{event.pod_uid}", event)
    elif isinstance(event, PodDeleted):
        early = _drop(early, f"pod/{event.pod_uid}")
    elif isinstance(event, PodGroupObserved):
        key = f"podgroup/{event.podgroup_uid}"
        early = _drop(early, key) if event.deleted else _put(early, key, event)
    elif isinstance(event, PodsListed):
        early = _put(early, f"listed/{event.job_uid}", event)
    elif isinstance(event, CommandIssued):
        early = _put(early, f"command/{event.command}", event)
    elif isinstance(event, JobDeleted):
        early = {key: fact for key, fact in early.items() if fact.job_uid != event.job_uid}
    return state if early is state.early else replace(state, early=early)


def early_facts(early: dict[str, EarlyFact], uid: str) -> list[EarlyFact]:
    """The early facts about Job `uid`, in the order to fold them: a pod list last (it
    settles which of the pods before it exist)."""
    facts = [fact for fact in early.values() if fact.job_uid == uid]
    return sorted(facts, key=lambda fact: isinstance(fact, PodsListed))


def _put(early: dict[str, EarlyFact], key: str, fact: EarlyFact) -> dict[str, EarlyFact]:
    kept = {k: f for k, f in early.items() if k != key}
    kept[key] = fact  # at the end: the dict is in the order of each object's latest fact
    return kept


def _drop(early: dict[str, EarlyFact], key: str) -> dict[str, EarlyFact]:
    if key not in early:
        return early
    return {k: f for k, f in early.items() if k != key}


def _seconds(timestamp: str) -> float:
    """0 for a timestamp that cannot be read (then the time it was seen is taken)."""
    try:
        return from_rfc3339(timestamp)
    except ValueError:
        return 0.0

"""Facts that are no news to the decider's rules: every rule would find what it found at
the end of the job's last step, so the fact decides nothing and `step` folds it without
running them.

The ground they stand on: the state a step ends with is synced already (Volcano would
only sync the job again on such a fact, and that sync finds nothing to do), except while
refused creates wait for their requeue, the one time a step ends without syncing. A fact
is no news when it leaves the state as it was, or changes only what no rule reads on a
sync (`seen_before`, `seen_as_asked`, `seen_going`); each of these is property-tested
against running every rule (`tests/decider/core/test_properties.py`).
"""

from __future__ import annotations

from lavalog.controller.decider.core.policies import SYNC, apply_policies
from lavalog.controller.decider.core.state import JobState, PodRecord
from lavalog.controller.decider.core.triggers import Trigger
from lavalog.events.observations import AnyObservation, JobObserved, PodDeleted, PodObserved
from lavalog.events.volcano.api import Event, JobPhase, PodPhase

#: the phases a pod the decider asked for is made in
_MAKING_PHASES = frozenset({JobPhase.PENDING, JobPhase.RUNNING})
#: bound once (on Python 3.11 each `Enum.MEMBER` is looked up through a `__getattr__`
#: hook); the phase as a plain string, as pods carry it
_PENDING = PodPhase.PENDING.value
_POD_PENDING = Event.POD_PENDING


def no_news(state: JobState, observation: AnyObservation, observed: JobState) -> bool:
    """`observed`: `evolve(state, observation)`."""
    if state.refused_creates is not None:
        return False
    if observed is state:
        return seen_before(state, observation)
    if type(observation) is not PodObserved:
        return False
    known = state.pods.get(observation.pod)
    if known is None or (known.uid and not observation.deleting):
        return False  # a pod seen before and not going: neither case below (most pod news)
    seen = observed.pods.get(observation.pod)
    if seen is None or not nothing_waits(state, observation):
        return False
    return seen_as_asked(state, known, seen) or seen_going(state, observation, known, seen)


def seen_before(state: JobState, observation: AnyObservation) -> bool:
    """A pod or Job fact that leaves the state as it was: a relist, the echo of the
    decider's own status write, a pod already being killed seen terminating, or a late
    copy of a phase the pod has left (`evolve` keeps the newer). Not so a new generation,
    which admission has yet to judge, nor a pod's deletion, which is an eviction unless
    the decider asked for it."""
    if type(observation) is PodObserved:
        return True
    return type(observation) is JobObserved and observation.generation <= state.generation


def seen_as_asked(state: JobState, known: PodRecord, seen: PodRecord) -> bool:
    """A pod the decider asked for, seen for the first time as it was counted: Pending,
    not deleting, no restart, in a Pending or Running job. It was counted Pending when it
    was asked for (so the counts and the status are the same) and alive then as now; only
    a PodPending policy with a timeout reads its first Pending, so it is no news where no
    policy matches it. (A quarter of a busy log: every pod made is first seen so.)"""
    return (
        state.phase in _MAKING_PHASES
        and not known.uid
        and not known.deleting
        and seen.phase == _PENDING
        and not seen.deleting
        and not seen.restart_count
        and _no_pending_policy(state, seen)
    )


def seen_going(
    state: JobState, observation: PodObserved, known: PodRecord, seen: PodRecord
) -> bool:
    """A pod already being deleted, seen again terminating (its phase, restarts or
    readiness moved while it goes) in a job with no dependsOn. Its change is no event (a
    pod seen terminating without a deletion timestamp would be: a PodFailed, say), a pod
    being deleted counts as terminating whatever its phase, is no one's victim, recovers
    no timer's cause, completes or fails no task and is never alive; only a dependsOn
    reads a going pod's readiness."""
    assert state.spec is not None
    return (
        observation.deleting
        and known.deleting
        and seen.deleting
        and known.uid == seen.uid
        and all(task.depends_on is None for task in state.spec.tasks)
    )


def nothing_waits(state: JobState, observation: PodObserved | PodDeleted) -> bool:
    """An admitted job that is decided as it goes: no timer, no deferred Command, its
    pods known, not being deleted, and the fact is about it."""
    return (
        state.spec is not None
        and not state.timers
        and not state.deferred_actions
        and not state.pods_unknown
        and not state.deleting
        and observation.job_uid == state.uid
    )


def _no_pending_policy(state: JobState, pod: PodRecord) -> bool:
    assert state.spec is not None
    matchable = state.policy_events
    if matchable is not None and _POD_PENDING not in matchable:
        return True  # no policy names PodPending (nor `*`): the search would find none
    trigger = Trigger(event=_POD_PENDING, task=pod.task, job_version=pod.version)
    resolution = apply_policies(
        state.spec, state.version, trigger, state.exit_codes, matchable=state.policy_events
    )
    return resolution is SYNC

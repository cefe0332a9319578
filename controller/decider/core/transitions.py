"""Entering a phase, and what entering it implies.

Leaving Pending/Running cancels pending delayed actions (the job moved on); reaching
Aborted or a finished phase releases the PodGroup (so the job stops holding its queue
share); a finished phase starts the ttlSecondsAfterFinished timer.
"""

from __future__ import annotations

import msgspec

from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.timers import cancel_policy_timers, schedule_ttl
from lavalog.events.decisions import PhaseChanged, PodGroupDelete
from lavalog.events.volcano.api import FINISHED_PHASES, JobPhase

ACTIVE_PHASES = frozenset({JobPhase.PENDING, JobPhase.RUNNING})
#: phases whose sync may create pods. Not Restarting: a new version's pods are created
#: once the old ones are gone (the job is Pending again), never beside them
CREATING_PHASES = frozenset({JobPhase.PENDING, JobPhase.RUNNING})
#: phases whose PodGroup is deleted on entering them
_PODGROUP_GONE_PHASES = FINISHED_PHASES | {JobPhase.ABORTED}


# made at nearly every step and holding no reference cycle: not tracked by the cyclic GC
class Transition(msgspec.Struct, frozen=True, gc=False):
    """A phase to enter, why, and whether it counts a retry or starts a new job version."""

    phase: JobPhase
    reason: str = ""
    message: str = ""
    count_retry: bool = False
    bump_version: bool = False


def enter_phase(step: Step, transition: Transition) -> None:
    state = step.state
    if transition.phase == state.phase:
        return
    observation = step.observation
    changed = PhaseChanged(
        id=step.next_id(),
        key=observation.key,
        job_uid=state.uid,
        time=observation.time,
        cause=observation.id,
        previous=state.phase,
        phase=transition.phase,
        reason=transition.reason,
        message=transition.message,
        retry_count=state.retry_count + (1 if transition.count_retry else 0),
        version=state.version + (1 if transition.bump_version else 0),
    )
    step.record(changed)
    if transition.phase not in ACTIVE_PHASES:
        cancel_policy_timers(step, reason=f"job entered {transition.phase}")
    if transition.phase in _PODGROUP_GONE_PHASES:
        release_podgroup(step)
    if transition.phase in FINISHED_PHASES:
        schedule_ttl(step)


def release_podgroup(step: Step) -> None:
    """Delete the job's PodGroup, if it has one: its run is over, and a PodGroup left
    holds a share of its queue, so the gang scheduler admits other jobs less."""
    podgroup = step.state.podgroup
    if podgroup is not None:
        step.emit(PodGroupDelete, podgroup=podgroup.name, podgroup_uid=podgroup.uid)

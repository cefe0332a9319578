"""Why a gang waits: Volcano's `recordPodGroupEvent`, as a decision.

Volcano's controller looks at the job's PodGroup when it syncs the job (Pending, Running,
Restarting) and, when the PodGroup's newest True condition (by `lastTransitionTime`) is
not `Scheduled`, records a Warning `PodGroupPending` Event on the Job. vc-scheduler
leaves `Unschedulable=True` in place when it adds `Scheduled=True`, so a gang that waited
once is not reported again once it is scheduled. lavalog decides it once per change of
that condition or of the PodGroup's phase (the watchers publish a PodGroup only then).
"""

from __future__ import annotations

import msgspec

from lavalog.controller.decider.core.step import Step
from lavalog.events.decisions import PodGroupPending
from lavalog.events.observations import PodGroupObserved
from lavalog.events.volcano.api import JobPhase
from lavalog.events.volcano.podgroups import UNSCHEDULABLE, waiting

#: phases whose handler syncs the job (Volcano's `syncJob` records the Event)
_SYNCING = frozenset({"", JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING})


def report_unschedulable(step: Step, observation: PodGroupObserved) -> None:
    """A PodGroupPending decision for news (`observation`, this step's) that the job's
    current PodGroup cannot be placed."""
    if observation.deleted:
        return
    if step.state.phase not in _SYNCING:
        return
    podgroup = step.state.podgroup
    if podgroup is None or podgroup.uid != observation.podgroup_uid:
        return  # a PodGroup the decider already retired
    why = _why_waiting(observation)
    if why is not None:
        condition, reason, message = why
        step.emit(
            PodGroupPending,
            podgroup=observation.podgroup,
            reason=reason,
            message=message,
            condition=condition,
        )


def _why_waiting(observation: PodGroupObserved) -> tuple[str, str, str] | None:
    """(type, reason, message) of the condition that keeps the gang waiting, if one does.
    A log written before conditions were published carries the `Unschedulable` one's."""
    if isinstance(observation.conditions, msgspec.UnsetType):
        if observation.reason or observation.message:
            return UNSCHEDULABLE, observation.reason, observation.message
        return None
    condition = waiting(observation.conditions)
    if condition is None:
        return None
    return condition.type, condition.reason, condition.message

"""Why a gang waits: Volcano's `recordPodGroupEvent`, as a decision.

Volcano's controller looks at the job's PodGroup on every sync and, when its latest true
condition is not `Scheduled` (the scheduler marked it `Unschedulable`), records a
Warning `PodGroupPending` Event on the Job. lavalog decides it once per change of that
condition (the watchers publish a PodGroup only when its phase or condition changes).
"""

from __future__ import annotations

from lavalog.controller.decider.core.step import Step
from lavalog.events.decisions import PodGroupPending
from lavalog.events.observations import PodGroupObserved


def report_unschedulable(step: Step) -> None:
    """A PodGroupPending decision for news that the job's current PodGroup cannot be placed."""
    observation = step.observation
    if not isinstance(observation, PodGroupObserved) or observation.deleted:
        return
    if not (observation.reason or observation.message):
        return
    podgroup = step.state.podgroup
    if podgroup is None or podgroup.uid != observation.podgroup_uid:
        return  # a PodGroup the decider already retired
    step.emit(
        PodGroupPending,
        podgroup=observation.podgroup,
        reason=observation.reason,
        message=observation.message,
    )

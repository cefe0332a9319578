"""Uncounted disruptions (a lavalog extension): a restart caused by a disruption counts no
retry.

Kubernetes marks a pod it ends through no fault of the pod's own with the condition
`DisruptionTarget=True` (preempted, evicted through the Eviction API, deleted for a
taint, stopped by its kubelet under node pressure). With the Job annotation
`lavalog.io/uncounted-disruptions` (`controller/admission/disruptions.py`), a restart
that a policy chooses on the PodFailed or PodEvicted of such a pod (at once or when its
timer fires) restarts as the policy says, but leaves `retryCount` as it is, as
podFailurePolicy's `Ignore` leaves a Kubernetes Job's failure count: preemptions alone
never fail the job. Commands and other events count as in Volcano.
"""

from __future__ import annotations

from lavalog.controller.admission.restart_backoff import RESTART_ACTIONS
from lavalog.controller.decider.core.state import JobState
from lavalog.controller.decider.core.triggers import POD_ENDS, Trigger


def counts_retry(state: JobState, trigger: Trigger) -> bool:
    """Whether a restart on `trigger` counts a retry (Volcano: always)."""
    exempt = state.uncounted_disruptions
    failure = trigger.failure
    return (
        exempt is None
        or failure is None
        or trigger.event not in POD_ENDS
        or not exempt.covers(failure.disruption)
    )


def uncounted(state: JobState, action: str, trigger: Trigger) -> bool:
    """`action` is a restart that counts no retry."""
    return action in RESTART_ACTIONS and not counts_retry(state, trigger)

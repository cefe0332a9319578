"""A job whose creates the API server refused is requeued with backoff, and terminated at
the retry limit, as Volcano's job controller does.

Volcano: a sync whose pod (or PodGroup, PVC) create fails records a Warning `FailedCreate`
Event ("Error creating pods: ...") and returns the error; `processNextReq` hands it to
`handleJobError`, which requeues the job through the workqueue's rate limiter (client-go's
`DefaultTypedControllerRateLimiter`: 5 ms, doubling with each requeue, at most 1000 s)
while it was requeued fewer than `maxRequeueNum` (`--max-requeue-num`, 15) times, and then records
`ExecuteAction` "Job failed on action SyncJob for retry limit reached" and executes
TerminateJob. A namespace whose ResourceQuota is full (403 "exceeded quota") is the common
case: the job is retried for about 164 s (5 ms + 10 ms + ... + 82 s), and runs if the
quota frees meanwhile.

lavalog: the actuator writes the `FailedCreate` Event (it saw the error) and publishes the
refusal (`CreateFailed`, folded by `refused_creates`); deciding it schedules the requeue as
a durable timer (a SyncJob coming due: on the timeline, and at the same moments after a
restart or in a replay) or, at the 16th refusal in a row, terminates the job. The limit
is the controller's `--max-requeue-num`, carried by each refusal, so that a replay decides
with the limit the decision was made with.
"""

from __future__ import annotations

from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.transitions import ACTIVE_PHASES
from lavalog.controller.decider.core.triggers import Trigger
from lavalog.controller.delays import exponential
from lavalog.events.decisions import TimerScheduled
from lavalog.events.observations import CreateFailed
from lavalog.events.volcano.api import Action
from lavalog.events.volcano.reasons import FAILED_CREATE

#: what ends a job whose creates were refused too often
TERMINATE = Trigger(event=FAILED_CREATE, action=Action.TERMINATE_JOB)
#: client-go's ItemExponentialFailureRateLimiter in Volcano's job queues: 5 ms, x2, 1000 s
REQUEUE_FIRST, REQUEUE_FACTOR, REQUEUE_LONGEST = 0.005, 2.0, 1000.0


def requeue_delay(refusals: int) -> float:
    """Seconds before the job is synced again after its `refusals`-th refusal in a row."""
    return exponential(REQUEUE_FIRST, REQUEUE_FACTOR, REQUEUE_LONGEST, refusals - 1)


def retry_limit_reached(step: Step) -> bool:
    """Decide a refusal just folded: True when the job must be terminated (Volcano's
    `handleJobError` at `maxRequeueNum`); otherwise the requeue is scheduled, unless one
    is already pending."""
    state, before = step.state, step.before.refused_creates
    refused = state.refused_creates
    if refused is None or refused == before or state.phase not in ACTIVE_PHASES:
        return False  # counted before, of an earlier run, or the job has moved on
    limit = step.observation.max_requeues if isinstance(step.observation, CreateFailed) else -1
    if 0 <= limit < refused.count:
        return True
    if any(timer.trigger == FAILED_CREATE for timer in state.timers.values()):
        return False
    step.emit(
        TimerScheduled,
        timer_id=f"{step.observation.id}#requeue",
        fire_at=step.now + requeue_delay(refused.count),
        action=Action.SYNC_JOB,
        trigger=FAILED_CREATE,
    )
    return False

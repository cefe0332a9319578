"""Restart backoff (a lavalog extension): a restart a policy chose waits first.

The wait grows with the job's restarts: the restart after n earlier ones waits
`restart_delay(backoff, n)`, where n is the job's `retryCount`. That is the count Volcano
keeps and `maxRetry` bounds, raised by every restart (RestartJob, RestartTask,
RestartPod, RestartPartition): one number, in the status, that survives restarts of the
controller with no extra state, and a job failing in many places backs off as a whole,
as a crash-looping job should. (A count per task or pod would need state Volcano does
not keep, and a job whose pods take turns failing would never back off.)

What is not delayed: an action already chosen, i.e. a Command (a person asked for the
restart now) or a delayed action coming due (it has waited: a fired timer is never
backed off again); a restart decided outside Pending/Running, where a job's pending
timers are cancelled anyway (a Restarting job is restarting already, a finished one
ignores it); and the restart that exhausts `maxRetry`, which fails the job instead of
restarting it (waiting would only hold a failed job Running). A policy `timeout` and the
backoff add up in one durable timer.
"""

from __future__ import annotations

from msgspec.structs import replace

from lavalog.controller.admission.restart_backoff import RESTART_ACTIONS
from lavalog.controller.decider.core.disruptions import counts_retry
from lavalog.controller.decider.core.policies import Resolution
from lavalog.controller.decider.core.state import JobState
from lavalog.controller.decider.core.transitions import ACTIVE_PHASES
from lavalog.controller.decider.core.triggers import Trigger
from lavalog.controller.delays import exponential
from lavalog.events.decisions import RestartBackoffDelay
from lavalog.events.extensions import RestartBackoff


def with_restart_backoff(state: JobState, trigger: Trigger, resolution: Resolution) -> Resolution:
    """`resolution`, delayed by the job's restart backoff if it has one and it applies."""
    backoff = state.restart_backoff
    if (
        backoff is None
        or state.spec is None
        or trigger.action
        or resolution.action not in RESTART_ACTIONS
        or state.phase not in ACTIVE_PHASES
        or (state.retry_count + 1 >= state.spec.max_retry and counts_retry(state, trigger))
    ):
        return resolution
    delay = restart_delay(backoff, state.retry_count)
    return replace(
        resolution,
        delay=resolution.delay + delay,
        backoff=RestartBackoffDelay(delay=delay, restart=state.retry_count + 1),
    )


def restart_delay(backoff: RestartBackoff, restarts_done: int) -> float:
    """Seconds the restart after `restarts_done` earlier ones waits."""
    return exponential(backoff.initial, backoff.factor, backoff.cap, restarts_done)


def restart_pending(state: JobState) -> bool:
    """A restart is waiting out its backoff: the pods it replaces do not decide the job."""
    return any(isinstance(timer.backoff, RestartBackoffDelay) for timer in state.timers.values())

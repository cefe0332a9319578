"""Pieces the phase handlers share: the kill actions and the "all pods released" test."""

from __future__ import annotations

from lavalog.controller.admission.restart_backoff import RESTART_ACTIONS
from lavalog.controller.decider.core.disruptions import counts_retry
from lavalog.controller.decider.core.operations import (
    RETAIN_NONE,
    RETAIN_SOFT,
    TARGET_KILLS,
    UpdateStatus,
    kill_job,
    kill_target,
    partition_pods,
)
from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.state import PodCounts
from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.transitions import Transition
from lavalog.controller.decider.core.why import released_message, restart_message
from lavalog.events.volcano.api import Action, JobPhase

_SYNC_JOB = Action.SYNC_JOB
#: whole-job kills: which finished pods survive, and the phase the job enters
_JOB_KILLS: dict[str, tuple[frozenset[str], JobPhase]] = {
    Action.RESTART_JOB: (RETAIN_NONE, JobPhase.RESTARTING),
    Action.ABORT_JOB: (RETAIN_SOFT, JobPhase.ABORTING),
    Action.TERMINATE_JOB: (RETAIN_SOFT, JobPhase.TERMINATING),
    Action.COMPLETE_JOB: (RETAIN_SOFT, JobPhase.COMPLETING),
}


def enter(
    phase: JobPhase, request: ActionRequest, *, count_retry: bool, bump_version: bool
) -> UpdateStatus:
    """A status callback that always moves the job to `phase` because of `request` (a
    restart says what it leaves of the retries)."""

    def update(step: Step, counts: PodCounts) -> Transition:
        restart = request.action in RESTART_ACTIONS
        return Transition(
            phase,
            reason=request.action,
            message=restart_message(step.state, request, counted=count_retry)
            if restart
            else request.describe(),
            count_retry=count_retry,
            bump_version=bump_version,
        )

    return update


def when_released(phase: JobPhase) -> UpdateStatus:
    """Enter `phase` once no pod is pending, running or terminating any more, saying what
    stopped the job."""

    def update(step: Step, counts: PodCounts) -> Transition | None:
        if counts.alive:
            return None
        return Transition(phase, reason="PodsReleased", message=released_message(step.state))

    return update


def start_kill(step: Step, request: ActionRequest) -> bool:
    """Carry out a restart/abort/terminate/complete; False when `request` is none of them.

    Restarts count a retry; only whole-job kills start a new job version, as in Volcano
    (RestartTask/RestartPod keep the version, so the other tasks' events stay current).
    """
    if request.action is _SYNC_JOB:
        return False  # the policies' sync (most requests), as bound: nothing to kill
    if request.action in TARGET_KILLS:
        if not request.trigger.task:
            return False  # e.g. `*: RestartTask` on Unknown: no task to restart, only sync
        if request.action == Action.RESTART_PARTITION and not partition_pods(step, request):
            return False  # no partition to restart (Volcano skips it too), only sync
        counted = counts_retry(step.state, request.trigger)
        restart = enter(JobPhase.RESTARTING, request, count_retry=counted, bump_version=False)
        kill_target(step, request, restart)
        return True
    kill = _JOB_KILLS.get(request.action)
    if kill is None:
        return False  # a sync, most of the time: nothing to count
    retain, phase = kill
    counted = phase == JobPhase.RESTARTING and counts_retry(step.state, request.trigger)
    update = enter(phase, request, count_retry=counted, bump_version=True)
    kill_job(step, retain, update, reason=request.action, last_run_kept=counted)
    return True


def resume(step: Step, request: ActionRequest) -> None:
    """ResumeJob: release what is left and restart. Not a failed retry (volcano#3067)."""
    update = enter(JobPhase.RESTARTING, request, count_retry=False, bump_version=True)
    kill_job(step, RETAIN_SOFT, update, reason=request.action)

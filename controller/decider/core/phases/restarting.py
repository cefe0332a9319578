"""Restarting: waiting for the killed pods to go, or failing when retries are exhausted
(`state/restarting.go`)."""

from __future__ import annotations

from lavalog.controller.decider.core.operations import RETAIN_NONE, kill_job, kill_target, sync_job
from lavalog.controller.decider.core.phases.common import start_kill
from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.state import JobState, PodCounts
from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.transitions import Transition
from lavalog.controller.decider.core.why import exhausted_message
from lavalog.events.volcano.api import Action, JobPhase, JobSpec, PodPhase

#: a user or policy may still stop a restarting job (Volcano would restart it anyway)
_STOPS = frozenset({Action.ABORT_JOB, Action.TERMINATE_JOB, Action.COMPLETE_JOB})
_ALIVE = frozenset({"", PodPhase.PENDING, PodPhase.RUNNING})
#: bound once (on Python 3.11 each `Enum.MEMBER` is looked up through a `__getattr__` hook)
_TARGET_RESTARTS = frozenset({Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION})
_RESTART_JOB = Action.RESTART_JOB


def handle(step: Step, request: ActionRequest) -> None:
    action = request.action
    if action in _STOPS:
        start_kill(step, request)
    elif action in _TARGET_RESTARTS:
        kill_target(step, request, update)
    elif action == _RESTART_JOB and _has_live_pods(step):
        kill_job(step, RETAIN_NONE, update, reason=action)
    elif runs_an_older_version(step.state):
        kill_job(step, RETAIN_NONE, update, reason=JobPhase.RESTARTING)
    else:
        sync_job(step, update)


def _has_live_pods(step: Step) -> bool:
    """Pods not being deleted (in any phase)."""
    counts = step.counts()
    return counts.terminating < len(step.state.pods)


def runs_an_older_version(state: JobState) -> bool:
    """Pods of an earlier version still pending or running: left by a restart another
    controller began (Volcano, switched off half-way), which Volcano's Restarting would
    kill on its next sync. A restart lavalog began killed them when it entered the phase."""
    version = state.version
    return any(
        not pod.deleting and pod.version < version and pod.phase in _ALIVE
        for pod in state.pods.values()
    )


def update(step: Step, counts: PodCounts) -> Transition | None:
    spec, state = step.spec, step.state
    if _retries_exhausted(state, spec):
        return Transition(
            JobPhase.FAILED,
            reason="RetriesExhausted",
            message=exhausted_message(state, step.acted),
        )
    if _gang_can_start(state, spec, counts.terminating):
        return Transition(
            JobPhase.PENDING,
            reason="Restarted",
            message=f"pods of version {state.version} can be created",
        )
    return None


def pending_once(state: JobState, terminating: int) -> bool:
    """Whether this restarting job is Pending again (and makes its pods) once no more than
    `terminating` of its pods are still being deleted."""
    spec = state.spec
    return (
        spec is not None
        and not _retries_exhausted(state, spec)
        and _gang_can_start(state, spec, terminating)
    )


def _retries_exhausted(state: JobState, spec: JobSpec) -> bool:
    return state.retry_count >= spec.max_retry


def _gang_can_start(state: JobState, spec: JobSpec, terminating: int) -> bool:
    return state.replicas.total - terminating >= spec.min_available

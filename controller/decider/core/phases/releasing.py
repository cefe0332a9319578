"""Aborting, Completing, Terminating: releasing the pods, then the final phase
(`state/aborting.go`, `completing.go`, `terminating.go`)."""

from __future__ import annotations

from lavalog.controller.decider.core.operations import RETAIN_SOFT, kill_job
from lavalog.controller.decider.core.phases.common import resume, when_released
from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.step import Step
from lavalog.events.volcano.api import Action, JobPhase

_to_aborted = when_released(JobPhase.ABORTED)
_to_completed = when_released(JobPhase.COMPLETED)
_to_terminated = when_released(JobPhase.TERMINATED)


def aborting(step: Step, request: ActionRequest) -> None:
    if request.action == Action.RESUME_JOB:
        resume(step, request)
    else:
        kill_job(step, RETAIN_SOFT, _to_aborted, reason=JobPhase.ABORTING)


def completing(step: Step, request: ActionRequest) -> None:
    kill_job(step, RETAIN_SOFT, _to_completed, reason=JobPhase.COMPLETING)


def terminating(step: Step, request: ActionRequest) -> None:
    kill_job(step, RETAIN_SOFT, _to_terminated, reason=JobPhase.TERMINATING)

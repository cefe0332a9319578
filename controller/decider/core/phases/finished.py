"""Aborted and the finished phases: no pod runs again, except that Aborted can resume
(`state/aborted.go`, `finished.go`)."""

from __future__ import annotations

from lavalog.controller.decider.core.operations import RETAIN_SOFT, kill_job
from lavalog.controller.decider.core.phases.common import resume
from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.step import Step
from lavalog.events.volcano.api import Action


def aborted(step: Step, request: ActionRequest) -> None:
    if request.action == Action.RESUME_JOB:
        resume(step, request)
    else:
        kill_job(step, RETAIN_SOFT, None, reason=step.state.phase)


def finished(step: Step, request: ActionRequest) -> None:
    """Completed, Failed, Terminated: make sure nothing is left running."""
    kill_job(step, RETAIN_SOFT, None, reason=step.state.phase)

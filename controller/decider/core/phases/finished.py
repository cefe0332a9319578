"""Aborted and the finished phases: no pod runs again, except that Aborted can resume
(`state/aborted.go`, `finished.go`).

Each sync makes sure nothing of the run is left: pods still running are killed, and a
PodGroup seen again is deleted again. The one deleted when the run ended can come back
when the actuator, restarted, carries out again a create it had not yet recorded as done
(Volcano's controller, which carries out nothing twice, never makes one then)."""

from __future__ import annotations

from lavalog.controller.decider.core.operations import RETAIN_SOFT, kill_job
from lavalog.controller.decider.core.phases.common import resume
from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.transitions import release_podgroup
from lavalog.events.volcano.api import Action


def aborted(step: Step, request: ActionRequest) -> None:
    if request.action == Action.RESUME_JOB:
        resume(step, request)
    else:
        kill_job(step, RETAIN_SOFT, None, reason=step.state.phase)
        release_podgroup(step)


def finished(step: Step, request: ActionRequest) -> None:
    """Completed, Failed, Terminated: make sure nothing is left running."""
    kill_job(step, RETAIN_SOFT, None, reason=step.state.phase)
    release_podgroup(step)

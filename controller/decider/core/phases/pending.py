"""Pending: waiting until `minAvailable` pods run (Volcano's `state/pending.go`)."""

from __future__ import annotations

from lavalog.controller.decider.core.operations import sync_job
from lavalog.controller.decider.core.phases.common import start_kill
from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.state import PodCounts
from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.transitions import Transition
from lavalog.events.volcano.api import JobPhase


def handle(step: Step, request: ActionRequest) -> None:
    if not start_kill(step, request):
        sync_job(step, update)


def update(step: Step, counts: PodCounts) -> Transition | None:
    if step.spec.min_available <= counts.running + counts.succeeded + counts.failed:
        return Transition(
            JobPhase.RUNNING,
            reason="MinAvailableRunning",
            message=f"{counts.running} pods running, minAvailable is {step.spec.min_available}",
        )
    return None

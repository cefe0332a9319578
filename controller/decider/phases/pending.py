"""Pending: waiting until `minAvailable` pods run (Volcano's `state/pending.go`)."""

from __future__ import annotations

from controller.decider.counts import PodCounts
from controller.decider.operations import sync_job
from controller.decider.phases.common import start_kill
from controller.decider.request import ActionRequest
from controller.decider.step import Step
from controller.decider.transitions import Transition
from events.volcano import JobPhase


def handle(step: Step, request: ActionRequest) -> None:
    if not start_kill(step, request):
        sync_job(step, _update)


def _update(step: Step, counts: PodCounts) -> Transition | None:
    if step.spec.min_available <= counts.running + counts.succeeded + counts.failed:
        return Transition(
            JobPhase.RUNNING,
            reason="MinAvailableRunning",
            message=f"{counts.running} pods running, minAvailable is {step.spec.min_available}",
        )
    return None

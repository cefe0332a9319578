"""Running: deciding completion and failure from pod outcomes, and going back to Pending
when too many pods wait to be scheduled (`state/running.go`)."""

from __future__ import annotations

from lavalog.controller.decider.core.operations import sync_job
from lavalog.controller.decider.core.phases.common import start_kill
from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.restart_backoff import restart_pending
from lavalog.controller.decider.core.state import PodCounts
from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.transitions import Transition
from lavalog.controller.decider.core.why import with_pod_end
from lavalog.events.volcano.api import JobPhase, PodPhase


def handle(step: Step, request: ActionRequest) -> None:
    if not start_kill(step, request):
        sync_job(step, update)


def update(step: Step, counts: PodCounts) -> Transition | None:
    """Volcano's rules, in its order: minSuccess reached; else, once every pod has finished,
    a task below its minAvailable, minSuccess missed or too few successes fail the job
    (not while a restart waits out its backoff: it replaces the finished pods); else, with
    more pods pending than the job can spare (replicas - minAvailable), back to Pending."""
    spec = step.spec
    replicas = step.state.replicas.total
    if replicas == 0:
        return None  # scaled to zero: keep the phase
    if spec.min_success is not None and counts.succeeded >= spec.min_success:
        return Transition(
            JobPhase.COMPLETED,
            reason="MinSuccessReached",
            message=f"{counts.succeeded} pods succeeded, minSuccess is {spec.min_success}",
        )
    if counts.succeeded + counts.failed == replicas and not restart_pending(step.state):
        return _finished(step, counts, replicas)
    spare = replicas - spec.min_available
    if counts.pending > spare:
        return Transition(
            JobPhase.PENDING,
            reason="PodsPending",
            message=(
                f"{counts.pending} of {replicas} pods pending; minAvailable is {spec.min_available}"
            ),
        )
    return None


def _finished(step: Step, counts: PodCounts, replicas: int) -> Transition:
    """Every pod has finished: Completed or Failed by the tasks' minAvailable, minSuccess
    and the job's minAvailable."""
    spec = step.spec
    task_min_total = sum(
        task.replicas if task.min_available is None else task.min_available for task in spec.tasks
    )
    if spec.min_available >= task_min_total:
        for task in spec.tasks:
            phases = counts.by_task.get(task.name)
            if task.min_available is None or phases is None:
                continue
            if phases.get(PodPhase.SUCCEEDED, 0) < task.min_available:
                return Transition(
                    JobPhase.FAILED,
                    reason="TaskMinAvailableNotMet",
                    message=with_pod_end(
                        f"task {task.name}: {phases.get(PodPhase.SUCCEEDED, 0)} pods succeeded, "
                        f"minAvailable is {task.min_available}",
                        step.acted,
                    ),
                )
    outcome = f"{counts.succeeded} of {replicas} pods succeeded"
    if spec.min_success is not None and counts.succeeded < spec.min_success:
        return Transition(
            JobPhase.FAILED,
            reason="MinSuccessNotMet",
            message=with_pod_end(f"{outcome}, minSuccess is {spec.min_success}", step.acted),
        )
    if counts.succeeded >= spec.min_available:
        return Transition(JobPhase.COMPLETED, reason="Completed", message=outcome)
    return Transition(
        JobPhase.FAILED,
        reason="MinAvailableNotMet",
        message=with_pod_end(f"{outcome}, minAvailable is {spec.min_available}", step.acted),
    )

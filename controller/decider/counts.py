"""Pod counts and the Job status derived from the decider's state.

Counted as Volcano's syncJob/killJob count them: a pod being deleted is `terminating`
whatever its phase; a pod requested but not yet seen counts as Pending (it is created
Pending); `taskStatusCount` leaves terminating pods out.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from controller.decider.state import JobState, PodRecord
from events.volcano import JobState as StatusState
from events.volcano import JobStatus, PodPhase, TaskState


class PodCounts(msgspec.Struct, frozen=True):
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    #: task -> pod phase -> pods
    by_task: dict[str, dict[str, int]] = {}

    @property
    def alive(self) -> int:
        """Pods not yet finished: what Aborting/Completing/Terminating wait for."""
        return self.pending + self.running + self.terminating


def count_pods(pods: Iterable[PodRecord]) -> PodCounts:
    pending = running = succeeded = failed = terminating = unknown = 0
    by_task: dict[str, dict[str, int]] = {}
    for pod in pods:
        if pod.deleting:
            terminating += 1
            continue
        phase = pod.phase or PodPhase.PENDING
        if phase == PodPhase.PENDING:
            pending += 1
        elif phase == PodPhase.RUNNING:
            running += 1
        elif phase == PodPhase.SUCCEEDED:
            succeeded += 1
        elif phase == PodPhase.FAILED:
            failed += 1
        else:
            unknown += 1
        phases = by_task.setdefault(pod.task, {})
        phases[phase] = phases.get(phase, 0) + 1
    return PodCounts(pending, running, succeeded, failed, terminating, unknown, by_task)


def job_status(state: JobState, counts: PodCounts) -> JobStatus:
    """The whole `status` to write for this state."""
    spec = state.spec
    return JobStatus(
        state=StatusState(
            phase=state.phase,
            reason=state.reason,
            message=state.message,
            last_transition_time=(
                state.conditions[-1].last_transition_time if state.conditions else None
            ),
        ),
        min_available=spec.min_available if spec is not None else 0,
        task_status_count={
            task: TaskState(phase=phases) for task, phases in sorted(counts.by_task.items())
        },
        pending=counts.pending,
        running=counts.running,
        succeeded=counts.succeeded,
        failed=counts.failed,
        terminating=counts.terminating,
        unknown=counts.unknown,
        version=state.version,
        retry_count=state.retry_count,
        running_duration=state.running_duration,
        conditions=state.conditions,
    )

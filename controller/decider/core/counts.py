"""Pod counts and the Job status derived from the decider's state (Volcano's status fields,
with their meaning in Volcano: see `job_status`).

Counted as Volcano's syncJob/killJob count them: a pod being deleted is `terminating`
whatever its phase; a pod requested but not yet seen counts as Pending (it is created
Pending); `taskStatusCount` leaves terminating pods out.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
from msgspec.structs import replace

from lavalog.controller.decider.core.state import JobState, PodRecord
from lavalog.events.timestamps import to_rfc3339
from lavalog.events.volcano.api import JobCondition, JobPhase, JobStatus, PodPhase, TaskState
from lavalog.events.volcano.api import JobState as StatusState


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
    """One pass over the pods counting by task and phase; the totals are summed per task
    afterwards (a job has few tasks and many pods). A task's phases are in the order the
    pods, in the state's order, first show them: `taskStatusCount` is written so."""
    terminating = 0
    by_task: dict[str, dict[str, int]] = {}
    for pod in pods:
        if pod.deleting:
            terminating += 1
            continue
        phases = by_task.get(pod.task)
        if phases is None:
            phases = by_task[pod.task] = {}
        phase = pod.phase or PodPhase.PENDING
        phases[phase] = phases.get(phase, 0) + 1
    pending = running = succeeded = failed = unknown = 0
    for phases in by_task.values():
        for phase, number in phases.items():
            if phase == PodPhase.RUNNING:
                running += number
            elif phase == PodPhase.PENDING:
                pending += number
            elif phase == PodPhase.SUCCEEDED:
                succeeded += number
            elif phase == PodPhase.FAILED:
                failed += number
            else:
                unknown += number
    return PodCounts(pending, running, succeeded, failed, terminating, unknown, by_task)


#: phases whose every status change is stamped with a new `lastTransitionTime`, as
#: Volcano's `syncJob` does; in the others only a phase change is (its `killJob`)
SYNCED_PHASES = frozenset({JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING})


def append_condition(
    conditions: tuple[JobCondition, ...], condition: JobCondition
) -> tuple[JobCondition, ...]:
    """Volcano's `appendJobCondition`: the entry of the same phase goes, the new one is last."""
    kept = [c for c in conditions if c.status != condition.status]  # a list: ~2x a generator
    kept.append(condition)
    return tuple(kept)


#: plugins whose `OnJobAdd` records nothing in `controlledResources` (Volcano's hcclrank
#: only annotates pods)
_UNRECORDED_PLUGINS = frozenset({"hcclrank"})


def controlled_resources(state: JobState) -> dict[str, str]:
    """Volcano's `status.controlledResources`: `plugin-<name>` for each plugin whose
    resources were set up (as its `OnJobAdd` records it), `volume-pvc-<claim>` for each
    volume's claim."""
    spec = state.spec
    if spec is None or not (spec.plugins or spec.volumes):
        return {}
    resources = (
        {f"plugin-{name}": name for name in spec.plugins if name not in _UNRECORDED_PLUGINS}
        if state.resources_for
        else {}
    )
    for volume in spec.volumes:
        claim = volume.get("volumeClaimName")
        if isinstance(claim, str) and claim:
            resources[f"volume-pvc-{claim}"] = claim
    return dict(sorted(resources.items()))


def job_status(state: JobState, counts: PodCounts, now: float) -> JobStatus:
    """The whole `status` to write for this state at `now`.

    As in Volcano, `state.lastTransitionTime` and the current phase's condition move to
    `now` whenever anything in the status changes while the job syncs (Pending, Running,
    Restarting); in the other phases only a phase change moves them.
    """
    spec = state.spec
    status = JobStatus(
        state=StatusState(
            phase=state.phase,
            reason=state.reason,
            message=state.message,
            last_transition_time=to_rfc3339(state.last_transition) if state.phase else None,
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
        controlled_resources=controlled_resources(state),
        conditions=state.conditions,
    )
    previous = state.status
    if previous is None:
        return status
    if status == previous:
        return previous  # the same object: the caller's "changed?" is then an identity test
    if state.phase not in SYNCED_PHASES or state.last_transition >= now:
        return status
    stamp = to_rfc3339(now)
    return replace(
        status,
        state=replace(status.state, last_transition_time=stamp),
        conditions=append_condition(state.conditions, JobCondition(state.phase, stamp)),
    )

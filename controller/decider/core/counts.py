"""Pod counts and the Job status derived from the decider's state (Volcano's status fields,
with their meaning in Volcano: see `job_status`).

Counted as Volcano's syncJob/killJob count them: a pod being deleted is `terminating`
whatever its phase; a pod requested but not yet seen counts as Pending (it is created
Pending); `taskStatusCount` leaves terminating pods out. The counts are kept in the state
and moved by each change to its pods (`with_pods`), so that a status written for a job of
many pods does not count them all again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from msgspec.structs import replace

from lavalog.controller.decider.core.state import JobState, PodCounts, PodRecord, Replicas
from lavalog.events.timestamps import to_rfc3339
from lavalog.events.volcano.api import JobCondition, JobPhase, JobStatus, PodPhase, TaskState
from lavalog.events.volcano.api import JobState as StatusState

#: the phases the totals have a field for; any other one (Unknown) counts as `unknown`.
#: Keyed by the phases' plain strings, as pods carry them (a plain string compares faster
#: with a plain string than with a StrEnum): looked up at every pod change
_TOTALS: dict[str, int] = {
    PodPhase.PENDING.value: 0,
    PodPhase.RUNNING.value: 1,
    PodPhase.SUCCEEDED.value: 2,
    PodPhase.FAILED.value: 3,
}
_TERMINATING, _UNKNOWN = 4, 5
_PENDING: str = PodPhase.PENDING.value

#: one pod's record before and after a change; None where there is none
PodChange = tuple[PodRecord | None, PodRecord | None]


def count_pods(pods: Iterable[PodRecord], replicas: Mapping[str, int]) -> PodCounts:
    """One pass over the pods counting by task and phase; the totals are summed per task
    afterwards (a job has few tasks and many pods). A task's phases are in their sorted
    order, the order Volcano's status has them in (Go writes a map's keys sorted), and so
    whatever order the pods changed in. `replicas`: the admitted spec's, by task."""
    terminating = stray = 0
    by_task: dict[str, dict[str, int]] = {}
    for pod in pods:
        if pod.index >= replicas.get(pod.task, 0):
            stray += 1
        if pod.deleting:
            terminating += 1
            continue
        phases = by_task.get(pod.task)
        if phases is None:
            phases = by_task[pod.task] = {}
        phase = pod.phase or PodPhase.PENDING
        phases[phase] = phases.get(phase, 0) + 1
    totals = [0, 0, 0, 0, terminating, 0]
    for task, phases in by_task.items():
        for phase, number in phases.items():
            totals[_TOTALS.get(phase, _UNKNOWN)] += number
        by_task[task] = dict(sorted(phases.items()))
    pending, running, succeeded, failed, terminating, unknown = totals
    return PodCounts(pending, running, succeeded, failed, terminating, unknown, by_task, stray)


def counts_of(state: JobState) -> PodCounts:
    """The pods of `state` counted: as kept, or counted now for a state that kept none."""
    counts = state.counts
    return counts if counts is not None else count_pods(state.pods.values(), state.replicas.by_task)


def with_pods(
    state: JobState, pods: dict[str, PodRecord], changes: Iterable[PodChange]
) -> JobState:
    """`state` with `pods`, which differ from its pods by `changes`: its counts follow the
    changes (a task's entries copied) instead of the pods being counted again."""
    counts = state.counts
    replicas = state.replicas.by_task
    if counts is None:
        return replace(state, pods=pods, counts=count_pods(pods.values(), replicas))
    return replace(state, pods=pods, counts=moved(counts, changes, replicas))


def with_replicas(state: JobState, replicas: Replicas) -> JobState:
    """`state` with `replicas`: which pods are strays is judged again."""
    counts = state.counts
    if counts is not None:
        wanted = replicas.by_task
        stray = sum(1 for pod in state.pods.values() if pod.index >= wanted.get(pod.task, 0))
        if stray != counts.stray:
            counts = replace(counts, stray=stray)
    return replace(state, replicas=replicas, counts=counts)


def moved(
    counts: PodCounts, changes: Iterable[PodChange], replicas: Mapping[str, int]
) -> PodCounts:
    """`counts` after `changes`; the same object when the counts see none of them (a
    restart, a node, readiness).

    On the path of every pod change, so written out: each change counts its `old` out and
    its `new` in, all of them in one copy of the counts (a task's entry copied once,
    dropped once empty)."""
    totals: list[int] | None = None
    stray = counts.stray
    by_task = counts.by_task
    copied: set[str] = set()
    for old, new in changes:
        if old is not None and new is not None and old.task == new.task and old.index == new.index:
            if old.deleting or new.deleting:
                if old.deleting and new.deleting:
                    continue
            elif (old.phase or _PENDING) == (new.phase or _PENDING):
                continue
        if totals is None:
            totals = [counts.pending, counts.running, counts.succeeded, counts.failed]
            totals += (counts.terminating, counts.unknown)
            by_task = by_task.copy()
        for pod, n in ((old, -1), (new, 1)):
            if pod is None:
                continue
            if pod.index >= replicas.get(pod.task, 0):
                stray += n
            if pod.deleting:
                totals[_TERMINATING] += n
                continue
            phase = pod.phase or _PENDING
            totals[_TOTALS.get(phase, _UNKNOWN)] += n
            task = pod.task
            phases = by_task.get(task)
            if task not in copied:
                phases = by_task[task] = phases.copy() if phases is not None else {}
                copied.add(task)
            elif phases is None:
                phases = by_task[task] = {}
            number = phases.get(phase, 0) + n
            if not number:
                if len(phases) > 1:
                    del phases[phase]
                else:
                    del by_task[task]
            elif number == n:  # a phase new to the task: the phases stay in order
                phases[phase] = number
                by_task[task] = phases = dict(sorted(phases.items()))
            else:
                phases[phase] = number
    if totals is None:
        return counts
    pending, running, succeeded, failed, terminating, unknown = totals
    return PodCounts(pending, running, succeeded, failed, terminating, unknown, by_task, stray)


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

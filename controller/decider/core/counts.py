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
#: where `moved` counts a pod being deleted: not by its phase, with the terminating ones
_GOING = "<terminating>"
#: the totals' places: a phase's, or the terminating pods'
_SLOTS: dict[str, int] = {**_TOTALS, _GOING: _TERMINATING}

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
        phase = pod.phase or _PENDING
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

    On the path of every pod change, so written out: each change takes one from the
    place its `old` was counted in and adds one to the place its `new` is (a phase of
    its task, or terminating), all of them in one copy of the counts (a task's entry
    copied once, dropped once empty); a pod that keeps its task and index stays a stray
    or not."""
    totals: list[int] | None = None
    stray = counts.stray
    by_task = counts.by_task
    copied: list[str]  # the tasks whose entry in `by_task` is this call's copy
    for old, new in changes:
        was = "" if old is None else _GOING if old.deleting else old.phase or _PENDING
        now = "" if new is None else _GOING if new.deleting else new.phase or _PENDING
        if old is None or new is None or old.index != new.index or old.task != new.task:
            if old is not None and old.index >= replicas.get(old.task, 0):
                stray -= 1
            if new is not None and new.index >= replicas.get(new.task, 0):
                stray += 1
        elif was == now:
            continue
        if totals is None:
            totals = [counts.pending, counts.running, counts.succeeded, counts.failed]
            totals += (counts.terminating, counts.unknown)
            by_task = by_task.copy()
            copied = []
        if old is not None:
            totals[_SLOTS.get(was, _UNKNOWN)] -= 1
            if was is not _GOING:
                task = old.task
                phases = by_task[task]
                if task not in copied:
                    phases = by_task[task] = phases.copy()
                    copied.append(task)
                left = phases[was] - 1
                if left:
                    phases[was] = left
                elif len(phases) > 1:
                    del phases[was]
                else:
                    del by_task[task]
        if new is not None:
            totals[_SLOTS.get(now, _UNKNOWN)] += 1
            if now is not _GOING:
                _count_in(by_task, new.task, now, copied)
    if totals is None:
        return counts
    pending, running, succeeded, failed, terminating, unknown = totals
    return PodCounts(pending, running, succeeded, failed, terminating, unknown, by_task, stray)


def _count_in(by_task: dict[str, dict[str, int]], task: str, phase: str, copied: list[str]) -> None:
    """One more pod of `task` in `phase`, in `by_task` (a copy `moved` owns; its entries
    in `copied` are copies too). A phase new to the task keeps the phases in their order."""
    phases = by_task.get(task)
    number = None if phases is None else phases.get(phase)
    if phases is not None and number is not None:
        if task not in copied:
            phases = by_task[task] = phases.copy()
            copied.append(task)
        phases[phase] = number + 1
        return
    by_task[task] = {phase: 1} if phases is None else dict(sorted((*phases.items(), (phase, 1))))
    copied.append(task)


#: phases whose every status change is stamped with a new `lastTransitionTime`, as
#: Volcano's `syncJob` does; in the others only a phase change is (its `killJob`)
SYNCED_PHASES = frozenset({JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING})


def append_condition(
    conditions: tuple[JobCondition, ...], condition: JobCondition
) -> tuple[JobCondition, ...]:
    """Volcano's `appendJobCondition`: the entry of the same phase goes, the new one is last."""
    if conditions and conditions[-1].status == condition.status:
        return (*conditions[:-1], condition)  # the phase written last again: most writes
    kept = [c for c in conditions if c.status != condition.status]  # a list: ~2x a generator
    kept.append(condition)
    return tuple(kept)


#: plugins whose `OnJobAdd` records nothing in `controlledResources` (Volcano's hcclrank
#: only annotates pods)
_UNRECORDED_PLUGINS = frozenset({"hcclrank"})
#: the `controlledResources` of a job without plugins or volumes (most jobs)
_NO_RESOURCES: dict[str, str] = {}


def controlled_resources(state: JobState) -> dict[str, str]:
    """Volcano's `status.controlledResources`: `plugin-<name>` for each plugin whose
    resources were set up (as its `OnJobAdd` records it), `volume-pvc-<claim>` for each
    volume's claim."""
    spec = state.spec
    if spec is None or not (spec.plugins or spec.volumes):
        return _NO_RESOURCES
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
    Restarting); in the other phases only a phase change moves them. (Built at every step
    that decides, nearly always because pods moved: a status whose pod totals moved where
    a change is stamped is built stamped at once, without comparing the rest.)
    """
    previous = state.status
    stamps = state.phase in SYNCED_PHASES and state.last_transition < now
    if (
        stamps
        and previous is not None
        and (
            counts.pending != previous.pending
            or counts.running != previous.running
            or counts.terminating != previous.terminating
            or counts.succeeded != previous.succeeded
            or counts.failed != previous.failed
            or counts.unknown != previous.unknown
        )
    ):
        return _status(state, counts, stamped=now)
    status = _status(state, counts, stamped=None)
    if previous is None:
        return status
    if status == previous:
        return previous  # the same object: the caller's "changed?" is then an identity test
    return _status(state, counts, stamped=now) if stamps else status


def _status(state: JobState, counts: PodCounts, *, stamped: float | None) -> JobStatus:
    """The status of `state` with `counts`: stamped at `stamped` (its phase's condition
    moved there), or as last stamped."""
    phase, conditions = state.phase, state.conditions
    if stamped is None:
        at = to_rfc3339(state.last_transition) if phase else None
    else:
        at = to_rfc3339(stamped)
        conditions = append_condition(conditions, JobCondition(phase, at))
    spec = state.spec
    return JobStatus(
        StatusState(phase, state.reason, state.message, at),
        spec.min_available if spec is not None else 0,
        _task_states(counts.by_task),
        counts.pending,
        counts.running,
        counts.succeeded,
        counts.failed,
        counts.terminating,
        counts.unknown,
        state.version,
        state.retry_count,
        state.running_duration,
        controlled_resources(state),
        conditions,
    )


def _task_states(by_task: dict[str, dict[str, int]]) -> dict[str, TaskState]:
    """`taskStatusCount`: each task's pods by phase, the tasks in their sorted order."""
    states = {}
    for task in sorted(by_task):
        states[task] = TaskState(by_task[task])
    return states

"""Turn an observation into the Volcano event it means for the job (the `Request`).

As Volcano's `job_controller_handler.go` does with old/new object pairs, but with the
decider's own record of each pod as "old": a pod first seen already Failed still fires
PodFailed (volcano#3967), and a deletion the decider itself asked for is not an
eviction.
"""

from __future__ import annotations

import msgspec

from lavalog.controller.decider.core.counts import counts_of
from lavalog.controller.decider.core.evolve import is_stale
from lavalog.controller.decider.core.state import JobState, PodRecord
from lavalog.events.decisions import PodFailure, PolicyRef, TimerScheduled
from lavalog.events.observations import (
    AnyObservation,
    CommandIssued,
    JobObserved,
    PodDeleted,
    PodGroupObserved,
    PodObserved,
    PodsListed,
)
from lavalog.events.volcano.api import Event, PodPhase


# made at nearly every step and holding no reference cycle: not tracked by the cyclic GC
class Trigger(msgspec.Struct, frozen=True, gc=False):
    """What happened, in Volcano's vocabulary, and to which task and pod."""

    event: str
    task: str = ""
    pod: str = ""
    exit_code: int | None = None
    #: job version of the pod the event came from; older than the job's means stale
    job_version: int | None = None
    #: set when the action is already chosen (a command, a delayed action coming due)
    action: str = ""
    policy: PolicyRef | None = None
    timer_id: str = ""
    #: how the pod of a PodFailed or PodEvicted went (container, reason, node, disruption)
    failure: PodFailure | None = None


OUT_OF_SYNC = Trigger(event=Event.OUT_OF_SYNC)
#: the events whose trigger says how the pod went (a failure, or an eviction)
POD_ENDS = frozenset({Event.POD_FAILED, Event.POD_EVICTED})

# What every pod observation is compared with, bound once: on Python 3.11 each
# `Enum.MEMBER` is looked up through the enum type's `__getattr__` hook, and a pod's phase
# (a plain string, as decoded) compares faster with a plain string than with a StrEnum.
_PENDING, _RUNNING = PodPhase.PENDING.value, PodPhase.RUNNING.value
_SUCCEEDED, _FAILED = PodPhase.SUCCEEDED.value, PodPhase.FAILED.value
_ALIVE = frozenset({_PENDING, _RUNNING})
_OUT_OF_SYNC, _POD_PENDING, _POD_RUNNING = Event.OUT_OF_SYNC, Event.POD_PENDING, Event.POD_RUNNING
_POD_FAILED, _POD_EVICTED = Event.POD_FAILED, Event.POD_EVICTED
_TASK_COMPLETED, _TASK_FAILED = Event.TASK_COMPLETED, Event.TASK_FAILED


def derive_trigger(before: JobState, after: JobState, observation: AnyObservation) -> Trigger:
    if type(observation) is PodObserved:
        return _pod_changed(before.pods.get(observation.pod), after, observation)
    if type(observation) is PodDeleted:
        return _pod_gone(before.pods.get(observation.pod), observation)
    if type(observation) is PodsListed:
        return _pods_vanished(before, after)
    if type(observation) is PodGroupObserved:
        previous = before.podgroup.phase if before.podgroup is not None else ""
        if observation.phase == "Unknown" and previous != "Unknown" and not observation.deleted:
            return Trigger(event=Event.UNKNOWN)
        return OUT_OF_SYNC
    if type(observation) is CommandIssued:
        if observation.command in before.handled_commands:
            return OUT_OF_SYNC  # the same Command seen again (a relist): act once
        return Trigger(event=Event.COMMAND_ISSUED, action=observation.action)
    if type(observation) is JobObserved:
        spec_changed = before.spec is not None and after.spec != before.spec
        return Trigger(event=Event.JOB_UPDATED) if spec_changed else OUT_OF_SYNC
    return OUT_OF_SYNC


def timer_trigger(timer: TimerScheduled) -> Trigger:
    """The trigger of a delayed action coming due: the original event, action decided."""
    return Trigger(
        event=timer.trigger,
        task=timer.task,
        pod=timer.pod,
        exit_code=timer.exit_code,
        action=timer.action,
        policy=timer.policy,
        timer_id=timer.timer_id,
        failure=timer.failure or None,
    )


def _pod_changed(old: PodRecord | None, job: JobState, pod: PodObserved) -> Trigger:
    event, exit_code = _pod_event(old, job, pod)
    failure = None
    if event in POD_ENDS:
        failure = _failure(
            container=pod.container or "",
            reason=pod.reason,
            node=pod.node,
            disruption=pod.disruption or "",
        )
    return Trigger(
        event=event,
        task=pod.task,
        pod=pod.pod,
        exit_code=exit_code,
        job_version=pod.job_version,
        failure=failure,
    )


def _failure(*, container: str, reason: str, node: str, disruption: str) -> PodFailure | None:
    """The parts known of how a pod went; None when nothing is (a log written before)."""
    if not (container or reason or node or disruption):
        return None
    return PodFailure(container=container, reason=reason, node=node, disruption=disruption)


def _pod_event(
    previous: PodRecord | None, job: JobState, pod: PodObserved
) -> tuple[str, int | None]:
    """The event a pod's change means, and the exit code it carries (PodFailed only).
    `previous`: the decider's record of the pod's name before this observation."""
    if is_stale(previous, pod):
        return _OUT_OF_SYNC, None  # a late copy of a phase the pod has left
    old = previous
    if old is not None and old.uid not in ("", pod.pod_uid):
        old = None  # another incarnation of the same name
    if pod.deleting:
        if old is not None and (old.deleting or old.killed):
            return _OUT_OF_SYNC, None
        return _POD_EVICTED, None
    old_phase = old.phase if old is not None else ""
    if pod.phase == _FAILED:
        if old_phase != _FAILED:
            return _POD_FAILED, pod.exit_code
        return _OUT_OF_SYNC, None
    if pod.phase == _SUCCEEDED:
        if old_phase != _SUCCEEDED and _task_completed(job, pod.task):
            return _TASK_COMPLETED, None
        return _OUT_OF_SYNC, None
    if pod.phase in _ALIVE:
        if _task_failed(job, pod, previous):
            return _TASK_FAILED, None
        if pod.phase != old_phase:
            return (_POD_PENDING if pod.phase == _PENDING else _POD_RUNNING), None
    return _OUT_OF_SYNC, None


def pod_fact_event(
    previous: PodRecord | None, job: JobState, observation: PodObserved | PodDeleted
) -> str:
    """The event a pod's change or deletion means (its trigger's), without the trigger.
    `previous`: the decider's record of the pod's name before it; `job`: the state after."""
    if type(observation) is PodObserved:
        return _pod_event(previous, job, observation)[0]
    return _OUT_OF_SYNC if previous is None or _no_eviction(previous) else _POD_EVICTED


def _no_eviction(gone: PodRecord) -> bool:
    """The deletion of a known pod is no eviction: ours, or its eviction was reported."""
    return gone.killed or gone.deleting


def _pod_gone(old: PodRecord | None, pod: PodDeleted) -> Trigger:
    if old is None or _no_eviction(old):
        return Trigger(event=_OUT_OF_SYNC, task=pod.task, pod=pod.pod, job_version=pod.job_version)
    failure = _failure(
        container=pod.container or "",
        reason=pod.reason,
        node=pod.node or old.node,
        disruption=pod.disruption or old.disruption,
    )
    return _evicted(pod.task, pod.pod, pod.job_version, failure)


def _pods_vanished(before: JobState, after: JobState) -> Trigger:
    """Pods the list lacks were deleted while nobody watched: an eviction unless ours."""
    for name in sorted(set(before.pods) - set(after.pods)):
        pod = before.pods[name]
        if not (pod.killed or pod.deleting):
            failure = _failure(container="", reason="", node=pod.node, disruption=pod.disruption)
            return _evicted(pod.task, pod.name, pod.version, failure)
    return OUT_OF_SYNC


def _evicted(task: str, pod: str, job_version: int, failure: PodFailure | None) -> Trigger:
    return Trigger(
        event=Event.POD_EVICTED, task=task, pod=pod, job_version=job_version, failure=failure
    )


def _task_completed(job: JobState, task_name: str) -> bool:
    """Volcano's TaskCompleted: every replica of the task has succeeded."""
    task = job.spec.task(task_name) if job.spec is not None else None
    if task is None or task.replicas <= 0:
        return False
    succeeded = counts_of(job).by_task.get(task_name, {}).get(PodPhase.SUCCEEDED, 0)
    return succeeded >= task.replicas


def _task_failed(job: JobState, pod: PodObserved, previous: PodRecord | None) -> bool:
    """Volcano's TaskFailed (`jobCache.TaskFailed`): the restarts of every container, init
    containers included, of the task's pending and running pods add up to the task's
    `maxRetry`. Fired once, by the change that brings the sum there (Volcano fires it at
    every update of such a pod from then on)."""
    record = job.pods.get(pod.pod)
    if record is None or not record.restart_count:
        return False  # never restarted: no rise (most pod changes)
    added = _counted_restarts(record) - _counted_restarts(previous)
    if added <= 0:
        return False  # only a rise of this pod's restarts can bring the sum up
    task = job.spec.task(pod.task) if job.spec is not None else None
    if task is None or task.replicas <= 0 or task.max_retry <= 0:
        return False
    total = sum(_counted_restarts(other) for other in job.pods.values() if other.task == task.name)
    return total - added < task.max_retry <= total


def _counted_restarts(record: PodRecord | None) -> int:
    """A pod's restarts as TaskFailed counts them: only while it is pending or running."""
    if record is None or record.phase not in _ALIVE:
        return 0
    return record.restart_count

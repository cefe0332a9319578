"""The three things a phase handler does, as in Volcano: kill the job, kill a target, sync.

Each ends the same way: count the pods and ask the handler's status callback whether
the job enters a new phase (`UpdateStatus`, Volcano's `UpdateStatusFn`).
"""

from __future__ import annotations

from collections.abc import Callable

from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.state import JobState, PodCounts, PodGroupRecord, PodRecord
from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.transitions import CREATING_PHASES, Transition, enter_phase
from lavalog.events.decisions import (
    PluginResourcesDelete,
    PluginResourcesEnsure,
    PodGroupCreate,
    PodRef,
    PodsCreate,
    PodsKill,
)
from lavalog.events.topics import split_job_key
from lavalog.events.volcano.api import Action, DependsOn, JobPhase, JobSpec, PodPhase

UpdateStatus = Callable[[Step, PodCounts], Transition | None]

RETAIN_NONE: frozenset[str] = frozenset()
#: finished pods are kept (their logs and exit codes stay visible)
RETAIN_SOFT = frozenset({PodPhase.SUCCEEDED, PodPhase.FAILED})
#: the actions that kill a target (`kill_target`); Volcano's next sync makes its pods again
TARGET_KILLS = frozenset({Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION})


def kill_job(
    step: Step,
    retain: frozenset[str],
    update: UpdateStatus | None,
    *,
    reason: str,
    last_run_kept: bool = True,
) -> None:
    """Delete every pod not in a `retain` phase (on the last retry keep finished pods,
    unless `last_run_kept` is False: a restart that counts no retry is never the last),
    and the plugins' objects, which the job's next run, if any, creates afresh."""
    state = step.state
    if state.deleting:
        return
    if last_run_kept and state.retry_count >= step.spec.max_retry - 1:
        retain = RETAIN_SOFT
    victims = [pod for pod in state.pods.values() if not pod.deleting and pod.phase not in retain]
    _kill(step, victims, reason=reason)
    if state.resources_for:
        step.emit(PluginResourcesDelete, plugins=step.spec.plugins, reason=reason)
    settle(step, update)


def kill_target(step: Step, request: ActionRequest, update: UpdateStatus) -> None:
    """RestartTask kills every pod of the task; RestartPod kills the one pod;
    RestartPartition the pods of the partition the event's pod belongs to."""
    state = step.state
    if state.deleting:
        return
    trigger = request.trigger
    if request.action == Action.RESTART_POD:
        victims = [pod for pod in state.pods.values() if pod.name == trigger.pod]
    elif request.action == Action.RESTART_PARTITION:
        victims = partition_pods(step, request)
    else:
        victims = [pod for pod in state.pods.values() if pod.task == trigger.task]
    victims = [pod for pod in victims if not pod.deleting]
    _kill(step, victims, reason=request.action)
    step.killed_targets = step.killed_targets or bool(victims)
    settle(step, update)


def partition_pods(step: Step, request: ActionRequest) -> list[PodRecord]:
    """The pods of the partition of the event's pod (index // partitionSize within its
    task); none when the task has no `partitionPolicy` or the event names no pod."""
    trigger = request.trigger
    task = step.spec.task(trigger.task)
    if task is None or task.partition_policy is None or not trigger.pod:
        return []
    policy = task.partition_policy
    known = step.state.pods.get(trigger.pod)
    # an evicted pod is gone from the state: its index is the last part of its name
    index = known.index if known is not None else int(trigger.pod.rsplit("-", 1)[-1])
    partition = policy.partition_of(index)
    return [
        pod
        for pod in step.state.pods.values()
        if pod.task == task.name and policy.partition_of(pod.index) == partition
    ]


def sync_job(step: Step, update: UpdateStatus | None) -> None:
    """Create what is missing, delete what is surplus, then update the phase.

    Pods are created only once the gang scheduler has admitted the PodGroup (its phase
    is past Pending), only in Pending and Running, and never when the job is about to
    leave them: a job whose retries are exhausted gets no new pods (volcano#1718). The
    phase is then judged on the pods as the sync leaves them (Volcano's order).
    """
    state = step.state
    if state.deleting:
        return
    lost = step.before.podgroup is not None  # deleted under it (Volcano recreates it)
    if state.podgroup is None and (lost or state.phase in ("", JobPhase.PENDING)):
        _initiate(step)
    elif state.podgroup is not None and _gang_changed(step):
        _emit_podgroup(step)  # Volcano's createOrUpdatePodGroup: a scaled gang's new size
    spec = step.spec
    replicas = step.state.replicas.by_task
    if resources_outdated(step.state):
        step.emit(
            PluginResourcesEnsure,
            plugins=spec.plugins,
            task_replicas=replicas,
            job_generation=step.state.generation,
        )
    transition = update(step, step.counts()) if update else None
    phase_after = step.state.phase if transition is None else transition.phase
    if phase_after in CREATING_PHASES:
        pods = step.state.pods
        _reconcile_pods(step, spec)
        if update is not None and step.state.pods is not pods:
            # Volcano judges the status its sync ends with: the pods it made count as
            # Pending, the surplus it deleted as Terminating
            transition = update(step, step.counts())
    if transition is not None:
        enter_phase(step, transition)


def settle(step: Step, update: UpdateStatus | None) -> None:
    """Apply the status callback to the pods as they are now."""
    if update is None:
        return
    transition = update(step, step.counts())
    if transition is not None:
        enter_phase(step, transition)


def resources_outdated(state: JobState) -> bool:
    """The job has plugins whose objects were not ensured for its replicas: a sync
    ensures them."""
    spec = state.spec
    return spec is not None and bool(spec.plugins) and state.resources_for != state.replicas.by_task


def pods_in_place(state: JobState, counts: PodCounts) -> bool:
    """No pod beyond its task's replicas and none missing (or the PodGroup not admitted
    yet, so none is made): a sync in a phase that makes pods makes and kills none."""
    if counts.stray:
        return False
    return len(state.pods) >= state.replicas.total or not _gang_admitted(state.podgroup)


def _gang_admitted(podgroup: PodGroupRecord | None) -> bool:
    """The gang scheduler admitted the PodGroup (its phase is past Pending): pods are made."""
    return podgroup is not None and podgroup.phase not in ("", "Pending")


def podgroup_name(state: JobState) -> str:
    """`<job>-<uid>`, as current Volcano names it, so a reused job name gets a new gang."""
    return f"{split_job_key(state.key)[1]}-{state.uid}"


def _initiate(step: Step) -> None:
    if not step.state.phase:
        enter_phase(step, Transition(JobPhase.PENDING, reason="JobAccepted"))
    _emit_podgroup(step)


def _gang_changed(step: Step) -> bool:
    """This step admitted a spec that sizes or places the gang differently (replicas,
    minAvailable, queue, priority): the existing PodGroup must follow it (once: a sync
    in the phase the step moves the job to finds it done)."""
    before, now = step.before.spec, step.state.spec
    if before is None or now is None or before is now:
        return False
    if any(isinstance(decision, PodGroupCreate) for decision in step.decisions):
        return False
    return _podgroup_fields(before) != _podgroup_fields(now)


def _podgroup_fields(spec: JobSpec) -> tuple[object, ...]:
    return (
        spec.min_available,
        spec.queue,
        spec.priority_class_name,
        [(t.name, t.replicas, t.min_available, t.partition_policy, t.template) for t in spec.tasks],
    )


def _emit_podgroup(step: Step) -> None:
    spec = step.spec
    step.emit(
        PodGroupCreate,
        podgroup=podgroup_name(step.state),
        min_member=spec.min_available,
        queue=spec.queue,
        priority_class_name=spec.priority_class_name,
        min_task_member={
            task.name: task.replicas if task.min_available is None else task.min_available
            for task in spec.tasks
        },
        job_generation=step.state.generation,
    )


def _reconcile_pods(step: Step, spec: JobSpec) -> None:
    """Kill pods beyond a task's replicas (scale down); create the missing ones once the
    PodGroup is admitted. When every pod fills a distinct wanted slot and their number is
    the replica total, nothing is missing; the pods are gone through only when some are
    strays (beyond their task's replicas, which the counts keep)."""
    state = step.state
    counts = step.counts()
    if pods_in_place(state, counts):
        return  # most syncs
    surplus: list[PodRecord] = []
    filled = len(state.pods)
    if counts.stray:
        replicas = state.replicas.by_task
        for pod in state.pods.values():
            if pod.index >= replicas.get(pod.task, 0):
                filled -= 1
                if not pod.deleting:
                    surplus.append(pod)
    podgroup = state.podgroup
    if filled < state.replicas.total and podgroup is not None and _gang_admitted(podgroup):
        _create_missing(step, spec, podgroup.name)
    if surplus:
        _kill(step, surplus, reason="ScaleDown")


def _create_missing(step: Step, spec: JobSpec, podgroup: str) -> None:
    state = step.state
    job_name = split_job_key(state.key)[1]
    refs: list[PodRef] = []
    for task in spec.tasks:
        if task.depends_on is not None and not _dependencies_ready(state, spec, task.depends_on):
            continue
        for index in range(task.replicas):
            name = f"{job_name}-{task.name}-{index}"
            if name not in state.pods:
                refs.append(PodRef(name=name, task=task.name, index=index))
    if refs:
        step.emit(
            PodsCreate,
            job_version=state.version,
            podgroup=podgroup,
            pods=tuple(refs),
            job_generation=state.generation,
        )


def _dependencies_ready(state: JobState, spec: JobSpec, depends_on: DependsOn) -> bool:
    """Volcano's `waitDependsOnTaskMeetCondition`: every task depended on is ready, or
    one of them with `iteration: any` (and more than one named)."""
    ready = [_task_ready(state, spec, name) for name in depends_on.name]
    if depends_on.iteration == "any" and len(ready) > 1:
        return any(ready)
    return all(ready)


def _task_ready(state: JobState, spec: JobSpec, task_name: str) -> bool:
    """Volcano's `isDependsOnPodsReady`: minAvailable of the task's pods (by name, index
    below its replicas) have succeeded, or run with every container ready."""
    task = spec.task(task_name)
    if task is None:
        return False
    needed = task.replicas if task.min_available is None else task.min_available
    ready = sum(
        1
        for pod in state.pods.values()
        if pod.task == task_name and pod.index < task.replicas and _pod_ready(pod)
    )
    return ready >= needed


def _pod_ready(pod: PodRecord) -> bool:
    if pod.phase == PodPhase.RUNNING:
        return pod.containers_ready
    return pod.phase == PodPhase.SUCCEEDED


def _kill(step: Step, victims: list[PodRecord], *, reason: str) -> None:
    if not victims:
        return
    refs = tuple(
        PodRef(name=pod.name, task=pod.task, index=pod.index, uid=pod.uid)
        for pod in sorted(victims, key=lambda pod: pod.name)
    )
    step.emit(PodsKill, reason=reason, pods=refs)

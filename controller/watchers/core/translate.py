"""Kubernetes objects to observations, publishing only the changes that matter.

Pure: no I/O and no clock (the caller passes `time`, its wall clock when it saw the
change). Each kind has an `observe` (object to observation, or None when the object is
not about a Volcano job), a `deleted` and a `summary`: the few fields whose change is
worth a message. A `Translator` remembers, per object uid, the summary it last
published and drops events that change none of it, so status-condition churn,
resourceVersion bumps, label edits and the controller's own Job status writes never
reach Kafka.

Ids are deterministic, so that the same fact seen again (after a relist, a restart or
a change of leader) has the same id and consumers drop it:

* pods: `pod/<uid>/<phase>/<digest of the summary>`. A pod's summary only moves
  forward (phase Pending, Running, then terminal; restart counts and deletion only
  grow), so the content names the fact, even when unimportant writes changed the
  resourceVersion meanwhile. Readiness goes back and forth while the pod runs, so a
  running pod's digest also covers when it last turned (ContainersReady's time).
* PodGroups: `podgroup/<uid>/<resourceVersion>`, because their phase goes back and
  forth (Running, Unknown, Running) and the content would repeat.
* Jobs: `job/<uid>/<generation>`, `.../deleting`; Commands: `command/<uid>`;
  deletions: `<kind>/<uid>/deleted`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

import msgspec

from lavalog.controller.watchers.core.objects import (
    Command,
    Condition,
    ContainerStatus,
    Job,
    KubeObject,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodGroup,
    PodStatus,
    Terminated,
)
from lavalog.events.observations import (
    EXTENSION_PREFIX,
    MAX_TERMINATION_MESSAGE,
    AnyObservation,
    CommandIssued,
    ContainerEnd,
    JobDeleted,
    JobObserved,
    PodDeleted,
    PodGroupCondition,
    PodGroupObserved,
    PodObserved,
)
from lavalog.events.timestamps import from_rfc3339
from lavalog.events.topics import job_key
from lavalog.events.volcano import labels
from lavalog.events.volcano.api import API_VERSION, GROUP, KIND
from lavalog.events.volcano.podgroups import UNSCHEDULABLE, newest_true

#: the pod condition Kubernetes writes on a pod it disrupts (k8s.io/api/core/v1)
DISRUPTION_TARGET = "DisruptionTarget"

_TERMINAL = ("Succeeded", "Failed")

T = TypeVar("T", bound=KubeObject)
#: the fields of an object whose change is worth publishing
Summary = Hashable


def job_owner(meta: ObjectMeta) -> OwnerReference | None:
    """The Volcano Job controlling an object, from its ownerReferences."""
    for ref in meta.owner_references:
        if ref.controller and ref.kind == KIND and ref.api_version.startswith(f"{GROUP}/"):
            return ref
    return None


# pods ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _PodIdentity:
    key: str
    job_uid: str
    task: str
    index: int
    job_version: int


def _pod_identity(pod: Pod) -> _PodIdentity | None:
    """Which job, task, replica and job version a pod is, by Volcano's labels; None if
    the pod is not a Volcano job's."""
    meta = pod.metadata
    owner = job_owner(meta)
    task = _label(meta, labels.TASK_SPEC)
    if owner is None or not task:
        return None
    try:
        index = int(_label(meta, labels.TASK_INDEX) or "0")
        version = int(_label(meta, labels.JOB_VERSION) or "0")
    except ValueError:
        return None
    return _PodIdentity(job_key(meta.namespace, owner.name), owner.uid, task, index, version)


def _label(meta: ObjectMeta, name: str) -> str:
    """Volcano writes these both as labels and annotations; either will do."""
    return meta.labels.get(name) or meta.annotations.get(name) or ""


def _failed_container(status: PodStatus) -> ContainerStatus | None:
    """The container whose exit code is the pod's, as Kubernetes' podFailurePolicy finds
    it (`matchOnExitCodes`): the first terminated regular container whose code is not 0,
    else the first such init container. Volcano reads `containerStatuses[0]`, which the
    kubelet sorts by name: in a pod with a sidecar that is often a container that
    exited 0 (volcano#5452)."""
    for containers in (status.container_statuses, status.init_container_statuses):
        for container in containers:
            terminated = container.state.terminated
            if terminated is not None and terminated.exit_code != 0:
                return container
    return None


def _first_terminated(containers: tuple[ContainerStatus, ...]) -> Terminated | None:
    """The first container that terminated: whose reason a pod that ended without a
    failed container (one that succeeded) reports."""
    for container in containers:
        if container.state.terminated is not None:
            return container.state.terminated
    return None


def last_words(message: str) -> str:
    """A termination message cut to its last MAX_TERMINATION_MESSAGE bytes (what the
    kubelet itself keeps of a file, `tail.ReadAtMost`), on a character boundary."""
    data = message.encode()
    if len(data) <= MAX_TERMINATION_MESSAGE:
        return message
    return data[-MAX_TERMINATION_MESSAGE:].decode(errors="ignore")


def _terminated_containers(status: PodStatus) -> Iterator[tuple[str, Terminated, bool]]:
    """Every terminated container's name, end and whether it is an init container:
    regular ones, then init ones."""
    for containers, init in (
        (status.container_statuses, False),
        (status.init_container_statuses, True),
    ):
        for container in containers:
            if container.state.terminated is not None:
                yield container.name, container.state.terminated, init


def _container_ends(status: PodStatus) -> tuple[ContainerEnd, ...]:
    return tuple(
        ContainerEnd(
            name=name,
            exit_code=terminated.exit_code,
            reason=terminated.reason,
            message=last_words(terminated.message),
            init=init,
        )
        for name, terminated, init in _terminated_containers(status)
    )


def _ends(status: PodStatus) -> tuple[tuple[str, int, str], ...]:
    """What matters of the terminated containers: a container ending is news even while
    its pod runs on (a sidecar, or a main container beside one)."""
    return tuple(
        (name, terminated.exit_code, terminated.reason)
        for name, terminated, _ in _terminated_containers(status)
    )


def _disruption(status: PodStatus) -> str:
    """The reason of a `DisruptionTarget=True` condition: who is ending the pod though it
    did nothing wrong. Kubernetes writes it just before the deletion it announces (or, the
    kubelet, with the pod's failure), so it is published with that change, not alone."""
    for condition in status.conditions:
        if condition.type == DISRUPTION_TARGET and condition.status == "True":
            return condition.reason
    return ""


def _time(text: str | None) -> float | None:
    return from_rfc3339(text) if text else None


def _started(containers: tuple[ContainerStatus, ...]) -> float | None:
    """When the first container first ran (a restarted container keeps its previous run
    in `lastState`)."""
    times = [
        from_rfc3339(started)
        for c in containers
        for state in (c.last_state, c.state)
        for started in (
            state.terminated.started_at if state.terminated else None,
            state.running.started_at if state.running else None,
        )
        if started
    ]
    return min(times, default=None)


def _finished(containers: tuple[ContainerStatus, ...]) -> float | None:
    times = [
        c.state.terminated.finished_at
        for c in containers
        if c.state.terminated is not None and c.state.terminated.finished_at
    ]
    return max(from_rfc3339(t) for t in times) if times else None


def _scheduled(pod: Pod) -> float | None:
    for condition in pod.status.conditions:
        if condition.type == "PodScheduled" and condition.status == "True":
            return _time(condition.last_transition_time)
    return None


class PodFacts(NamedTuple):
    """What matters about a pod: a change in any of these is published."""

    phase: str
    exit_code: int | None
    reason: str
    node: str
    restart_count: int
    #: every container's restarts, init containers too (Volcano's TaskFailed)
    total_restarts: int
    #: Running with every container ready (Volcano's dependsOn); False in other phases,
    #: so readiness is news only while the pod runs
    containers_ready: bool
    deleting: bool
    #: each terminated container's name, exit code and reason
    ends: tuple[tuple[str, int, str], ...]


def _pod_facts(pod: Pod, ended: _Ended) -> PodFacts:
    status = pod.status
    containers = status.container_statuses
    failed = ended.failed.state.terminated if ended.failed is not None else None
    return PodFacts(
        phase=status.phase,
        exit_code=failed.exit_code if failed is not None else None,
        reason=status.reason or (ended.terminated.reason if ended.terminated else ""),
        node=pod.spec.node_name,
        restart_count=max((c.restart_count for c in containers), default=0),
        total_restarts=sum(c.restart_count for c in status.init_container_statuses)
        + sum(c.restart_count for c in containers),
        containers_ready=status.phase == "Running" and all(c.ready for c in containers),
        deleting=pod.metadata.deletion_timestamp is not None,
        ends=_ends(status),
    )


def _ready_since(pod: Pod) -> str | None:
    """When the pod's containers last became ready or unready (the ContainersReady
    condition's time): readiness goes back and forth, so this tells its turns apart."""
    for condition in pod.status.conditions:
        if condition.type == "ContainersReady":
            return condition.last_transition_time
    return None


class _Ended(NamedTuple):
    """For a pod that has ended: the container whose end is the pod's (its reason), and
    for a failed pod the one whose exit code is the pod's."""

    terminated: Terminated | None = None
    failed: ContainerStatus | None = None


_RUNNING_ON = _Ended()


def _ended(pod: Pod) -> _Ended:
    status = pod.status
    if status.phase not in _TERMINAL:
        return _RUNNING_ON
    failed = _failed_container(status) if status.phase == "Failed" else None
    if failed is not None:
        return _Ended(failed.state.terminated, failed)
    return _Ended(_first_terminated(status.container_statuses))


def pod_summary(pod: Pod) -> PodFacts | None:
    return _pod_facts(pod, _ended(pod)) if _pod_identity(pod) else None


def observe_pod(pod: Pod, time: float) -> PodObserved | None:
    who = _pod_identity(pod)
    if who is None:
        return None
    status = pod.status
    ended = _ended(pod)
    terminated = ended.terminated
    facts = _pod_facts(pod, ended)
    named = (facts, _ready_since(pod)) if facts.phase == "Running" else facts
    digest = hashlib.blake2b(repr(named).encode(), digest_size=6).hexdigest()
    return PodObserved(
        id=f"pod/{pod.metadata.uid}/{facts.phase or 'Unknown'}/{digest}",
        key=who.key,
        job_uid=who.job_uid,
        time=time,
        pod=pod.metadata.name,
        pod_uid=pod.metadata.uid,
        task=who.task,
        index=who.index,
        job_version=who.job_version,
        phase=facts.phase,
        exit_code=facts.exit_code,
        reason=facts.reason,
        message=status.message or (last_words(terminated.message) if terminated else ""),
        node=facts.node,
        container=ended.failed.name if ended.failed is not None else msgspec.UNSET,
        containers=_container_ends(status) if facts.ends else msgspec.UNSET,
        disruption=_disruption(status) or msgspec.UNSET,
        restart_count=facts.restart_count,
        total_restarts=facts.total_restarts,
        containers_ready=facts.containers_ready,
        deleting=facts.deleting,
        created=_time(pod.metadata.creation_timestamp),
        scheduled=_scheduled(pod),
        started=_started(status.container_statuses),
        finished=_finished(status.container_statuses) if status.phase in _TERMINAL else None,
    )


def pod_deleted(pod: Pod, time: float) -> PodDeleted | None:
    seen = observe_pod(pod, time)
    if seen is None:
        return None
    return PodDeleted(
        id=f"pod/{seen.pod_uid}/deleted",
        key=seen.key,
        job_uid=seen.job_uid,
        time=time,
        pod=seen.pod,
        pod_uid=seen.pod_uid,
        task=seen.task,
        index=seen.index,
        job_version=seen.job_version,
        phase=seen.phase,
        exit_code=seen.exit_code,
        reason=seen.reason,
        node=seen.node or msgspec.UNSET,
        container=seen.container,
        containers=seen.containers,
        disruption=seen.disruption,
    )


# jobs ---------------------------------------------------------------------------------


def observe_job(job: Job, time: float) -> JobObserved:
    meta = job.metadata
    deleting = meta.deletion_timestamp is not None
    return JobObserved(
        id=f"job/{meta.uid}/{meta.generation}" + ("/deleting" if deleting else ""),
        key=job_key(meta.namespace, meta.name),
        job_uid=meta.uid,
        time=time,
        generation=meta.generation,
        spec=job.spec,
        deleting=deleting,
        status=job.status if job.status is not None and job.status.state.phase else None,
        created=_time(meta.creation_timestamp),
        extensions=_extensions(meta) or msgspec.UNSET,
    )


def _extensions(meta: ObjectMeta) -> dict[str, str]:
    """lavalog's own annotations; other annotations do not reach the log."""
    return {
        name: value for name, value in meta.annotations.items() if name.startswith(EXTENSION_PREFIX)
    }


def job_deleted(job: Job, time: float) -> JobDeleted:
    meta = job.metadata
    return JobDeleted(
        id=f"job/{meta.uid}/deleted",
        key=job_key(meta.namespace, meta.name),
        job_uid=meta.uid,
        time=time,
    )


def job_summary(job: Job) -> Summary:
    """A new generation or the start of deletion; status writes change neither."""
    return (job.metadata.generation, job.metadata.deletion_timestamp is not None)


# PodGroups ----------------------------------------------------------------------------


def _unschedulable(group: PodGroup) -> Condition | None:
    for condition in group.status.conditions:
        if condition.type == UNSCHEDULABLE and condition.status == "True":
            return condition
    return None


def _conditions(group: PodGroup) -> tuple[PodGroupCondition, ...]:
    return tuple(
        PodGroupCondition(
            type=condition.type,
            status=condition.status,
            reason=condition.reason,
            message=condition.message,
            last_transition_time=_time(condition.last_transition_time),
        )
        for condition in group.status.conditions
    )


def _podgroup(group: PodGroup, time: float, *, deleted: bool) -> PodGroupObserved | None:
    meta = group.metadata
    owner = job_owner(meta)
    if owner is None:
        return None
    unschedulable = _unschedulable(group)
    return PodGroupObserved(
        id=f"podgroup/{meta.uid}/" + ("deleted" if deleted else meta.resource_version),
        key=job_key(meta.namespace, owner.name),
        job_uid=owner.uid,
        time=time,
        podgroup=meta.name,
        podgroup_uid=meta.uid,
        phase=group.status.phase,
        reason=unschedulable.reason if unschedulable else "",
        message=unschedulable.message if unschedulable else "",
        deleted=deleted,
        conditions=_conditions(group),
    )


def observe_podgroup(group: PodGroup, time: float) -> PodGroupObserved | None:
    return _podgroup(group, time, deleted=False)


def podgroup_deleted(group: PodGroup, time: float) -> PodGroupObserved | None:
    return _podgroup(group, time, deleted=True)


def podgroup_summary(group: PodGroup) -> Summary | None:
    """The phase, the condition the scheduler set last (the newest True one: the gang is
    scheduled, or why it waits) and the `Unschedulable` one; the scheduler moves the
    times of its conditions at every cycle that writes them, so those alone are churn."""
    if job_owner(group.metadata) is None:
        return None
    unschedulable = _unschedulable(group)
    newest = newest_true(_conditions(group))
    return (
        group.status.phase,
        (newest.type, newest.reason, newest.message) if newest else None,
        unschedulable.reason if unschedulable else "",
        unschedulable.message if unschedulable else "",
    )


# Commands -----------------------------------------------------------------------------


def command_for_a_job(command: Command) -> bool:
    """Whether a Command is the job controller's: its `target` is a
    `batch.volcano.sh/v1alpha1` Job (Volcano's informer filter). Others are left alone."""
    target = command.target
    return (
        target is not None
        and target.api_version == API_VERSION
        and target.kind == KIND
        and bool(target.name)
    )


def observe_command(command: Command, time: float) -> CommandIssued | None:
    """A command aimed at a Volcano Job; commands to other kinds are not ours."""
    target = command.target
    if target is None or not command_for_a_job(command):
        return None
    meta = command.metadata
    return CommandIssued(
        id=f"command/{meta.uid}",
        key=job_key(meta.namespace, target.name),
        job_uid=target.uid,
        time=time,
        command=meta.name,
        action=command.action,
        reason=command.reason,
        message=command.message,
    )


def command_deleted(command: Command, time: float) -> None:
    """Nothing: a command is an order given once; the watchers delete it once it is in
    the log (`WatcherService`), as Volcano's controller deletes it before acting."""
    return None


def command_summary(command: Command) -> Summary | None:
    """Constant: a command is published once, whatever is written to it later."""
    return () if command_for_a_job(command) else None


# the memory ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Translation(Generic[T]):
    """How one kind becomes observations."""

    #: what matters about an object, or None when it is not about a Volcano job
    summary: Callable[[T], Summary | None]
    observe: Callable[[T, float], AnyObservation | None]
    deleted: Callable[[T, float], AnyObservation | None]


PODS: Translation[Pod] = Translation(pod_summary, observe_pod, pod_deleted)
JOBS: Translation[Job] = Translation(job_summary, observe_job, job_deleted)
PODGROUPS: Translation[PodGroup] = Translation(podgroup_summary, observe_podgroup, podgroup_deleted)
COMMANDS: Translation[Command] = Translation(command_summary, observe_command, command_deleted)


class Translator(Generic[T]):
    """One kind's events to observations, skipping those that change nothing that matters."""

    def __init__(self, translation: Translation[T]) -> None:
        self._translation = translation
        #: uid -> summary of the object when an observation of it was last published
        self._published: dict[str, Summary] = {}

    def changed(self, obj: T, time: float) -> AnyObservation | None:
        """The observation for an added or modified object, or None if nothing changed
        (the summary is compared first: most events stop there, before any parsing)."""
        summary = self._translation.summary(obj)
        uid = obj.metadata.uid
        if summary is None or self._published.get(uid) == summary:
            return None
        observation = self._translation.observe(obj, time)
        if observation is not None:
            self._published[uid] = summary
        return observation

    def deleted(self, obj: T, time: float) -> AnyObservation | None:
        """The observation for a deleted object (`obj` is its last state)."""
        self._published.pop(obj.metadata.uid, None)
        return self._translation.deleted(obj, time)

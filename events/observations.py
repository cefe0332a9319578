"""Observations: the facts written to `lavalog.observed`, keyed by job.

Watchers turn Kubernetes object changes into these; the decider service adds the
firing of durable timers, and the actuator the creates the API server refused. Each
carries the envelope: a deterministic `id` (so that a re-observation after a crash is
recognisable), the job `key` (`namespace/name`, the Kafka partition key), the job `uid`
(which tells apart two jobs reusing one name) and the event `time` that the decider
takes as "now". Each kind is final: the decider dispatches on the exact type.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lavalog.events.volcano.api import JobStatus

#: Version of the envelope and payload layout; bumped only with an upcaster in `codec`.
SCHEMA_VERSION = 1
#: annotations that carry lavalog's extensions (docs/semantics.md, "Extensions")
EXTENSION_PREFIX = "lavalog.io/"
#: Volcano's `--max-requeue-num` default: a job whose creates are refused is requeued this
#: many times before it is terminated
MAX_REQUEUE_NUM = 15
#: the most of a container's termination message kept, in bytes of UTF-8 (its end is
#: kept): the kubelet's own cap on what a container may leave at its
#: terminationMessagePath (kubecontainer.MaxContainerTerminationMessageLength)
MAX_TERMINATION_MESSAGE = 4096


class Observation(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Envelope fields shared by every observation."""

    v: int = SCHEMA_VERSION
    id: str
    key: str
    job_uid: str
    #: seconds since the epoch; the decider's only clock
    time: float


class JobObserved(Observation, frozen=True, kw_only=True, tag="JobObserved"):
    """A Job was created or its spec changed (a new `generation`)."""

    generation: int = 1
    #: the `spec` exactly as the API server holds it; admission decodes and judges it
    spec: dict[str, Any]
    deleting: bool = False
    #: the Job's `status` as observed, when it has a phase (None otherwise); the decider
    #: starts from it on first sight of a Job another controller ran (Volcano's)
    status: JobStatus | None = None
    #: `metadata.creationTimestamp`: `status.runningDuration` counts from it
    created: float | None = None
    #: the Job's `lavalog.io/` annotations (lavalog's extensions, read at admission);
    #: unset, and so absent from the log, when it has none
    extensions: dict[str, str] | msgspec.UnsetType = msgspec.UNSET


class JobDeleted(Observation, frozen=True, kw_only=True, tag="JobDeleted"):
    """The Job object is gone; Kubernetes garbage-collects what it owned."""


class ContainerEnd(msgspec.Struct, frozen=True, kw_only=True):
    """How one container of a pod ended: its `state.terminated`, as the kubelet wrote it."""

    name: str
    exit_code: int
    #: the runtime's reason: Completed, Error, OOMKilled, ContainerCannotRun...
    reason: str = ""
    #: its termination message, the last words it left: what it wrote to its
    #: terminationMessagePath or, with `terminationMessagePolicy: FallbackToLogsOnError`,
    #: the tail of its log; at most MAX_TERMINATION_MESSAGE bytes, the end kept
    message: str = ""
    #: an init container (`initContainerStatuses`)
    init: bool = False


class PodObserved(Observation, frozen=True, kw_only=True, tag="PodObserved"):
    """A pod controlled by the job changed in a way that matters to its lifecycle."""

    pod: str
    pod_uid: str
    task: str
    index: int
    #: `volcano.sh/job-version` of the pod: the job version it was created for
    job_version: int
    phase: str
    #: exit code of a failed pod, as Kubernetes' podFailurePolicy takes it: the first
    #: terminated regular container whose code is not 0, else the first such init
    #: container (`container` names it); None when every code is 0 or none terminated.
    #: Logs written before `container` was published hold the first terminated
    #: container's code instead (Volcano reads `containerStatuses[0]`'s)
    exit_code: int | None = None
    #: Kubernetes' reason: the pod's (Evicted, NodeLost...), else that container's
    #: (OOMKilled, Error, Completed...)
    reason: str = ""
    #: the pod's message, else that container's termination message (capped as in
    #: `ContainerEnd`)
    message: str = ""
    node: str = ""
    #: the container whose exit code `exit_code` is; unset when there is none
    container: str | msgspec.UnsetType = msgspec.UNSET
    #: every container that has terminated, regular ones then init ones, in the pod's
    #: status order; unset while none has
    containers: tuple[ContainerEnd, ...] | msgspec.UnsetType = msgspec.UNSET
    #: the reason of the pod's `DisruptionTarget=True` condition (PreemptionByScheduler,
    #: EvictionByEvictionAPI, DeletionByTaintManager, TerminationByKubelet...): Kubernetes
    #: is ending a pod that did nothing wrong; unset when it has no such condition
    disruption: str | msgspec.UnsetType = msgspec.UNSET
    #: highest restart count among the pod's regular containers
    restart_count: int = 0
    #: restart counts of all its containers, init containers included, added up (what
    #: Volcano's TaskFailed adds up over a task's pending and running pods); unset in
    #: logs written before it was published (`restart_count` stands in for it there)
    total_restarts: int | msgspec.UnsetType = msgspec.UNSET
    #: the pod is Running and every container reports ready (what Volcano's dependsOn
    #: waits for); unset in logs written before it was published (Running stands in)
    containers_ready: bool | msgspec.UnsetType = msgspec.UNSET
    #: deletionTimestamp is set: someone asked for the pod to go
    deleting: bool = False
    created: float | None = None
    scheduled: float | None = None
    started: float | None = None
    finished: float | None = None


class PodDeleted(Observation, frozen=True, kw_only=True, tag="PodDeleted"):
    """A pod controlled by the job no longer exists."""

    pod: str
    pod_uid: str
    task: str
    index: int
    job_version: int
    phase: str
    exit_code: int | None = None
    reason: str = ""
    #: as in `PodObserved`, from the pod's last state (a pod deleted as its containers
    #: end may never have been seen failed); unset when empty
    node: str | msgspec.UnsetType = msgspec.UNSET
    container: str | msgspec.UnsetType = msgspec.UNSET
    containers: tuple[ContainerEnd, ...] | msgspec.UnsetType = msgspec.UNSET
    disruption: str | msgspec.UnsetType = msgspec.UNSET


class PodsListed(Observation, frozen=True, kw_only=True, tag="PodsListed"):
    """A fresh list of the cluster shows exactly these pods of the job (name -> uid).

    Published after every list of pods, so that a pod deleted while nobody was watching
    (between two leaders, say) is not remembered for ever: any pod the job had that is
    not here is gone.
    """

    pods: dict[str, str]


class PodGroupCondition(msgspec.Struct, frozen=True, kw_only=True):
    """One of a PodGroup's `status.conditions`, as the scheduler wrote it."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    #: seconds since the epoch; None when the scheduler gave none
    last_transition_time: float | None = None


class PodGroupObserved(Observation, frozen=True, kw_only=True, tag="PodGroupObserved"):
    """The job's PodGroup changed phase (Pending, Inqueue, Running, Unknown) or the condition
    the scheduler last set, or it was deleted."""

    podgroup: str
    podgroup_uid: str
    phase: str
    #: the `Unschedulable=True` condition's reason and message, if it has one
    reason: str = ""
    message: str = ""
    deleted: bool = False
    #: every condition, with its time (the newest True one says whether the gang waits);
    #: unset in logs written before they were published
    conditions: tuple[PodGroupCondition, ...] | msgspec.UnsetType = msgspec.UNSET


class CommandIssued(Observation, frozen=True, kw_only=True, tag="CommandIssued"):
    """A `bus.volcano.sh/v1alpha1` Command targeting the job (what `vcctl job suspend` makes)."""

    command: str
    action: str
    reason: str = ""
    message: str = ""


class TimerFired(Observation, frozen=True, kw_only=True, tag="TimerFired"):
    """A durable timer scheduled by an earlier decision came due."""

    timer_id: str


class CreateFailed(Observation, frozen=True, kw_only=True, tag="CreateFailed"):
    """The API server refused objects the actuator created for the job while carrying out
    decision `decision` (Volcano's FailedCreate: a full ResourceQuota's 403 Forbidden, a
    422 Invalid...). Published by the actuator; the decider tries the job's sync again
    later, as Volcano requeues it."""

    decision: str
    #: what was refused: Pod, PodGroup or PersistentVolumeClaim
    object_kind: str
    names: tuple[str, ...]
    #: the job version the refused pods were for
    job_version: int = 0
    #: the first refusal: HTTP status, Kubernetes' Status reason and message
    code: int = 0
    reason: str = ""
    message: str = ""
    #: the controller's `--max-requeue-num` (Volcano's flag): refusals in a row the job is
    #: requeued after before it is terminated; negative: never terminated
    max_requeues: int = MAX_REQUEUE_NUM


AnyObservation = (
    JobObserved
    | JobDeleted
    | PodObserved
    | PodDeleted
    | PodsListed
    | PodGroupObserved
    | CommandIssued
    | TimerFired
    | CreateFailed
)

"""Volcano's job API (`batch.volcano.sh/v1alpha1`) as msgspec Structs.

Only the parts the lifecycle needs are typed; pod templates and volumes stay raw JSON so
that a YAML which runs under Volcano decodes here unchanged. Field names follow the
Kubernetes camelCase JSON names. Values that admission must judge (events, actions,
durations) are kept as plain strings so that a bad value becomes a precise validation
message instead of a decoding error.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec

GROUP = "batch.volcano.sh"
API_VERSION = f"{GROUP}/v1alpha1"
KIND = "Job"
#: the PodGroup the job controller makes for a job's gang
PODGROUP_API_VERSION = "scheduling.volcano.sh/v1beta1"
PODGROUP_KIND = "PodGroup"
#: `vcctl job suspend/resume/...` writes one of these for the controller to act on
COMMAND_API_VERSION = "bus.volcano.sh/v1alpha1"
COMMAND_KIND = "Command"


class JobPhase(StrEnum):
    """The ten phases of a Volcano job (`status.state.phase`)."""

    PENDING = "Pending"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


#: Phases from which no pod is ever created again (Volcano's `finishedState`).
FINISHED_PHASES = frozenset({JobPhase.COMPLETED, JobPhase.TERMINATED, JobPhase.FAILED})
#: Phases in which a job makes no more pods of its version: its run is being stopped or
#: has stopped (Volcano syncs pods only in Pending and Running; a resume starts a new
#: version). A pod of that version made now would outlive its run.
RUN_OVER_PHASES = frozenset(
    {
        *FINISHED_PHASES,
        JobPhase.COMPLETING,
        JobPhase.ABORTING,
        JobPhase.ABORTED,
        JobPhase.TERMINATING,
    }
)


def run_over(version: int, phase: str, job_version: int) -> bool:
    """Whether a Job whose status shows `version` in `phase` is past its run at
    `job_version`: at a later version, or stopping or done with that one (no pod,
    PodGroup or plugin object of that run is to be made any more)."""
    return version > job_version or (version == job_version and phase in RUN_OVER_PHASES)


class Event(StrEnum):
    """Lifecycle events a policy can name (`bus.volcano.sh/v1alpha1` Event)."""

    ANY = "*"
    POD_PENDING = "PodPending"
    POD_RUNNING = "PodRunning"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    TASK_FAILED = "TaskFailed"
    #: the spec changed (scaling); a policy may name it, `*` does not cover it
    JOB_UPDATED = "JobUpdated"
    # internal: never matched by a policy
    OUT_OF_SYNC = "OutOfSync"
    COMMAND_ISSUED = "CommandIssued"


class Action(StrEnum):
    """Actions the controller takes (`bus.volcano.sh/v1alpha1` Action)."""

    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    #: restart the pods of the partition (`partitionPolicy`) the event's pod belongs to
    RESTART_PARTITION = "RestartPartition"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    # internal: never written in a policy
    SYNC_JOB = "SyncJob"
    ENQUEUE_JOB = "EnqueueJob"
    DELETE_JOB = "DeleteJob"


class PodPhase(StrEnum):
    """Kubernetes pod phases."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class LifecyclePolicy(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """One `{event | events | exitCode, action, timeout}` entry of `policies`."""

    action: str = ""
    event: str = ""
    events: tuple[str, ...] = ()
    exit_code: int | None = None
    #: a Go duration ("30s", "5m", "1h30m"); the action is delayed by it
    timeout: str | None = None

    def event_names(self) -> tuple[str, ...]:
        """`events` plus the single `event`, as Volcano's `getEventlist` merges them."""
        return (*self.events, self.event) if self.event else self.events


class DependsOn(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """Tasks this task waits for; `iteration` is `any` or `all` (the default)."""

    name: tuple[str, ...] = ()
    iteration: str = ""


class NetworkTopologySpec(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """How far (which tier of the network) the gang's pods may spread; `mode` hard or soft.
    `highestTierAllowed` and `highestTierName` are alternatives."""

    mode: str = ""
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""


class PartitionPolicySpec(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """A task's replicas in `totalPartitions` groups of `partitionSize` pods (pod index //
    partitionSize), each scheduled as a sub-gang; `minPartitions` of them are the task's
    minimum."""

    total_partitions: int = 0
    partition_size: int = 0
    network_topology: NetworkTopologySpec | None = None
    min_partitions: int = 0

    def partition_of(self, index: int) -> int:
        """The partition of the task's pod `index` (0 when the size is invalid, as Volcano)."""
        return index // self.partition_size if self.partition_size > 0 else 0


class TaskSpec(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """One task (a set of identical replicas) of a job."""

    name: str = ""
    replicas: int = 0
    min_available: int | None = None
    max_retry: int = 0
    policies: tuple[LifecyclePolicy, ...] = ()
    depends_on: DependsOn | None = None
    topology_policy: str = ""
    partition_policy: PartitionPolicySpec | None = None
    #: the pod template (`v1.PodTemplateSpec`), kept as the user wrote it
    template: dict[str, Any] = {}


class JobSpec(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """`spec` of a Volcano Job."""

    scheduler_name: str = ""
    min_available: int = 0
    min_success: int | None = None
    max_retry: int = 0
    queue: str = ""
    priority_class_name: str = ""
    ttl_seconds_after_finished: int | None = None
    policies: tuple[LifecyclePolicy, ...] = ()
    plugins: dict[str, list[str]] = {}
    tasks: tuple[TaskSpec, ...] = ()
    volumes: tuple[dict[str, Any], ...] = ()
    running_estimate: str | None = None
    network_topology: NetworkTopologySpec | None = None

    def task(self, name: str) -> TaskSpec | None:
        """The task called `name`, if the job has one."""
        for task in self.tasks:
            if task.name == name:
                return task
        return None

    @property
    def total_replicas(self) -> int:
        return sum(task.replicas for task in self.tasks)


# The status's parts (and the status) are made anew at each status the decider writes and
# hold no reference cycle: gc=False keeps the cyclic GC from tracking them
class JobState(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """`status.state`; `lastTransitionTime` is when the controller last changed the status
    (any change while the job syncs: Pending, Running, Restarting; a phase change else)."""

    phase: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class TaskState(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """`status.taskStatusCount[task]`: pods of one task by pod phase."""

    phase: dict[str, int] = {}


class JobCondition(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """One entry of `status.conditions`: a phase and the last time the status was written
    in it (Volcano keeps one entry per phase and moves the one it touches to the end)."""

    status: str
    last_transition_time: str | None = None


class JobStatus(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """`status` of a Volcano Job, as the controller writes it: every field it owns explicit,
    so that counts that fell to zero are written as zero. Fields of a Job's status that are
    not here belong to someone else and are kept when the status is written."""

    state: JobState = JobState()
    min_available: int = 0
    task_status_count: dict[str, TaskState] = {}
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    version: int = 0
    retry_count: int = 0
    #: a Go duration string, as `metav1.Duration` serializes: from the Job's creation to
    #: its last phase change at a kill or an end (Volcano's `killJob`)
    running_duration: str | None = None
    #: `plugin-<name>` -> name, `volume-pvc-<claim>` -> claim (Volcano's names)
    controlled_resources: dict[str, str] = {}
    #: one per phase, the latest last (Volcano's `appendJobCondition`)
    conditions: tuple[JobCondition, ...] = ()


class FieldError(msgspec.Struct, frozen=True):
    """One admission failure: the field path (`spec.tasks[1].policies[0].exitCode`) and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

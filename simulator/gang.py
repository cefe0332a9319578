"""What vc-scheduler says about a gang at the end of a scheduling session: the
PodGroup's phase and conditions, and the messages of its Events and of its pods'
PodScheduled conditions.

A `Gang` is one session's view of a Volcano job (pkg/scheduler/api/job_info.go
`JobInfo`): its tasks (pods) by status, what the allocate action found for each
pending one (a node it would fit, or why no node fits), and `minMember`. The
functions mirror, in order of use: `getTaskStatus` (api/helpers.go), the gang
plugin's `OnSessionClose` (plugins/gang/gang.go), `jobStatus` and
`getPodGroupPhase` (framework/session.go), `RecordJobStatusEvent` and
`TaskSchedulingReason` (cache/cache.go, api/job_info.go). Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

#: the PodGroup condition types and details (volcano-sh/apis scheduling/v1beta1)
UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"
POD_GROUP_READY = "pod group is ready"
POD_GROUP_NOT_READY = "pod group is not ready"
#: the gang plugin's reasons for its conditions
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
GANG_READY = "tasks in gang are ready to be scheduled"


class TaskStatus(StrEnum):
    """A task's status in a session (api/types.go)."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


#: api/helpers.go: statuses that hold a node, that count as scheduled, that ended
_ALLOCATED = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
)
_READY = _ALLOCATED | {TaskStatus.SUCCEEDED}
_SCHEDULED = frozenset(
    {TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED}
)
_COMPLETED = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})


class PodReason(StrEnum):
    """Reasons of a waiting pod's PodScheduled=False condition (api/unschedule_info.go)."""

    UNSCHEDULABLE = "Unschedulable"
    SCHEDULABLE = "Schedulable"


def task_status(pod: Mapping[str, Any]) -> TaskStatus:
    """`getTaskStatus`: a pod's status as vc-scheduler sees it."""
    phase = (pod.get("status") or {}).get("phase", "Pending")
    deleting = bool(pod["metadata"].get("deletionTimestamp"))
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if pod["spec"].get("nodeName") else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    return TaskStatus.FAILED if phase == "Failed" else TaskStatus.UNKNOWN


@dataclass(slots=True)
class Task:
    """One member of the gang in this session."""

    namespace: str
    name: str
    status: TaskStatus
    node: str = ""
    #: no resource requests: counts as ready while pending (`PendingBestEffortTaskNum`)
    best_effort: bool = False
    #: the node it fitted on in an allocation that was then discarded (its LastTransaction)
    allocated_to: str = ""
    #: why no node fits it (`FitErrors.Error()`), when the allocate action tried it
    fit_error: str = ""


@dataclass(slots=True)
class Gang:
    """A Volcano job as one scheduling session sees it."""

    min_member: int
    tasks: list[Task] = field(default_factory=list)

    def count(self, statuses: Iterable[TaskStatus]) -> int:
        wanted = frozenset(statuses)
        return sum(1 for t in self.tasks if t.status in wanted)

    def _pending(self) -> list[Task]:
        return [t for t in self.tasks if t.status is TaskStatus.PENDING]

    def ready_count(self) -> int:
        """`ReadyTaskNum`."""
        return self.count(_READY)

    def is_ready(self) -> bool:
        """`IsReady`: enough members hold or held a node (best-effort ones count while
        pending, since nothing can keep them from one)."""
        best_effort = sum(1 for t in self._pending() if t.best_effort)
        return self.ready_count() + best_effort >= self.min_member

    def valid(self) -> bool:
        """The gang plugin's `validJobFn`: enough members exist to be worth allocating."""
        live = _ALLOCATED | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING}
        return self.count(live) >= self.min_member

    def scheduling_reason(self, task: Task) -> tuple[PodReason, str]:
        """`TaskSchedulingReason` for a pending task: "" means the job's FitError."""
        if task.allocated_to:
            return PodReason.SCHEDULABLE, (
                f"Pod {task.namespace}/{task.name} can possibly be assigned to "
                f"{task.allocated_to}, once minAvailable is satisfied"
            )
        return PodReason.UNSCHEDULABLE, task.fit_error

    def fit_error(self) -> str:
        """`JobInfo.FitError`: the gang's state, then why its pending tasks wait, then
        the first task no node fits and why."""
        statuses: Counter[str] = Counter(str(t.status) for t in self.tasks)
        statuses["minAvailable"] = self.min_member
        ready = POD_GROUP_READY if self.is_ready() else POD_GROUP_NOT_READY
        message = f"{ready}, {_histogram(statuses)}"
        pending = Counter(str(self.scheduling_reason(t)[0]) for t in self._pending())
        if pending:
            message += f"; Pending: {_histogram(pending)}"
        origin = next((t for t in self.tasks if t.fit_error), None)
        if origin is not None:
            message += f". Origin reason is {origin.name}: {origin.fit_error}"
        return message

    def condition(self) -> tuple[str, str, str] | None:
        """The gang plugin's `OnSessionClose`: (type, reason, message) of the condition
        it sets this session, or None for a gang without members or one whose missing
        members are only still terminating (`shouldSkipUnschedulableForReleasing`)."""
        if not self.tasks:
            return None
        if self.is_ready():
            return SCHEDULED, GANG_READY, ""
        if self._releasing_covers():
            return None
        schedulable = sum(1 for t in self._pending() if t.allocated_to) + self.ready_count()
        unready = self.min_member - schedulable
        message = f"{unready}/{len(self.tasks)} tasks in gang unschedulable: {self.fit_error()}"
        return UNSCHEDULABLE, NOT_ENOUGH_RESOURCES, message

    def _releasing(self) -> int:
        return sum(1 for t in self.tasks if t.status is TaskStatus.RELEASING and t.node)

    def _releasing_covers(self) -> bool:
        if not self._releasing() or self.count((TaskStatus.PENDING, TaskStatus.PIPELINED)):
            return False
        return self.count(_SCHEDULED) + self._releasing() >= self.min_member

    def phase(self, current: str, *, unschedulable: bool) -> str:
        """`getPodGroupPhase`; `unschedulable`: the gang plugin set Unschedulable in this
        very session."""
        if self.count((TaskStatus.RUNNING,)) and unschedulable:
            return "Unknown"
        scheduled = self.count(_SCHEDULED) + self._releasing()
        if scheduled >= self.min_member:
            return "Completed" if scheduled == self.count(_COMPLETED) else "Running"
        return current if current == "Inqueue" else "Pending"

    def event_message(self) -> str:
        """`RecordJobStatusEvent`'s Warning Unschedulable message (counting pending
        tasks, where the condition counts the unready ones)."""
        waiting = len(self._pending())
        return f"{waiting}/{len(self.tasks)} tasks in gang unschedulable: {self.fit_error()}"


def _histogram(reasons: Mapping[str, int]) -> str:
    """Volcano's `sortReasonsHistogram`: "N reason" strings sorted as strings."""
    return ", ".join(sorted(f"{n} {reason}" for reason, n in reasons.items()))


def fit_errors(reasons: Mapping[str, str], nodes: int) -> str:
    """`FitErrors.Error()`: node -> why the task does not fit there."""
    counted = Counter(reasons.values())
    return f"0/{nodes} nodes are unavailable: {_histogram(counted)}."


def resource_names(prefix: str, verb: str, names: Iterable[str]) -> str:
    """`FormatResourceNames`, the enqueue plugins' Event message."""
    listed = [f"{verb} {name}" for name in names]
    return f"{prefix}: {', '.join(listed)}" if listed else prefix

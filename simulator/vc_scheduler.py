"""One vc-scheduler session, as pkg/scheduler/framework runs it with Volcano's default
configuration (actions "enqueue, allocate, backfill"; the gang, overcommit and
proportion plugins), over the gangs that changed since the last session.

- enqueue (actions/enqueue): a Pending PodGroup becomes Inqueue when it has no
  `minResources`, or when they fit what the overcommit plugin calls idle (all
  schedulable nodes' allocatable x 1.2, less what their pods use and what admitted
  gangs hold) and, for the proportion plugin, the queue is Open and its `capability`
  holds them. Otherwise the plugin that refused records a Normal `Unschedulable` Event
  on the PodGroup ("resource in cluster is overused: overused nvidia.com/gpu", "queue
  resource quota insufficient: insufficient cpu") and it stays Pending.
- allocate (actions/allocate): the pending members of an Inqueue or running gang that
  has `minMember` members are tried node by node; if enough fit the gang is bound at
  once, else nothing is, and what was found is kept for the messages.
- close (framework/session.go `closeSession`, plugins/gang `OnSessionClose`,
  cache.go `UpdateJobStatus`): the gang plugin sets `Scheduled=True` on a gang that is
  ready and `Unschedulable=True` on one that is not, each with this session's time and
  transitionID, and leaves the other condition as it was; the phase and counts follow
  `jobStatus`; the PodGroup is written only when its status changed beyond those times
  and IDs. Then the Events (`RecordJobStatusEvent`) and the waiting pods'
  `PodScheduled=False` conditions.

The simulator writes each Event once per message: vc-scheduler repeats them every
session, which on a real cluster only raises the Event's count.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lavalog.simulator import registry, vectors
from lavalog.simulator.gang import (
    SCHEDULED,
    UNSCHEDULABLE,
    Gang,
    Task,
    TaskStatus,
    fit_errors,
    resource_names,
    task_status,
)
from lavalog.simulator.rooms import Rooms
from lavalog.simulator.store import Key, Obj
from lavalog.simulator.vectors import Resources

if TYPE_CHECKING:
    from lavalog.simulator.scheduler import Scheduler

#: the overcommit plugin's default `overcommit-factor`
OVERCOMMIT_FACTOR = 1.2
#: what NodePodNumberExceeded says (api/unschedule_info.go)
POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"
#: minResources repeats requests under quota names (`requests.cpu`, `count/pods`)
_QUOTA_PREFIXES = ("count/", "requests.", "limits.")
#: the `schedulerName` of the pods vc-scheduler schedules (its `--scheduler-name` default)
SCHEDULER_NAME = "volcano"


@dataclass(slots=True)
class _Job:
    """A gang in this session: its PodGroup, its queue and its members."""

    key: Key
    podgroup: Obj
    queue: Obj
    phase: str
    gang: Gang
    pods: dict[str, Obj]


class VolcanoSession:
    """Open with what the cluster has free; `run` the gangs that changed."""

    def __init__(self, scheduler: Scheduler, free: Rooms) -> None:
        self.scheduler = scheduler
        self.objects = scheduler.objects
        self.uid = str(uuid.uuid4())
        self.now = self.objects.clock.timestamp()
        self.free = free
        #: the overcommit plugin's idle resources, less what admitted gangs hold
        self.idle = vectors.total(free.values())
        vectors.add(self.idle, scheduler.allocatable(free), OVERCOMMIT_FACTOR - 1)
        vectors.add(self.idle, scheduler.reserved.total, -1)

    def run(self, gangs: Iterable[Key]) -> None:
        jobs = [job for key in sorted(gangs) if (job := self._job(key)) is not None]
        for job in jobs:
            if job.phase == "Pending":
                self._enqueue(job)
        for job in jobs:
            if job.phase != "Pending":
                self._allocate(job)
        for job in jobs:
            self._close(job)

    def _job(self, key: Key) -> _Job | None:
        """The session's view of a gang; None for one vc-scheduler ignores (no PodGroup,
        or its queue does not exist: `Snapshot` skips it)."""
        podgroup = self.objects.find(registry.PODGROUP, *key)
        if podgroup is None:
            return None
        spec = podgroup.get("spec", {})
        queue = self.objects.find(registry.QUEUE, "", str(spec.get("queue") or "default"))
        if queue is None:
            return None
        pods: dict[str, Obj] = {}
        for member in sorted(self.scheduler.groups.get(key, ())):
            pod = self.objects.find(registry.POD, *member)
            if pod is not None and _in_cache(pod):
                pods[member[1]] = pod
        tasks = [
            Task(
                namespace=key[0],
                name=name,
                status=task_status(pod),
                node=pod["spec"].get("nodeName") or "",
                best_effort=not _requests(pod),
            )
            for name, pod in pods.items()
        ]
        phase = podgroup.get("status", {}).get("phase") or "Pending"
        gang = Gang(min_member=int(spec.get("minMember") or 0), tasks=tasks)
        return _Job(key, podgroup, queue, phase, gang, pods)

    # enqueue ----------------------------------------------------------------------------

    def _enqueue(self, job: _Job) -> None:
        """`Enqueue.Execute` with the overcommit and proportion plugins' votes."""
        spec = job.podgroup.get("spec", {})
        queue_name = job.queue["metadata"]["name"]
        minimum = _min_resources(spec)
        if minimum is not None:
            overused = _exceeding(minimum, {}, self.idle)
            if overused:
                message = resource_names("resource in cluster is overused", "overused", overused)
                self._say(job, "Normal", UNSCHEDULABLE, message)
                return
            if job.queue.get("status", {}).get("state", "Open") != "Open":
                return  # proportion refuses a closed queue without an Event
            capability = vectors.parse_map(job.queue.get("spec", {}).get("capability"))
            used = dict(self.scheduler.queue_usage.get(queue_name, {}))
            vectors.add(used, self.scheduler.reserved.by_queue.get(queue_name, {}))
            capped = {n: v for n, v in minimum.items() if n in capability}
            lacking = _exceeding(capped, used, capability)
            if lacking:
                message = resource_names(
                    "queue resource quota insufficient", "insufficient", lacking
                )
                self._say(job, "Normal", UNSCHEDULABLE, message)
                return
            self.scheduler.reserved.hold(job.key, queue_name, minimum)
            vectors.add(self.idle, minimum, -1)
        self.scheduler.waiting.pop(job.key, None)
        job.phase = "Inqueue"

    # allocate ---------------------------------------------------------------------------

    def _allocate(self, job: _Job) -> None:
        """`Allocate.Execute` for one gang: bind all it can place if that makes the gang
        ready, else nothing (the statement is discarded)."""
        gang = job.gang
        pending = [t for t in gang.tasks if t.status is TaskStatus.PENDING]
        if not pending or not gang.valid():
            return
        queue_name = job.queue["metadata"]["name"]
        capability = vectors.parse_map(job.queue.get("spec", {}).get("capability"))
        used = dict(self.scheduler.queue_usage.get(queue_name, {}))
        trial = self.free.copy()
        keep_going = gang.min_member < len(gang.tasks)  # `NeedContinueAllocating`
        for task in pending:
            pod = job.pods[task.name]
            request = vectors.pod_requests(pod)
            if not vectors.within(request, capability, used):
                continue  # the queue is overused: the task is left for later
            node = self._fit(task, pod, request, trial)
            if node is None:
                if keep_going:
                    continue
                break
            task.status, task.node = TaskStatus.ALLOCATED, node
            vectors.add(used, request)
        allocated = [t for t in gang.tasks if t.status is TaskStatus.ALLOCATED]
        if not allocated:
            return
        if gang.is_ready():
            self.free.adopt(trial)
            for task in allocated:
                self.scheduler.bind(job.pods[task.name], task.node)
                task.status = TaskStatus.BINDING
            return
        for task in allocated:  # discarded: remembered as the task's last transaction
            task.status, task.allocated_to, task.node = TaskStatus.PENDING, task.node, ""

    def _fit(self, task: Task, pod: Obj, request: Resources, trial: Rooms) -> str | None:
        """The node `task` goes to, or None with `task.fit_error` saying why none."""
        problem = self.scheduler.claim_problem(pod)
        if problem:  # the VolumeBinding PreFilter fails on every node alike
            task.fit_error = fit_errors({node: problem for node in trial}, len(trial))
            return None
        node = self.scheduler.place(request, trial)
        if node is None:
            reasons = {name: _misfit(request, room) for name, room in trial.items()}
            task.fit_error = fit_errors(reasons, len(trial))
        return node

    # close ------------------------------------------------------------------------------

    def _close(self, job: _Job) -> None:
        gang = job.gang
        condition = gang.condition()
        unschedulable = condition is not None and condition[0] == UNSCHEDULABLE
        phase = gang.phase(job.phase, unschedulable=unschedulable)
        if gang.count(
            (TaskStatus.RUNNING, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.SUCCEEDED)
        ):
            self.scheduler.reserved.release(job.key)  # its pods now hold what they use
        if phase == "Pending":
            self.scheduler.waiting.setdefault(job.key, None)
        status = dict(job.podgroup.get("status") or {})
        status["phase"] = phase
        for field, of in (
            ("running", TaskStatus.RUNNING),
            ("succeeded", TaskStatus.SUCCEEDED),
            ("failed", TaskStatus.FAILED),
        ):
            status[field] = gang.count((of,))
            if not status[field]:
                del status[field]
        conditions = [dict(c) for c in status.get("conditions") or ()]
        if condition is not None:
            kind, reason, message = condition
            written = {
                "type": kind,
                "status": "True",
                "transitionID": self.uid,
                "lastTransitionTime": self.now,
                "reason": reason,
            }
            if message:
                written["message"] = message
            at = next((i for i, c in enumerate(conditions) if c.get("type") == kind), None)
            if at is None:
                conditions.append(written)
            else:
                conditions[at] = written
        if conditions:
            status["conditions"] = conditions
        updated = _changed(status, job.podgroup.get("status") or {})
        if updated:
            # the whole PodGroup (its CRD has no status subresource), the rest as stored
            self.objects.rewrite(
                registry.PODGROUP, *job.key, lambda stored: {**stored, "status": status}
            )
        if phase in ("Pending", "Inqueue", "Unknown"):
            self._say(job, "Warning", UNSCHEDULABLE, gang.event_message())
        elif updated:
            self.scheduler.events["volcano"].record(
                job.podgroup, "Normal", SCHEDULED, "pod group is ready"
            )
        fit_error = gang.fit_error()
        for task in gang.tasks:
            if task.status is TaskStatus.PENDING:
                reason, message = gang.scheduling_reason(task)
                self.scheduler.mark_unschedulable(job.pods[task.name], message or fit_error, reason)

    def _say(self, job: _Job, type_: str, reason: str, message: str) -> None:
        """An Event on the PodGroup, written when its message is new for it."""
        said = self.scheduler.said.setdefault(job.key, {})
        if said.get(f"{type_}/{reason}") != message:
            said[f"{type_}/{reason}"] = message
            self.scheduler.events["volcano"].record(job.podgroup, type_, reason, message)


def _requests(pod: Obj) -> Resources:
    """What a pod asks of a node besides its slot (nothing: a best-effort pod)."""
    return {n: v for n, v in vectors.pod_requests(pod).items() if n != "pods" and v > 0}


def _min_resources(spec: Obj) -> Resources | None:
    """A PodGroup's minResources as vc-scheduler compares them (`NewResource`): without
    the names under which Volcano's controller repeats them for quotas (`requests.cpu`,
    `count/pods`) and the pod count, which no node offers; None when unset."""
    if spec.get("minResources") is None:
        return None
    return {
        name: value
        for name, value in vectors.parse_map(spec.get("minResources")).items()
        if not name.startswith(_QUOTA_PREFIXES) and name != "pods"
    }


def _order(names: Iterable[str]) -> list[str]:
    """cpu, memory, then the other resources (vc-scheduler's `Resource` order)."""
    return sorted(names, key=lambda n: (n != "cpu", n != "memory", n))


def _exceeding(request: Resources, used: Resources, limit: Resources) -> list[str]:
    """`LessEqualWithDimensionAndResourcesName`: the resources `request` asks for of which
    `used + request` exceeds `limit` (a resource `limit` lacks counts as none)."""
    return _order(
        n for n, v in request.items() if v > 0 and v + used.get(n, 0.0) > limit.get(n, 0.0) + 1e-9
    )


def _misfit(request: Resources, room: Resources) -> str:
    """Why one node cannot take a task: the allocate action's resource predicate names the
    first resource short (`WrapInsufficientResourceReason`), then the predicates
    plugin's pod count."""
    short = _exceeding({n: v for n, v in request.items() if n != "pods"}, {}, room)
    if short:
        return f"Insufficient {short[0]}"
    return POD_NUMBER_EXCEEDED


def _changed(new: Obj, old: Obj) -> bool:
    """`isPodGroupStatusUpdated`: a change beyond conditions' times and transition IDs."""

    def bare(status: Obj) -> Obj:
        conditions = [
            {k: v for k, v in c.items() if k not in ("lastTransitionTime", "transitionID")}
            for c in status.get("conditions") or ()
        ]
        return {**status, "conditions": conditions}

    return bare(new) != bare(old)


def _in_cache(pod: Obj) -> bool:
    """Whether vc-scheduler's cache holds `pod`: its own pods (`responsibleForPod`: the
    pod names it as its scheduler), and another scheduler's once they are on a node (the
    pod informer's filter in `newSchedulerCache`). A gang's member that waits for another
    scheduler is none of its tasks: it never places nor binds it."""
    spec = pod.get("spec", {})
    return spec.get("schedulerName") == SCHEDULER_NAME or bool(spec.get("nodeName"))

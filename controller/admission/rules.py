"""Volcano's admission rules for a new Job, checked on the defaulted spec.

Sources: `validateJobSpec` in `admit_job.go`, `validatePolicies`, `validateIO` and
`topoSort` in `util.go`, and the Job CRD's schema (name patterns, `minSuccess >= 1`).
Where Volcano stops at the first problem, these rules go on and report every one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from lavalog.apimachinery import names
from lavalog.controller.plugins import problems as plugin_problems
from lavalog.events.durations import parse_duration
from lavalog.events.volcano.api import (
    Action,
    Event,
    FieldError,
    JobSpec,
    LifecyclePolicy,
    NetworkTopologySpec,
    TaskSpec,
)

_S = TypeVar("_S", JobSpec, TaskSpec)

#: events a policy may name (Volcano's `policyEventMap` entries marked true)
POLICY_EVENTS = (
    Event.ANY,
    Event.POD_PENDING,
    Event.POD_FAILED,
    Event.POD_EVICTED,
    Event.UNKNOWN,
    Event.TASK_COMPLETED,
    Event.TASK_FAILED,
    Event.JOB_UPDATED,
)
#: events about the whole job: they carry no task or pod that RestartTask/RestartPod could target
JOB_WIDE_EVENTS = frozenset({Event.UNKNOWN, Event.JOB_UPDATED})
#: actions a policy may take (Volcano's `policyActionMap` entries marked true)
POLICY_ACTIONS = (
    Action.ABORT_JOB,
    Action.RESTART_JOB,
    Action.RESTART_TASK,
    Action.RESTART_POD,
    Action.RESTART_PARTITION,
    Action.TERMINATE_JOB,
    Action.COMPLETE_JOB,
    Action.RESUME_JOB,
)
TARGETED_ACTIONS = frozenset({Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION})
#: `networkTopology.mode` (the CRD's enum; empty means the default, hard)
NETWORK_TOPOLOGY_MODES = ("", "hard", "soft")
ITERATIONS = ("", "any", "all")
_ALL_EVENTS = frozenset(Event)
_ALL_ACTIONS = frozenset(Action)


@dataclass(frozen=True)
class Range(Generic[_S]):
    """An integer field that must lie between `minimum` and, if given, `maximum(owner)`.

    Only values the user gave are judged: one that Volcano's defaults derived (a task's
    minAvailable from its replicas) is in range whenever its sources are, and those are
    judged themselves. Likewise a maximum below the minimum (a negative replica count,
    no tasks) is left to the rule that the maximum breaks."""

    field: str
    value: Callable[[_S], int | None]
    minimum: int
    meaning: str
    maximum: Callable[[_S], int] | None = None
    maximum_is: str = ""

    def check(self, owner: _S, given: _S, prefix: str) -> Iterator[FieldError]:
        """`owner` is defaulted; `given` is the same object as the user wrote it."""
        value = self.value(owner)
        if value is None or value != self.value(given):
            return
        path = f"{prefix}.{self.field}"
        if value < self.minimum:
            yield FieldError(
                path,
                f"{value} is below {self.minimum}; use {self.minimum} or more ({self.meaning})",
            )
        elif self.maximum is not None and self.minimum <= (limit := self.maximum(owner)) < value:
            yield FieldError(
                path,
                f"{value} is more than {self.maximum_is} ({limit}); "
                f"use {self.minimum} to {limit} ({self.meaning})",
            )


JOB_RANGES: tuple[Range[JobSpec], ...] = (
    Range(
        "minAvailable",
        lambda job: job.min_available,
        0,
        "the pods that must be schedulable together before any starts",
        lambda job: job.total_replicas,
        "the total replicas of all tasks",
    ),
    Range(
        "minSuccess",
        lambda job: job.min_success,
        1,
        "the succeeded pods that complete the job",
        lambda job: job.total_replicas,
        "the total replicas of all tasks",
    ),
    Range(
        "maxRetry",
        lambda job: job.max_retry,
        0,
        "restarts before the job fails; 0 or unset means Volcano's default, 3",
    ),
    Range(
        "ttlSecondsAfterFinished",
        lambda job: job.ttl_seconds_after_finished,
        0,
        "seconds a finished job is kept before it is deleted",
    ),
)
TASK_RANGES: tuple[Range[TaskSpec], ...] = (
    Range("replicas", lambda task: task.replicas, 0, "the pods of this task"),
    Range(
        "minAvailable",
        lambda task: task.min_available,
        0,
        "the pods of this task that must be schedulable together",
        lambda task: task.replicas,
        "the task's replicas",
    ),
    Range(
        "maxRetry",
        lambda task: task.max_retry,
        0,
        "restarts of this task before the job fails; 0 or unset means 3",
    ),
)


def check_ranges(spec: JobSpec, given: JobSpec) -> Iterator[FieldError]:
    """The integer bounds, which both a new job and a scaled one must keep. `spec` is
    `given` with defaults applied."""
    for job_range in JOB_RANGES:
        yield from job_range.check(spec, given, "spec")
    for index, (task, given_task) in enumerate(zip(spec.tasks, given.tasks, strict=True)):
        for task_range in TASK_RANGES:
            yield from task_range.check(task, given_task, f"spec.tasks[{index}]")
    yield from check_topology(spec)


def check_topology(spec: JobSpec) -> Iterator[FieldError]:
    """`networkTopology` and each task's `partitionPolicy` (`validatePartitionPolicy`, the
    CRD's minimums and enum), which both a new job and a scaled one must keep."""
    yield from _check_network_topology(spec.network_topology, "spec.networkTopology")
    for index, task in enumerate(spec.tasks):
        policy = task.partition_policy
        if policy is None:
            continue
        path = f"spec.tasks[{index}].partitionPolicy"
        if policy.total_partitions <= 0:
            yield FieldError(
                f"{path}.totalPartitions",
                f"{policy.total_partitions} must be greater than 0 (the number of partitions)",
            )
        elif policy.partition_size <= 0:
            yield FieldError(
                f"{path}.partitionSize",
                f"{policy.partition_size} must be greater than 0 (the pods of each partition)",
            )
        elif task.replicas != policy.total_partitions * policy.partition_size:
            yield FieldError(
                path,
                f"totalPartitions * partitionSize ({policy.total_partitions} * "
                f"{policy.partition_size}) must equal the task's replicas ({task.replicas})",
            )
        elif (
            policy.min_partitions > 0
            and task.min_available != policy.min_partitions * policy.partition_size
        ):
            yield FieldError(
                f"spec.tasks[{index}].minAvailable",
                f"{task.min_available} is not minPartitions * partitionSize "
                f"({policy.min_partitions} * {policy.partition_size}); leave minAvailable "
                "unset to have it derived",
            )
        if policy.min_partitions < 0:
            yield FieldError(f"{path}.minPartitions", f"{policy.min_partitions} is below 0")
        yield from _check_network_topology(policy.network_topology, f"{path}.networkTopology")


def _check_network_topology(
    topology: NetworkTopologySpec | None, path: str
) -> Iterator[FieldError]:
    if topology is None:
        return
    if topology.mode not in NETWORK_TOPOLOGY_MODES:
        yield FieldError(f"{path}.mode", f"{topology.mode!r} is not a mode; use hard or soft")
    if topology.highest_tier_allowed is not None and topology.highest_tier_allowed < 0:
        yield FieldError(
            f"{path}.highestTierAllowed", f"{topology.highest_tier_allowed} is below 0"
        )
    if topology.highest_tier_allowed is not None and topology.highest_tier_name:
        yield FieldError(
            path,
            "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology "
            "simultaneously",
        )


def check_new_job(spec: JobSpec, given: JobSpec) -> list[FieldError]:
    """Every admission rule for a job being created; `spec` is `given` with defaults."""
    errors = list(check_ranges(spec, given))
    if not spec.tasks:
        errors.append(FieldError("spec.tasks", "no tasks: a job needs at least one task"))
    errors += _check_names(spec)
    errors += _check_policies(spec.policies, "spec.policies")
    for index, task in enumerate(spec.tasks):
        errors += _check_policies(task.policies, f"spec.tasks[{index}].policies")
    errors += _check_plugins(spec)
    errors += _check_volumes(spec)
    errors += _check_dependencies(spec)
    return errors


def _dns_problem(name: str, *, label: bool) -> str | None:
    """Kubernetes' rule for a DNS label or subdomain, said for a Job's author."""
    errors = names.label_errors(name) if label else names.subdomain_errors(name)
    if not errors:
        return None
    limit = names.LABEL_MAX_LENGTH if label else names.SUBDOMAIN_MAX_LENGTH
    parts = "" if label else ", '.' between parts,"
    return (
        f"{name!r} is not a valid name: use at most {limit} lower-case letters, digits "
        f"and '-'{parts} starting and ending with a letter or digit (e.g. 'worker-0')"
    )


def _check_names(spec: JobSpec) -> Iterator[FieldError]:
    for field, value in (("queue", spec.queue), ("priorityClassName", spec.priority_class_name)):
        if value and (problem := _dns_problem(value, label=False)):
            yield FieldError(f"spec.{field}", problem)
    first_index: dict[str, int] = {}
    for index, task in enumerate(spec.tasks):
        path = f"spec.tasks[{index}].name"
        if problem := _dns_problem(task.name, label=True):
            yield FieldError(path, f"{problem}; task names are part of pod and host names")
        if task.name in first_index:
            yield FieldError(
                path,
                f"{task.name!r} is already the name of spec.tasks[{first_index[task.name]}]; "
                "task names must be unique",
            )
        first_index.setdefault(task.name, index)


def _named_events(policy: LifecyclePolicy, path: str) -> list[tuple[str, str]]:
    """(path, event) for each distinct event of a policy: `events` then `event`."""
    named = [(f"{path}.events[{i}]", event) for i, event in enumerate(policy.events)]
    if policy.event:
        named.append((f"{path}.event", policy.event))
    first: dict[str, str] = {}
    for where, event in named:
        first.setdefault(event, where)
    return [(where, event) for event, where in first.items()]


def _check_policies(policies: Sequence[LifecyclePolicy], prefix: str) -> Iterator[FieldError]:
    """One list of policies: the job's, or one task's (each list is judged on its own)."""
    event_owner: dict[str, str] = {}
    code_owner: dict[int, str] = {}
    valid_events = ", ".join(POLICY_EVENTS)
    for index, policy in enumerate(policies):
        path = f"{prefix}[{index}]"
        named = _named_events(policy, path)
        yield from _check_action(policy.action, f"{path}.action")
        yield from _check_timeout(policy.timeout, f"{path}.timeout")
        code = policy.exit_code
        if named and code is not None:
            yield FieldError(
                f"{path}.exitCode",
                "a policy matches either events or an exit code: remove exitCode, "
                "or move it to a policy of its own",
            )
        elif not named and code is None:
            yield FieldError(path, "no trigger: set event, events or exitCode")
        elif code == 0:
            yield FieldError(
                f"{path}.exitCode",
                "0 is not an error code (the container succeeded); use a non-zero exit code",
            )
        elif code is not None and code in code_owner:
            yield FieldError(
                f"{path}.exitCode",
                f"exit code {code} already has a policy ({code_owner[code]}); "
                "only the first would ever match",
            )
        elif code is not None:
            code_owner[code] = path
        for where, event in named:
            if event not in POLICY_EVENTS:
                kind = "an internal event" if event in _ALL_EVENTS else "not an event"
                yield FieldError(where, f"{event!r} is {kind}; a policy can name {valid_events}")
            elif event in event_owner:
                yield FieldError(
                    where,
                    f"{event} already has a policy ({event_owner[event]}); "
                    "only the first would ever match",
                )
            else:
                event_owner[event] = where
        job_wide = [event for _, event in named if event in JOB_WIDE_EVENTS]
        if policy.action in TARGETED_ACTIONS and job_wide:
            yield FieldError(
                f"{path}.action",
                f"{policy.action} restarts the task or pod an event came from, but "
                f"{job_wide[0]} is about the whole job and names neither; "
                "use RestartJob, AbortJob or TerminateJob for it",
            )
    if Event.ANY in event_owner and len(event_owner) > 1:
        yield FieldError(
            event_owner[Event.ANY],
            "'*' matches every event, so no other event may have a policy in the same list; "
            "drop '*' or the other event policies",
        )


def _check_action(action: str, path: str) -> Iterator[FieldError]:
    if action in POLICY_ACTIONS:
        return
    valid = ", ".join(POLICY_ACTIONS)
    if not action:
        yield FieldError(path, f"required: one of {valid}")
    else:
        kind = "an internal action" if action in _ALL_ACTIONS else "not an action"
        yield FieldError(path, f"{action!r} is {kind}; a policy can take {valid}")


def _check_timeout(timeout: str | None, path: str) -> Iterator[FieldError]:
    if timeout is None:
        return
    try:
        seconds = parse_duration(timeout)
    except ValueError as exc:
        yield FieldError(path, str(exc))
        return
    if seconds < 0:
        yield FieldError(path, f"{timeout!r} is negative; use 0s or a delay such as 30s or 5m")


def _check_plugins(spec: JobSpec) -> Iterator[FieldError]:
    """Known plugins, arguments that parse completely (Volcano would drop the rest of the
    list silently), and the tasks a plugin needs (mpi's master, as Volcano's admission)."""
    tasks = {task.name for task in spec.tasks}
    for name, problem in plugin_problems(spec.plugins, tasks):
        yield FieldError(f"spec.plugins[{name}]", problem)


#: the claim names Volcano's controller (and lavalog) write into a `volumeClaim` volume
#: (`<job>-pvc-<12 characters>`): a Job seen for the first time with one was admitted
#: before and its claim created, so having both is no user's mistake
CONTROLLER_CLAIM_NAME = re.compile(r"-pvc-[0-9a-z]{12}$")


def _check_volumes(spec: JobSpec) -> Iterator[FieldError]:
    mounted_by: dict[str, str] = {}
    for index, volume in enumerate(spec.volumes):
        path = f"spec.volumes[{index}]"
        mount, claim_name = volume.get("mountPath"), volume.get("volumeClaimName")
        if not isinstance(mount, str) or not mount:
            yield FieldError(f"{path}.mountPath", "required: the path the claim is mounted at")
        elif mount in mounted_by:
            yield FieldError(
                f"{path}.mountPath", f"{mount!r} is already mounted by {mounted_by[mount]}"
            )
        else:
            mounted_by[mount] = path
        if volume.get("volumeClaim") is None and not claim_name:
            yield FieldError(
                path, "set volumeClaimName (an existing PVC) or volumeClaim (a PVC to create)"
            )
        elif (
            volume.get("volumeClaim") is not None
            and claim_name
            and not CONTROLLER_CLAIM_NAME.search(str(claim_name))
        ):
            yield FieldError(
                f"{path}.volumeClaimName",
                "set either volumeClaimName (an existing PVC) or volumeClaim (a PVC to create), "
                "not both",
            )
        elif claim_name and (problem := _dns_problem(str(claim_name), label=False)):
            yield FieldError(f"{path}.volumeClaimName", problem)


def _check_dependencies(spec: JobSpec) -> Iterator[FieldError]:
    """`dependsOn`: known tasks, no self or repeated names, a valid iteration, no cycle."""
    index_of: dict[str, int] = {}
    for index, task in enumerate(spec.tasks):
        index_of.setdefault(task.name, index)
    known = ", ".join(repr(name) for name in index_of)
    #: task index -> (position in its dependsOn.name, index of the task it waits for)
    edges: dict[int, list[tuple[int, int]]] = {}
    for index, task in enumerate(spec.tasks):
        if task.depends_on is None:
            continue
        path = f"spec.tasks[{index}].dependsOn"
        if task.depends_on.iteration not in ITERATIONS:
            yield FieldError(
                f"{path}.iteration",
                f"{task.depends_on.iteration!r} is not an iteration; use 'all' (the default: "
                "wait for every task listed) or 'any' (wait for one of them)",
            )
        seen: set[str] = set()
        for position, name in enumerate(task.depends_on.name):
            where = f"{path}.name[{position}]"
            if name == task.name:
                yield FieldError(where, "a task cannot depend on itself")
            elif name not in index_of:
                yield FieldError(where, f"no task is called {name!r}; the tasks are {known}")
            elif name in seen:
                yield FieldError(where, f"{name!r} is listed twice")
            else:
                edges.setdefault(index, []).append((position, index_of[name]))
            seen.add(name)
    yield from _check_cycles(spec, edges)


def _check_cycles(spec: JobSpec, edges: dict[int, list[tuple[int, int]]]) -> Iterator[FieldError]:
    """One error per cycle that a depth-first walk closes, at the dependency that closes it."""
    done: set[int] = set()
    path: list[int] = []

    def visit(task: int) -> Iterator[FieldError]:
        path.append(task)
        for position, target in edges.get(task, ()):
            if target in path:
                cycle = [spec.tasks[i].name for i in path[path.index(target) :]]
                yield FieldError(
                    f"spec.tasks[{task}].dependsOn.name[{position}]",
                    f"dependency cycle {' -> '.join([*cycle, cycle[0]])} (-> means 'waits for'): "
                    "these tasks would wait for each other forever; remove one dependency",
                )
            elif target not in done:
                yield from visit(target)
        path.pop()
        done.add(task)

    for start in range(len(spec.tasks)):
        if start not in done:
            yield from visit(start)

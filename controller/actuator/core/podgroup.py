"""A job's PodGroup (`scheduling.volcano.sh/v1beta1`): what the gang scheduler admits as a whole.

`minMember` pods must fit at once or none start; `minTaskMember` does the same per task;
`minResources` is what those pods request together, so that a queue can tell before
binding anything whether the gang could ever fit. It is computed as Volcano's
`calcPGMinResources`: tasks in descending priority (the value of the template's
PriorityClass; pass `priorities` read from the cluster, else all tasks count as equal and
keep their order), then

* if `minMember` is below the sum of the tasks' minimums, the first `minMember` pods in
  that order;
* else every task's minimum, then further replicas in that order up to `minMember`.

The job's `networkTopology` becomes the PodGroup's, and each partitioned task
(`partitionPolicy`) a `subGroupPolicy` entry: its pods (by task label) grouped by their
`volcano.sh/partition-id` label, `partitionSize` pods per sub-group, `minPartitions` of
them needed, the partition's own network topology (`setPgSubGroupPolicy`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from lavalog.apimachinery.resources import ResourceList, add, times
from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.usage import pod_usage
from lavalog.events.decisions import PodGroupCreate
from lavalog.events.volcano import labels
from lavalog.events.volcano.api import PODGROUP_API_VERSION, PODGROUP_KIND, TaskSpec


def build_podgroup(
    job: Mapping[str, Any], decision: PodGroupCreate, *, priorities: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """The PodGroup manifest for `decision`; `priorities` maps PriorityClass names to values."""
    view = JobView.of(job)
    metadata = view.owned_metadata(decision.podgroup)
    if view.labels:
        metadata["labels"] = dict(view.labels)
    if view.annotations:
        metadata["annotations"] = dict(view.annotations)
    task_min = {t.name: decision.min_task_member.get(t.name, _minimum(t)) for t in view.spec.tasks}
    tasks = _by_priority(view.spec.tasks, priorities or {})
    resources = min_resources(tasks, decision.min_member, task_min)
    spec: dict[str, Any] = {
        "minMember": decision.min_member,
        "minTaskMember": task_min,
        "queue": decision.queue,
        "minResources": {name: str(quantity) for name, quantity in sorted(resources.items())},
    }
    if decision.priority_class_name:
        spec["priorityClassName"] = decision.priority_class_name
    if view.spec.network_topology is not None:
        spec["networkTopology"] = msgspec.to_builtins(view.spec.network_topology)
    sub_groups = [_sub_group(task) for task in view.spec.tasks if task.partition_policy]
    if sub_groups:
        spec["subGroupPolicy"] = sub_groups
    return {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": PODGROUP_KIND,
        "metadata": metadata,
        "spec": spec,
    }


def _sub_group(task: TaskSpec) -> dict[str, Any]:
    policy = task.partition_policy
    assert policy is not None
    sub_group: dict[str, Any] = {
        "name": task.name,
        "subGroupSize": policy.partition_size,
        "minSubGroups": policy.min_partitions,
        "labelSelector": {"matchLabels": {labels.TASK_SPEC: task.name}},
        "matchLabelKeys": [labels.PARTITION_ID],
    }
    if policy.network_topology is not None:
        sub_group["networkTopology"] = msgspec.to_builtins(policy.network_topology)
    return sub_group


def min_resources(
    tasks: Sequence[TaskSpec], min_member: int, task_min: Mapping[str, int]
) -> ResourceList:
    """What the `min_member` pods of the gang request together; `tasks` in priority order."""
    total: ResourceList = {}
    for task, count in _gang(tasks, min_member, [task_min[t.name] for t in tasks]):
        total = add(total, times(pod_usage(task.template.get("spec") or {}), count))
    return total


Gang = list[tuple[TaskSpec, int]]


def _gang(tasks: Sequence[TaskSpec], min_member: int, minimums: Sequence[int]) -> Gang:
    """How many pods of each task make up the gang (`CalcFirstCountResources` when the
    job's minimum is the tighter one, else `CalcPGMinResources`)."""
    if min_member < sum(minimums):
        return _take(tasks, [t.replicas for t in tasks], min_member)
    first = _take(tasks, minimums, min_member)
    rest = min_member - sum(count for _, count in first)
    extra = [task.replicas - m for task, m in zip(tasks, minimums, strict=True)]
    return first + _take(tasks, extra, rest)


def _take(tasks: Sequence[TaskSpec], quotas: Sequence[int], count: int) -> Gang:
    """Up to `count` pods, each task giving at most its quota, in order."""
    taken: Gang = []
    for task, quota in zip(tasks, quotas, strict=True):
        n = min(quota, count)
        if n > 0:
            taken.append((task, n))
            count -= n
    return taken


def _by_priority(tasks: Sequence[TaskSpec], priorities: Mapping[str, int]) -> list[TaskSpec]:
    def priority(task: TaskSpec) -> int:
        return priorities.get((task.template.get("spec") or {}).get("priorityClassName", ""), 0)

    return sorted(tasks, key=priority, reverse=True)


def _minimum(task: TaskSpec) -> int:
    return task.replicas if task.min_available is None else task.min_available

"""Volcano's defaults, as its mutating webhook (`mutate_job.go`) writes them into a new Job.

Validation runs on the defaulted spec, as Kubernetes runs mutating webhooks before
validating ones. Every default only fills a value left unset, so applying them to an
already defaulted spec changes nothing; `admit_update` relies on that.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lavalog.controller.plugins import with_dependencies
from lavalog.events.volcano.api import JobSpec, TaskSpec

DEFAULT_QUEUE = "default"
DEFAULT_SCHEDULER = "volcano"
#: what Volcano writes for a job or task `maxRetry` of 0 (so 0 can never be asked for)
DEFAULT_MAX_RETRY = 3
#: unnamed tasks become `default0`, `default1`, ... by their index
DEFAULT_TASK_PREFIX = "default"


def with_defaults(spec: JobSpec) -> JobSpec:
    """`spec` as Volcano stores it after admission."""
    tasks = tuple(_task_with_defaults(index, task) for index, task in enumerate(spec.tasks))
    return msgspec.structs.replace(
        spec,
        queue=spec.queue or DEFAULT_QUEUE,
        scheduler_name=spec.scheduler_name or DEFAULT_SCHEDULER,
        max_retry=spec.max_retry or DEFAULT_MAX_RETRY,
        tasks=tasks,
        # the gang is every task's own minimum, counted after those were defaulted
        min_available=spec.min_available or sum(task.min_available or 0 for task in tasks),
        # the plugins others need (svc for the distributed frameworks, ssh for mpi)
        plugins=with_dependencies(spec.plugins),
    )


def _task_with_defaults(index: int, task: TaskSpec) -> TaskSpec:
    return msgspec.structs.replace(
        task,
        name=task.name or f"{DEFAULT_TASK_PREFIX}{index}",
        min_available=_task_minimum(task) if task.min_available is None else task.min_available,
        max_retry=task.max_retry or DEFAULT_MAX_RETRY,
        template=_template_with_dns_policy(task.template),
    )


def _task_minimum(task: TaskSpec) -> int:
    """A task's minAvailable when the user gave none: `minPartitions` whole partitions when
    the task is partitioned and asks for some, else every replica."""
    policy = task.partition_policy
    if policy is not None and policy.min_partitions > 0:
        return policy.min_partitions * policy.partition_size
    return task.replicas


def _template_with_dns_policy(template: dict[str, Any]) -> dict[str, Any]:
    """A host-network pod still resolves cluster names: Volcano sets
    `dnsPolicy: ClusterFirstWithHostNet` when the template leaves it empty."""
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict) or pod_spec.get("hostNetwork") is not True:
        return template
    if pod_spec.get("dnsPolicy"):
        return template
    return {**template, "spec": {**pod_spec, "dnsPolicy": "ClusterFirstWithHostNet"}}

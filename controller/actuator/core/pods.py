"""A job's pod, built from its task template exactly as Volcano's `createJobPod` builds it.

Names, labels and annotations are what schedulers, Services, monitoring and users select
on, and what the watchers read back (task, index, job version), so they follow Volcano
to the letter. The template is copied (only its labels, annotations and spec, as in
Volcano); the job's scheduler and priority class fill in when the template has none; the
job's `spec.volumes` are mounted; then each plugin mutates the pod.

Pure: the same job, reference, version and PodGroup always give the same manifest.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.names import pod_name, random_like_suffix
from lavalog.controller.actuator.core.plugins import Plugin, build_plugins
from lavalog.controller.actuator.core.podspec import Manifest, add_volume
from lavalog.events.decisions import PodRef, PodsCreate, PodsReplace
from lavalog.events.volcano import labels
from lavalog.events.volcano.api import TaskSpec

#: job annotations (and, for the first two, job labels) that Volcano copies to its pods
_FROM_JOB_ANNOTATIONS = (labels.PREEMPTABLE, labels.COOLDOWN_TIME, labels.REVOCABLE_ZONE)
_FROM_JOB_LABELS = (labels.PREEMPTABLE, labels.COOLDOWN_TIME)


def build_pod(
    job: Mapping[str, Any], ref: PodRef, *, job_version: int, podgroup: str
) -> dict[str, Any]:
    """The manifest of pod `ref` of `job` (the Job object as read from the API)."""
    view = JobView.of(job)
    return _pod(view, ref, job_version, podgroup, build_plugins(view.spec.plugins))


def build_pods(job: Mapping[str, Any], decision: PodsCreate | PodsReplace) -> list[dict[str, Any]]:
    """The manifests of all pods a `PodsCreate` or `PodsReplace` makes (the job read once)."""
    view = JobView.of(job)
    plugins = build_plugins(view.spec.plugins)
    return [
        _pod(view, ref, decision.job_version, decision.podgroup, plugins) for ref in decision.pods
    ]


def _pod(
    job: JobView, ref: PodRef, version: int, podgroup: str, plugins: Sequence[Plugin]
) -> Manifest:
    task = job.task(ref.task)
    name = pod_name(job.name, task.name, ref.index)
    if ref.name and ref.name != name:
        raise ValueError(f"pod {ref.name!r} ({ref.task}, index {ref.index}) should be {name!r}")
    template = copy.deepcopy(task.template)
    metadata = template.get("metadata") or {}
    spec: Manifest = template.get("spec") or {}
    if not spec.get("schedulerName") and job.spec.scheduler_name:
        spec["schedulerName"] = job.spec.scheduler_name
    if not spec.get("priorityClassName") and job.spec.priority_class_name:
        spec["priorityClassName"] = job.spec.priority_class_name
    pod: Manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "ownerReferences": [job.owner_reference()],
            "labels": {**(metadata.get("labels") or {}), **_labels(job, task, ref.index)},
            "annotations": {
                **(metadata.get("annotations") or {}),
                **_annotations(job, task, ref.index, version, podgroup),
            },
        },
        "spec": spec,
    }
    _mount_job_volumes(pod, job)
    for plugin in plugins:
        plugin.on_pod_create(pod, job, ref)
    return pod


def _annotations(
    job: JobView, task: TaskSpec, index: int, version: int, podgroup: str
) -> dict[str, str]:
    found = {
        labels.TASK_INDEX: str(index),
        labels.TASK_SPEC: _task_key(task),
        labels.GROUP_NAME: podgroup,
        labels.JOB_NAME: job.name,
        labels.QUEUE_NAME: job.spec.queue,
        labels.JOB_VERSION: str(version),
        labels.TEMPLATE_UID: f"{job.name}-{task.name}",
        labels.JOB_RETRY_COUNT: str(job.retry_count),
    }
    if task.topology_policy:
        found[labels.NUMA_POLICY] = task.topology_policy
    found.update({k: job.annotations[k] for k in _FROM_JOB_ANNOTATIONS if k in job.annotations})
    if labels.JDB_MIN_AVAILABLE in job.annotations:
        found[labels.JDB_MIN_AVAILABLE] = job.annotations[labels.JDB_MIN_AVAILABLE]
    elif labels.JDB_MAX_UNAVAILABLE in job.annotations:
        found[labels.JDB_MAX_UNAVAILABLE] = job.annotations[labels.JDB_MAX_UNAVAILABLE]
    return found


def _labels(job: JobView, task: TaskSpec, index: int) -> dict[str, str]:
    found = {
        labels.TASK_INDEX: str(index),
        labels.JOB_NAME: job.name,
        labels.TASK_SPEC: _task_key(task),
        labels.JOB_NAMESPACE: job.namespace,
        labels.QUEUE_NAME: job.spec.queue,
    }
    found.update({k: job.labels[k] for k in _FROM_JOB_LABELS if k in job.labels})
    if task.partition_policy is not None:
        found[labels.PARTITION_ID] = str(task.partition_policy.partition_of(index))
    return found


def _task_key(task: TaskSpec) -> str:
    return task.name or labels.DEFAULT_TASK


def _mount_job_volumes(pod: Manifest, job: JobView) -> None:
    """Mount each claim of `spec.volumes` once, in the containers (not init containers).

    Volcano names the pod volume `<job>-<12 random characters>`; the suffix here is derived
    from the claim name instead, so that rebuilding a pod gives the same manifest. The
    claim itself (created from `volumeClaim`, or named by the controller when
    `volumeClaimName` is empty) must exist before the job's pods are built.
    """
    mounted: set[str] = set()
    for i, volume in enumerate(job.spec.volumes):
        claim = volume.get("volumeClaimName") or ""
        if not claim:
            raise ValueError(f"spec.volumes[{i}] has no volumeClaimName: create its claim first")
        if claim in mounted:
            continue
        mounted.add(claim)
        name = f"{job.name}-{random_like_suffix(claim)}"
        pvc = {"name": name, "persistentVolumeClaim": {"claimName": claim}}
        add_volume(pod, pvc, {"name": name, "mountPath": volume.get("mountPath", "")}, init=False)

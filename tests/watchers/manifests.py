"""Realistic Kubernetes objects as the API server sends them, for the watcher tests."""

from __future__ import annotations

from typing import Any

JOB_UID = "8a4f0c52-6f1e-4d8a-9b61-0d2f3e7c1a11"
POD_UID = "c0ffee00-1111-4222-8333-444455556666"
CREATED = "2026-03-01T10:00:00Z"
SCHEDULED = "2026-03-01T10:00:01Z"
STARTED = "2026-03-01T10:00:03Z"
FINISHED = "2026-03-01T10:01:03Z"


def job_owner(name: str = "mpi", uid: str = JOB_UID) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def running(started: str = STARTED) -> dict[str, Any]:
    return {"running": {"startedAt": started}}


def terminated(
    code: int,
    reason: str,
    *,
    started: str = STARTED,
    finished: str = FINISHED,
    message: str = "",
) -> dict[str, Any]:
    state: dict[str, Any] = {
        "exitCode": code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": finished,
        "containerID": "containerd://0123",
    }
    if message:
        state["message"] = message
    return {"terminated": state}


def with_condition(pod: dict[str, Any], condition: dict[str, Any]) -> dict[str, Any]:
    """`pod` with one more status condition (as another component patches it)."""
    status = pod["status"]
    conditions = [*status["conditions"], {**condition, "lastTransitionTime": FINISHED}]
    return {**pod, "status": {**status, "conditions": conditions}}


def container(
    state: dict[str, Any],
    *,
    name: str = "main",
    restarts: int = 0,
    last: dict[str, Any] | None = None,
    ready: bool | None = None,
) -> dict[str, Any]:
    """A container status; `ready` defaults to running (no readiness probe)."""
    return {
        "name": name,
        "image": "busybox:1.36",
        "imageID": "docker.io/library/busybox@sha256:abc",
        "ready": "running" in state if ready is None else ready,
        "started": "running" in state,
        "restartCount": restarts,
        "state": state,
        "lastState": last or {},
    }


def pod(
    *,
    phase: str = "Running",
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    node: str = "node-1",
    reason: str = "",
    message: str = "",
    deleting: bool = False,
    resource_version: str = "100",
    ready_since: str = STARTED,
    containers_ready_since: str = STARTED,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A pod of task `worker`, index 1, job version 2 of job default/mpi, as Volcano makes it."""
    all_ready = phase == "Running" and all(c["ready"] for c in containers or [])
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": SCHEDULED},
            {
                "type": "Ready",
                "status": "True" if phase == "Running" else "False",
                "lastTransitionTime": ready_since,
            },
            {
                "type": "ContainersReady",
                "status": "True" if all_ready else "False",
                "lastTransitionTime": containers_ready_since,
            },
        ]
        if node
        else [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "lastTransitionTime": CREATED,
            }
        ],
        "hostIP": "10.0.0.1",
        "podIP": "10.244.1.7",
        "qosClass": "BestEffort",
    }
    if node:
        status["startTime"] = SCHEDULED
    if containers is not None:
        status["containerStatuses"] = containers
    if init_containers is not None:
        status["initContainerStatuses"] = init_containers
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    metadata: dict[str, Any] = {
        "name": "mpi-worker-1",
        "namespace": "default",
        "uid": POD_UID,
        "resourceVersion": resource_version,
        "creationTimestamp": CREATED,
        "labels": labels
        if labels is not None
        else {
            "volcano.sh/job-name": "mpi",
            "volcano.sh/job-namespace": "default",
            "volcano.sh/task-spec": "worker",
            "volcano.sh/task-index": "1",
            "volcano.sh/queue-name": "default",
        },
        "annotations": {
            "volcano.sh/job-name": "mpi",
            "volcano.sh/task-spec": "worker",
            "volcano.sh/task-index": "1",
            "volcano.sh/job-version": "2",
            "volcano.sh/job-retry-count": "0",
            "scheduling.k8s.io/group-name": f"mpi-{JOB_UID}",
            "volcano.sh/template-uid": "mpi-worker",
        },
        "ownerReferences": owners if owners is not None else [job_owner()],
        "managedFields": [{"manager": "lavalog", "operation": "Update"}],
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-03-01T10:02:00Z"
        metadata["deletionGracePeriodSeconds"] = 30
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "nodeName": node,
            "restartPolicy": "OnFailure",
            "containers": [
                {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "exit 3"]}
            ],
        },
        "status": status,
    }


def vcjob(
    *, generation: int = 1, resource_version: str = "50", deleting: bool = False, state: str = ""
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": "mpi",
        "namespace": "default",
        "uid": JOB_UID,
        "generation": generation,
        "resourceVersion": resource_version,
        "creationTimestamp": CREATED,
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-03-01T10:05:00Z"
    job: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "minAvailable": 2,
            "schedulerName": "volcano",
            "maxRetry": 3,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 2 * generation,
                    "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
                }
            ],
        },
    }
    if state:
        job["status"] = {"state": {"phase": state, "lastTransitionTime": STARTED}, "running": 2}
    return job


def podgroup(
    *,
    phase: str = "Pending",
    unschedulable: tuple[str, str] | None = None,
    since: str = CREATED,
    scheduled: str | None = None,
    resource_version: str = "60",
) -> dict[str, Any]:
    """The job's PodGroup as vc-scheduler writes it: `unschedulable` (reason, message) at
    `since`; `scheduled`: the time it added Scheduled=True (leaving Unschedulable)."""
    conditions = []
    if unschedulable:
        conditions.append(
            {
                "type": "Unschedulable",
                "status": "True",
                "transitionID": "0b6e5c34-session",
                "reason": unschedulable[0],
                "message": unschedulable[1],
                "lastTransitionTime": since,
            }
        )
    if scheduled:
        conditions.append(
            {
                "type": "Scheduled",
                "status": "True",
                "transitionID": "5d1f7e02-session",
                "reason": "tasks in gang are ready to be scheduled",
                "message": "",
                "lastTransitionTime": scheduled,
            }
        )
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": f"mpi-{JOB_UID}",
            "namespace": "default",
            "uid": "99990000-aaaa-4bbb-8ccc-ddddeeeeffff",
            "resourceVersion": resource_version,
            "ownerReferences": [job_owner()],
        },
        "spec": {"minMember": 2, "queue": "default"},
        "status": {"phase": phase, "conditions": conditions},
    }


def command(
    *,
    action: str = "AbortJob",
    kind: str = "Job",
    api_version: str = "batch.volcano.sh/v1alpha1",
    resource_version: str = "70",
    field: str = "target",
) -> dict[str, Any]:
    """A Command as `vcctl job suspend` makes it (`field` names where the target goes)."""
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {
            "name": "mpi-abortjob-x7k2p",
            "namespace": "default",
            "uid": "cmd-0001",
            "resourceVersion": resource_version,
        },
        "action": action,
        field: {
            "apiVersion": api_version,
            "kind": kind,
            "name": "mpi",
            "uid": JOB_UID,
            "controller": True,
        },
        "reason": "by vcctl",
        "message": "abort the job",
    }

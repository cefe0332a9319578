"""Scripted event sequences: a job's log written the way the watchers and the decider write it."""

from __future__ import annotations

from typing import Any

from events.codec import LogEvent
from events.decisions import (
    ActionDecided,
    PhaseChanged,
    PodGroupCreate,
    PodRef,
    PodsCreate,
    PodsKill,
    PolicyRef,
)
from events.observations import JobObserved, PodDeleted, PodObserved


class Story:
    """Builds one job incarnation's log; ids follow the contract (`<cause>#<n>`)."""

    def __init__(self, key: str, uid: str, *, start: float = 1_000.0) -> None:
        self.key = key
        self.uid = uid
        self.now = start
        self.events: list[LogEvent] = []
        self._observations = 0

    def at(self, time: float) -> Story:
        self.now = time
        return self

    def observe(self, cls: type[Any], **fields: Any) -> str:
        self._observations += 1
        event_id = f"{self.uid}:o{self._observations}"
        self.events.append(
            cls(id=event_id, key=self.key, job_uid=self.uid, time=self.now, **fields)
        )
        return event_id

    def decide(self, cause: str, *decisions: tuple[type[Any], dict[str, Any]]) -> None:
        for n, (cls, fields) in enumerate(decisions):
            self.events.append(
                cls(
                    id=f"{cause}#{n}",
                    key=self.key,
                    job_uid=self.uid,
                    time=self.now,
                    cause=cause,
                    **fields,
                )
            )

    def pod(self, task: str, index: int, uid: str, version: int, phase: str, **more: Any) -> str:
        name = f"{self.key.split('/')[1]}-{task}-{index}"
        return self.observe(
            PodObserved,
            pod=name,
            pod_uid=uid,
            task=task,
            index=index,
            job_version=version,
            phase=phase,
            **more,
        )

    def pod_gone(self, task: str, index: int, uid: str, version: int, phase: str) -> str:
        name = f"{self.key.split('/')[1]}-{task}-{index}"
        return self.observe(
            PodDeleted,
            pod=name,
            pod_uid=uid,
            task=task,
            index=index,
            job_version=version,
            phase=phase,
        )

    def pod_refs(self, *pods: tuple[str, int]) -> tuple[PodRef, ...]:
        name = self.key.split("/")[1]
        return tuple(PodRef(name=f"{name}-{t}-{i}", task=t, index=i) for t, i in pods)


def phase(previous: str, new: str, *, version: int = 0, retries: int = 0, reason: str = ""):
    return (
        PhaseChanged,
        {
            "previous": previous,
            "phase": new,
            "reason": reason,
            "version": version,
            "retry_count": retries,
        },
    )


def tf_job(key: str = "team-a/tf-mnist", uid: str = "u-tf", start: float = 1_000.0) -> Story:
    """A ps/worker job: worker 1 is OOM-killed, the task policy restarts the task, it completes.

    t=0 submitted; t=1 Pending, pods created; t=5 scheduled; t=10 all Running;
    t=40 worker-1 fails (137, OOMKilled) -> RestartTask, kill both workers, Restarting;
    t=45 workers gone -> Running at version 1, workers created again;
    t=50 new workers running; t=100 workers succeed -> Completing, t=102 ps killed, Completed.
    """
    s = Story(key, uid, start=start)
    spec = {
        "queue": "research",
        "minAvailable": 3,
        "tasks": [
            {"name": "ps", "replicas": 1},
            {
                "name": "worker",
                "replicas": 2,
                "policies": [{"event": "PodFailed", "action": "RestartTask"}],
            },
        ],
    }
    submitted = s.observe(JobObserved, spec=spec)
    s.decide(
        submitted,
        (PodGroupCreate, {"podgroup": "tf-mnist", "min_member": 3, "queue": "research"}),
        phase("", "Pending", reason="Submitted"),
    )
    s.at(start + 1)
    first = s.observe(JobObserved, spec=spec, generation=1)
    s.decide(
        first,
        (
            PodsCreate,
            {
                "job_version": 0,
                "podgroup": "tf-mnist",
                "pods": s.pod_refs(("ps", 0), ("worker", 0), ("worker", 1)),
            },
        ),
    )
    for task, index, pod_uid in (("ps", 0, "p0"), ("worker", 0, "w0"), ("worker", 1, "w1")):
        s.at(start + 2)
        s.pod(task, index, pod_uid, 0, "Pending", created=start + 2)
    for task, index, pod_uid, node in (
        ("ps", 0, "p0", "node-a"),
        ("worker", 0, "w0", "node-a"),
        ("worker", 1, "w1", "node-b"),
    ):
        s.at(start + 5)
        s.pod(task, index, pod_uid, 0, "Pending", node=node, scheduled=start + 5)
    for task, index, pod_uid in (("ps", 0, "p0"), ("worker", 0, "w0"), ("worker", 1, "w1")):
        s.at(start + 10)
        running = s.pod(task, index, pod_uid, 0, "Running", started=start + 10)
    s.decide(running, phase("Pending", "Running", reason="MinAvailable"))
    s.at(start + 40)
    failed = s.pod(
        "worker", 1, "w1", 0, "Failed", exit_code=137, reason="OOMKilled", finished=start + 40
    )
    s.decide(
        failed,
        (
            ActionDecided,
            {
                "action": "RestartTask",
                "trigger": "PodFailed",
                "phase": "Running",
                "task": "worker",
                "pod": "tf-mnist-worker-1",
                "exit_code": 137,
                "policy": PolicyRef(level="task", index=0, task="worker"),
            },
        ),
        (
            PodsKill,
            {
                "reason": "RestartTask",
                "pods": (
                    PodRef(name="tf-mnist-worker-0", task="worker", index=0, uid="w0"),
                    PodRef(name="tf-mnist-worker-1", task="worker", index=1, uid="w1"),
                ),
            },
        ),
        phase("Running", "Restarting", version=0, retries=1, reason="PodFailed"),
    )
    s.at(start + 45)
    s.pod_gone("worker", 0, "w0", 0, "Running")
    gone = s.pod_gone("worker", 1, "w1", 0, "Failed")
    s.decide(
        gone,
        phase("Restarting", "Running", version=1, retries=1, reason="Restarted"),
        (
            PodsCreate,
            {
                "job_version": 1,
                "podgroup": "tf-mnist",
                "pods": s.pod_refs(("worker", 0), ("worker", 1)),
            },
        ),
    )
    for index, pod_uid, node in ((0, "w0b", "node-a"), (1, "w1b", "node-c")):
        s.at(start + 50)
        s.pod(
            "worker",
            index,
            pod_uid,
            1,
            "Running",
            node=node,
            created=start + 46,
            scheduled=start + 48,
            started=start + 50,
        )
    s.at(start + 100)
    s.pod("worker", 0, "w0b", 1, "Succeeded", exit_code=0, finished=start + 100)
    done = s.pod("worker", 1, "w1b", 1, "Succeeded", exit_code=0, finished=start + 100)
    s.decide(
        done,
        (
            ActionDecided,
            {
                "action": "CompleteJob",
                "trigger": "TaskCompleted",
                "phase": "Running",
                "task": "worker",
            },
        ),
        (
            PodsKill,
            {"reason": "CompleteJob", "pods": s.pod_refs(("ps", 0))},
        ),
        phase("Running", "Completing", version=1, retries=1, reason="TaskCompleted"),
    )
    s.at(start + 102)
    ps_gone = s.pod_gone("ps", 0, "p0", 0, "Running")
    s.decide(ps_gone, phase("Completing", "Completed", version=1, retries=1, reason="Completed"))
    return s


def failing_job(
    key: str = "team-b/mpi-run", uid: str = "u-mpi", start: float = 2_000.0, queue: str = "batch"
) -> Story:
    """A one-pod job whose pod exits 1 and whose job policy aborts it (ends Aborted)."""
    s = Story(key, uid, start=start)
    spec = {"queue": queue, "tasks": [{"name": "main", "replicas": 1}]}
    submitted = s.observe(JobObserved, spec=spec)
    s.decide(
        submitted,
        phase("", "Pending", reason="Submitted"),
        (
            PodsCreate,
            {"job_version": 0, "podgroup": "mpi-run", "pods": s.pod_refs(("main", 0))},
        ),
    )
    s.at(start + 3)
    pod_uid = f"{uid}-m0"
    running = s.pod(
        "main", 0, pod_uid, 0, "Running", node="node-a", created=start + 1, started=start + 3
    )
    s.decide(running, phase("Pending", "Running"))
    s.at(start + 20)
    failed = s.pod(
        "main", 0, pod_uid, 0, "Failed", exit_code=1, reason="Error", finished=start + 20
    )
    s.decide(
        failed,
        (
            ActionDecided,
            {
                "action": "AbortJob",
                "trigger": "PodFailed",
                "phase": "Running",
                "exit_code": 1,
                "pod": "mpi-run-main-0",
                "task": "main",
                "policy": PolicyRef(level="job", index=0),
            },
        ),
        phase("Running", "Aborting", reason="PodFailed"),
    )
    s.at(start + 21)
    gone = s.pod_gone("main", 0, pod_uid, 0, "Failed")
    s.decide(gone, phase("Aborting", "Aborted", reason="PodFailed"))
    return s

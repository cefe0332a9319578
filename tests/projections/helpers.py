"""Helpers shared by the projections tests: two recorded job logs, files of events and
store snapshots."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lavalog.controller.decider.core import replay
from lavalog.events.codec import LogEvent, read_jsonl, write_jsonl
from lavalog.events.decisions import (
    ActionDecided,
    PodGroupCreate,
    PodRef,
    PodsCreate,
    PodsKill,
    PolicyRef,
)
from lavalog.events.observations import ContainerEnd, JobObserved, Observation
from lavalog.projections.service.store.database import Location
from lavalog.projections.service.store.locations import location_of
from lavalog.projections.service.store.postgres import PostgresLocation
from lavalog.projections.service.store.sqlite import FILE_NAME, SqliteLocation
from tests.scenarios import JobScript, phase_change

#: ids as the contract has them (`<uid>:o<n>`; a decision's `<cause>#<n>`)
RECORDED_IDS = "{uid}:o{seq}"


def recorded(key: str, uid: str, start: float) -> JobScript:
    """An empty log of one job incarnation whose clock moves only when told."""
    namespace, name = key.split("/")
    return JobScript(name, namespace=namespace, uid=uid, start=start, tick=0, ids=RECORDED_IDS)


def tf_job(key: str = "team-a/tf-mnist", uid: str = "u-tf", start: float = 1_000.0) -> JobScript:
    """A ps/worker job: worker 1 is OOM-killed, the task policy restarts the task, it completes.

    t=0 submitted; t=1 Pending, pods created; t=5 scheduled; t=10 all Running;
    t=40 worker-1 fails (137, OOMKilled) -> RestartTask, kill both workers, Restarting;
    t=45 workers gone -> Running at version 1, workers created again;
    t=50 new workers running; t=100 workers succeed -> Completing, t=102 ps killed, Completed.
    """
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
    s = recorded(key, uid, start).observe(JobObserved, spec=spec)
    s.decide(
        (PodGroupCreate, {"podgroup": "tf-mnist", "min_member": 3, "queue": "research"}),
        phase_change("", "Pending", reason="Submitted"),
    )
    s.at(start + 1).observe(JobObserved, spec=spec, generation=1)
    s.decide(
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
        s.at(start + 2).pod(task, index, "Pending", uid=pod_uid, node="", created=start + 2)
    for task, index, pod_uid, node in (
        ("ps", 0, "p0", "node-a"),
        ("worker", 0, "w0", "node-a"),
        ("worker", 1, "w1", "node-b"),
    ):
        s.at(start + 5).pod(task, index, "Pending", uid=pod_uid, node=node, scheduled=start + 5)
    for task, index, pod_uid in (("ps", 0, "p0"), ("worker", 0, "w0"), ("worker", 1, "w1")):
        s.at(start + 10).pod(task, index, "Running", uid=pod_uid, node="", started=start + 10)
    s.decide(phase_change("Pending", "Running", reason="MinAvailable"))
    s.at(start + 40).pod(
        "worker",
        1,
        "Failed",
        uid="w1",
        node="",
        exit_code=137,
        reason="OOMKilled",
        finished=start + 40,
    )
    s.decide(
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
        phase_change("Running", "Restarting", version=0, retries=1, reason="PodFailed"),
    )
    s.at(start + 45).pod_deleted("worker", 0, uid="w0", phase="Running")
    s.pod_deleted("worker", 1, uid="w1", phase="Failed")
    s.decide(
        phase_change("Restarting", "Running", version=1, retries=1, reason="Restarted"),
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
        s.at(start + 50).pod(
            "worker",
            index,
            "Running",
            version=1,
            uid=pod_uid,
            node=node,
            created=start + 46,
            scheduled=start + 48,
            started=start + 50,
        )
    s.at(start + 100)
    for index, pod_uid in ((0, "w0b"), (1, "w1b")):
        s.pod(
            "worker",
            index,
            "Succeeded",
            version=1,
            uid=pod_uid,
            node="",
            exit_code=0,
            finished=start + 100,
        )
    s.decide(
        (
            ActionDecided,
            {
                "action": "CompleteJob",
                "trigger": "TaskCompleted",
                "phase": "Running",
                "task": "worker",
            },
        ),
        (PodsKill, {"reason": "CompleteJob", "pods": s.pod_refs(("ps", 0))}),
        phase_change("Running", "Completing", version=1, retries=1, reason="TaskCompleted"),
    )
    s.at(start + 102).pod_deleted("ps", 0, uid="p0", phase="Running")
    s.decide(phase_change("Completing", "Completed", version=1, retries=1, reason="Completed"))
    return s


def failing_job(
    key: str = "team-b/mpi-run", uid: str = "u-mpi", start: float = 2_000.0, queue: str = "batch"
) -> JobScript:
    """A one-pod job whose pod exits 1 and whose job policy aborts it (ends Aborted)."""
    spec = {"queue": queue, "tasks": [{"name": "main", "replicas": 1}]}
    pod_uid = f"{uid}-m0"
    s = recorded(key, uid, start).observe(JobObserved, spec=spec)
    s.decide(
        phase_change("", "Pending", reason="Submitted"),
        (
            PodsCreate,
            {"job_version": 0, "podgroup": "mpi-run", "pods": s.pod_refs(("main", 0))},
        ),
    )
    s.at(start + 3).pod(
        "main", 0, "Running", uid=pod_uid, node="node-a", created=start + 1, started=start + 3
    )
    s.decide(phase_change("Pending", "Running"))
    s.at(start + 20).pod(
        "main", 0, "Failed", uid=pod_uid, node="", exit_code=1, reason="Error", finished=start + 20
    )
    s.decide(
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
        phase_change("Running", "Aborting", reason="PodFailed"),
    )
    s.at(start + 21).pod_deleted("main", 0, uid=pod_uid, phase="Failed")
    s.decide(phase_change("Aborting", "Aborted", reason="PodFailed"))
    return s


def write_events(path: Path, events: Iterable[LogEvent]) -> Path:
    path.write_bytes(b"".join(write_jsonl(events)))
    return path


def snapshot(store: Location | Path) -> dict[str, Any]:
    """Everything a store holds, without the log sequence numbers (they follow the
    interleaving of the two topics, which legitimately differs between consumptions)."""
    db = location_of(store).connect()
    try:
        return {
            "jobs": db.rows("SELECT * FROM jobs ORDER BY uid"),
            "events": sorted(
                db.rows("SELECT id, kind, type, key, job_uid, time, body FROM events")
            ),
            "actions": db.rows("SELECT * FROM actions ORDER BY id"),
            "pod_failures": db.rows("SELECT * FROM pod_failures ORDER BY pod_uid"),
            "pruned": db.rows("SELECT * FROM pruned ORDER BY uid"),
        }
    finally:
        db.close()


def event_count(store: Location | Path) -> int:
    db = location_of(store).connect()
    try:
        count: int = db.rows("SELECT COUNT(*) FROM events")[0][0]
        return count
    finally:
        db.close()


def store_arguments(store: Location) -> list[str]:
    """The command-line options naming a store: `--store URL`, or `--state-dir` of a file
    named as in a state directory (`new_store("state/projections")`)."""
    if isinstance(store, PostgresLocation):
        return ["--store", store.url]
    assert isinstance(store, SqliteLocation) and store.path.name == FILE_NAME, store
    return ["--state-dir", str(store.path.parent)]


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def decided_examples() -> list[LogEvent]:
    """The recorded example jobs with the decisions the real decider makes of them, each
    observation followed by its decisions: a log as the controller writes it."""
    from lavalog.controller.decider.core import replay

    observations = [
        event
        for path in sorted(EXAMPLES.glob("*.jsonl"))
        for event in read_jsonl(path.read_bytes().splitlines())
        if isinstance(event, Observation)
    ]
    return [
        event
        for observation, decisions in replay(observations)
        for event in (observation, *decisions)
    ]


#: the last words of `sidecar_job`'s OOMKilled trainer: eight lines, its log's tail
LAST_WORDS = "\n".join(f"step {n}" for n in range(1, 8)) + "\nCUDA out of memory\n"


def sidecar_job(key: str = "default/sidecar", start: float = 1_000.0) -> list[LogEvent]:
    """A trainer beside a sidecar (`agent`), decided by the real decider: preempted once
    (uncounted, `lavalog.io/uncounted-disruptions`), then the trainer OOMKilled while the
    agent exits 0, and the policy on 137 restarts the job; it is Restarting at the end."""
    namespace, name = key.split("/")
    containers = [{"name": "agent", "image": "agent"}, {"name": "trainer", "image": "trainer"}]
    spec = {
        "maxRetry": 3,
        "policies": [
            {"exitCode": 137, "action": "RestartJob"},
            {"event": "PodEvicted", "action": "RestartJob"},
        ],
        "tasks": [
            {"name": "train", "replicas": 1, "template": {"spec": {"containers": containers}}}
        ],
    }
    preempted = "PreemptionByScheduler"
    script = JobScript(name, spec, namespace=namespace, start=start).submit(
        annotations={"lavalog.io/uncounted-disruptions": preempted}
    )
    script.podgroup("Inqueue").pod("train", 0, "Pending").pod("train", 0, "Running", node="n1")
    script.pod("train", 0, "Running", deleting=True, node="n1", disruption=preempted)
    script.pod_deleted("train", 0, disruption=preempted)
    script.pod("train", 0, "Pending", version=1).pod("train", 0, "Running", version=1, node="n2")
    ends = (
        ContainerEnd(name="agent", exit_code=0, reason="Completed"),
        ContainerEnd(name="trainer", exit_code=137, reason="OOMKilled", message=LAST_WORDS),
    )
    script.pod(
        "train",
        0,
        "Failed",
        version=1,
        node="n2",
        exit_code=137,
        reason="OOMKilled",
        container="trainer",
        containers=ends,
        message=LAST_WORDS,
    )
    return [e for o, ds in replay(script.events) for e in (o, *ds)]

"""The recorded lifecycles shipped under `examples/`, written as scripts.

`python -m tests.examples.scripts DIR` (from the repository's root) writes them as JSONL; a test checks that the files in
the repository are exactly what these scripts produce and that they replay to the
timelines printed in `examples/README.md`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lavalog.events.codec import write_jsonl
from lavalog.events.observations import AnyObservation
from tests.scenarios import JobScript


def _task(name: str, replicas: int, command: str, **extra: Any) -> dict[str, Any]:
    container = {"name": name, "image": "busybox", "command": ["sh", "-c", command]}
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"containers": [container], "restartPolicy": "Never"}},
        **extra,
    }


def _start(script: JobScript, tasks: dict[str, int], *, version: int = 0) -> JobScript:
    """The gang is admitted and every replica goes Pending then Running."""
    for name, replicas in tasks.items():
        script.after(2).pods(name, replicas, "Pending", version=version)
    for name, replicas in tasks.items():
        script.after(3).pods(name, replicas, "Running", version=version)
    return script


def tensorflow_restart_task() -> list[AnyObservation]:
    """A TF ps/worker job: worker 1 fails once, RestartTask restarts the workers, the job
    completes when the workers do."""
    spec = {
        "minAvailable": 3,
        "plugins": {"svc": [], "tensorflow": ["--ps=ps", "--worker=worker", "--port=2222"]},
        "tasks": [
            _task("ps", 1, "sleep 3600"),
            _task(
                "worker",
                2,
                "sleep 60",
                policies=[
                    {"event": "PodFailed", "action": "RestartTask"},
                    {"event": "TaskCompleted", "action": "CompleteJob"},
                ],
            ),
        ],
    }
    script = JobScript("tf-dist", spec, namespace="ml").submit().after(1).podgroup("Inqueue")
    _start(script, {"ps": 1, "worker": 2})
    script.after(40).pod("worker", 1, "Failed", exit_code=1, reason="Error")
    script.after(1).pod("worker", 0, "Running", deleting=True)
    script.after(1).pod("worker", 1, "Failed", deleting=True)
    script.after(1).pod_deleted("worker", 0).pod_deleted("worker", 1, phase="Failed")
    script.after(2).pods("worker", 2, "Pending").after(3).pods("worker", 2, "Running")
    script.after(60).pods("worker", 2, "Succeeded")
    script.after(1).pod("ps", 0, "Running", deleting=True).after(1).pod_deleted("ps", 0)
    return script.events


def mpi_exit_code_restart() -> list[AnyObservation]:
    """An MPI job whose launcher exits with code 3 (a transient fabric error): RestartJob."""
    spec = {
        "minAvailable": 3,
        "policies": [{"exitCode": 3, "action": "RestartJob"}],
        "plugins": {"ssh": [], "svc": [], "mpi": ["--master=mpimaster", "--worker=mpiworker"]},
        "tasks": [
            _task(
                "mpimaster",
                1,
                "mpirun hostname",
                policies=[{"event": "TaskCompleted", "action": "CompleteJob"}],
            ),
            _task("mpiworker", 2, "sleep 3600"),
        ],
    }
    tasks = {"mpimaster": 1, "mpiworker": 2}
    script = JobScript("mpi-allreduce", spec, namespace="hpc").submit().after(1).podgroup("Inqueue")
    _start(script, tasks)
    script.after(20).pod("mpimaster", 0, "Failed", exit_code=3, reason="Error")
    for index in range(2):
        script.pod("mpiworker", index, "Running", deleting=True)
    script.pod("mpimaster", 0, "Failed", deleting=True)
    script.after(2).pod_deleted("mpimaster", 0, phase="Failed")
    script.pod_deleted("mpiworker", 0).pod_deleted("mpiworker", 1)
    _start(script, tasks, version=1)
    script.after(30).pod("mpimaster", 0, "Succeeded", version=1)
    for index in range(2):
        script.after(1).pod("mpiworker", index, "Running", version=1, deleting=True)
        script.pod_deleted("mpiworker", index, version=1)
    return script.events


def max_retry_exhausted() -> list[AnyObservation]:
    """A job whose worker keeps failing: with maxRetry 2 it runs twice, then fails, and
    what still runs is killed."""
    spec = {
        "minAvailable": 2,
        "maxRetry": 2,
        "policies": [{"event": "PodFailed", "action": "RestartJob"}],
        "tasks": [_task("ps", 1, "sleep 3600"), _task("worker", 1, "sleep 10; exit 1")],
    }
    tasks = {"ps": 1, "worker": 1}
    script = JobScript("flaky-train", spec, namespace="ml").submit().after(1).podgroup("Inqueue")
    _start(script, tasks)
    script.after(10).pod("worker", 0, "Failed", exit_code=1, reason="Error")
    script.after(1).pod_deleted("ps", 0).pod_deleted("worker", 0, phase="Failed")
    _start(script, tasks, version=1)
    script.after(10).pod("worker", 0, "Failed", exit_code=1, reason="Error", version=1)
    script.after(1).pod("ps", 0, "Running", version=1, deleting=True)
    script.after(1).pod_deleted("ps", 0, version=1)
    return script.events


def evicted_timeout_cancelled() -> list[AnyObservation]:
    """A pod is evicted; RestartJob waits 5 minutes, the replacement runs, nothing restarts."""
    spec = {
        "minAvailable": 2,
        "policies": [{"event": "PodEvicted", "action": "RestartJob", "timeout": "5m"}],
        "tasks": [_task("worker", 2, "sleep 600")],
    }
    script = JobScript("batch-eval", spec, namespace="ml").submit().after(1).podgroup("Inqueue")
    _start(script, {"worker": 2})
    script.after(120).pod("worker", 1, "Running", reason="Evicted", deleting=True)
    eviction = script.events[-1]
    script.after(5).pod_deleted("worker", 1)
    script.after(2).pod("worker", 1, "Pending").after(20).pod("worker", 1, "Running")
    # the decider names a delayed action's timer after its cause
    script.at(eviction.time + 300).timer(f"{eviction.id}#timer")
    script.after(400).pods("worker", 2, "Succeeded")
    return script.events


EXAMPLES: dict[str, Callable[[], list[AnyObservation]]] = {
    "tensorflow-restart-task.jsonl": tensorflow_restart_task,
    "mpi-exit-code-restart.jsonl": mpi_exit_code_restart,
    "max-retry-exhausted.jsonl": max_retry_exhausted,
    "evicted-timeout-cancelled.jsonl": evicted_timeout_cancelled,
}


def write_examples(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, script in EXAMPLES.items():
        path = directory / name
        path.write_bytes(b"".join(write_jsonl(script())))
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_examples(Path(sys.argv[1] if len(sys.argv) > 1 else "examples")):
        print(written_path)

"""RestartPartition: like RestartTask, but only the pods of the failed pod's partition
(`partitionPolicy`: pod index // partitionSize) are restarted; the job goes Restarting and
counts a retry, as in Volcano's running/restarting/pending states."""

from __future__ import annotations

from typing import Any

from lavalog.controller.decider.core import JobState, initial_state, replay
from lavalog.events.decisions import ActionDecided, AnyDecision, PhaseChanged
from tests.decider.support import created, killed
from tests.scenarios import JobScript

CONTAINER = {"containers": [{"name": "main", "image": "busybox"}]}
ON_FAILURE = [{"event": "PodFailed", "action": "RestartPartition"}]


def spec(partitions: bool = True, policies: list[dict[str, Any]] = ON_FAILURE) -> dict[str, Any]:
    worker: dict[str, Any] = {"name": "worker", "replicas": 6, "template": {"spec": CONTAINER}}
    if partitions:
        worker["partitionPolicy"] = {"totalPartitions": 3, "partitionSize": 2}
    return {"tasks": [worker], "policies": policies}


def run(script: JobScript) -> tuple[JobState, list[AnyDecision]]:
    states: dict[str, JobState] = {}
    decisions = [d for _, ds in replay(script.events, states) for d in ds]
    return states.get(script.key, initial_state(script.key)), decisions


def started(script: JobScript) -> JobScript:
    script.submit().podgroup("Inqueue")
    script.pods("worker", 6, "Pending")
    return script.pods("worker", 6, "Running")


def test_failed_pod_restarts_its_partition_only() -> None:
    script = started(JobScript("part", spec()))
    script.pod("worker", 3, "Failed", exit_code=1)

    state, decisions = run(script)

    assert [d.action for d in decisions if isinstance(d, ActionDecided)] == ["RestartPartition"]
    assert killed(decisions) == ["part-worker-2", "part-worker-3"]
    assert [d.phase for d in decisions if isinstance(d, PhaseChanged)][-1] == "Restarting"
    assert (state.retry_count, state.version) == (1, 0)  # the version stays, as for RestartTask

    script.pod("worker", 2, "Running", deleting=True).pod_deleted("worker", 2)
    script.pod("worker", 3, "Failed", deleting=True).pod_deleted("worker", 3)
    state, decisions = run(script)
    assert created(decisions)[-2:] == ["part-worker-2", "part-worker-3"]
    assert state.phase == "Pending"


def test_evicted_pod_restarts_its_partition() -> None:
    policies = [{"event": "PodEvicted", "action": "RestartPartition"}]
    script = started(JobScript("ev", spec(policies=policies)))
    script.pod_deleted("worker", 4)

    _, decisions = run(script)

    assert killed(decisions) == ["ev-worker-5"]


def test_task_without_partitions_only_syncs() -> None:
    """Volcano finds no partition to kill and leaves the job as it is."""
    script = started(JobScript("flat", spec(partitions=False)))
    script.pod("worker", 3, "Failed", exit_code=1)

    state, decisions = run(script)

    assert killed(decisions) == []
    assert state.phase == "Running" and state.retry_count == 0

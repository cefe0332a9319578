"""A Job that says why: when it restarts, fails or stops, `status.state.message` says in
one line what finally happened (pod and container, exit code and reason, node, who
disrupted it, the policy, the retries left); given/when/then on the decider."""

from __future__ import annotations

from lavalog.controller.decider.core import JobState
from lavalog.events.decisions import ActionDecided, AnyDecision, PhaseChanged, PodFailure
from lavalog.events.observations import AnyObservation, ContainerEnd
from lavalog.events.volcano.api import JobStatus, PodPhase
from tests.decider.support import (
    given,
    last_status,
    observed,
    pod,
    when,
    worker_spec,
)

RESTART_ON_137 = [{"exitCode": 137, "action": "RestartJob"}]
OOM = (
    ContainerEnd(name="agent", exit_code=0, reason="Completed"),
    ContainerEnd(name="trainer", exit_code=137, reason="OOMKilled", message="CUDA out of memory"),
)


def running(*, retry_count: int = 0, **spec: object) -> JobState:
    pods = [pod("worker", i, PodPhase.RUNNING) for i in range(3)]
    return given("Running", pods, spec=worker_spec(**spec), retry_count=retry_count)


def oom_killed() -> AnyObservation:
    """job-worker-0's trainer is OOMKilled beside a sidecar that exited 0."""
    return (
        observed()
        .pod(
            "worker",
            0,
            "Failed",
            exit_code=137,
            container="trainer",
            reason="OOMKilled",
            node="node-2",
            containers=OOM,
        )
        .last
    )


def status_of(decisions: list[AnyDecision]) -> JobStatus:
    written = last_status(decisions)
    assert written is not None
    return written.status


def test_a_restart_says_which_container_failed_how_where_and_the_retries_left() -> None:
    _, decisions = when(running(policies=RESTART_ON_137, maxRetry=3), oom_killed())

    status = status_of(decisions)
    assert (status.state.phase, status.state.reason) == ("Restarting", "RestartJob")
    assert status.state.message == (
        "PodFailed of pod job-worker-0, container trainer (exit code 137, OOMKilled) on"
        " node-2, matched job policy #0; 1 retry left (retryCount 1, maxRetry 3)"
    )
    [decided] = [d for d in decisions if isinstance(d, ActionDecided)]
    assert decided.failure == PodFailure(container="trainer", reason="OOMKilled", node="node-2")


def test_retries_exhausted_names_the_failure_that_used_the_last_one() -> None:
    state, decisions = when(
        running(policies=RESTART_ON_137, maxRetry=3, retry_count=2), oom_killed()
    )

    changes = [d for d in decisions if isinstance(d, PhaseChanged)]
    assert [c.phase for c in changes] == ["Restarting", "Failed"]
    assert changes[0].message.endswith("; no retries left (retryCount 3, maxRetry 3)")
    assert (state.reason, state.message) == (
        "RetriesExhausted",
        "the job ran 3 times; maxRetry is 3; the last RestartJob was on PodFailed of pod"
        " job-worker-0, container trainer (exit code 137, OOMKilled) on node-2, matched job"
        " policy #0",
    )
    assert status_of(decisions).state.message == state.message


def test_an_aborted_job_keeps_saying_what_aborted_it() -> None:
    state, _ = when(running(policies=[{"exitCode": 137, "action": "AbortJob"}]), oom_killed())
    assert (state.phase, state.reason) == ("Aborting", "AbortJob")
    for index in (1, 2):
        gone = observed().pod_deleted("worker", index, uid=f"job-worker-{index}-uid").last
        state, _ = when(state, gone)

    assert (state.phase, state.reason, state.message) == (
        "Aborted",
        "PodsReleased",
        "every pod has finished or gone, after AbortJob on PodFailed of pod job-worker-0,"
        " container trainer (exit code 137, OOMKilled) on node-2, matched job policy #0",
    )


def test_a_job_failed_by_its_pods_names_the_last_failure() -> None:
    """No policy acts: Volcano's completion rules fail the job, and the message says
    which failure ended it."""
    pods = [pod("worker", 0, PodPhase.RUNNING), pod("worker", 1, PodPhase.SUCCEEDED)]
    state = given("Running", pods, spec=worker_spec(task={"replicas": 2}, minAvailable=2))

    state, _ = when(state, oom_killed())

    assert (state.phase, state.reason, state.message) == (
        "Failed",
        "TaskMinAvailableNotMet",
        "task worker: 1 pods succeeded, minAvailable is 2; last: PodFailed of pod job-worker-0,"
        " container trainer (exit code 137, OOMKilled) on node-2",
    )


def test_a_preemption_says_who_disrupted_the_pod() -> None:
    preempted = (
        observed()
        .pod(
            "worker", 1, "Running", deleting=True, node="node-1", disruption="PreemptionByScheduler"
        )
        .last
    )
    state, _ = when(running(policies=[{"event": "PodEvicted", "action": "RestartJob"}]), preempted)
    assert state.message == (
        "PodEvicted of pod job-worker-1 on node-1, disrupted by PreemptionByScheduler, matched"
        " job policy #0; 1 retry left (retryCount 1, maxRetry 3)"
    )

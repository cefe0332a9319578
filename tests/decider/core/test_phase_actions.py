"""Every phase-and-action pair of Volcano's `state/*.go`, in the spirit of its job_state_test.go.

Given a job in a phase with pods in given phases, when an action arrives, then the job
is in the expected phase, exactly the expected pods were killed, and retryCount and
version moved as expected.
"""

from __future__ import annotations

import msgspec
import pytest

from lavalog.controller.decider.core import PodRecord
from lavalog.events.decisions import PodsCreate
from tests.decider.support import command, given, killed, nudge, pod, when

R, P, S, F = "Running", "Pending", "Succeeded", "Failed"
SYNC = "sync"


def _workers(*phases: str, deleting: bool = False) -> list[PodRecord]:
    return [pod("worker", i, phase, deleting=deleting) for i, phase in enumerate(phases)]


# fmt: off
CASES = [
    # phase, pods, action, expected phase, killed indices, retry +, version +
    pytest.param("Pending", _workers(R, R, P), "RestartJob", "Restarting", [0, 1, 2], 1, 1, id="pending-restart"),
    pytest.param("Pending", _workers(R, S, F), "AbortJob", "Aborting", [0], 0, 1, id="pending-abort-keeps-finished"),
    pytest.param("Pending", _workers(R, P, P), "CompleteJob", "Completing", [0, 1, 2], 0, 1, id="pending-complete"),
    pytest.param("Pending", _workers(R, P, P), "TerminateJob", "Terminating", [0, 1, 2], 0, 1, id="pending-terminate"),
    pytest.param("Pending", _workers(R, R, S), SYNC, "Running", [], 0, 0, id="pending-minavailable-reached"),
    pytest.param("Pending", _workers(R, R, P), SYNC, "Pending", [], 0, 0, id="pending-minavailable-not-reached"),
    pytest.param("Pending", _workers(R, R, P), "ResumeJob", "Pending", [], 0, 0, id="pending-resume-only-syncs"),
    pytest.param("Running", _workers(R, R, R), "RestartJob", "Restarting", [0, 1, 2], 1, 1, id="running-restart"),
    pytest.param("Running", _workers(R, S, R), "AbortJob", "Aborting", [0, 2], 0, 1, id="running-abort"),
    pytest.param("Running", _workers(R, R, F), "TerminateJob", "Terminating", [0, 1], 0, 1, id="running-terminate"),
    pytest.param("Running", _workers(R, S, S), "CompleteJob", "Completing", [0], 0, 1, id="running-complete"),
    pytest.param("Running", _workers(S, S, S), SYNC, "Completed", [], 0, 0, id="running-all-succeeded"),
    pytest.param("Running", _workers(S, S, F), SYNC, "Failed", [], 0, 0, id="running-task-below-minavailable"),
    pytest.param("Running", _workers(S, R, R), SYNC, "Running", [], 0, 0, id="running-still-running"),
    pytest.param("Running", _workers(R, R, R), "ResumeJob", "Running", [], 0, 0, id="running-resume-only-syncs"),
    pytest.param("Restarting", _workers(R, R, R, deleting=True), SYNC, "Restarting", [], 0, 0, id="restarting-waits-for-pods-to-go"),
    pytest.param("Restarting", [], SYNC, "Pending", [], 0, 0, id="restarting-pods-gone"),
    pytest.param("Restarting", _workers(R, R, R), "RestartJob", "Restarting", [0, 1, 2], 0, 0, id="restarting-restart-kills-again"),
    pytest.param("Restarting", _workers(R, R, R), "AbortJob", "Aborting", [0, 1, 2], 0, 1, id="restarting-abort-is-honoured"),
    pytest.param("Restarting", _workers(R, R, R, deleting=True), "ResumeJob", "Restarting", [], 0, 0, id="restarting-resume-only-syncs"),
    pytest.param("Aborting", _workers(R, S, F), SYNC, "Aborting", [0], 0, 0, id="aborting-kills-live-pods"),
    pytest.param("Aborting", _workers(S, F, F), SYNC, "Aborted", [], 0, 0, id="aborting-all-released"),
    pytest.param("Aborting", _workers(R, S, F), "ResumeJob", "Restarting", [0], 0, 1, id="aborting-resume"),
    pytest.param("Aborted", _workers(R), SYNC, "Aborted", [0], 0, 0, id="aborted-kills-stragglers"),
    pytest.param("Aborted", _workers(S, F), "ResumeJob", "Pending", [], 0, 1, id="aborted-resume-no-retry-counted"),
    pytest.param("Completing", _workers(R, S, S), SYNC, "Completing", [0], 0, 0, id="completing-kills-live-pods"),
    pytest.param("Completing", _workers(S, S, F), SYNC, "Completed", [], 0, 0, id="completing-done"),
    pytest.param("Terminating", _workers(S, R, R, deleting=True), SYNC, "Terminating", [], 0, 0, id="terminating-waits"),
    pytest.param("Terminating", _workers(S, F), SYNC, "Terminated", [], 0, 0, id="terminating-done"),
    pytest.param("Completed", _workers(R, S), "RestartJob", "Completed", [0], 0, 0, id="completed-never-restarts"),
    pytest.param("Failed", _workers(R, F), "ResumeJob", "Failed", [0], 0, 0, id="failed-never-resumes"),
    pytest.param("Terminated", _workers(P, S), SYNC, "Terminated", [0], 0, 0, id="terminated-kills-stragglers"),
]
# fmt: on


@pytest.mark.parametrize(
    ("phase", "pods", "action", "expected", "kills", "retries", "versions"), CASES
)
def test_phase_executes_action(phase, pods, action, expected, kills, retries, versions):
    state = given(phase, pods)
    observation = nudge() if action == SYNC else command(action)

    after, decisions = when(state, observation)

    assert after.phase == expected
    assert killed(decisions) == [f"job-worker-{i}" for i in kills]
    assert after.retry_count - state.retry_count == retries
    assert after.version - state.version == versions


def test_restart_on_last_retry_keeps_finished_pods_and_fails():
    """retryCount 2 of maxRetry 3: the restart is the last one, so finished pods stay for
    their logs, the retry count reaches maxRetry and the job fails at once."""
    state = given("Running", _workers(R, F, S), retry_count=2)

    after, decisions = when(state, command("RestartJob"))

    assert killed(decisions) == ["job-worker-0"]
    assert after.phase == "Failed"
    assert after.retry_count == 3


def test_failed_job_with_retries_exhausted_creates_no_pods():
    """volcano#1718: the sync that fails the job must not create pods first."""
    state = given("Restarting", [], retry_count=3)

    after, decisions = when(state, nudge())

    assert after.phase == "Failed"
    assert not after.pods
    assert all(type(d).__name__ != "PodsCreate" for d in decisions)


def test_pods_are_decided_with_the_generation_of_the_spec_they_come_from() -> None:
    """The actuator builds them from a Job it holds at that generation without reading it."""
    state = msgspec.structs.replace(given("Pending"), generation=3)

    _, decisions = when(state, nudge(phase="Inqueue"))

    creates = [d for d in decisions if isinstance(d, PodsCreate)]
    assert creates and all(d.job_generation == 3 for d in creates)

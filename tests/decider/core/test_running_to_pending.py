"""Running goes back to Pending when more pods are pending than the job can spare
(`status.pending > replicas - minAvailable`, Volcano's `state/running.go`): pods lost and
made again, or a scale-up, wait to be scheduled."""

from __future__ import annotations

from lavalog.events.decisions import PhaseChanged
from tests.decider.support import created, given, last_status, phases, pod, when, worker_spec
from tests.decider.support import observed as script


def lost_pod(min_available: int):
    """A Running job of three workers whose worker-0 was evicted (deleted by someone else)."""
    state = given(
        "Running",
        [pod("worker", i, "Running") for i in range(3)],
        spec=worker_spec(minAvailable=min_available),
    )
    return state, script().pod_deleted("worker", 0, uid="job-worker-0-uid").last


def test_a_pod_made_again_while_the_gang_needs_it_sends_the_job_back_to_pending():
    state, deleted = lost_pod(min_available=3)

    _, decisions = when(state, deleted)

    assert created(decisions) == ["job-worker-0"]
    assert phases(decisions) == ["Pending"]
    change = next(d for d in decisions if isinstance(d, PhaseChanged))
    assert (change.reason, change.message) == (
        "PodsPending",
        "1 of 3 pods pending; minAvailable is 3",
    )
    status = last_status(decisions)
    assert status is not None
    assert (status.status.state.phase, status.status.pending, status.status.running) == (
        "Pending",
        1,
        2,
    )


def test_the_job_runs_again_once_the_new_pod_runs():
    state, deleted = lost_pod(min_available=3)
    state, _ = when(state, deleted)

    _, decisions = when(state, script().pod("worker", 0, "Running", uid="new-uid").last)

    assert phases(decisions) == ["Running"]


def test_a_job_that_can_spare_the_pod_stays_running():
    state, deleted = lost_pod(min_available=2)

    _, decisions = when(state, deleted)

    assert created(decisions) == ["job-worker-0"]
    assert phases(decisions) == []


def test_a_scale_up_waits_in_pending_for_its_new_pods():
    state = given("Running", [pod("worker", i, "Running") for i in range(3)])
    bigger = worker_spec(minAvailable=5, task={"replicas": 5})
    update = script().submit().submit(bigger).last

    _, decisions = when(state, update)

    assert created(decisions) == ["job-worker-3", "job-worker-4"]
    assert phases(decisions) == ["Pending"]

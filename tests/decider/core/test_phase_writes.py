"""Every phase Volcano writes reaches the API, in order: a step that passes through a
phase (Aborted -> Restarting -> Pending on ResumeJob; Running -> Restarting -> Failed when
the last retry is used) writes the status of each, as Volcano's handlers each write
theirs before the job is synced again."""

from __future__ import annotations

from lavalog.events.decisions import AnyDecision, PhaseChanged, PodsKill, StatusWrite
from tests.decider.support import command, given, pod, when, worker_spec
from tests.decider.support import observed as script


def written(decisions: list[AnyDecision]) -> list[tuple[str, int, int]]:
    """(phase, version, retryCount) of each status write, in order."""
    return [
        (d.status.state.phase, d.status.version, d.status.retry_count)
        for d in decisions
        if isinstance(d, StatusWrite)
    ]


def test_resume_writes_restarting_then_pending():
    state = given("Aborted", version=1)  # suspended: its pods are gone

    _, decisions = when(state, command("ResumeJob"))

    assert written(decisions) == [("Restarting", 2, 0), ("Pending", 2, 0)]


def test_the_last_retry_writes_restarting_then_failed():
    spec = worker_spec(policies=[{"event": "PodFailed", "action": "RestartJob"}])
    state = given(
        "Running", [pod("worker", i, "Running") for i in range(3)], spec=spec, retry_count=2
    )

    _, decisions = when(state, script().pod("worker", 0, "Failed", exit_code=1).last)

    assert written(decisions) == [("Restarting", 1, 3), ("Failed", 1, 3)]
    restarting = next(d for d in decisions if isinstance(d, StatusWrite))
    assert [c.status for c in restarting.status.conditions][-1] == "Restarting"


def test_each_write_follows_its_phase_change_and_the_kills_follow_the_new_version():
    spec = worker_spec(policies=[{"event": "PodFailed", "action": "RestartJob"}])
    state = given(
        "Running", [pod("worker", i, "Running") for i in range(3)], spec=spec, retry_count=2
    )

    _, decisions = when(state, script().pod("worker", 0, "Failed", exit_code=1).last)

    kinds = [
        f"{type(d).__name__} {d.phase}" if isinstance(d, PhaseChanged) else type(d).__name__
        for d in decisions
        if isinstance(d, (PhaseChanged, StatusWrite, PodsKill))
    ]
    assert kinds == [
        "PhaseChanged Restarting",
        "StatusWrite",
        "PodsKill",
        "PhaseChanged Failed",
        "StatusWrite",
    ]


def test_a_step_that_ends_in_the_phase_it_reached_writes_once():
    state = given("Pending", [pod("worker", i, "Pending") for i in range(3)])
    state, _ = when(state, script().pod("worker", 0, "Running", uid="job-worker-0-uid").last)
    state, _ = when(state, script().pod("worker", 1, "Running", uid="job-worker-1-uid").last)

    _, decisions = when(state, script().pod("worker", 2, "Running", uid="job-worker-2-uid").last)

    assert [phase for phase, _, _ in written(decisions)] == ["Running"]

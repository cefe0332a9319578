"""A pod observed in a phase it has already left is a late copy of an earlier fact.

Found in the chaos run: after the job completed, a `Pending` observation of a pod that
had since succeeded (the same id as its first `Pending`) reached the decider again; it
killed the pod as a leftover of a finished job, and the audit, which reads each fact
once, could not reproduce that decision.
"""

from __future__ import annotations

from lavalog.controller.decider.core import JobState, evolve, initial_state, replay, step
from lavalog.controller.decider.core.flow import step_by_rules
from lavalog.events.decisions import AnyDecision
from lavalog.events.observations import AnyObservation
from tests.scenarios import JobScript

SPEC = {
    "minAvailable": 1,
    "tasks": [
        {"name": "worker", "replicas": 1, "template": {"spec": {"containers": [{"name": "m"}]}}}
    ],
}


def completed() -> JobScript:
    script = JobScript("late", SPEC).submit().podgroup("Inqueue")
    return (
        script.pod("worker", 0, "Pending").pod("worker", 0, "Running").pod("worker", 0, "Succeeded")
    )


def decided(script: JobScript) -> tuple[JobState, list[tuple[AnyObservation, list[AnyDecision]]]]:
    states: dict[str, JobState] = {}
    steps = list(replay(script.events, states))
    return states.get(script.key, initial_state(script.key)), steps


def test_a_late_pending_after_the_pod_succeeded_decides_nothing() -> None:
    before, _ = decided(completed())
    assert before.phase == "Completed"

    after, steps = decided(completed().pod("worker", 0, "Pending"))

    assert steps[-1][1] == []
    assert after == before


def test_the_state_folded_from_the_log_skips_it_too() -> None:
    """What projections and snapshots rebuild: `evolve` over observations and decisions."""
    script = completed().pod("worker", 0, "Running")
    stepped, steps = decided(script)
    folded = initial_state(script.key)
    for observation, decisions in steps:
        folded = evolve(folded, observation)
        for decision in decisions:
            folded = evolve(folded, decision)
    assert folded == stepped
    assert stepped.pods["late-worker-0"].phase == "Succeeded"


def test_a_newer_phase_and_a_new_pod_of_the_same_name_are_not_stale() -> None:
    script = completed().pod_deleted("worker", 0, phase="Succeeded")
    state, _ = decided(script.pod("worker", 0, "Pending"))
    assert state.pods["late-worker-0"].phase == "Pending"  # a new uid: a new pod


def test_a_late_pending_of_a_running_pod_starts_no_pod_pending_timeout() -> None:
    """Volcano's informer never hands `updatePod` an older version of a pod after a newer
    one, so a late copy is no PodPending: the rules, run in full, agree with the shortcut
    that folds it without running them."""
    spec = {
        **SPEC,
        "policies": [{"event": "PodPending", "action": "RestartJob", "timeout": "1m"}],
    }
    script = JobScript("late", spec).submit().podgroup("Inqueue")
    script.pod("worker", 0, "Pending").pod("worker", 0, "Running")
    state, _ = decided(script)
    late = script.pod("worker", 0, "Pending").last

    assert evolve(state, late) is state
    assert step_by_rules(state, late, state) == (state, [])
    assert step(state, late) == (state, [])

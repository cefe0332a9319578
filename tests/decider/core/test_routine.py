"""Routine pod facts (`routine`) are decided without the general step's layers, and only
those: given/when/then at each edge of the definition, each decided the same, byte for
byte, as by every rule. The property over arbitrary logs is in `test_properties`."""

from __future__ import annotations

from typing import Any

import msgspec

from lavalog.controller.decider.core import evolve, replay
from lavalog.controller.decider.core.flow import step, step_by_rules
from lavalog.controller.decider.core.routine import is_routine
from lavalog.controller.decider.core.state import JobState
from lavalog.controller.decider.core.step import Step
from lavalog.events.codec import encode
from lavalog.events.decisions import AnyDecision, PhaseChanged, PodsKill, StatusWrite
from lavalog.events.observations import AnyObservation
from tests.scenarios import JobScript

TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
RESTART_TASK = {"event": "PodFailed", "action": "RestartTask"}


def spec(*, policies: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    """Three workers, all needed, restarted together when one fails."""
    task = {"name": "w", "replicas": 3, "template": TEMPLATE, "policies": [RESTART_TASK]}
    return {"minAvailable": 3, "maxRetry": 5, "tasks": [task], "policies": policies or [], **extra}


def encoded(decided: tuple[JobState, list[AnyDecision]]) -> tuple[bytes, list[bytes]]:
    state, decisions = decided
    return msgspec.json.encode(state), [encode(decision) for decision in decisions]


def routine_step(
    state: JobState, observation: AnyObservation, observed: JobState
) -> tuple[JobState, list[AnyDecision]] | None:
    """What `step` decides by the routine (a news fact), or None where the rules decide."""
    current = Step(state, observation, observed)
    if not is_routine(current):
        assert current.state is observed and not current.decisions  # nothing decided
        return None
    return step(state, observation)


def decided_last(script: JobScript) -> tuple[bool, list[type[AnyDecision]]]:
    """Whether the last fact is routine, and the kinds it decides (by every rule; a
    routine fact decides them byte for byte the same)."""
    states: dict[str, JobState] = {}
    for _ in replay(script.events[:-1], states):
        pass
    state, observation = states[script.key], script.last
    observed = evolve(state, observation)
    by_rules = step_by_rules(state, observation, observed)
    routine = routine_step(state, observation, observed)
    if routine is not None:
        assert encoded(routine) == encoded(by_rules)
    return routine is not None, [type(decision) for decision in by_rules[1]]


def running(job_spec: dict[str, Any]) -> JobScript:
    script = JobScript("train", job_spec).submit().podgroup("Inqueue")
    return script.pods("w", 3, "Pending").pods("w", 3, "Running")


def test_a_pod_running_in_a_job_short_of_min_available_is_routine():
    script = JobScript("train", spec()).submit().podgroup("Inqueue").pods("w", 3, "Pending")
    script.pod("w", 0, "Running")

    assert decided_last(script) == (True, [StatusWrite])


def test_the_pod_that_brings_the_job_to_min_available_goes_by_the_rules():
    script = JobScript("train", spec()).submit().podgroup("Inqueue").pods("w", 3, "Pending")
    script.pod("w", 0, "Running").pod("w", 1, "Running").pod("w", 2, "Running")

    assert decided_last(script) == (False, [PhaseChanged, StatusWrite])


def test_a_killed_pod_gone_while_others_still_go_is_routine():
    script = running(spec()).pod("w", 1, "Failed", exit_code=1)  # RestartTask: all killed
    script.pod_deleted("w", 0)

    assert decided_last(script) == (True, [StatusWrite])


def test_a_pod_failure_a_policy_matches_goes_by_the_rules():
    script = running(spec()).pod("w", 1, "Failed", exit_code=1)

    routine, decided = decided_last(script)

    assert not routine
    assert StatusWrite in decided and len(decided) > 1


def test_a_pod_change_a_job_policy_names_goes_by_the_rules():
    """`*` matches TaskCompleted: the last pod of the task Succeeded (the first one's
    success is no event, and routine)."""
    job_spec = spec(policies=[{"event": "*", "action": "CompleteJob"}])
    script = running(job_spec).pod("w", 0, "Succeeded")
    assert decided_last(script) == (True, [StatusWrite])
    script.pod("w", 1, "Succeeded").pod("w", 2, "Succeeded")

    routine, decided = decided_last(script)

    assert not routine
    assert decided[0] is not StatusWrite


def test_a_pod_change_while_a_timer_waits_goes_by_the_rules():
    job_spec = spec(policies=[{"event": "Unknown", "action": "RestartJob", "timeout": "1m"}])
    script = running(job_spec).podgroup("Unknown").pod("w", 0, "Running", restarts=1)

    assert decided_last(script)[0] is False


def test_a_pod_change_beside_a_pod_of_an_older_version_left_running_goes_by_the_rules():
    """Restarting kills such a pod at its sync (one another controller's restart left);
    the state is made by hand, since lavalog's own restarts kill them on entering."""
    script = running(spec()).pod("w", 1, "Failed", exit_code=1)  # Restarting, version 0
    states: dict[str, JobState] = {}
    for _ in replay(script.events, states):
        pass
    state = states[script.key]
    older = msgspec.structs.replace(state.pods["train-w-2"], deleting=False, killed=False)
    pods = {**state.pods, "train-w-2": older}
    state = msgspec.structs.replace(state, version=1, pods=pods, counts=None)  # counted anew
    script.pod_deleted("w", 0)
    observed = evolve(state, script.last)

    assert routine_step(state, script.last, observed) is None
    assert PodsKill in [type(d) for d in step_by_rules(state, script.last, observed)[1]]

"""Taking over from Volcano: a Job first observed with a status goes on from it.

Volcano's job controller ran these jobs; lavalog starts with them already Running,
finished or half-way through a transition, with their PodGroups and pods in place.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from lavalog.controller.decider.core import JobState, initial_state, replay
from lavalog.events.decisions import (
    ActionDecided,
    AnyDecision,
    JobAdmitted,
    PodGroupCreate,
    PodsCreate,
    StatusWrite,
)
from lavalog.events.observations import AnyObservation, JobObserved
from lavalog.events.volcano.api import JobCondition, JobStatus
from lavalog.events.volcano.api import JobState as StatusState
from tests.decider.support import created, killed, phases
from tests.scenarios import JobScript

SPEC: dict[str, Any] = {
    "minAvailable": 2,
    "maxRetry": 4,
    "policies": [{"event": "PodFailed", "action": "RestartJob"}],
    "tasks": [{"name": "w", "replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}],
}
#: what Volcano left: a job that ran three times (retryCount 2, version 2); one entry per
#: phase, the latest last (`appendJobCondition`)
PAST = (
    JobCondition(status="Restarting", last_transition_time="2026-01-01T00:02:00Z"),
    JobCondition(status="Pending", last_transition_time="2026-01-01T00:03:00Z"),
    JobCondition(status="Running", last_transition_time="2026-01-01T00:04:00Z"),
)


def volcano_status(phase: str, *, version: int = 2, retry_count: int = 2) -> JobStatus:
    conditions = PAST if phase == "Running" else (*PAST, JobCondition(status=phase))
    return JobStatus(
        state=StatusState(phase=phase, reason="Volcano", last_transition_time=None),
        min_available=2,
        running=2 if phase == "Running" else 0,
        version=version,
        retry_count=retry_count,
        conditions=conditions,
    )


def taken_over(phase: str, **status: int) -> JobScript:
    """The Job as the watchers first report it: with the status Volcano wrote."""
    script = JobScript("inherited", SPEC).submit()
    first = script.events[0]
    assert isinstance(first, JobObserved)
    script.events[0] = msgspec.structs.replace(first, status=volcano_status(phase, **status))
    return script


def decide(events: list[AnyObservation]) -> tuple[JobState, list[list[AnyDecision]]]:
    states: dict[str, JobState] = {}
    decisions = [ds for _, ds in replay(events, states)]
    key = events[0].key
    return states.get(key, initial_state(key)), decisions


def flat(decisions: list[list[AnyDecision]]) -> list[AnyDecision]:
    return [d for ds in decisions for d in ds]


def test_a_running_job_keeps_its_podgroup_and_pods_and_its_counters():
    script = taken_over("Running").podgroup("Running").pods("w", 2, "Running", version=2)
    script.listed(("w", 0), ("w", 1))

    state, decisions = decide(script.events)

    everything = flat(decisions)
    assert not [d for d in everything if isinstance(d, PodGroupCreate | PodsCreate)]
    assert killed(everything) == [] and phases(everything) == []
    assert (state.phase, state.version, state.retry_count) == ("Running", 2, 2)
    # the first status lavalog writes moves Running's entry to its time, as Volcano's would
    assert state.conditions[:2] == PAST[:2]
    assert [c.status for c in state.conditions] == ["Restarting", "Pending", "Running"]
    # nothing decided before the pod list but the admission of the spec
    assert [type(d) for d in flat(decisions[:-1])] == [JobAdmitted]


def test_facts_that_come_before_the_job_are_not_lost():
    """The watchers list jobs, pods and PodGroups in parallel: the Job may come last."""
    script = taken_over("Running").podgroup("Running").pods("w", 2, "Running", version=2)
    script.listed(("w", 0), ("w", 1))
    job, *rest = script.events

    state, decisions = decide([*rest, job])

    assert not [d for d in flat(decisions) if isinstance(d, PodGroupCreate | PodsCreate)]
    assert set(state.pods) == {"inherited-w-0", "inherited-w-1"}
    assert state.podgroup is not None and state.podgroup.phase == "Running"


def test_the_counters_go_on_from_where_volcano_left_them():
    script = taken_over("Running").podgroup("Running").pods("w", 2, "Running", version=2)
    script.listed(("w", 0), ("w", 1)).pod("w", 0, "Failed", version=2, exit_code=1)

    state, decisions = decide(script.events)

    assert phases(decisions[-1])[:1] == ["Restarting"]
    assert (state.version, state.retry_count) == (3, 3)
    status = [d for d in decisions[-1] if isinstance(d, StatusWrite)][-1].status
    assert status.conditions[0] == PAST[1]  # Volcano's entries kept, never reset
    assert [c.status for c in status.conditions] == ["Pending", "Running", "Restarting"]


def test_a_pod_that_does_not_exist_any_more_is_created_again():
    """Volcano's sync in Running creates missing pods: so does lavalog, once it knows."""
    script = taken_over("Running").podgroup("Running").pod("w", 0, "Running", version=2)
    script.listed(("w", 0))

    _, decisions = decide(script.events)

    assert created(flat(decisions)) == ["inherited-w-1"]
    pods = [d for d in flat(decisions) if isinstance(d, PodsCreate)]
    assert pods[0].job_version == 2


@pytest.mark.parametrize("phase", ["Completed", "Failed", "Terminated", "Aborted"])
def test_a_finished_job_stays_finished(phase):
    script = taken_over(phase).pods("w", 2, "Succeeded", version=2).listed(("w", 0), ("w", 1))

    state, decisions = decide(script.events)

    assert phases(flat(decisions)) == [] and killed(flat(decisions)) == []
    assert (state.phase, state.version, state.retry_count) == (phase, 2, 2)


@pytest.mark.parametrize(
    ("phase", "final"),
    [("Aborting", "Aborted"), ("Completing", "Completed"), ("Terminating", "Terminated")],
)
def test_a_job_half_way_through_releasing_goes_on_as_volcano_would(phase, final):
    script = taken_over(phase).podgroup("Running")
    script.pod("w", 0, "Running", version=2).pod("w", 1, "Succeeded", version=2)
    script.listed(("w", 0), ("w", 1))

    _, decisions = decide(script.events)
    assert killed(decisions[-1]) == ["inherited-w-0"]  # the running one; finished pods stay

    script.pod_deleted("w", 0, version=2)
    state, decisions = decide(script.events)
    assert phases(decisions[-1]) == [final]
    assert (state.version, state.retry_count) == (2, 2)


def test_a_restarting_job_starts_its_new_version_once_the_old_pods_are_gone():
    script = taken_over("Restarting", version=3).podgroup("Running")
    script.pod("w", 0, "Running", version=2, deleting=True).listed(("w", 0))

    _, decisions = decide(script.events)
    assert created(flat(decisions)) == []  # an old pod is still terminating

    script.pod_deleted("w", 0, version=2)
    state, decisions = decide(script.events)
    assert phases(decisions[-1]) == ["Pending"]
    assert created(decisions[-1]) == ["inherited-w-0", "inherited-w-1"]
    assert {d.job_version for d in decisions[-1] if isinstance(d, PodsCreate)} == {3}
    assert (state.version, state.retry_count) == (3, 2)


def test_a_command_that_comes_before_the_pod_list_is_carried_out_after_it():
    script = taken_over("Running").command("AbortJob").podgroup("Running")
    script.pods("w", 2, "Running", version=2).listed(("w", 0), ("w", 1))

    state, decisions = decide(script.events)

    actions = [d for d in decisions[-1] if isinstance(d, ActionDecided)]
    assert [(a.action, a.trigger) for a in actions] == [("AbortJob", "CommandIssued")]
    assert phases(decisions[-1]) == ["Aborting"]
    assert state.deferred_actions == ()


def test_a_job_without_a_status_is_started_as_before():
    script = JobScript("fresh", SPEC).submit()

    state, decisions = decide(script.events)

    assert phases(flat(decisions)) == ["Pending"]
    assert [type(d) for d in flat(decisions)].count(PodGroupCreate) == 1
    assert not state.pods_unknown


def test_a_restart_volcano_began_kills_what_is_left_of_the_old_version_first():
    """Volcano was switched off after it entered Restarting (version 3) and before its
    old pods (version 2) were deleted: Restarting kills them, then starts version 3."""
    script = taken_over("Restarting", version=3).podgroup("Running")
    script.pods("w", 2, "Running", version=2).listed(("w", 0), ("w", 1))

    _, decisions = decide(script.events)
    assert killed(decisions[-1]) == ["inherited-w-0", "inherited-w-1"]
    assert created(flat(decisions)) == []

    script.pod_deleted("w", 0, version=2).pod_deleted("w", 1, version=2)
    state, decisions = decide(script.events)
    assert phases(decisions[-1]) == ["Pending"]
    assert created(decisions[-1]) == ["inherited-w-0", "inherited-w-1"]
    assert (state.version, state.retry_count) == (3, 2)

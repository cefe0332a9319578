"""A job name reused by a new Job (another uid): each incarnation is decided on its own.

The decider remembers nothing of a deleted incarnation that could change how the next
one is decided, so the decisions are the same whether the decider kept the old state,
restarted from a snapshot taken after the deletion, or started from nothing.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lavalog.controller.decider.core import initial_state, replay, step
from lavalog.events.decisions import (
    ActionDecided,
    AnyDecision,
    JobRejected,
    PhaseChanged,
    StatusWrite,
)
from lavalog.events.observations import AnyObservation, JobObserved
from tests.scenarios import INCARNATION_IDS, JobScript

TASK = {"name": "w", "replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}
VALID: dict[str, Any] = {"minAvailable": 2, "tasks": [TASK]}
#: duplicate task names: admission refuses it
INVALID: dict[str, Any] = {"minAvailable": 2, "tasks": [TASK, TASK]}


def incarnation(name: str, uid: str, start: float) -> JobScript:
    return JobScript(name, VALID, uid=uid, start=start, ids=INCARNATION_IDS)


def completed_then_deleted(name: str = "reuse3") -> JobScript:
    script = incarnation(name, "uid-first", 1_000.0).submit().podgroup("Inqueue")
    script.pods("w", 2, "Running").pods("w", 2, "Succeeded").delete()
    return script


def decisions_of(events: list[AnyObservation]) -> list[list[AnyDecision]]:
    return [decisions for _, decisions in replay(events)]


def test_a_reused_name_with_an_invalid_spec_is_rejected_and_fails():
    first = completed_then_deleted().events
    again = incarnation("reuse3", "uid-second", 2_000.0).submit(INVALID).events

    decisions = decisions_of(first + again)[-1]

    rejected = [d for d in decisions if isinstance(d, JobRejected)]
    failed = [d for d in decisions if isinstance(d, PhaseChanged)]
    assert len(rejected) == 1 and rejected[0].job_uid == "uid-second"
    assert "unique" in str(rejected[0].errors)
    assert [(d.phase, d.reason) for d in failed] == [("Failed", "InvalidSpec")]
    status = [d for d in decisions if isinstance(d, StatusWrite)][-1].status
    assert (status.state.phase, status.retry_count, status.version) == ("Failed", 0, 0)


def test_a_new_incarnation_is_decided_alike_after_the_old_state_or_from_nothing():
    """The decider service forgets a deleted job at its next snapshot; a restart may
    restore the old incarnation or nothing at all. Neither may change a decision."""
    old = completed_then_deleted().events
    for spec in (VALID, INVALID):
        new = incarnation("reuse3", "uid-second", 2_000.0).submit(spec).podgroup("Inqueue").events
        kept = decisions_of(old + new)[len(old) :]
        forgotten = decisions_of(new)
        assert kept == forgotten, spec["tasks"]


def test_a_reused_name_with_another_valid_spec_is_a_new_job_not_an_update():
    """JobUpdated is about a change of one Job's spec; a new Job under an old name has no
    earlier spec, so a JobUpdated policy must not act on it."""
    updated = {"event": "JobUpdated", "action": "AbortJob"}
    first = completed_then_deleted().events
    scaled = {**VALID, "policies": [updated], "tasks": [{**TASK, "replicas": 3}]}
    again = incarnation("reuse3", "uid-second", 2_000.0).submit(scaled).events

    decisions = decisions_of(first + again)[-1]

    assert not [d for d in decisions if isinstance(d, ActionDecided)]
    assert [d.phase for d in decisions if isinstance(d, PhaseChanged)] == ["Pending"]


def test_a_late_copy_of_an_older_generation_does_not_report_a_rejection_again():
    script = JobScript("gens", VALID, ids=INCARNATION_IDS).submit().submit(INVALID)
    events = script.events
    state = initial_state(script.key)
    for event in events:
        state, _ = step(state, event)
    first = events[0]
    assert isinstance(first, JobObserved)
    late = msgspec.structs.replace(first, id="late-copy", time=first.time + 100)

    _, decisions = step(state, late)

    assert not [d for d in decisions if isinstance(d, JobRejected)]

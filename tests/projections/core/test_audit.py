"""The audit: recomputed decisions against recorded ones, with a fake and with the decider."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

from lavalog.controller.decider.core import replay
from lavalog.events.codec import LogEvent, to_builtins
from lavalog.events.decisions import ActionDecided, AnyDecision, PhaseChanged
from lavalog.events.observations import AnyObservation, Observation
from lavalog.projections.core.audit import Kind, audit
from tests.projections.helpers import decided_examples, tf_job


def recorded_replay(events: list[LogEvent]):
    """A fake decider that decides exactly what the story recorded."""

    def fake(
        observations: Iterable[AnyObservation],
    ) -> Iterator[tuple[AnyObservation, list[AnyDecision]]]:
        for observation in observations:
            decided = [
                e
                for e in events
                if not isinstance(e, Observation)
                and (e.cause, e.time) == (observation.id, observation.time)
            ]
            yield observation, decided

    return fake


def tamper(events: list[LogEvent], decision_id: str, **changes: object) -> list[LogEvent]:
    return [msgspec.structs.replace(e, **changes) if e.id == decision_id else e for e in events]


def fields_of(event: LogEvent) -> tuple[str, ...]:
    return tuple(to_builtins(event))


def test_a_consistent_log_has_no_difference():
    story = tf_job().log
    report = audit(story, recorded_replay(story))
    assert report.ok
    assert (report.observations, report.recorded, report.recomputed) == (19, 13, 13)


def test_changed_missing_and_unexpected_decisions_are_reported():
    story = tf_job().log
    changed = tamper(story, "u-tf:o12#0", action="AbortJob")
    missing = next(e for e in story if e.id == "u-tf:o14#0")
    dropped = [e for e in changed if e is not missing]
    forged = PhaseChanged(
        id="u-tf:o3#0",
        key="team-a/tf-mnist",
        job_uid="u-tf",
        time=1002.0,
        cause="u-tf:o3",
        previous="Pending",
        phase="Failed",
    )
    report = audit([*dropped, forged], recorded_replay(story))
    assert [(d.kind, d.id, d.type, d.fields) for d in report.differences] == [
        (Kind.CHANGED, "u-tf:o12#0", "ActionDecided", ("action",)),
        (Kind.MISSING, "u-tf:o14#0", "PhaseChanged", fields_of(missing)),
        (Kind.UNEXPECTED, "u-tf:o3#0", "PhaseChanged", fields_of(forged)),
    ]
    changed_one = report.differences[0]
    assert changed_one.recorded is not None and changed_one.recomputed is not None
    assert (changed_one.recorded["action"], changed_one.recomputed["action"]) == (
        "AbortJob",
        "RestartTask",
    )


def listed_again(story: list[LogEvent], observation_id: str, time: float) -> list[LogEvent]:
    """`story` and then, later, the observation listed again (same id, at `time`) with what
    it decided again under the same ids."""
    again = [
        msgspec.structs.replace(e, time=time)
        for e in story
        if e.id == observation_id or getattr(e, "cause", "") == observation_id
    ]
    return [*story, *again]


def test_a_fact_listed_again_later_may_decide_again_under_the_same_ids():
    story = tf_job().log
    log = listed_again(story, "u-tf:o18", 1200.0)
    assert audit([*log, *log[-3:]], recorded_replay(log)).ok  # a redelivery too

    recorded = log[:-3]  # the second decisions were not made when the fact came again
    report = audit(recorded, recorded_replay(log))
    assert [(d.kind, d.id, d.recomputed) for d in report.differences] == [
        (Kind.MISSING, e.id, to_builtins(e)) for e in log[-3:]
    ]

    changed = [*log[:-3], msgspec.structs.replace(log[-3], action="AbortJob"), *log[-2:]]
    report = audit(changed, recorded_replay(log))
    assert [(d.kind, d.id, d.fields) for d in report.differences] == [
        (Kind.CHANGED, "u-tf:o18#0", ("action",))
    ]


def test_the_decider_reproduces_the_recorded_examples_and_catches_a_tampered_one():
    log = decided_examples()
    assert audit(log, replay).ok
    restart = next(e for e in log if isinstance(e, ActionDecided) and e.action == "RestartTask")
    report = audit(tamper(log, restart.id, action="RestartPod"), replay)
    assert [(d.kind, d.id, d.fields) for d in report.differences] == [
        (Kind.CHANGED, restart.id, ("action",))
    ]

"""The timeline model: scripted logs give exactly the expected timelines."""

from __future__ import annotations

import random

import msgspec
import pytest

from events.codec import LogEvent
from events.observations import Observation
from projections.history import JobHistory, new_history, record
from projections.summary import summarize
from projections.timeline import Outcome, build_timeline
from tests.projections.story import failing_job, tf_job


def fold(events: list[LogEvent]) -> JobHistory:
    history = new_history(events[0])
    for event in events:
        record(history, event)
    return history


def test_phases_carry_reason_cause_and_trigger():
    story = tf_job(start=1000.0)
    timeline = build_timeline(fold(story.events))
    assert [(p.phase, p.start, p.end, p.reason, p.trigger, p.action) for p in timeline.phases] == [
        ("Pending", 1000.0, 1010.0, "Submitted", "", ""),
        ("Running", 1010.0, 1040.0, "MinAvailable", "", ""),
        ("Restarting", 1040.0, 1045.0, "PodFailed", "PodFailed", "RestartTask"),
        ("Running", 1045.0, 1100.0, "Restarted", "", ""),
        ("Completing", 1100.0, 1102.0, "TaskCompleted", "TaskCompleted", "CompleteJob"),
        ("Completed", 1102.0, None, "Completed", "", ""),
    ]
    assert timeline.phases[2].cause == "u-tf:o12"
    assert (timeline.phase, timeline.finished, timeline.queue) == ("Completed", 1102.0, "research")
    assert (timeline.queue_wait, timeline.run_time, timeline.running_since) == (10.0, 85.0, None)
    assert [(r.time, r.retry_count, r.version) for r in timeline.revisions] == [
        (1000.0, 0, 0),
        (1040.0, 1, 0),
        (1045.0, 1, 1),
    ]


def test_every_attempt_of_every_index_with_the_decisions_around_it():
    timeline = build_timeline(fold(tf_job(start=1000.0).events))
    rows = {
        (task.name, index.index): [
            (
                a.uid,
                a.job_version,
                a.node,
                a.created,
                a.scheduled,
                a.started,
                a.finished,
                a.exit_code,
                a.reason,
                a.outcome,
                a.created_by,
                a.ended_by,
                a.end_action,
                a.replaced_by,
            )
            for a in index.attempts
        ]
        for task in timeline.tasks
        for index in task.indexes
    }
    assert rows == {
        ("ps", 0): [
            (
                "p0",
                0,
                "node-a",
                1002.0,
                1005.0,
                1010.0,
                None,
                None,
                "",
                Outcome.KILLED,
                "u-tf:o2#0",
                "u-tf:o18#1",
                "CompleteJob",
                "",
            ),
        ],
        ("worker", 0): [
            (
                "w0",
                0,
                "node-a",
                1002.0,
                1005.0,
                1010.0,
                None,
                None,
                "",
                Outcome.KILLED,
                "u-tf:o2#0",
                "u-tf:o12#1",
                "RestartTask",
                "u-tf:o14#1",
            ),
            (
                "w0b",
                1,
                "node-a",
                1046.0,
                1048.0,
                1050.0,
                1100.0,
                0,
                "",
                Outcome.SUCCEEDED,
                "u-tf:o14#1",
                "",
                "",
                "",
            ),
        ],
        ("worker", 1): [
            (
                "w1",
                0,
                "node-b",
                1002.0,
                1005.0,
                1010.0,
                1040.0,
                137,
                "OOMKilled",
                Outcome.FAILED,
                "u-tf:o2#0",
                "u-tf:o12#1",
                "RestartTask",
                "u-tf:o14#1",
            ),
            (
                "w1b",
                1,
                "node-c",
                1046.0,
                1048.0,
                1050.0,
                1100.0,
                0,
                "",
                Outcome.SUCCEEDED,
                "u-tf:o14#1",
                "",
                "",
                "",
            ),
        ],
    }


def test_decisions_keep_policy_and_trigger():
    timeline = build_timeline(fold(tf_job().events))
    assert [(d.type, d.action, d.trigger, d.policy, d.exit_code) for d in timeline.decisions] == [
        ("ActionDecided", "RestartTask", "PodFailed", "task:worker#0", 137),
        ("ActionDecided", "CompleteJob", "TaskCompleted", "", None),
    ]


def test_summary_counts_restarts_and_pods():
    row = summarize(fold(tf_job().events))
    assert (row.phase, row.retry_count, row.version, row.pods, row.restarts) == (
        "Completed",
        1,
        1,
        5,
        1,
    )
    aborted = summarize(fold(failing_job().events))
    assert (aborted.phase, aborted.reason, aborted.queue, aborted.restarts) == (
        "Aborted",
        "PodFailed",
        "batch",
        0,
    )


def interleave(events: list[LogEvent], seed: int) -> list[LogEvent]:
    """The same two topics merged in another order, each topic's own order kept."""
    observed = [e for e in events if isinstance(e, Observation)]
    decided = [e for e in events if not isinstance(e, Observation)]
    rng = random.Random(seed)
    merged: list[LogEvent] = []
    while observed or decided:
        source = observed if observed and (not decided or rng.random() < 0.5) else decided
        merged.append(source.pop(0))
    return merged


@pytest.mark.parametrize("seed", range(5))
def test_history_does_not_depend_on_how_the_topics_interleave(seed):
    events = tf_job().events
    expected = msgspec.msgpack.encode(fold(events))
    assert msgspec.msgpack.encode(fold(interleave(events, seed))) == expected

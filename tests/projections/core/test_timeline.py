"""The timeline model: scripted logs give exactly the expected timelines."""

from __future__ import annotations

import random

import msgspec
import pytest

from lavalog.controller.decider.core import replay
from lavalog.events.codec import LogEvent
from lavalog.events.observations import Observation, PodObserved
from lavalog.projections.core.fold import new_history, record
from lavalog.projections.core.history import JobHistory
from lavalog.projections.core.records import PodClock
from lavalog.projections.core.summary import summarize
from lavalog.projections.core.timeline import AttemptView, Outcome, Timeline, build_timeline
from tests.projections.helpers import failing_job, tf_job
from tests.scenarios import JobScript


def fold(events: list[LogEvent]) -> JobHistory:
    history = new_history(events[0])
    for event in events:
        record(history, event)
    return history


def test_phases_carry_reason_cause_and_trigger():
    story = tf_job(start=1000.0)
    timeline = build_timeline(fold(story.log))
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
    timeline = build_timeline(fold(tf_job(start=1000.0).log))
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
                1050.0,
                1050.0,
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
                1050.0,
                1050.0,
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


def _skewed(events: list[LogEvent], shift: float, scale: float) -> list[LogEvent]:
    """The same log with every pod timestamp on another clock: `shift` seconds off and
    running `scale` times faster (a skewed node; the simulated cluster's scaled time)."""
    origin = events[0].time

    def other(t: float | None) -> float | None:
        return None if t is None else origin + shift + (t - origin) * scale

    return [
        msgspec.structs.replace(
            e, **{f: other(getattr(e, f)) for f in ("created", "scheduled", "started", "finished")}
        )
        if isinstance(e, PodObserved)
        else e
        for e in events
    ]


def _attempts(timeline: Timeline) -> dict[str, AttemptView]:
    return {a.uid: a for task in timeline.tasks for index in task.indexes for a in index.attempts}


@pytest.mark.parametrize(("shift", "scale"), [(-3600.0, 1.0), (25.0, 10.0)])
def test_attempts_sit_on_the_log_clock_whatever_the_pod_clock_says(shift, scale):
    plain = _attempts(build_timeline(fold(tf_job(start=1000.0).log)))
    skewed = _attempts(build_timeline(fold(_skewed(tf_job(start=1000.0).log, shift, scale))))
    times = ("created", "scheduled", "started", "finished", "deleted", "ran")
    assert {uid: [getattr(a, t) for t in times] for uid, a in skewed.items()} == {
        "p0": [1002.0, 1005.0, 1010.0, None, 1102.0, 92.0],
        "w0": [1002.0, 1005.0, 1010.0, None, 1045.0, 35.0],
        "w1": [1002.0, 1005.0, 1010.0, 1040.0, 1045.0, 30.0],
        "w0b": [1050.0, 1050.0, 1050.0, 1100.0, None, 50.0],
        "w1b": [1050.0, 1050.0, 1050.0, 1100.0, None, 50.0],
    }
    assert {uid: [getattr(a, t) for t in times] for uid, a in plain.items()} == {
        uid: [getattr(a, t) for t in times] for uid, a in skewed.items()
    }
    # the pod's own times are kept, on its own clock
    assert skewed["w0b"].pod_clock == PodClock(
        created=1000.0 + shift + 46.0 * scale,
        scheduled=1000.0 + shift + 48.0 * scale,
        started=1000.0 + shift + 50.0 * scale,
        finished=1000.0 + shift + 100.0 * scale,
    )
    assert plain["w0b"].pod_clock == PodClock(
        created=1046.0, scheduled=1048.0, started=1050.0, finished=1100.0
    )


def test_a_pod_that_fails_because_we_killed_it_is_killed_not_failed():
    """The simulated kubelet (like a real one) ends a killed container with 137: the pod
    turns Failed after the kill. The pod whose own failure led to the kill stays failed."""
    story = tf_job(start=1000.0)
    story.at(1043.0).pod("worker", 0, "Failed", uid="w0", node="", exit_code=137, reason="Error")
    attempts = _attempts(build_timeline(fold(story.log)))
    assert (attempts["w0"].outcome, attempts["w0"].finished, attempts["w0"].ended_by) == (
        Outcome.KILLED,
        1043.0,
        "u-tf:o12#1",
    )
    assert (attempts["w1"].outcome, attempts["w1"].ended_by) == (Outcome.FAILED, "u-tf:o12#1")


def test_decisions_keep_policy_and_trigger():
    timeline = build_timeline(fold(tf_job().log))
    assert [(d.type, d.action, d.trigger, d.policy, d.exit_code) for d in timeline.decisions] == [
        ("ActionDecided", "RestartTask", "PodFailed", "task:worker#0", 137),
        ("ActionDecided", "CompleteJob", "TaskCompleted", "", None),
    ]


def test_summary_counts_restarts_and_pods():
    row = summarize(fold(tf_job().log))
    assert (row.phase, row.retry_count, row.version, row.pods, row.restarts) == (
        "Completed",
        1,
        1,
        5,
        1,
    )
    aborted = summarize(fold(failing_job().log))
    assert (aborted.phase, aborted.reason, aborted.queue, aborted.restarts) == (
        "Aborted",
        "PodFailed",
        "batch",
        0,
    )


@pytest.mark.parametrize("action", ["RestartTask", "RestartPod", "RestartPartition"])
def test_every_restart_action_counts_as_a_restart(action):
    events = [
        msgspec.structs.replace(e, action=action)
        if getattr(e, "action", None) == "RestartTask"
        else e
        for e in tf_job().log
    ]
    assert summarize(fold(events)).restarts == 1


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
    events = tf_job().log
    expected = msgspec.msgpack.encode(fold(events))
    assert msgspec.msgpack.encode(fold(interleave(events, seed))) == expected


def test_a_pod_gone_while_nobody_watched_ends_at_the_listing_that_lacks_it():
    spec = {"tasks": [{"name": "w", "replicas": 2, "template": {}}]}
    script = JobScript("unseen", spec, start=1000.0).submit().podgroup("Inqueue")
    script.pods("w", 2, "Pending").pods("w", 2, "Running").listed(("w", 0))
    events: list[LogEvent] = [e for o, ds in replay(script.events) for e in (o, *ds)]

    attempts = _attempts(build_timeline(fold(events)))

    assert attempts["unseen-w-1-uid0"].deleted == script.events[-1].time
    assert attempts["unseen-w-0-uid0"].deleted is None

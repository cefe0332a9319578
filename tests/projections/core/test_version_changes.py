"""A job's version changes at every whole-job kill, CompleteJob included (as in Volcano):
the timeline says which decision changed it, so a job that completed without a restart
and shows version 1 is explained."""

from __future__ import annotations

from typing import Any

from lavalog.controller.decider.core import replay
from lavalog.events.codec import LogEvent
from lavalog.projections.core.fold import new_history, record
from lavalog.projections.core.render import render_timeline
from lavalog.projections.core.timeline import Timeline, build_timeline
from tests.scenarios import JobScript

CONTAINER = {"containers": [{"name": "main", "image": "busybox"}]}
COMPLETE_WITH_WORKERS = [{"event": "TaskCompleted", "action": "CompleteJob"}]


def spec(**extra: Any) -> dict[str, Any]:
    """A ps and two workers; the job completes when the workers do."""
    return {
        "minAvailable": 3,
        "tasks": [
            {"name": "ps", "replicas": 1, "template": {"spec": CONTAINER}},
            {
                "name": "worker",
                "replicas": 2,
                "template": {"spec": CONTAINER},
                "policies": COMPLETE_WITH_WORKERS,
            },
        ],
        **extra,
    }


def run_to_completion(script: JobScript, version: int) -> JobScript:
    script.pod("ps", 0, "Running", version=version).pods("worker", 2, "Running", version=version)
    script.pod("worker", 0, "Succeeded", version=version)
    script.pod("worker", 1, "Succeeded", version=version)
    return script.pod_deleted("ps", 0, version=version)


def timeline_of(script: JobScript) -> Timeline:
    events: list[LogEvent] = [e for o, ds in replay(script.events) for e in (o, *ds)]
    history = new_history(events[0])
    for event in events:
        record(history, event)
    return build_timeline(history)


def restarted_then_completed() -> Timeline:
    script = JobScript("train", spec(policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    script.submit().podgroup("Inqueue")
    script.pod("ps", 0, "Running").pods("worker", 2, "Running")
    script.pod("worker", 0, "Failed", exit_code=1)
    script.pod_deleted("ps", 0).pod_deleted("worker", 0, phase="Failed").pod_deleted("worker", 1)
    return timeline_of(run_to_completion(script, version=1))


def test_each_phase_carries_the_retry_count_and_version_it_started():
    timeline = restarted_then_completed()

    assert [(p.phase, p.action, p.retry_count, p.version) for p in timeline.phases] == [
        ("Pending", "", 0, 0),
        ("Running", "", 0, 0),
        ("Restarting", "RestartJob", 1, 1),
        ("Pending", "", 1, 1),
        ("Running", "", 1, 1),
        ("Completing", "CompleteJob", 1, 2),
        ("Completed", "", 1, 2),
    ]
    assert timeline.version == 2


def test_the_text_timeline_says_which_decision_changed_the_version():
    lines = render_timeline(restarted_then_completed()).splitlines()

    assert (
        "version 1 at RestartJob +5s, 2 at CompleteJob +13s"
        " (each whole-job kill starts a new version, as in Volcano)"
    ) in lines
    phases = [line.split(maxsplit=2)[1:] for line in lines if "<-" in line]
    assert phases == [
        ["Restarting", "RestartJob  <- RestartJob on PodFailed  retries 0 -> 1, version 0 -> 1"],
        ["Completing", "CompleteJob  <- CompleteJob on TaskCompleted  version 1 -> 2"],
    ]


def test_a_job_completed_without_a_restart_shows_the_completion_as_its_new_version():
    script = JobScript("train", spec()).submit().podgroup("Inqueue")
    timeline = timeline_of(run_to_completion(script, version=0))
    text = render_timeline(timeline)

    assert (timeline.phase, timeline.retry_count, timeline.version) == ("Completed", 0, 1)
    assert "version 1 at CompleteJob +" in text
    assert "<- CompleteJob on TaskCompleted  version 0 -> 1" in text


def test_a_job_whose_version_never_changed_shows_no_version_changes():
    spec_without_kill = spec()
    spec_without_kill["tasks"][1].pop("policies")  # completes by itself: no kill, no version
    script = JobScript("train", spec_without_kill).submit().podgroup("Inqueue")
    script.pod("ps", 0, "Running").pods("worker", 2, "Running")
    script.pod("ps", 0, "Succeeded").pods("worker", 2, "Succeeded")
    timeline = timeline_of(script)
    lines = render_timeline(timeline).splitlines()

    assert (timeline.phase, timeline.version) == ("Completed", 0)
    assert not any(line.startswith("version ") for line in lines)
    phase_lines = [line for line in lines[lines.index("phases") + 1 : lines.index("pods")] if line]
    assert len(phase_lines) == 3 and not any("->" in line for line in phase_lines)

"""The timeline says what happened after the pods are gone: which container failed, how
every container ended, its last words, who disrupted a pod, whether a restart counted,
and the job's one-line why."""

from __future__ import annotations

from lavalog.events.decisions import PodFailure
from lavalog.events.observations import ContainerEnd
from lavalog.projections.core.fold import new_history, record
from lavalog.projections.core.render import render_timeline
from lavalog.projections.core.timeline import Outcome, Timeline, build_timeline
from tests.projections.helpers import LAST_WORDS, sidecar_job
from tests.scenarios import JobScript

ENDS = (
    ContainerEnd(name="agent", exit_code=0, reason="Completed"),
    ContainerEnd(name="trainer", exit_code=137, reason="OOMKilled", message=LAST_WORDS),
)


def sidecar_story() -> Timeline:
    """Preempted once (uncounted), then the trainer is OOMKilled beside its sidecar."""
    events = sidecar_job()
    history = new_history(events[0])
    for event in events:
        record(history, event)
    return build_timeline(history)


def test_attempts_keep_how_each_container_ended_and_who_disrupted_the_pod() -> None:
    timeline = sidecar_story()
    [first, second] = timeline.tasks[0].indexes[0].attempts

    assert (first.outcome, first.disruption, first.node) == (
        Outcome.EVICTED,
        "PreemptionByScheduler",
        "n1",
    )
    assert (second.outcome, second.exit_code, second.container, second.reason) == (
        Outcome.FAILED,
        137,
        "trainer",
        "OOMKilled",
    )
    assert second.containers == ENDS
    assert second.message == LAST_WORDS


def test_decisions_say_how_the_pod_went_and_whether_the_restart_counted() -> None:
    timeline = sidecar_story()
    actions = [d for d in timeline.decisions if d.type == "ActionDecided"]
    assert [(d.action, d.trigger, d.failure, d.uncounted) for d in actions] == [
        (
            "RestartJob",
            "PodEvicted",
            PodFailure(node="n1", disruption="PreemptionByScheduler"),
            True,
        ),
        (
            "RestartJob",
            "PodFailed",
            PodFailure(container="trainer", reason="OOMKilled", node="n2"),
            False,
        ),
    ]
    assert (timeline.phase, timeline.retry_count) == ("Restarting", 1)
    assert timeline.message == (
        "PodFailed of pod sidecar-train-0, container trainer (exit code 137, OOMKilled) on"
        " n2, matched job policy #0; 1 retry left (retryCount 1, maxRetry 3)"
    )


def test_the_text_timeline_shows_the_why_the_ends_and_the_last_words() -> None:
    text = render_timeline(sidecar_story())

    assert (
        "why RestartJob: PodFailed of pod sidecar-train-0, container trainer (exit code 137,"
        " OOMKilled) on n2, matched job policy #0; 1 retry left (retryCount 1, maxRetry 3)"
    ) in text
    assert (
        "RestartJob on PodEvicted (job#1) pod sidecar-train-0 node n1 disrupted by"
        " PreemptionByScheduler (not counted as a retry)"
    ) in text
    assert "evicted disrupted by PreemptionByScheduler" in text
    assert "failed exit 137 OOMKilled in trainer" in text
    assert "containers: agent exit 0 Completed, trainer exit 137 OOMKilled" in text
    assert "last words of trainer (last 5 of 8 lines):" in text
    tail = text[text.index("last words of trainer") :].splitlines()[1:6]
    assert [line.strip() for line in tail] == [
        "| step 4",
        "| step 5",
        "| step 6",
        "| step 7",
        "| CUDA out of memory",
    ]
    wide = render_timeline(sidecar_story(), wide=True)
    assert "last words of trainer:" in wide and "| step 1" in wide


def test_a_pod_seen_only_as_it_went_keeps_its_containers_last_words() -> None:
    """Deleted as its containers ended (a preempted pod's grace period over): the deletion
    is the only fact that shows how they ended."""
    script = JobScript("gone", {"tasks": [{"name": "t", "replicas": 1}]}).submit()
    script.pod("t", 0, "Running").pod("t", 0, "Running", deleting=True)
    script.pod_deleted("t", 0, phase="Failed", containers=ENDS)
    history = new_history(script.events[0])
    for event in script.events:
        record(history, event)
    [attempt] = build_timeline(history).tasks[0].indexes[0].attempts
    assert attempt.containers == ENDS

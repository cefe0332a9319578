"""Facts that are no news to the rules (`no_news`) are folded without running them, and
only those: given/when/then at each edge of the definition. The property over arbitrary
logs is in `test_properties`."""

from __future__ import annotations

from typing import Any

from lavalog.controller.decider.core import evolve, replay
from lavalog.controller.decider.core.flow import step, step_by_rules
from lavalog.controller.decider.core.no_news import no_news
from lavalog.controller.decider.core.state import JobState
from lavalog.events.decisions import ActionDecided, PodsCreate, TimerScheduled
from tests.scenarios import JobScript

TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "i"}]}}


def task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": TEMPLATE, **extra}


def before_last(script: JobScript) -> JobState:
    states: dict[str, JobState] = {}
    for _ in replay(script.events[:-1], states):
        pass
    return states[script.key]


def decided_last(script: JobScript) -> tuple[bool, list[Any]]:
    """Whether the last fact is no news, and what it decides (the same by every rule)."""
    state, observation = before_last(script), script.last
    observed = evolve(state, observation)
    by_rules = step_by_rules(state, observation, observed)
    assert step(state, observation) == by_rules
    return no_news(state, observation, observed), by_rules[1]


def test_a_pod_asked_for_first_seen_pending_is_no_news():
    script = JobScript("made", {"tasks": [task("w", 2)]}).submit().podgroup("Inqueue")
    script.pod("w", 0, "Pending")

    assert decided_last(script) == (True, [])


def test_its_first_pending_is_news_to_a_pod_pending_policy_with_a_timeout():
    policy = {"event": "PodPending", "action": "RestartJob", "timeout": "5m"}
    script = JobScript("slow", {"tasks": [task("w", 2)], "policies": [policy]}).submit()
    script.podgroup("Inqueue").pod("w", 0, "Pending")

    news, decisions = decided_last(script)

    assert not news
    assert [type(d) for d in decisions] == [TimerScheduled]


def test_a_pod_being_killed_seen_terminating_is_no_news():
    spec = {"tasks": [task("w", 2, policies=[{"event": "PodFailed", "action": "RestartTask"}])]}
    script = JobScript("kill", spec).submit().podgroup("Inqueue").pods("w", 2, "Running")
    script.pod("w", 0, "Failed", exit_code=1)  # RestartTask: both pods killed
    script.pod("w", 1, "Failed", exit_code=137, deleting=True)

    assert decided_last(script) == (True, [])


def test_a_pod_being_killed_seen_failed_without_its_deletion_is_a_pod_failure():
    policies = [
        {"exitCode": 3, "action": "AbortJob"},
        {"event": "PodFailed", "action": "RestartTask"},
    ]
    spec = {"tasks": [task("w", 2, policies=policies)]}
    script = JobScript("late", spec).submit().podgroup("Inqueue").pods("w", 2, "Running")
    script.pod("w", 0, "Failed", exit_code=1)  # RestartTask: both pods killed
    script.pod("w", 1, "Failed", exit_code=3)

    news, decisions = decided_last(script)

    assert not news
    assert any(isinstance(d, ActionDecided) and d.action == "AbortJob" for d in decisions)


def test_a_going_pod_that_becomes_ready_is_news_to_a_task_that_depends_on_it():
    spec = {"tasks": [task("ps", 1), task("worker", 2, dependsOn={"name": ["ps"]})]}
    script = JobScript("deps", spec).submit().podgroup("Inqueue")
    script.pod("ps", 0, "Pending").pod("ps", 0, "Pending", deleting=True)
    script.pod("ps", 0, "Running", deleting=True)  # still counts ready for dependsOn

    news, decisions = decided_last(script)

    assert not news
    assert [type(d) for d in decisions if isinstance(d, PodsCreate)] == [PodsCreate]

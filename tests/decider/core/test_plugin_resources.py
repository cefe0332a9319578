"""The plugins' objects over a job's runs: created before its pods, deleted whenever the
whole job is killed (Volcano's killJob calls every plugin's OnJobDelete), created again
by the next run, so that a restarted job gets fresh ssh keys."""

from __future__ import annotations

from typing import Any

from lavalog.controller.decider.core import JobState, initial_state, replay
from lavalog.events.decisions import (
    AnyDecision,
    PhaseChanged,
    PluginResourcesDelete,
    PluginResourcesEnsure,
    PodsKill,
)
from tests.scenarios import JobScript

PLUGINS = {"svc": ["--disable-network-policy"], "ssh": []}


def spec(**extra: Any) -> dict[str, Any]:
    task = {
        "name": "worker",
        "replicas": 2,
        "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
    }
    return {"tasks": [task], "plugins": PLUGINS, **extra}


def run(script: JobScript) -> tuple[JobState, list[AnyDecision]]:
    states: dict[str, JobState] = {}
    decisions = [d for _, ds in replay(script.events, states) for d in ds]
    return states.get(script.key, initial_state(script.key)), decisions


def story(decisions: list[AnyDecision]) -> list[str]:
    """The plugin decisions, with the kills and phase changes around them."""
    told: list[str] = []
    for d in decisions:
        if isinstance(d, PluginResourcesEnsure):
            told.append("ensure")
        elif isinstance(d, PluginResourcesDelete):
            told.append(f"delete ({d.reason})")
        elif isinstance(d, PodsKill):
            told.append(f"kill {len(d.pods)}")
        elif isinstance(d, PhaseChanged):
            told.append(d.phase)
    return told


def running(script: JobScript, version: int = 0) -> JobScript:
    script.pods("worker", 2, "Pending", version=version)
    return script.pods("worker", 2, "Running", version=version)


def test_restart_job_deletes_and_recreates_plugin_objects() -> None:
    script = JobScript("ssh", spec()).submit().podgroup("Inqueue")
    running(script).command("RestartJob")
    script.pod("worker", 0, "Running", deleting=True).pod("worker", 1, "Running", deleting=True)
    script.pod_deleted("worker", 0).pod_deleted("worker", 1)
    running(script, version=1)

    state, decisions = run(script)

    assert story(decisions) == [
        "Pending",
        "ensure",
        "Running",
        "delete (RestartJob)",
        "Restarting",
        # after the new version's status (flow._kills_after_the_run_ends)
        "kill 2",
        "ensure",  # the next run's objects: a new Secret, so new keys
        "Pending",
        "Running",
    ]
    delete = next(d for d in decisions if isinstance(d, PluginResourcesDelete))
    assert delete.plugins == PLUGINS
    assert state.resources_for == {"worker": 2}


def test_abort_deletes_once_and_resume_recreates() -> None:
    script = JobScript("ab", spec()).submit().podgroup("Inqueue")
    running(script).command("AbortJob")
    script.pod("worker", 0, "Running", deleting=True).pod_deleted("worker", 0)
    script.pod("worker", 1, "Running", deleting=True).pod_deleted("worker", 1)

    state, decisions = run(script)

    # the kill and the removal after the new version's status (Aborting)
    assert story(decisions)[2:] == ["Running", "Aborting", "kill 2", "delete (AbortJob)", "Aborted"]
    assert state.resources_for == {}

    script.command("ResumeJob")
    _, decisions = run(script)
    assert story(decisions)[-4:] == ["Aborted", "Restarting", "ensure", "Pending"]


def test_restarting_one_task_keeps_the_objects() -> None:
    """Volcano deletes them on RestartTask too, then recreates them (its killPods is shared),
    which hands the restarted pods new keys that the surviving pods do not trust; lavalog
    keeps them while any pod of the run survives."""
    policies = [{"event": "PodFailed", "action": "RestartTask"}]
    script = JobScript("rt", spec(policies=policies)).submit().podgroup("Inqueue")
    running(script).pod("worker", 0, "Failed", exit_code=1)

    _, decisions = run(script)

    assert "kill 2" in story(decisions)
    assert not [d for d in decisions if isinstance(d, PluginResourcesDelete)]


def test_completion_deletes_the_objects() -> None:
    script = JobScript("done", spec()).submit().podgroup("Inqueue")
    running(script).pods("worker", 2, "Succeeded")

    state, decisions = run(script)

    assert story(decisions)[2:] == ["Running", "Completed", "delete (Completed)"]
    assert state.resources_for == {}

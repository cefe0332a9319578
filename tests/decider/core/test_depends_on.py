"""dependsOn waits for ready pods (Volcano's `isDependsOnPodsReady`): a pod of the task
depended on counts once it has succeeded, or runs with every container ready."""

from __future__ import annotations

from typing import Any

import msgspec

from lavalog.controller.decider.core import JobState, replay
from lavalog.events.observations import PodObserved
from tests.decider.support import created
from tests.scenarios import JobScript

CONTAINER = {"containers": [{"name": "main", "image": "busybox"}]}
SPEC: dict[str, Any] = {
    "tasks": [
        {"name": "ps", "replicas": 1, "template": {"spec": CONTAINER}},
        {
            "name": "worker",
            "replicas": 2,
            "dependsOn": {"name": ["ps"]},
            "template": {"spec": CONTAINER},
        },
    ]
}


def made(script: JobScript) -> list[str]:
    states: dict[str, JobState] = {}
    return [name for _, decisions in replay(script.events, states) for name in created(decisions)]


def ps_pod(*phases: tuple[str, bool]) -> JobScript:
    script = JobScript("dep", SPEC).submit().podgroup("Inqueue")
    for phase, ready in phases:
        script.pod("ps", 0, phase, ready=ready)
    return script


def test_a_running_pod_whose_containers_are_not_ready_is_waited_for():
    script = ps_pod(("Pending", False), ("Running", False))

    assert made(script) == ["dep-ps-0"]


def test_the_dependent_task_starts_once_the_pod_is_ready():
    script = ps_pod(("Pending", False), ("Running", False), ("Running", True))

    assert made(script) == ["dep-ps-0", "dep-worker-0", "dep-worker-1"]


def test_a_pod_that_succeeded_counts():
    script = ps_pod(("Pending", False), ("Succeeded", False))

    assert made(script) == ["dep-ps-0", "dep-worker-0", "dep-worker-1"]


def test_a_log_written_before_readiness_was_published_counts_running_pods():
    script = ps_pod(("Pending", False), ("Running", True))
    running = script.events[-1]
    assert isinstance(running, PodObserved)
    script.events[-1] = msgspec.structs.replace(running, containers_ready=msgspec.UNSET)

    assert made(script) == ["dep-ps-0", "dep-worker-0", "dep-worker-1"]

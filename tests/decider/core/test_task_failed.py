"""TaskFailed counts as Volcano's `jobCache.TaskFailed`: restarts of every container, init
containers included, added up over the task's pending and running pods, against the
task's `maxRetry`. Fired once, by the change that brings the sum there."""

from __future__ import annotations

from lavalog.controller.decider.core import JobState
from lavalog.events.decisions import ActionDecided, AnyDecision
from lavalog.events.observations import AnyObservation
from tests.decider.support import UID, given, pod, when, worker_spec
from tests.scenarios import JobScript

ON_TASK_FAILED = worker_spec(
    task={"maxRetry": 3, "policies": [{"event": "TaskFailed", "action": "AbortJob"}]}
)


def script() -> JobScript:
    """Observations of the pods `pod()` makes (the same uids)."""
    jobs = JobScript("job", ON_TASK_FAILED, uid=UID)
    for index in range(3):
        jobs.new_incarnation("worker", index)
    return jobs


def seen(*, index: int, phase: str = "Running", restarts: int = 0, init: int = 0) -> AnyObservation:
    return (
        script()
        .pod(
            "worker",
            index,
            phase,
            restarts=restarts,
            init_restarts=init,
            uid=f"job-worker-{index}-uid",
        )
        .last
    )


def aborted(decisions: list[AnyDecision]) -> bool:
    return any(isinstance(d, ActionDecided) and d.trigger == "TaskFailed" for d in decisions)


def running_job(*restarts: int, phases: tuple[str, ...] = ("Running",) * 3) -> JobState:
    pods = [
        pod("worker", index, phase, restarts=count)
        for index, (phase, count) in enumerate(zip(phases, restarts, strict=True))
    ]
    return given("Running", pods, spec=ON_TASK_FAILED)


def test_restarts_of_the_tasks_pods_add_up():
    state = running_job(1, 1, 0)

    _, decisions = when(state, seen(index=2, restarts=1))

    assert aborted(decisions)


def test_below_max_retry_nothing_happens():
    _, decisions = when(running_job(1, 0, 0), seen(index=2, restarts=1))

    assert not aborted(decisions)


def test_init_containers_restarts_count_for_a_pending_pod():
    """A crash-looping init container keeps its pod Pending; Volcano counts it too."""
    state = running_job(0, 0, 0, phases=("Running", "Running", "Pending"))

    _, decisions = when(state, seen(index=2, phase="Pending", init=3))

    assert aborted(decisions)


def test_finished_pods_do_not_count():
    state = running_job(2, 0, 0, phases=("Failed", "Running", "Running"))

    _, decisions = when(state, seen(index=2, restarts=1))

    assert not aborted(decisions)


def test_it_fires_once_when_the_sum_gets_there():
    state = running_job(1, 1, 0)
    state, first = when(state, seen(index=2, restarts=1))
    assert aborted(first)

    _, again = when(running_job(2, 1, 0), seen(index=2, restarts=1))
    _, more = when(state, seen(index=2, restarts=2))

    assert not aborted(again)  # a pod whose restarts did not rise changes nothing
    assert not aborted(more)

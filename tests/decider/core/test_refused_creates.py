"""Refused creates retried as Volcano retries them (`processNextReq`/`handleJobError`):
requeued after 5 ms, doubling, the refused pods asked for again when it comes due, and
after 15 requeues the job terminated with Volcano's "retry limit reached"."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from lavalog.controller.decider.core import JobState, initial_state, step
from lavalog.events.decisions import (
    ActionDecided,
    AnyDecision,
    PhaseChanged,
    PodsCreate,
    TimerScheduled,
)
from lavalog.events.observations import MAX_REQUEUE_NUM, CreateFailed
from tests.decider.support import worker_spec
from tests.scenarios import JobScript

QUOTA = (
    'pods "job-worker-0" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, '
    "limited: pods=0"
)


class Run:
    """A job driven one observation at a time, its state and decisions kept."""

    def __init__(self) -> None:
        self.script = JobScript("job", worker_spec())
        self.state: JobState = initial_state(self.script.key)
        self.decisions: list[AnyDecision] = []

    def send(self) -> list[AnyDecision]:
        self.state, decided = step(self.state, self.script.last)
        self.decisions += decided
        return decided

    def created(self) -> PodsCreate:
        return [d for d in self.decisions if isinstance(d, PodsCreate)][-1]

    def refuse(self, created: PodsCreate, *, names: tuple[str, ...] | None = None) -> list[Any]:
        refused = names or tuple(ref.name for ref in created.pods)
        self.script.observe(
            CreateFailed,
            decision=created.id,
            object_kind="Pod",
            names=refused,
            job_version=created.job_version,
            code=403,
            reason="Forbidden",
            message=QUOTA,
        )
        return self.send()

    def fire(self, timer: TimerScheduled) -> list[AnyDecision]:
        self.script.at(timer.fire_at).timer(timer.timer_id)
        return self.send()


def started() -> Run:
    run = Run()
    run.script.submit()
    run.send()
    run.script.podgroup("Inqueue")
    run.send()
    assert len(run.created().pods) == 3
    return run


def test_a_refusal_requeues_the_job_after_5ms_and_then_asks_for_the_pods_again() -> None:
    run = started()
    first = run.created()
    refusal_time = run.script.time
    [timer] = run.refuse(first)
    assert isinstance(timer, TimerScheduled)
    assert (timer.action, timer.trigger) == ("SyncJob", "FailedCreate")
    assert timer.fire_at == pytest.approx(refusal_time + 0.005)
    assert run.state.pods == {}  # the refused pods are missing again
    assert run.state.phase == "Pending"

    again = run.fire(timer)
    [create] = [d for d in again if isinstance(d, PodsCreate)]
    assert [ref.name for ref in create.pods] == [ref.name for ref in first.pods]
    assert not [d for d in again if isinstance(d, ActionDecided)]  # a sync, not an action


def test_the_requeue_doubles_and_the_16th_refusal_in_a_row_terminates_the_job() -> None:
    run = started()
    delays = []
    for _ in range(MAX_REQUEUE_NUM):
        refused_at = run.script.time
        [timer] = run.refuse(run.created())
        assert isinstance(timer, TimerScheduled)
        delays.append(round(timer.fire_at - refused_at, 6))
        run.fire(timer)
    # Volcano's options.go: 5ms, 10ms, 20ms, ... 41s, 82s
    assert delays == [round(0.005 * 2**n, 6) for n in range(MAX_REQUEUE_NUM)]

    last = run.refuse(run.created())
    [action] = [d for d in last if isinstance(d, ActionDecided)]
    assert (action.action, action.trigger, action.phase) == (
        "TerminateJob",
        "FailedCreate",
        "Pending",
    )
    phases = [d.phase for d in last if isinstance(d, PhaseChanged)]
    assert phases[0] == "Terminating"
    assert not [d for d in last if isinstance(d, TimerScheduled)]


def test_a_pod_that_appears_ends_the_row_and_a_later_refusal_starts_over() -> None:
    """The quota was raised: the retry's pods are created; a refusal later (a restart into
    a full quota) is the first of a new row."""
    run = started()
    for _ in range(3):
        [timer] = run.refuse(run.created())
        run.fire(timer)
    assert run.state.refused_creates is not None and run.state.refused_creates.count == 3
    run.script.pod("worker", 0, "Pending")
    run.send()
    assert run.state.refused_creates is None

    refused_at = run.script.time
    [timer] = run.refuse(run.created(), names=("job-worker-1",))
    assert isinstance(timer, TimerScheduled)
    assert timer.fire_at == pytest.approx(refused_at + 0.005)
    assert set(run.state.pods) == {"job-worker-0", "job-worker-2"}


def test_a_refusal_published_twice_counts_once_and_one_requeue_is_pending_at_a_time() -> None:
    run = started()
    first = run.created()
    [timer] = run.refuse(first)
    assert run.refuse(first) == []  # the actuator carried the decision out again
    assert run.state.refused_creates is not None and run.state.refused_creates.count == 1
    # another sync's refusal while the requeue waits: counted, no second timer
    run.script.pod("worker", 0, "Pending", version=0)
    run.script.observe(
        CreateFailed, decision="other#0", object_kind="Pod", names=("job-worker-1",), job_version=0,
        code=403, reason="Forbidden", message=QUOTA,
    )  # fmt: skip
    assert run.send() == []
    assert timer.timer_id in run.state.timers


def test_a_refusal_of_an_earlier_run_forgets_its_pods_and_requeues_nothing() -> None:
    run = started()
    created = run.created()
    run.state = msgspec.structs.replace(run.state, version=1)  # restarted meanwhile
    assert run.refuse(created) == []
    assert run.state.refused_creates is None


def test_a_refused_podgroup_is_asked_for_again_when_the_requeue_comes_due() -> None:
    run = Run()
    run.script.submit()
    run.send()
    assert run.state.podgroup is not None
    run.script.observe(
        CreateFailed, decision=f"{run.script.last.id}#1", object_kind="PodGroup",
        names=(run.state.podgroup.name,), code=403, reason="Forbidden", message="quota",
    )  # fmt: skip
    [timer] = run.send()
    assert isinstance(timer, TimerScheduled) and run.state.podgroup is None
    again = run.fire(timer)
    assert [type(d).__name__ for d in again] == ["PodGroupCreate"]


@pytest.mark.parametrize(("limit", "refusals_to_end"), [(0, 1), (2, 3), (-1, None)])
def test_the_limit_is_the_controllers_max_requeue_num_carried_by_the_refusal(
    limit: int, refusals_to_end: int | None
) -> None:
    """Volcano's `--max-requeue-num`: 0 terminates at the first refusal, a negative one
    never (its requeues go on at the longest delay)."""
    run = started()
    ended_at = None
    for refusal in range(1, 21):
        created = run.created()
        run.script.observe(
            CreateFailed, decision=created.id, object_kind="Pod",
            names=tuple(ref.name for ref in created.pods), job_version=created.job_version,
            code=403, reason="Forbidden", message=QUOTA, max_requeues=limit,
        )  # fmt: skip
        decided = run.send()
        if any(isinstance(d, ActionDecided) for d in decided):
            ended_at = refusal
            break
        [timer] = decided
        assert isinstance(timer, TimerScheduled)
        run.fire(timer)
    assert ended_at == refusals_to_end

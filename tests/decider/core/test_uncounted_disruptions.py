"""Uncounted disruptions (lavalog extension, `lavalog.io/uncounted-disruptions`): a
restart on the failure or eviction of a pod Kubernetes disrupted (`DisruptionTarget`)
counts no retry, as podFailurePolicy's `Ignore`; given/when/then on the decider."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from lavalog.controller.admission import Admitted, Rejected, admit_job
from lavalog.controller.decider.core import JobState
from lavalog.events.decisions import ActionDecided, AnyDecision, PodFailure, TimerScheduled
from lavalog.events.volcano.api import PodPhase
from tests.decider.support import (
    given,
    killed,
    last_status,
    observed,
    phases,
    pod,
    replaced,
    when,
    worker_spec,
)

ANNOTATION = "lavalog.io/uncounted-disruptions"
ANY = {ANNOTATION: "*"}
ON_EVICTION = [{"event": "PodEvicted", "action": "RestartJob"}]
ON_FAILURE = [{"event": "PodFailed", "action": "RestartJob"}]


def running(
    policies: list[dict[str, Any]],
    annotations: dict[str, str] | None = ANY,
    *,
    retry_count: int = 0,
    **spec: Any,
) -> JobState:
    pods = [pod("worker", i, PodPhase.RUNNING) for i in range(3)]
    return given(
        "Running",
        pods,
        spec=worker_spec(policies=policies, **spec),
        retry_count=retry_count,
        annotations=annotations,
    )


def preempted(reason: str = "PreemptionByScheduler") -> Any:
    """vc-scheduler marks job-worker-1 DisruptionTarget, then deletes it."""
    return (
        observed().pod("worker", 1, "Running", deleting=True, node="node-2", disruption=reason).last
    )


def action(decisions: list[AnyDecision]) -> ActionDecided:
    [decided] = [d for d in decisions if isinstance(d, ActionDecided)]
    return decided


# fmt: off
ADMISSION = [
    ("*", None),
    ("PreemptionByScheduler", None),
    ("PreemptionByScheduler, EvictionByEvictionAPI,DeletionByTaintManager,TerminationByKubelet,DeletionByPodGC", None),
    ("Preempted", "'Preempted' is not a DisruptionTarget reason: use '*' or any of PreemptionByScheduler, EvictionByEvictionAPI, DeletionByTaintManager, TerminationByKubelet, DeletionByPodGC"),
    ("PreemptionByScheduler,", "'PreemptionByScheduler,' must be '*' or a comma-separated list of reasons among PreemptionByScheduler, EvictionByEvictionAPI, DeletionByTaintManager, TerminationByKubelet, DeletionByPodGC"),
    ("", "'' must be '*' or a comma-separated list of reasons among PreemptionByScheduler, EvictionByEvictionAPI, DeletionByTaintManager, TerminationByKubelet, DeletionByPodGC"),
    ("TerminationByKubelet,TerminationByKubelet", "'TerminationByKubelet,TerminationByKubelet' names a reason twice"),
    ("*,PreemptionByScheduler", "'*' is not a DisruptionTarget reason: use '*' or any of PreemptionByScheduler, EvictionByEvictionAPI, DeletionByTaintManager, TerminationByKubelet, DeletionByPodGC"),
]
# fmt: on


@pytest.mark.parametrize(("value", "problem"), ADMISSION)
def test_admission(value: str, problem: str | None) -> None:
    result = admit_job(worker_spec(), {ANNOTATION: value})
    if problem is None:
        assert isinstance(result, Admitted)
        assert result.uncounted_disruptions is not None
    else:
        assert isinstance(result, Rejected)
        assert [(e.path, e.message) for e in result.errors] == [
            (f"metadata.annotations[{ANNOTATION}]", problem)
        ]


def test_a_preemption_restarts_without_counting_a_retry() -> None:
    state, decisions = when(running(ON_EVICTION), preempted())

    assert phases(decisions) == ["Restarting"]
    assert (state.retry_count, state.version) == (0, 1)
    decided = action(decisions)
    assert (decided.action, decided.uncounted) == ("RestartJob", True)
    assert decided.failure == PodFailure(node="node-2", disruption="PreemptionByScheduler")
    status = last_status(decisions)
    assert status is not None and status.status.retry_count == 0


def test_without_the_annotation_a_preemption_counts_as_in_volcano() -> None:
    state, decisions = when(running(ON_EVICTION, annotations=None), preempted())

    assert state.retry_count == 1
    assert action(decisions).uncounted is msgspec.UNSET


@pytest.mark.parametrize(
    ("named", "disruption", "counted"),
    [
        ("PreemptionByScheduler", "PreemptionByScheduler", False),
        ("PreemptionByScheduler", "EvictionByEvictionAPI", True),
        ("EvictionByEvictionAPI,DeletionByTaintManager", "DeletionByTaintManager", False),
        ("*", "DeletionByPodGC", False),
    ],
)
def test_only_the_named_reasons_go_uncounted(named: str, disruption: str, counted: bool) -> None:
    state, _ = when(running(ON_EVICTION, {ANNOTATION: named}), preempted(disruption))
    assert state.retry_count == (1 if counted else 0)


def test_a_failure_of_the_pods_own_counts() -> None:
    """No DisruptionTarget: the pod failed by itself, and that uses a retry."""
    failure = observed().pod("worker", 0, "Failed", exit_code=1).last
    state, decisions = when(running(ON_FAILURE), failure)
    assert state.retry_count == 1
    assert action(decisions).uncounted is msgspec.UNSET


def test_a_kubelet_eviction_fails_the_pod_and_restarts_uncounted() -> None:
    """Node pressure: the kubelet fails the pod (Evicted, TerminationByKubelet)."""
    evicted = (
        observed()
        .pod("worker", 2, "Failed", reason="Evicted", disruption="TerminationByKubelet")
        .last
    )
    state, decisions = when(running(ON_FAILURE), evicted)
    assert state.retry_count == 0
    assert action(decisions).uncounted is True


def test_a_restart_that_counts_nothing_is_never_the_last_one() -> None:
    """At retryCount maxRetry - 1 a counted restart fails the job (keeping its finished
    pods); an uncounted one restarts it, and so deletes every pod, finished ones too."""
    pods = [
        pod("worker", 0, PodPhase.SUCCEEDED),
        pod("worker", 1, PodPhase.RUNNING),
        pod("worker", 2, PodPhase.RUNNING),
    ]
    state = given(
        "Running",
        pods,
        spec=worker_spec(policies=ON_EVICTION, maxRetry=3),
        retry_count=2,
        annotations=ANY,
    )
    after, decisions = when(state, preempted())
    assert phases(decisions) == ["Restarting"]
    assert after.retry_count == 2
    # job-worker-1 is going already; the one that succeeded goes too
    assert sorted(killed(decisions) + replaced(decisions)) == ["job-worker-0", "job-worker-2"]

    counted, decisions = when(running(ON_EVICTION, None, retry_count=2, maxRetry=3), preempted())
    assert (counted.phase, counted.reason) == ("Failed", "RetriesExhausted")


def test_a_delayed_restart_keeps_the_disruption_until_its_timer_fires() -> None:
    policies = [{"event": "PodEvicted", "action": "RestartJob", "timeout": "30s"}]
    state, decisions = when(running(policies), preempted())
    [timer] = [d for d in decisions if isinstance(d, TimerScheduled)]
    assert timer.failure == PodFailure(node="node-2", disruption="PreemptionByScheduler")

    fired = observed().after(30).timer(timer.timer_id).last
    state, decisions = when(state, fired)
    assert phases(decisions)[:1] == ["Restarting"]
    assert state.retry_count == 0
    assert action(decisions).uncounted is True


def test_a_pod_gone_unseen_keeps_the_disruption_it_was_seen_with() -> None:
    """The DisruptionTarget condition was seen; the deletion only by a later list."""
    script = observed()
    state = running(ON_EVICTION)
    for index in (0, 2):
        state, _ = when(state, script.pod("worker", index, "Running").last)
    marked = script.pod("worker", 1, "Running", disruption="PreemptionByScheduler").last
    state, _ = when(state, marked)
    after, decisions = when(state, script.listed(("worker", 0), ("worker", 2)).last)
    assert after.retry_count == 0
    assert action(decisions).uncounted is True


def test_a_deleted_pod_carries_its_disruption() -> None:
    gone = observed().pod_deleted("worker", 1, disruption="EvictionByEvictionAPI").last
    state, decisions = when(running(ON_EVICTION), gone)
    assert state.retry_count == 0
    assert action(decisions).failure == PodFailure(disruption="EvictionByEvictionAPI")


def test_the_restart_backoff_delays_an_uncounted_restart_even_at_the_last_retry() -> None:
    """The backoff leaves undelayed only the restart that exhausts maxRetry; one that
    counts nothing exhausts nothing."""
    annotations = {**ANY, "lavalog.io/restart-backoff": "10s,2,1m"}
    state = running(ON_EVICTION, annotations, retry_count=2, maxRetry=3)
    after, decisions = when(state, preempted())
    [timer] = [d for d in decisions if isinstance(d, TimerScheduled)]
    assert timer.fire_at - timer.time == 40.0
    assert after.phase == "Running"

"""Policy matching: Volcano's applyPolicies order and matching rules, as a table."""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.controller.decider.core import initial_state, step
from lavalog.controller.decider.core.matchable import matchable_events
from lavalog.controller.decider.core.policies import apply_policies
from lavalog.controller.decider.core.triggers import Trigger
from tests.decider.support import admitted, worker_spec
from tests.scenarios import JobScript


def spec_with(job_policies: list[dict[str, Any]], task_policies: list[dict[str, Any]]) -> Any:
    return admitted(worker_spec(policies=job_policies, task={"policies": task_policies}))


FAILED = Trigger(event="PodFailed", task="worker", pod="job-worker-0", exit_code=3, job_version=0)
PENDING = Trigger(event="PodPending", task="worker", pod="job-worker-0", job_version=0)

# fmt: off
CASES = [
    pytest.param([], [], FAILED, ("SyncJob", None), id="no-policy-syncs"),
    pytest.param([{"event": "PodFailed", "action": "RestartJob"}], [], FAILED, ("RestartJob", ("job", 0)), id="job-event"),
    pytest.param([{"events": ["PodEvicted", "PodFailed"], "action": "AbortJob"}], [], FAILED, ("AbortJob", ("job", 0)), id="event-list"),
    pytest.param([{"event": "*", "action": "TerminateJob"}], [], FAILED, ("TerminateJob", ("job", 0)), id="wildcard"),
    pytest.param([{"event": "*", "action": "TerminateJob"}], [], Trigger(event="PodRunning", task="worker", job_version=0), ("SyncJob", None), id="wildcard-not-podrunning"),
    pytest.param([{"exitCode": 3, "action": "RestartJob"}], [], FAILED, ("RestartJob", ("job", 0)), id="exit-code"),
    pytest.param([{"exitCode": 4, "action": "RestartJob"}], [], FAILED, ("SyncJob", None), id="other-exit-code"),
    pytest.param([{"exitCode": 3, "action": "RestartJob"}], [], Trigger(event="PodEvicted", task="worker", job_version=0), ("SyncJob", None), id="exit-code-only-on-failure"),
    pytest.param([{"event": "PodFailed", "action": "AbortJob"}], [{"event": "PodFailed", "action": "RestartTask"}], FAILED, ("RestartTask", ("task", 0)), id="task-before-job"),
    pytest.param([{"event": "PodFailed", "action": "AbortJob"}], [{"event": "PodEvicted", "action": "RestartTask"}], FAILED, ("AbortJob", ("job", 0)), id="task-miss-falls-to-job"),
    pytest.param([{"event": "PodEvicted", "action": "AbortJob"}, {"exitCode": 3, "action": "RestartJob"}], [], FAILED, ("RestartJob", ("job", 1)), id="first-match-wins-in-order"),
    pytest.param([{"event": "PodFailed", "action": "RestartJob"}], [], Trigger(event="PodFailed", task="worker", exit_code=1, job_version=0), ("RestartJob", ("job", 0)), id="event-needs-no-exit-code"),
    pytest.param([{"event": "PodFailed", "action": "RestartJob"}], [], Trigger(event="PodFailed", task="worker", job_version=-1), ("SyncJob", None), id="stale-version-syncs"),
    pytest.param([{"event": "*", "action": "RestartJob"}], [], Trigger(event="OutOfSync"), ("SyncJob", None), id="out-of-sync-never-matches"),
    pytest.param([{"event": "JobUpdated", "action": "RestartJob"}], [], Trigger(event="JobUpdated"), ("RestartJob", ("job", 0)), id="job-updated-when-named"),
    pytest.param([{"event": "*", "action": "RestartJob"}], [], Trigger(event="JobUpdated"), ("SyncJob", None), id="wildcard-not-job-updated"),
    pytest.param([{"event": "*", "action": "RestartJob"}], [], Trigger(event="CommandIssued", action="AbortJob"), ("AbortJob", None), id="command-action-is-taken-as-is"),
    # Volcano's shouldConfigureTimeout: a PodPending policy acts only with a timeout
    pytest.param([{"event": "PodPending", "action": "RestartJob"}], [], PENDING, ("SyncJob", None), id="pod-pending-without-timeout-syncs"),
    pytest.param([{"event": "PodPending", "action": "RestartJob", "timeout": "5m"}], [], PENDING, ("RestartJob", ("job", 0)), id="pod-pending-with-timeout"),
    pytest.param([{"event": "PodPending", "action": "RestartJob", "timeout": "0s"}], [], PENDING, ("RestartJob", ("job", 0)), id="pod-pending-with-zero-timeout"),
    pytest.param([{"event": "PodPending", "action": "AbortJob", "timeout": "1m"}], [{"event": "PodPending", "action": "RestartTask"}], PENDING, ("AbortJob", ("job", 0)), id="pod-pending-without-timeout-is-passed-over"),
    pytest.param([{"event": "PodFailed", "action": "AbortJob"}], [{"events": ["PodPending", "PodFailed"], "action": "RestartTask"}], PENDING, ("SyncJob", None), id="task-pod-pending-without-timeout-syncs"),
    pytest.param([{"event": "*", "action": "RestartJob"}], [], PENDING, ("SyncJob", None), id="wildcard-not-pod-pending-without-timeout"),
    pytest.param([{"event": "*", "action": "RestartJob", "timeout": "5m"}], [], PENDING, ("RestartJob", ("job", 0)), id="wildcard-pod-pending-with-timeout"),
]
# fmt: on


@pytest.mark.parametrize(("job_policies", "task_policies", "trigger", "expected"), CASES)
def test_apply_policies(job_policies, task_policies, trigger, expected):
    resolution = apply_policies(spec_with(job_policies, task_policies), 0, trigger)

    policy = resolution.policy
    assert (resolution.action, policy and (policy.level, policy.index)) == expected


def test_timeout_becomes_a_delay():
    spec = spec_with([{"event": "PodFailed", "action": "RestartJob", "timeout": "1m30s"}], [])

    assert apply_policies(spec, 0, FAILED).delay == 90.0


@pytest.mark.parametrize(("job_policies", "task_policies", "trigger", "expected"), CASES)
def test_only_the_events_policies_can_match_are_looked_up(
    job_policies, task_policies, trigger, expected
):
    """A job's state keeps the events its policies can match, found at admission: a
    trigger of another event syncs at once, and every trigger resolves as by a search."""
    spec = spec_with(job_policies, task_policies)

    resolution = apply_policies(spec, 0, trigger, matchable=matchable_events(spec))

    policy = resolution.policy
    assert (resolution.action, policy and (policy.level, policy.index)) == expected


def test_admission_keeps_the_events_policies_can_match():
    raw = worker_spec(
        policies=[{"exitCode": 3, "action": "RestartJob"}],
        task={"policies": [{"event": "TaskCompleted", "action": "CompleteJob"}]},
    )
    submitted = JobScript("job", raw).submit().last

    state, _ = step(initial_state(submitted.key), submitted)

    assert state.policy_events == frozenset({"PodFailed", "TaskCompleted"})


def test_jobs_of_the_same_policies_share_their_policy_events():
    """Every working job's state holds the set: equal ones are one object, not one each."""
    raw = worker_spec(task={"policies": [{"event": "PodFailed", "action": "RestartTask"}]})
    states = []
    for name in ("first", "second"):
        submitted = JobScript(name, raw).submit().last
        states.append(step(initial_state(submitted.key), submitted)[0])

    first, second = (state.policy_events for state in states)
    assert first == frozenset({"PodFailed"})
    assert first is second

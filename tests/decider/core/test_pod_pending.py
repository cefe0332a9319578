"""PodPending policies act only with a `timeout` (Volcano's `shouldConfigureTimeout` in
`applyPolicies`): every pod is Pending when it is made, so without a grace period such a
policy would fire at each new pod."""

from __future__ import annotations

from typing import Any

from lavalog.events.decisions import ActionDecided, TimerScheduled
from tests.decider.support import admitted, given, phases, when, worker_spec
from tests.decider.support import observed as script

NEW_POD = {"policies": [{"event": "PodPending", "action": "RestartJob"}]}


def pending_job(**spec: Any) -> Any:
    """A Running job whose pod worker-0 was lost and is made again, as its sync does."""
    return given("Running", spec=worker_spec(**spec)), script().pod("worker", 0, "Pending").last


def test_a_pod_pending_policy_without_a_timeout_does_nothing():
    state, observation = pending_job(**NEW_POD)

    _, decisions = when(state, observation)

    assert not [d for d in decisions if isinstance(d, (ActionDecided, TimerScheduled))]
    assert "Restarting" not in phases(decisions)


def test_a_pod_pending_policy_with_a_timeout_waits_for_it():
    state, observation = pending_job(
        policies=[{"event": "PodPending", "action": "RestartJob", "timeout": "10m"}]
    )

    _, decisions = when(state, observation)

    (timer,) = [d for d in decisions if isinstance(d, TimerScheduled)]
    assert (timer.action, timer.trigger, timer.pod) == ("RestartJob", "PodPending", "job-worker-0")
    assert timer.fire_at == observation.time + 600


def test_the_wildcard_covers_pod_pending_only_with_a_timeout():
    without, observation = pending_job(policies=[{"event": "*", "action": "AbortJob"}])
    with_timeout, _ = pending_job(policies=[{"event": "*", "action": "AbortJob", "timeout": "1m"}])

    assert not [d for d in when(without, observation)[1] if isinstance(d, TimerScheduled)]
    assert [
        d.action for d in when(with_timeout, observation)[1] if isinstance(d, TimerScheduled)
    ] == ["AbortJob"]


def test_admission_keeps_a_pod_pending_policy_without_a_timeout():
    """Volcano's webhook accepts it (it just never acts), so lavalog accepts it too."""
    assert admitted(worker_spec(**NEW_POD)).policies[0].event == "PodPending"

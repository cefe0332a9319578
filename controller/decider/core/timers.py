"""Durable timers: delayed policy actions and the TTL after a job finishes.

A policy with `timeout`, or a restart under lavalog's restart backoff (`backoff`), does
not act at once: it schedules a timer (a decision), and the decider service later
observes TimerFired. A delayed action is cancelled when the job leaves Pending/Running,
and a timeout's also when its cause has gone (the pod it was about is Running or
Succeeded again, the PodGroup is Running again): a timeout is a grace period. A backoff
alone only postpones a restart the policy chose at once, which recovery does not undo.
This works the same for every action, RestartTask and RestartPod included
(volcano#4743).
"""

from __future__ import annotations

import msgspec

from lavalog.controller.decider.core.policies import Resolution, policy_timeout
from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.triggers import Trigger
from lavalog.events.decisions import RestartBackoffDelay, TimerCancelled, TimerScheduled
from lavalog.events.volcano.api import Action, Event, PodPhase

_POD_CAUSES = frozenset({Event.POD_FAILED, Event.POD_EVICTED, Event.POD_PENDING, Event.TASK_FAILED})
_RECOVERED = frozenset({PodPhase.RUNNING, PodPhase.SUCCEEDED})


def schedule_delayed(step: Step, trigger: Trigger, resolution: Resolution) -> None:
    """Delay `resolution.action`, unless the same delayed action is already pending."""
    for timer in step.state.timers.values():
        if (timer.action, timer.trigger, timer.task, timer.pod) == (
            resolution.action,
            trigger.event,
            trigger.task,
            trigger.pod,
        ):
            return
    step.emit(
        TimerScheduled,
        timer_id=f"{step.observation.id}#timer",
        fire_at=step.now + resolution.delay,
        action=resolution.action,
        trigger=trigger.event,
        task=trigger.task,
        pod=trigger.pod,
        exit_code=trigger.exit_code,
        policy=resolution.policy,
        backoff=resolution.backoff or msgspec.UNSET,
        failure=trigger.failure or msgspec.UNSET,
    )


def cancel_resolved_timers(step: Step) -> None:
    """Cancel delayed actions whose cause has gone away, if they wait for it to."""
    state = step.state
    if not state.timers:
        return
    for timer in list(state.timers.values()):
        backoff_only = not policy_timeout(step.spec, timer.policy)
        if isinstance(timer.backoff, RestartBackoffDelay) and backoff_only:
            continue  # postponed by the restart backoff only: no grace period
        reason = ""
        if timer.trigger in _POD_CAUSES and timer.pod:
            pod = state.pods.get(timer.pod)
            if pod is not None and not pod.deleting and pod.phase in _RECOVERED:
                reason = f"pod {pod.name} is {pod.phase} again"
        elif (
            timer.trigger == Event.UNKNOWN
            and state.podgroup is not None
            and state.podgroup.phase == "Running"
        ):
            reason = "the PodGroup is Running again"
        if reason:
            step.emit(TimerCancelled, timer_id=timer.timer_id, reason=reason)


def cancel_policy_timers(step: Step, *, reason: str) -> None:
    for timer in list(step.state.timers.values()):
        if timer.action != Action.DELETE_JOB:
            step.emit(TimerCancelled, timer_id=timer.timer_id, reason=reason)


def cancel_all_timers(step: Step, *, reason: str) -> None:
    for timer_id in list(step.state.timers):
        step.emit(TimerCancelled, timer_id=timer_id, reason=reason)


def schedule_ttl(step: Step) -> None:
    """Start ttlSecondsAfterFinished, if the job has one."""
    spec = step.state.spec
    if spec is None or spec.ttl_seconds_after_finished is None:
        return
    step.emit(
        TimerScheduled,
        timer_id=f"{step.observation.id}#ttl",
        fire_at=step.now + spec.ttl_seconds_after_finished,
        action=Action.DELETE_JOB,
        trigger="TTLSecondsAfterFinished",
    )

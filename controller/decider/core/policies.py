"""Which action an event leads to: Volcano's `applyPolicies`, in its order.

1. an action already chosen (a command, a delayed action coming due) is taken as is;
2. internal events (OutOfSync, CommandIssued without an action) only sync;
3. an event from a pod of an older job version only syncs;
4. the task's policies, then the job's; the first that matches wins. A policy matched
   by PodPending counts only when it has a `timeout` (`shouldConfigureTimeout`): without
   one the search goes on past it, as a pod is Pending each time it is made;
5. otherwise sync.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from lavalog.controller.admission.exit_codes import policy_key
from lavalog.controller.decider.core.matchable import WILDCARD_EVENTS
from lavalog.controller.decider.core.triggers import Trigger
from lavalog.events.decisions import PolicyRef, RestartBackoffDelay
from lavalog.events.durations import parse_duration
from lavalog.events.extensions import ExitCodeSet
from lavalog.events.volcano.api import Action, Event, JobSpec, LifecyclePolicy

#: events whose policies act only with a `timeout` (Volcano's `shouldConfigureTimeout`)
_TIMEOUT_REQUIRED = frozenset({Event.POD_PENDING})
_NEVER_MATCHED = frozenset({Event.OUT_OF_SYNC, Event.COMMAND_ISSUED})


class Resolution(msgspec.Struct, frozen=True):
    """The action to take, the policy that chose it and how long to wait first."""

    action: str
    policy: PolicyRef | None = None
    delay: float = 0.0
    #: the part of `delay` the restart backoff extension added (`restart_backoff`)
    backoff: RestartBackoffDelay | None = None


SYNC = Resolution(action=Action.SYNC_JOB)


def apply_policies(
    spec: JobSpec,
    job_version: int,
    trigger: Trigger,
    exit_codes: Mapping[str, ExitCodeSet] | None = None,
    *,
    matchable: frozenset[str] | None = None,
) -> Resolution:
    """`exit_codes`: lavalog's exit-code sets, which widen a policy's `exitCode`;
    `matchable`: `matchable.matchable_events(spec)`, when known (None: every policy is tried)."""
    sets = exit_codes or {}
    if trigger.action:
        return Resolution(action=trigger.action, policy=trigger.policy)
    if trigger.event in _NEVER_MATCHED:
        return SYNC
    if matchable is not None and trigger.event not in matchable:
        return SYNC
    if trigger.job_version is not None and trigger.job_version < job_version:
        return SYNC
    if trigger.task:
        task = spec.task(trigger.task)
        if task is not None:
            found = _first_match(task.policies, trigger, sets, task.name)
            if found is not None:
                index, policy = found
                return _resolution(policy, PolicyRef(level="task", index=index, task=task.name))
    found = _first_match(spec.policies, trigger, sets, None)
    if found is not None:
        index, policy = found
        return _resolution(policy, PolicyRef(level="job", index=index))
    return SYNC


def _first_match(
    policies: tuple[LifecyclePolicy, ...],
    trigger: Trigger,
    exit_codes: Mapping[str, ExitCodeSet],
    task: str | None,
) -> tuple[int, LifecyclePolicy] | None:
    for index, policy in enumerate(policies):
        codes = exit_codes.get(policy_key(task, index)) if exit_codes else None
        if _matches(policy, trigger, codes):
            return index, policy
    return None


def _matches(policy: LifecyclePolicy, trigger: Trigger, codes: ExitCodeSet | None) -> bool:
    names = policy.event_names()
    if (
        names
        and (trigger.event in names or (Event.ANY in names and trigger.event in WILDCARD_EVENTS))
        and (policy.timeout is not None or trigger.event not in _TIMEOUT_REQUIRED)
    ):
        return True
    # exit code 0 is not an error code and is refused by admission
    if policy.exit_code is None or trigger.exit_code is None or trigger.event != Event.POD_FAILED:
        return False
    if codes is not None:
        return codes.matches(trigger.exit_code)
    return policy.exit_code == trigger.exit_code


def _resolution(policy: LifecyclePolicy, ref: PolicyRef) -> Resolution:
    return Resolution(action=policy.action, policy=ref, delay=_timeout(policy))


def policy_timeout(spec: JobSpec, ref: PolicyRef | None) -> float:
    """Seconds of the `timeout` of the policy `ref` names; 0 without one. (A job's
    policies cannot change once admitted, so a reference stays good.)"""
    if ref is None:
        return 0.0
    task = spec.task(ref.task) if ref.level == "task" else None
    policies = task.policies if task is not None else spec.policies
    return _timeout(policies[ref.index]) if ref.index < len(policies) else 0.0


def _timeout(policy: LifecyclePolicy) -> float:
    delay = parse_duration(policy.timeout) if policy.timeout else 0.0
    return max(delay, 0.0)

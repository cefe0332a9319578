"""Kubernetes Events on the Job: what `kubectl describe vcjob` shows of each decision.

An Event's name is derived from the decision id, so carrying out a decision again (a
replay, a restart before the offset commit) creates nothing new: the second create is
AlreadyExists. Its time is the decision's, not the clock's, for the same reason. Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from events.decisions import ActionDecided, Decision, JobRejected, PhaseChanged
from events.timestamps import to_rfc3339
from events.topics import split_job_key
from events.volcano import API_VERSION, KIND, JobPhase

COMPONENT = "lavalog-actuator"
NORMAL = "Normal"
WARNING = "Warning"
INVALID_SPEC = "InvalidSpec"


@dataclass(frozen=True, slots=True)
class Notice:
    """An Event's type, reason and message."""

    type: str
    reason: str
    message: str


def _action(decision: ActionDecided) -> Notice:
    cause = [f"{decision.action} on {decision.trigger}"]
    if decision.pod:
        cause.append(f"pod {decision.pod}")
    if decision.task:
        cause.append(f"task {decision.task}")
    if decision.exit_code is not None:
        cause.append(f"exit code {decision.exit_code}")
    message = ", ".join(cause)
    policy = decision.policy
    if policy is not None:
        owner = f"task {policy.task} " if policy.level == "task" else "job "
        message += f"; matched {owner}policy {policy.index}"
    if decision.timer_id:
        message += "; delayed by the policy's timeout"
    return Notice(NORMAL, decision.action, f"{message} (job was {decision.phase})")


def _phase(decision: PhaseChanged) -> Notice:
    message = f"{decision.previous or 'new'} -> {decision.phase}"
    why = ": ".join(part for part in (decision.reason, decision.message) if part)
    if why:
        message += f": {why}"
    message += f" (version {decision.version}, retries {decision.retry_count})"
    kind = WARNING if decision.phase == JobPhase.FAILED else NORMAL
    return Notice(kind, decision.phase, message)


def _rejected(decision: JobRejected) -> Notice:
    errors = "; ".join(str(error) for error in decision.errors)
    return Notice(WARNING, INVALID_SPEC, f"spec generation {decision.generation}: {errors}")


_NOTICES: dict[type[Decision], Callable[[Any], Notice]] = {
    ActionDecided: _action,
    PhaseChanged: _phase,
    JobRejected: _rejected,
}

REPORTED = tuple(_NOTICES)
"""Decision types that are carried out as an Event and nothing else."""


def notice(decision: Decision) -> Notice:
    """The Event reporting `decision` (one of `REPORTED`)."""
    return _NOTICES[type(decision)](decision)


def failure(decision: Decision, error: BaseException) -> Notice:
    """The Warning for a decision that could not be carried out."""
    return Notice(WARNING, f"Failed{type(decision).__name__}", f"{decision.id}: {error}")


def event_manifest(decision: Decision, what: Notice, *, suffix: str = "") -> dict[str, Any]:
    """A core v1 Event on the decision's Job; `suffix` tells apart two Events of one decision."""
    namespace, name = split_job_key(decision.key)
    digest = hashlib.sha256(f"{decision.id}{suffix}".encode()).hexdigest()[:16]
    when = to_rfc3339(decision.time)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{digest}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": name,
            "namespace": namespace,
            "uid": decision.job_uid,
        },
        "type": what.type,
        "reason": what.reason,
        "message": what.message,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": when,
        "lastTimestamp": when,
        "count": 1,
    }

"""Kubernetes Events on the Job: what `kubectl describe vcjob` shows of each decision.

Where Volcano's job controller records an Event, lavalog records one with the same
reason and source component, and a message that starts as Volcano's does, so that
alerts and dashboards built on Volcano's Events keep working; lavalog's own detail
(trigger, pod, exit code, matched policy, decision id) follows in the message. Reasons
are Volcano's (`lavalog.events.volcano.reasons`). Phase changes and rejected specs
are Events Volcano does not have (its webhook refuses a bad spec before it exists);
phase changes are written only when asked for (`phase_events`): Volcano's controller
records no Event on a job's way to Running, and they would cost two calls per job.

An Event's name is derived from the decision id, so carrying out a decision again (a
replay, a restart before the offset commit) creates nothing new: the second create is
AlreadyExists. Its time is the decision's, not the clock's, for the same reason. Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lavalog.events.causes import EVENT, cause_of, describe_cause
from lavalog.events.decisions import (
    ActionDecided,
    Decision,
    JobDelete,
    JobRejected,
    PhaseChanged,
    PluginResourcesDelete,
    PluginResourcesEnsure,
    PodGroupCreate,
    PodGroupDelete,
    PodGroupPending,
    PodsCreate,
    PodsKill,
    PodsReplace,
    StatusWrite,
    TimerScheduled,
)
from lavalog.events.durations import format_duration
from lavalog.events.timestamps import to_rfc3339
from lavalog.events.topics import split_job_key
from lavalog.events.volcano.api import API_VERSION, KIND, Action, Event, JobPhase
from lavalog.events.volcano.reasons import (
    COMMAND_ISSUED,
    COMPONENT,
    EXECUTE_ACTION,
    FAILED_CREATE,
    FAILED_DELETE,
    INVALID_SPEC,
    JOB_STATUS_ERROR,
    NORMAL,
    PLUGIN_ERROR,
    PODGROUP_ERROR,
    PODGROUP_PENDING,
    PVC_ERROR,
    WARNING,
)

_MAX_NAME = 253


@dataclass(frozen=True, slots=True)
class Notice:
    """An Event's type, reason and message."""

    type: str
    reason: str
    message: str


def _action(decision: ActionDecided) -> tuple[Notice, ...]:
    cause = describe_cause(cause_of(decision), EVENT)
    if decision.uncounted is True:  # lavalog.io/uncounted-disruptions
        cause += "; not counted as a retry"
    if decision.trigger == FAILED_CREATE:  # Volcano's handleJobError at maxRequeueNum
        message = f"Job failed on action {Action.SYNC_JOB} for retry limit reached"
        return (Notice(NORMAL, EXECUTE_ACTION, f"{message} ({cause}; job was {decision.phase})"),)
    executed = Notice(
        NORMAL,
        EXECUTE_ACTION,
        f"Start to execute action {decision.action} ({cause}; job was {decision.phase})",
    )
    if decision.trigger != Event.COMMAND_ISSUED:
        return (executed,)
    issued = Notice(
        NORMAL,
        COMMAND_ISSUED,
        f"Start to execute command {decision.action}, "
        "and clean it up to make sure executed not more than once.",
    )
    return issued, executed


def _delayed(decision: TimerScheduled) -> tuple[Notice, ...]:
    if decision.action in (Action.DELETE_JOB, Action.SYNC_JOB):
        # ttlSecondsAfterFinished: Volcano's garbage collector says nothing; a job requeued
        # after a refused create: its FailedCreate Event said it
        return ()
    cause = describe_cause(cause_of(decision), EVENT)
    delay = format_duration(decision.fire_at - decision.time)
    return (
        Notice(NORMAL, EXECUTE_ACTION, f"Execute action {decision.action} after {delay} ({cause})"),
    )


def _phase(decision: PhaseChanged) -> tuple[Notice, ...]:
    message = f"{decision.previous or 'new'} -> {decision.phase}"
    why = ": ".join(part for part in (decision.reason, decision.message) if part)
    if why:
        message += f": {why}"
    message += f" (version {decision.version}, retries {decision.retry_count})"
    kind = WARNING if decision.phase == JobPhase.FAILED else NORMAL
    return (Notice(kind, decision.phase, message),)


def _rejected(decision: JobRejected) -> tuple[Notice, ...]:
    errors = "; ".join(str(error) for error in decision.errors)
    return (Notice(WARNING, INVALID_SPEC, f"spec generation {decision.generation}: {errors}"),)


def _podgroup_pending(decision: PodGroupPending) -> tuple[Notice, ...]:
    namespace, name = split_job_key(decision.key)
    condition = decision.condition.lower()
    message = f"PodGroup {namespace}:{name} {condition}, reason: {decision.message}"
    if decision.reason:
        message += f" ({decision.reason}, PodGroup {decision.podgroup})"
    return (Notice(WARNING, PODGROUP_PENDING, message),)


_NOTICES: dict[type[Decision], Callable[[Any], tuple[Notice, ...]]] = {
    ActionDecided: _action,
    TimerScheduled: _delayed,
    PhaseChanged: _phase,
    JobRejected: _rejected,
    PodGroupPending: _podgroup_pending,
}

REPORTED = tuple(_NOTICES)
"""Decision types that are carried out as Events and nothing else."""


def notices(decision: Decision, *, phase_events: bool = False) -> tuple[Notice, ...]:
    """The Events reporting `decision` (one of `REPORTED`), in the order Volcano records them;
    none for a phase change unless `phase_events` (lavalog's own Event, off by default)."""
    if isinstance(decision, PhaseChanged) and not phase_events:
        return ()
    return _NOTICES[type(decision)](decision)


def reported(decision: Decision, *, phase_events: bool = False) -> list[dict[str, Any]]:
    """The Event manifests of `decision` (one of `REPORTED`), each named apart."""
    return [
        event_manifest(decision, notice, suffix=f"#{notice.reason}" if index else "")
        for index, notice in enumerate(notices(decision, phase_events=phase_events))
    ]


#: decision type -> Volcano's reason and the start of its message for the failure (the
#: error follows, as Volcano's `%v` of it does)
_FAILURES: dict[type[Decision], tuple[str, str]] = {
    PodsCreate: (FAILED_CREATE, "Error creating pods: "),
    PodsKill: (FAILED_DELETE, "Error deleting pods: "),
    # a replacement's delete answers NotFound or a failed precondition as done, so what
    # fails is its create
    PodsReplace: (FAILED_CREATE, "Error creating pods: "),
    PodGroupCreate: (PODGROUP_ERROR, "Failed to create PodGroup, err: "),
    PluginResourcesEnsure: (PLUGIN_ERROR, "Execute plugin when job add failed, err: "),
    # Volcano records it for its first status write ("Failed to initialize job status")
    StatusWrite: (JOB_STATUS_ERROR, "Failed to update job status, err: "),
    # what follows Volcano records no Event for (it retries the sync)
    PodGroupDelete: (FAILED_DELETE, "Failed to delete PodGroup, err: "),
    PluginResourcesDelete: (PLUGIN_ERROR, "Execute plugin when job delete failed, err: "),
    JobDelete: (FAILED_DELETE, "Failed to delete job, err: "),
}


#: kind refused -> Volcano's reason and the start of its message (`syncJob`, `initiateJob`)
_REFUSALS: dict[str, tuple[str, str]] = {
    "Pod": (FAILED_CREATE, "Error creating pods: "),
    "PodGroup": (PODGROUP_ERROR, "Failed to create PodGroup, err: "),
    "PersistentVolumeClaim": (PVC_ERROR, "Failed to create PVC, err: "),
}


def refused(decision: Decision, kind: str, errors: Mapping[str, str]) -> Notice:
    """The Warning for creates the API server refused (`errors`: name -> its message), in
    Volcano's words: `Error creating pods: [failed to create pod NAME, err: ...]`, Go's
    print of the list of errors."""
    reason, what = _REFUSALS[kind]
    if kind == "Pod":
        listed = " ".join(f"failed to create pod {n}, err: {e}" for n, e in sorted(errors.items()))
        message = f"{what}[{listed}]"
    else:
        message = what + "; ".join(errors.values())
    return Notice(WARNING, reason, f"{message} (decision {decision.id})")


def failure(decision: Decision, error: BaseException) -> Notice:
    """The Warning for a decision that could not be carried out."""
    kind = type(decision).__name__
    unknown = (f"Failed{kind}", f"Failed to carry out {kind}, err: ")
    reason, what = _FAILURES.get(type(decision), unknown)
    return Notice(WARNING, reason, f"{what}{error} (decision {decision.id})")


def event_manifest(decision: Decision, what: Notice, *, suffix: str = "") -> dict[str, Any]:
    """A core v1 Event on the decision's Job; `suffix` tells apart two Events of one decision."""
    namespace, name = split_job_key(decision.key)
    digest = hashlib.sha256(f"{decision.id}{suffix}".encode()).hexdigest()[:16]
    when = to_rfc3339(decision.time)
    # a name is at most 253 characters; the job's may already be that long
    prefix = name[: _MAX_NAME - len(digest) - 1].rstrip(".-")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{prefix}.{digest}", "namespace": namespace},
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

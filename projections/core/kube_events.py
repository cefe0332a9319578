"""The Kubernetes Events lavalog's controller records on a Job, kept past their hour.

The actuator records an Event for some decisions (an action taken, a delayed action, a
phase change, a rejected spec, a PodGroup that waits: `kubectl describe vcjob` shows
them). Kubernetes deletes Events after an hour (kube-apiserver's `--event-ttl`); the
decisions that produced them stay on the log. So the projections draw the same Events
from the decisions, with the function the actuator writes them with
(`lavalog.controller.actuator.core.job_events.notices`): the same type, reason and
message, at the decision's time, which is the time the actuator gives the Event. Phase
changes are among them whether or not the controller writes them to Kubernetes
(`lavalog run --phase-events`): the page shows a job's history, and they are part of it;
each says whether the controller writes it only with that option (`opt_in`), so the page
does not claim `kubectl describe` showed what a controller run without it never wrote.

Not here: the Warnings of decisions the API server refused to carry out (FailedCreate,
FailedDelete...), whose answer is not on the log, and Events other components record on
the Job.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from lavalog.controller.actuator.core.job_events import REPORTED, notices
from lavalog.events.decisions import Decision
from lavalog.events.volcano.reasons import COMPONENT
from lavalog.projections.core.wire import Time

#: the decision types that are recorded as Events (their `type` on the log)
REPORTED_TYPES = tuple(sorted(kind.__name__ for kind in REPORTED))


class KubeEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One Event on the Job, as `kubectl describe vcjob` lists it."""

    time: Time
    #: Normal or Warning
    type: str
    #: Volcano's reason (ExecuteAction, CommandIssued, PodGroupPending...) or the phase
    reason: str
    message: str
    #: the component the Event is recorded under (Volcano's job controller's name)
    source: str
    #: the id of the decision it reports
    decision: str
    #: written to Kubernetes only when the controller runs with `--phase-events`
    opt_in: bool = False


def kube_events(decisions: Iterable[Decision]) -> tuple[KubeEvent, ...]:
    """The Events the actuator records for `decisions` (each of a `REPORTED_TYPES` type),
    in their order."""
    return tuple(
        KubeEvent(
            time=decision.time,
            type=notice.type,
            reason=notice.reason,
            message=notice.message,
            source=COMPONENT,
            decision=decision.id,
            opt_in=notice not in always,
        )
        for decision in decisions
        for always in (notices(decision),)
        for notice in notices(decision, phase_events=True)
    )

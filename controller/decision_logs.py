"""What the controller's log lines say about a decision: the decider when it takes one, the
actuator when it has carried it out. Every such line names the job (`job`), the
decision (`decision`, its id) and its kind, plus the few fields an operator reads first.
"""

from __future__ import annotations

import time
from typing import Any

from lavalog.events.decisions import (
    ActionDecided,
    Decision,
    JobAdmitted,
    JobDelete,
    JobRejected,
    PhaseChanged,
    PluginResourcesEnsure,
    PodGroupCreate,
    PodGroupDelete,
    PodsCreate,
    PodsKill,
    PodsReplace,
    StatusWrite,
    TimerCancelled,
    TimerScheduled,
)

#: pod names listed in one line at most (a job may have thousands)
_NAMES_SHOWN = 10
#: what the actuator did, by decision kind; the other kinds become a Kubernetes Event
_CARRIED_OUT: dict[type[Decision], str] = {
    PodGroupCreate: "podgroup created",
    PodGroupDelete: "podgroup deleted",
    PluginResourcesEnsure: "plugin resources ensured",
    PodsCreate: "pods created",
    PodsKill: "pods killed",
    PodsReplace: "pods replaced",
    StatusWrite: "status written",
    JobDelete: "job deleted",
}


def carried_out(decision: Decision) -> str:
    """The actuator's log message once `decision` is done: `pods created`, ..."""
    return _CARRIED_OUT.get(type(decision), "event recorded")


def lag(decision: Decision) -> float:
    """Seconds from the decision's cause (when the change was observed) until now: how far
    behind the cluster the actuator is when it logs the decision carried out."""
    return round(time.time() - decision.time, 3)


def decision_fields(decision: Decision) -> dict[str, Any]:
    """`job`, `decision`, `kind` and the details of this kind of decision."""
    fields: dict[str, Any] = {
        "job": decision.key,
        "decision": decision.id,
        "kind": type(decision).__name__,
    }
    match decision:
        case ActionDecided() | TimerScheduled():
            fields.update(action=decision.action, trigger=decision.trigger)
            fields.update(_given(task=decision.task, pod=decision.pod))
            if decision.exit_code is not None:
                fields["exit_code"] = decision.exit_code
        case PhaseChanged():
            fields.update(phase=decision.phase, previous=decision.previous)
            fields.update(_given(reason=decision.reason, message=decision.message))
            fields.update(retry_count=decision.retry_count, version=decision.version)
        case PodsCreate() | PodsKill() | PodsReplace():
            fields["pods"] = len(decision.pods)
            fields["names"] = [pod.name for pod in decision.pods[:_NAMES_SHOWN]]
            if isinstance(decision, PodsKill | PodsReplace):
                fields["reason"] = decision.reason
        case StatusWrite():
            fields.update(
                phase=decision.status.state.phase, retry_count=decision.status.retry_count
            )
        case PodGroupCreate():
            fields.update(podgroup=decision.podgroup, min_member=decision.min_member)
        case PodGroupDelete():
            fields["podgroup"] = decision.podgroup
        case JobAdmitted():
            fields["generation"] = decision.generation
        case JobRejected():
            fields["generation"] = decision.generation
            fields["errors"] = [str(error) for error in decision.errors]
        case TimerCancelled() | JobDelete():
            fields["reason"] = decision.reason
    return fields


def _given(**values: str) -> dict[str, str]:
    return {name: value for name, value in values.items() if value}

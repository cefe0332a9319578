"""`evolve(state, event) -> state`: fold one observation or decision into a job's state.

Pure and total: every event type has a rule, events of another incarnation of the job
(another uid) leave the state as it is, and nothing here reads a clock or judges: a new
spec takes effect through the decider's recorded verdict on it (`JobAdmitted`,
`JobRejected`; see `admission`), not through the observation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec.structs import replace

from lavalog.controller.decider.core import refused_creates
from lavalog.controller.decider.core.counts import (
    PodChange,
    append_condition,
    with_pods,
    with_replicas,
)
from lavalog.controller.decider.core.matchable import matchable_events
from lavalog.controller.decider.core.state import (
    COMMAND_MEMORY,
    JobState,
    PodGroupRecord,
    PodRecord,
    Replicas,
    incarnation_state,
)
from lavalog.controller.decider.core.takeover import early_facts, keep_early, take_over
from lavalog.events.decisions import (
    ActionDecided,
    AnyDecision,
    Decision,
    JobAdmitted,
    JobDelete,
    JobRejected,
    PhaseChanged,
    PluginResourcesDelete,
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
from lavalog.events.durations import format_duration
from lavalog.events.observations import (
    AnyObservation,
    CommandIssued,
    CreateFailed,
    JobDeleted,
    JobObserved,
    PodDeleted,
    PodGroupObserved,
    PodObserved,
    PodsListed,
    TimerFired,
)
from lavalog.events.timestamps import to_rfc3339
from lavalog.events.volcano.api import Event, JobCondition, JobPhase, PodPhase

LogEvent = AnyObservation | AnyDecision

#: phases a job runs (or waits to run) in; entering any other one is a kill or an end,
#: where Volcano's `killJob` writes `runningDuration`
_SYNCED_RUN_PHASES = frozenset({JobPhase.PENDING, JobPhase.RUNNING})


def evolve(state: JobState, event: LogEvent) -> JobState:
    """The state after `event`."""
    if type(event) is JobObserved:
        return _job_observed(state, event)
    if event.job_uid != state.uid:
        return state if state.uid or isinstance(event, Decision) else keep_early(state, event)
    return fold_decided(state, event)


def fold_decided(state: JobState, event: LogEvent) -> JobState:
    """`evolve` of an event about `state`'s incarnation (its uid), other than a
    JobObserved: every decision the decider makes about a job is one."""
    rule = _RULES.get(type(event))
    return rule(state, event) if rule is not None else state


def _job_observed(state: JobState, event: JobObserved) -> JobState:
    early = state.early
    state = incarnation_state(state, event.job_uid)
    if not state.uid:
        state = take_over(replace(state, uid=event.job_uid), event.status, event.time)
        for fact in early_facts(early, event.job_uid):
            state = evolve(state, fact)
    if state.created is None and event.created is not None:
        state = replace(state, created=event.created)
    if event.deleting and not state.deleting:
        state = replace(state, deleting=True)
    return state


def _job_admitted(state: JobState, event: JobAdmitted) -> JobState:
    return replace(
        with_replicas(state, Replicas.of(event.spec)),
        generation=event.generation,
        spec=event.spec,
        policy_events=matchable_events(event.spec),
        exit_codes=event.exit_codes or {},
        restart_backoff=event.restart_backoff or None,
        uncounted_disruptions=event.uncounted_disruptions or None,
        rejected=(),
    )


def _job_rejected(state: JobState, event: JobRejected) -> JobState:
    """The job goes on with the spec admitted before, if any."""
    return replace(state, generation=event.generation, rejected=event.errors)


def _job_deleted(state: JobState, event: JobDeleted) -> JobState:
    return replace(state, deleted=True, deleting=True)


#: a pod's phases in the only order Kubernetes moves one pod through them (Unknown, a
#: node not reporting, can come and go at any time, so it has no place here)
_PHASE_ORDER: dict[str, int] = {
    PodPhase.PENDING: 0,
    PodPhase.RUNNING: 1,
    PodPhase.SUCCEEDED: 2,
    PodPhase.FAILED: 2,
}


def is_stale(known: PodRecord | None, event: PodObserved) -> bool:
    """Whether `event` shows the pod `known` in a phase it has already left: a fact
    published again late (a watcher that lost its Lease, a relist racing a watch). The pod
    keeps its newer state and the observation is no event (`triggers`), so a late copy of an
    earlier fact cannot undo the later one (nor differ from an audit that reads each fact
    once): Volcano's informer hands `updatePod` each pod's versions in order, never an
    older one after a newer."""
    if known is None or known.uid != event.pod_uid:
        return False
    then, now = _PHASE_ORDER.get(known.phase), _PHASE_ORDER.get(event.phase)
    return then is not None and now is not None and now < then


def _pod_observed(state: JobState, event: PodObserved) -> JobState:
    known = state.pods.get(event.pod)
    if is_stale(known, event):
        return state
    same = known is not None and known.uid in ("", event.pod_uid)
    killed = same and known is not None and known.killed
    if known is not None and not known.uid and same:
        state = refused_creates.created(state)  # a pod asked for was made
    record = PodRecord(
        name=event.pod,
        task=event.task,
        index=event.index,
        version=event.job_version,
        uid=event.pod_uid,
        phase=event.phase,
        exit_code=event.exit_code,
        restart_count=_restarts(event),
        containers_ready=event.containers_ready is not False,
        deleting=event.deleting or killed,
        killed=killed,
        replacement_version=known.replacement_version if same and known is not None else None,
        node=event.node,
        disruption=event.disruption or "",
    )
    if record == known:
        return state  # seen again as it was: the state is not copied
    return with_pods(state, {**state.pods, event.pod: record}, ((known, record),))


def _restarts(event: PodObserved) -> int:
    """Restarts of all the pod's containers; a log written before the watchers published
    them has the highest count of one container instead."""
    total = event.total_restarts
    return event.restart_count if isinstance(total, msgspec.UnsetType) else total


def _pod_deleted(state: JobState, event: PodDeleted) -> JobState:
    known = state.pods.get(event.pod)
    if known is None or known.uid not in ("", event.pod_uid):
        return state
    pods = dict(state.pods)
    return with_pods(state, pods, _forget(state, pods, known))


def _pods_listed(state: JobState, event: PodsListed) -> JobState:
    if state.pods_unknown:
        state = replace(state, pods_unknown=False)
    gone = [pod for pod in state.pods.values() if pod.uid and event.pods.get(pod.name) != pod.uid]
    if not gone:
        return state
    pods = dict(state.pods)
    changes = [change for pod in gone for change in _forget(state, pods, pod)]
    return with_pods(state, pods, changes)


def _forget(state: JobState, pods: dict[str, PodRecord], gone: PodRecord) -> list[PodChange]:
    """Take a pod that is gone out of `pods`; one the actuator replaces (PodsReplace) comes
    back as requested, last, as the sync its deletion causes would have asked for it, unless
    the job has moved to another version since (the actuator then does not create it)."""
    del pods[gone.name]
    if gone.replacement_version is None or gone.replacement_version != state.version:
        return [(gone, None)]
    again = PodRecord(
        name=gone.name, task=gone.task, index=gone.index, version=gone.replacement_version
    )
    pods[gone.name] = again
    return [(gone, again)]


def _podgroup_observed(state: JobState, event: PodGroupObserved) -> JobState:
    if event.podgroup_uid == state.retired_podgroup_uid:
        return state
    if event.deleted:
        if state.podgroup is not None and state.podgroup.uid in ("", event.podgroup_uid):
            return replace(state, podgroup=None)
        return state
    record = PodGroupRecord(name=event.podgroup, uid=event.podgroup_uid, phase=event.phase)
    return replace(state, podgroup=record)


def _command_issued(state: JobState, event: CommandIssued) -> JobState:
    if event.command in state.handled_commands:
        return state
    handled = (*state.handled_commands, event.command)[-COMMAND_MEMORY:]
    if state.pods_unknown or state.spec is None:  # not decided yet: carried out later
        deferred = (*state.deferred_actions, event.action)[-COMMAND_MEMORY:]
        return replace(state, handled_commands=handled, deferred_actions=deferred)
    return replace(state, handled_commands=handled)


def _action_decided(state: JobState, event: ActionDecided) -> JobState:
    """A deferred Command's action, carried out now."""
    if event.trigger != Event.COMMAND_ISSUED or event.action not in state.deferred_actions:
        return state
    deferred = list(state.deferred_actions)
    deferred.remove(event.action)
    return replace(state, deferred_actions=tuple(deferred))


def _timer_fired(state: JobState, event: TimerFired) -> JobState:
    if event.timer_id not in state.timers:
        return state
    timers = dict(state.timers)
    del timers[event.timer_id]
    return replace(state, timers=timers)


def _phase_changed(state: JobState, event: PhaseChanged) -> JobState:
    running_duration = state.running_duration
    if event.phase not in _SYNCED_RUN_PHASES and state.created is not None:
        running_duration = format_duration(event.time - state.created)
    condition = JobCondition(status=event.phase, last_transition_time=to_rfc3339(event.time))
    return replace(
        state,
        phase=event.phase,
        reason=event.reason,
        message=event.message,
        last_transition=event.time,
        retry_count=event.retry_count,
        version=event.version,
        conditions=append_condition(state.conditions, condition),
        running_duration=running_duration,
    )


def _podgroup_create(state: JobState, event: PodGroupCreate) -> JobState:
    if state.podgroup is not None and state.podgroup.name == event.podgroup:
        return state  # an update of the PodGroup we have
    return replace(state, podgroup=PodGroupRecord(name=event.podgroup))


def _podgroup_delete(state: JobState, event: PodGroupDelete) -> JobState:
    retired = state.podgroup.uid if state.podgroup is not None else ""
    return replace(state, podgroup=None, retired_podgroup_uid=retired)


def _resources_ensured(state: JobState, event: PluginResourcesEnsure) -> JobState:
    return replace(state, resources_for=dict(event.task_replicas))


def _resources_deleted(state: JobState, event: PluginResourcesDelete) -> JobState:
    return replace(state, resources_for={})


def _pods_create(state: JobState, event: PodsCreate) -> JobState:
    pods = dict(state.pods)
    changes: list[PodChange] = []
    for ref in event.pods:
        record = PodRecord(name=ref.name, task=ref.task, index=ref.index, version=event.job_version)
        changes.append((pods.get(ref.name), record))
        pods[ref.name] = record
    return with_pods(state, pods, changes)


def _pods_kill(state: JobState, event: PodsKill) -> JobState:
    pods = dict(state.pods)
    changes: list[PodChange] = []
    for ref in event.pods:
        record = pods.get(ref.name)
        if record is None:
            continue
        if record.uid:
            killed = pods[ref.name] = replace(record, deleting=True, killed=True)
            changes.append((record, killed))
        else:
            del pods[ref.name]  # never seen: nothing will report its deletion
            changes.append((record, None))
    return with_pods(state, pods, changes)


def _pods_replace(state: JobState, event: PodsReplace) -> JobState:
    pods = dict(state.pods)
    changes: list[PodChange] = []
    for ref in event.pods:
        record = pods.get(ref.name)
        if record is not None:
            going = pods[ref.name] = replace(
                record, deleting=True, killed=True, replacement_version=event.job_version
            )
            changes.append((record, going))
    return with_pods(state, pods, changes)


def _status_write(state: JobState, event: StatusWrite) -> JobState:
    """The status as written; when it was stamped afresh (see `counts.job_status`), its
    time is this decision's."""
    stamped = event.status.conditions != state.conditions
    return replace(
        state,
        status=event.status,
        conditions=event.status.conditions,
        last_transition=event.time if stamped else state.last_transition,
    )


def _timer_scheduled(state: JobState, event: TimerScheduled) -> JobState:
    return replace(state, timers={**state.timers, event.timer_id: event})


def _timer_cancelled(state: JobState, event: TimerCancelled) -> JobState:
    timers = dict(state.timers)
    timers.pop(event.timer_id, None)
    return replace(state, timers=timers)


def _job_delete(state: JobState, event: JobDelete) -> JobState:
    return replace(state, delete_requested=True)


_RULES: dict[type, Callable[[JobState, Any], JobState]] = {
    JobDeleted: _job_deleted,
    PodObserved: _pod_observed,
    PodDeleted: _pod_deleted,
    PodsListed: _pods_listed,
    PodGroupObserved: _podgroup_observed,
    CommandIssued: _command_issued,
    TimerFired: _timer_fired,
    CreateFailed: refused_creates.fold,
    ActionDecided: _action_decided,
    PhaseChanged: _phase_changed,
    PodGroupCreate: _podgroup_create,
    PodGroupDelete: _podgroup_delete,
    PluginResourcesEnsure: _resources_ensured,
    PluginResourcesDelete: _resources_deleted,
    PodsCreate: _pods_create,
    PodsKill: _pods_kill,
    PodsReplace: _pods_replace,
    StatusWrite: _status_write,
    TimerScheduled: _timer_scheduled,
    TimerCancelled: _timer_cancelled,
    JobAdmitted: _job_admitted,
    JobRejected: _job_rejected,
    JobDelete: _job_delete,
}

"""`step`, `decide`: one observation in, the decisions it leads to out (the flow of a step).

A new generation of the Job is judged first (`admission`): admitted, its spec is what
every rule after runs on; rejected, the step reports it and does nothing else.
Then the order is Volcano's job worker: derive the event, pick the action with the
policies (or delay it), let the current phase's handler execute it, and after every
phase change write the status and sync once more in the new phase (Volcano writes the
status at the end of each handler and re-queues the job when it changed), so every
phase Volcano writes reaches the API, in order (Aborted -> Restarting -> Pending on
ResumeJob, Restarting -> Failed when retries run out). Finally the status is written if
it changed since. A fact no rule would act on is folded without them (`no_news`), and a
routine pod fact, which only moves the counts, is decided as its status write (`routine`).
"""

from __future__ import annotations

import msgspec
from msgspec.structs import replace

from lavalog.controller.admission import Admitted, Rejected
from lavalog.controller.decider.core import requeue
from lavalog.controller.decider.core.admission import admission, judge
from lavalog.controller.decider.core.counts import job_status
from lavalog.controller.decider.core.disruptions import uncounted
from lavalog.controller.decider.core.evolve import evolve
from lavalog.controller.decider.core.gang import report_unschedulable
from lavalog.controller.decider.core.no_news import no_news
from lavalog.controller.decider.core.phases import HANDLERS
from lavalog.controller.decider.core.policies import SYNC, apply_policies
from lavalog.controller.decider.core.replacement import (
    as_deleted_first,
    replace_finished_pods,
    replacement_seen_first,
)
from lavalog.controller.decider.core.request import SYNC_REQUEST, ActionRequest
from lavalog.controller.decider.core.restart_backoff import with_restart_backoff
from lavalog.controller.decider.core.routine import is_routine
from lavalog.controller.decider.core.state import JobState
from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.timers import (
    cancel_all_timers,
    cancel_resolved_timers,
    schedule_delayed,
)
from lavalog.controller.decider.core.transitions import Transition, enter_phase
from lavalog.controller.decider.core.triggers import (
    OUT_OF_SYNC,
    Trigger,
    derive_trigger,
    timer_trigger,
)
from lavalog.events.decisions import (
    ActionDecided,
    AnyDecision,
    JobDelete,
    JobRejected,
    PluginResourcesDelete,
    PluginResourcesEnsure,
    PodsCreate,
    PodsKill,
    StatusWrite,
)
from lavalog.events.observations import (
    AnyObservation,
    CommandIssued,
    CreateFailed,
    JobDeleted,
    JobObserved,
    PodGroupObserved,
    TimerFired,
)
from lavalog.events.volcano.api import Action, Event, JobPhase, run_over

#: bound once: on Python 3.11 each `Enum.MEMBER` is looked up through a `__getattr__` hook
_SYNC_JOB = Action.SYNC_JOB
#: phase changes followed within one step; Volcano's chains are at most four long
_MAX_FOLLOW_UPS = 8
#: what the status that ends a run goes out before, unless the step also makes what the
#: removal would pass
_REMOVED_BEFORE_MADE: dict[type[AnyDecision], type[AnyDecision]] = {
    PodsKill: PodsCreate,
    PluginResourcesDelete: PluginResourcesEnsure,
}


def step(state: JobState, observation: AnyObservation) -> tuple[JobState, list[AnyDecision]]:
    """The state after `observation` and the decisions it led to, in one pass."""
    if type(observation) is CommandIssued and not observation.job_uid:
        # a Command naming its target without a uid: Volcano goes by the name alone
        observation = replace(observation, job_uid=state.uid)
    observed = evolve(state, observation)
    if no_news(state, observation, observed):
        return observed, []
    current = Step(state, observation, observed)
    if is_routine(current):
        _write_status(current)  # all a routine fact decides
        return current.state, current.decisions
    return _by_rules(current)


def step_by_rules(
    state: JobState, observation: AnyObservation, observed: JobState
) -> tuple[JobState, list[AnyDecision]]:
    """`step` running every rule, on a fact that is no news or routine too; `observed` is
    `evolve(state, observation)`."""
    return _by_rules(Step(state, observation, observed))


def _by_rules(current: Step) -> tuple[JobState, list[AnyDecision]]:
    observation = current.observation
    if current.state.uid != observation.job_uid:
        return current.state, []  # about another incarnation, or a Job not seen yet
    _decide(current)
    if current.killed_targets:
        replace_finished_pods(current, step)
    return current.state, current.made


def decide(state: JobState, observation: AnyObservation) -> list[AnyDecision]:
    """The decisions `observation` leads to, given the job's state before it."""
    return step(state, observation)[1]


def _decide(step: Step) -> None:
    observation = step.observation
    if type(observation) is JobDeleted:
        cancel_all_timers(step, reason="job deleted")
        return
    if type(observation) is JobObserved and not _admitted(step, observation):
        return
    state = step.state
    if state.spec is None or state.deleting:
        return  # Volcano leaves a job that is being deleted alone
    step.spec = state.spec
    if state.pods_unknown:
        return  # taken over: decided once a pod list has shown which pods exist
    if type(observation) is CreateFailed:  # no sync now: it is requeued, as in Volcano
        if requeue.retry_limit_reached(step):
            _act(step, requeue.TERMINATE)
            _write_status(step)
            _kills_after_the_run_ends(step)
        return
    if type(observation) is PodGroupObserved:
        report_unschedulable(step, observation)
    trigger = _trigger(step)
    if replacement_seen_first(step):
        # the replaced pod's deletion, which was not seen, on the pods as it left them;
        # then what this observation shows, on which the trigger acts
        step.state = as_deleted_first(step)
        _act(step, OUT_OF_SYNC)
        step.state = evolve(step.state, step.observation)
    if trigger is not None:
        _act(step, trigger)
    for action in state.deferred_actions:  # Commands that came before it was decided
        _act(step, Trigger(event=Event.COMMAND_ISSUED, action=action))
    if trigger is not None or state.deferred_actions:
        _write_status(step)
        _kills_after_the_run_ends(step)


def _act(step: Step, trigger: Trigger) -> None:
    """Volcano's job worker for one event: policies, then the phase handler."""
    cancel_resolved_timers(step)
    state = step.state
    resolution = apply_policies(
        step.spec, state.version, trigger, state.exit_codes, matchable=state.policy_events
    )
    resolution = with_restart_backoff(state, trigger, resolution)
    if resolution.delay > 0:
        schedule_delayed(step, trigger, resolution)
        resolution = SYNC
    request = ActionRequest(action=resolution.action, trigger=trigger, policy=resolution.policy)
    step.acted = request
    if request.action != _SYNC_JOB:
        step.emit(
            ActionDecided,
            action=request.action,
            trigger=trigger.event,
            phase=step.state.phase,
            task=trigger.task,
            pod=trigger.pod,
            exit_code=trigger.exit_code,
            policy=request.policy,
            timer_id=trigger.timer_id,
            failure=trigger.failure or msgspec.UNSET,
            uncounted=uncounted(state, request.action, trigger) or msgspec.UNSET,
        )
    _execute(step, request)


def _trigger(step: Step) -> Trigger | None:
    """What happened; None for a timer that no longer exists or deletes the job."""
    observation = step.observation
    if type(observation) is not TimerFired:
        return derive_trigger(step.before, step.state, observation)
    timer = step.before.timers.get(observation.timer_id)
    if timer is None:
        return None  # cancelled before it fired
    if timer.action == Action.DELETE_JOB:
        if not step.state.delete_requested:
            step.emit(JobDelete, reason="ttlSecondsAfterFinished elapsed")
        return None
    return timer_trigger(timer)


def _execute(step: Step, request: ActionRequest) -> None:
    for _ in range(_MAX_FOLLOW_UPS):
        phase = step.state.phase
        HANDLERS[phase](step, request)
        if step.state.phase == phase:
            return
        _write_status(step)  # the phase this handler reached, before the next one's
        request = SYNC_REQUEST


def _admitted(step: Step, observation: JobObserved) -> bool:
    """Judge the generation `observation` brings, if it brings one, and record the verdict;
    False when it was rejected: reported once (a late copy of the generation brings none),
    and a job never admitted ends Failed."""
    verdict = judge(step.state, observation)
    if isinstance(verdict, Admitted):
        step.admit(admission(observation, verdict))
    if not isinstance(verdict, Rejected):
        return True
    state = step.state
    step.emit(JobRejected, generation=observation.generation, errors=verdict.errors)
    if state.spec is None and not state.phase:
        message = "; ".join(str(error) for error in verdict.errors)
        enter_phase(step, Transition(JobPhase.FAILED, reason="InvalidSpec", message=message))
        _write_status(step)
    return False


def _write_status(step: Step) -> None:
    """Write the status if it changed: checked again only once something was decided."""
    state = step.state
    if not state.phase or state is step.status_checked:
        return
    status = job_status(state, step.counts(), step.now)
    if status is not state.status:  # `job_status` returns the status it has when unchanged
        observation = step.observation
        write = StatusWrite(
            id=step.next_id(),
            key=observation.key,
            job_uid=state.uid,
            time=observation.time,
            cause=observation.id,
            status=status,
        )
        step.record(write)
    step.status_checked = step.state


def _kills_after_the_run_ends(step: Step) -> None:
    """Carry out the removal of a run's pods and plugin objects right after the status
    that ends the run: a new job version's, or a phase in which the version makes no more
    pods (Aborting, Failed, ...: `run_over`). A pod create of that run carried out
    again after a crash (the actuator repeats what it had not committed) then finds the
    Job past it (`actuator.core.staleness`), instead of making anew a pod whose kill,
    already done, named the uid before.

    Moving them changes no state: `evolve` of a kill touches only the pods, of a removal
    only the plugin objects, and of the decisions they pass none reads those, unless the
    step also makes pods (then the kill stays) or plugin objects (then the removal stays).
    """
    state, version = step.state, step.before.version
    if not run_over(state.version, state.phase, version):
        return  # the run goes on: its status makes no pod of it stale
    decisions = step.decisions
    first = next(
        (
            at
            for at, decision in enumerate(decisions)
            if isinstance(decision, StatusWrite)
            and run_over(decision.status.version, decision.status.state.phase, version)
        ),
        None,
    )
    if first is None:
        return
    made = {type(decision) for decision in decisions}
    moved = tuple(kind for kind, maker in _REMOVED_BEFORE_MADE.items() if maker not in made)
    later = [decision for decision in decisions[:first] if isinstance(decision, moved)]
    if later:
        before = [
            decision for decision in decisions[: first + 1] if not isinstance(decision, moved)
        ]
        step.reorder([*before, *later, *decisions[first + 1 :]])

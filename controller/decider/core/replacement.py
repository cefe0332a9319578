"""A finished pod restarted in one trip: a target kill becomes a PodsReplace where the sync
its deletion causes would create the pod again.

Volcano's RestartPod, RestartTask and RestartPartition delete pods; the deletion, once
observed, makes the job sync, and the sync creates the missing pods. Through the log that
is two round trips (failure -> kill -> deletion -> create). Kubernetes deletes a pod that
has finished (Failed or Succeeded) at once, so for such a pod the actuator can delete it,
see it gone and create it again itself. The decider asks for that only where Volcano's
flow would create the pod: it decides the deletions ahead, on the state this step ends
with (pure functions, so the look ahead leaves no trace), and replaces the pods that
the look ahead creates again at the job's current version. Pods still running (their
deletion waits out a grace period) and pods the look ahead leaves alone are killed as
before.
"""

from __future__ import annotations

from collections.abc import Callable

from msgspec import structs

from lavalog.controller.decider.core.counts import with_pods
from lavalog.controller.decider.core.evolve import evolve
from lavalog.controller.decider.core.operations import TARGET_KILLS
from lavalog.controller.decider.core.phases import restarting
from lavalog.controller.decider.core.state import JobState, PodRecord
from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.transitions import CREATING_PHASES
from lavalog.events.decisions import AnyDecision, PodRef, PodsCreate, PodsKill, PodsReplace
from lavalog.events.observations import AnyObservation, PodDeleted, PodObserved
from lavalog.events.volcano.api import JobPhase, PodPhase

_FINISHED = frozenset({PodPhase.FAILED, PodPhase.SUCCEEDED})

#: the decider's `step`, passed in (it calls this module)
Decide = Callable[[JobState, AnyObservation], tuple[JobState, list[AnyDecision]]]


def replace_finished_pods(step: Step, decide: Decide) -> None:
    """Turn this step's target kills of finished pods into PodsReplace where the sync their
    deletion causes would create them again (the rest of each kill stays a PodsKill).
    For a step that killed targets (`step.killed_targets`)."""
    kills = [d for d in step.decisions if isinstance(d, PodsKill) and d.reason in TARGET_KILLS]
    finished = [ref for kill in kills for ref in kill.pods if _finished(step.state, ref)]
    if not finished or not _may_come_back(step, len(finished)):
        return
    made_again = _made_again_after_deletion(step, finished, decide)
    podgroup = step.state.podgroup
    if not made_again or podgroup is None:
        return
    for kill in reversed(kills):  # a substitution renumbers the decisions after it
        replaced = tuple(ref for ref in kill.pods if ref.name in made_again)
        if not replaced:
            continue
        replace = PodsReplace(
            id=kill.id,
            key=kill.key,
            job_uid=kill.job_uid,
            time=kill.time,
            cause=kill.cause,
            reason=kill.reason,
            pods=replaced,
            job_version=step.state.version,
            podgroup=podgroup.name,
            job_generation=step.state.generation,
        )
        rest = tuple(ref for ref in kill.pods if ref.name not in made_again)
        step.substitute(kill, [replace, *([structs.replace(kill, pods=rest)] if rest else [])])


def replacement_seen_first(step: Step) -> bool:
    """Whether this observation shows a pod's replacement before the deletion of the pod it
    replaced was seen (the decider was down meanwhile, or a relist): the sync that deletion
    causes is due first, as if it had been observed."""
    observation = step.observation
    if type(observation) is not PodObserved:
        return False
    replaced = step.before.pods.get(observation.pod)
    return (
        replaced is not None
        and replaced.replacement_version is not None
        and replaced.uid not in ("", observation.pod_uid)
    )


def as_deleted_first(step: Step) -> JobState:
    """The working state as the unseen deletion of the replaced pod left it: its
    replacement asked for, not yet as this observation shows it (which happened after)."""
    observation = step.observation
    assert isinstance(observation, PodObserved), "only a pod's observation shows its replacement"
    replaced = step.before.pods[observation.pod]
    pods = {**step.state.pods, observation.pod: replaced}
    state = with_pods(step.state, pods, ((step.state.pods.get(observation.pod), replaced),))
    return evolve(state, _deletion(state, replaced, observation.id, step.now))


def _may_come_back(step: Step, gone: int) -> bool:
    """False where no pod can be made after `gone` deletions, which the look ahead would
    only confirm: a job in a phase that makes no pods, or restarting with a gang that
    still waits for other pods to go. (Wrong here would cost a trip, never a pod.)"""
    state = step.state
    if state.phase == JobPhase.RESTARTING:
        return restarting.pending_once(state, step.counts().terminating - gone)
    return state.phase in CREATING_PHASES


def _finished(state: JobState, ref: PodRef) -> bool:
    record = state.pods.get(ref.name)
    return record is not None and ref.uid == record.uid != "" and record.phase in _FINISHED


def _made_again_after_deletion(step: Step, finished: list[PodRef], decide: Decide) -> set[str]:
    """Names of `finished` pods that the steps their deletions cause (one after the other,
    nothing else happening) create again at the job's current version."""
    state, version = step.state, step.state.version
    made: set[str] = set()
    for ref in finished:
        gone = _deletion(state, step.state.pods[ref.name], step.observation.id, step.now)
        state, decisions = decide(state, gone)
        for decision in decisions:
            if isinstance(decision, PodsCreate) and decision.job_version == version:
                made.update(pod.name for pod in decision.pods)
    return {ref.name for ref in finished if ref.name in made}


def _deletion(state: JobState, record: PodRecord, cause: str, now: float) -> PodDeleted:
    """The deletion of the pod `record` describes, as the watchers would report it."""
    return PodDeleted(
        id=f"{cause}?gone={record.name}",
        key=state.key,
        job_uid=state.uid,
        time=now,
        pod=record.name,
        pod_uid=record.uid,
        task=record.task,
        index=record.index,
        job_version=record.version,
        phase=record.phase,
        exit_code=record.exit_code,
    )

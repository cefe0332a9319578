"""Routine pod facts: a change of a pod seen before that only moves the job's counts, decided
as the status write it comes to without the layers the general step walks (the trigger,
the policies, the phase handler and its sync), once the state shows none of them acts.

The ground is `no_news`'s: the state a step ends with is synced already, so a fact about
one pod changes what a sync finds about that pod alone. Where nothing waits (no timer,
no deferred Command, no refused create) and no policy of the job can match the event the
fact means, Volcano's flow for it is a plain sync in the job's phase; in Pending, Running
and Restarting, with the PodGroup there and the plugin objects ensured, that sync makes
and kills no pod when none is missing or surplus (nor, Restarting, of an older version
left running), and then only the phase's status rule can act. When it keeps the phase,
what is left is the status write: a pod Running, a pod Succeeded, a killed pod gone (a
third of a busy log's facts, half of one's of jobs of 16 pods). When it moves the phase,
or the pod failed (what policies are about), the rules decide the fact; the status rule
is asked first, since a fact that moves the phase pays for the asking twice.
Property-tested against the rules (`tests/decider/core/test_properties.py`).
"""

from __future__ import annotations

from lavalog.controller.decider.core.no_news import nothing_waits
from lavalog.controller.decider.core.operations import pods_in_place, resources_outdated
from lavalog.controller.decider.core.phases import SYNC_RULES
from lavalog.controller.decider.core.phases.restarting import runs_an_older_version
from lavalog.controller.decider.core.state import JobState, PodCounts, PodRecord
from lavalog.controller.decider.core.step import Step
from lavalog.controller.decider.core.transitions import CREATING_PHASES
from lavalog.controller.decider.core.triggers import pod_fact_event
from lavalog.events.observations import PodDeleted, PodObserved
from lavalog.events.volcano.api import PodPhase

#: bound once (on Python 3.11 each `Enum.MEMBER` is looked up through a `__getattr__`
#: hook); the phase as a plain string, as pods carry it
_FAILED = PodPhase.FAILED.value


def is_routine(step: Step) -> bool:
    """Whether `step`'s fact is a routine pod fact: all it decides is the status write
    (the caller makes it). Nothing is decided here, routine or not."""
    observation = step.observation
    if type(observation) is PodObserved:
        if observation.phase == _FAILED:
            return False  # a failure: what policies are about, left to them at once
    elif type(observation) is not PodDeleted:
        return False
    state, observed = step.before, step.state
    rule = SYNC_RULES.get(state.phase)
    known = state.pods.get(observation.pod)
    if rule is None or known is None or known.uid != observation.pod_uid:
        return False  # a phase that syncs otherwise, or a pod not seen before
    spec = observed.spec
    if spec is None or state.refused_creates is not None or not nothing_waits(state, observation):
        return False
    step.spec = spec
    counts = step.counts()
    if rule(step, counts) is not None:
        return False  # the phase moves (asked first: the cheapest way out)
    return _sync_only(state, observation, observed, known, counts)


def _sync_only(
    state: JobState,
    observation: PodObserved | PodDeleted,
    observed: JobState,
    known: PodRecord,
    counts: PodCounts,
) -> bool:
    """Whether the fact comes to a plain sync that sets up, makes and kills nothing
    (`counts`: the pods of `observed` counted)."""
    if observed.podgroup is None or resources_outdated(observed):
        return False  # the sync sets the job up
    if state.phase in CREATING_PHASES:
        if not pods_in_place(observed, counts):
            return False
    elif runs_an_older_version(observed):
        return False
    matchable = state.policy_events
    return matchable is not None and pod_fact_event(known, observed, observation) not in matchable

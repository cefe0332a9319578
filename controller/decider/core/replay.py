"""Run the decider over a whole log of observations, many jobs interleaved."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping

from lavalog.controller.decider.core.flow import step
from lavalog.controller.decider.core.settled import JobStates
from lavalog.controller.decider.core.state import JobState, forgettable, initial_state
from lavalog.events.decisions import AnyDecision
from lavalog.events.observations import AnyObservation


def replay(
    observations: Iterable[AnyObservation],
    states: MutableMapping[str, JobState] | None = None,
) -> Iterator[tuple[AnyObservation, list[AnyDecision]]]:
    """Each observation with the decisions it leads to, keeping one state per job key.

    Pass `states` to start from (and keep) states of your own, e.g. a snapshot. A
    deleted job is forgotten (the decider service does the same: `forgettable`), and a
    finished one is held as a compact record (`JobStates`), so a long log costs memory
    for the jobs that run, not for every job that ever did.
    """
    jobs = JobStates() if states is None else states
    for observation in observations:
        state = jobs.get(observation.key)
        if state is None:
            state = initial_state(observation.key)
        state, decisions = step(state, observation)
        if forgettable(state):
            jobs.pop(observation.key, None)
        else:
            jobs[observation.key] = state
        yield observation, decisions

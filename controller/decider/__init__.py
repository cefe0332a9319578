"""The decider: Volcano's job lifecycle as pure functions over the observed log.

    state, decisions = step(state, observation)

`decide` and `evolve` are the two halves (`step` does both in one pass); `replay` runs a
whole log. No I/O and no clock: time comes from the events, so the same log always
yields the same decisions.
"""

from controller.decider.evolve import evolve
from controller.decider.flow import decide, step
from controller.decider.replay import replay
from controller.decider.state import (
    JobState,
    PodGroupRecord,
    PodRecord,
    initial_state,
)

__all__ = [
    "JobState",
    "PodGroupRecord",
    "PodRecord",
    "decide",
    "evolve",
    "initial_state",
    "replay",
    "step",
]

"""The decider: Volcano's job lifecycle as pure functions over the observed log.

    state, decisions = step(state, observation)

`decide` and `evolve` are the two halves (`step` does both in one pass); `replay` runs a
whole log. No I/O and no clock: time comes from the events, so the same log always
yields the same decisions.

Observations and decisions are told apart by their exact type (`type(x) is PodObserved`),
never subclassed (`tests/events/test_kinds.py`): `isinstance` against a msgspec Struct
class that is not the object's own takes CPython's slow path (the metaclass's
`__instancecheck__`, ~500 instructions), and each step asks what it was about many times.

The service's bookkeeping is pure too and lives here: one input partition's states and
replay rules (`partition`), snapshots (`snapshots`), due timers (`due_timers`). Must not
import asyncio, aiohttp, aiokafka, kubernetes_asyncio or `lavalog.controller.decider.service`.
"""

from lavalog.controller.decider.core.evolve import evolve
from lavalog.controller.decider.core.flow import decide, step
from lavalog.controller.decider.core.replay import replay
from lavalog.controller.decider.core.state import (
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

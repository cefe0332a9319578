"""How long a Pending Job's status write waits for the write that follows it.

While a Job is Pending its status counts change in quick steps: its pods created once
the PodGroup is Inqueue, then one more Running per pod that starts. Volcano's job
controller folds what arrives while a Job waits in its workqueue into one `syncJob`,
which writes one status for it; written as each step is decided, a ten-pod Job would
cost a dozen status writes on its way to Running whenever the actuator keeps up. So a
Pending status write alone in its lane (nothing of its job decided behind it) that
changes no phase (the Job as the actuator holds it is Pending already) waits a moment
for its job's next decision: a later write of the same phase then replaces it
(`lane_order.superseded`), and any other decision ends the wait (a write of another
phase goes after it, so every phase still reaches the API, in order).

A write that changes the phase never waits: the phase is what users and tests watch,
and Volcano writes Pending (`initiateJob`) before it creates the PodGroup, so nothing
the scheduler says of the PodGroup comes before the Job is Pending. The wait starts
when the lane reaches the write (not when it was decided) and goes on from one write to
the one that replaces it, so a change reaches the API at most `seconds` later than it
would have. A write that waits is not carried out, so the offset is not committed past
it: after a restart it is carried out again.

Pure: the caller says what time it is and which phase the Job shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lavalog.events.decisions import Decision, StatusWrite
from lavalog.events.volcano.api import JobPhase

#: how long a Pending status write waits at most for a later one (seconds): a pod's
#: start at the benchmarks' time scale (1 simulated second), Volcano's schedule period
HOLD_SECONDS = 1.0


class StatusHold:
    """`wait(lane, shown=, now=)` before a job's lane carries out its first decision;
    `written` once a status write of the job is made; `forget` at a handover."""

    def __init__(self, seconds: float = HOLD_SECONDS) -> None:
        if seconds < 0:
            raise ValueError(f"a status write's hold must not be negative, not {seconds}")
        self.seconds = seconds
        #: job key -> when its lane began to wait with a status change not written yet
        self._since: dict[str, float] = {}

    def wait(self, queued: Sequence[Decision], *, shown: Callable[[], str], now: float) -> float:
        """Seconds the first of `queued` (a job's lane, in log order) still waits for a
        later decision of its job, whose status on the API server is in phase `shown()`
        (as far as the actuator knows; "" when it does not: asked only of a Pending write
        alone in its lane, since every lane asks before each turn); 0: carry it out."""
        if len(queued) != 1 or not _waits(queued[0], shown):
            return 0.0
        since = self._since.setdefault(queued[0].key, now)
        return max(0.0, since + self.seconds - now)

    def written(self, decision: Decision) -> None:
        """A status write of `decision`'s job was made: its next change waits anew."""
        self._since.pop(decision.key, None)

    def forget(self) -> None:
        """The jobs' lanes were handed over: their next owner waits anew."""
        self._since.clear()


def _waits(decision: Decision, shown: Callable[[], str]) -> bool:
    return (
        isinstance(decision, StatusWrite)
        and decision.status.state.phase == JobPhase.PENDING
        and shown() == JobPhase.PENDING
    )

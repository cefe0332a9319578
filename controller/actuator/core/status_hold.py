"""How long a Pending Job's status write waits for the write that follows it.

While a Job is Pending its status changes in quick steps: initiated (its PodGroup
created), its pods created once the PodGroup is Inqueue, a count per pod that starts.
Volcano's job controller folds what arrives while a Job waits in its workqueue into one
`syncJob`, which creates the Job's pods and then writes one status for them; written as
each step is decided, a ten-pod Job would cost a dozen status writes on its way to
Running, however idle the actuator is. So a Pending status write alone in its lane
(nothing of its job decided behind it) waits a moment for its job's next decision:
a later write of the same phase then replaces it (`lane_order.superseded`), and any
other decision ends the wait (a write of another phase goes after it, so every phase
still reaches the API, in order).

The wait starts when the lane reaches the write (not when it was decided) and goes on
from one write to the one that replaces it, so a change reaches the API at most
`seconds` later than it would have: the status of a Job whose
PodGroup stays Pending is written then. A create of the job refused (a full quota)
ends the wait at once: Volcano writes the initiated status before it tries the pods,
so the FailedCreate Warning is never seen on a Job without its phase. A write that
waits is not carried out, so the offset is not committed past it: after a restart it
is carried out again.

Pure: the caller says what time it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from lavalog.events.decisions import Decision, StatusWrite
from lavalog.events.volcano.api import JobPhase

#: how long a Pending status write waits at most for a later one (seconds): the
#: simulated vc-scheduler's session and a pod's start at the benchmarks' time scale,
#: Volcano's schedule period (1 s) on a real cluster
HOLD_SECONDS = 1.0


class StatusHold:
    """`wait(lane, now=)` before a job's lane carries out its first decision; `written`
    once a status write of the job is made; `refused` when a create of it is; `forget`
    at a handover."""

    def __init__(self, seconds: float = HOLD_SECONDS) -> None:
        if seconds < 0:
            raise ValueError(f"a status write's hold must not be negative, not {seconds}")
        self.seconds = seconds
        #: job key -> when its lane began to wait with a status change not written yet
        self._since: dict[str, float] = {}
        #: jobs a create of which was refused since their last status write
        self._refused: set[str] = set()

    def wait(self, queued: Sequence[Decision], *, now: float) -> float:
        """Seconds the first of `queued` (a job's lane, in log order) still waits for a
        later decision of its job; 0: carry it out."""
        if len(queued) != 1 or not _waits(queued[0]) or queued[0].key in self._refused:
            return 0.0
        since = self._since.setdefault(queued[0].key, now)
        return max(0.0, since + self.seconds - now)

    def written(self, decision: Decision) -> None:
        """A status write of `decision`'s job was made: its next change waits anew."""
        self._since.pop(decision.key, None)
        self._refused.discard(decision.key)

    def refused(self, key: str) -> None:
        """A create of job `key` was refused: its status write waits no more."""
        self._refused.add(key)

    def forget(self) -> None:
        """The jobs' lanes were handed over: their next owner waits anew."""
        self._since.clear()
        self._refused.clear()


def _waits(decision: Decision) -> bool:
    return isinstance(decision, StatusWrite) and decision.status.state.phase == JobPhase.PENDING

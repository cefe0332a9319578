"""How long a status write that changes no phase waits for the write that follows it.

A Job's status changes in quick steps within a phase: Pending, its pods created once
the PodGroup is Inqueue, then one more Running per pod that starts; Restarting, one
pod fewer per pod gone; Running, the counts as pods end or are replaced. Volcano's job
controller folds what arrives while a Job waits in its workqueue into one `syncJob`,
which writes one status for it; written as each step is decided, a ten-pod Job would
cost a dozen status writes on its way to Running whenever the actuator keeps up. So a
status write alone in its lane (nothing of its job decided behind it) that changes no
phase (the Job as the actuator holds it shows that phase already) waits a moment for
its job's next decision: a later write then replaces it, of that phase or the next
(`lane_order.superseded`: the Job shows the phase already, so no phase is left out),
and any other decision ends the wait.

A write that changes the phase is made at once: the phase is what users and tests watch.
One exception, when the actuator is behind (every turn taken, `service.turns`): the
initiated status (Pending, no pod counted: Volcano's `initiateJob`) then waits up to
`initiated` seconds for its pods' counts instead of queueing for a turn, as a Job's
changes queue up in Volcano's workqueue while its controller is busy and one sync
writes them. Its pods' counts follow once the scheduler has admitted the PodGroup (a
schedule period, then a trip through the log and back: seconds in a burst of thousands
of Jobs); the PodGroup is created before it either way (`lane_order.next_up`). An idle
actuator writes it at once, as Volcano does before it creates the PodGroup, so a Job
whose PodGroup waits for its queue (or whose pods a quota refuses) shows Pending.

The wait starts when the lane reaches the write (not when it was decided) and goes on
from one write to the one that replaces it, so a change reaches the API at most the
bound later than it would have. A write that waits is not carried out, so the offset is
not committed past it: after a restart it is carried out again.

Pure: the caller says what time it is, which phase the Job shows and whether the
actuator is behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lavalog.events.decisions import Decision, StatusWrite
from lavalog.events.volcano.api import JobPhase, JobStatus

#: how long a write that changes no phase waits at most for a later one (seconds): a
#: pod's start at the benchmarks' time scale (1 simulated second), Volcano's schedule
#: period
HOLD_SECONDS = 1.0
#: how long the initiated status waits at most for its pods' counts (seconds): the
#: scheduler's admission of the PodGroup and a trip through the log and back
INITIATED_HOLD_SECONDS = 5.0


class StatusHold:
    """`wait(lane, shown=, behind=, now=)` before a job's lane carries out its first decision;
    `written` once a status write of the job is made; `forget` at a handover."""

    def __init__(
        self, seconds: float = HOLD_SECONDS, *, initiated: float = INITIATED_HOLD_SECONDS
    ) -> None:
        if seconds < 0 or initiated < 0:
            raise ValueError(
                f"a status write's hold must not be negative, not {min(seconds, initiated)}"
            )
        self.seconds = seconds
        self.initiated = initiated
        #: job key -> when its lane began to wait with a status change not written yet
        self._since: dict[str, float] = {}

    def wait(
        self,
        queued: Sequence[Decision],
        *,
        shown: Callable[[], str | None],
        behind: bool,
        now: float,
    ) -> float:
        """Seconds the first of `queued` (a job's lane, in log order) still waits for a
        later decision of its job, whose status on the API server is in phase `shown()`
        as far as the actuator knows ("" when it has no phase yet, None when the actuator
        does not hold the Job: asked only of a status write alone in its lane, since
        every lane asks before each turn), while the actuator is `behind` or not;
        0: carry it out."""
        first = queued[0]
        if len(queued) != 1 or not isinstance(first, StatusWrite):
            return 0.0
        written = first.status.state.phase
        phase = shown()
        if phase == written:
            seconds = self.seconds
        elif written == JobPhase.PENDING and phase == "" and behind and _initiated(first.status):
            seconds = self.initiated
        else:
            return 0.0
        since = self._since.setdefault(first.key, now)
        return max(0.0, since + seconds - now)

    def written(self, decision: Decision) -> None:
        """A status write of `decision`'s job was made: its next change waits anew."""
        self._since.pop(decision.key, None)

    def forget(self) -> None:
        """The jobs' lanes were handed over: their next owner waits anew."""
        self._since.clear()


def _initiated(status: JobStatus) -> bool:
    """The status Volcano's `initiateJob` writes: Pending, before any pod is counted."""
    counted = status.pending + status.running + status.succeeded + status.failed
    return counted + status.terminating + status.unknown == 0

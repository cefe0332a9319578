"""The history of one job incarnation: what the log said about it, and the figures drawn
from that (queue, phase, retries, version, queue wait, run time).

The projections read two topics whose relative order differs from one consumption to
the next (a rebuild interleaves `lavalog.observed` and `lavalog.decisions` differently
from the live run). So each field here is written by one topic only, in that topic's
order (`lavalog.projections.core.fold`), and anything that joins the two (which decision killed
which pod attempt) is computed later by `lavalog.projections.core.timeline`: the folded history
is then the same whatever the interleaving, which is what makes a rebuild equal an
incremental run.
"""

from __future__ import annotations

import msgspec

from lavalog.events.volcano.api import FINISHED_PHASES, JobPhase
from lavalog.projections.core.records import (
    CommandRecord,
    DecisionMark,
    PhaseInterval,
    PodAttempt,
    PodCreate,
    PodGroupPoint,
    PodKill,
    Revision,
)
from lavalog.projections.core.wire import Time

#: Volcano puts a job without `spec.queue` in this queue.
DEFAULT_QUEUE = "default"


class JobHistory(msgspec.Struct, kw_only=True):
    """Everything folded for one job incarnation (one job uid)."""

    uid: str
    key: str
    # --- written by observations ---
    submitted: Time | None = None
    generation: int = 0
    spec_queue: str = ""
    #: task name -> replicas, from the latest spec
    tasks: dict[str, int] = {}
    deleted: Time | None = None
    #: pod uid -> attempt, in order of first observation
    attempts: dict[str, PodAttempt] = {}
    podgroup: list[PodGroupPoint] = []
    commands: list[CommandRecord] = []
    # --- written by decisions ---
    podgroup_queue: str = ""
    phases: list[PhaseInterval] = []
    revisions: list[Revision] = []
    marks: list[DecisionMark] = []
    kills: list[PodKill] = []
    creates: list[PodCreate] = []
    # --- written by both (commutative) ---
    #: time of the latest event seen, whatever its topic
    updated: Time = 0.0
    events: int = 0

    @property
    def queue(self) -> str:
        return self.spec_queue or self.podgroup_queue or DEFAULT_QUEUE

    @property
    def phase(self) -> str:
        return self.phases[-1].phase if self.phases else ""

    @property
    def finished(self) -> float | None:
        """When the job entered a phase it never leaves (Completed, Terminated, Failed)."""
        if self.phases and self.phases[-1].phase in FINISHED_PHASES:
            return self.phases[-1].start
        return None

    @property
    def retry_count(self) -> int:
        return self.revisions[-1].retry_count if self.revisions else 0

    @property
    def version(self) -> int:
        return self.revisions[-1].version if self.revisions else 0

    @property
    def queue_wait(self) -> float | None:
        """Seconds from submission to the first Running phase (None before both are known)."""
        if self.submitted is None:
            return None
        for interval in self.phases:
            if interval.phase == JobPhase.RUNNING:
                return interval.start - self.submitted
        return None

    @property
    def run_time(self) -> float:
        """Seconds spent in closed Running intervals (see `running_since` for the open one)."""
        return sum(
            interval.end - interval.start
            for interval in self.phases
            if interval.phase == JobPhase.RUNNING and interval.end is not None
        )

    @property
    def running_since(self) -> float | None:
        if self.phases and self.phases[-1].phase == JobPhase.RUNNING:
            return self.phases[-1].start
        return None

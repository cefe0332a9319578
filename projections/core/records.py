"""The records a job's history is made of: pod attempts, phase intervals, decision marks.

Each is written by the fold of one topic (`lavalog.projections.core.fold_observations` or
`lavalog.projections.core.fold_decisions`). The records are never part of a reference cycle, so
they are kept out of the garbage collector (`gc=False`): with many jobs cached, collector
passes otherwise dominate a rebuild.
"""

from __future__ import annotations

import msgspec

from lavalog.events.decisions import PodFailure, PodRef
from lavalog.events.observations import ContainerEnd
from lavalog.projections.core.wire import Time


class PodClock(msgspec.Struct, kw_only=True, gc=False):
    """A pod's times as the pod itself reports them (its API server's and kubelet's clocks).

    Kept as detail only: these clocks are not the log's (a skewed node, the simulated
    cluster's scaled time), so they never position an attempt among the job's phases.
    """

    created: Time | None = None
    scheduled: Time | None = None
    started: Time | None = None
    finished: Time | None = None


class PodAttempt(msgspec.Struct, kw_only=True, gc=False):
    """One pod incarnation (one pod uid) of a task index, as the watchers saw it.

    Its times are on the log's clock, like the phases and decisions they are drawn with:
    each is the `time` of the observation where the fact (scheduled, started, finished)
    was first seen. The pod's own timestamps are in `pod_clock`.
    """

    uid: str
    name: str
    task: str
    index: int
    job_version: int
    #: time of the first observation of this uid: its creation on the log's clock, and
    #: what orders the attempts of an index
    first_seen: Time
    phase: str = ""
    node: str = ""
    scheduled: Time | None = None
    started: Time | None = None
    finished: Time | None = None
    #: when the pod was seen gone
    deleted: Time | None = None
    exit_code: int | None = None
    reason: str = ""
    #: the pod's message, else its failed container's termination message
    message: str = ""
    #: the container whose exit code `exit_code` is (Kubernetes' podFailurePolicy's)
    container: str = ""
    #: every container that ended, with its exit code, reason and termination message
    #: (its last words), as last seen
    containers: tuple[ContainerEnd, ...] = ()
    #: the reason of the pod's `DisruptionTarget=True` condition, if Kubernetes disrupted it
    disruption: str = ""
    restart_count: int = 0
    pod_clock: PodClock = msgspec.field(default_factory=PodClock)


class PhaseInterval(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The job stayed in `phase` from `start` to `end` (None: still there)."""

    phase: str
    start: Time
    end: Time | None = None
    previous: str = ""
    reason: str = ""
    message: str = ""
    #: id of the observation that moved the job into this phase
    cause: str = ""


class Revision(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """From `time` on, the job had this retry count and version."""

    time: Time
    retry_count: int
    version: int
    cause: str


class DecisionMark(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A decision worth seeing on a timeline: an action, a timer, a rejection, a deletion."""

    id: str
    type: str
    time: Time
    cause: str
    action: str = ""
    trigger: str = ""
    reason: str = ""
    task: str = ""
    pod: str = ""
    exit_code: int | None = None
    #: "task:<name>#<n>" or "job#<n>": the policy entry that matched, if any
    policy: str = ""
    timer_id: str = ""
    fire_at: Time | None = None
    #: how the pod of a PodFailed or PodEvicted went (container, reason, node, disruption)
    failure: PodFailure | None = None
    #: the restart counted no retry (lavalog.io/uncounted-disruptions)
    uncounted: bool = False


class PodKill(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A PodsKill (or PodsReplace) decision, kept to find later which attempts it ended."""

    decision: str
    time: Time
    cause: str
    reason: str
    pods: tuple[PodRef, ...]


class PodCreate(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A PodsCreate (or PodsReplace) decision, kept to find later which attempts it started."""

    decision: str
    time: Time
    job_version: int
    pods: tuple[str, ...]


class PodGroupPoint(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The PodGroup entered `phase` at `time` (Pending, Inqueue, Running, Unknown, deleted)."""

    time: Time
    phase: str
    reason: str = ""


class CommandRecord(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A Command (suspend, resume, ...) issued to the job."""

    id: str
    time: Time
    command: str
    action: str
    reason: str = ""

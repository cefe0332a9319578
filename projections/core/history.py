"""The history of one job incarnation: what the log said about it, folded event by event.

The projections read two topics whose relative order differs from one consumption to
the next (a rebuild interleaves `lavalog.observed` and `lavalog.decisions` differently
from the live run). So each field here is written by one topic only, in that topic's
order, and anything that joins the two (which decision killed which pod attempt) is
computed later by `projections.core.timeline`: the folded history is then the same
whatever the interleaving, which is what makes a rebuild equal an incremental run.

The fold mutates the history in place: a rebuild runs it a million times, and the
store owns the instances (it drops them all when a transaction fails). The records
are never part of a reference cycle, so they are kept out of the garbage collector
(`gc=False`): with many jobs cached, collector passes otherwise dominate a rebuild.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from events.codec import LogEvent
from events.decisions import (
    ActionDecided,
    AnyDecision,
    Backoff,
    JobDelete,
    JobRejected,
    PhaseChanged,
    PodGroupCreate,
    PodRef,
    PodsCreate,
    PodsKill,
    PodsReplace,
    PolicyRef,
    TimerCancelled,
    TimerScheduled,
)
from events.observations import (
    CommandIssued,
    JobDeleted,
    JobObserved,
    PodDeleted,
    PodGroupObserved,
    PodObserved,
    PodsListed,
)
from events.volcano import FINISHED_PHASES, JobPhase, PodPhase
from projections.core.wire import Time

#: Volcano puts a job without `spec.queue` in this queue.
DEFAULT_QUEUE = "default"
_TERMINAL_POD_PHASES = frozenset({PodPhase.SUCCEEDED, PodPhase.FAILED})


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
    message: str = ""
    restart_count: int = 0
    pod_clock: PodClock = msgspec.field(default_factory=PodClock)


class PhaseInterval(msgspec.Struct, kw_only=True, gc=False):
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


def new_history(event: LogEvent) -> JobHistory:
    """The empty history of the incarnation `event` is about."""
    return JobHistory(uid=event.job_uid, key=event.key)


def record(history: JobHistory, event: LogEvent) -> None:
    """Fold one event into the history of its job incarnation."""
    history.events += 1
    if event.time > history.updated:
        history.updated = event.time
    handler = _HANDLERS.get(type(event))
    if handler is not None:
        handler(history, event)


def policy_label(ref: PolicyRef | None) -> str:
    """`task:<name>#<n>` or `job#<n>`: which policy entry matched, readable and sortable."""
    if ref is None:
        return ""
    if ref.level == "task":
        return f"task:{ref.task}#{ref.index}"
    return f"{ref.level}#{ref.index}"


# --- observations ---------------------------------------------------------------------


def _job_observed(history: JobHistory, event: JobObserved) -> None:
    if history.submitted is None or event.time < history.submitted:
        history.submitted = event.time
    if event.generation >= history.generation:
        history.generation = event.generation
        queue = event.spec.get("queue")
        history.spec_queue = queue if isinstance(queue, str) else ""
        history.tasks = {
            str(task.get("name", "")): int(task.get("replicas", 0))
            for task in event.spec.get("tasks", ())
            if isinstance(task, dict)
        }


def _job_deleted(history: JobHistory, event: JobDeleted) -> None:
    history.deleted = event.time


def _attempt(history: JobHistory, event: PodObserved | PodDeleted) -> PodAttempt:
    attempt = history.attempts.get(event.pod_uid)
    if attempt is None:
        attempt = PodAttempt(
            uid=event.pod_uid,
            name=event.pod,
            task=event.task,
            index=event.index,
            job_version=event.job_version,
            first_seen=event.time,
        )
        history.attempts[event.pod_uid] = attempt
    return attempt


def _pod_observed(history: JobHistory, event: PodObserved) -> None:
    attempt = _attempt(history, event)
    attempt.phase = event.phase
    attempt.restart_count = max(attempt.restart_count, event.restart_count)
    attempt.node = event.node or attempt.node
    attempt.reason = event.reason or attempt.reason
    attempt.message = event.message or attempt.message
    if event.exit_code is not None:
        attempt.exit_code = event.exit_code
    clock = attempt.pod_clock
    if event.created is not None:
        clock.created = event.created
    if event.scheduled is not None:
        clock.scheduled = event.scheduled
    if event.started is not None:
        clock.started = event.started
    if event.finished is not None:
        clock.finished = event.finished
    # on the log's clock: the first observation that shows each fact
    if attempt.scheduled is None and (event.scheduled is not None or event.node):
        attempt.scheduled = event.time
    if attempt.started is None and (event.started is not None or event.phase == PodPhase.RUNNING):
        attempt.started = event.time
    if attempt.finished is None and (
        event.finished is not None or event.phase in _TERMINAL_POD_PHASES
    ):
        attempt.finished = event.time


def _pod_deleted(history: JobHistory, event: PodDeleted) -> None:
    attempt = _attempt(history, event)
    attempt.deleted = event.time
    attempt.phase = event.phase or attempt.phase
    attempt.reason = event.reason or attempt.reason
    if event.exit_code is not None:
        attempt.exit_code = event.exit_code


def _pods_listed(history: JobHistory, event: PodsListed) -> None:
    """Attempts a fresh list no longer shows were deleted while nobody watched."""
    alive = set(event.pods.values())
    for uid, attempt in history.attempts.items():
        if attempt.deleted is None and uid not in alive:
            attempt.deleted = event.time
            attempt.reason = attempt.reason or "GoneUnseen"


def _podgroup_observed(history: JobHistory, event: PodGroupObserved) -> None:
    phase = "Deleted" if event.deleted else event.phase
    if not history.podgroup or history.podgroup[-1].phase != phase:
        history.podgroup.append(PodGroupPoint(time=event.time, phase=phase, reason=event.reason))


def _command_issued(history: JobHistory, event: CommandIssued) -> None:
    history.commands.append(
        CommandRecord(
            id=event.id,
            time=event.time,
            command=event.command,
            action=event.action,
            reason=event.reason,
        )
    )


# --- decisions ------------------------------------------------------------------------


def _phase_changed(history: JobHistory, event: PhaseChanged) -> None:
    if history.phases and history.phases[-1].end is None:
        history.phases[-1].end = event.time
    history.phases.append(
        PhaseInterval(
            phase=event.phase,
            start=event.time,
            previous=event.previous,
            reason=event.reason,
            message=event.message,
            cause=event.cause,
        )
    )
    last = history.revisions[-1] if history.revisions else None
    if last is None or (last.retry_count, last.version) != (event.retry_count, event.version):
        history.revisions.append(
            Revision(
                time=event.time,
                retry_count=event.retry_count,
                version=event.version,
                cause=event.cause,
            )
        )


def _mark(history: JobHistory, event: AnyDecision, **fields: Any) -> None:
    """Put a decision on the timeline, under its own type name."""
    history.marks.append(
        DecisionMark(
            id=event.id, type=type(event).__name__, time=event.time, cause=event.cause, **fields
        )
    )


def _delayable(event: ActionDecided | TimerScheduled) -> dict[str, Any]:
    """What an action and a timer that delays one have in common."""
    return {
        "action": event.action,
        "trigger": event.trigger,
        "task": event.task,
        "pod": event.pod,
        "exit_code": event.exit_code,
        "policy": policy_label(event.policy),
        "timer_id": event.timer_id,
    }


def _action_decided(history: JobHistory, event: ActionDecided) -> None:
    _mark(history, event, **_delayable(event))


def _timer_scheduled(history: JobHistory, event: TimerScheduled) -> None:
    """A timer the restart backoff set (or lengthened) says so: "delayed 40s by ..."."""
    reason = str(event.backoff) if isinstance(event.backoff, Backoff) else ""
    _mark(history, event, **_delayable(event), fire_at=event.fire_at, reason=reason)


def _timer_cancelled(history: JobHistory, event: TimerCancelled) -> None:
    _mark(history, event, reason=event.reason, timer_id=event.timer_id)


def _job_rejected(history: JobHistory, event: JobRejected) -> None:
    _mark(history, event, reason="; ".join(str(error) for error in event.errors))


def _job_delete(history: JobHistory, event: JobDelete) -> None:
    _mark(history, event, action="DeleteJob", reason=event.reason)


def _pods_kill(history: JobHistory, event: PodsKill | PodsReplace) -> None:
    history.kills.append(
        PodKill(
            decision=event.id,
            time=event.time,
            cause=event.cause,
            reason=event.reason,
            pods=event.pods,
        )
    )


def _pods_replace(history: JobHistory, event: PodsReplace) -> None:
    """Both a kill (it ends the attempts it names) and a create (it starts the next ones)."""
    _pods_kill(history, event)
    _pods_create(history, event)


def _pods_create(history: JobHistory, event: PodsCreate | PodsReplace) -> None:
    history.creates.append(
        PodCreate(
            decision=event.id,
            time=event.time,
            job_version=event.job_version,
            pods=tuple(pod.name for pod in event.pods),
        )
    )


def _podgroup_create(history: JobHistory, event: PodGroupCreate) -> None:
    history.podgroup_queue = event.queue


_HANDLERS: dict[type, Callable[[JobHistory, Any], None]] = {
    JobObserved: _job_observed,
    JobDeleted: _job_deleted,
    PodObserved: _pod_observed,
    PodDeleted: _pod_deleted,
    PodsListed: _pods_listed,
    PodGroupObserved: _podgroup_observed,
    CommandIssued: _command_issued,
    PhaseChanged: _phase_changed,
    ActionDecided: _action_decided,
    TimerScheduled: _timer_scheduled,
    TimerCancelled: _timer_cancelled,
    JobRejected: _job_rejected,
    JobDelete: _job_delete,
    PodsKill: _pods_kill,
    PodsCreate: _pods_create,
    PodsReplace: _pods_replace,
    PodGroupCreate: _podgroup_create,
}

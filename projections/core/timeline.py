"""The timeline of one job incarnation: its history joined across the two topics.

`lavalog.projections.core.history` keeps each topic's contribution apart; here they meet: which
decision created a pod attempt, which one killed it, which created its replacement,
what event and policy drove each phase change. The join is recomputed on each read:
it is cheap for one job and it keeps the stored history independent of the order in
which the two topics were consumed.
"""

from __future__ import annotations

from collections import defaultdict
from enum import StrEnum

import msgspec

from lavalog.events.observations import ContainerEnd
from lavalog.events.volcano.api import PodPhase
from lavalog.projections.core.headline import JobHeadline, headline
from lavalog.projections.core.history import JobHistory
from lavalog.projections.core.records import (
    CommandRecord,
    DecisionMark,
    PhaseInterval,
    PodAttempt,
    PodClock,
    PodCreate,
    PodGroupPoint,
    PodKill,
    Revision,
)
from lavalog.projections.core.wire import Time

#: Kubernetes reasons that mean the pod was pushed off its node, not that it failed.
EVICTION_REASONS = frozenset({"Evicted", "NodeLost", "Preempted", "NodeShutdown"})


class Outcome(StrEnum):
    """How a pod attempt ended (or where it is): the colour of its bar."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    EVICTED = "evicted"
    KILLED = "killed"


class AttemptView(msgspec.Struct, frozen=True, kw_only=True):
    """One pod attempt with the decisions around it.

    `created` to `deleted` are on the log's clock, the one of the phases and decisions:
    the time of the observation where each fact was first seen. `pod_clock` has the
    pod's own timestamps, detail that another clock wrote.
    """

    uid: str
    name: str
    task: str
    index: int
    job_version: int
    outcome: Outcome
    phase: str
    node: str
    #: first observation of the pod
    created: Time
    scheduled: Time | None
    started: Time | None
    finished: Time | None
    deleted: Time | None
    exit_code: int | None
    reason: str
    #: the pod's message, else its failed container's termination message (last words)
    message: str
    #: the container whose exit code `exit_code` is, and every container that ended
    container: str
    containers: tuple[ContainerEnd, ...]
    #: the `DisruptionTarget` reason, when Kubernetes disrupted the pod
    disruption: str
    restart_count: int
    #: seconds from started to finished (or deleted), both on the log's clock
    ran: float | None
    pod_clock: PodClock
    #: the PodsCreate decision that asked for this pod
    created_by: str = ""
    #: the PodsKill decision that deleted it, its reason and the action behind it
    ended_by: str = ""
    end_reason: str = ""
    end_action: str = ""
    #: the decision that created the next attempt of the same task index
    replaced_by: str = ""


class IndexView(msgspec.Struct, frozen=True, kw_only=True):
    """Every attempt of one task index, oldest first."""

    index: int
    attempts: tuple[AttemptView, ...]


class TaskView(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    replicas: int
    indexes: tuple[IndexView, ...]


class PhaseView(PhaseInterval, frozen=True, kw_only=True):
    """A phase interval and what moved the job into it."""

    #: the event (PodFailed, CommandIssued, ...) and action behind the change, if any
    trigger: str = ""
    action: str = ""
    #: the job's retry count and version from this phase on: a change says which
    #: decision made it (every whole-job kill starts a new version, CompleteJob too)
    retry_count: int = 0
    version: int = 0


class Timeline(JobHeadline, frozen=True, kw_only=True):
    """Everything known about one job incarnation, ready to show."""

    #: why the job is in its phase, in one line: the message it entered it with (what
    #: the Job's `status.state.message` says: the pod, container, exit code and reason,
    #: node, policy and retries left of a restart or failure)
    message: str
    generation: int
    events: int
    phases: tuple[PhaseView, ...]
    revisions: tuple[Revision, ...]
    tasks: tuple[TaskView, ...]
    decisions: tuple[DecisionMark, ...]
    podgroup: tuple[PodGroupPoint, ...]
    commands: tuple[CommandRecord, ...]


def build_timeline(history: JobHistory, *, incarnation: int = 1) -> Timeline:
    """The timeline view of a folded history."""
    actions = {mark.cause: mark for mark in history.marks if mark.type == "ActionDecided"}
    attempts = _attempt_views(history, actions)
    return headline(
        history,
        Timeline,
        incarnation=incarnation,
        message=history.phases[-1].message if history.phases else "",
        generation=history.generation,
        events=history.events,
        phases=_phase_views(history, actions),
        revisions=tuple(history.revisions),
        tasks=_task_views(history, attempts),
        decisions=tuple(history.marks),
        podgroup=tuple(history.podgroup),
        commands=tuple(history.commands),
    )


def _phase_views(history: JobHistory, actions: dict[str, DecisionMark]) -> tuple[PhaseView, ...]:
    """The phases, each with what moved the job there and the retry count and version it
    had from then on. A revision is recorded with the phase change that made it (same
    cause and time), so walking both in order pairs them."""
    revisions = iter(history.revisions)
    pending = next(revisions, None)
    retry_count = version = 0
    views: list[PhaseView] = []
    for interval in history.phases:
        if pending is not None and (pending.cause, pending.time) == (
            interval.cause,
            interval.start,
        ):
            retry_count, version = pending.retry_count, pending.version
            pending = next(revisions, None)
        action = actions.get(interval.cause)
        views.append(
            PhaseView(
                **msgspec.structs.asdict(interval),
                trigger=action.trigger if action is not None else "",
                action=action.action if action is not None else "",
                retry_count=retry_count,
                version=version,
            )
        )
    return tuple(views)


def outcome(attempt: PodAttempt, *, killed_at: float | None) -> Outcome:
    """The outcome of an attempt: eviction first (an eviction's reason, or Kubernetes
    marked the pod `DisruptionTarget`: preempted, evicted, deleted for a taint), then
    our kill if the pod was still
    running when we decided it (a killed container exits 137 and its pod turns Failed:
    that failure is ours, not the pod's), then the pod's own verdict.

    `killed_at` is the time of the kill decision, compared with `finished` on one
    clock, the log's: the kill that follows a pod's own failure leaves it failed.
    """
    if attempt.reason in EVICTION_REASONS or attempt.disruption:
        return Outcome.EVICTED
    if killed_at is not None and (attempt.finished is None or killed_at < attempt.finished):
        return Outcome.KILLED
    if attempt.phase == PodPhase.SUCCEEDED:
        return Outcome.SUCCEEDED
    if attempt.phase == PodPhase.FAILED:
        return Outcome.FAILED
    if attempt.deleted is not None:
        return Outcome.EVICTED  # deleted by someone else: Volcano's PodEvicted
    if attempt.phase == PodPhase.RUNNING:
        return Outcome.RUNNING
    return Outcome.PENDING


def _kills_by_attempt(history: JobHistory) -> dict[str, PodKill]:
    """The first kill that targeted each attempt: by uid, or by name at the kill's time."""
    by_name: dict[str, list[PodAttempt]] = defaultdict(list)
    for attempt in history.attempts.values():
        by_name[attempt.name].append(attempt)
    found: dict[str, PodKill] = {}
    for kill in history.kills:
        for ref in kill.pods:
            if ref.uid:
                target = history.attempts.get(ref.uid)
            else:
                earlier = [a for a in by_name.get(ref.name, ()) if a.first_seen <= kill.time]
                target = earlier[-1] if earlier else None
            if target is not None:
                found.setdefault(target.uid, kill)
    return found


def _creator(creates: list[PodCreate], attempt: PodAttempt) -> str:
    """The latest PodsCreate for this pod name and version decided before it was seen."""
    creator = ""
    for create in creates:
        if create.time > attempt.first_seen:
            break
        if create.job_version == attempt.job_version and attempt.name in create.pods:
            creator = create.decision
    return creator


def _ran(attempt: PodAttempt) -> float | None:
    """How long the attempt ran, once it has ended: never a mix of the log's and the pod's
    clocks, which may disagree (skew, the simulated cluster's scaled time)."""
    end = attempt.finished if attempt.finished is not None else attempt.deleted
    if attempt.started is None or end is None:
        return None
    return end - attempt.started


def _attempt_views(history: JobHistory, actions: dict[str, DecisionMark]) -> list[AttemptView]:
    kills = _kills_by_attempt(history)
    views: list[AttemptView] = []
    for attempt in history.attempts.values():
        kill = kills.get(attempt.uid)
        action = actions.get(kill.cause) if kill is not None else None
        views.append(
            AttemptView(
                uid=attempt.uid,
                name=attempt.name,
                task=attempt.task,
                index=attempt.index,
                job_version=attempt.job_version,
                outcome=outcome(attempt, killed_at=kill.time if kill is not None else None),
                phase=attempt.phase,
                node=attempt.node,
                created=attempt.first_seen,
                scheduled=attempt.scheduled,
                started=attempt.started,
                finished=attempt.finished,
                deleted=attempt.deleted,
                exit_code=attempt.exit_code,
                reason=attempt.reason,
                message=attempt.message,
                container=attempt.container,
                containers=attempt.containers,
                disruption=attempt.disruption,
                restart_count=attempt.restart_count,
                ran=_ran(attempt),
                pod_clock=msgspec.structs.replace(attempt.pod_clock),  # the fold mutates its own
                created_by=_creator(history.creates, attempt),
                ended_by=kill.decision if kill is not None else "",
                end_reason=kill.reason if kill is not None else "",
                end_action=action.action if action is not None else "",
            )
        )
    return views


def _task_views(history: JobHistory, attempts: list[AttemptView]) -> tuple[TaskView, ...]:
    """Tasks in spec order (then any only seen in pods), each index with its attempts."""
    by_index: dict[str, dict[int, list[AttemptView]]] = defaultdict(lambda: defaultdict(list))
    for view in sorted(attempts, key=lambda v: v.created):
        by_index[view.task][view.index].append(view)
    names = list(history.tasks) + sorted(set(by_index) - set(history.tasks))
    tasks: list[TaskView] = []
    for name in names:
        replicas = history.tasks.get(name, 0)
        seen = by_index.get(name, {})
        indexes = sorted(set(range(replicas)) | set(seen))
        tasks.append(
            TaskView(
                name=name,
                replicas=replicas,
                indexes=tuple(
                    IndexView(index=index, attempts=_chain(seen.get(index, [])))
                    for index in indexes
                ),
            )
        )
    return tuple(tasks)


def _chain(attempts: list[AttemptView]) -> tuple[AttemptView, ...]:
    """Attempts of one index, each pointing at the decision that created its successor."""
    return tuple(
        msgspec.structs.replace(attempt, replaced_by=attempts[i + 1].created_by)
        if i + 1 < len(attempts)
        else attempt
        for i, attempt in enumerate(attempts)
    )

"""Timelines as text for a terminal, times relative to the job's start.

`render_timeline` draws one job incarnation as the store folded it (`lavalog timeline`):
its phases, decisions and pod attempts. `render_replay` draws a log the decider has just
recomputed (`lavalog replay`), job by job, in the order the decisions were taken, before
any store exists. `describe_event` is one event's line (`lavalog events`). A decision's
cause is written by `lavalog.events.causes`, as everywhere else.
"""

from __future__ import annotations

from collections.abc import Iterable

from lavalog.events.causes import REPLAYED, cause_of, describe_cause
from lavalog.events.codec import LogEvent, to_builtins
from lavalog.events.decisions import (
    ActionDecided,
    AnyDecision,
    JobDelete,
    JobRejected,
    PhaseChanged,
    PodFailure,
    PodsCreate,
    PodsKill,
    PodsReplace,
    TimerCancelled,
    TimerScheduled,
)
from lavalog.events.durations import format_duration
from lavalog.events.observations import AnyObservation
from lavalog.events.timestamps import to_rfc3339
from lavalog.projections.core.timeline import AttemptView, PhaseView, Timeline
from lavalog.projections.core.wire import time_text

_NO_FAILURE = PodFailure()


def _at(time: float | None, origin: float) -> str:
    return "-" if time is None else "+" + format_duration(round(time - origin, 3))


def _span(seconds: float | None) -> str:
    return "-" if seconds is None else format_duration(round(seconds, 3))


def render_timeline(timeline: Timeline, *, incarnations: int = 1, wide: bool = False) -> str:
    """The timeline as text; `wide` adds each line's absolute time (RFC 3339), decision
    ids, and each pod's name and the decisions that created and ended it."""
    t = timeline

    def stamp(time: float) -> str:
        return f"{time_text(time)}  " if wide else ""

    origin = t.submitted if t.submitted is not None else (t.phases[0].start if t.phases else 0.0)
    lines = [
        f"{t.key}  uid {t.uid}  incarnation {t.incarnation} of {incarnations}  queue {t.queue}",
        f"phase {t.phase or '-'}  retries {t.retry_count}  version {t.version}"
        f"  queue wait {_span(t.queue_wait)}  run time {_span(t.run_time)}"
        + (f" (+ running since {_at(t.running_since, origin)})" if t.running_since else ""),
        f"submitted {to_rfc3339(origin)}"
        + (f"  deleted {_at(t.deleted, origin)}" if t.deleted else ""),
    ]
    if t.message:
        lines.append(f"why {t.reason}: {t.message}")
    steps = list(zip((None, *t.phases), t.phases, strict=False))  # (before, phase)
    bumps = [
        f"{phase.version} at {phase.action or phase.reason} {_at(phase.start, origin)}"
        for before, phase in steps
        if phase.version != (before.version if before else 0)
    ]
    if bumps:
        lines.append(
            f"version {', '.join(bumps)} (each whole-job kill starts a new version, as in Volcano)"
        )
    lines += ["", "phases"]
    for before, phase in steps:
        why = f"  <- {phase.action} on {phase.trigger}" if phase.action else ""
        lines.append(
            f"  {stamp(phase.start)}{_at(phase.start, origin):>10}  {phase.phase:<11} "
            f"{phase.reason}{why}" + _revision_change(before, phase)
        )
    if t.decisions:
        lines += ["", "decisions"]
    for mark in t.decisions:
        failure = mark.failure or _NO_FAILURE
        detail = " ".join(
            part
            for part in (
                mark.type if mark.type != "ActionDecided" else "",
                mark.action,
                f"on {mark.trigger}" if mark.trigger else "",
                f"({mark.policy})" if mark.policy else "",
                f"pod {mark.pod}" if mark.pod else "",
                f"container {failure.container}" if failure.container else "",
                f"exit code {mark.exit_code}" if mark.exit_code is not None else "",
                failure.reason,
                f"node {failure.node}" if failure.node else "",
                f"disrupted by {failure.disruption}" if failure.disruption else "",
                "(not counted as a retry)" if mark.uncounted else "",
                mark.reason,
            )
            if part
        )
        decision = f"  [{mark.id}]" if wide else ""
        lines.append(f"  {stamp(mark.time)}{_at(mark.time, origin):>10}  {detail}{decision}")
    lines += ["", "pods"]
    for task in t.tasks:
        for index in task.indexes:
            label = f"{task.name}-{index.index}"
            if not index.attempts:
                lines.append(f"  {label:<16} (no pod yet)")
            for n, attempt in enumerate(index.attempts):
                lines.append(f"  {label if n == 0 else '':<16} {_attempt(attempt, origin)}")
                lines += [f"  {'':<16}   {line}" for line in _ends(attempt, wide=wide)]
                if wide:
                    lines.append(f"  {'':<16}   {_attempt_detail(attempt)}")
    return "\n".join(lines)


#: the lines of a container's last words shown without `-o wide` (its end)
LAST_WORDS_LINES = 5


def _ends(a: AttemptView, *, wide: bool) -> list[str]:
    """Under an attempt: how each container ended, when it has several, and the last
    words (termination message) of each that failed."""
    lines = []
    if len(a.containers) > 1:
        ends = ", ".join(
            f"{c.name}{' (init)' if c.init else ''} exit {c.exit_code} {c.reason}".rstrip()
            for c in a.containers
        )
        lines.append(f"containers: {ends}")
    for container in a.containers:
        words = container.message.rstrip("\n").splitlines()
        if container.exit_code == 0 or not words:
            continue
        shown = words if wide else words[-LAST_WORDS_LINES:]
        cut = "" if len(shown) == len(words) else f" (last {len(shown)} of {len(words)} lines)"
        lines.append(f"last words of {container.name}{cut}:")
        lines += [f"  | {line}" for line in shown]
    return lines


def _revision_change(before: PhaseView | None, phase: PhaseView) -> str:
    """`  retries 0 -> 1, version 0 -> 1`: what entering this phase changed, if anything."""
    changes = [
        f"{name} {old} -> {new}"
        for name, old, new in (
            ("retries", before.retry_count if before else 0, phase.retry_count),
            ("version", before.version if before else 0, phase.version),
        )
        if old != new
    ]
    return "  " + ", ".join(changes) if changes else ""


def _attempt(a: AttemptView, origin: float) -> str:
    end = a.finished if a.finished is not None else a.deleted
    text = f"v{a.job_version} {a.node or '-':<10}"
    text += f" {_at(a.created, origin):>9} -> {_at(end, origin):<9}"
    text += f" ran {_span(a.ran):<7}" if a.ran is not None else f" {'':<11}"
    text += f" {a.outcome.value}"
    if a.exit_code is not None:
        text += f" exit {a.exit_code}"
    if a.reason:
        text += f" {a.reason}"
    if a.container:
        text += f" in {a.container}"
    if a.disruption:
        text += f" disrupted by {a.disruption}"
    if a.end_action:
        text += f" (ended by {a.end_action})"
    return text + f"  [{a.uid}]"


def _attempt_detail(a: AttemptView) -> str:
    """`-o wide`'s second line of an attempt: the pod and the decisions around it."""
    parts = [f"pod {a.name}", f"seen {time_text(a.created)}"]
    parts += [f"created by {a.created_by}"] if a.created_by else []
    parts += [f"ended by {a.ended_by}"] if a.ended_by else []
    parts += [f"replaced by {a.replaced_by}"] if a.replaced_by else []
    return "  ".join(parts)


#: envelope fields, shown in their own columns; and the bulky ones, shown by `export`
_NOT_SHOWN = frozenset({"v", "id", "key", "job_uid", "time", "type", "spec", "status"})


def describe_event(event: LogEvent) -> str:
    """One line for an event: its time, type and the payload fields that are set."""
    fields = to_builtins(event)
    parts = []
    for name, value in fields.items():
        if name in _NOT_SHOWN or value in (None, "", [], {}, False):
            continue
        if name == "pods":
            value = ",".join(pod["name"] for pod in value)
        parts.append(f"{name}={value}")
    return f"{to_rfc3339(event.time)}  {type(event).__name__:<16} {' '.join(parts)}"


def render_replay(
    steps: Iterable[tuple[AnyObservation, list[AnyDecision]]], *, pods: bool = False
) -> str:
    """One block per job: time since the job's first event, then what happened.

    Phase changes and actions always show; pod creations and kills only with `pods`.
    """
    lines_by_job: dict[str, list[str]] = {}
    started: dict[str, float] = {}
    final: dict[str, PhaseChanged] = {}
    for observation, decisions in steps:
        start = started.setdefault(observation.key, observation.time)
        lines = lines_by_job.setdefault(observation.key, [])
        for decision in decisions:
            text = _replayed(decision, pods=pods)
            if text:
                lines.append(f"  {format_duration(decision.time - start):>10}  {text}")
            if isinstance(decision, PhaseChanged):
                final[decision.key] = decision
    blocks = []
    for key, lines in lines_by_job.items():
        last = final.get(key)
        summary = (
            f"{last.phase} (retries {last.retry_count}, version {last.version})"
            if last
            else "no phase"
        )
        blocks.append("\n".join([f"{key}: {summary}", *lines]))
    return "\n\n".join(blocks)


def _replayed(decision: AnyDecision, *, pods: bool) -> str:
    """A decision's line in the replay report; empty for what it leaves out."""
    if isinstance(decision, PhaseChanged):
        why = f"{decision.reason}: {decision.message}" if decision.message else decision.reason
        return f"{decision.phase:<11} {why}"
    if isinstance(decision, ActionDecided):
        return f"> {decision.action} {describe_cause(cause_of(decision), REPLAYED)}"
    if isinstance(decision, TimerScheduled):
        wait = format_duration(decision.fire_at - decision.time)
        return f"  timer: {decision.action} in {wait} unless {decision.trigger} is resolved"
    if isinstance(decision, TimerCancelled):
        return f"  timer cancelled: {decision.reason}"
    if isinstance(decision, JobRejected):
        return "! rejected: " + "; ".join(str(error) for error in decision.errors)
    if isinstance(decision, JobDelete):
        return f"  delete job: {decision.reason}"
    if pods and isinstance(decision, PodsCreate):
        names = ", ".join(ref.name for ref in decision.pods)
        return f"  + create {names} (version {decision.job_version})"
    if pods and isinstance(decision, PodsKill):
        return f"  - kill {', '.join(ref.name for ref in decision.pods)} ({decision.reason})"
    if pods and isinstance(decision, PodsReplace):
        names = ", ".join(ref.name for ref in decision.pods)
        return f"  ~ replace {names} (version {decision.job_version}, {decision.reason})"
    return ""

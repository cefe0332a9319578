"""Render a replayed log as a per-job phase timeline with the decisions that drove it."""

from __future__ import annotations

from collections.abc import Iterable

from events.decisions import (
    ActionDecided,
    AnyDecision,
    JobDelete,
    JobRejected,
    PhaseChanged,
    PodsCreate,
    PodsKill,
    PodsReplace,
    TimerCancelled,
    TimerScheduled,
)
from events.durations import format_duration
from events.observations import AnyObservation


def render_timelines(
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
            text = _describe(decision, pods=pods)
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


def _describe(decision: AnyDecision, *, pods: bool) -> str:
    if isinstance(decision, PhaseChanged):
        why = f"{decision.reason}: {decision.message}" if decision.message else decision.reason
        return f"{decision.phase:<11} {why}"
    if isinstance(decision, ActionDecided):
        source = f" of pod {decision.pod}" if decision.pod else ""
        code = f" (exit code {decision.exit_code})" if decision.exit_code is not None else ""
        policy = decision.policy
        where = ""
        if policy is not None:
            level = f"task {policy.task}" if policy.level == "task" else "job"
            where = f", {level} policy #{policy.index}"
        delayed = " after its timeout" if decision.timer_id else ""
        return f"> {decision.action} on {decision.trigger}{source}{code}{where}{delayed}"
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

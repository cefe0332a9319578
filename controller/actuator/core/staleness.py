"""Decisions carried out again must not undo later ones.

The actuator commits offsets only past what it has carried out, so after a crash (or a
slow decision holding the commit back) it carries out again decisions whose effects
later decisions already replaced. Two rules make that harmless:

- a status write never goes back: a status is older than the Job's when the Job's is of
  a later job version or retry, has ended the run the written one is still in, or was
  stamped later (`state.lastTransitionTime`, which moves with every change);
- pods are not created for a job version older than the Job's, nor for the version
  whose run the Job is stopping or has stopped (Aborting, Failed, ...: a resume starts a
  new version). The decider writes such a status before the kills of that run's pods,
  so a create carried out again after those kills finds it (a RestartTask that
  exhausts `maxRetry` kills the failed pod and fails the job in one step: a create of
  that pod carried out again between the kill and the Failed status made it anew);
- nor beyond a task's replicas in the Job's spec as it is now: a scale-down kills such
  pods without changing the version, so a create carried out again after that kill
  would make the pod a second time (found by `bench/chaos.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lavalog.events.decisions import PodRef
from lavalog.events.timestamps import from_rfc3339
from lavalog.events.volcano.api import (
    FINISHED_PHASES,
    JobPhase,
    JobSpec,
    JobStatus,
    run_over,
)

_ENDED = frozenset({*FINISHED_PHASES, JobPhase.ABORTED})


def status_is_older(current: Mapping[str, Any] | None, written: JobStatus) -> bool:
    """Whether the Job's `current` status is already past the one about to be written."""
    status = current or {}
    theirs = (int(status.get("version") or 0), int(status.get("retryCount") or 0))
    mine = (written.version, written.retry_count)
    if theirs != mine:
        return theirs > mine  # both only grow
    state = status.get("state") or {}
    if state.get("phase", "") in _ENDED and written.state.phase not in _ENDED:
        return True
    return _stamp(state.get("lastTransitionTime")) > _stamp(written.state.last_transition_time)


def _stamp(text: str | None) -> float:
    return from_rfc3339(text) if text else 0.0


def pods_are_stale(current: Mapping[str, Any] | None, job_version: int) -> bool:
    """Whether pods of `job_version` belong to a run of the Job that is over or ending."""
    status = current or {}
    version = int(status.get("version") or 0)
    return run_over(version, (status.get("state") or {}).get("phase", ""), job_version)


def still_wanted(spec: JobSpec, pods: Iterable[PodRef]) -> tuple[PodRef, ...]:
    """The pods less those beyond their task's replicas in `spec` (a pod of a task the
    spec lacks is left for building the pod to report)."""
    replicas = {task.name: task.replicas for task in spec.tasks}
    return tuple(pod for pod in pods if pod.index < replicas.get(pod.task, pod.index + 1))

"""Decisions carried out again must not undo later ones.

The actuator commits offsets only past what it has carried out, so after a crash (or a
slow decision holding the commit back) it carries out again decisions whose effects
later decisions already replaced. Two rules make that harmless:

- a status write never goes back across a phase change: every phase change appends to
  `status.conditions`, so a status with fewer conditions than the Job's is older;
- pods are not created for a job version older than the Job's, nor for the version at
  which the Job already finished or was aborted (a resume starts a new version).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from events.volcano import FINISHED_PHASES, JobPhase, JobStatus

_ENDED = frozenset({*FINISHED_PHASES, JobPhase.ABORTED})


def status_is_older(current: Mapping[str, Any] | None, written: JobStatus) -> bool:
    """Whether the Job's `current` status is already past the one about to be written."""
    return len((current or {}).get("conditions") or ()) > len(written.conditions)


def pods_are_stale(current: Mapping[str, Any] | None, job_version: int) -> bool:
    """Whether pods of `job_version` belong to a run of the Job that is over."""
    status = current or {}
    version = int(status.get("version") or 0)
    phase = (status.get("state") or {}).get("phase", "")
    return version > job_version or (version == job_version and phase in _ENDED)

"""Status writes that need not be made: a later one for the same Job is already queued.

A `StatusWrite` carries the whole of the status lavalog owns, so when the actuator falls
behind (a burst of 10,000 Jobs) and a job's lane holds a later status write for the same
Job incarnation, writing the earlier one first changes nothing the later one does not
overwrite: Volcano's controller coalesces the same way (one sync writes the status the
queued events add up to). Only Events-only decisions may stand between the two: a
decision carried out between them that reads the Job's status (a pod create checks it
for staleness) must see the earlier status written. A skipped write that was the last
before a crash is harmless: the later one is not carried out yet, so it is carried out
again after the restart. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.actuator.job_events import REPORTED
from events.decisions import Decision, StatusWrite

_BETWEEN = frozenset(REPORTED)


def superseded(decision: Decision, later: Iterable[Decision]) -> bool:
    """Whether `decision` is a status write that a status write in `later` (the decisions
    queued behind it in its job's lane, in log order) replaces."""
    if not isinstance(decision, StatusWrite):
        return False
    for queued in later:
        if isinstance(queued, StatusWrite):
            return queued.job_uid == decision.job_uid
        if type(queued) not in _BETWEEN:
            return False
    return False

"""One row per job incarnation: what the job list filters, sorts and counts on.

Computed from the history alone (no join), so the store can refresh it for every job a
batch touched without building whole timelines.
"""

from __future__ import annotations

from lavalog.events.volcano.api import Action
from lavalog.projections.core.headline import JobHeadline, headline
from lavalog.projections.core.history import JobHistory

#: Actions that count as restarts in the job list and in `/metrics`: every Restart* one.
RESTART_ACTIONS = frozenset(action for action in Action if action.value.startswith("Restart"))


class JobSummary(JobHeadline, frozen=True, kw_only=True):
    #: pod attempts seen, and restarts decided (every Restart* action)
    pods: int
    restarts: int


def summarize(history: JobHistory) -> JobSummary:
    """The list row of one job incarnation (its `incarnation` number is the store's to set)."""
    return headline(
        history,
        JobSummary,
        pods=len(history.attempts),
        restarts=sum(
            1
            for mark in history.marks
            if mark.type == "ActionDecided" and mark.action in RESTART_ACTIONS
        ),
    )

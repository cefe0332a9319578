"""How Volcano's job controller reads a PodGroup's conditions.

vc-scheduler keeps one condition per type and moves its `lastTransitionTime` at each
scheduling cycle that writes it: `Unschedulable=True` stays in place when `Scheduled=True`
is added, so which of them is news is told by time. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

#: the condition type vc-scheduler sets once the gang can be placed
SCHEDULED = "Scheduled"
#: the one it sets while the gang cannot
UNSCHEDULABLE = "Unschedulable"


class Condition(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def last_transition_time(self) -> float | None: ...


C = TypeVar("C", bound=Condition)


def newest_true(conditions: Iterable[C]) -> C | None:
    """The True condition with the latest `lastTransitionTime` (of equal times, the first),
    as Volcano's `recordPodGroupEvent` picks it; None when none is True."""
    newest: C | None = None
    for condition in conditions:
        if condition.status != "True":
            continue
        if newest is None or _time(condition) > _time(newest):
            newest = condition
    return newest


def waiting(conditions: Iterable[C]) -> C | None:
    """The condition saying why the gang waits: the newest True one, unless it is
    `Scheduled` (Volcano records `PodGroupPending` then, and only then)."""
    newest = newest_true(conditions)
    return newest if newest is not None and newest.type != SCHEDULED else None


def _time(condition: Condition) -> float:
    """A condition without a time is older than any with one (Go's zero time)."""
    time = condition.last_transition_time
    return float("-inf") if time is None else time

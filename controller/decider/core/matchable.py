"""Which events a job's policies can match at all, found once per admitted spec: a
trigger of any other event syncs without the policies being gone through
(`policies.apply_policies`); most triggers (a pod Running, a pod's deletion, a PodGroup's
change) are such.
"""

from __future__ import annotations

from functools import lru_cache

from lavalog.events.volcano.api import Event, JobSpec

#: what `*` stands for: the events Volcano raises that reach its policies (PodPending only
#: with a `timeout`, as any PodPending policy); not JobUpdated, which only lavalog raises
WILDCARD_EVENTS = frozenset(
    {
        Event.POD_FAILED,
        Event.POD_EVICTED,
        Event.POD_PENDING,
        Event.UNKNOWN,
        Event.TASK_COMPLETED,
        Event.TASK_FAILED,
    }
)


def matchable_events(spec: JobSpec) -> frozenset[str]:
    """The events some policy of `spec` (the job's or a task's) can match: named, `*`'s
    (`WILDCARD_EVENTS`), and PodFailed for a policy on an exit code. Jobs of the same
    policies share one set (every working job's state holds it)."""
    events: set[str] = set()
    for policy in (*spec.policies, *(p for task in spec.tasks for p in task.policies)):
        names = policy.event_names()
        events.update(names)
        if Event.ANY in names:
            events.update(WILDCARD_EVENTS)
        if policy.exit_code is not None:
            events.add(Event.POD_FAILED)
    return _shared(frozenset(events))


@lru_cache(maxsize=1024)
def _shared(events: frozenset[str]) -> frozenset[str]:
    """The first set equal to `events` seen (among the last 1,024 kinds)."""
    return events

"""Which work goes first when the API budget (`--kube-api-qps`) runs short.

Under churn (thousands of jobs starting, failing and restarting, the controller itself
restarted) the actuator has more to do than its budget allows, and what waits must be
what nobody waits for. Work that starts or frees resources goes first: a pod created
late is a job started late, a pod deleted late holds a node and a queue share. Then the
Job's status. Kubernetes Events last: they are bookkeeping, written off the jobs' lanes
as client-go's event recorder writes them. Pure.
"""

from __future__ import annotations

import enum

from lavalog.controller.actuator.core.job_events import REPORTED
from lavalog.events.decisions import (
    Decision,
    PluginResourcesEnsure,
    PodGroupCreate,
    PodGroupDelete,
    PodsCreate,
    PodsKill,
    PodsReplace,
)


class Priority(enum.IntEnum):
    """A call's place in the queue for the API budget: the lowest value goes first."""

    #: creating and deleting pods, their PodGroup and what they mount (plugin objects)
    PODS = 0
    #: the Job's status, and everything else a decision does
    STATUS = 1
    #: Kubernetes Events
    EVENTS = 2


#: decisions that start or free resources
_PODS = (PodGroupCreate, PodsCreate, PodsKill, PodsReplace, PodGroupDelete, PluginResourcesEnsure)
_EVENTS = frozenset(REPORTED)


def priority_of(decision: Decision) -> Priority:
    """The priority of every API call made to carry out `decision`."""
    if isinstance(decision, _PODS):
        return Priority.PODS
    if type(decision) in _EVENTS:
        return Priority.EVENTS
    return Priority.STATUS

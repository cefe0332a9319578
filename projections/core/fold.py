"""The fold: each event of either topic, recorded into the history of its job incarnation.

The fold mutates the history in place: a rebuild runs it a million times, and the store
owns the instances (it drops them all when a transaction fails). Each topic has its own
handlers, which write only that topic's fields of the history (`lavalog.projections.core.history`
says why).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lavalog.events.codec import LogEvent
from lavalog.projections.core.fold_decisions import DECISION_HANDLERS
from lavalog.projections.core.fold_observations import OBSERVATION_HANDLERS
from lavalog.projections.core.history import JobHistory

_HANDLERS: dict[type, Callable[[JobHistory, Any], None]] = {
    **OBSERVATION_HANDLERS,
    **DECISION_HANDLERS,
}


def new_history(event: LogEvent) -> JobHistory:
    """The empty history of the incarnation `event` is about."""
    return JobHistory(uid=event.job_uid, key=event.key)


def record(history: JobHistory, event: LogEvent) -> None:
    """Fold one event into the history of its job incarnation."""
    history.events += 1
    if event.time > history.updated:
        history.updated = event.time
    handler = _HANDLERS.get(type(event))
    if handler is not None:
        handler(history, event)

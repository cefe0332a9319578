"""Where one decision's time went, for the line the actuator logs once it is carried out.

A decision's `lag` (its cause to its line) is the sum of: the time until the actuator
received it (deciding, the log, a failover: `received`), the time from then until it was
received again after a rebalance took its partition away and gave it back with the
decision not yet carried out (`handover`: it waited here, then was left to the next
owner), the time it waited in its job's lane or the Events queue (`queued`), the time
its calls waited for the API budget (`limiter`), the time it stood aside for retries or
a pod's deletion (`aside`), and the calls themselves. Each is wall time: calls made in
parallel that wait together count once. The chaos run takes its slowest decisions apart
from these fields.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lavalog.controller.context_values import set_for_block
from lavalog.events.decisions import Decision


class Wait(enum.Enum):
    """What a decision's call waits for, beside the call itself."""

    #: the API budget (`ratelimit`)
    LIMITER = "limiter"
    #: a retry's backoff or a pod's deletion, its lane's turn given to another (`queues.aside`)
    ASIDE = "aside"


@dataclass(slots=True)
class _Overlap:
    """Wall time during which at least one of several concurrent waits was under way."""

    seconds: float = 0.0
    _open: int = 0
    _since: float = 0.0

    def begin(self, now: float) -> None:
        if self._open == 0:
            self._since = now
        self._open += 1

    def end(self, now: float) -> None:
        self._open -= 1
        if self._open == 0:
            self.seconds += now - self._since


@dataclass(slots=True)
class Timing:
    """One decision's timing: `received` and `started` are `time.time()` values;
    `first_received`, when this process received it before a handover."""

    received: float
    first_received: float | None = None
    started: float = 0.0
    retries: int = 0
    #: the waits that began (most decisions wait for nothing: none made per decision)
    waits: dict[Wait, _Overlap] = field(default_factory=dict)

    @property
    def first(self) -> float:
        """When this process first received the decision."""
        return self.received if self.first_received is None else self.first_received

    def start(self) -> None:
        """Its lane (or the Events writer) begins to carry it out."""
        self.started = time.time()

    def fields(self, decision: Decision) -> dict[str, Any]:
        """The log line's fields, in seconds."""
        return {
            "received": round(self.first - decision.time, 3),
            "handover": round(self.received - self.first, 3),
            "queued": round(max(0.0, self.started - self.received), 3),
            **{w.value: round(self._waited(w), 3) for w in Wait},
            "retries": self.retries,
        }

    def _waited(self, what: Wait) -> float:
        overlap = self.waits.get(what)
        return 0.0 if overlap is None else overlap.seconds


_CURRENT: contextvars.ContextVar[Timing | None] = contextvars.ContextVar(
    "decision_timing", default=None
)


def timing(spent: Timing) -> contextlib.AbstractContextManager[None]:
    """Calls made in this block (this task and those it starts) count into `spent`."""
    return set_for_block(_CURRENT, spent)


def current() -> Timing | None:
    return _CURRENT.get()


def log_fields(decision: Decision) -> dict[str, Any]:
    """The fields of the decision being carried out in this block, if any."""
    spent = _CURRENT.get()
    return {} if spent is None else spent.fields(decision)


@contextlib.contextmanager
def waiting(what: Wait) -> Iterator[None]:
    """Count this block as waiting for `what`, for the current decision."""
    spent = _CURRENT.get()
    if spent is None:
        yield
        return
    overlap = spent.waits.get(what)
    if overlap is None:
        overlap = spent.waits[what] = _Overlap()
    overlap.begin(time.time())
    try:
        yield
    finally:
        overlap.end(time.time())


def retried() -> None:
    """One of the current decision's calls is sent again."""
    spent = _CURRENT.get()
    if spent is not None:
        spent.retries += 1

"""Kubernetes Events correlated as client-go's event recorder correlates them, so that a
job that fails over and over cannot spend the API budget on Events.

client-go `tools/record/events_cache.go` `EventCorrelator`, with its defaults:

- **aggregation** (`EventAggregator`): Events alike but for their message (same source,
  object, type and reason) seen 10 times within 10 minutes are combined: the 10th and
  later become one Event "(combined from similar events): <message>";
- **counting** (`eventLogger`): an Event identical to one already written (or the combined
  one) is not written again: the written one gets `count` + 1, the new `lastTimestamp` and
  message, by a patch;
- **spam filter** (`EventSourceObjectSpamFilter`): each object may have 25 Events of a type
  at once, then one more every 5 minutes; the rest are dropped.

Times are the Events' own (`lastTimestamp`: the decision's time), so the same decisions
correlate the same way. The caches are memory only, as client-go's: after a restart, an
Event carried out again is created again under its own name (already there: nothing new).
Pure.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from lavalog.controller.actuator.core.lru import Lru
from lavalog.events.timestamps import from_rfc3339

Obj = dict[str, Any]

#: client-go's `maxLruCacheEntries`, `defaultAggregateMaxEvents`,
#: `defaultAggregateIntervalInSeconds`, `defaultSpamBurst`, `defaultSpamQPS`
CACHE_SIZE = 4096
AGGREGATE_AFTER = 10
AGGREGATE_WITHIN = 600.0
SPAM_BURST = 25
SPAM_REFILL_PER_SECOND = 1.0 / 300.0
COMBINED = "(combined from similar events): "


@dataclass(frozen=True, slots=True)
class Write:
    """What to send to the API server for one Event: create `event`, or, with `patch`,
    update the Event named `event["metadata"]["name"]` by that merge patch (and create
    `event` if it is gone)."""

    event: Obj
    patch: Obj | None = None


@dataclass(slots=True)
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass(frozen=True, slots=True)
class _Written:
    name: str
    count: int
    first: str


@dataclass(slots=True)
class _Budget:
    tokens: float
    at: float


class EventCorrelator:
    """`correlate(event)`: what to write for it, or None when the spam filter drops it."""

    def __init__(self, *, cache_size: int = CACHE_SIZE) -> None:
        self._similar: Lru[tuple[str, ...], _Similar] = Lru(cache_size)
        self._written: Lru[tuple[str, ...], _Written] = Lru(cache_size)
        self._budgets: Lru[tuple[str, ...], _Budget] = Lru(cache_size)

    def correlate(self, event: Obj) -> Write | None:
        now = from_rfc3339(event["lastTimestamp"])
        event, key = self._aggregate(event, now)
        write = self._count(event, key)
        return None if self._spam(write.event, now) else write

    def _aggregate(self, event: Obj, now: float) -> tuple[Obj, tuple[str, ...]]:
        """`EventAggregate`: the event, or the combined one once similar ones abound; and
        the key it is counted under."""
        similar_key = (*_object_key(event), event["type"], event["reason"])
        similar = self._similar.get(similar_key)
        if similar is None or now - similar.last > AGGREGATE_WITHIN:
            similar = _Similar()
        similar.messages.add(event["message"])
        similar.last = now
        self._similar.put(similar_key, similar)
        if len(similar.messages) < AGGREGATE_AFTER:
            return event, (*similar_key, event["message"])
        similar.messages.pop()  # the set stays at the threshold, as client-go's
        combined = {
            **event,
            "metadata": {**event["metadata"], "name": _combined_name(event)},
            "message": COMBINED + event["message"],
        }
        return combined, similar_key

    def _count(self, event: Obj, key: tuple[str, ...]) -> Write:
        """`eventObserve`: a patch of the Event written before under `key`, if any."""
        before = self._written.get(key)
        if before is None:
            written = _Written(event["metadata"]["name"], event["count"], _first(event))
            self._written.put(key, written)
            return Write(event)
        count = before.count + 1
        updated = {
            **event,
            "metadata": {**event["metadata"], "name": before.name},
            "firstTimestamp": before.first,
            "count": count,
        }
        self._written.put(key, _Written(before.name, count, before.first))
        patch = {
            "count": count,
            "lastTimestamp": event["lastTimestamp"],
            "message": event["message"],
        }
        return Write(updated, patch)

    def _spam(self, event: Obj, now: float) -> bool:
        """`EventSourceObjectSpamFilter.Filter`: True when the object's budget is spent."""
        key = (*_object_key(event), event["type"])
        budget = self._budgets.get(key)
        if budget is None:
            budget = _Budget(float(SPAM_BURST), now)
        elapsed = max(0.0, now - budget.at)
        budget.tokens = min(float(SPAM_BURST), budget.tokens + elapsed * SPAM_REFILL_PER_SECOND)
        budget.at = max(budget.at, now)
        self._budgets.put(key, budget)
        if budget.tokens < 1.0:
            return True
        budget.tokens -= 1.0
        return False


def _object_key(event: Obj) -> tuple[str, ...]:
    source, involved = event.get("source") or {}, event["involvedObject"]
    return (
        source.get("component", ""),
        source.get("host", ""),
        involved.get("kind", ""),
        involved.get("namespace", ""),
        involved.get("name", ""),
        involved.get("uid", ""),
        involved.get("apiVersion", ""),
    )


def _first(event: Obj) -> str:
    return str(event.get("firstTimestamp") or event["lastTimestamp"])


def _combined_name(event: Obj) -> str:
    """The combined Event's name: its first member's, told apart (deterministic, where
    client-go uses the clock)."""
    name: str = event["metadata"]["name"]
    prefix, _, _ = name.rpartition(".")
    digest = hashlib.sha256(f"{name}#combined".encode()).hexdigest()[:16]
    return f"{prefix or name}.{digest}"

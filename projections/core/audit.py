"""The audit: recompute every decision from the recorded observations and compare.

Decision ids are derived from their cause (`<observation id>#<n>`), so a recorded and a
recomputed decision meet by id; each id then either matches field for field, or is
missing from the record, unexpected (recorded but not recomputed), or changed. An id
may stand for more than one decision: a fact listed again later (a relist after a
watch's history expired) has the same id at another time and decides again under the
same ids, so each id's distinct decisions are compared in the order they were made,
while a redelivered copy is no difference. An empty report proves that the decisions
on the log are exactly what the state machine makes of the facts on the log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Any

import msgspec

from lavalog.events.codec import LogEvent, to_builtins
from lavalog.events.decisions import Decision
from lavalog.events.observations import AnyObservation, Observation

#: The decider's `replay`: each observation with the decisions it leads to.
Replay = Callable[[Iterable[AnyObservation]], Iterable[tuple[AnyObservation, list[Any]]]]


class Kind(StrEnum):
    MISSING = "missing"  # recomputed, not recorded
    UNEXPECTED = "unexpected"  # recorded, not recomputed
    CHANGED = "changed"  # recorded and recomputed differently


class Difference(msgspec.Struct, frozen=True, kw_only=True):
    kind: Kind
    id: str
    cause: str
    type: str
    #: the fields that differ (all of them for missing or unexpected decisions)
    fields: tuple[str, ...]
    recorded: dict[str, Any] | None
    recomputed: dict[str, Any] | None


class AuditReport(msgspec.Struct, frozen=True, kw_only=True):
    keys: tuple[str, ...]
    observations: int
    recorded: int
    recomputed: int
    differences: tuple[Difference, ...]

    @property
    def ok(self) -> bool:
        return not self.differences


def audit(events: Iterable[LogEvent], replay: Replay) -> AuditReport:
    """Compare the decisions in `events` with those `replay` makes of its observations."""
    observations: list[AnyObservation] = []
    recorded: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if isinstance(event, Observation):
            observations.append(event)
        elif isinstance(event, Decision):
            _add_version(recorded, to_builtins(event))
    recomputed: dict[str, list[dict[str, Any]]] = {}
    for _, decisions in replay(observations):
        for decision in decisions:
            _add_version(recomputed, to_builtins(decision))
    differences = [
        difference
        for decision_id in [*recomputed, *(i for i in recorded if i not in recomputed)]
        if (
            difference := _first_difference(
                decision_id, recorded.get(decision_id, []), recomputed.get(decision_id, [])
            )
        )
        is not None
    ]
    return AuditReport(
        keys=tuple(
            sorted({o.key for o in observations} | {v[0]["key"] for v in recorded.values()})
        ),
        observations=len(observations),
        recorded=len(recorded),
        recomputed=len(recomputed),
        differences=tuple(differences),
    )


def _add_version(versions: dict[str, list[dict[str, Any]]], decision: dict[str, Any]) -> None:
    """Add `decision` to its id's distinct versions, unless it is a copy of one of them."""
    known = versions.setdefault(decision["id"], [])
    if decision not in known:
        known.append(decision)


def _first_difference(
    decision_id: str, recorded: list[dict[str, Any]], recomputed: list[dict[str, Any]]
) -> Difference | None:
    """The first of an id's versions that differs between the record and the
    recomputation, if one does."""
    for n in range(max(len(recorded), len(recomputed))):
        difference = compare(
            decision_id,
            recorded[n] if n < len(recorded) else None,
            recomputed[n] if n < len(recomputed) else None,
        )
        if difference is not None:
            return difference
    return None


def compare(
    decision_id: str, recorded: dict[str, Any] | None, recomputed: dict[str, Any] | None
) -> Difference | None:
    """How one decision differs between the record and the recomputation, if it does."""
    if recorded == recomputed:
        return None
    either = recorded if recorded is not None else recomputed
    assert either is not None
    if recorded is None or recomputed is None:
        kind = Kind.MISSING if recorded is None else Kind.UNEXPECTED
        fields = tuple(either)
    else:
        kind = Kind.CHANGED
        fields = tuple(
            name
            for name in dict.fromkeys([*recorded, *recomputed])
            if recorded.get(name) != recomputed.get(name)
        )
    return Difference(
        kind=kind,
        id=decision_id,
        cause=str(either.get("cause", "")),
        type=str(either.get("type", "")),
        fields=fields,
        recorded=recorded,
        recomputed=recomputed,
    )

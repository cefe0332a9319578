"""Where the chaos run's slowest decisions spent their lag: the decisions carried out, taken
apart from the controllers' own log lines.

Each decision the actuator carries out logs its `lag` (its cause, as the watchers saw
it, to that line) and where that time went (`controller/actuator/service/timing.py`):
`received` (until the actuator had it), `handover` (from then until that replica
received it again, after a rebalance took its partition away and gave it back),
`queued` (in its job's lane, or in the Events queue), `limiter` (its calls waiting for
the API budget), `aside` (retry backoffs, a pod's deletion), `retries`. The deciders log
each decision they take (`decided`), once more each time they decide it again after a
restart. So the time until the actuator received a decision splits into deciding it
again (from its first `decided` line to the last one before its receipt: the decider
restarted before committing its cause) and the rest (deciding, the log, a rebalance of
the actuators' group, a replica killed with the decision waiting in it); a replica
killed between a decision's cause and its receipt says that the kill's failover is in it.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import msgspec

#: the slowest shares of the decisions carried out that are taken apart
SHARES = (0.01, 0.05)


class CarriedOut(msgspec.Struct, kw_only=True):
    """One decision carried out (its `lag` and where it went), as its replica logged it;
    or, read from the same lines, one decided (`event` "decided", no `lag`)."""

    timestamp: str = ""
    event: str = ""
    decision: str = ""
    kind: str = ""
    lag: float = -1.0
    received: float = 0.0
    handover: float = 0.0
    queued: float = 0.0
    limiter: float = 0.0
    aside: float = 0.0
    retries: int = 0
    #: `timestamp` in seconds since the epoch
    at: float = 0.0


_decode = msgspec.json.Decoder(CarriedOut).decode


@dataclass
class Logged:
    """What the replicas' logs say: the decisions carried out, and when each was decided."""

    actions: list[CarriedOut]
    #: decision id -> the times it was decided (more than one: decided again)
    decided: dict[str, list[float]]


def read_logs(logs: Iterable[Path], since: float = 0.0) -> Logged:
    """The decisions carried out since `since`, and every `decided` line, from JSON logs."""
    actions: list[CarriedOut] = []
    decided: dict[str, list[float]] = defaultdict(list)
    for path in logs:
        if not path.exists():
            continue
        with path.open("rb") as lines:
            for raw in lines:
                if b'"lag"' not in raw and b'"decided"' not in raw:
                    continue
                try:
                    line = _decode(raw)
                except msgspec.DecodeError:
                    continue  # a line cut by a SIGKILL, or another library's record
                line.at = datetime.fromisoformat(line.timestamp).timestamp()
                if line.event == "decided":
                    decided[line.decision].append(line.at)
                elif line.lag >= 0 and line.at >= since:
                    actions.append(line)
    for times in decided.values():
        times.sort()
    return Logged(sorted(actions, key=lambda a: a.at), dict(decided))


def slowest(actions: Sequence[CarriedOut], share: float) -> list[CarriedOut]:
    """The `share` of `actions` with the longest lag (at least one, when there are any)."""
    ordered = sorted(actions, key=lambda a: a.lag)
    return ordered[len(ordered) - max(1, math.ceil(share * len(ordered))) :] if ordered else []


#: the parts of a lag, in the order they add up
PARTS = (
    "decided again after a restart",
    "until received (decide, log, rebalance)",
    "left at a handover, received again",
    "queued (lane or Events queue)",
    "waiting for the API budget",
    "aside (retry backoff, pod deletion)",
    "the calls themselves",
)


@dataclass
class Breakdown:
    """The mean seconds of a set of decisions' lag, by where they went, and counts."""

    count: int = 0
    lag_from: float = 0.0
    kinds: Counter[str] = field(default_factory=Counter)
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    decided_again: int = 0
    across_a_kill: int = 0
    retried: int = 0


def break_down(
    actions: Sequence[CarriedOut], decided: dict[str, list[float]], kills: Sequence[float]
) -> Breakdown:
    """Where the lag of `actions` went; `kills`: when a replica was SIGKILLed."""
    if not actions:
        return Breakdown()
    breakdown = Breakdown(count=len(actions), lag_from=min(a.lag for a in actions))
    for action in actions:
        cause = action.at - action.lag
        receipt = action.at - action.lag + action.received  # the first, by that replica
        times = decided.get(action.decision, [])
        before = [t for t in times if t <= receipt] or times[:1]
        again = before[-1] - before[0] if before else 0.0
        breakdown.decided_again += len(before) > 1
        breakdown.across_a_kill += any(cause <= k <= receipt for k in kills)
        breakdown.retried += action.retries > 0
        breakdown.kinds[action.kind] += 1
        calls = (
            action.lag
            - action.received
            - action.handover
            - action.queued
            - action.limiter
            - action.aside
        )
        for part, value in zip(
            PARTS,
            (
                again,
                action.received - again,
                action.handover,
                action.queued,
                action.limiter,
                action.aside,
                max(0.0, calls),
            ),
            strict=True,
        ):
            breakdown.seconds[part] += value / len(actions)
    return breakdown

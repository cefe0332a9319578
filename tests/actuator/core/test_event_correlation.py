"""Events correlated as client-go's EventCorrelator does: counted, combined, spam-filtered."""

from __future__ import annotations

from typing import Any

import msgspec

from lavalog.controller.actuator.core.event_correlation import (
    AGGREGATE_AFTER,
    COMBINED,
    SPAM_BURST,
    EventCorrelator,
)
from lavalog.controller.actuator.core.job_events import Notice, event_manifest
from lavalog.events.decisions import PhaseChanged
from lavalog.events.timestamps import to_rfc3339
from tests.actuator.support import decision

JOB = {"metadata": {"namespace": "default", "name": "tf", "uid": "uid-1"}}
T0 = 1_800_000_000.0


def event(n: int, message: str, *, at: float = T0, reason: str = "FailedCreate") -> dict[str, Any]:
    made = msgspec.structs.replace(
        decision(PhaseChanged, JOB, previous="", phase="Pending"), id=f"d{n}"
    )
    manifest = event_manifest(made, Notice("Warning", reason, message))
    stamp = to_rfc3339(at)
    return {**manifest, "firstTimestamp": stamp, "lastTimestamp": stamp}


def test_an_identical_event_is_counted_into_the_one_written() -> None:
    correlator = EventCorrelator()
    first = correlator.correlate(event(1, "exceeded quota"))
    again = correlator.correlate(event(2, "exceeded quota", at=T0 + 5))
    assert first is not None and first.patch is None
    assert again is not None and again.patch == {
        "count": 2,
        "lastTimestamp": to_rfc3339(T0 + 5),
        "message": "exceeded quota",
    }
    # the patch goes to the Event written first, whose first time stays
    assert again.event["metadata"]["name"] == first.event["metadata"]["name"]
    assert again.event["firstTimestamp"] == to_rfc3339(T0)


def test_similar_events_are_combined_from_the_tenth_on() -> None:
    correlator = EventCorrelator()
    writes = [
        correlator.correlate(event(n, f"pod {n} refused")) for n in range(AGGREGATE_AFTER + 2)
    ]
    assert all(w is not None for w in writes)
    alone = writes[: AGGREGATE_AFTER - 1]
    assert all(w.patch is None and not w.event["message"].startswith(COMBINED) for w in alone if w)
    tenth, eleventh = writes[AGGREGATE_AFTER - 1], writes[AGGREGATE_AFTER]
    assert tenth is not None and tenth.patch is None
    assert tenth.event["message"] == COMBINED + f"pod {AGGREGATE_AFTER - 1} refused"
    assert eleventh is not None and eleventh.patch is not None and eleventh.patch["count"] == 2
    assert eleventh.event["metadata"]["name"] == tenth.event["metadata"]["name"]


def test_similarity_expires_after_ten_minutes() -> None:
    correlator = EventCorrelator()
    for n in range(AGGREGATE_AFTER - 1):
        correlator.correlate(event(n, f"pod {n} refused"))
    late = correlator.correlate(event(99, "pod 99 refused", at=T0 + 601))
    assert late is not None and not late.event["message"].startswith(COMBINED)


def test_an_object_gets_a_burst_of_events_then_one_every_five_minutes() -> None:
    correlator = EventCorrelator()
    kept = [correlator.correlate(event(n, f"m{n}", reason=f"R{n}")) for n in range(SPAM_BURST + 5)]
    assert sum(w is not None for w in kept) == SPAM_BURST
    assert correlator.correlate(event(100, "m100", reason="R100", at=T0 + 299)) is None
    assert correlator.correlate(event(101, "m101", reason="R101", at=T0 + 301)) is not None
    # another type has a budget of its own
    normal = event(102, "m102", reason="R102")
    assert correlator.correlate({**normal, "type": "Normal"}) is not None

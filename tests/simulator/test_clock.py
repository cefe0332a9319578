"""Simulated time: timestamps follow the clock across whole seconds, jumps included."""

from __future__ import annotations

from datetime import UTC, datetime

from lavalog.simulator.clock import SimClock


def _parsed(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


async def test_timestamps_are_whole_seconds_that_follow_advances() -> None:
    clock = SimClock(time_scale=1.0)
    first = clock.timestamp()
    assert clock.timestamp() == first
    clock.advance(1.0)
    second = clock.timestamp()
    assert (_parsed(second) - _parsed(first)).total_seconds() in (1, 2)
    clock.advance(3600.0)
    assert (_parsed(clock.timestamp()) - _parsed(second)).total_seconds() in (3600, 3601)

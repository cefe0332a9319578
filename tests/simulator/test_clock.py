"""Simulated time: timestamps follow the clock across whole seconds, jumps included."""

from __future__ import annotations

import asyncio
import math
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


async def test_a_sleep_counts_from_its_call_not_from_when_its_task_first_runs() -> None:
    """vc-scheduler's session timer is a task; when the test clock jumped before the task
    first ran, its deadline was counted from after the jump, and the session waited for
    ever at a frozen clock (`test_sessions_are_a_schedule_period_apart`, under load)."""
    clock = SimClock(time_scale=0.001)  # simulated time moves when the test says
    sleeping = asyncio.create_task(clock.sleep(1.0))
    clock.advance(1.0)  # before the task has run
    await asyncio.wait_for(sleeping, 5)


async def test_an_advance_wakes_the_sleepers_it_jumps_past_and_a_sleeper_leaves_nothing() -> None:
    """Sleepers past whose deadline the clock jumps wake at once, the others sleep on;
    one that ends (woken, timed out, cancelled) is no longer held, so that thousands of
    `sleep infinity` containers asleep cost a short sleep nothing."""
    clock = SimClock(time_scale=1.0)
    short = asyncio.create_task(clock.sleep(60))
    forever = asyncio.create_task(clock.sleep(math.inf))
    brief = asyncio.create_task(clock.sleep(0.001))
    await asyncio.sleep(0.05)
    assert brief.done() and not short.done()
    clock.advance(61)
    await asyncio.wait_for(short, 1)
    assert not forever.done()
    forever.cancel()
    await asyncio.gather(forever, return_exceptions=True)
    assert not clock._sleepers

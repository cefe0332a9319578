"""The event loop's lag as the Lease's thread measures it (controller/loop_lag.py)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import structlog

from lavalog.controller.loop_lag import STALL, LoopLag
from tests.watchers.conftest import until


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_longest_lag_of_the_window_is_reported_and_older_ones_are_forgotten() -> None:
    clock = Clock()
    lag = LoopLag(asyncio.new_event_loop(), window=60.0, monotonic=clock)
    assert lag.longest() == 0.0
    clock.now = 102.5
    lag.answer(sent=100.0)  # held 2.5 s
    clock.now = 110.0
    lag.answer(sent=109.99)
    assert lag.longest() == pytest.approx(2.5)

    clock.now = 163.0  # the 2.5 s answered 60.5 s ago
    assert lag.longest() == pytest.approx(0.01)
    clock.now = 171.0
    assert lag.longest() == 0.0


def test_a_held_loop_is_logged_with_how_long() -> None:
    clock = Clock()
    lag = LoopLag(asyncio.new_event_loop(), monotonic=clock)
    clock.now += STALL + 0.25
    with structlog.testing.capture_logs() as logs:
        lag.answer(sent=100.0)
        lag.answer(sent=clock.now - 0.1)
    assert logs == [{"event": "event loop held", "seconds": STALL + 0.25, "log_level": "warning"}]


async def test_a_loop_held_by_a_blocking_call_is_measured_from_another_thread() -> None:
    lag = LoopLag(asyncio.get_running_loop(), interval=0.05)
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever)
    thread.start()
    probing = asyncio.run_coroutine_threadsafe(lag.measure(), other)
    try:
        started = time.monotonic()
        time.sleep(1.0)  # noqa: ASYNC251 -- the loop held
        await until(lambda: lag.longest() >= 0.5, within=2.0)  # the probe sent meanwhile
        # never more than the time since, and a probe's interval before
        assert lag.longest() <= time.monotonic() - started + 0.05
    finally:
        probing.cancel()
        other.call_soon_threadsafe(other.stop)
        thread.join()
        other.close()

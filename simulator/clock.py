"""Simulated time: runs `time_scale` times faster than the wall clock and can jump ahead.

Everything in the cluster (timestamps, container run times, grace periods, restart
back-off) reads this clock, so a test can run a `sleep 60` container in 0.6 s at
`time_scale=100`, or jump over it with `advance(60)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any


class SimClock:
    """Simulated seconds since a wall-clock start, scaled and shiftable."""

    def __init__(self, time_scale: float = 1.0) -> None:
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.time_scale = time_scale
        self._epoch = datetime.now(UTC)
        self._epoch_seconds = self._epoch.timestamp()
        self._mono = time.monotonic()
        self._offset = 0.0
        #: one future per sleeper, set by `advance`: a set, so that a sleeper leaves it in
        #: O(1) (an `asyncio.Event`'s waiters are a deque, and each one that times out
        #: is searched for among every other: with 100,000 `sleep infinity` containers
        #: asleep, every pod start's delay searched them all)
        self._sleepers: set[asyncio.Future[None]] = set()
        #: the last `timestamp()`: its whole second since the Unix epoch, and its text
        self._stamped: tuple[int, str] = (-1, "")

    def seconds(self) -> float:
        """Simulated seconds since the clock started."""
        return (time.monotonic() - self._mono) * self.time_scale + self._offset

    def now(self) -> datetime:
        return self._epoch + timedelta(seconds=self.seconds())

    def timestamp(self) -> str:
        """RFC 3339 in whole seconds, as the API writes metav1.Time; formatted once per
        second, and without a datetime otherwise (every write stamps one, many a second)."""
        second = math.floor(self._epoch_seconds + self.seconds())
        if self._stamped[0] != second:
            text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            self._stamped = (second, text)
        return self._stamped[1]

    def sleep(self, seconds: float) -> Coroutine[Any, Any, None]:
        """Sleep `seconds` of simulated time from now; wakes early when `advance` jumps past
        it. The deadline is fixed by the call, not when a task running the sleep first
        runs: a jump in between would otherwise push it back by the jump."""
        return self.sleep_until(self.seconds() + seconds)

    async def sleep_until(self, deadline: float) -> None:
        """Sleep until simulated time `deadline`; wakes early when `advance` jumps past it."""
        while (remaining := deadline - self.seconds()) > 0:
            jumped: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._sleepers.add(jumped)
            timeout = None if math.isinf(remaining) else remaining / self.time_scale
            try:
                with contextlib.suppress(TimeoutError):  # timeout(): a stop is never lost
                    async with asyncio.timeout(timeout):
                        await jumped
            finally:
                self._sleepers.discard(jumped)

    def advance(self, seconds: float) -> None:
        """Jump simulated time forward; sleepers whose deadline passed wake now."""
        self._offset += seconds
        for jumped in self._sleepers:
            if not jumped.done():
                jumped.set_result(None)
        self._sleepers.clear()

"""How long the process's event loop keeps a ready callback waiting, measured from a
thread with a loop of its own (the leader Lease's), which the measured loop cannot delay.

Every `interval` the other loop hands the measured one a callback stamped with when it was
sent; the delay until it runs is the time the loop was held by whatever ran before it (a
long fold, a burst of CPU, a blocking call). One probe is out at a time, so a held loop
finds one callback waiting, not a pile. The longest delay of the last `window` is
`lavalog_watchers_event_loop_lag_seconds`; one of `STALL` or more is logged as it ends.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

import structlog

log = structlog.get_logger("lavalog.loop")

#: a lag from which the loop counts as held: logged with how long
STALL = 1.0


class LoopLag:
    """The lag of `loop`, probed by `measure` running on another thread's loop."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        interval: float = 0.5,
        window: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._loop = loop
        self._interval = interval
        self._window = window
        self._monotonic = monotonic
        self._out = False
        #: (when answered, lag) of the probes answered within the window; the measured
        #: loop's alone
        self._answers: deque[tuple[float, float]] = deque()

    async def measure(self) -> None:
        """Probe the loop every interval, until cancelled; run on another thread's loop."""
        while True:
            if not self._out:
                self._out = True
                self._loop.call_soon_threadsafe(self.answer, self._monotonic())
            await asyncio.sleep(self._interval)

    def answer(self, sent: float) -> None:
        """A probe sent at `sent` runs on the measured loop now."""
        now = self._monotonic()
        lag = now - sent
        self._out = False
        self._answers.append((now, lag))
        while self._answers[0][0] < now - self._window:
            self._answers.popleft()
        if lag >= STALL:
            log.warning("event loop held", seconds=round(lag, 3))

    def longest(self) -> float:
        """The longest lag answered within the window, in seconds (read on the measured loop)."""
        since = self._monotonic() - self._window
        return max((lag for answered, lag in self._answers if answered >= since), default=0.0)

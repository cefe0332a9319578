"""Client-side limits on API calls: a token bucket (QPS and burst) and a bound on calls in flight.

The API server is shared with every other controller; a burst of decisions (a 1,000-pod
job, a replay after a crash) must not flood it. The bucket works as client-go's default
limiter (`flowcontrol.NewTokenBucketRateLimiter`, qps=50 burst=100 unless configured): a
caller reserves a token, possibly one not yet refilled, and waits until it is due, so
callers are served in arrival order at no more than `burst + qps * t` calls in any
window of `t` seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from types import TracebackType

from lavalog.controller.actuator.service.counters import Counters

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

DEFAULT_QPS = 50.0
DEFAULT_BURST = 100


class TokenBucket:
    """`burst` tokens at most, refilled at `qps` per second; pure but for `acquire`."""

    def __init__(
        self,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be positive, not {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, not {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._last = clock()

    def reserve(self) -> float:
        """Take a token; the seconds to wait before it may be used (0 when one was there)."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> None:
        """Wait for a token."""
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)


class RateLimiter:
    """`async with limiter:` around each API call: at most `concurrency` in flight, and
    those admitted at the bucket's rate."""

    def __init__(
        self, bucket: TokenBucket, concurrency: int, *, counters: Counters | None = None
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self.bucket = bucket
        self._slots = asyncio.Semaphore(concurrency)
        #: where the seconds callers spent waiting to be let through are added up
        self._counters = counters or Counters()

    async def __aenter__(self) -> None:
        start = time.monotonic()
        await self._slots.acquire()
        try:
            await self.bucket.acquire()
        except BaseException:
            self._slots.release()
            raise
        finally:
            self._counters.limiter_wait_seconds += time.monotonic() - start

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._slots.release()

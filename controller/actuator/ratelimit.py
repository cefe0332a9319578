"""Client-side limits on API calls: a token bucket (QPS and burst) and a bound on calls in flight.

The API server is shared with every other controller; a burst of decisions (a 1,000-pod
job, a replay after a crash) must not flood it. The bucket works as client-go's default
limiter (`flowcontrol.NewTokenBucketRateLimiter`, qps=50 burst=100 unless configured): a
caller reserves a token, possibly one not yet refilled, and waits until it is due, so
callers are served in arrival order at no more than `burst + qps * t` calls in any
window of `t` seconds.

Calls waiting for a slot are served in arrival order too, except that calls made while
`URGENT` is set (the actuator sets it for the decisions that put pods on the cluster)
go before every other waiting call: in a burst of 10,000 Jobs, the status writes and
Events of later Jobs would otherwise hold back the pods of the earlier ones.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from types import TracebackType

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

DEFAULT_QPS = 50.0
DEFAULT_BURST = 100
#: set (in the task making them) for calls that go before the others waiting for a slot
URGENT: ContextVar[bool] = ContextVar("lavalog_actuator_urgent", default=False)


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


class _Slots:
    """A semaphore whose waiters are woken urgent ones first, each kind in arrival order."""

    def __init__(self, count: int) -> None:
        self._free = count
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._others: deque[asyncio.Future[None]] = deque()

    async def acquire(self, urgent: bool) -> None:
        if self._free > 0 and not self._urgent and not self._others:
            self._free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._urgent if urgent else self._others
        waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if not waiter.cancelled():
                self.release()  # handed a slot just as it was cancelled: pass it on
            elif waiter in waiters:
                waiters.remove(waiter)
            raise

    def release(self) -> None:
        for waiters in (self._urgent, self._others):
            while waiters:
                waiter = waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)  # the slot goes straight to it
                    return
        self._free += 1


class RateLimiter:
    """`async with limiter:` around each API call: at most `concurrency` in flight (urgent
    ones first), and those admitted at the bucket's rate."""

    def __init__(self, bucket: TokenBucket, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self.bucket = bucket
        self._slots = _Slots(concurrency)

    async def __aenter__(self) -> None:
        await self._slots.acquire(URGENT.get())
        try:
            await self.bucket.acquire()
        except BaseException:
            self._slots.release()
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._slots.release()

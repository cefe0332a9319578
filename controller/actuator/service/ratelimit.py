"""Client-side limits on API calls: a token bucket (QPS and burst), a bound on calls in
flight, and an order among those waiting: pod work before status, status before Events.

The API server is shared with every other controller; a burst of decisions (a 1,000-pod
job, a replay after a crash) must not flood it. The bucket works as client-go's default
limiter (`flowcontrol.NewTokenBucketRateLimiter`, qps=50 burst=100 unless configured): at
most `burst + qps * t` calls in any window of `t` seconds. client-go serves its callers in
arrival order; here a caller waits behind those of a higher `Priority` only
(`core.priority`): when the budget runs short, a pod create never waits for an Event.
A call's priority is that of the decision being carried out (`prioritized`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from types import TracebackType

from lavalog.controller.actuator.core.priority import Priority
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.timing import Wait, waiting

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

DEFAULT_QPS = 50.0
DEFAULT_BURST = 100

_PRIORITY: contextvars.ContextVar[Priority] = contextvars.ContextVar(
    "api_call_priority", default=Priority.STATUS
)


@contextlib.contextmanager
def prioritized(priority: Priority) -> Iterator[None]:
    """Every call made in this block (this task and the tasks it starts) waits as `priority`."""
    token = _PRIORITY.set(priority)
    try:
        yield
    finally:
        _PRIORITY.reset(token)


class TokenBucket:
    """`burst` tokens at most, refilled at `qps` per second. Pure: the caller waits."""

    def __init__(
        self, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST, *, clock: Clock = time.monotonic
    ) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be positive, not {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, not {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def take(self) -> float:
        """Take a token if there is one (0.0); else the seconds until there is one."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        if self._tokens >= 1.0 - 1e-9:  # a wait computed here, slept, refills it: rounding
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.qps


class RateLimiter:
    """`async with limiter:` around each API call: at most `concurrency` in flight, admitted
    at the bucket's rate, the highest priority first and each priority in arrival order."""

    def __init__(
        self,
        bucket: TokenBucket,
        concurrency: int,
        *,
        counters: Counters | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self.bucket = bucket
        self._free = concurrency
        self._sleep = sleep
        self._waiting: dict[Priority, deque[asyncio.Future[None]]] = {p: deque() for p in Priority}
        self._dispatcher: asyncio.Task[None] | None = None
        #: where the seconds callers spent waiting to be let through are added up
        self._counters = counters or Counters()

    def waiting(self) -> dict[Priority, int]:
        """Callers waiting, by priority."""
        return {p: sum(not f.done() for f in q) for p, q in self._waiting.items()}

    async def __aenter__(self) -> None:
        start = time.monotonic()
        try:
            with waiting(Wait.LIMITER):
                await self._admit(_PRIORITY.get())
        finally:
            self._counters.limiter_wait_seconds += time.monotonic() - start

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._free += 1
        self._dispatch()

    async def _admit(self, priority: Priority) -> None:
        if self._free > 0 and not any(self._waiting.values()) and self.bucket.take() == 0.0:
            self._free -= 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[priority].append(turn)
        self._dispatch()
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # let through just as it was cancelled
                self._free += 1
                self._dispatch()
            raise

    def _dispatch(self) -> None:
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.create_task(self._let_through(), name="api rate limiter")

    async def _let_through(self) -> None:
        """Hand slots and tokens to the waiting callers, the highest priority first."""
        while self._free > 0:
            queue = self._first_waiting()
            if queue is None:
                return
            wait = self.bucket.take()
            if wait > 0:
                await self._sleep(wait)  # then look again: a higher priority may have come
                continue
            self._free -= 1
            queue.popleft().set_result(None)

    def _first_waiting(self) -> deque[asyncio.Future[None]] | None:
        for queue in self._waiting.values():  # in priority order
            while queue and queue[0].done():  # cancelled while waiting
                queue.popleft()
            if queue:
                return queue
        return None

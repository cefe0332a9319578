"""Client-side limits on API calls: a token bucket (QPS and burst), a bound on calls in
flight, and an order among those waiting: pod work first, then status, then Events, each
with an assured share of the budget.

The API server is shared with every other controller; a burst of decisions (a 1,000-pod
job, a replay after a crash) must not flood it. The bucket works as client-go's default
limiter (`flowcontrol.NewTokenBucketRateLimiter`, qps=50 burst=100 unless configured): at
most `burst + qps * t` calls in any window of `t` seconds. client-go serves its callers in
arrival order; here the callers waiting are served by weighted fair queuing over their
`Priority` (`core.priority`; the call's priority is that of the decision being carried
out, `prioritized`): each priority with callers waiting gets `SHARES` of the budget, the
one left unused going to the others, and among callers of one priority, arrival order.
So when the budget runs short pod work gets most of it and goes first, and yet status
writes and Events are never starved: under a backlog that outlasts the controller (a
replica killed every few seconds) an Event that never got a token would hold its
partition's commit back for good, and every takeover would fetch all after it again.
API Priority and Fairness gives its priority levels assured shares for the same reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType

from lavalog.controller.actuator.core.priority import Priority
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.timing import Wait, waiting
from lavalog.controller.context_values import set_for_block

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

DEFAULT_QPS = 50.0
DEFAULT_BURST = 100
#: each priority's weight while callers of several wait: pod work 4/7 of the budget at
#: least, status 2/7, Events 1/7
SHARES = {Priority.PODS: 4, Priority.STATUS: 2, Priority.EVENTS: 1}

_PRIORITY: contextvars.ContextVar[Priority] = contextvars.ContextVar(
    "api_call_priority", default=Priority.STATUS
)


@dataclass(slots=True)
class _Reserved:
    unspent: bool = True


_RESERVED: contextvars.ContextVar[_Reserved | None] = contextvars.ContextVar(
    "api_call_reserved", default=None
)


def prioritized(priority: Priority) -> contextlib.AbstractContextManager[None]:
    """Every call made in this block (this task and the tasks it starts) waits as `priority`."""
    return set_for_block(_PRIORITY, priority)


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

    def give_back(self) -> None:
        """A token taken and not spent."""
        self._tokens = min(float(self.burst), self._tokens + 1.0)


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
        #: weighted fair queuing: the virtual finish time of each priority's first caller,
        #: and of the last caller let through
        self._finish = dict.fromkeys(Priority, 0.0)
        self._now = 0.0
        self._dispatcher: asyncio.Task[None] | None = None
        #: where the seconds callers spent waiting to be let through are added up
        self._counters = counters or Counters()

    def waiting(self) -> dict[Priority, int]:
        """Callers waiting, by priority."""
        return {p: sum(not f.done() for f in q) for p, q in self._waiting.items()}

    @contextlib.asynccontextmanager
    async def reserved(self) -> AsyncIterator[None]:
        """Wait for a turn of the budget now, before the call is made: the first call made
        in this block spends it without waiting again; unspent, it is given back. So a
        status write is built only once its turn has come, from what is known by then."""
        await self._wait()
        reserved = _Reserved()
        try:
            with set_for_block(_RESERVED, reserved):
                yield
        finally:
            if reserved.unspent:
                self.bucket.give_back()
                self._free += 1
                self._dispatch()

    async def __aenter__(self) -> None:
        reserved = _RESERVED.get()
        if reserved is not None and reserved.unspent:
            reserved.unspent = False
            return
        await self._wait()

    async def _wait(self) -> None:
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
        queue = self._waiting[priority]
        while queue and queue[0].done():  # cancelled while waiting
            queue.popleft()
        if not queue:  # this priority starts waiting now
            self._finish[priority] = max(self._finish[priority], self._now) + 1 / SHARES[priority]
        queue.append(turn)
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
            priority = self._first_waiting()
            if priority is None:
                return
            wait = self.bucket.take()
            if wait > 0:
                await self._sleep(wait)  # then look again: a higher priority may have come
                continue
            self._free -= 1
            self._waiting[priority].popleft().set_result(None)
            self._now = self._finish[priority]
            self._finish[priority] += 1 / SHARES[priority]

    def _first_waiting(self) -> Priority | None:
        """The priority whose first caller finishes first (ties: the higher priority)."""
        first: Priority | None = None
        for priority, queue in self._waiting.items():  # in priority order
            while queue and queue[0].done():  # cancelled while waiting
                queue.popleft()
            if queue and (first is None or self._finish[priority] < self._finish[first]):
                first = priority
        return first

"""One retry policy for everything lavalog retries: API calls, watches, Kafka deliveries.

What fails transiently (a throttled or failing API server, a dropped connection, a broker
that is away) is tried again after a delay that grows with each failure (`RetryDelays`,
the settings: each component takes its delays as a setting, so tests shorten them), with
jitter where many clients would otherwise retry in step. A loop that retries holds a
`Backoff` (the failures so far); `retry` is the loop around one call. Giving up is the
caller's choice: most of lavalog never gives up on a transient failure, since that would
lose a change or skip a decision.

Not tenacity's `AsyncRetrying`: the watch loop retries a generator that yields between
tries and the publisher resends part of a batch, neither of which is a call to wrap, and
the actuator waits at least what a 429's Retry-After asks; a helper this size serves all.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from lavalog.controller.delays import exponential

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryDelays:
    """`initial` seconds after the first failure, times `factor` after each next one, at
    most `maximum`; with `jitter`, each a random share of that (half to all of it)."""

    initial: float
    maximum: float
    factor: float = 2.0
    jitter: bool = False

    def delay(self, failures: int, draw: Callable[[], float] = random.random) -> float:
        """The wait after the failure that follows `failures` earlier ones."""
        ceiling = exponential(self.initial, self.factor, self.maximum, failures)
        return ceiling * (0.5 + draw() / 2) if self.jitter else ceiling


#: the actuator's API calls: a decision waits on them, so the first retries come fast
API_CALLS = RetryDelays(initial=0.05, maximum=10.0)
#: lists and watches (kopf's and client-go's reflectors jitter theirs as well)
WATCHES = RetryDelays(initial=0.2, maximum=30.0, jitter=True)
#: deliveries to Kafka and connecting to it
KAFKA = RetryDelays(initial=0.2, maximum=10.0, jitter=True)


class Backoff:
    """The delays of one retry loop: `await backoff.wait()` after each failure, `reset()`
    after a success."""

    def __init__(
        self,
        delays: RetryDelays,
        *,
        sleep: Sleep = asyncio.sleep,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.delays = delays
        self.failures = 0
        self._sleep = sleep
        self._draw = draw

    def next_delay(self, *, at_least: float = 0.0) -> float:
        """Count a failure; the seconds to wait before the next try (`at_least`: what the
        server asked for, e.g. a 429's Retry-After)."""
        delay = self.delays.delay(self.failures, self._draw)
        self.failures += 1
        return max(delay, at_least)

    async def wait(self, *, at_least: float = 0.0) -> float:
        """Count a failure and sleep the next delay; returns it."""
        delay = self.next_delay(at_least=at_least)
        await self._sleep(delay)
        return delay

    def reset(self) -> None:
        self.failures = 0


async def retry(
    call: Callable[[], Awaitable[T]],
    *,
    delays: RetryDelays,
    transient: Callable[[Exception], bool],
    on_retry: Callable[[Exception, float], None] | None = None,
    at_least: Callable[[Exception], float] | None = None,
    sleep: Sleep = asyncio.sleep,
) -> T:
    """`await call()` until it succeeds. A failure `transient` accepts is retried after the
    next delay (reported to `on_retry` first, with the delay); any other is raised."""
    backoff = Backoff(delays, sleep=sleep)
    while True:
        try:
            return await call()
        except Exception as exc:
            if not transient(exc):
                raise
            delay = backoff.next_delay(at_least=at_least(exc) if at_least else 0.0)
            if on_retry is not None:
                on_retry(exc, delay)
            await sleep(delay)

"""The one retry policy: delays that grow to a ceiling (jittered or not), a loop's failures
counted and reset, a call retried while its failures are transient, and a server's
Retry-After as the least wait."""

from __future__ import annotations

import pytest

from lavalog.controller.delays import exponential
from lavalog.controller.kube import KubeError, is_transient, retry_after
from lavalog.controller.retry import Backoff, RetryDelays, retry


def test_delays_double_up_to_the_maximum() -> None:
    delays = RetryDelays(initial=0.5, maximum=4.0)
    assert [delays.delay(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert RetryDelays(initial=1.0, maximum=9.0, factor=3.0).delay(2) == 9.0


def test_jitter_takes_half_to_all_of_each_delay() -> None:
    delays = RetryDelays(initial=1.0, maximum=8.0, jitter=True)
    assert delays.delay(3, lambda: 1.0) == 8.0
    assert delays.delay(3, lambda: 0.0) == 4.0


def test_a_huge_count_or_factor_stays_at_the_ceiling() -> None:
    assert exponential(1.0, 1e300, 60.0, 10) == 60.0
    assert RetryDelays(initial=0.05, maximum=10.0).delay(10_000) == 10.0


def test_a_backoff_counts_failures_and_starts_over_after_a_reset() -> None:
    backoff = Backoff(RetryDelays(initial=0.5, maximum=4.0, jitter=True), draw=lambda: 1.0)
    assert [backoff.next_delay() for _ in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    backoff.reset()
    assert backoff.next_delay() == 0.5
    assert backoff.next_delay(at_least=3.0) == 3.0  # what the server asked for, if longer


async def test_retry_sends_again_while_transient_and_raises_anything_else() -> None:
    slept: list[float] = []
    answers: list[Exception | str] = [
        KubeError(500, "InternalError", "x"),
        KubeError(429, "TooManyRequests", "slow down", retry_after=2.0),
        "done",
    ]
    retried: list[tuple[str, float]] = []

    async def call() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def sleep(delay: float) -> None:
        slept.append(delay)

    result = await retry(
        call,
        delays=RetryDelays(initial=0.1, maximum=1.0),
        transient=is_transient,
        on_retry=lambda exc, delay: retried.append((type(exc).__name__, delay)),
        at_least=retry_after,
        sleep=sleep,
    )
    assert result == "done"
    assert slept == [0.1, 2.0]  # the 429's Retry-After outlasts the backoff's 0.2
    assert retried == [("KubeError", 0.1), ("KubeError", 2.0)]

    answers[:] = [KubeError(403, "Forbidden", "exceeded quota")]
    with pytest.raises(KubeError, match="403"):
        await retry(
            call, delays=RetryDelays(initial=0.1, maximum=1.0), transient=is_transient, sleep=sleep
        )

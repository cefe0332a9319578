"""The token bucket and the rate limiter, on a fake clock: calls per window, calls in
flight, and the order among waiting calls (pod work before status before Events)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from lavalog.controller.actuator.core.priority import Priority
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.ratelimit import RateLimiter, TokenBucket, prioritized
from tests.actuator.fake_time import FakeTime


def test_a_full_bucket_serves_a_burst_then_one_call_per_refill() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=10, burst=3, clock=lambda: now[0])
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    # Empty: the wait until the next token, which is not taken.
    assert bucket.take() == pytest.approx(0.1)
    now[0] = 0.05
    assert bucket.take() == pytest.approx(0.05)
    now[0] = 1.0  # 10 tokens refilled, capped at the burst
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() == pytest.approx(0.1)


def test_an_idle_bucket_refills_only_up_to_its_burst() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=100, burst=2, clock=lambda: now[0])
    now[0] = 3600.0
    assert [bucket.take() for _ in range(2)] == [0.0, 0.0]
    assert bucket.take() == pytest.approx(0.01)


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_limits_must_be_positive(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        TokenBucket(qps=qps, burst=burst)


def limiter(time: FakeTime, qps: float, burst: int, concurrency: int) -> RateLimiter:
    bucket = TokenBucket(qps=qps, burst=burst, clock=time.clock)
    return RateLimiter(bucket, concurrency, sleep=time.sleep, counters=Counters())


async def test_calls_per_window_stay_within_burst_plus_qps_times_the_window() -> None:
    time = FakeTime()
    limited = limiter(time, qps=50, burst=100, concurrency=32)
    sent: list[float] = []

    async def call() -> None:
        async with limited:
            sent.append(time.now)

    await time.run([asyncio.ensure_future(call()) for _ in range(400)])

    assert len(sent) == 400
    assert sent.count(0.0) == 100  # the burst goes at once
    for start in sent:
        in_window = sum(1 for t in sent if start <= t < start + 1.0)
        assert in_window <= 100 + 50
    after_burst = [t for t in sent if t >= 1.0]
    for start in after_burst:
        assert sum(1 for t in after_burst if start <= t < start + 1.0) <= 51
    assert max(sent) == pytest.approx((400 - 100) / 50)


async def test_no_more_calls_in_flight_than_the_concurrency() -> None:
    time = FakeTime()
    limited = limiter(time, qps=1e6, burst=1000, concurrency=8)
    in_flight = peak = 0

    async def call() -> None:
        nonlocal in_flight, peak
        async with limited:
            in_flight += 1
            peak = max(peak, in_flight)
            await time.sleep(1.0)
            in_flight -= 1

    await time.run([asyncio.ensure_future(call()) for _ in range(40)])
    assert peak == 8
    assert time.now == pytest.approx(5.0)


async def test_waiting_calls_go_by_priority_then_in_arrival_order() -> None:
    """Events asked first, pod creates last: once the burst is spent, the pod creates go
    first, then the status writes, then the Events, each kind in the order it asked."""
    time = FakeTime()
    limited = limiter(time, qps=10, burst=1, concurrency=100)
    counters = limited._counters
    order: list[str] = []

    async def call(name: str, priority: Priority) -> None:
        with prioritized(priority):
            async with limited:
                order.append(name)

    asked = [
        ("event-1", Priority.EVENTS),
        ("event-2", Priority.EVENTS),
        ("status-1", Priority.STATUS),
        ("pod-1", Priority.PODS),
        ("status-2", Priority.STATUS),
        ("pod-2", Priority.PODS),
    ]
    tasks: list[asyncio.Future[object]] = []
    for name, priority in asked:  # each asks once the one before is waiting
        tasks.append(asyncio.ensure_future(call(name, priority)))
        await asyncio.sleep(0)
    await time.run(tasks)

    # the first takes the one token at once; the rest wait for the bucket, by priority
    assert order == ["event-1", "pod-1", "pod-2", "status-1", "status-2", "event-2"]
    assert time.now == pytest.approx(0.5)
    assert counters.limiter_wait_seconds > 0


async def test_a_waiting_call_cancelled_gives_up_its_place() -> None:
    time = FakeTime()
    limited = limiter(time, qps=1, burst=1, concurrency=1)
    done: list[str] = []

    async def call(name: str) -> None:
        async with limited:
            done.append(name)
            await time.sleep(1.0)

    first: asyncio.Future[object] = asyncio.ensure_future(call("first"))
    await asyncio.sleep(0)
    second: asyncio.Future[object] = asyncio.ensure_future(call("second"))
    third: asyncio.Future[object] = asyncio.ensure_future(call("third"))
    await asyncio.sleep(0)
    second.cancel()
    await time.run([first, third])
    assert second.cancelled()
    assert done == ["first", "third"]
    # the slot came back each time: one more call goes through at once
    await time.run([asyncio.ensure_future(call("fourth"))])
    assert done[-1] == "fourth"


async def test_under_a_backlog_each_priority_gets_its_share_and_none_starves() -> None:
    """Pod work, status writes and Events all waiting, more than the budget serves: each
    priority gets its share of the calls let through (4:2:1) until its callers are done,
    and what one leaves unused goes to the others."""
    time = FakeTime()
    limited = limiter(time, qps=10, burst=1, concurrency=100)
    order: list[Priority] = []

    async def call(priority: Priority) -> None:
        with prioritized(priority):
            async with limited:
                order.append(priority)

    asked = [Priority.EVENTS] * 30 + [Priority.STATUS] * 60 + [Priority.PODS] * 200
    tasks: list[asyncio.Future[object]] = [asyncio.ensure_future(call(p)) for p in asked]
    await time.run(tasks)

    first = Counter(order[1:71])  # the first took the one token at once
    assert first == {Priority.PODS: 40, Priority.STATUS: 20, Priority.EVENTS: 10}
    # Events done first (30 of them), then status: pod work gets all that is left
    assert order[-60:] == [Priority.PODS] * 60


async def test_a_turn_reserved_is_spent_by_the_first_call_or_given_back() -> None:
    """A reservation waits as a call does; the first call in its block goes without waiting
    again; a reservation left unspent gives its token back to the next caller."""
    time = FakeTime()
    limited = limiter(time, qps=1, burst=1, concurrency=1)
    sent: list[float] = []

    async def reserved_then(calls: int) -> None:
        async with limited.reserved():
            for _ in range(calls):
                async with limited:
                    sent.append(time.now)

    runs: list[asyncio.Future[object]] = [asyncio.ensure_future(reserved_then(2))]
    await time.run(runs)
    assert sent == [0.0, 1.0]  # the second call waited for a token of its own
    for calls in (0, 1):  # at 2.0: reserved and left unspent, then one call
        runs = [asyncio.ensure_future(reserved_then(calls))]
        await time.run(runs)
    assert sent[-1] == 2.0  # the token given back: no wait

"""The token bucket and the rate limiter, on a fake clock: calls per window, calls in flight."""

from __future__ import annotations

import asyncio

import pytest

from lavalog.controller.actuator.service.ratelimit import RateLimiter, TokenBucket
from tests.actuator.fake_time import FakeTime


def test_a_full_bucket_serves_a_burst_then_one_call_per_refill() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=10, burst=3, clock=lambda: now[0])
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    # Tokens not yet there are reserved in turn: each caller waits its 1/qps longer.
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)
    now[0] = 1.0  # 10 tokens refilled, 2 of them owed: the bucket is full again
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)


def test_an_idle_bucket_refills_only_up_to_its_burst() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=100, burst=2, clock=lambda: now[0])
    now[0] = 3600.0
    assert [bucket.reserve() for _ in range(2)] == [0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.01)


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_limits_must_be_positive(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        TokenBucket(qps=qps, burst=burst)


async def test_calls_per_window_stay_within_burst_plus_qps_times_the_window() -> None:
    time = FakeTime()
    limiter = RateLimiter(TokenBucket(qps=50, burst=100, clock=time.clock, sleep=time.sleep), 32)
    sent: list[float] = []

    async def call() -> None:
        async with limiter:
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
    limiter = RateLimiter(TokenBucket(qps=1e6, burst=1000, clock=time.clock, sleep=time.sleep), 8)
    in_flight = peak = 0

    async def call() -> None:
        nonlocal in_flight, peak
        async with limiter:
            in_flight += 1
            peak = max(peak, in_flight)
            await time.sleep(1.0)
            in_flight -= 1

    await time.run([asyncio.ensure_future(call()) for _ in range(40)])
    assert peak == 8
    assert time.now == pytest.approx(5.0)

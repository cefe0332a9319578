"""The reviews' cache (controller/auth/kubernetes.py): one review per key at a time, a
failure never kept, answers forgotten after their time or when the oldest must make room."""

from __future__ import annotations

import asyncio

import pytest

from lavalog.controller.auth.kubernetes import TimedCache


async def test_concurrent_token_reviews_of_one_token_share_one_request() -> None:
    cache: TimedCache[str, int] = TimedCache(ttl=10.0, entries=10)
    calls = 0
    release = asyncio.Event()

    async def review() -> int:
        nonlocal calls
        calls += 1
        await release.wait()
        return calls

    waiting = [asyncio.create_task(cache.get("token", review)) for _ in range(5)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*waiting) == [1] * 5 and calls == 1


async def test_a_failed_review_is_not_kept_and_old_answers_expire() -> None:
    now = [0.0]
    cache: TimedCache[str, str] = TimedCache(ttl=10.0, entries=2, clock=lambda: now[0])

    async def failing() -> str:
        raise RuntimeError("down")

    with pytest.raises(RuntimeError):
        await cache.get("a", failing)

    async def answer() -> str:
        return f"at {now[0]}"

    assert await cache.get("a", answer) == "at 0.0"
    now[0] = 9.9
    assert await cache.get("a", answer) == "at 0.0"
    now[0] = 10.0
    assert await cache.get("a", answer) == "at 10.0"
    for key in ("b", "c"):
        await cache.get(key, answer)
    now[0] = 10.5
    assert await cache.get("a", answer) == "at 10.5"  # the oldest went when c came
